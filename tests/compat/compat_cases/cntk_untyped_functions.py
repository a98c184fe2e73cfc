"""A ``@C.Function`` of untyped arguments (cntkrun): some of them given Variables after its
graph over its placeholders was looked at; its ops of a sequence and a value without one,
refused when it is given types."""

import re

from compat_harness import cntk_case


def _inputs(fn):
    return [[i.name, list(i.shape), i.is_placeholder] for i in fn.inputs]


@cntk_case(names=["cntk.Function.replace_placeholders", "cntk.Function.root_function",
                  "cntk.Function.find_by_name"],
           note="f(a, b) = a * 2 + b, its root looked at, then a replaced by an input x of "
                "shape (3,): CNTK 2.7's root is built on x (its inputs: the Times' output of "
                "shape (3,), b), find_by_name finds x and no longer a.  Stadyn kept the root "
                "it had built on the placeholders a and b")
def function_decorator__root_after_a_partial_replace(C, r):
    r.touch("cntk.Function.replace_placeholders", "cntk.Function.root_function",
            "cntk.Function.find_by_name", "cntk.input_variable", "cntk.Function.arguments")

    @C.Function
    def f(a, b):
        return a * 2 + b
    res = {"root before": _inputs(f.root_function)}
    x = C.input_variable(3, name="x")
    f.replace_placeholders({f.arguments[0]: x})
    root = f.root_function
    res["root after"] = [root.op_name, _inputs(root), _inputs(root.inputs[0].owner)]
    res["find x, a"] = [f.find_by_name("x") is not None, f.find_by_name("a") is not None]
    res["arguments"] = [[a.name, list(a.shape)] for a in f.arguments]
    return res


def _refused(call):
    """The built-in type of what ``call()`` raised and its first line (the uid numbers of
    the ops it names masked: they are counted per process), or what it returned."""
    try:
        return call()
    except Exception as e:      # (the built-in type and the words are compared)
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return [kind, re.sub(r"([A-Za-z]+)\d+_Output", r"\1#_Output", str(e).split("\n")[0])]


@cntk_case(names=["cntk.Function.update_signature"],
           note="an untyped @Function whose op meets a sequence and a value without one "
                "where an operand is an op's output (a - relu(b), relu(a) - relu(b), "
                "a / b): CNTK 2.7's RuntimeError names the output "
                "('Output('ReLU<n>_Output_0', [#], [2])'), as for the same ops built outside "
                "(splice).  Stadyn's named the Function ('Composite(ReLU): ...')")
def function_decorator__mixed_axes_named_as_outputs(C, r):
    r.touch("cntk.Function.update_signature", "cntk.ops.relu", "cntk.ops.splice",
            "cntk.sequence.input_variable", "cntk.input_variable")
    seq = C.layers.typing.Sequence[C.layers.typing.Tensor[2]]

    def typed(op, *types):
        @C.Function
        def f(a, b):
            return op(a, b)
        f.update_signature(*types)
        return str(f)
    s, b = C.sequence.input_variable(2, name="s"), C.input_variable(2, name="b")
    return {"a - relu(b)": _refused(lambda: typed(lambda a, b: a - C.relu(b), seq, 2)),
            "relu(a) - relu(b)": _refused(lambda: typed(lambda a, b: C.relu(a) - C.relu(b),
                                                        2, seq)),
            "a / b": _refused(lambda: typed(lambda a, b: a / b, seq, 2)),
            "relu(a) - b": _refused(lambda: typed(lambda a, b: C.relu(a) - b, seq, 2)),
            "splice outside": _refused(lambda: str(C.splice(s, C.relu(b))))}
