"""A CNTK 2.7 user's own programs (round 38, third part): a text classifier convolving along
the sequence axis as ``Convolution``'s docstring shows it (``sequential=True``), and the grouped
convolutions ``Convolution2D``/``3D`` refuse; each is run unchanged on CNTK 2.7 and on
``stadyn.compat.cntk``."""

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


def _set_sorted(r, params):
    """Seeded values for ``params`` by their order sorted on name and shape (the two
    frameworks list a layer's parameters in their own orders); returns the listing."""
    listing = sorted([p.name, list(p.shape)] for p in params)
    for i, p in enumerate(sorted(params, key=lambda p: (p.name, list(p.shape)))):
        p.value = r.param_value("p%d_%s" % (i, p.name), p.shape)
    return listing


# -- 15. a CNN text classifier: Convolution(sequential=True) over embedded words -----------------

@cntk_case(names=["cntk.layers.Convolution", "cntk.layers.Embedding",
                  "cntk.sequence.reduce_max", "cntk.layers.Dense"],
           rtol=1e-4, atol=1e-5,
           note="Convolution's docstring: 'To convolve along the sequence dimension as well, "
                "pass sequential=True' (filter_shape[0] runs along the sequence axis; CNTK "
                "2.7's layer splices past and future values into a window and convolves it, "
                "b is (num_filters, 1, ...) with one axis per filter axis): a text classifier "
                "Embedding(4) -> Convolution((3,), 5, sequential=True, pad=True, "
                "activation=relu) -> sequence.reduce_max -> Dense(2), trained two adam steps "
                "on sequences of 4, 2, 5 and 1 words; the parameter listing, outputs, losses, "
                "parameters after; an even window (2,) unpadded over steps of (2, 5) with a "
                "spatial filter axis (3, 2), no num_filters and reduction_rank=0, and "
                "default_options(pad=True) reaching it; what CNTK refuses: a stride along the "
                "sequence axis (NotImplementedError as made), sequences shorter than an "
                "unpadded window, beside longer ones or not (RuntimeError when evaluated); "
                "a padded window of 5 over sequences of 2 and 1 steps is computed (zeros "
                "outside them; CNTK's SequentialConvolution refuses it)")
def user38_convolution_sequential_text(C, r):
    V = 6
    x = C.sequence.input_variable(V, name="words")
    y = C.input_variable(2, name="label")
    conv = C.layers.Convolution((3,), 5, sequential=True, pad=True, activation=C.relu,
                                name="conv")
    z = C.layers.Sequential([C.layers.Embedding(4, name="embed"), conv,
                             C.sequence.reduce_max, C.layers.Dense(2, name="out")])(x)
    res = {"parameters": _set_sorted(r, z.parameters),
           "conv": [list(conv.W.shape), list(conv.b.shape)]}
    words = [np.eye(V, dtype=np.float32)[r.randint(0, V, (n,))] for n in (4, 2, 5, 1)]
    labels = r.onehot(4, 2)
    res["outputs"] = z.eval({x: words})
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.adam(z.parameters, C.learning_parameter_schedule(0.05),
                                C.momentum_schedule(0.9))])
    steps = []
    for _ in range(2):
        trainer.train_minibatch({x: words, y: labels})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average])
    res["steps"] = steps
    res["values"] = sorted([p.name, np.asarray(p.value).ravel().tolist()]
                           for p in z.parameters)

    s = C.sequence.input_variable((2, 5), name="frames")
    frames = [r.randn(n, 2, 5) for n in (4, 3, 5)]
    even = C.layers.Convolution((2, 3), 3, sequential=True, pad=False, name="even")
    ye = even(s)
    res["even"] = [list(even.W.shape), list(even.b.shape), list(ye.shape)]
    _set_sorted(r, ye.parameters)
    res["even out"] = [np.asarray(v) for v in ye.eval({s: frames})]
    t = C.sequence.input_variable(4, name="signal")
    with C.layers.default_options(pad=True):
        mono = C.layers.Convolution((2, 3), sequential=True, reduction_rank=0, name="mono")
    ym = mono(t)
    res["mono"] = [list(mono.W.shape), list(mono.b.shape), list(ym.shape)]
    _set_sorted(r, ym.parameters)
    res["mono out"] = [np.asarray(v) for v in ym.eval({t: [r.randn(n, 4) for n in (3, 1)]})]
    res["sequence stride"] = outcome(lambda: C.layers.Convolution(
        (2,), 2, sequential=True, strides=2)(x).shape)
    short = C.layers.Convolution((3,), 2, sequential=True, pad=False)(x)
    res["shorter than the window"] = outcome(
        lambda: [np.asarray(v).shape for v in short.eval({x: words})])
    res["every sequence shorter, unpadded"] = outcome(
        lambda: [np.asarray(v).shape for v in short.eval({x: words[1:2] + words[3:]})])
    wide = C.layers.Convolution((5,), 2, sequential=True, pad=True, name="wide")
    yw = wide(x)
    _set_sorted(r, yw.parameters)
    res["window longer than every sequence, padded"] = [
        np.asarray(v) for v in yw.eval({x: words[1:2] + words[3:]})]
    return res


# -- 16. grouped convolutions: Convolution2D and Convolution3D refuse groups > 1 ----------------

@cntk_case(names=["cntk.layers.Convolution2D", "cntk.layers.Convolution3D",
                  "cntk.layers.Convolution1D",
                  "cntk.layers.Convolution", "cntk.ops.convolution"],
           rtol=1e-4, atol=1e-5,
           note="CNTK 2.7's Convolution2D and Convolution3D take groups= and hand it to "
                "Convolution, which refuses groups > 1 (ValueError: 'use CNTK's low-level "
                "convolution node'); the low-level C.convolution(W, x, groups=2) a user then "
                "writes computes it (its values compared); groups=1 and groups=0 (ValueError); "
                "Convolution1D takes no groups (TypeError)")
def user38_grouped_convolution_layers(C, r):
    res = {}
    for name, make in [
            ("2D groups 2", lambda: C.layers.Convolution2D((3, 3), 4, groups=2)),
            ("3D groups 2", lambda: C.layers.Convolution3D((1, 3, 3), 4, groups=2)),
            ("layer groups 2", lambda: C.layers.Convolution((3, 3), 4, groups=2)),
            ("2D groups 0", lambda: C.layers.Convolution2D((3, 3), 4, groups=0)),
            ("1D groups", lambda: C.layers.Convolution1D(3, 4, groups=2))]:
        res[name] = outcome(lambda: list(make().W.shape))
    img = C.input_variable((4, 5, 5), name="img")
    one = C.layers.Convolution2D((3, 3), 2, groups=1, pad=True)
    res["2D groups 1"] = list(one(img).shape)
    W = C.parameter((4, 2, 3, 3), name="Wg")
    W.value = r.param_value("Wg", (4, 2, 3, 3))
    y = C.convolution(W, img, auto_padding=[False, True, True], groups=2)
    res["low-level grouped"] = y.eval({img: r.randn(2, 4, 5, 5)})
    return res


# -- 17. gradients by hand as Value objects (CNTK_203's policy gradient, as_numpy=False) ---------

@cntk_case(names=["cntk.Function.grad", "cntk.Function.forward", "cntk.Function.backward",
                  "cntk.core.Value.asarray", "cntk.core.Value.mask", "cntk.core.Value.shape"],
           rtol=1e-5, atol=1e-6,
           note="CNTK_203's policy gradient takes a model's gradients by hand and applies them "
                "with a learner's update; here read as CNTK's Value objects (as_numpy=False, "
                "which CNTK 2.7's grad and backward honour as forward does): grad w.r.t. a "
                "parameter (one Value), w.r.t. a parameter and an input with outputs= (a dict "
                "of Values and a Value), w.r.t. a ragged sequence input (padded, its mask), "
                "and backward after forward; each Value's type, asarray(), shape and mask; "
                "then the parameter gradients applied by sgd.update, the parameters after")
def user38_gradients_as_values(C, r):
    r.touch("cntk.Function.grad", "cntk.Function.forward", "cntk.Function.backward",
            "cntk.core.Value.asarray", "cntk.core.Value.mask", "cntk.core.Value.shape")
    x = C.input_variable(3, name="x", needs_gradient=True)
    z = C.layers.Dense(2, activation=C.tanh, name="policy")(x)
    res = {"parameters": r.set_params(z.parameters)}
    X = r.randn(3, 3)
    g = z.grad({x: X}, wrt=[z.W], as_numpy=False)
    res["one"] = [type(g).__name__, g.asarray(), list(g.shape)]
    grads, out = z.grad({x: X}, wrt=[z.W, z.b, x], outputs=[z.output], as_numpy=False)
    res["several"] = sorted([k.name, type(v).__name__, list(v.shape)] for k, v in grads.items())
    res["several values"] = dict((k.name, v.asarray()) for k, v in grads.items())
    res["outputs"] = [type(out).__name__, out.asarray()]
    s = C.sequence.input_variable(2, name="s", needs_gradient=True)
    f = C.sequence.reduce_sum(s * s)
    S = [r.randn(3, 2), r.randn(1, 2)]
    gs = f.grad({s: S}, wrt=[s], as_numpy=False)
    res["sequence"] = [type(gs).__name__, gs.asarray(), gs.mask, list(gs.shape)]
    state, _ = f.forward({s: S}, [f.output], set([f.output]))
    back = f.backward(state, {f.output: r.randn(2, 2)}, set([s]), as_numpy=False)
    res["backward"] = [type(back[s]).__name__, back[s].asarray(), back[s].mask]
    learner = C.sgd(z.parameters, C.learning_parameter_schedule(0.1))
    learner.update(dict((p, grads[p].asarray()) for p in z.parameters), 3)
    res["values"] = r.param_values(z.parameters)
    return res


# -- 18. pow of a computed base (left as it is) and unpack_batch's shape ----------------------

@cntk_case(names=["cntk.ops.pow", "cntk.ops.unpack_batch", "cntk.ops.to_batch",
                  "cntk.Function.grad", "cntk.ops.reshape", "cntk.ops.slice"],
           rtol=1e-4, atol=1e-5,
           note="found while writing the round-38 programs: pow's gradient where its base is "
                "the input itself (both give e * x ** (e - 1); where another op computed the "
                "base, CNTK 2.7 reads a buffer its memory sharing reused: 1.5 when this case "
                "ran alone, the derivative in a whole regeneration, so it is not compared: "
                "rmF38_pow_gradient_released_base, docs/cntk-names.md 'pow'), and "
                "unpack_batch's static shape: its batch axis "
                "a FreeDimension (-3) before and after a run, kept by ops over it (before "
                "cntkuser38 Stadyn showed 1, then the last run's batch size)")
def user38_pow_and_unpack_batch(C, r):
    r.touch("cntk.Function.grad")
    x = C.input_variable(3, name="x", needs_gradient=True)
    X = np.array([[0.5, 2.0, 3.0]], np.float32)
    res = {"pow of the input, gradient": C.pow(x, 1.5).grad({x: X}),
           "pow of a computed base": C.pow(x + 1, 1.5).eval({x: X})}
    u = C.unpack_batch(x)
    before = list(u.shape)
    values = u.eval({x: r.randn(4, 3)})
    res["unpack_batch values"] = values
    res["unpack_batch shape"] = [before, list(u.shape)]
    res["to_batch shape"] = list(C.to_batch(u).shape)
    res["ops over it"] = [list((u * 2).shape), list(C.reduce_sum(u, axis=0).shape),
                          list(C.reduce_sum(u, axis=1).shape),
                          list(C.reshape(u, (3, 1), begin_axis=1).shape),
                          list(C.slice(u, 1, 0, 2).shape)]
    return res
