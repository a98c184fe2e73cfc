"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (twenty-fourth round): ops of a
sequence and a value of the batch axis alone that CNTK refuses to build, minibatch layouts
that differ in ``Function.eval``, data converted to an input's type, numbers and strings given
as a parameter's ``init``, crops."""

from compat_harness import cntk_case
from compat_cases.cntk_fidelity_23 import _said


@cntk_case(names=["cntk.ops.element_divide", "cntk.ops.element_max", "cntk.ops.element_min",
                  "cntk.ops.element_and", "cntk.ops.element_or", "cntk.ops.element_xor",
                  "cntk.ops.element_select", "cntk.ops.splice", "cntk.ops.plus",
                  "cntk.ops.minus", "cntk.ops.element_times", "cntk.ops.times",
                  "cntk.ops.less", "cntk.ops.log_add_exp", "cntk.ops.pow",
                  "cntk.losses.squared_error", "cntk.losses.cross_entropy_with_softmax",
                  "cntk.losses.binary_cross_entropy", "cntk.losses.cosine_distance",
                  "cntk.metrics.classification_error"],
           note="an op of a sequence and a value of the batch axis alone: CNTK 2.7 puts a "
                "ReconcileDynamicAxis on the batch value for its primitive binary ops (plus, "
                "minus, element_times, the comparisons, log_add_exp, pow, times, "
                "cosine_distance) and computes; element_divide, element_max/min, "
                "element_and/or/xor, element_select, splice and the losses it makes of other "
                "ops are its RuntimeError 'Operation ... has dynamic axes, that do not match "
                "...' as they are built.  Stadyn computed them")
def ops__of_a_sequence_and_a_batch_value(C, r, np):
    s = C.sequence.input_variable(3, name="s")
    b = C.input_variable(3, name="b")
    u = C.input_variable(3)
    res = {}
    two = {
        "element_divide": C.element_divide, "element_max": C.element_max,
        "element_min": C.element_min, "element_and": C.element_and,
        "element_or": C.element_or, "element_xor": C.element_xor,
        "squared_error": C.squared_error,
        "cross_entropy_with_softmax": C.cross_entropy_with_softmax,
        "classification_error": C.classification_error,
        "binary_cross_entropy": C.binary_cross_entropy,
        "splice": C.splice, "plus": C.plus, "minus": C.minus,
        "element_times": C.element_times, "less": C.less, "log_add_exp": C.log_add_exp,
        "pow": C.pow, "cosine_distance": C.cosine_distance,
    }
    for key in sorted(two):
        f = two[key]
        res[key + " s,b"] = _said(lambda: f(s, b))
        res[key + " b,s"] = _said(lambda: f(b, s))
    res["element_max s,unnamed"] = _said(lambda: C.element_max(s, u))
    res["squared_error s,named output"] = _said(lambda: C.squared_error(s, C.plus(b, 1,
                                                                                   name="pb")))
    res["element_divide s,constant"] = _said(lambda: C.element_divide(s, np.ones(3, np.float32)))
    res["element_divide number,b"] = _said(lambda: C.element_divide(2, b))
    res["times"] = _said(lambda: C.times(s, C.input_variable((3, 2))))
    for flags in ("bss", "sbs", "ssb", "bbs"):
        pick = {"s": s, "b": b}
        res["element_select " + flags] = _said(
            lambda: C.element_select(pick[flags[0]], pick[flags[1]], pick[flags[2]]))
    res["splice s,s,b"] = _said(lambda: C.splice(s, s, b))
    res["splice b,s,s"] = _said(lambda: C.splice(b, s, s))
    f = C.element_times(s, b)
    res["element_times value"] = f.eval({s: [np.ones((2, 3), np.float32)],
                                         b: np.full((1, 3), 2, np.float32)})
    return res

