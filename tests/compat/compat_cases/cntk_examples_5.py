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

