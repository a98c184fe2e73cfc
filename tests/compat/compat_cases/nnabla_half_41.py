"""NNabla 1.39 in a ``cpu:half`` context, mended in nnhalf41: the functions left computing
a step in float32 (fused batch normalisation's ``z``) or rounding an element-wise backward
once where NNabla's ``Half`` rounds each operation."""

import numpy as np

from compat_harness import nnabla_case

_HALF = ["nnabla.context_scope", "nnabla.ext_utils.get_extension_context"]

_G_DTYPE = ("a float32 leaf's gradient written by a function made in cpu:half is float16 on "
            "NNabla 1.39 (the function's backward casts the grad array to Half) and float32 "
            "in Stadyn, whose cast back to a leaf's dtype is autograd's (graph/_precision.py); "
            "the values are the same")


def _array(a):
    return [str(a.dtype), np.asarray(a, np.float32).ravel().tolist()]


def _f32(a):
    return np.asarray(a, np.float32)


def _static_and_dynamic(nn, one):
    """The rows of ``one(dyn, k, res, gdt)`` run static (``k`` "static ") and then dynamic
    ("dyn "), each adding to ``res`` and to ``gdt`` the dtypes of the gradients it read, which
    make that mode's "g dtype" row; auto-forward is off again after each."""
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        gdt = set()
        one(dyn, k, res, gdt)
        res[k + "g dtype"] = sorted(gdt)
        nn.set_auto_forward(False)
    return res


_FBN = ["nnabla.functions.fused_batch_normalization",
        "nnabla.parametric_functions.fused_batch_normalization", "nnabla.clear_parameters"]


@nnabla_case(names=_HALF + _FBN, rtol=0.0, atol=0.0,
             known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE})
def half41__fused_batch_normalization(nn, F, r):
    """NNabla 1.39's ``FusedBatchNormalization<Half>`` normalises in float16 and then runs
    ``Add2`` and ``ReLU`` of its own type on the output (fused_batch_normalization.cpp,
    ``forward_impl``): ``z`` is read as float16 and the sum rounded (y 1.044921875, float16),
    and its backward hands ``z`` the float16 gradient.  Stadyn added a float32 ``z`` to the
    float16 normalised values in float32 (y 1.0453257561, float32; ``z.g`` the unrounded
    ``dy``).  Static and dynamic, with and without ``z``, training and inference, and
    ``PF.fused_batch_normalization``: outputs (dtype, values), the gradients of float32
    leaves for a seeded ``dy``."""
    EU = r.module("nnabla.ext_utils")
    PF = r.module("nnabla.parametric_functions")
    r.touch(*(_HALF + _FBN))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4141)

    def one(dyn, k, res, gdt):
        for i, (with_z, batch_stat) in enumerate(((True, True), (False, True), (True, False))):
            x = nn.Variable.from_numpy_array((rs.randn(4, 3, 5, 2) * 2 + 0.5)
                                             .astype(np.float32), need_grad=True)
            b = nn.Variable.from_numpy_array(rs.randn(1, 3, 1, 1).astype(np.float32),
                                             need_grad=True)
            g = nn.Variable.from_numpy_array((rs.rand(1, 3, 1, 1) + 0.5).astype(np.float32),
                                             need_grad=True)
            m = nn.Variable.from_numpy_array((rs.randn(1, 3, 1, 1) * 0.1).astype(np.float32))
            v = nn.Variable.from_numpy_array((rs.rand(1, 3, 1, 1) + 0.5).astype(np.float32))
            z = nn.Variable.from_numpy_array(rs.randn(4, 3, 5, 2).astype(np.float32),
                                             need_grad=True) if with_z else None
            with nn.context_scope(half):
                y = F.fused_batch_normalization(x, b, g, m, v, z, batch_stat=batch_stat)
            y.forward()
            leaves = [("x", x), ("b", b), ("g", g)] + ([("z", z)] if with_z else [])
            for _, leaf in leaves:
                leaf.grad.zero()
            y.backward(rs.randn(*y.shape).astype(np.float32))
            key = "%s%d z=%r batch_stat=%r" % (k, i, with_z, batch_stat)
            res[key + " y"] = _array(y.d)
            for name, leaf in leaves:
                res["%s %s.g" % (key, name)] = _f32(leaf.g)
                gdt.add(str(leaf.g.dtype))
            res[key + " running"] = [_f32(m.d), _f32(v.d)]
        nn.clear_parameters()
        x = nn.Variable.from_numpy_array(rs.randn(6, 4, 3).astype(np.float32), need_grad=True)
        z = nn.Variable.from_numpy_array(rs.randn(6, 4, 3).astype(np.float32), need_grad=True)
        with nn.context_scope(half):
            y = PF.fused_batch_normalization(x, z, name="fbn")
        y.forward()
        x.grad.zero()
        z.grad.zero()
        y.backward(rs.randn(6, 4, 3).astype(np.float32))
        res[k + "PF y"] = _array(y.d)
        res[k + "PF x.g"] = _f32(x.g)
        res[k + "PF z.g"] = _f32(z.g)
        gdt.update([str(x.g.dtype), str(z.g.dtype)])
        nn.clear_parameters()
    return _static_and_dynamic(nn, one)


_UNARY = ["tanh", "sigmoid", "elu", "softplus", "pow_scalar", "r_div_scalar", "r_pow_scalar",
          "tan", "asinh", "softsign", "tanh_shrink", "log_sigmoid", "erf"]
_BINARY = ["div2", "pow2"]
_ELEMENTWISE = (["nnabla.functions." + n for n in _UNARY + _BINARY]
                + ["nnabla.Variable.__truediv__", "nnabla.Variable.__pow__"])


@nnabla_case(names=_HALF + _ELEMENTWISE, rtol=0.0, atol=0.0,
             known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE})
def half41__elementwise_in_half(nn, F, r):
    """NNabla 1.39's unary functions made in ``cpu:half`` evaluate their expressions in
    ``Half``, every operator rounding (base_transform_unary.hpp, half.cpp): ``Tanh``'s
    gradient ``dy * ((T)1 - y * y)`` rounds three times, ``Sigmoid``'s forward ``(T)1 / ((T)1
    + exp(-x))`` three times, ``PowScalar``'s gradient ``dy * (T)a0 * pow(x, (T)a0 - (T)1)``
    four; its binary ones (``Div2``, ``Pow2``) evaluate in float and round once
    (base_transform_binary.hpp, ``force_float``).  Stadyn's were torch's kernels and
    autograd formulas in float16: tanh's gradient 193 of 400 values a unit off (up to 0.8 %),
    sigmoid's output 128 and gradient 196, ``Div2``'s divisor gradient 124 (each step of
    torch's ``-g * (a / b) / b`` rounded).  Static and dynamic, a float32 leaf: outputs
    (dtype, values) and gradients for a seeded ``dy``; a Variable read by two functions
    (its gradients added in float16); ``erf`` on ``|x| < 2.5`` (below, NNabla's conversion
    of a float below float16's smallest subnormal gives 0)."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + _ELEMENTWISE))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4142)
    n = 300
    pos = (rs.rand(n) * 3 + 0.05).astype(np.float32)
    sym = (rs.randn(n) * 1.5).astype(np.float32)
    sym2 = (rs.randn(n) * 1.5).astype(np.float32)
    dy = rs.randn(n).astype(np.float32)
    unary = [("tanh", F.tanh, sym), ("sigmoid", F.sigmoid, sym),
             ("elu", lambda v: F.elu(v, alpha=1.3), sym),
             ("softplus", lambda v: F.softplus(v, beta=1.7), sym),
             ("pow_scalar", lambda v: F.pow_scalar(v, 1.7), pos),
             ("x ** 2.5", lambda v: v ** 2.5, pos),
             ("r_div_scalar", lambda v: F.r_div_scalar(v, 0.7), pos),
             ("r_pow_scalar", lambda v: F.r_pow_scalar(v, 1.3), sym),
             ("tan", F.tan, sym * 0.3), ("asinh", F.asinh, sym), ("softsign", F.softsign, sym),
             ("tanh_shrink", F.tanh_shrink, sym), ("log_sigmoid", F.log_sigmoid, sym),
             ("erf", F.erf, np.clip(sym, -2.4, 2.4))]
    binary = [("div2", F.div2, sym, pos), ("a / b", lambda a, b: a / b, sym2, pos),
              ("pow2", F.pow2, pos, sym2), ("a ** b", lambda a, b: a ** b, pos, sym)]

    def one(dyn, k, res, gdt):
        for name, fn, a in unary:
            x = nn.Variable.from_numpy_array(a, need_grad=True)
            with nn.context_scope(half):
                y = fn(x)
            y.forward()
            x.grad.zero()
            y.backward(dy)
            res[k + name] = _array(y.d)
            res[k + name + " x.g"] = _f32(x.g)
            gdt.add(str(x.g.dtype))
        for name, fn, a, b in binary:
            x0 = nn.Variable.from_numpy_array(a, need_grad=True)
            x1 = nn.Variable.from_numpy_array(b, need_grad=True)
            with nn.context_scope(half):
                y = fn(x0, x1)
            y.forward()
            x0.grad.zero()
            x1.grad.zero()
            y.backward(dy)
            res[k + name] = _array(y.d)
            res[k + name + " x0.g"] = _f32(x0.g)
            res[k + name + " x1.g"] = _f32(x1.g)
            gdt.update([str(x0.g.dtype), str(x1.g.dtype)])
        x = nn.Variable.from_numpy_array(sym, need_grad=True)
        with nn.context_scope(half):
            h = F.mul_scalar(x, 1.0)
            y = F.tanh(h) * F.sigmoid(h)
        y.forward()
        x.grad.zero()
        y.backward(dy)
        res[k + "tanh(h) * sigmoid(h)"] = _array(y.d)
        res[k + "tanh(h) * sigmoid(h) x.g"] = _f32(x.g)
    return _static_and_dynamic(nn, one)


_NORMS = ["nnabla.functions.layer_normalization", "nnabla.functions.instance_normalization",
          "nnabla.functions.group_normalization"]

@nnabla_case(names=_HALF + _NORMS, rtol=0.0, atol=0.0,
             known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE})
def half41__layer_instance_group_normalization(nn, F, r):
    """NNabla 1.39's ``LayerNormalization``, ``InstanceNormalization`` and
    ``GroupNormalization`` in ``cpu:half`` normalise with its ``BatchNormalization<Half>``
    over the kept axes (``TensorNormalization``: every step rounded to float16, statistics
    as float16 folds), then scale and shift with ``Mul2``/``Add2`` in float16.  Stadyn
    computed them in float32 (float32 outputs up to 10 % off NNabla's where the mean is large
    against the spread, ``x.g`` 12 %).  The parameters' gradients are float16 folds over the
    batch: of ``Mul2``/``Add2`` (``half41__broadcast_gradients``), and of instance
    normalisation's ``Broadcast`` of ``beta`` and ``gamma`` (instance_normalization.cpp:
    132-135, broadcast.cpp).  Static and dynamic,
    ``output_stat`` too: outputs (dtype, values), the statistics, the gradients of float32
    leaves for a seeded ``dy``."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + _NORMS))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4143)

    def one(dyn, k, res, gdt):
        specs = [("layer", (1, 6, 5), lambda x, b, g: F.layer_normalization(x, b, g)),
                 ("instance", (1, 6, 1), lambda x, b, g: F.instance_normalization(x, b, g)),
                 ("group", (1, 6, 1), lambda x, b, g: F.group_normalization(x, b, g, 3))]
        for name, ps, fn in specs:
            x = nn.Variable.from_numpy_array((rs.randn(4, 6, 5) * 2 + 3).astype(np.float32),
                                             need_grad=True)
            b = nn.Variable.from_numpy_array(rs.randn(*ps).astype(np.float32), need_grad=True)
            g = nn.Variable.from_numpy_array((rs.rand(*ps) + 0.5).astype(np.float32),
                                             need_grad=True)
            with nn.context_scope(half):
                y = fn(x, b, g)
            y.forward()
            for leaf in (x, b, g):
                leaf.grad.zero()
            y.backward(rs.randn(*y.shape).astype(np.float32))
            res[k + name + " y"] = _array(y.d)
            res[k + name + " x.g"] = _f32(x.g)
            res[k + name + " beta.g"] = _f32(b.g)
            res[k + name + " gamma.g"] = _f32(g.g)
            gdt.update(str(v.g.dtype) for v in (x, b, g))
        x = nn.Variable.from_numpy_array((rs.randn(3, 4, 5) + 2).astype(np.float32))
        with nn.context_scope(half):
            y, m, v = F.layer_normalization(x, None, None, batch_axis=[0, 1],
                                            output_stat=True)
        F.sink(y, m, v).forward() if not dyn else None
        res[k + "output_stat"] = [_array(y.d), _array(m.d), _array(v.d)]
    return _static_and_dynamic(nn, one)


_LOSSES = ["nnabla.functions.binary_cross_entropy", "nnabla.functions.huber_loss",
           "nnabla.functions.mean"]


@nnabla_case(names=_HALF + _LOSSES, rtol=0.0, atol=0.0,
             known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE})
def half41__binary_cross_entropy_and_huber_loss(nn, F, r):
    """NNabla 1.39's ``BinaryCrossEntropy`` and ``HuberLoss`` run in ``Half`` in ``cpu:half``
    (function_types.yaml): the former's forward and backward in ``Half`` steps, each rounded,
    logs' arguments floored at float16's smallest normal number (binary_cross_entropy.cpp);
    the latter a binary transform in float rounded once, ``delta`` a float
    (huber_loss.hpp).  Stadyn computed both in float32 (float32 outputs, every value off
    NNabla's float16 ones, gradients up to 0.9 %).  Static and dynamic: outputs (dtype,
    values), both inputs' gradients for a seeded ``dy``, and ``F.mean`` of each."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + _LOSSES))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4144)
    p0 = (rs.rand(6, 7) * 0.98 + 0.01).astype(np.float32)
    p0[0, :3] = [0.0, 1.0, 2e-5]
    t0 = rs.rand(6, 7).astype(np.float32)
    a0 = (rs.randn(6, 7) * 2).astype(np.float32)
    b0 = (rs.randn(6, 7) * 2).astype(np.float32)
    calls = [("bce", lambda a, b: F.binary_cross_entropy(a, b), p0, t0),
             ("huber", lambda a, b: F.huber_loss(a, b), a0, b0),
             ("huber delta=1.3", lambda a, b: F.huber_loss(a, b, delta=1.3), a0, b0),
             ("mean bce", lambda a, b: F.mean(F.binary_cross_entropy(a, b)), p0, t0),
             ("mean huber", lambda a, b: F.mean(F.huber_loss(a, b, delta=0.7)), a0, b0)]

    def one(dyn, k, res, gdt):
        for name, fn, a, b in calls:
            x0 = nn.Variable.from_numpy_array(a, need_grad=True)
            x1 = nn.Variable.from_numpy_array(b, need_grad=True)
            with nn.context_scope(half):
                y = fn(x0, x1)
            y.forward()
            x0.grad.zero()
            x1.grad.zero()
            y.backward(rs.randn(*y.shape).astype(np.float32) if y.shape else 1.7)
            res[k + name] = _array(y.d)
            res[k + name + " x0.g"] = _f32(x0.g)
            res[k + name + " x1.g"] = _f32(x1.g)
            gdt.update([str(x0.g.dtype), str(x1.g.dtype)])
    return _static_and_dynamic(nn, one)


_ACTS = ["nnabla.functions.swish", "nnabla.functions.gelu", "nnabla.functions.selu",
         "nnabla.functions.hard_sigmoid", "nnabla.functions.mish"]


@nnabla_case(names=_HALF + _ACTS, rtol=0.0, atol=0.0,
             known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE})
def half41__activations_in_half(nn, F, r):
    """NNabla 1.39's ``Swish``, ``GELU``, ``SELU``, ``HardSigmoid`` and ``Mish`` made in
    ``cpu:half`` evaluate their expressions in ``Half`` steps (swish.hpp, gelu.hpp, selu.cpp,
    hard_sigmoid.hpp, mish.hpp; Mish's gradient NaN above x = 3.7, where ``exp(3 x)``
    overflows): ``Swish`` ``x / ((T)1 + exp(-x))``, ``SELU`` with ``(T)scale_`` and
    ``coef = alpha_ * scale_`` made a ``Half``, ``HardSigmoid`` with ``(T)0.2`` =
    0.199951171875, ``GELU``'s gradient partly in ``double`` (its literals).  Stadyn used
    torch's float16 kernels: swish's output off in 145 of 400 values and its gradient up to
    25 %, selu's output 135, gelu's output 178 (NNabla's ``x / 2 * (1 + tanh(...))`` rounds
    each step), hard_sigmoid's 51 (``0.2`` in float), mish's 156 (its gradient finite where
    NNabla's is NaN).  Static and dynamic: outputs (dtype,
    values) and gradients of a float32 leaf for a seeded ``dy``."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + _ACTS))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4145)
    x0 = (rs.randn(300) * 2).astype(np.float32)
    x0[:4] = [2.5, -2.5, 0.0, 2.4990234375]
    dy = rs.randn(300).astype(np.float32)
    fns = [("swish", F.swish), ("gelu", F.gelu), ("selu", F.selu),
           ("selu scale=1.3 alpha=0.7", lambda v: F.selu(v, scale=1.3, alpha=0.7)),
           ("hard_sigmoid", F.hard_sigmoid), ("mish", F.mish)]

    def one(dyn, k, res, gdt):
        for name, fn in fns:
            x = nn.Variable.from_numpy_array(x0, need_grad=True)
            with nn.context_scope(half):
                y = fn(x)
            y.forward()
            x.grad.zero()
            y.backward(dy)
            res[k + name] = _array(y.d)
            res[k + name + " x.g"] = _f32(x.g)
            gdt.add(str(x.g.dtype))
    return _static_and_dynamic(nn, one)


@nnabla_case(names=_HALF + ["nnabla.functions.categorical_cross_entropy"], rtol=0.0, atol=0.0,
             known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE})
def half41__categorical_cross_entropy(nn, F, r):
    """NNabla 1.39's ``CategoricalCrossEntropy<Half, int>`` in ``cpu:half``: ``-log(max(p,
    min))`` of the float16 probability (a float16 output) and ``-dy / max(p, min)``, the
    class ids read as integers (categorical_cross_entropy.cpp).  Stadyn computed in float32
    (float32 outputs, every value off NNabla's float16 ones).  Float class ids above 2048
    (not float16 numbers: 2049 would round to 2048) and a negative one (ignored).  Static and
    dynamic: outputs (dtype, values) and the probabilities' gradients for a seeded ``dy``."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + ["nnabla.functions.categorical_cross_entropy"]))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4146)
    small = rs.dirichlet(np.ones(5), 6).astype(np.float32)
    small[0, 2] = 1e-6
    small_t = np.array([[2], [0], [4], [-1], [1], [3]], np.float32)
    big = (rs.rand(2, 3000) * 1e-3).astype(np.float32)
    big_t = np.array([[2049], [2999]], np.float32)

    def one(dyn, k, res, gdt):
        for name, p0, t0 in (("small", small, small_t), ("3000 classes", big, big_t)):
            p = nn.Variable.from_numpy_array(p0, need_grad=True)
            t = nn.Variable.from_numpy_array(t0)
            with nn.context_scope(half):
                y = F.categorical_cross_entropy(p, t)
            y.forward()
            p.grad.zero()
            y.backward(rs.randn(*y.shape).astype(np.float32))
            res[k + name] = _array(y.d)
            res[k + name + " p.g"] = _f32(p.g)
            gdt.add(str(p.g.dtype))
    return _static_and_dynamic(nn, one)


_BC = ["nnabla.Variable.__add__", "nnabla.Variable.__sub__", "nnabla.Variable.__mul__",
       "nnabla.Variable.__truediv__", "nnabla.functions.add2", "nnabla.functions.mul2",
       "nnabla.functions.div2", "nnabla.functions.pow2"]


@nnabla_case(names=_HALF + _BC, rtol=0.0, atol=0.0,
             known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE})
def half41__broadcast_gradients(nn, F, r):
    """NNabla 1.39's binary functions in ``cpu:half`` give a broadcast input's gradient as
    ``g0[idx0] = Half(float(g0[idx0]) + grad)`` over the output in order
    (base_transform_binary.hpp, transform_binary_grad0/1): a fold from 0 over the broadcast
    positions, each float gradient added and the sum rounded to float16.  Stadyn's float16
    autograd summed them in float and rounded once: ``(x + b)``'s ``b.g`` over 64 rows a
    unit off in 3 of 5 values (12.8125 for NNabla's 12.8046875), ``x * w``, ``x - b``,
    ``x / w`` alike.  Static and dynamic: a (64, 5) by (1, 5) and a (4, 3, 5, 5) by
    (1, 3, 1, 1) input, the outputs and both inputs' gradients for a seeded ``dy``."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + _BC))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4147)
    shapes = [((64, 5), (1, 5)), ((4, 3, 5, 5), (1, 3, 1, 1)), ((6, 5), (6, 1))]
    fns = [("x + b", lambda a, b: a + b), ("x - b", lambda a, b: a - b),
           ("x * b", lambda a, b: a * b), ("x / b", lambda a, b: a / b),
           ("b * x", lambda a, b: b * a), ("F.add2", F.add2), ("F.mul2", F.mul2),
           ("F.div2", F.div2), ("F.pow2", F.pow2)]
    data = [((rs.rand(*sa) * 2 + 0.2).astype(np.float32),
             (rs.rand(*sb) * 2 + 0.3).astype(np.float32),
             (rs.randn(*sa) * 3).astype(np.float32)) for sa, sb in shapes]

    def one(dyn, k, res, gdt):
        for i, (a0, b0, dy) in enumerate(data):
            for name, fn in fns:
                a = nn.Variable.from_numpy_array(a0, need_grad=True)
                b = nn.Variable.from_numpy_array(b0, need_grad=True)
                with nn.context_scope(half):
                    y = fn(a, b)
                y.forward()
                a.grad.zero()
                b.grad.zero()
                y.backward(dy)
                key = "%s%d %s" % (k, i, name)
                res[key] = _array(y.d)
                res[key + " x.g"] = _f32(a.g)
                res[key + " b.g"] = _f32(b.g)
                gdt.update([str(a.g.dtype), str(b.g.dtype)])
    return _static_and_dynamic(nn, one)
