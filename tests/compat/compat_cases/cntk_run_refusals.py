"""What a run of a Function leaves in its inputs (cntkrun): CNTK's inputs hold nothing between
runs, so neither a refused run (different minibatch layouts, data of a wrong shape, an
argument given no data) nor an earlier run changes what a graph built afterwards is."""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import builtin_type, outcome


# ``call()``'s value as a list, else the built-in type of what it raised
_outcome = functools.partial(outcome, convert=lambda got: np.asarray(got).tolist(),
                             raised=builtin_type)


def _rows(*shape):
    return (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 5) / 5 - 0.3


@cntk_case(names=["cntk.Function.eval", "cntk.ops.slice", "cntk.FreeDimension"],
           note="a run refused after some of its data was in the graph (minibatch layouts "
                "that differ, the second input's data of a wrong shape, an argument given "
                "no data), then a slice [0, 4) of the input of shape (FreeDimension, 3) the "
                "refused run gave 2 rows: CNTK 2.7 builds it (4, 3) and runs it at 6 rows.  "
                "Stadyn's input kept the refused run's 2 rows, and the slice was (2, 3).  "
                "(A free dimension a run fed is a stand-in again for a slice, so this holds "
                "without FeedUndo too: FeedUndo, which puts the inputs back, is defensive, "
                "pinned by test_cntk_function_runs.py's "
                "test_a_refused_run_leaves_its_inputs_as_they_were)")
def function_run__refused_run_leaves_inputs_as_they_were(C, r):
    r.touch("cntk.input_variable", "cntk.FreeDimension", "cntk.ops.reduce_sum",
            "cntk.ops.slice", "cntk.Function.eval", "cntk.Function.shape")
    res = {}
    refusals = [
        ("layouts differ", lambda a, b: {a: _rows(2, 2, 3), b: _rows(3, 3)}),
        ("a wrong shape", lambda a, b: {a: _rows(2, 2, 3), b: _rows(2, 4)}),
        ("no data for b", lambda a, b: {a: _rows(2, 2, 3)}),
    ]
    for title, data in refusals:
        a = C.input_variable((C.FreeDimension, 3), name="a")
        b = C.input_variable(3, name="b")
        h = C.reduce_sum(a, axis=0) + b
        res[title] = _outcome(lambda: h.eval(data(a, b)))
        s = C.slice(a, 0, 0, 4)
        res[title + ": slice"] = list(s.shape)
        res[title + ": slice run"] = _outcome(lambda: s.eval({a: _rows(1, 6, 3)}))
    return res


@cntk_case(names=["cntk.Function.eval", "cntk.ops.slice", "cntk.FreeDimension"],
           note="an input of shape (FreeDimension, 3) run at 2 rows, then sliced [0, 4) "
                "(and [1, 3) after a run at 5 rows): CNTK 2.7 builds (4, 3) (and (2, 3)), "
                "as for an input never run, and runs it at 6 rows.  Stadyn built the slice "
                "on the run's 2 rows: (2, 3)")
def function_run__slice_built_after_a_shorter_run(C, r):
    r.touch("cntk.input_variable", "cntk.FreeDimension", "cntk.ops.reduce_sum",
            "cntk.ops.slice", "cntk.Function.eval", "cntk.Function.shape")
    res = {}
    for n, begin, end in ((2, 0, 4), (5, 1, 3)):
        a = C.input_variable((C.FreeDimension, 3), name="a")
        res["run %d" % n] = _outcome(lambda: C.reduce_sum(a, axis=0).eval({a: _rows(2, n, 3)}))
        s = C.slice(a, 0, begin, end)
        res["slice %d" % n] = list(s.shape)
        res["slice %d run" % n] = _outcome(lambda: s.eval({a: _rows(1, 6, 3)}))
    return res


@cntk_case(names=["cntk.ops.slice", "cntk.ops.crop_manual", "cntk.FreeDimension"],
           note="two inputs with free dimensions, one run alone before (b at 2 rows; y at "
                "2x2), the other never: a slice [0, 4) of a + b and a 3x3 crop of x + y. "
                "CNTK 2.7 builds the slice (4, 3) and runs it at 6 rows, and crops x + y at "
                "5x5 to (1, 1, 3, 3).  Stadyn widened the unfed input only: the slice was "
                "(2, 3), and the crop was refused at 5x5 (the earlier run's 2x2 kept in y)")
def free_dimension__an_earlier_run_and_an_unfed_input_widened_together(C, r):
    r.touch("cntk.input_variable", "cntk.FreeDimension", "cntk.ops.tanh", "cntk.ops.slice",
            "cntk.ops.crop_manual", "cntk.ops.plus", "cntk.Function.eval",
            "cntk.Function.shape")
    res = {}
    a = C.input_variable((C.FreeDimension, 3), name="a")
    b = C.input_variable((C.FreeDimension, 3), name="b")
    res["run b"] = _outcome(lambda: C.tanh(b).eval({b: _rows(1, 2, 3)}))
    s = C.slice(a + b, 0, 0, 4)
    res["slice"] = list(s.shape)
    res["slice run"] = _outcome(lambda: s.eval({a: _rows(1, 6, 3), b: _rows(1, 6, 3) + 1}))
    x = C.input_variable((1, C.FreeDimension, C.FreeDimension), name="x")
    y = C.input_variable((1, C.FreeDimension, C.FreeDimension), name="y")
    res["run y"] = _outcome(lambda: C.tanh(y).eval({y: _rows(1, 1, 2, 2)}))
    c = C.crop_manual(x + y, C.constant(np.zeros((1, 3, 3), np.float32)), 1, 0)
    res["crop"] = list(c.shape)
    res["crop run"] = [_outcome(lambda: c.eval({x: _rows(1, 1, h, w), y: _rows(1, 1, h, w)}))
                       for h, w in ((5, 5), (3, 4))]
    return res


@cntk_case(names=["cntk.Function.eval", "cntk.ops.slice", "cntk.FreeDimension"],
           note="an input of shape (FreeDimension, 3) without a batch axis (dynamic_axes=[]) "
                "run at 2 rows, then sliced [0, 4): CNTK 2.7 builds (4, 3) and runs it at 6 "
                "rows.  Stadyn noted a run's data for inputs with a batch axis only, took the "
                "2 rows for a user's and built the slice (2, 3)")
def free_dimension__an_input_without_a_batch_axis_holds_nothing_after_a_run(C, r):
    r.touch("cntk.input_variable", "cntk.FreeDimension", "cntk.ops.reduce_sum",
            "cntk.ops.slice", "cntk.Function.eval", "cntk.Function.shape")
    a = C.input_variable((C.FreeDimension, 3), dynamic_axes=[], name="a")
    res = {"run": _outcome(lambda: C.reduce_sum(a, axis=0).eval({a: _rows(2, 3)}))}
    s = C.slice(a, 0, 0, 4)
    res["slice"] = list(s.shape)
    res["slice run"] = _outcome(lambda: s.eval({a: _rows(6, 3)}))
    return res


@cntk_case(names=["cntk.ops.slice", "cntk.ops.crop_manual", "cntk.FreeDimension"],
           note="a slice ([0, 4), [-3, 0)) or a crop (a 3x3 window) of a value computed from "
                "an input's free dimensions (tanh, reduce_sum over another axis), run at "
                "lengths the range or window fits and at some it does not: CNTK 2.7 computes "
                "the first and raises RuntimeError at the others (its Slice operation's "
                "'Index range ... is invalid for input', the crop's 'Input is small to be "
                "cropped').  Stadyn checked slices of inputs only: it computed a slice "
                "clamped to the run's length, and the crop raised its reshape's ShapeError")
def free_dimension__computed_values_sliced_and_cropped_checked_at_run(C, r):
    r.touch("cntk.input_variable", "cntk.FreeDimension", "cntk.ops.slice", "cntk.ops.tanh",
            "cntk.ops.crop_manual", "cntk.ops.reduce_sum", "cntk.Function.eval")
    a = C.input_variable((C.FreeDimension, 3), name="a")
    res = {}
    cases = [("[0, 4) of tanh", C.slice(C.tanh(a), 0, 0, 4)),
             ("[-3, 0) of tanh", C.slice(C.tanh(a), 0, -3, 0)),
             ("[0, 3) of a sum", C.slice(C.reduce_sum(a, axis=1), 0, 0, 3))]
    for title, s in cases:
        res[title] = [_outcome(lambda: s.eval({a: _rows(2, n, 3)})) for n in (6, 2, 4)]
    b = C.input_variable((1, C.FreeDimension, C.FreeDimension), name="b")
    window = C.constant(np.zeros((1, 3, 3), np.float32))
    for ox, oy in ((0, 0), (1, 1)):
        c = C.crop_manual(C.tanh(b), window, ox, oy)
        res["crop at %d, %d" % (ox, oy)] = [_outcome(lambda: c.eval({b: _rows(1, 1, h, w)}))
                                            for h, w in ((5, 5), (2, 5), (5, 3), (4, 4))]
    return res


@cntk_case(names=["cntk.ops.crop_manual", "cntk.ops.crop_automatic", "cntk.FreeDimension"],
           note="a crop to a referent whose spatial axes are free dimensions (an input of "
                "shape (1, FreeDimension, FreeDimension), one of (1, 4, FreeDimension), a "
                "relu of it, a convolution of the cropped input itself: crop_automatic): "
                "CNTK 2.7 builds it (1, -3, -3) ((1, 4, -3)), crops each run to the "
                "referent's lengths in that run (values, the gradient to the input) and "
                "raises RuntimeError 'Input is small to be cropped' where the window does "
                "not fit.  Stadyn refused to build it (ValueError: it cropped to a fixed "
                "size only)")
def free_dimension__crop_to_a_free_referent(C, r):
    r.touch("cntk.ops.crop_manual", "cntk.ops.crop_automatic", "cntk.FreeDimension",
            "cntk.input_variable", "cntk.ops.convolution", "cntk.ops.relu",
            "cntk.Function.grad")
    x = C.input_variable((1, 6, 6), name="x", needs_gradient=True)
    ref = C.input_variable((1, C.FreeDimension, C.FreeDimension), name="ref")
    image = _rows(1, 1, 6, 6)
    res = {}
    c = C.crop_manual(x, ref, 1, 2)
    res["manual"] = [list(c.shape), [a.name for a in c.arguments]] + [
        _outcome(lambda: c.eval({x: image, ref: _rows(1, 1, h, w)}))
        for h, w in ((3, 2), (2, 4), (5, 5), (4, 6))]
    res["manual grad"] = _outcome(lambda: c.grad({x: image, ref: _rows(1, 1, 3, 2)}, wrt=[x]))
    half = C.input_variable((1, 4, C.FreeDimension), name="half")
    c = C.crop_manual(x, half, 0, 1)
    res["half free"] = [list(c.shape), _outcome(lambda: c.eval({x: image,
                                                                half: _rows(1, 1, 4, 3)}))]
    c = C.crop_manual(x, C.relu(ref), 0, 0)
    res["relu of it"] = [list(c.shape), _outcome(lambda: c.eval({x: image,
                                                                 ref: _rows(1, 1, 2, 3)}))]
    y = C.input_variable((1, C.FreeDimension, C.FreeDimension), name="y")
    w = C.parameter((1, 1, 3, 3), init=1.0)
    c = C.crop_automatic(y, C.convolution(w, y, auto_padding=[False]))
    res["automatic"] = [list(c.shape)] + [_outcome(lambda: c.eval({y: _rows(1, 1, h, w)}))
                                          for h, w in ((5, 6), (4, 4))]
    return res
