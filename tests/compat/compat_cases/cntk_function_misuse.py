"""CNTK Functions used in ways CNTK 2.7 refuses or reads in ways of its own: gradients asked
for Variables that have none, iterating over a Function, ``times`` of a Python scalar."""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import builtin_type, outcome


# the call's result, or the built-in type of the error it raised (what is compared)
_outcome = functools.partial(outcome, raised=builtin_type)


@cntk_case(names=["cntk.Function.grad", "cntk.Function.backward", "cntk.Function.forward"],
           note="CNTK 2.7 gives gradients w.r.t. parameters and inputs made with "
                "needs_gradient=True only: grad or backward asked for an input made without "
                "it, a constant or an output of the graph is its ValueError (Stadyn gave "
                "zeros, and for an output the gradient flowing into it)")
def gradients_of_variables_that_have_none(C, r):
    r.touch("cntk.Function.grad", "cntk.Function.backward", "cntk.Function.forward")
    x = C.input_variable(2, name="x")
    xg = C.input_variable(2, name="xg", needs_gradient=True)
    c = C.constant(r.randn(2), name="c")
    p = C.parameter((2,), init=r.randn(2), name="p")
    h = C.tanh(x * p, name="h")
    f = C.reduce_sum(h * c + xg * x)
    data = {x: r.randn(3, 2), xg: r.randn(3, 2)}
    res = {}
    for label, wrt in (("x", [x]), ("x_and_xg", [x, xg]), ("xg", [xg]), ("p", [p]),
                       ("c", [c]), ("h", [h.output])):
        res["grad_" + label] = _outcome(lambda: np.asarray(f.grad(data, wrt=wrt)))

    def backward(variables):
        state, out = f.forward(data, None, set(f.outputs))
        grads = f.backward(state, {f.output: np.ones_like(out[f.output])}, variables)
        return [np.asarray(grads[v]) for v in variables]
    for label, variables in (("x", {x}), ("c", {c}), ("h", {h.output}), ("xg", {xg}),
                             ("p", {p})):
        res["backward_" + label] = _outcome(lambda: backward(variables))
    return res


def _iterate(f, limit=6):
    """The shapes of the items ``for v in f`` gives (at most ``limit``), then how it ended:
    ``"end"``, ``"limit"`` or the type of the error raised."""
    shapes = []
    try:
        for v in f:
            if len(shapes) == limit:
                return shapes, "limit"
            shapes.append(list(v.shape))
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return shapes, builtin_type(exc)
    return shapes, "end"


@cntk_case(names=["cntk.Function.__getitem__", "cntk.ops.slice"],
           note="CNTK 2.7 refuses a slice that selects elements past an axis's end, or none, "
                "with a RuntimeError when the op is made (begin and end read from the end when "
                "negative, end 0 the axis's end): iterating over a Function of a known shape "
                "gives its elements, then that RuntimeError; a Function whose shape is not "
                "known yet (an op on a placeholder without a shape) gives slices without end, "
                "as Stadyn's does. Stadyn made empty or clipped slices, so iterating never "
                "ended and unpacking hung")
def iterating_and_slicing_past_the_end(C, r):
    r.touch("cntk.Function.__getitem__")
    y = C.input_variable((3, 4), name="y")
    g = C.tanh(y)
    data = r.randn(2, 3, 4)
    res = {}
    ranges = ((3, 4), (5, 6), (1, 10), (-5, -4), (-4, 0), (-3, 0), (2, 1), (1, 1), (0, 3),
              (2, 0), (-1, 0), (0, 4), (3, 0), (0, -3), (0, -4), (-4, -3), (0, -1), (1, -1))
    res["slices"] = [_outcome(lambda: list(C.slice(y, 0, b, e).shape)) for b, e in ranges]
    res["slice_values"] = C.slice(y, 0, -2, 0).eval({y: data})
    res["strided"] = _outcome(lambda: list(C.slice(y, 1, 0, 5, 2).shape))
    res["indexed"] = [_outcome(lambda: list(g[k].shape)) for k in (2, 3, -3, -4)]
    res["sliced"] = [_outcome(lambda: list(g[s].shape))
                     for s in (slice(1, 5), slice(-5, None), slice(None, 10), slice(3, None),
                               slice(1, None), slice(None, -1))]
    res["iterated"] = _iterate(g)
    res["iterated_input"] = _iterate(C.input_variable(2))

    def unpack():
        a, b, c = g
        return [list(a.shape), list(b.shape), list(c.shape)]
    res["unpacked"] = _outcome(unpack)
    res["first_two"] = _outcome(lambda: [list(v.shape) for _, v in zip(range(2), g)])
    ph = C.placeholder()
    res["shapeless_iterated"] = len(_iterate(C.splice(ph, ph), limit=4)[0])
    return res


def _build_and_run(C, make, feed):
    """How CNTK meets an op: ``[when, what]`` -- ``["built", shape]`` then the run's outcome
    (``["ran", shape]`` or ``["run", error type]``), or ``["build", error type]``."""
    try:
        f = make()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return ["build", builtin_type(exc)]
    out = [["built", list(f.shape)], ["composed", list((f + 1).shape)]]
    try:
        value = f.eval(feed) if f.arguments else f.eval()
        out.append(["ran", list(np.asarray(value).shape)])
    except Exception as exc:  # noqa: BLE001
        out.append(["run", builtin_type(exc)])
    return out


@cntk_case(names=["cntk.ops.times", "cntk.ops.times_transpose", "cntk.Function.eval"],
           note="times of a scalar on the left (a Python number, a NumPy scalar or a constant "
                "of shape ()): CNTK 2.7 builds it, of the right operand's shape, composes it, "
                "and refuses it at the first run with a RuntimeError (Times operation changed "
                "during final validation); Stadyn refused it when built, with a ValueError. "
                "A scalar on the right is CNTK's ValueError when built (as Stadyn's); "
                "times_transpose of a scalar on the left its RuntimeError when built")
def times_of_a_scalar(C, r):
    r.touch("cntk.Function.eval")
    x = C.input_variable(3, name="x")
    feed = {x: r.randn(2, 3)}
    vector = C.constant(r.randn(2))
    res = {}
    for label, make in (("python_left", lambda: C.times(2.0, x)),
                        ("int_left", lambda: C.times(2, x)),
                        ("numpy_left", lambda: C.times(np.float32(2), x)),
                        ("constant_left", lambda: C.times(C.constant(2.0), x)),
                        ("left_of_a_constant", lambda: C.times(2.0, vector)),
                        ("python_right", lambda: C.times(x, 2.0)),
                        ("constant_right", lambda: C.times(x, C.constant(2.0))),
                        ("both", lambda: C.times(2.0, 3.0)),
                        ("list_left", lambda: C.times([2.0], x)),
                        ("transpose_left", lambda: C.times_transpose(2.0, x))):
        res[label] = _build_and_run(C, make, feed)
    return res


@cntk_case(names=["cntk.ops.top_k", "cntk.sequence.unpack"],
           note="the output of a Function with two outputs is CNTK's RuntimeError (it cannot be "
                "implicitly converted to a Variable); Stadyn raised ValueError")
def output_of_a_two_output_function(C, r):
    r.touch("cntk.Function.output", "cntk.Function.outputs")
    x = C.input_variable(4)
    s = C.sequence.input_variable(3)
    res = {}
    for name, f in (("top_k", C.top_k(x, 2)), ("unpack", C.sequence.unpack(s, 0.0))):
        res[name] = [_outcome(lambda: f.output), len(f.outputs)]
    return res
