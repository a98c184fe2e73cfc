"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (eleventh round, found running
CNTK's examples): ``hard_sigmoid`` at NaN and at its bounds; the ValueError for a minibatch
whose shape does not fit the input; ``convolution``'s channel axis (auto-padding, strides and
dilation reach it) and ``reduction_rank=0`` maps; convolution layers over inputs without a
channel axis."""

import numpy as np

from compat_harness import cntk_case


@cntk_case(names=["cntk.ops.hard_sigmoid"],
           note="CNTK 2.7's HardSigmoid block is s = x * alpha + beta, Select(s < 1, s, 1), "
                "then Select(b > 0, b, 0): NaN gives 1 and the gradient is 0 where s is "
                "exactly 0 or 1; Stadyn clipped (NaN stayed NaN, gradient alpha at the bounds)")
def hard_sigmoid__nan_and_bounds(C, r):
    r.touch("cntk.ops.hard_sigmoid")
    x = C.input_variable(7, needs_gradient=True)
    data = np.array([[np.nan, -1.0, 1.0, 0.2, -3.0, 4.0, 0.0]], np.float32)
    res = {}
    for alpha, beta in ((0.5, 0.5), (0.2, 0.5), (0.25, 0.0)):
        y = C.hard_sigmoid(x, alpha, beta)
        key = "%g_%g" % (alpha, beta)
        res["value_" + key] = y.eval({x: data})
        res["grad_" + key] = y.grad({x: data}, wrt=[x])
    return res


def _raised(fn):
    """The built-in type and the first line of what ``fn()`` raised."""
    try:
        fn()
    except Exception as e:
        builtin = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return [builtin, str(e).splitlines()[0].split(";")[0].split("'")[0]]
    return ["no error"]


@cntk_case(names=["cntk.Function.eval"],
           note="a minibatch of lower rank than the input's sample: CNTK 2.7 raises ValueError "
                "\"Value's rank (2) should be >= the Variable's rank (3)\", one whose trailing "
                "dimensions differ \"The trailing dimensions of the Value shape ... do not "
                "match\"; Stadyn raised a StadynError (no ValueError) of its own wording")
def eval__minibatch_of_the_wrong_shape(C, r):
    r.touch("cntk.Function.eval")
    x = C.input_variable((3, 2, 2))
    f = C.reduce_sum(x)
    res = {}
    for shape in ((2, 2), (5, 2, 2), (4, 3, 2, 3)):
        res["x".join(map(str, shape))] = _raised(
            lambda: f.eval({x: np.zeros(shape, np.float32)}))
    return res


def _conv_outcome(C, xs, ws, **kw):
    """``C.convolution``'s per-sample shape, then its values on a fixed input, or the built-in
    type of what running it raised."""
    x = C.input_variable(xs)
    w = np.linspace(-1.0, 1.0, int(np.prod(ws)), dtype=np.float32).reshape(ws)
    y = C.convolution(C.constant(w), x, **kw)
    data = np.linspace(-2.0, 3.0, 2 * int(np.prod(xs)), dtype=np.float32).reshape((2,) + xs)
    try:
        got = np.asarray(y.eval({x: data}), np.float32).tolist()
    except Exception as e:
        got = "raises " + next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
    return {"shape": list(y.shape), "run": got}


@cntk_case(names=["cntk.ops.convolution"],
           note="CNTK 2.7 reads a single auto_padding, strides or dilation (and the first of a "
                "full-rank list) for the channel axis too: with the default auto_padding=[True] "
                "a (8, 4, 3, 3) map over (4, 3, 3) slides along the channels, the shape is "
                "(32, 3, 3) and the first run raises ('detected padding over channel axis'); "
                "a map of fewer input channels gives (maps * positions, ...) and 'Mismatching "
                "outputShape and mapCount'; dilation=2 without channel padding (0, ...).  "
                "Stadyn dropped the channel entry (always (8, ...), run).  reduction_rank=0 "
                "with a (maps, *kernel) map: CNTK (maps, ...), Stadyn refused the map")
def convolution__channel_axis_geometry(C, r):
    res = {}
    for key, xs, ws, kw in (
            ("default", (4, 3, 3), (8, 4, 3, 3), {}),
            ("dilation_2", (4, 3, 3), (8, 4, 3, 3), {"dilation": 2}),
            ("dilation_2_no_channel_pad", (4, 5, 5), (8, 4, 3, 3),
             {"dilation": 2, "auto_padding": [False, True, True]}),
            ("strides_2", (4, 5, 5), (8, 4, 3, 3), {"strides": (2,)}),
            ("channel_pad_only", (4, 5, 5), (8, 4, 3, 3), {"auto_padding": [True, False]}),
            ("two_entries", (4, 5, 5), (2, 4, 3, 3), {"auto_padding": [False, True]}),
            ("fewer_map_channels", (4, 5, 5), (8, 2, 3, 3), {"auto_padding": [False]}),
            ("one_channel_default", (1, 5, 5), (2, 1, 3, 3), {}),
            ("one_channel_strides_2", (1, 5, 5), (2, 1, 3, 3), {"strides": 2}),
            ("spatial_strides", (4, 5, 5), (2, 4, 3, 3),
             {"strides": 2, "auto_padding": [False, True, True]}),
            ("inferred_channel_stride", (4, 5, 5), (2, 4, 3, 3),
             {"strides": (C.InferredDimension, 1, 1)}),
            ("rank0_1d", (9,), (3, 3), {"reduction_rank": 0}),
            ("rank0_2d_strides", (5, 5), (2, 3, 3), {"reduction_rank": 0, "strides": 2}),
            ("rank0_2d_no_pad", (5, 5), (2, 3, 3), {"reduction_rank": 0,
                                                     "auto_padding": [False]})):
        res[key] = _conv_outcome(C, xs, ws, **kw)
    return res


@cntk_case(names=["cntk.layers.Convolution", "cntk.layers.Convolution1D",
                  "cntk.layers.Convolution2D", "cntk.layers.Convolution3D"],
           note="a convolution layer over an input with no axis left for the channels: CNTK 2.7 "
                "raises ValueError 'Convolution map tensor must have rank 1 or the same as the "
                "input tensor.' (rank-1 input, or lower rank than the filter) or '... padding "
                "tensor ...' (the filter's rank); Stadyn raised 'kernel dim 3 <= input dim 2' "
                "or a ShapeError 'Invalid channel dimensions'")
def convolution_layer__input_without_channels(C, r):
    res = {}
    for key, xs, make in (
            ("conv1d_pad_on_2", (2,), lambda: C.layers.Convolution1D((3,), 8, pad=True)),
            ("conv1d_on_5", (5,), lambda: C.layers.Convolution1D((3,), 8)),
            ("conv_strides_on_5", (5,), lambda: C.layers.Convolution((3,), 8, strides=2)),
            ("conv2d_on_5", (5,), lambda: C.layers.Convolution2D((3, 3), 8)),
            ("conv2d_on_5x5", (5, 5), lambda: C.layers.Convolution2D((3, 3), 8, pad=True)),
            ("conv3d_on_5x5", (5, 5), lambda: C.layers.Convolution3D((3, 3, 3), 8)),
            ("conv3d_on_4x5x5", (4, 5, 5), lambda: C.layers.Convolution3D((3, 3, 3), 8)),
            ("conv1d_rank0", (5,), lambda: C.layers.Convolution1D((3,), 8, reduction_rank=0)),
            ("conv1d_on_2x5", (2, 5), lambda: C.layers.Convolution((3,), 8))):
        x = C.input_variable(xs)
        try:
            res[key] = list(make()(x).shape)
        except Exception as e:
            builtin = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
            res[key] = [builtin, str(e).splitlines()[0]]
    return res


@cntk_case(names=["cntk.metrics.classification_error"],
           note="classification_error of (R, C) samples along the default axis: CNTK 2.7 "
                "computes 1 - TransposeTimes(labels, Hardmax(output)) (Function.cpp:1856), an "
                "(R, R) matrix from the whole sample's hardmax; Stadyn gave each row's error, "
                "(R, 1)")
def classification_error__matrix_samples(C, r):
    r.touch("cntk.metrics.classification_error")
    res = {}
    for rows, cols in ((4, 3), (2, 5)):
        x, y = C.input_variable((rows, cols)), C.input_variable((rows, cols))
        a = r.randn(3, rows, cols).astype(np.float32)
        b = r.onehot(3 * rows, cols).reshape(3, rows, cols).astype(np.float32)
        e = C.classification_error(x, y)
        res["%dx%d" % (rows, cols)] = {"shape": list(e.shape), "eval": e.eval({x: a, y: b})}
    # a tie: the first largest value of the whole sample is its hardmax
    x, y = C.input_variable((2, 2)), C.input_variable((2, 2))
    res["tie"] = C.classification_error(x, y).eval(
        {x: np.array([[[1, 3], [3, 0]]], np.float32), y: np.array([[[0, 1], [1, 0]]], np.float32)})
    return res
