"""What CNTK 2.7's own programs and files showed that Stadyn did not (branch cntkex5): the
order of a Function's ``parameters`` and ``constants``, which walk each op's operands as CNTK
holds them inside (``times(x, W)`` is ``Times(W, x)``, ``gather(reference, indices)`` is
``Gather(indices, reference)``), while ``inputs`` shows Python's order."""

import numpy as np

from compat_harness import cntk_case


def _names(vs):
    return [v.name for v in vs]


@cntk_case(names=["cntk.Function.parameters", "cntk.Function.constants",
                  "cntk.Function.inputs", "cntk.ops.times", "cntk.ops.gather"],
           note="times(times(x, W1) + b1, W2) + b2 lists the parameters W2, W1, b1, b2 (the "
                "walk meets Times(W2, .) before the operand W1 makes); a gather's constants "
                "come indices first, its inputs reference first. Before cntkex5 Stadyn walked "
                "Python's operand order for all three (W1, b1, W2, b2)")
def Function__parameters_in_cntks_inner_order(C, r):
    r.touch("cntk.Function.parameters", "cntk.Function.constants", "cntk.Function.inputs")
    x = C.input_variable(2, name="x")
    w1, b1 = C.parameter((2, 3), name="W1"), C.parameter(3, name="b1")
    w2, b2 = C.parameter((3, 4), name="W2"), C.parameter(4, name="b2")
    mlp = C.times(C.times(x, w1) + b1, w2) + b2
    c1 = C.constant(np.ones(2, np.float32), name="c1")
    c2 = C.constant(np.ones((2, 2), np.float32), name="c2")
    product = C.times(x + c1, c2)
    ref = C.constant(np.arange(6, dtype=np.float32).reshape(3, 2), name="ref")
    k = C.constant(np.array([1.0], np.float32), name="k")
    gathered = C.gather(ref, C.floor(x * k))
    p, q = C.parameter((3, 2), name="P"), C.parameter(1, name="Q")
    gathered_p = C.gather(p, C.floor(x * q))
    return {"mlp parameters": _names(mlp.parameters), "mlp inputs": _names(mlp.inputs),
            "times constants": _names(product.constants),
            "times inputs": _names(product.inputs),
            "times root constants": _names(product.root_function.constants),
            "gather constants": _names(gathered.constants),
            "gather inputs": _names(gathered.inputs),
            "gather root constants": _names(gathered.root_function.constants),
            "gather root inputs": _names(gathered.root_function.inputs),
            "gather parameters": _names(gathered_p.parameters)}


@cntk_case(names=["cntk.Function.replace_placeholders", "cntk.ops.placeholder",
                  "cntk.ops.sequence.past_value", "cntk.Value"],
           note="a two-step cell (LightRNN's lightlstm's pattern) on placeholders without "
                "shapes, x, h and c, whose loop is closed with replace_placeholders before x "
                "is bound: the Function shows x alone, and applied to a sequence input takes "
                "h's and c's shapes from the ops around them (times(h, H): H's input shape; "
                "sigmoid(c) * h1: h1's) and runs the recurrence; len() of a Value is its "
                "number of sequences. Before cntkex5 Stadyn refused the loop (ValueError: 'a "
                "loop closed through it never is') and a Value had no len()")
def replace_placeholders__loop_through_shapeless_placeholders(C, r):
    r.touch("cntk.Function.replace_placeholders", "cntk.Value")
    x, h, c = C.placeholder(name="x"), C.placeholder(name="h"), C.placeholder(name="c")
    first, second = C.slice(x, -1, 0, 2), C.slice(x, -1, 2, 4)
    w = C.parameter((2, 3), init=r.randn(2, 3).astype(np.float32) * 0.5)
    hw = C.parameter((3, 3), init=r.randn(3, 3).astype(np.float32) * 0.5)
    b = C.parameter(3, init=r.randn(3).astype(np.float32) * 0.1)
    h1 = C.tanh(b + C.times(first, w) + C.times(h, hw))
    c1 = C.sigmoid(c) * h1 + 0.5 * c
    h2 = C.tanh(b + C.times(second, w) + C.times(h1, hw)) + c1
    h1.replace_placeholders({h: C.sequence.past_value(h2).output,
                             c: C.sequence.past_value(c1).output})
    f = C.splice(h1, h2)
    res = {"placeholders": [p.name for p in f.placeholders],
           "arguments": [a.name for a in f.arguments]}
    s = C.sequence.input_variable(4)
    g = f(s)
    data = [r.randn(3, 4).astype(np.float32), r.randn(2, 4).astype(np.float32)]
    out = g.eval({s: data})
    res["shape"] = list(g.shape)
    res["arguments after"] = [[a.name, list(a.shape)] for a in g.arguments]
    res["parameter shapes"] = sorted(list(p.shape) for p in g.parameters)
    for k, seq in enumerate(out):
        res["output %d" % k] = seq
    res["len of a Value"] = len(C.Value.one_hot(batch=np.arange(8).reshape(2, 4),
                                                num_classes=10))
    res["len of a dense Value"] = len(C.Value(batch=np.zeros((3, 4, 1), np.float32)))
    return res
