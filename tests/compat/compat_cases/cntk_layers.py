"""``cntk.layers`` (and the 2017 betas' ``cntk.models``): each layer's parameters (names,
shapes), its inference and training values and its gradients w.r.t. input and parameters, with
the parameters set from their names (``r.set_params``)."""

import numpy as np

from compat_harness import cntk_case

B = 2


def _key(p):
    return "%s|%d" % (p.name, int(np.prod(p.shape)))


def run_layer(C, r, build, in_shape, grads=True, data=None, stats=False):
    """Apply ``build(C)`` to an input of per-sample ``in_shape``; results: ``params`` (sorted
    names and shapes), ``shape``, ``out`` (inference), ``train_out`` and ``grad ...`` (input
    and every parameter), and with ``stats`` the constants after one training forward."""
    x = C.input_variable(in_shape, needs_gradient=bool(grads))
    f = build(C)(x)
    r.touch("cntk.Function.parameters", "cntk.Function.eval", "cntk.Function.shape")
    res = {"params": r.set_params(f.parameters), "shape": list(f.shape)}
    values = data(r, (B,) + tuple(in_shape)) if data else r.randn(B, *in_shape)
    res["out"] = f.eval({x: values})
    if grads:
        params = list(f.parameters)
        value, gs = r.cntk_forward_backward(f, {x: values}, [x] + params)
        res["train_out"] = value
        res["grad x"] = gs[0]
        for p, g in zip(params, gs[1:]):
            res["grad " + _key(p)] = np.asarray(g).ravel()
    if stats:
        r.touch("cntk.Function.constants")
        for c in f.constants:
            res["stat " + c.name] = np.asarray(c.value, np.float32).ravel()
        res["out_after"] = f.eval({x: values})
    return res


def layer_case(name, build, in_shape, names, **kw):
    """Register ``run_layer`` for ``build`` as a case (``kw``: the case's options, and
    ``grads``/``data``/``stats`` for ``run_layer``)."""
    opts = dict((k, kw.pop(k)) for k in ("grads", "data", "stats") if k in kw)

    def fn(C, r):
        return run_layer(C, r, build, in_shape, **opts)
    fn.__name__ = name
    cntk_case(name=name, names=names, **kw)(fn)


layer_case("Dense", lambda C: C.layers.Dense(4), (5,), ["cntk.layers.Dense"])
layer_case("Dense__activation", lambda C: C.layers.Dense(3, activation=C.relu, name="d"), (5,),
           ["cntk.layers.Dense"])
layer_case("Dense__no_bias", lambda C: C.layers.Dense(3, bias=False), (4,), ["cntk.layers.Dense"])
layer_case("Dense__shape", lambda C: C.layers.Dense((2, 3)), (4,), ["cntk.layers.Dense"])
layer_case("Dense__tensor_input", lambda C: C.layers.Dense(3), (2, 4), ["cntk.layers.Dense"],
           note="W keeps the input's axes: (2, 4, 3)")
layer_case("Convolution", lambda C: C.layers.Convolution((3, 3), 4), (2, 6, 6),
           ["cntk.layers.Convolution"])
layer_case("Convolution__pad_strides", lambda C: C.layers.Convolution(
    (3, 3), 3, pad=True, strides=2, activation=C.relu), (2, 7, 7), ["cntk.layers.Convolution"])
layer_case("Convolution__no_channel", lambda C: C.layers.Convolution((3, 3), 2, reduction_rank=0),
           (6, 6), ["cntk.layers.Convolution"], note="a sample without a channel axis")
layer_case("Convolution1D", lambda C: C.layers.Convolution1D(3, 4, pad=True), (2, 7),
           ["cntk.layers.Convolution1D"])
layer_case("Convolution2D", lambda C: C.layers.Convolution2D((2, 3), 3), (2, 5, 6),
           ["cntk.layers.Convolution2D"])
layer_case("Convolution3D", lambda C: C.layers.Convolution3D((2, 2, 2), 2), (1, 3, 4, 4),
           ["cntk.layers.Convolution3D"])
layer_case("ConvolutionTranspose", lambda C: C.layers.ConvolutionTranspose((3, 3), 2), (3, 4, 4),
           ["cntk.layers.ConvolutionTranspose"])
layer_case("ConvolutionTranspose__strides", lambda C: C.layers.ConvolutionTranspose(
    (2, 2), 3, strides=2, pad=False), (2, 3, 3), ["cntk.layers.ConvolutionTranspose"])
layer_case("MaxPooling", lambda C: C.layers.MaxPooling((2, 2)), (2, 4, 6),
           ["cntk.layers.MaxPooling"])
layer_case("MaxPooling__strides_pad", lambda C: C.layers.MaxPooling((3, 3), strides=2, pad=True),
           (2, 5, 5), ["cntk.layers.MaxPooling"])
layer_case("AveragePooling", lambda C: C.layers.AveragePooling((2, 2), strides=2), (2, 4, 6),
           ["cntk.layers.AveragePooling"])
layer_case("AveragePooling__pad", lambda C: C.layers.AveragePooling((3, 3), pad=True), (1, 4, 4),
           ["cntk.layers.AveragePooling"],
           note="with pad=True the border windows average over the valid values only")
layer_case("GlobalMaxPooling", lambda C: C.layers.GlobalMaxPooling(), (3, 4, 5),
           ["cntk.layers.GlobalMaxPooling"])
layer_case("GlobalAveragePooling", lambda C: C.layers.GlobalAveragePooling(), (3, 4, 5),
           ["cntk.layers.GlobalAveragePooling"])
layer_case("Embedding", lambda C: C.layers.Embedding(3), (6,), ["cntk.layers.Embedding"],
           data=lambda r, s: np.eye(6, dtype=np.float32)[r.randint(0, 6, s[:1])],
           note="CNTK's Embedding is a product with a one-hot (or any dense) input")
layer_case("Activation", lambda C: C.layers.Activation(C.tanh), (2, 3),
           ["cntk.layers.Activation"])
layer_case("Label", lambda C: C.layers.Sequential([C.layers.Dense(3), C.layers.Label("lab")]),
           (4,), ["cntk.layers.Label"])
layer_case("BatchNormalization", lambda C: C.layers.BatchNormalization(), (3,),
           ["cntk.layers.BatchNormalization"], stats=True)
layer_case("BatchNormalization__spatial", lambda C: C.layers.BatchNormalization(map_rank=1),
           (3, 2, 2), ["cntk.layers.BatchNormalization"], stats=True)
layer_case("BatchNormalization__elementwise", lambda C: C.layers.BatchNormalization(),
           (2, 2, 3), ["cntk.layers.BatchNormalization"], stats=True,
           note="without map_rank CNTK normalises each element of a sample on its own")
layer_case("Sequential", lambda C: C.layers.Sequential([
    C.layers.Convolution((3, 3), 3, pad=True, activation=C.relu), C.layers.MaxPooling((2, 2)),
    [C.layers.Dense(5, activation=C.sigmoid)], C.layers.Dense(2)]), (2, 4, 4),
    ["cntk.layers.Sequential"])
layer_case("Sequential__shift", lambda C: C.layers.Dense(4, activation=C.tanh)
           >> C.layers.Dense(3), (5,), ["cntk.layers.Dense"],
           note="layer >> layer is Sequential (LayerFunction.__rshift__)")
layer_case("For", lambda C: C.layers.For(range(3), lambda i: C.layers.Dense(4 + i)), (3,),
           ["cntk.layers.For"])


@cntk_case(names=["cntk.layers.For"])
def For__no_index(C, r):
    """A constructor without an index argument; the layers have equal shapes, so only their
    listing and the output's shape are compared."""
    x = C.input_variable(3)
    f = C.layers.For(range(2), lambda: C.layers.Dense(3, activation=C.relu))(x)
    r.touch("cntk.Function.parameters", "cntk.Function.shape")
    return {"params": sorted([p.name, list(p.shape)] for p in f.parameters),
            "shape": list(f.shape)}


@cntk_case(names=["cntk.layers.Dropout"],
           tols={"rate zero_fraction": (0, 0.02), "keep zero_fraction": (0, 0.02)},
           note="random masks differ; compared: inference is the identity, the kept values' "
                "scale, the fraction dropped (+-0.02 over 8000 values)")
def Dropout(C, r):
    x = C.input_variable((50, 40))
    data = r.rand(4, 50, 40, low=0.5, high=1.5)
    out = {}
    for label, layer in (("rate", C.layers.Dropout(0.25)),
                         ("keep", C.layers.Dropout(keep_prob=0.6))):
        f = layer(x)
        r.touch("cntk.Function.eval", "cntk.Function.forward", "cntk.Function.output")
        out[label + " inference_is_identity"] = bool(np.array_equal(f.eval({x: data}), data))
        _, value = f.forward({x: data}, [f.output], set([f.output]))
        value = value[f.output]
        kept = value != 0
        out[label + " scale"] = np.unique(np.round(value[kept] / data[kept], 4))
        out[label + " zero_fraction"] = np.float32(1.0 - kept.mean())
    return out


@cntk_case(names=["cntk.layers.default_options"])
def default_options(C, r):
    """``default_options`` sets activation, init, pad and bias for the layers made inside it;
    an explicit argument still wins."""
    x = C.input_variable((2, 5, 5))
    with C.layers.default_options(activation=C.relu, pad=True, bias=False):
        f = C.layers.Sequential([C.layers.Convolution((3, 3), 3),
                                 C.layers.Convolution((3, 3), 4, pad=False, activation=None),
                                 C.layers.Dense(4, activation=C.tanh)])(x)
    r.touch("cntk.Function.parameters", "cntk.Function.eval", "cntk.Function.shape")
    params = r.set_params(f.parameters)
    data = r.randn(B, 2, 5, 5)
    return {"params": params, "shape": list(f.shape), "out": f.eval({x: data})}


@cntk_case(names=["cntk.layers.default_options"])
def default_options__init(C, r):
    """``init`` from default_options: a constant initialiser gives every weight its value."""
    x = C.input_variable(3)
    with C.layers.default_options(init=0.25, init_bias=0.5):
        f = C.layers.Dense(2)(x)
    r.touch("cntk.Function.parameters", "cntk.Function.value")
    return dict(("value " + p.name, p.value) for p in f.parameters)


@cntk_case(names=["cntk.layers.Dense"],
           note="a layer object's own parameters (CNTK: the layer is a Function)")
def layer_parameters(C, r):
    d = C.layers.Dense(3)
    d(C.input_variable(4))
    r.touch("cntk.Function.parameters")
    return {"params": sorted([p.name, list(p.shape)] for p in d.parameters)}


@cntk_case(names=["cntk.layers.AttentionModel", "cntk.layers.Dense", "cntk.layers.LSTM",
                  "cntk.layers.GRU", "cntk.layers.Embedding", "cntk.layers.Convolution",
                  "cntk.layers.BatchNormalization", "cntk.layers.Sequential",
                  "cntk.layers.Stabilizer"],
           note="the order of parameters, of an applied graph and of the layer object")
def parameters_order(C, r):
    """``parameters`` in CNTK's order: its walk from the output, a block's own parameters
    before those of its operands (nested Stabilizer >> Dense projections, the attention's
    tanh projection first), a Sequential's last layer first, a batch normalisation's
    running statistics left out.  The layers are applied and the result dropped: the layer
    object still lists its parameters."""
    L = C.layers
    x = C.input_variable(4)
    s = C.sequence.input_variable(4, sequence_axis=C.Axis("enc"))
    q = C.sequence.input_variable(6, sequence_axis=C.Axis("dec"))
    im = C.input_variable((2, 5, 5))
    r.touch("cntk.Function.parameters")

    def names(f):
        return ["%s%s" % (p.name, tuple(p.shape)) for p in f.parameters]
    res = {}
    layers = {
        "dense": (L.Dense(3), (x,)), "embedding": (L.Embedding(3), (x,)),
        "conv": (L.Convolution((3, 3), 4), (im,)), "bn": (L.BatchNormalization(), (x,)),
        "lstm": (L.Recurrence(L.LSTM(3)), (s,)), "gru": (L.Recurrence(L.GRU(3)), (s,)),
        "sequential": (L.Sequential([L.Embedding(5), L.BatchNormalization(), L.Dense(2)]),
                       (x,)),
        "parallel": (L.Sequential([L.Dense(3), (L.Dense(2), L.Dense(5)), C.splice]), (x,)),
        "attention": (L.AttentionModel(5), (s, q)),
        "attention_plain": (L.AttentionModel(5, enable_self_stabilization=False), (s, q)),
    }
    for key, (layer, args) in layers.items():
        res[key] = names(layer(*args))
        res[key + "_layer"] = names(layer)
    a = L.Stabilizer() >> L.Dense(5, bias=False)
    b = L.Stabilizer() >> L.Dense(5, bias=False)
    y = C.input_variable(6)
    res["nested_blocks"] = names(C.tanh(b(y) + a(x)))
    return res


@cntk_case(names=["cntk.layers.Dense"])
def shared_layer(C, r):
    """One layer object applied twice shares its parameters."""
    x = C.input_variable(4)
    d = C.layers.Dense(4, activation=C.tanh)
    f = d(d(x))
    r.touch("cntk.Function.parameters", "cntk.Function.eval")
    params = r.set_params(f.parameters)
    return {"params": params, "out": f.eval({x: r.randn(3, 4)})}
