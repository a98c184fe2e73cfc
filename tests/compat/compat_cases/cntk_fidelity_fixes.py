"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7: the order ``gather`` lists its
operands in, ``to_batch`` of an input that has the batch axis already, the schedules'
attributes, and ``binary_cross_entropy`` at outputs of exactly 0 and 1."""

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_ops import op_case


def _error(exc):
    """The built-in exception type ``exc`` is (Stadyn's errors subclass CNTK's)."""
    return next(c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins")


@cntk_case(names=["cntk.ops.gather", "cntk.Function.inputs", "cntk.Function.arguments",
                  "cntk.Function.root_function"],
           note="CNTK 2.7 lists gather's reference before its indices (Stadyn listed the "
                "indices first)")
def gather__operand_order(C, r):
    r.touch("cntk.Function.inputs", "cntk.Function.arguments", "cntk.Function.root_function",
            "cntk.Function.eval")
    ref = C.input_variable((4, 3), name="ref")
    idx = C.input_variable((2,), name="idx")
    table = C.constant(np.arange(12, dtype=np.float32).reshape(4, 3), name="table")
    res = {}
    for label, g in (("inputs", C.gather(ref, idx)), ("named", C.gather(ref, idx, name="g")),
                     ("constant", C.gather(table, idx)),
                     ("in a graph", C.reduce_sum(C.gather(ref, idx)) * C.gather(table, idx))):
        res[label + " inputs"] = [v.name for v in g.root_function.inputs]
        res[label + " arguments"] = [v.name for v in g.arguments]
    res["value"] = C.gather(table, idx).eval({idx: np.array([[3, 1], [0, 2]], np.float32)})
    return res


@cntk_case(names=["cntk.ops.to_batch"],
           note="CNTK 2.7 refuses to_batch of a value that has the batch axis already "
                "(RuntimeError 'ToBatch: the input should not have dynamic axis.'); Stadyn "
                "took it")
def to_batch__of_a_batched_input(C, r):
    res = {}
    for label, make in (("input", lambda: C.input_variable((2, 3))),
                        ("op of an input", lambda: C.input_variable((2, 3)) * 2.0),
                        ("sequence", lambda: C.sequence.input_variable(3))):
        try:
            res[label] = list(C.to_batch(make()).shape)
        except Exception as exc:  # noqa: BLE001 - the type is what is compared
            res[label] = _error(exc)
    x = C.input_variable((2, 3))
    u = C.to_batch(C.unpack_batch(x))
    r.touch("cntk.Function.eval")
    res["after unpack_batch"] = u.eval({x: r.randn(2, 2, 3)})
    return res


def _probability_with_ends(r, shape):
    """Probabilities with exact 0s and 1s among them."""
    p = r.rand(*shape, low=0.05, high=0.95)
    flat = p.reshape(-1)
    flat[::5] = 0.0
    flat[2::5] = 1.0
    return p.astype(np.float32)


def _targets(r, shape):
    t = r.rand(*shape)
    t.reshape(-1)[:4] = [1.0, 0.0, 0.0, 1.0]
    return t.astype(np.float32)


op_case("binary_cross_entropy__ends", lambda C, o, t: C.binary_cross_entropy(o, t),
        [(5,), (5,)], data=[_probability_with_ends, _targets],
        names=["cntk.ops.binary_cross_entropy"],
        note="CNTK 2.7 computes -(t log(1e-6 + o) + (1 - t) log(1 + 1e-6 - o)): at an output "
             "of 0 or 1 the loss is 13.8 and the gradient 1e6, where Stadyn clamped at the "
             "smallest float (87.3, gradient 0)")
op_case("binary_cross_entropy__matrix", lambda C, o, t: C.binary_cross_entropy(o, t),
        [(2, 3), (2, 3)], data=[_probability_with_ends, _targets],
        names=["cntk.ops.binary_cross_entropy"])
