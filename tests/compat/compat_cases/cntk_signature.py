"""``@C.Function`` on Python functions whose arguments have no types: the arguments are
placeholders of unknown shape until the Function is applied, and one such Function applies to
operands of different shapes (typed signatures are in cntk_function.py)."""

from compat_harness import cntk_case


@cntk_case(names=["cntk.Function", "cntk.Function.arguments", "cntk.Function.eval",
                  "cntk.Variable.is_placeholder", "cntk.ops.reduce_sum"],
           note="CNTK shows an untyped argument's shape as (-2,) (unknown rank)")
def function_untyped(C, r):
    r.touch("cntk.Function.arguments", "cntk.Function.eval", "cntk.Variable.is_placeholder")

    @C.Function
    def f(x, y):
        return C.relu(x) * 2.0 + y

    @C.Function
    def total(x):
        return C.reduce_sum(x, axis=0)

    res = {"arguments": [[a.name, list(a.shape), bool(a.is_placeholder)] for a in f.arguments]}
    a, b = C.input_variable(3), C.input_variable(3)
    g = f(a, b)
    res["applied shape"] = list(g.shape)
    res["applied arguments"] = [list(v.shape) for v in g.arguments]
    res["applied"] = g.eval({a: r.randn(4, 3), b: r.randn(4, 3)})
    x2 = C.input_variable((2, 3))
    k = f(x2, C.constant(r.randn(2, 3)))
    res["other shape"] = list(k.shape)
    res["other"] = k.eval({x2: r.randn(2, 2, 3)})
    res["total shapes"] = [list(total(x2).shape), list(total(a).shape)]
    res["total"] = total(x2).eval({x2: r.randn(2, 2, 3)})
    return res
