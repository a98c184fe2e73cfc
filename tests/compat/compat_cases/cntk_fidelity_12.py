"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (twelfth round): ``classification_
error`` of rank-3 samples; a minibatch with more axes than an input takes; ``sharing=False``
of the convolutions; transposed and grouped convolutions over a grid of geometries."""

import re

import numpy as np

from compat_harness import cntk_case


def _described(e):
    """The built-in type and the first line (up to a ';' or a quote) of the error ``e``."""
    builtin = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
    first = str(e).splitlines()[0].split(";")[0].split("'")[0]
    # (uids differ between the two: their numbers are left out, a leading one too)
    first = re.sub(r"\b(Parameter|Constant|Convolution|Input)\d+\b", r"\1#", first)
    return [builtin, re.sub(r"^Convolution# ", "", first).strip()]


def _raised(fn):
    """What ``fn()`` raised (``_described``), or ``["no error", <result's shape>]``."""
    try:
        got = fn()
    except Exception as e:
        return _described(e)
    return ["no error", list(np.shape(got))]


@cntk_case(names=["cntk.metrics.classification_error"],
           note="rank-3 samples: along the default axis CNTK 2.7 raises RuntimeError as the "
                "function is made (its 1 - TransposeTimes(labels, Hardmax(output)) takes "
                "operands of rank 1 or 2 only); with topN > 1 a sample is one column of all "
                "its values (the target's argmax among the topN largest of the whole "
                "sample; a sequence's step as a sample), summed over the minibatch; along a "
                "given axis the mean of its rows.  Stadyn gave each last-axis row's error "
                "(and the count of wrong rows)")
def classification_error__rank_3_samples(C, r):
    r.touch("cntk.metrics.classification_error", "cntk.Function.eval",
            "cntk.sequence.input_variable")
    shape = (2, 3, 4)
    a, b = C.input_variable(shape), C.input_variable(shape)
    scores = r.randn(3, *shape).astype(np.float32)
    n = int(np.prod(shape))
    target = np.zeros((3, n), np.float32)
    # the target of each sample: its top value, its third largest, its smallest
    order = np.argsort(-scores.reshape(3, n), axis=1)
    for i, rank in enumerate((0, 2, n - 1)):
        target[i, order[i, rank]] = 1.0
    target = target.reshape(scores.shape)
    data = {a: scores, b: target}
    res = {"default axis": _raised(lambda: C.classification_error(a, b))}
    for k in (2, 3, 5):
        res["topN %d" % k] = np.asarray(C.classification_error(a, b, topN=k).eval(data))
    for axis in (0, 1, 2):
        res["axis %d" % axis] = np.asarray(C.classification_error(a, b, axis=axis).eval(data))
    # the steps of a sequence of (3, 4) samples, each counted whole, summed over the steps
    m = 12
    o = r.randn(3, 3, 4).astype(np.float32)
    ranks = np.argsort(-o.reshape(3, m), axis=1)
    t = np.zeros((3, m), np.float32)
    for i, rank in enumerate((0, 1, 5)):
        t[i, ranks[i, rank]] = 1.0
    t = t.reshape(o.shape)
    s, u = C.sequence.input_variable((3, 4)), C.sequence.input_variable((3, 4))
    x, y = C.input_variable((3, 4)), C.input_variable((3, 4))
    for k in (2, 6):
        res["rank 2 topN %d" % k] = np.asarray(
            C.classification_error(x, y, topN=k).eval({x: o, y: t}))
        res["sequence topN %d" % k] = np.asarray(
            C.classification_error(s, u, topN=k).eval({s: [o], u: [t]}))
    return res


@cntk_case(names=["cntk.Function.eval"],
           note="a minibatch of more axes than the input's sample and its dynamic axes: CNTK "
                "2.7 takes at most two more (batch and a sequence axis of length 1 for an "
                "input without one), else ValueError 'Value rank (4) should be larger than the "
                "Variable rank (1) at most by number of dynamic axes (1)'; the axis after the "
                "batch must then be 1 ('The dimension size (4) of the axis (1) of the Value "
                "... must be 1, because this axis is not specified as a dynamic axis'); a "
                "sequence of steps of another shape is 'Value::Create: The shape ... of "
                "sequence #0 is not compatible with the sample shape'.  Stadyn said 'The "
                "trailing dimensions ... do not match' or 'sequence 0 has shape'")
def eval__minibatch_with_extra_axes(C, r):
    r.touch("cntk.Function.eval", "cntk.sequence.input_variable", "cntk.input_variable")
    x = C.input_variable(3)
    f = x * 2
    s = C.sequence.input_variable(3)
    g = s * 2
    res = {}
    for label, shape in (("2x4x3", (2, 4, 3)), ("2x1x4x3", (2, 1, 4, 3)),
                         ("2x1x3", (2, 1, 3)), ("2x3x3", (2, 3, 3))):
        data = np.ones(shape, np.float32)
        res["input " + label] = _raised(lambda: f.eval({x: data}))
    res["input list of 4x3"] = _raised(lambda: f.eval({x: [np.ones((4, 3), np.float32)]}))
    for label, shape in (("2x4x5x3", (2, 4, 5, 3)), ("2x1x4x5x3", (2, 1, 4, 5, 3))):
        data = np.ones(shape, np.float32)
        res["sequence " + label] = _raised(lambda: g.eval({s: data}))
    res["sequence list of 4x5x3"] = _raised(
        lambda: g.eval({s: [np.ones((4, 5, 3), np.float32)]}))
    res["sequence list of 4x2"] = _raised(
        lambda: g.eval({s: [np.ones((4, 2), np.float32)]}))
    return res


@cntk_case(names=["cntk.layers.Convolution", "cntk.layers.ConvolutionTranspose",
                  "cntk.layers.Convolution2D", "cntk.ops.convolution"],
           note="sharing=False (or [False]): CNTK 2.7 makes the convolution, with its shape, and "
                "raises RuntimeError 'Convolution weight matrix ... should have dimension "
                "[(filter shape) x (input channels) x (output channels)]' when it first runs; "
                "a sharing list of another length than the filter's is a ValueError as the "
                "layer is made; Convolution1D/2D/3D take no sharing argument (TypeError), "
                "ConvolutionTranspose does.  Stadyn ignored sharing (ran a shared "
                "convolution) and refused it for ConvolutionTranspose")
def convolution__sharing_false(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    x = C.input_variable((1, 5, 5))
    data = np.ones((1, 1, 5, 5), np.float32)
    res = {}
    for label, make in (
            ("layer [False]", lambda: C.layers.Convolution((3, 3), 2, sharing=[False],
                                                           init=1.0)),
            ("layer False", lambda: C.layers.Convolution((3, 3), 2, sharing=False, init=1.0)),
            ("layer [True, False]", lambda: C.layers.Convolution((3, 3), 2,
                                                                 sharing=[True, False],
                                                                 init=1.0)),
            ("layer [True]", lambda: C.layers.Convolution((3, 3), 2, sharing=[True],
                                                          init=1.0)),
            ("transpose [False]", lambda: C.layers.ConvolutionTranspose(
                (3, 3), 2, sharing=[False], init=1.0)),
            ("transpose True", lambda: C.layers.ConvolutionTranspose(
                (3, 3), 2, sharing=True, init=1.0)),
            # (its 7th positional argument is sharing, then bias)
            ("transpose positional", lambda: C.layers.ConvolutionTranspose(
                (3, 3), 2, C.relu, 1.0, False, 1, True, False)),
            ("transpose positional False", lambda: C.layers.ConvolutionTranspose(
                (3, 3), 2, C.relu, 1.0, False, 1, False, False))):
        try:
            y = make()(x)
        except Exception as e:
            res[label] = ["made: " + _described(e)[0]]
            continue
        res[label] = [list(y.shape), _raised(lambda: y.eval({x: data})), len(y.parameters)]
    res["sharing of 3 for (3, 3)"] = _raised(
        lambda: C.layers.Convolution((3, 3), 2, sharing=[True, False, True]))
    res["Convolution2D sharing"] = _raised(
        lambda: C.layers.Convolution2D((3, 3), 2, sharing=False))
    w = C.constant(np.ones((2, 1, 3, 3), np.float32))
    y = C.convolution(w, x, sharing=[False])
    res["op [False]"] = [list(y.shape), _raised(lambda: y.eval({x: data}))]
    return res


def _geometry(C, make, xs, run=True):
    """The output shape of ``make(x)`` over an input of ``xs`` and its values on a fixed
    input (unless not ``run``: CNTK 2.7 runs no dilated convolution on the CPU), or what
    making or running it raised."""
    x = C.input_variable(xs)
    try:
        y = make(x)
    except Exception as e:
        return {"made": _described(e)}
    if not run:
        return {"shape": list(y.shape)}
    data = np.linspace(-2.0, 3.0, 2 * int(np.prod(xs)), dtype=np.float32).reshape((2,) + xs)
    try:
        got = np.asarray(y.eval({x: data}), np.float32).round(4).tolist()
    except Exception as e:
        got = _described(e)
    return {"shape": list(y.shape), "run": got}


def _w(*shape):
    return np.linspace(-1.0, 1.0, int(np.prod(shape)), dtype=np.float32).reshape(shape)


@cntk_case(names=["cntk.ops.convolution_transpose", "cntk.layers.ConvolutionTranspose"],
           rtol=1e-4, atol=1e-4,
           known={"layer dil2": "CNTK 2.7's ConvolutionTranspose layer with dilation=2 and no "
                                "padding infers (i - 1) * stride + kernel (6), leaving the "
                                "dilation out (and cannot run it on the CPU); the native "
                                "stadyn/layers/_layers.py ConvolutionTranspose gives the "
                                "dilated span's (i - 1) * stride + 2 * (kernel - 1) + 1 (8)"},
           note="transposed convolutions over a grid of geometries (strides, auto_padding, "
                "output_shape, dilation, 1-D and 2-D, the layer and the op): output shapes "
                "and values as CNTK 2.7 gives them.  An output_shape whose convolution is "
                "not the operand's shape (or with the channel axis auto-padded, CNTK's "
                "default) is CNTK's RuntimeError as the op is made; Stadyn padded or cut")
def convolution_transpose__geometry_grid(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    res = {}
    op = C.convolution_transpose
    for key, xs, ws, kw in (
            ("2d", (2, 3, 3), (2, 3, 3, 3), {}),
            ("2d_pad", (2, 3, 3), (2, 3, 3, 3), {"auto_padding": [False, True, True]}),
            ("2d_s2", (2, 3, 3), (2, 3, 3, 3), {"strides": 2}),
            ("2d_s2_pad", (2, 3, 3), (2, 3, 3, 3),
             {"strides": 2, "auto_padding": [False, True, True]}),
            ("2d_s2_out7", (2, 3, 3), (2, 3, 3, 3), {"strides": 2, "output_shape": (3, 7, 7)}),
            ("2d_s2_out8", (2, 3, 3), (2, 3, 3, 3),
             {"strides": 2, "auto_padding": [False, True, True], "output_shape": (3, 6, 6)}),
            ("2d_s21", (2, 3, 4), (2, 1, 3, 2), {"strides": (2, 1)}),
            ("2d_s3_pad", (1, 2, 2), (1, 1, 3, 3),
             {"strides": 3, "auto_padding": [False, True, True]}),
            ("2d_dil2", (1, 3, 3), (1, 1, 3, 3), {"dilation": 2}),
            ("2d_even_k_pad", (1, 3, 3), (1, 1, 2, 2), {"auto_padding": [False, True, True]}),
            ("2d_even_k_s2_pad", (1, 3, 3), (1, 1, 4, 4),
             {"strides": 2, "auto_padding": [False, True, True]}),
            ("1d", (2, 4), (2, 3, 3), {}),
            ("1d_s2_pad", (2, 4), (2, 3, 3), {"strides": 2, "auto_padding": [False, True]}),
            ("1d_s2_out9", (2, 4), (2, 3, 3), {"strides": 2, "output_shape": (3, 9)})):
        res["op " + key] = _geometry(C, lambda x: op(C.constant(_w(*ws)), x, **kw), xs,
                                     "dilation" not in kw)
    for key, xs, kw in (
            ("pad", (2, 4, 4), {"pad": True}),
            ("s2", (2, 4, 4), {"strides": 2}),
            ("s2_pad", (2, 4, 4), {"strides": 2, "pad": True}),
            ("s2_out", (2, 4, 4), {"strides": 2, "output_shape": (9, 9)}),
            ("s2_pad_out", (2, 4, 4), {"strides": 2, "pad": True, "output_shape": (8, 8)}),
            ("dil2", (2, 4, 4), {"dilation": 2}),
            ("k2_s2", (2, 3, 3), {"filter_shape": (2, 2), "strides": 2})):
        kw = dict(kw)
        fs = kw.pop("filter_shape", (3, 3))
        res["layer " + key] = _geometry(
            C, lambda x: C.layers.ConvolutionTranspose(fs, 3, init=C.glorot_uniform(seed=1),
                                                       bias=False, **kw)(x), xs,
            "dilation" not in kw)
    return res


@cntk_case(names=["cntk.ops.convolution", "cntk.layers.Convolution"],
           rtol=1e-4, atol=1e-4,
           note="grouped convolutions (groups=) over a grid of geometries: output shapes and "
                "values, and what CNTK 2.7 refuses: channels not the map's times the groups, "
                "maps not divisible by them (RuntimeError as the op is made; Stadyn: "
                "ValueError, at the run), the layers' groups > 1 (ValueError).  With the "
                "default auto_padding the map slides along the channels (CNTK: (maps * "
                "positions, ...), refused at the run; Stadyn ran the grouped convolution)")
def convolution__grouped_geometry_grid(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    res = {}
    for key, xs, ws, kw in (
            ("g2_channel_pad", (4, 5, 5), (4, 2, 3, 3), {"groups": 2}),
            ("g2", (4, 5, 5), (4, 2, 3, 3), {"groups": 2, "auto_padding": [False, True, True]}),
            ("g2_nopad", (4, 5, 5), (4, 2, 3, 3),
             {"groups": 2, "auto_padding": [False, False, False]}),
            ("g2_s2", (4, 5, 5), (6, 2, 3, 3), {"groups": 2, "strides": (1, 2, 2),
                                                "auto_padding": [False, True, True]}),
            ("g4_depthwise", (4, 5, 5), (4, 1, 3, 3), {"groups": 4,
                                                       "auto_padding": [False, True, True]}),
            ("g2_dil2", (4, 6, 6), (2, 2, 3, 3), {"groups": 2, "dilation": (1, 2, 2),
                                                  "auto_padding": [False, False, False]}),
            ("g3_bad_channels", (4, 5, 5), (3, 1, 3, 3), {"groups": 3}),
            ("g2_bad_maps", (4, 5, 5), (3, 2, 3, 3), {"groups": 2})):
        res["op " + key] = _geometry(
            C, lambda x: C.convolution(C.constant(_w(*ws)), x, **kw), xs, "dilation" not in kw)
    for key, xs, kw in (
            ("g2", (4, 5, 5), {"groups": 2}),
            ("g2_pad", (4, 5, 5), {"groups": 2, "pad": True}),
            ("g2_s2_pad", (4, 6, 6), {"groups": 2, "strides": 2, "pad": True})):
        res["layer " + key] = _geometry(
            C, lambda x: C.layers.Convolution((3, 3), 4, init=C.glorot_uniform(seed=1),
                                              bias=False, **kw)(x), xs)
    return res


@cntk_case(names=["cntk.placeholder", "cntk.InferredDimension"],
           note="ops on a placeholder with an inferred axis, before it is bound: CNTK 2.7 "
                "infers their shapes with -1 for that axis (plus (-1, 3), printed "
                "Sequence[Tensor[-1,3]], its output [? x 3]; a times by a (3, 2) parameter "
                "(-1, 2)); Stadyn showed (-2,), Sequence[tensor], [???].  Over a placeholder "
                "of no shape both stay unknown")
def placeholder__ops_before_it_is_bound(C, r):
    r.touch("cntk.ops.plus", "cntk.ops.relu", "cntk.ops.reduce_sum", "cntk.ops.times",
            "cntk.ops.splice", "cntk.parameter", "cntk.Function.shape", "cntk.Function.output")
    p = C.placeholder((C.InferredDimension, 3), name="p")
    q = C.placeholder(name="q")
    res = {}
    for label, make in (("plus", lambda: C.plus(p, 1)),
                        ("relu of plus", lambda: C.relu(C.plus(p, 1))),
                        ("reduce_sum axis 0", lambda: C.reduce_sum(p, axis=0)),
                        ("reduce_sum axis 1", lambda: C.reduce_sum(p, axis=1)),
                        ("times", lambda: C.times(p, C.parameter((3, 2), init=1.0))),
                        ("splice", lambda: C.splice(p, p)),
                        ("plus of no shape", lambda: C.plus(q, 1))):
        f = make()
        # (the output's uid left out: CNTK's reduce_sum is a Block)
        res[label] = [list(f.shape), re.sub(r"^Output\('[^']*'", "Output(#", repr(f.output)),
                      str(f)]
    return res


@cntk_case(names=["cntk.learners.sgd", "cntk.learners.momentum_sgd"],
           note="a learner given parameters of a layer not applied yet whose shapes are known "
                "(a Dense's b, an LSTM's H and b): CNTK 2.7 takes them, and once the layer is "
                "applied learns the parameters its application uses (they are the same "
                "objects); Stadyn refused them (ValueError 'belongs to a layer not applied "
                "yet')")
def learners__on_declared_parameters_of_known_shape(C, r):
    r.touch("cntk.layers.Dense", "cntk.layers.LSTM", "cntk.layers.Recurrence",
            "cntk.learning_parameter_schedule", "cntk.Trainer.train_minibatch",
            "cntk.learners.Learner.parameters")
    lr = C.learning_parameter_schedule(0.1)

    def listed(ps):
        return [[p.name, list(p.shape)] for p in ps]
    x = C.input_variable(2)
    d = C.layers.Dense(3, init=1.0)
    learner = C.sgd([d.b], lr)
    res = {"before": listed(learner.parameters)}
    z = d(x)
    res["applied"] = listed(learner.parameters)
    trainer = C.Trainer(z, (C.reduce_sum(z), C.reduce_sum(z)), [learner])
    trainer.train_minibatch({x: np.ones((2, 2), np.float32)})
    res["b after a step"] = np.asarray(d.b.value)
    res["W after a step"] = np.asarray(d.W.value)
    cell = C.layers.LSTM(2)
    learner = C.momentum_sgd([cell.H, cell.b], lr, 0.9)
    C.layers.Recurrence(cell)(C.sequence.input_variable(3))
    res["lstm"] = listed(learner.parameters)
    return res
