"""``nnabla.functions``, the functions most used in nnabla-examples after the first ones:
trigonometry, comparisons and logic, binarisers, clipping, normalisations, indexing, ordering,
scans, resampling, depthwise convolution, ``assign``/``sink``, and the random sources (whose
streams differ: their cases compare ranges, moments and seeding, not values).
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_functions import fn_case, positive, labels

S23 = [(2, 3)]
S234 = [(2, 3, 4)]


def unit(r, s):
    return r.rand(*s, low=-0.9, high=0.9)


def above_one(r, s):
    return r.rand(*s, low=1.1, high=3.0)


def halves(r, s):
    return (r.randint(-3, 4, s) * 0.5).astype(np.float32)   # ties and zeros on purpose


def distinct(r, s):
    n = int(np.prod(s))
    return (r.rng.permutation(n).astype(np.float32) * 0.25 - n / 8.0 + 0.1).reshape(s)


# -- trigonometry -----------------------------------------------------------------------------
for _name in ("sin", "cos", "atan", "sinh", "cosh", "asinh"):
    fn_case(_name, (lambda n: lambda F, x: getattr(F, n)(x))(_name), S23)
fn_case("tan", lambda F, x: F.tan(x), S23, data=[unit])
fn_case("asin", lambda F, x: F.asin(x), S23, data=[unit])
fn_case("acos", lambda F, x: F.acos(x), S23, data=[unit])
fn_case("atanh", lambda F, x: F.atanh(x), S23, data=[unit])
fn_case("acosh", lambda F, x: F.acosh(x), S23, data=[above_one])
fn_case("atan2", lambda F, y, x: F.atan2(y, x), [(2, 3), (2, 3)])

# -- comparisons and logic --------------------------------------------------------------------
for _name in ("equal", "not_equal", "less_equal", "logical_and", "logical_or", "logical_xor"):
    fn_case(_name, (lambda n: lambda F, a, b: getattr(F, n)(a, b))(_name), [(3, 4), (3, 4)],
            data=[halves, halves], grads=False)
fn_case("logical_not", lambda F, x: F.logical_not(x), [(3, 4)], data=[halves], grads=False)
for _name in ("greater_scalar", "greater_equal_scalar", "less_scalar", "less_equal_scalar",
              "equal_scalar", "not_equal_scalar"):
    fn_case(_name, (lambda n: lambda F, x: getattr(F, n)(x, 0.5))(_name), [(3, 4)],
            data=[halves], grads=False)
fn_case("greater_scalar__default", lambda F, x: F.greater_scalar(x), [(3, 4)], data=[halves],
        grads=False, names=["nnabla.functions.greater_scalar"])

# -- binarisers, slopes, clipping -------------------------------------------------------------
fn_case("binary_tanh", lambda F, x: F.binary_tanh(x), [(3, 4)], data=[halves],
        note="straight-through: the gradient passes where |x| <= 1")
fn_case("binary_sigmoid", lambda F, x: F.binary_sigmoid(x), [(3, 4)], data=[halves])
fn_case("prelu", lambda F, x, w: F.prelu(x, w), [(2, 3, 4), (3,)])
fn_case("prelu__shared", lambda F, x, w: F.prelu(x, w), [(2, 3, 4), (1,)],
        names=["nnabla.functions.prelu"])
fn_case("clip_by_value", lambda F, x, lo, hi: F.clip_by_value(x, lo, hi),
        [(3, 4), (1, 1), (1, 1)], data=[halves, lambda r, s: np.full(s, -0.5, np.float32),
                                        lambda r, s: np.full(s, 1.0, np.float32)],
        note="values on the bounds on purpose: the gradient passes strictly inside")

# -- normalisations and norm ------------------------------------------------------------------
fn_case("layer_normalization", lambda F, x, b, g: F.layer_normalization(x, b, g),
        [(2, 3, 4), (1, 3, 4), (1, 3, 4)], tols={"grad0": (1e-4, 1e-5)})
fn_case("instance_normalization", lambda F, x, b, g: F.instance_normalization(x, b, g),
        [(2, 3, 4, 5), (1, 3, 1, 1), (1, 3, 1, 1)], tols={"grad0": (1e-4, 1e-5)})
fn_case("group_normalization", lambda F, x, b, g: F.group_normalization(x, b, g, 2),
        [(2, 4, 3, 2), (1, 4, 1, 1), (1, 4, 1, 1)], tols={"grad0": (1e-4, 1e-5)})
fn_case("norm", lambda F, x: F.norm(x), S234)
fn_case("norm__p_axis", lambda F, x: F.norm(x, p=1, axis=1, keepdims=True), S234,
        names=["nnabla.functions.norm"])

# -- indexing, ordering, scans ----------------------------------------------------------------
fn_case("gather", lambda F, x, i: F.gather(x, i, axis=1), [(2, 3, 4), (2, 5)],
        data=[None, labels(3)], grads=[0])
fn_case("gather__batch_dims", lambda F, x, i: F.gather(x, i, axis=1, batch_dims=1),
        [(2, 3, 4), (2, 5)], data=[None, labels(3)], grads=[0],
        names=["nnabla.functions.gather"])
fn_case("gather_nd", lambda F, x, i: F.gather_nd(x, i), [(3, 4, 2), (2, 5)],
        data=[None, labels(3)], grads=[0])
# NNabla 1.39's sort backward gathers the output gradient by the sort index instead of
# scattering it (x = [3, 1, 2], dy = [10, 20, 30] gives [20, 30, 10]; the derivative is
# [30, 10, 20]): compat.nnabla's F.sort does the same (ops sort rule="nnabla")
fn_case("sort", lambda F, x: F.sort(x, axis=1), [(3, 6)], data=[distinct])
fn_case("sort__reverse", lambda F, x: F.sort(x, axis=0, reverse=True), [(3, 6)],
        data=[distinct], names=["nnabla.functions.sort"])
fn_case("top_k_data", lambda F, x: F.top_k_data(x, 2), [(3, 6)], data=[distinct])
fn_case("top_k_data__abs_no_reduce", lambda F, x: F.top_k_data(x, 3, abs=True, reduce=False),
        [(3, 6)], data=[distinct], names=["nnabla.functions.top_k_data"])
fn_case("cumsum", lambda F, x: F.cumsum(x, axis=1), S234)
fn_case("cumsum__exclusive_reverse", lambda F, x: F.cumsum(x, axis=2, exclusive=True,
                                                           reverse=True), S234,
        names=["nnabla.functions.cumsum"])
fn_case("cumprod", lambda F, x: F.cumprod(x, axis=1), S234, data=[positive])
fn_case("cumprod__exclusive", lambda F, x: F.cumprod(x, axis=0, exclusive=True), S234,
        data=[positive], names=["nnabla.functions.cumprod"])

# -- resampling, repetition, depthwise convolution --------------------------------------------
fn_case("interpolate", lambda F, x: F.interpolate(x, scale=(2, 2)), [(1, 2, 3, 4)])
fn_case("interpolate__output_size", lambda F, x: F.interpolate(x, output_size=(5, 7)),
        [(1, 2, 3, 4)], names=["nnabla.functions.interpolate"])
fn_case("interpolate__align_corners", lambda F, x: F.interpolate(
    x, output_size=(5, 3), align_corners=True), [(1, 2, 3, 4)],
    names=["nnabla.functions.interpolate"])
fn_case("interpolate__half_pixel", lambda F, x: F.interpolate(
    x, scale=(1.5, 2.5), half_pixel=True), [(1, 2, 4, 3)], names=["nnabla.functions.interpolate"])
fn_case("interpolate__nearest", lambda F, x: F.interpolate(x, scale=(2, 1.5), mode="nearest"),
        [(1, 2, 3, 4)], names=["nnabla.functions.interpolate"])
fn_case("interpolate__nearest_half_pixel", lambda F, x: F.interpolate(
    x, output_size=(3, 7), mode="nearest", half_pixel_for_nn=True), [(1, 2, 5, 3)],
    names=["nnabla.functions.interpolate"])
fn_case("unpooling", lambda F, x: F.unpooling(x, (2, 3)), [(2, 3, 2, 2)])
fn_case("tile", lambda F, x: F.tile(x, (2, 1, 2)), S23)
fn_case("depthwise_convolution", lambda F, x, w, b: F.depthwise_convolution(x, w, b),
        [(2, 3, 5, 5), (3, 3, 3), (3,)])
fn_case("depthwise_convolution__multiplier", lambda F, x, w: F.depthwise_convolution(
    x, w, pad=(1, 1), stride=(2, 1), multiplier=2), [(2, 2, 5, 4), (4, 3, 3)],
    names=["nnabla.functions.depthwise_convolution"])


@nnabla_case(names=["nnabla.functions.arange"])
def arange(nn, F, r):
    with nn.auto_forward():
        a, b, c = F.arange(0, 5), F.arange(1, 2, 0.25), F.arange(3, -1, -1.5)
    return {"a": a.d.copy(), "b": b.d.copy(), "c": c.d.copy()}


@nnabla_case(names=["nnabla.functions.assign"])
def assign(nn, F, r):
    """assign writes src into dst and passes no gradient to src."""
    dst = nn.Variable.from_numpy_array(r.randn(2, 3))
    src = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    y = F.assign(dst, src)
    y.forward()
    src.g = 0
    y.backward(r.weights_like(y.d))
    return {"out": y.d.copy(), "dst": dst.d.copy(), "grad": src.g.copy()}


@nnabla_case(names=["nnabla.functions.sink"])
def sink(nn, F, r):
    """sink forwards both branches; its backward sends ones into each."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    a, b = F.tanh(x) * 2.0, F.sin(x)
    s = F.sink(a, b)
    s.forward()
    x.g = 0
    s.backward()
    return {"shape": list(s.shape), "out": np.float32(s.d), "a": a.d.copy(), "b": b.d.copy(),
            "grad": x.g.copy()}


def _moments(v):
    return {"shape": list(v.shape), "dtype": str(v.d.dtype), "min": np.float32(v.d.min()),
            "max": np.float32(v.d.max()), "mean": np.float32(v.d.mean()),
            "std": np.float32(v.d.std())}


_RANDOM_NOTE = ("the streams differ: compared are the shape, dtype, range and moments of 90000 "
                "draws after nn.seed(7) (within 0.02), and that a seeded function draws the "
                "same values in two dynamic calls and new ones on a static graph's second "
                "forward")
_MOMENTS = {"min": (0, 0.02), "max": (0, 0.02), "mean": (0, 0.02), "std": (0, 0.02)}


def _seeding(nn, f):
    with nn.auto_forward():
        same = bool(np.array_equal(f().d, f().d))
    y = f()
    y.forward()
    first = y.d.copy()
    y.forward()
    return {"same_seed_same_values": same, "next_forward_new_values":
            not bool(np.array_equal(first, y.d))}


@nnabla_case(names=["nnabla.functions.rand", "nnabla.seed"], tols=_MOMENTS, note=_RANDOM_NOTE)
def rand(nn, F, r):
    nn.seed(7)
    with nn.auto_forward():
        res = _moments(F.rand(-1.0, 3.0, shape=(300, 300)))
    res.update(_seeding(nn, lambda: F.rand(shape=(50,), seed=4)))
    return res


@nnabla_case(names=["nnabla.functions.randn"], tols=_MOMENTS, note=_RANDOM_NOTE)
def randn(nn, F, r):
    nn.seed(7)
    with nn.auto_forward():
        res = _moments(F.randn(1.5, 0.5, shape=(300, 300)))
    res["min"], res["max"] = np.float32(res["min"] < 0), np.float32(res["max"] > 3)  # tails
    res.update(_seeding(nn, lambda: F.randn(shape=(50,), seed=4)))
    return res


@nnabla_case(names=["nnabla.functions.randint"], tols=_MOMENTS, note=_RANDOM_NOTE)
def randint(nn, F, r):
    nn.seed(7)
    with nn.auto_forward():
        res = _moments(F.randint(-2, 3, shape=(300, 300)))
    res.update(_seeding(nn, lambda: F.randint(0, 100, shape=(50,), seed=4)))
    return res


@nnabla_case(names=["nnabla.functions.spectral_norm"], rtol=1e-4,
             note="two forwards: u is updated in place by each; the gradient holds u, v fixed")
def spectral_norm(nn, F, r):
    w = nn.Variable.from_numpy_array(r.randn(4, 3, 2), need_grad=True)
    u = nn.Variable.from_numpy_array(r.randn(3))
    y = F.spectral_norm(w, u, dim=1, itr=2)
    y.forward()
    first, u1 = y.d.copy(), u.d.copy()
    y.forward()
    w.g = 0
    y.backward(r.weights_like(y.d))
    t = F.spectral_norm(w, u, dim=1, test=True)
    t.forward()
    return {"first": first, "u1": u1, "second": y.d.copy(), "u2": u.d.copy(), "grad": w.g.copy(),
            "test": t.d.copy(), "u_after_test": u.d.copy()}


# -- rounding (straight-through), bounded and smooth activations, NaN and Inf ---------------
def quarters(r, s):
    return (r.randint(-10, 11, s) * 0.25).astype(np.float32)   # integers and halves


def specials(r, s):
    x = r.randn(*s)
    x.flat[::3] = np.nan
    x.flat[1::4] = np.inf
    x.flat[2::5] = -np.inf
    return x


fn_case("sign", lambda F, x: F.sign(x), [(3, 4)], data=[halves])
fn_case("sign__alpha", lambda F, x: F.sign(x, alpha=-0.5), [(3, 4)], data=[halves],
        names=["nnabla.functions.sign"])
for _name in ("floor", "ceil", "round"):
    fn_case(_name, (lambda n: lambda F, x: getattr(F, n)(x))(_name), [(4, 5)], data=[quarters])
fn_case("hard_sigmoid", lambda F, x: F.hard_sigmoid(x), [(4, 5)], data=[
    lambda r, s: quarters(r, s) * 1.5], note="on and around the corners at +-2.5")
fn_case("hard_tanh", lambda F, x: F.hard_tanh(x), [(4, 5)], data=[quarters],
        note="on and around the corners at +-1")
for _name in ("softsign", "log_sigmoid", "mish", "tanh_shrink", "erf"):
    fn_case(_name, (lambda n: lambda F, x: getattr(F, n)(x))(_name), S23)
fn_case("sinc", lambda F, x: F.sinc(x), [(4, 5)], data=[quarters], tols={"grad0": (1e-4, 1e-5)})
fn_case("crelu", lambda F, x: F.crelu(x), S234)
fn_case("celu", lambda F, x: F.celu(x, alpha=0.7, axis=2), S234)
fn_case("isnan", lambda F, x: F.isnan(x), [(3, 5)], data=[specials], grads=False)
fn_case("isinf", lambda F, x: F.isinf(x), [(3, 5)], data=[specials], grads=False)
fn_case("reset_nan", lambda F, x: F.reset_nan(x, val=-2.0), [(3, 5)], data=[specials],
        grads=False)
fn_case("reset_inf", lambda F, x: F.reset_inf(x, val=3.0), [(3, 5)], data=[specials],
        grads=False)
