"""More of ``cntk.layers``: transposed convolutions by rank, layer normalisation, the
stabiliser, max unpooling, skip connections (``ResNetBlock``, ``SequentialClique``), a layer
with a signature, batch normalisation over several minibatches, and the names the module
re-exports."""

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_layers import layer_case

layer_case("ConvolutionTranspose1D", lambda C: C.layers.ConvolutionTranspose1D(3, 2), (3, 5),
           ["cntk.layers.ConvolutionTranspose1D"])
layer_case("ConvolutionTranspose2D", lambda C: C.layers.ConvolutionTranspose2D((2, 3), 2, pad=True),
           (3, 4, 4), ["cntk.layers.ConvolutionTranspose2D"])
layer_case("ConvolutionTranspose3D", lambda C: C.layers.ConvolutionTranspose3D((2, 2, 2), 2),
           (1, 2, 3, 3), ["cntk.layers.ConvolutionTranspose3D"])
# auto-padded transposed convolutions with strides: CNTK makes (size - 1) * stride + 1 outputs
# whatever the kernel
layer_case("ConvolutionTranspose__pad_strides", lambda C: C.layers.ConvolutionTranspose(
    (3, 3), 2, pad=True, strides=2), (3, 4, 4), ["cntk.layers.ConvolutionTranspose"])
layer_case("ConvolutionTranspose__pad_even_kernel", lambda C: C.layers.ConvolutionTranspose(
    (4, 4), 2, pad=True, strides=2), (2, 5, 5), ["cntk.layers.ConvolutionTranspose"])
layer_case("ConvolutionTranspose__pad_stride_3", lambda C: C.layers.ConvolutionTranspose(
    (3, 3), 2, pad=True, strides=3), (2, 4, 4), ["cntk.layers.ConvolutionTranspose"])
layer_case("ConvolutionTranspose__pad_kernel_1", lambda C: C.layers.ConvolutionTranspose(
    (1, 1), 2, pad=True, strides=2), (2, 3, 3), ["cntk.layers.ConvolutionTranspose"])
layer_case("LayerNormalization", lambda C: C.layers.LayerNormalization(), (5,),
           ["cntk.layers.LayerNormalization"])
layer_case("LayerNormalization__matrix", lambda C: C.layers.LayerNormalization(
    initial_scale=2, initial_bias=1), (2, 3), ["cntk.layers.LayerNormalization"])
layer_case("Stabilizer", lambda C: C.layers.Stabilizer(), (4,), ["cntk.layers.Stabilizer"],
           note="the learned scalar starts at 1; set_params moves it")
layer_case("Stabilizer__steepness", lambda C: C.layers.Stabilizer(steepness=2), (3,),
           ["cntk.layers.Stabilizer"])
layer_case("ResNetBlock", lambda C: C.layers.ResNetBlock(C.layers.Dense(4, activation=C.tanh)),
           (4,), ["cntk.layers.ResNetBlock"])
layer_case("SequentialClique", lambda C: C.layers.SequentialClique(
    [C.layers.Dense(3, activation=C.relu), C.abs, C.layers.Stabilizer()]), (3,),
    ["cntk.layers.SequentialClique"])
layer_case("Sequential__tuple", lambda C: C.layers.Sequential(
    [C.layers.Dense(4), (C.layers.Dense(2), C.layers.identity), C.splice]), (3,),
    ["cntk.layers.Sequential", "cntk.layers.identity"],
    note="a tuple applies its members to the same input; splice joins their outputs")
layer_case("Sequential__named", lambda C: C.layers.Sequential(
    [C.layers.Dense(3), lambda x: x * 2.0], name="seq"), (2,), ["cntk.layers.Sequential"])
layer_case("BatchNormalization__time_constant", lambda C: C.layers.BatchNormalization(
    normalization_time_constant=4), (3,), ["cntk.layers.BatchNormalization"], stats=True)


@cntk_case(names=["cntk.layers.BatchNormalization"],
           note="the running statistics over four training minibatches of 2, 5, 3 and 4 "
                "samples: the first replaces them, the rest blend in by 1 - exp(-M / T)")
def BatchNormalization__running(C, r):
    out = {}
    for label, tc in (("T5000", 5000), ("T4", 4), ("T0", 0), ("Tinf", np.inf)):
        x = C.input_variable(3)
        f = C.layers.BatchNormalization(normalization_time_constant=tc)(x)
        r.touch("cntk.Function.forward", "cntk.Function.output", "cntk.Function.constants",
                "cntk.Function.eval", "cntk.Constant.value")
        for k, n in enumerate((2, 5, 3, 4)):
            data = r.randn(n, 3) * np.array([1, 2, 3], np.float32) + np.array([1, -1, 0.5],
                                                                              np.float32)
            f.forward({x: data}, [f.output], set([f.output]))
        for c in f.constants:
            out[label + " " + c.name] = np.asarray(c.value, np.float32).ravel()
        out[label + " eval"] = f.eval({x: data})
    return out


@cntk_case(names=["cntk.layers.MaxUnpooling", "cntk.layers.MaxPooling"])
def MaxUnpooling(C, r):
    x = C.input_variable((2, 4, 6))
    pooled = C.layers.MaxPooling((2, 2), (2, 2))(x)
    f = C.layers.MaxUnpooling((2, 2), (2, 2))(pooled * 3.0, x)
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    return {"shape": list(f.shape), "out": f.eval({x: r.randn(2, 2, 4, 6)})}


@cntk_case(names=["cntk.layers.Dense"],
           note="update_signature gives a layer its input; then it evaluates on data and its "
                "parameters exist")
def layer_signature(C, r):
    d = C.layers.Dense(3, activation=C.relu)
    d.update_signature(4)
    r.touch("cntk.Parameter.value")
    params = r.set_params(d.parameters)
    return {"params": params, "W": list(d.W.shape), "out": d(r.randn(2, 4))}


@cntk_case(names=["cntk.layers.NDShape", "cntk.layers.NDShape.dimensions",
                  "cntk.layers.NDShape.rank", "cntk.layers.NDShape.total_size",
                  "cntk.layers.NDShape.is_unknown", "cntk.layers.NDShape.is_scalar",
                  "cntk.layers.InferredDimension",
                  "cntk.layers.UntestedBranchError", "cntk.layers.Record",
                  "cntk.layers.PoolingType_Max", "cntk.layers.PoolingType_Average",
                  "cntk.layers.SentinelValueForAutoSelectRandomSeed"])
def layers_module_names(C, r):
    L = C.layers
    s = L.NDShape([2, 3])
    r.touch("cntk.layers.NDShape.dimensions", "cntk.layers.NDShape.rank",
            "cntk.layers.NDShape.total_size", "cntk.layers.NDShape.is_unknown",
            "cntk.layers.NDShape.is_scalar")
    try:
        L.UntestedBranchError("here")
        err = "no error"
    except NotImplementedError as e:
        err = ["NotImplementedError", "here" in str(e)]
    rec = L.Record(a=1, b=2)
    return {"shape": [list(s.dimensions()), s.rank(), s.total_size(), s.is_unknown(),
                      s.is_scalar()],
            "inferred": L.InferredDimension, "untested": err, "record": [rec.a, rec["b"]],
            "pooling": [L.PoolingType_Max, L.PoolingType_Average],
            "sentinel": str(L.SentinelValueForAutoSelectRandomSeed)}


@cntk_case(names=["cntk.layers.BlockFunction", "cntk.layers.Variable", "cntk.layers.placeholder",
                  "cntk.layers.glorot_uniform", "cntk.layers.default_override_or",
                  "cntk.layers.get_default_override", "cntk.layers.is_default_override",
                  "cntk.layers.identity"],
           note="a user-written layer as CNTK's library writes one: default_override_or "
                "defaults, get_default_override under default_options, a BlockFunction")
def user_layer(C, r):
    L = C.layers

    def Scale(factor=L.default_override_or(2.0), name=""):
        factor = L.get_default_override(Scale, factor=factor)

        @L.BlockFunction("Scale", name)
        def scale(x):
            return x * factor
        return scale

    x = C.input_variable(3)
    with L.default_options(factor=5.0):
        five = Scale()(x)
    two = Scale(name="s2")(x)
    w = C.parameter((3, 2), init=L.glorot_uniform())
    ph = L.placeholder((3,))
    data = r.randn(2, 3)
    r.touch("cntk.Function.eval", "cntk.Function.name", "cntk.Function.root_function",
            "cntk.Function.op_name")
    return {"five": five.eval({x: data}), "two": two.eval({x: data}),
            "names": [two.name, two.root_function.op_name],
            "is override": [L.is_default_override(L.default_override_or(1)),
                            L.is_default_override(1)],
            "glorot bound": bool(np.abs(w.value).max() <= np.sqrt(6.0 / 5)),
            "placeholder": [isinstance(ph, L.Variable), ph.is_placeholder],
            "identity": L.identity(x).eval({x: data})}
