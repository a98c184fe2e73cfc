"""``C.slice`` with strides: a negative stride walks the range ``[begin, end)`` backwards from
its last element (``C.slice(x, 0, 0, 0, strides=-1)`` reverses the axis), and the refusals
CNTK 2.7 makes when the op is built (a stride of 0 or longer than the range, a dynamic axis)."""

from compat_harness import cntk_case
from compat_outcomes import builtin_type
from compat_cases.cntk_function_misuse import _outcome


# (begin, end, stride) along an axis of 6: defaults (0 is the axis's end), counting from the
# end, ranges that select nothing or run past the end, strides longer than the range
_RANGES = ((0, 0, -1), (5, 0, -1), (-1, 0, -1), (1, 4, -1), (0, 6, -1), (1, 0, -1),
           (2, 0, -3), (0, 0, -2), (-4, -1, -2), (0, 1, -1), (4, 1, -1), (-2, -5, -1),
           (5, -6, -1), (10, 0, -1), (6, 0, -1), (3, 3, -1), (-1, 0, -6), (0, 0, -7),
           (0, 0, 0), (5, 6, 2), (0, 0, 7), (0, 0, 6), (1, 0, 2))


@cntk_case(names=["cntk.ops.slice"],
           note="CNTK 2.7 reads [begin, end) as for a positive stride and walks it from end-1 "
                "down by |stride|; stride 0 and a stride longer than the range are its "
                "RuntimeErrors when built, and so is a slice along a dynamic axis. Stadyn's "
                "native slice refused negative steps (a ShapeError), read stride 0 as 1 and "
                "clipped a stride past the range")
def slice__negative_strides(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    x = C.input_variable(6, needs_gradient=True)
    data = r.randn(2, 6)
    res = {"outcomes": [], "values": []}
    for b, e, s in _RANGES:
        made = _outcome(lambda: C.slice(x, 0, b, e, strides=s))
        if isinstance(made, str):
            res["outcomes"].append(made)
            continue
        res["outcomes"].append(list(made.shape))
        res["values"].append(made.eval({x: data}))
    y = C.input_variable((3, 4), needs_gradient=True)
    both = C.slice(y, [0, 1], [0, 1], [0, 4], strides=[-1, -2])
    ydata = r.randn(2, 3, 4)
    res["two_axes"] = both.eval({y: ydata})
    res["two_axes_shape"] = list(both.shape)
    value, grads = r.cntk_forward_backward(C.slice(x, 0, 1, 0, strides=-2), {x: data}, [x])
    res["train_out"], res["grad"] = value, grads[0]
    s = C.sequence.input_variable(3)
    res["dynamic_axis"] = [_outcome(lambda: list(C.slice(s, ax, 0, 2, strides=st).shape))
                           for ax in (C.Axis.default_dynamic_axis(),
                                      C.Axis.default_batch_axis()) for st in (1, -1)]
    return res


@cntk_case(names=["cntk.ops.slice", "cntk.sequence.unpack"],
           note="sliced backwards, the axis of unpacked steps is reversed as padded (the "
                "padding comes first); its length is the run's (Stadyn counted from the end "
                "with the length it had when built) and CNTK 2.7's .shape keeps it free (-3) "
                "unless the range is counted from the start at both ends. Ranges CNTK 2.7 "
                "refuses when run (it checks them against one step: [1, 0), [0, -1), "
                "strides of 2) are left out: Stadyn runs them")
def slice__unpacked_steps_reversed(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    s = C.sequence.input_variable(2)
    u = C.sequence.unpack(s, 0, no_mask_output=True)
    data = [r.randn(4, 2), r.randn(2, 2)]
    res = {}
    for label, (axis, b, e, st) in (("reversed", (0, 0, 0, -1)), ("last_two", (0, -2, 0, -1)),
                                    ("middle", (0, -3, -1, -1)), ("from_one", (0, 1, -1, -1)),
                                    ("tail", (0, -3, 0, 1)), ("items", (1, 0, 0, -1))):
        f = C.slice(u, axis, b, e, strides=st)
        res[label] = [list(f.shape), f.eval({s: data})]
    twice = C.slice(C.slice(u, 0, 0, 0, strides=-1), 0, -1, 0)
    res["twice"] = [list(twice.shape), twice.eval({s: data})]
    return res


def _built_and_run(make, feeds):
    """``["built", shape]`` and each run's outcome (its values, or the error type), or
    ``["build", error type]``."""
    try:
        f = make()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return ["build", builtin_type(exc)]
    out = ["built", list(f.shape)]
    for feed in feeds:
        out.append(_outcome(lambda: f.eval(feed)))
    return out


@cntk_case(names=["cntk.layers.Dense", "cntk.ops.times", "cntk.sequence.unpack"],
           note="sequence.unpack's steps are a free dimension (-3): a Dense whose weight would "
                "take its input dimensions from them is CNTK 2.7's ValueError when applied "
                "(Stadyn made W with the step count the graph was built with, then failed on "
                "longer minibatches); with input_rank=1 or map_rank=1 it applies to each step. "
                "times(W, steps) reduces the steps against W's last axis, their number taken "
                "from W when built (Stadyn refused it with the built step count), and a run of "
                "another padded length is a ValueError")
def unpacked_steps_in_products(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    s = C.sequence.input_variable(7, name="s")
    u = C.sequence.unpack(s, 0, no_mask_output=True)
    four = {s: [r.randn(4, 7), r.randn(2, 7)]}
    three = {s: [r.randn(3, 7)]}
    w = C.parameter((2, 4), init=r.randn(2, 4), name="w")
    before_any_run = _built_and_run(lambda: C.times(w, u), [four, three])
    return {
        "times w steps": before_any_run,
        "dense": _built_and_run(lambda: C.layers.Dense(2)(u), []),
        "dense in sequential": _built_and_run(
            lambda: C.layers.Sequential([C.layers.Dense(3, input_rank=1),
                                         C.layers.Dense(2)])(u), []),
        "dense after tanh": _built_and_run(lambda: C.layers.Dense(2)(C.tanh(u)), []),
        "dense per step": _built_and_run(
            lambda: C.layers.Dense(2, init=C.glorot_uniform(seed=1), input_rank=1)(u),
            [four])[:2],
        "dense map_rank": _built_and_run(
            lambda: C.layers.Dense(2, map_rank=1)(u), [four])[:2],
        "times w steps again": _built_and_run(lambda: C.times(w, C.tanh(u)), [four]),
    }
