"""Variations on the round-38 CNTK 2.7 user programs (review of cntkuser38): ``unpack_batch``
over values with free axes of their own and over sequences; each run unchanged on CNTK 2.7 and on
``stadyn.compat.cntk``."""

from compat_harness import cntk_case
from compat_outcomes import outcome


# -- unpack_batch keeps its operand's free axes and refuses a sequence --------------------------

@cntk_case(names=["cntk.ops.unpack_batch", "cntk.sequence.unpack", "cntk.ops.reduce_sum"],
           rtol=1e-5, atol=1e-6,
           note="unpack_batch of an input with a FreeDimension ((-3, 3)) and of "
                "sequence.unpack's padded steps shows both free axes, (-3, -3, 3), kept by "
                "ops over them (before rmF38 Stadyn showed (-3, 1, 3): the batch only); "
                "unpack_batch of a sequence is CNTK 2.7's RuntimeError ('UnpackBatch: only "
                "support input with batch axis and no sequence axis.') when it is made "
                "(before rmF38 Stadyn made it, shown (-3, 2, 3)); the values of both")
def rmF38_unpack_batch_free_axes(C, r):
    x = C.input_variable((-3, 3), name="x")
    u = C.unpack_batch(x)
    s = C.sequence.input_variable(3, name="s")
    v = C.unpack_batch(C.sequence.unpack(s, 0, no_mask_output=True))
    res = {"free input": list(u.shape), "unpacked steps": list(v.shape),
           "unpacked steps, ops over them": list(C.reduce_sum(v * 2, axis=2).shape),
           "of a sequence": outcome(lambda: list(C.unpack_batch(s).shape))}
    res["free input values"] = u.eval({x: r.randn(2, 4, 3)})
    res["unpacked steps values"] = v.eval({s: [r.randn(3, 3), r.randn(1, 3)]})
    res["shapes after a run"] = [list(u.shape), list(v.shape)]
    return res
