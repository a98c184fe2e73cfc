"""A ``@C.Function`` of untyped arguments some of which are given Variables
(``replace_placeholders``, ``update_signature`` with None for some) after its graph over its
placeholders was looked at (cntkrun)."""

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
