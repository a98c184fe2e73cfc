"""CNTK 2.7 behaviours of loops closed through placeholders without a shape, and of shapes
shown for ops over placeholders with inferred axes, that a review found Stadyn missing."""

import numpy as np

from compat_harness import cntk_case


def _refused(call):
    """``"refused"`` where the call raises (CNTK 2.7 and Stadyn word it differently), else its
    result."""
    try:
        return call()
    except Exception:  # noqa: BLE001 - that it refuses is what is compared
        return "refused"


@cntk_case(names=["cntk.Function.replace_placeholders", "cntk.ops.placeholder",
                  "cntk.ops.combine", "cntk.Function.arguments"],
           note="replace_placeholders closes a loop through a placeholder without a shape in "
                "the graph of the Function it is called on: another Function reading the "
                "placeholder (other = h * 2, made before) keeps it as its argument (Stadyn "
                "closed the loop in every Function reading h: other read x and gave zeros)")
def replace_placeholders__loop_only_in_its_function(C, r):
    r.touch("cntk.Function.replace_placeholders", "cntk.Function.arguments")
    x, h = C.placeholder(name="x"), C.placeholder(name="h")
    w = C.constant(r.randn(2, 3).astype(np.float32) * 0.5)
    step = C.tanh(C.times(x, w) + h * 0.5)
    other = h * 2.0
    both = C.combine([step, other])
    step.replace_placeholders({h: C.sequence.past_value(step).output})
    res = {"step arguments": [a.name for a in step.arguments],
           "other arguments": [a.name for a in other.arguments],
           "other placeholders": [p.name for p in other.placeholders],
           "both arguments": [a.name for a in both.arguments]}
    s = C.sequence.input_variable(2)
    data = [r.randn(3, 2).astype(np.float32), r.randn(2, 2).astype(np.float32)]
    for k, seq in enumerate(step(s).eval({s: data})):
        res["step output %d" % k] = np.asarray(seq)
    for k, seq in enumerate(other(s).eval({s: data})):
        res["other output %d" % k] = np.asarray(seq)
    v = C.sequence.input_variable(3)
    res["other of a 3-vector"] = np.asarray(other(v).eval({v: [np.ones((2, 3), np.float32)]})[0])
    return res


@cntk_case(names=["cntk.Function.replace_placeholders", "cntk.ops.times"],
           note="a loop whose placeholder without a shape is only times' right operand "
                "(times(W, h)): its shape cannot be inferred, and CNTK 2.7 refuses it "
                "(RuntimeError: a recurrent node's shape keeps changing), Stadyn too (a "
                "ValueError asking for the placeholder's shape; it guessed a (3, 3) output)")
def replace_placeholders__loop_through_times_right_operand(C, r):
    r.touch("cntk.Function.replace_placeholders")
    def run(make):
        x, h = C.placeholder(name="x"), C.placeholder(name="h")
        step = make(x, h)
        step.replace_placeholders({h: C.sequence.past_value(step).output})
        s = C.sequence.input_variable(2)
        f = step(s)
        return {"shape": list(f.output.shape),
                "output": np.asarray(f.eval({s: [np.arange(6, dtype=np.float32)
                                                  .reshape(3, 2) / 6]})[0])}
    w = lambda shape, v: C.constant(np.full(shape, v, np.float32))  # noqa: E731
    return {
        "right": _refused(lambda: run(lambda x, h: C.tanh(C.times(w((3, 3), 0.1), h)
                                                          + C.times(x, w((2, 3), 0.2))))),
        "left": _refused(lambda: run(lambda x, h: C.tanh(C.times(h, w((3, 3), 0.1))
                                                         + C.times(x, w((2, 3), 0.2)))))}


@cntk_case(names=["cntk.ops.placeholder", "cntk.Function.shape", "cntk.ops.reduce_sum",
                  "cntk.ops.times"],
           note="the shape shown for an op over placeholders with inferred axes: a reduction "
                "over all static axes is () and times(q, W) with q = (2, ?) takes W's input "
                "axis, (2, 5) (Stadyn showed unknown, (-2,), for both)")
def placeholder__inferred_axes_shapes_reduced_and_times(C, r):
    r.touch("cntk.Function.shape")
    p = C.placeholder((C.InferredDimension, 3), name="p")
    q = C.placeholder((2, C.InferredDimension), name="q")
    return {"reduce_all": list(C.reduce_sum(p, axis=C.Axis.all_static_axes()).shape),
            "times_q": list(C.times(q, C.parameter((4, 5))).shape),
            "times_q_rank2": list(C.times(q, C.parameter((4, 5, 6)), output_rank=2).shape),
            "plus_q_constant": list(C.plus(q, C.constant(np.zeros((2, 4), np.float32))).shape),
            "plus": list(C.plus(p, 1).shape)}
