"""``nnabla.functions`` added in 2026: array functions (``flip``, ``trilu``, ``eye_like``,
``linspace``, ``einsum``, ``shape``, ``mod2``, ``bit_shift``, ``sum_pooling``), the gradient
shapers (``clip_grad_by_value``, ``clip_grad_by_norm``, ``top_k_grad``) and the compositions
(``broadcast_to``, ``reduce_mean``/``reduce_sum``, the scalar logical functions,
``binary_error``, ``epsilon_insensitive_loss``).  Small shapes: every case is cheap.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_functions import fn_case, positive
from compat_cases.nnabla_functions_more import _seeding

S234 = [(2, 3, 4)]


def halves(r, s):
    return (r.randint(-3, 4, s) * 0.5).astype(np.float32)   # zeros and ties on purpose


def ints(low, high, dtype=np.int32):
    return lambda r, s: r.randint(low, high, s, dtype=dtype)


def nonzero_ints(r, s):
    v = r.randint(1, 5, s) * np.where(r.randint(0, 2, s) == 0, -1, 1)
    return v.astype(np.int32)


def away_from(value):
    """Normal values kept 0.05 away from ``value`` (no kinks or ties on the boundary)."""
    def make(r, s):
        v = r.randn(*s)
        return np.where(np.abs(v - value) < 0.05, v + 0.1, v).astype(np.float32)
    return make


# -- array functions --------------------------------------------------------------------------
fn_case("flip", lambda F, x: F.flip(x), S234)
fn_case("flip__axes", lambda F, x: F.flip(x, axes=[0, -1]), S234)
fn_case("trilu", lambda F, x: F.trilu(x), [(2, 3, 4)])
fn_case("trilu__lower_k", lambda F, x: F.trilu(x, k=-1, upper=False), [(2, 4, 3)])
fn_case("trilu__upper_k", lambda F, x: F.trilu(x, k=2), [(3, 5)])
fn_case("eye_like", lambda F, x: F.eye_like(x), [(3, 4)], grads=False)
fn_case("eye_like__k", lambda F, x: F.eye_like(x, k=-2), [(4, 3)], grads=False)
fn_case("einsum", lambda F, a, b: F.einsum(a, b, equation="bij,bjk->bik"),
        [(2, 3, 4), (2, 4, 2)])
fn_case("einsum__trace_outer", lambda F, a, b: F.einsum(a, b, equation="ii,j->ij"),
        [(3, 3), (2,)])
fn_case("shape", lambda F, x: F.shape(x), S234, grads=False)
fn_case("shape__start_end", lambda F, x: F.shape(x, 1, -1), [(2, 3, 4, 5)], grads=False)
fn_case("mod2", lambda F, a, b: F.mod2(a, b), [(3, 4), (3, 4)],
        data=[halves, lambda r, s: r.rand(*s, low=0.3, high=2.0) * np.where(
            r.randint(0, 2, s) == 0, -1, 1).astype(np.float32)], grads=False,
        note="floats: NNabla 1.39 takes C's fmod (the sign of x0) whatever fmod says")
fn_case("mod2__int", lambda F, a, b: F.mod2(a, b), [(3, 4), (3, 4)],
        data=[ints(-9, 10), nonzero_ints], grads=False)
fn_case("mod2__int_fmod", lambda F, a, b: F.mod2(a, b, fmod=True), [(3, 4), (1, 4)],
        data=[ints(-9, 10), nonzero_ints], grads=False)
fn_case("bit_shift", lambda F, a, b: F.bit_shift(a, b), [(3, 4), (3, 4)],
        data=[ints(0, 256, np.uint8), ints(0, 8, np.uint8)], grads=False)
fn_case("bit_shift__right", lambda F, a, b: F.bit_shift(a, b, direction="RIGHT"),
        [(3, 4), (3, 4)], data=[ints(0, 256, np.uint8), ints(0, 8, np.uint8)], grads=False)
fn_case("sum_pooling", lambda F, x: F.sum_pooling(x, (2, 2)), [(2, 3, 4, 4)])
fn_case("sum_pooling__partial", lambda F, x: F.sum_pooling(
    x, (2, 3), stride=(2, 2), ignore_border=False), [(1, 2, 5, 6)])
fn_case("sum_pooling__pad", lambda F, x: F.sum_pooling(x, (2, 2), pad=(1, 0)), [(1, 2, 5, 4)])
fn_case("sum_pooling__channel_last", lambda F, x: F.sum_pooling(
    x, (3, 2), stride=(1, 2), channel_last=True), [(2, 4, 4, 3)],
    real=lambda F, x: F.transpose(F.sum_pooling(F.transpose(x, (0, 3, 1, 2)), (3, 2),
                                                stride=(1, 2)), (0, 2, 3, 1)),
    note="NNabla 1.39's CPU sum_pooling refuses channel_last: its reference is the "
         "channel-first pooling between transposes")


@nnabla_case(names=["nnabla.functions.linspace"])
def linspace(nn, F, r):
    with nn.auto_forward():
        a, b, c = F.linspace(0, 1, 5), F.linspace(2.5, -1, 8), F.linspace(3, 4, 1)
    return {"a": a.d.copy(), "b": b.d.copy(), "c": c.d.copy()}


# -- gradient shapers -------------------------------------------------------------------------
fn_case("clip_grad_by_value__function", lambda F, x, lo, hi: F.clip_grad_by_value(x, lo, hi) * 1.0,
        [(3, 4), (3, 4), (3, 4)],
        data=[None, lambda r, s: np.full(s, -0.5, np.float32),
              lambda r, s: r.rand(*s, low=0.2, high=1.0)], grads=[0])
fn_case("clip_grad_by_norm__function", lambda F, x: F.clip_grad_by_norm(x, 2.0), S234)
fn_case("clip_grad_by_norm__axes", lambda F, x: F.clip_grad_by_norm(x, 0.5, axes=[1, 2]),
        S234)
fn_case("clip_grad_by_norm__default", lambda F, x: F.clip_grad_by_norm(x), [(3, 4)])
fn_case("top_k_grad", lambda F, x: F.top_k_grad(x, 3), S234)
fn_case("top_k_grad__abs_base_axis", lambda F, x: F.top_k_grad(x, 2, abs=True, base_axis=2),
        S234)

# -- compositions -----------------------------------------------------------------------------
fn_case("broadcast_to", lambda F, x, y: F.broadcast_to(x, y, axis=1), [(2, 3, 4, 2), (3, 4)],
        grads=False, note="NNabla 1.39's broadcast_to has no backward")
fn_case("broadcast_to__trailing", lambda F, x, y: F.broadcast_to(x, y), [(2, 3, 4), (3, 4)],
        grads=False)
fn_case("reduce_mean", lambda F, x: F.reduce_mean(x), S234)
fn_case("reduce_sum", lambda F, x: F.reduce_sum(x), S234)
for _name, _val in (("logical_and_scalar", True), ("logical_or_scalar", False),
                    ("logical_xor_scalar", 1)):
    fn_case(_name, (lambda n, v: lambda F, x: getattr(F, n)(x, v))(_name, _val), [(3, 4)],
            data=[halves], grads=False)
for _name, _val in (("logical_and_scalar", 0), ("logical_or_scalar", 1.0),
                    ("logical_xor_scalar", False)):
    fn_case(_name + "__other", (lambda n, v: lambda F, x: getattr(F, n)(x, v))(_name, _val),
            [(3, 4)], data=[halves], grads=False, names=["nnabla.functions." + _name])
fn_case("binary_error", lambda F, x, t: F.binary_error(x, t), [(4, 5), (4, 5)],
        data=[away_from(0.5), lambda r, s: r.randint(0, 2, s).astype(np.float32)],
        grads=False)
fn_case("epsilon_insensitive_loss", lambda F, a, b: F.epsilon_insensitive_loss(a, b, 0.3),
        [(3, 4), (3, 4)], data=[away_from(0.0), positive],
        note="inputs kept off the kinks (|x0 - x1| = epsilon is not met by these draws)")

# -- masked and scattered writes, confusion matrix --------------------------------------------
fn_case("scatter_add", lambda F, x0, i, x1: F.scatter_add(x0, i, x1), [(3, 4), (2, 4), (2, 4)],
        data=[None, ints(0, 3), None], grads=[0, 2])
fn_case("scatter_add__axis_smaller_indices", lambda F, x0, i, x1: F.scatter_add(
    x0, i, x1, axis=1), [(3, 4), (2, 3), (2, 5)], data=[None, ints(0, 4), None], grads=[0, 2],
    names=["nnabla.functions.scatter_add"])
fn_case("bool_fill", lambda F, d, m: F.bool_fill(d, m, 2.5), [(3, 4), (3, 4)],
        data=[None, lambda r, s: r.randint(0, 2, s).astype(np.float32)], grads=[0])
fn_case("bool_fill__broadcast", lambda F, d, m: F.bool_fill(d, m), [(2, 3, 4), (2, 1, 4)],
        data=[None, lambda r, s: r.randint(0, 2, s).astype(np.float32)], grads=[0],
        names=["nnabla.functions.bool_fill"])
fn_case("confusion_matrix", lambda F, x, t: F.confusion_matrix(x, t), [(12, 4), (12, 1)],
        data=[None, ints(0, 4)], grads=False)
fn_case("confusion_matrix__axis", lambda F, x, t: F.confusion_matrix(x, t, axis=1),
        [(3, 3, 5), (3, 1, 5)], data=[None, ints(0, 3)], grads=False,
        names=["nnabla.functions.confusion_matrix"])


# -- nnabla.initializer -----------------------------------------------------------------------
@nnabla_case(names=["nnabla.initializer.RangeInitializer", "nnabla.initializer.BaseInitializer",
                    "nnabla.initializer.OrthogonalInitializer",
                    "nnabla.initializer.WeightNormalizationScaleInitializer"],
             note="OrthogonalInitializer draws from the rng given; the same RandomState state "
                  "gives the same values on both sides")
def initializers_2026(nn, r):
    I = r.module("nnabla.initializer")
    w = nn.Variable.from_numpy_array(r.randn(4, 3, 2))
    return {"range": I.RangeInitializer(2, 3)((2, 4)),
            "range float": I.RangeInitializer(0.5, -0.25)((3, 2, 3)),
            "base": issubclass(I.RangeInitializer, I.BaseInitializer),
            "orthogonal": I.OrthogonalInitializer(1.5, rng=np.random.RandomState(7))((4, 6)),
            "orthogonal tall": I.OrthogonalInitializer(rng=np.random.RandomState(8))((6, 2, 2)),
            "wn scale 0": I.WeightNormalizationScaleInitializer(w)((4,)),
            "wn scale 2": I.WeightNormalizationScaleInitializer(w, dim=2, eps=0.5)((2,))}


# -- nnabla.parametric_functions --------------------------------------------------------------
@nnabla_case(names=["nnabla.parametric_functions.weight_normalization",
                    "nnabla.parametric_functions.WeightNormalizationScaleInitializer"],
             tols={"grad x": (1e-4, 1e-5), "grad affine/W": (1e-4, 1e-5)})
def PF_weight_normalization(nn, PF, r):
    """apply_w=PF.weight_normalization: the scale wn/g starts at the weight's norms."""
    x = nn.Variable.from_numpy_array(r.randn(2, 5), need_grad=True)
    w0 = r.randn(5, 3)
    y = PF.affine(x, 3, w_init=w0, apply_w=lambda w: PF.weight_normalization(w, dim=1))
    params = nn.get_parameters(grad_only=False)
    scale = PF.WeightNormalizationScaleInitializer(nn.Variable.from_numpy_array(w0), dim=1)
    res = {"names": sorted([k, list(v.shape)] for k, v in params.items()),
           "initial g": params["affine/wn/g"].d.copy(), "scale": scale((3,))}
    y.forward()
    res["out"] = y.d.copy()
    for v in list(params.values()) + [x]:
        v.g = 0
    y.backward(r.weights_like(y.d))
    res["grad x"] = x.g.copy()
    for k, v in params.items():
        res["grad " + k] = v.g.copy()
    return res


@nnabla_case(names=["nnabla.parametric_functions.get_parameter"])
def PF_get_parameter(nn, PF, r):
    """The parameter in the current scope, by a path below it, or None."""
    with nn.parameter_scope("outer"):
        PF.affine(nn.Variable((2, 3)), 4, name="fc")
        inner = PF.get_parameter("fc/affine/W")
        with nn.parameter_scope("fc"):
            bias = PF.get_parameter("affine/b")
        missing = PF.get_parameter("fc/affine/nothing")
    return {"inner": list(inner.shape), "bias": list(bias.shape), "missing": missing is None,
            "top": PF.get_parameter("outer/fc/affine/W") is inner}


# -- running mean -----------------------------------------------------------------------------
@nnabla_case(names=["nnabla.functions.mean_subtraction"])
def mean_subtraction(nn, F, r):
    """Two forwards of a static graph fold two batches into the running mean; the gradient."""
    x = nn.Variable.from_numpy_array(r.randn(3, 2, 4), need_grad=True)
    mean = nn.Variable.from_numpy_array(r.randn(2, 4))
    t = nn.Variable.from_numpy_array(np.array([2.0], np.float32))
    y = F.mean_subtraction(x, mean, t)
    y.forward()
    res = {"out": y.d.copy(), "mean": mean.d.copy(), "t": float(t.d[0])}
    y.forward()
    res.update({"out 2": y.d.copy(), "mean 2": mean.d.copy(), "t 2": float(t.d[0])})
    x.g = 0
    y.backward(r.weights_like(y.d))
    res["grad x"] = x.g.copy()
    z = F.mean_subtraction(x, nn.Variable.from_numpy_array(r.randn(4)), t, base_axis=2,
                           update_running_mean=False)
    z.forward()
    x.g = 0
    z.backward(r.weights_like(z.d))
    res.update({"fixed out": z.d.copy(), "fixed grad x": x.g.copy(), "fixed t": float(t.d[0])})
    return res


@nnabla_case(names=["nnabla.parametric_functions.mean_subtraction"])
def PF_mean_subtraction(nn, PF, r):
    """The parameters, two forwards of a static graph, and the counter t."""
    x = nn.Variable.from_numpy_array(r.randn(4, 3), need_grad=True)
    y = PF.mean_subtraction(x, name="ms")
    params = nn.get_parameters(grad_only=False)
    res = {"names": sorted([k, list(v.shape), bool(v.need_grad)] for k, v in params.items())}
    y.forward()
    y.forward()
    res.update({"out": y.d.copy(), "mean": params["ms/mean_subtraction/mean"].d.copy(),
                "t": params["ms/mean_subtraction/t"].d.copy(),
                "t value": float(params["ms/mean_subtraction/t"].d[0])})
    return res


# -- random sources (streams differ: shapes, dtypes, ranges, moments and seeding) -------------
_RANDOM_NOTE = ("the streams differ: compared are the shape, dtype, range and moments of 90000 "
                "draws after nn.seed(7) (within 0.02 + 3%: the gamma's spread is wide), and "
                "that a seeded function draws the same values in two dynamic calls and new "
                "ones on a static graph's second forward")
_STATS = {"mean": (0.03, 0.02), "std": (0.03, 0.02), "mean 2 5": (0, 0.02),
          "std 2 5": (0, 0.02)}


def _stats(v):
    d = v.d
    return {"shape": list(v.shape), "dtype": str(d.dtype), "mean": np.float32(d.mean()),
            "std": np.float32(d.std())}


@nnabla_case(names=["nnabla.functions.rand_binomial"], tols=_STATS, note=_RANDOM_NOTE)
def rand_binomial(nn, F, r):
    nn.seed(7)
    with nn.auto_forward():
        v = F.rand_binomial(6, 0.3, shape=(300, 300))
    res = _stats(v)
    res["values"] = sorted(set(v.d.ravel().tolist())) == [float(i) for i in range(7)]
    res.update(_seeding(nn, lambda: F.rand_binomial(3, 0.5, shape=(50,), seed=4)))
    return res


@nnabla_case(names=["nnabla.functions.rand_gamma"], tols=_STATS, note=_RANDOM_NOTE)
def rand_gamma(nn, F, r):
    nn.seed(7)
    with nn.auto_forward():
        v = F.rand_gamma(0.5, 2.0, shape=(300, 300))
    res = _stats(v)
    res["positive"] = bool((v.d >= 0).all())
    res.update(_seeding(nn, lambda: F.rand_gamma(2.0, shape=(50,), seed=4)))
    return res


@nnabla_case(names=["nnabla.functions.rand_beta"], tols=_STATS, note=_RANDOM_NOTE)
def rand_beta(nn, F, r):
    nn.seed(7)
    with nn.auto_forward():
        v = F.rand_beta(0.5, 0.5, shape=(300, 300))
        w = F.rand_beta(2.0, 5.0, shape=(300, 300))
    res = _stats(v)
    res.update({"in [0, 1]": bool(((v.d >= 0) & (v.d <= 1)).all()),
                "mean 2 5": np.float32(w.d.mean()), "std 2 5": np.float32(w.d.std())})
    res.update(_seeding(nn, lambda: F.rand_beta(shape=(50,), seed=4)))
    return res


# -- bc_add2, prune, batch_cholesky, tensor_normalization (nnsignal) ---------------------------
def _spd(r, s):
    a = r.randn(*s)
    return (np.matmul(a, a.transpose(0, 2, 1)) + 2.0 * np.eye(s[-1])).astype(np.float32)


def _magnitudes(r, s):
    """Distinct magnitudes (no ties at the threshold)."""
    v = (r.rng.permutation(int(np.prod(s))).reshape(s) + 1.0) * 0.1 * np.where(
        r.randint(0, 2, s) == 0, -1, 1)
    return v.reshape(s).astype(np.float32)


fn_case("bc_add2", lambda F, a, b: F.bc_add2(a, b), [(2, 3, 4), (1, 3, 1)])
fn_case("bc_add2__same", lambda F, a, b: F.bc_add2(a, b), [(2, 3), (2, 3)])
fn_case("prune", lambda F, x: F.prune(x), [(4, 5)], data=[_magnitudes])
fn_case("prune__rates", lambda F, x: F.prune(x, rate=0.3) + F.prune(x, rate=0.0) * 2.0
        + F.prune(x, rate=1.0) * 3.0, [(3, 7)], data=[_magnitudes])
fn_case("batch_cholesky", lambda F, x: F.batch_cholesky(x), [(2, 3, 3)], data=[_spd])
fn_case("batch_cholesky__upper", lambda F, x: F.batch_cholesky(x, upper=True), [(3, 4, 4)],
        data=[_spd], tols={"out": (1e-5, 1e-5), "grad0": (1e-4, 1e-5)})
fn_case("tensor_normalization", lambda F, x: F.tensor_normalization(x, [1]), [(4, 3, 5)],
        tols={"out": (1e-5, 1e-5), "grad0": (1e-4, 1e-5)})
fn_case("tensor_normalization__beta_gamma", lambda F, x, b, g: F.tensor_normalization(
    x, [0, 2], beta=b, gamma=g, eps=1e-3), [(2, 5, 3), (2, 1, 3), (2, 1, 3)],
    tols={"out": (1e-5, 1e-5), "grad0": (1e-4, 1e-5), "grad1": (1e-5, 1e-5),
          "grad2": (1e-4, 1e-5)})
fn_case("tensor_normalization__output_stat", lambda F, x: F.concatenate(
    *[F.reshape(v, (-1,)) for v in F.tensor_normalization(x, 1, output_stat=True)]),
    [(6, 2, 3)], tols={"out": (1e-5, 1e-5), "grad0": (1e-4, 1e-5)})
# Over every axis each value is its own batch: NNabla 1.39 gives 0 * gamma + beta and (up to
# its rounding noise, ~1e-4 here) no gradient to x, where torch's kernel refuses one value.
fn_case("tensor_normalization__all_axes", lambda F, x, b, g: F.tensor_normalization(
    x, [0, 1], beta=b, gamma=g), [(3, 4), (3, 4), (3, 4)], tols={"grad0": (0.0, 1e-3)})
fn_case("tensor_normalization__all_axes_1d", lambda F, x: F.concatenate(
    *[F.reshape(v, (-1,)) for v in F.tensor_normalization(x, 0, output_stat=True)]),
    [(5,)], tols={"grad0": (0.0, 1e-3)}, note="one axis: the mean is x, the variance 0")


@nnabla_case(names=["nnabla.functions.tensor_normalization"],
             note="over several axes the statistics come through Reshape and Transpose "
                  "nodes y.forward() does not run: they hold zeros, as in NNabla 1.39")
def tensor_normalization__all_axes_stat(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 2), need_grad=True)
    y, mean, var = F.tensor_normalization(x, [0, 1, 2], output_stat=True)
    y.forward()
    return {"out": y.d.copy(), "mean": mean.d.copy(), "var": var.d.copy()}


@nnabla_case(names=["nnabla.functions.batch_normalization"], tols={"grad x": (0.0, 1e-3)})
def batch_normalization__one_sample(nn, F, r):
    """A batch of one with batch statistics: output beta, the running mean moves toward x, the
    running variance becomes NaN (the unbiased variance of one value), as NNabla 1.39's; x's
    gradient is 0 (NNabla's has rounding noise, ~3e-5 here)."""
    x = nn.Variable.from_numpy_array(r.randn(1, 4), need_grad=True)
    beta = nn.Variable.from_numpy_array(r.randn(1, 4), need_grad=True)
    gamma = nn.Variable.from_numpy_array(r.randn(1, 4), need_grad=True)
    rm = nn.Variable.from_numpy_array(r.randn(1, 4))
    rv = nn.Variable.from_numpy_array(r.rand(1, 4, low=0.5, high=2.0))
    y = F.batch_normalization(x, beta, gamma, rm, rv, batch_stat=True)
    y.forward()
    res = {"out": y.d.copy(), "running mean": rm.d.copy(), "running var": rv.d.copy()}
    for v in (x, beta, gamma):
        v.g = 0
    y.backward(r.weights_like(y.d))
    res.update({"grad x": x.g.copy(), "grad beta": beta.g.copy(), "grad gamma": gamma.g.copy()})
    return res


# -- unlink, reduce and the getters nnabla.functions holds ------------------------------------
@nnabla_case(names=["nnabla.functions.unlink"])
def unlink(nn, F, r):
    """Identity forward; the output needs a gradient, and a backward through it leaves the
    input's gradient as it was (alone, or beside another path)."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    y = F.unlink(x)
    z = y * 2.0 + x * 3.0
    z.forward()
    res = {"out": y.d.copy(), "need_grad": bool(y.need_grad)}
    x.g = 5.0
    z.backward(r.weights_like(z.d))
    res["grad beside a path"] = x.g.copy()
    y.forward()
    x.g = 7.0
    y.backward(r.weights_like(y.d))
    res["grad alone"] = x.g.copy()
    with nn.auto_forward():
        w = F.unlink(x)
    res["dynamic"] = w.d.copy()
    return res


@nnabla_case(names=["nnabla.functions.reduce"])
def reduce(nn, F, r):
    """Deprecated: sum or mean of everything, with a DeprecationWarning; another op is a
    ValueError."""
    import warnings
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    res = {}
    for op in ("sum", "mean"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = F.reduce(x, op) if op == "mean" else F.reduce(x)
        res[op + " warns"] = [w.category.__name__ for w in caught]
        y.forward()
        x.g = 0
        y.backward()
        res[op] = y.d.copy()
        res[op + " shape"] = list(y.shape)
        res[op + " grad"] = x.g.copy()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            F.reduce(x, "max")
        res["max"] = "no error"
    except ValueError:
        res["max"] = "ValueError"
    return res


@nnabla_case(names=["nnabla.functions.get_auto_forward",
                    "nnabla.functions.get_current_context"])
def functions_getters(nn, F, r):
    """``nnabla.functions`` holds ``get_auto_forward`` and ``get_current_context`` (the ones
    of ``nnabla``)."""
    res = {"same objects": [F.get_auto_forward is nn.get_auto_forward,
                            F.get_current_context is nn.get_current_context],
           "auto forward": F.get_auto_forward()}
    with nn.auto_forward():
        res["inside auto_forward"] = F.get_auto_forward()
    res["context"] = type(F.get_current_context()).__name__
    return res
