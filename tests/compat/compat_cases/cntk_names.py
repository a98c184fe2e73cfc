"""The rest of CNTK's public names: initialisers (their bounds and spreads, as numbers CNTK's
own draws show), devices, ``Axis``, options, value containers, the constants modules re-export
under several paths, and the helpers of ``cntk.io``, ``cntk.learners`` and
``cntk.logging``."""

import numpy as np

from compat_harness import cntk_case

_INITS = ["glorot_uniform", "glorot_normal", "xavier", "he_uniform", "he_normal"]


def _stats(C, init, shape):
    v = C.parameter(shape, init=init).value
    return [float(v.std()), float(np.abs(v).max())]


@cntk_case(names=["cntk.initializer." + n for n in _INITS] + ["cntk." + n for n in _INITS] +
           ["cntk.initializer.uniform", "cntk.initializer.normal",
            "cntk.initializer.truncated_normal", "cntk.uniform", "cntk.normal",
            "cntk.truncated_normal"],
           tols={"stats": (0.02, 0)},
           note="random values: compared are the spread (std) and the largest magnitude of "
                "400x300 and 64x32x3x3 parameters (within 2%; a normal's maximum is not "
                "bounded, so the normals' maxima are left out)")
def initializers(C, r):
    I = C.initializer
    stats = []
    for name in _INITS:
        for shape in ((400, 300), (64, 32, 3, 3)):
            s = _stats(C, getattr(I, name)(), shape)
            s2 = _stats(C, getattr(C, name)(scale=2.0), shape)
            stats += [s[0], s2[0]] + ([s[1], s2[1]] if "normal" not in name else [])
    for init, bounded in ((I.uniform(0.5), True), (C.uniform(0.5), True), (I.normal(0.5), False),
                          (C.normal(0.5), False), (I.truncated_normal(0.5), True),
                          (C.truncated_normal(0.25), True)):
        s = _stats(C, init, (400, 300))
        stats += [s[0]] + ([s[1]] if bounded else [])
    return {"stats": np.array(stats, np.float64)}


@cntk_case(names=["cntk.initializer.bilinear", "cntk.bilinear",
                  "cntk.initializer.initializer_with_rank", "cntk.initializer_with_rank",
                  "cntk.initializer.DefaultParamInitScale", "cntk.DefaultParamInitScale",
                  "cntk.initializer.SentinelValueForInferParamInitRank",
                  "cntk.SentinelValueForInferParamInitRank",
                  "cntk.initializer.SentinelValueForAutoSelectRandomSeed",
                  "cntk.SentinelValueForAutoSelectRandomSeed"])
def initializer_names(C, r):
    I = C.initializer
    b = C.parameter((1, 1, 4, 4), init=I.bilinear(4, 4)).value
    b3 = C.parameter((1, 1, 3, 3), init=C.bilinear(3, 3)).value
    ranked = C.parameter((50, 60), init=I.initializer_with_rank(I.he_uniform(), output_rank=1))
    ranked2 = C.parameter((50, 60), init=C.initializer_with_rank(C.he_uniform(), output_rank=1))
    return {"bilinear4": b, "bilinear3": b3,
            "ranked bound": bool(np.abs(ranked.value).max() <= np.sqrt(6.0 / 50)),
            "ranked2 bound": bool(np.abs(ranked2.value).max() <= np.sqrt(6.0 / 50)),
            "constants": [I.DefaultParamInitScale, C.DefaultParamInitScale,
                          I.SentinelValueForInferParamInitRank,
                          C.SentinelValueForInferParamInitRank,
                          str(I.SentinelValueForAutoSelectRandomSeed),
                          str(C.SentinelValueForAutoSelectRandomSeed)]}


@cntk_case(names=["cntk.device.DeviceKind", "cntk.DeviceKind", "cntk.DeviceKind.CPU",
                  "cntk.DeviceKind.GPU", "cntk.device.get_gpu_properties",
                  "cntk.get_gpu_properties", "cntk.device.set_excluded_devices",
                  "cntk.set_excluded_devices"])
def device_names(C, r):
    D = C.device
    try:
        D.get_gpu_properties(D.cpu())
        props = "no error"
    except (ValueError, RuntimeError) as e:
        props = type(e).__name__
    try:
        C.get_gpu_properties(C.cpu())
        props2 = "no error"
    except (ValueError, RuntimeError) as e:
        props2 = type(e).__name__
    D.set_excluded_devices([])
    C.set_excluded_devices([])
    r.touch("cntk.DeviceKind.CPU", "cntk.DeviceKind.GPU")
    return {"kinds": [str(D.DeviceKind.CPU), str(C.DeviceKind.GPU), D.DeviceKind.CPU.value,
                      C.DeviceKind.GPU.value],
            "cpu props": [props, props2], "all": [repr(d) for d in C.all_devices()]}


@cntk_case(names=["cntk.Axis", "cntk.Axis.all_axes", "cntk.Axis.all_static_axes",
                  "cntk.Axis.default_batch_axis", "cntk.Axis.default_dynamic_axis",
                  "cntk.Axis.default_input_variable_dynamic_axes", "cntk.Axis.end_static_axis",
                  "cntk.Axis.is_batch_axis", "cntk.Axis.is_dynamic_axis", "cntk.Axis.is_ordered",
                  "cntk.Axis.is_sequence_axis", "cntk.Axis.is_static_axis", "cntk.Axis.name",
                  "cntk.Axis.new_leading_axis", "cntk.Axis.new_unique_dynamic_axis",
                  "cntk.Axis.operand_sequence_axis", "cntk.Axis.static_axis_index",
                  "cntk.Axis.unknown_dynamic_axes"])
def axes(C, r):
    A = C.Axis
    r.touch(*["cntk.Axis." + m for m in (
        "all_axes", "all_static_axes", "default_batch_axis", "default_dynamic_axis",
        "default_input_variable_dynamic_axes", "end_static_axis", "is_batch_axis",
        "is_dynamic_axis", "is_ordered", "is_sequence_axis", "is_static_axis", "name",
        "new_leading_axis", "new_unique_dynamic_axis", "operand_sequence_axis",
        "static_axis_index", "unknown_dynamic_axes")])
    # (a name no other case or test makes: CNTK numbers a name made before in the process,
    # q, q1, q2, so a shared "q" depended on which tests ran first in a pytest worker)
    items = [A(0), A(-1), A.all_axes(), A.all_static_axes(), A.default_batch_axis(),
             A.default_dynamic_axis(), A.new_unique_dynamic_axis("axes_case_q")]
    return {"axes": [[repr(a), a.name, a.is_static_axis, a.is_ordered, a.is_batch_axis]
                     for a in items],
            "new": [repr(A.new_leading_axis()), repr(A.end_static_axis()),
                    repr(A.operand_sequence_axis())],
            "dynamic": [A(1).is_dynamic_axis(), A.default_dynamic_axis().is_dynamic_axis(),
                        A.default_dynamic_axis().is_sequence_axis],
            "index": [A(2).static_axis_index(), A.all_axes().static_axis_index(False)],
            "lists": [repr(a) for a in A.default_input_variable_dynamic_axes()] +
                     [repr(a) for a in A.unknown_dynamic_axes()], "equal": A(1) == A(1)}


@cntk_case(names=["cntk.default_override_or", "cntk.get_default_override",
                  "cntk.is_default_override", "cntk.get_global_option",
                  "cntk.set_global_option", "cntk.ops.default_override_or",
                  "cntk.ops.get_default_override", "cntk.variables.default_override_or",
                  "cntk.variables.get_default_override", "cntk.default_options",
                  "cntk.default_options_for"])
def options(C, r):
    def layer(pad=C.default_override_or(False)):
        return C.get_default_override(layer, pad=pad)

    with C.default_options(pad=True):
        inside = layer()
    C.set_global_option("align_axis", 1)
    got = C.get_global_option("align_axis", 0)
    C.set_global_option("align_axis", 0)
    return {"inside": inside, "outside": layer(), "explicit": layer(pad=3),
            "override": [C.is_default_override(C.ops.default_override_or(1)),
                         C.is_default_override(C.variables.default_override_or(1)),
                         C.is_default_override(1)],
            "ops": C.ops.get_default_override(None, pad=C.default_override_or(5)),
            "variables": C.variables.get_default_override(None, pad=7),
            "global": [got, C.get_global_option("missing", "default")],
            "default_options_for": callable(C.default_options_for)}


@cntk_case(names=["cntk.NDArrayView", "cntk.NDArrayView.from_dense", "cntk.NDArrayView.from_data",
                  "cntk.NDArrayView.asarray", "cntk.NDArrayView.to_ndarray",
                  "cntk.NDArrayView.shape", "cntk.NDArrayView.dtype",
                  "cntk.NDArrayView.is_sparse", "cntk.Value", "cntk.Value.create",
                  "cntk.Value.one_hot", "cntk.Value.shape", "cntk.Value.data",
                  "cntk.Value.asarray", "cntk.Value.is_sparse", "cntk.asarray",
                  "cntk.asvalue", "cntk.variables.NDArrayView", "cntk.learners.NDArrayView",
                  "cntk.learners.asarray", "cntk.io.Value", "cntk.ops.functions.Value"])
def values(C, r):
    r.touch(*["cntk.NDArrayView." + m for m in ("asarray", "to_ndarray", "shape", "dtype",
                                                 "is_sparse", "from_dense", "from_data")])
    r.touch(*["cntk.Value." + m for m in ("shape", "data", "asarray", "is_sparse", "create",
                                          "one_hot")])
    a = r.randn(2, 3)
    v = C.NDArrayView.from_dense(a)
    w = C.NDArrayView.from_data(a)
    x = C.input_variable(3)
    val = C.Value.create(x, [a[0], a[1]])
    oh = C.Value.one_hot([[1], [2]], 4)
    batch = C.Value(batch=a)
    return {"view": [list(v.shape), v.is_sparse, np.dtype(v.dtype).name], "asarray": v.asarray(),
            "to_ndarray": w.to_ndarray(), "value shape": list(val.shape),
            "asarray of an array": C.asarray(a, np.float64), "one_hot": list(oh.shape),
            "batch": batch.asarray(), "batch data": list(batch.data.shape),
            "sparse": batch.is_sparse, "asvalue": callable(C.asvalue),
            "learners.asarray": callable(C.learners.asarray),
            "same": [C.variables.NDArrayView is C.NDArrayView,
                     C.learners.NDArrayView is C.NDArrayView, C.io.Value is C.Value,
                     C.ops.functions.Value is C.Value]}


@cntk_case(names=["cntk.io.StreamConfiguration", "cntk.io.sequence_to_cntk_text_format",
                  "cntk.io.DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS", "cntk.io.TraceLevel",
                  "cntk.io.TraceLevel.Error", "cntk.io.TraceLevel.Warning",
                  "cntk.io.TraceLevel.Info", "cntk.io.get_trace_level", "cntk.logging.TraceLevel",
                  "cntk.logging.get_trace_level", "cntk.logging.set_trace_level",
                  "cntk.io.Record", "cntk.io.Record.updated_with", "cntk.io.ArrayMixin",
                  "cntk.io.ArrayMixin.asarray"])
def io_names(C, r):
    r.touch("cntk.io.TraceLevel.Error", "cntk.io.TraceLevel.Warning", "cntk.io.TraceLevel.Info",
            "cntk.io.Record.updated_with", "cntk.io.ArrayMixin.asarray")
    sc = C.io.StreamConfiguration("features", 3, stream_alias="f")
    text = C.io.sequence_to_cntk_text_format(7, {"x": np.array([[1.0, 2.0], [3.0, 4.0]]),
                                                 "y": np.array([[0.5]])})
    T = C.io.TraceLevel
    level = C.io.get_trace_level()
    C.logging.set_trace_level(C.logging.TraceLevel.Info)
    after = C.logging.get_trace_level()
    C.logging.set_trace_level(level)
    rec = C.io.Record(a=1).updated_with(b=2)
    p = C.Parameter((2,), init=0.25)
    return {"stream": [sc.m_stream_name, sc.m_dim, sc.m_stream_alias, bool(sc.m_is_sparse)],
            "text": text, "window": C.io.DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS,
            "levels": [T.Error.value, T.Warning.value, T.Info.value],
            "trace": [level, after, after == T.Info, C.logging.TraceLevel.Info == 2],
            "record": [rec.a, rec.b], "array mixin": [isinstance(C.io.ArrayMixin, type),
                                                      hasattr(C.io.ArrayMixin, "asarray"),
                                                      p.asarray().tolist()]}


@cntk_case(names=["cntk.INFINITELY_REPEAT", "cntk.ops.INFINITELY_REPEAT", "cntk.AVG_POOLING",
                  "cntk.MAX_POOLING", "cntk.MAX_UNPOOLING", "cntk.CONSTANT_PAD",
                  "cntk.REFLECT_PAD", "cntk.SYMMETRIC_PAD", "cntk.PoolingType_Average",
                  "cntk.PoolingType_Max", "cntk.TIMES_NO_INFERRED_INPUT_RANK",
                  "cntk.TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK",
                  "cntk.ops.TIMES_NO_INFERRED_INPUT_RANK",
                  "cntk.ops.TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK",
                  "cntk.InferredDimension", "cntk.FreeDimension", "cntk.layers.InferredDimension",
                  "cntk.IGNORE", "cntk.auto_select", "cntk.ModelFormat", "cntk.ModelFormat.CNTKv2",
                  "cntk.ModelFormat.ONNX", "cntk.ops.ModelFormat",
                  "cntk.ops.functions.ModelFormat"])
def constants(C, r):
    r.touch("cntk.ModelFormat.CNTKv2", "cntk.ModelFormat.ONNX")
    return {"repeat": [str(C.INFINITELY_REPEAT), str(C.ops.INFINITELY_REPEAT)],
            "pooling": [C.AVG_POOLING, C.MAX_POOLING, C.MAX_UNPOOLING, C.PoolingType_Average,
                        C.PoolingType_Max],
            "pad": [C.CONSTANT_PAD, C.REFLECT_PAD, C.SYMMETRIC_PAD],
            "times": [C.TIMES_NO_INFERRED_INPUT_RANK,
                      C.TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK,
                      C.ops.TIMES_NO_INFERRED_INPUT_RANK,
                      C.ops.TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK],
            "dims": [C.InferredDimension, C.FreeDimension, C.layers.InferredDimension],
            "ignore": C.IGNORE, "auto_select": str(C.auto_select),
            "formats": [C.ModelFormat.CNTKv2.value, C.ModelFormat.ONNX.value,
                        C.ops.ModelFormat is C.ModelFormat,
                        C.ops.functions.ModelFormat is C.ModelFormat]}


@cntk_case(names=["cntk.Learner", "cntk.learners.Learner", "cntk.learner.Learner",
                  "cntk.learner.NDArrayView", "cntk.learner.asarray"],
           substitutes={"cntk.learner": "cntk.learners"})
def learner_class(C, r):
    z = C.layers.Dense(2)(C.input_variable(3))
    learner = C.adam(z.parameters, C.learning_parameter_schedule(0.01), C.momentum_schedule(0.9))
    return {"is learner": [isinstance(learner, C.Learner), isinstance(learner, C.learners.Learner),
                           isinstance(learner, C.learner.Learner)],
            "rate": learner.learning_rate(), "n": len(learner.parameters),
            "asarray": callable(C.learner.asarray),
            "view": C.learner.NDArrayView.from_dense(np.ones(2, np.float32)).asarray().tolist()}


@cntk_case(names=["cntk.ops.placeholder", "cntk.placeholder", "cntk.layers.placeholder",
                  "cntk.ops.output_variable", "cntk.output_variable", "cntk.as_block",
                  "cntk.as_composite", "cntk.BlockFunction", "cntk.ops.functions.Record",
                  "cntk.variables.Record", "cntk.ops.functions.Variable", "cntk.losses.Variable",
                  "cntk.layers.Variable", "cntk.variables.Variable", "cntk.logging.Variable"])
def graph_object_names(C, r):
    """The same classes and functions under the paths CNTK keeps them."""
    same = [C.placeholder is C.ops.placeholder, C.layers.placeholder is C.ops.placeholder,
            C.output_variable is C.ops.output_variable, C.as_block is C.ops.as_block,
            C.as_composite is C.ops.as_composite, C.BlockFunction is C.ops.BlockFunction,
            C.ops.functions.Record is C.variables.Record,
            C.ops.functions.Variable is C.Variable, C.losses.Variable is C.Variable,
            C.layers.Variable is C.Variable, C.variables.Variable is C.Variable,
            C.logging.Variable is C.Variable]
    x = C.input_variable(2)
    return {"same": same, "placeholder": C.placeholder((2,)).is_placeholder,
            "output": list(C.output_variable((3,), np.float32, []).shape),
            "is variable": isinstance(x, C.Variable)}


@cntk_case(names=["cntk.ops.to_batch", "cntk.ops.unpack_batch", "cntk.to_batch",
                  "cntk.unpack_batch"])
def batch_axis_ops(C, r):
    c = C.constant(np.arange(12, dtype=np.float32).reshape(4, 3))
    b = C.to_batch(c) * 2.0
    x = C.input_variable(3)
    u = C.ops.reduce_sum(C.unpack_batch(x), axis=1)
    data = r.randn(5, 3)
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    return {"to_batch": b.eval(), "to_batch shape": list(b.shape),
            "unpack": u.eval({x: data}), "same": [C.ops.to_batch is C.to_batch,
                                                  C.ops.unpack_batch is C.unpack_batch]}


@cntk_case(names=["cntk.ops.functions.UserFunction",
                  "cntk.ops.functions.UserFunction.infer_outputs",
                  "cntk.ops.functions.UserFunction.inputs", "cntk.user_function"],
           note="the user functions of CNTK's manual: a sigmoid on one input, and a product of "
                "two inputs whose backward fills the variables dict")
def user_functions(C, r):
    UF = C.ops.functions.UserFunction

    class MySigmoid(UF):
        def __init__(self, arg, name="MySigmoid"):
            super(MySigmoid, self).__init__([arg], name=name)

        def forward(self, argument, device=None, outputs_to_retain=None):
            s = 1.0 / (1.0 + np.exp(-argument))
            return s, s

        def backward(self, state, root_gradients):
            return root_gradients * state * (1.0 - state)

        def infer_outputs(self):
            x = self.inputs[0]
            return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]

    class MyTimes(UF):
        def __init__(self, a, b, name="MyTimes"):
            super(MyTimes, self).__init__([a, b], name=name)

        def forward(self, arguments, device=None, outputs_to_retain=None):
            return arguments, arguments[0] * arguments[1]

        def backward(self, state, root_gradients, variables):
            a, b = state
            variables[self.inputs[0]] = root_gradients * b
            variables[self.inputs[1]] = root_gradients * a

        def infer_outputs(self):
            x = self.inputs[0]
            return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]

    x = C.input_variable(3, needs_gradient=True)
    y = C.input_variable(3, needs_gradient=True)
    s = C.user_function(MySigmoid(x))
    t = C.user_function(MyTimes(x, y))
    u = C.user_function(MySigmoid(t * 2.0))
    a, b = r.randn(2, 3), r.randn(2, 3)
    r.touch("cntk.ops.functions.UserFunction.infer_outputs",
            "cntk.ops.functions.UserFunction.inputs", "cntk.Function.eval",
            "cntk.Function.grad", "cntk.Function.shape")
    return {"sigmoid": s.eval({x: a}), "sigmoid grad": s.grad({x: a}, wrt=[x]),
            "times": t.eval({x: a, y: b}),
            "times grads": [g for g in t.grad({x: a, y: b}, wrt=[x, y]).values()],
            "chained": u.eval({x: a, y: b}), "shape": list(s.shape),
            "is UserFunction": [isinstance(MySigmoid(x), UF)]}
