"""``cntk.random``: what holds for any draw -- shapes, dtypes, the batch axis of the ``*_like``
forms, the values' range and support, the seed rules (the same seed gives the same first values,
each evaluation draws new ones, another seed other ones) -- and the distributions' moments over
large draws (the values themselves, CNTK's to the bit, are compared in
``cntk_random_values.py``).

A moment's tolerance comes from the draw's size: both sides' sample means (variances) are
estimates with standard error ``s = sqrt(var / n)`` (``sqrt((mu4 - var**2) / n)``), so their
difference has standard error ``sqrt(2) * s``; the tolerance is six of those (a false alarm
about once in 500 million runs).  ``var`` and ``mu4`` are the distribution's own, from its
documented parameters.
"""

import math

import numpy as np

from compat_harness import cntk_case

N = 200000          # values per draw: shape (400, 500)
SHAPE = (400, 500)


def _moments(kind, a, b):
    """(variance, fourth central moment) of the distribution ``kind`` with parameters a, b."""
    if kind == "uniform":
        w = b - a
        return w * w / 12.0, w ** 4 / 80.0
    if kind == "normal":
        return b * b, 3.0 * b ** 4
    if kind == "gumbel":
        var = math.pi ** 2 / 6.0 * b * b
        return var, 5.4 * var * var             # excess kurtosis 12/5
    p = a                                       # bernoulli(p)
    var = p * (1 - p)
    return var, var * (1 - 3 * var)


def _tols(kind, a, b, n, prefix):
    var, mu4 = _moments(kind, a, b)
    return {prefix + "mean": (0.0, 6 * math.sqrt(2 * var / n)),
            prefix + "var": (0.0, 6 * math.sqrt(2 * (mu4 - var * var) / n))}


def _stats(v, prefix=""):
    v = np.asarray(v, np.float64)
    return {prefix + "mean": np.float64(v.mean()), prefix + "var": np.float64(v.var())}


def _draw_checks(kind, a, b, first, second, again):
    """What holds for any draw: the seed rules, finite values, the range or support, and the
    first draw's moments."""
    res = {"same_seed_same_values": bool((again == first).all()),
           "next_eval_new_values": bool((second != first).any()),
           "finite": bool(np.isfinite(first).all())}
    if kind == "uniform":
        res["in_range"] = bool(first.min() >= a and first.max() < b)
    if kind == "bernoulli":
        res["support"] = sorted(set(np.unique(first).tolist()))
    res.update(_stats(first))
    return res


# (function, keyword arguments, the moments' kind and parameters)
_DRAWS = [
    ("uniform", {"low": -1.0, "high": 3.0}, ("uniform", -1.0, 3.0)),
    ("normal", {"mean": 2.0, "scale": 0.5}, ("normal", 2.0, 0.5)),
    ("gumbel", {"loc": 1.0, "scale": 2.0}, ("gumbel", 1.0, 2.0)),
    ("bernoulli", {"mean": 0.3}, ("bernoulli", 0.3, 0.0)),
]


def _draw_case(fn_name, kwargs, moments):
    kind, a, b = moments

    def fn(C, np):
        make = getattr(C.random, fn_name)
        f = make(SHAPE, seed=11, **kwargs)
        first, second = f.eval(), f.eval()
        again = make(SHAPE, seed=11, **kwargs).eval()
        other = make(SHAPE, seed=12, **kwargs).eval()
        # with a fixed seed, every auto-selected seed is that seed
        C.cntk_py.set_fixed_random_seed(313)
        auto1, auto2 = make((50,), **kwargs).eval(), make((50,), **kwargs).eval()
        res = {"shape": list(f.shape), "value_shape": list(first.shape),
               "dtype": str(first.dtype), "dynamic_axes": len(f.dynamic_axes),
               "float64": str(make((3,), dtype=np.float64, **kwargs).eval().dtype),
               "int_shape": list(make(7, **kwargs).eval().shape),
               "other_seed_other_values": bool((other != first).any()),
               "fixed_seed_auto_seeds_equal": bool((auto1 == auto2).all())}
        res.update(_draw_checks(kind, a, b, first, second, again))
        res.update(_stats(second, "next_"))
        return res

    name = "random_" + fn_name
    fn.__name__ = name
    tols = dict(_tols(kind, a, b, N, ""))
    tols.update(_tols(kind, a, b, N, "next_"))
    cntk_case(name=name, names=["cntk.random." + fn_name], tols=tols,
              note="moments within six standard errors of the difference of two size-%d "
                   "estimates (see the module's docstring)" % N)(fn)


for _fn, _kw, _m in _DRAWS:
    _draw_case(_fn, _kw, _m)


def _like_case(fn_name, kwargs, moments):
    kind, a, b = moments
    n_batch = 2000     # samples of shape (4, 25): N values

    def fn(C, np, r):
        make = getattr(C.random, fn_name + "_like")
        x = C.input_variable((4, 25), needs_gradient=True)
        f = make(x, seed=5, **kwargs)
        data = r.randn(n_batch, 4, 25)
        first, second = f.eval({x: data}), f.eval({x: data})
        again = make(x, seed=5, **kwargs).eval({x: data})
        small = f.eval({x: data[:3]})
        c = C.constant(np.zeros((4, 5), np.float32))
        fixed = make(c, **kwargs)
        # the operand only lends its shape: no gradient flows into it through the draw
        g = (x + make(x, **kwargs)).grad({x: data[:3]}, wrt=[x])
        res = {"shape": list(f.shape), "dynamic_axes": len(f.dynamic_axes),
               "value_shape": list(first.shape), "dtype": str(first.dtype),
               "small_batch_shape": list(small.shape),
               "of_constant_shape": list(fixed.eval().shape),
               "of_constant_dynamic_axes": len(fixed.dynamic_axes),
               "grad_of_x_plus_draw": g}
        res.update(_draw_checks(kind, a, b, first, second, again))
        return res

    name = "random_" + fn_name + "_like"
    fn.__name__ = name
    cntk_case(name=name, names=["cntk.random." + fn_name + "_like"],
              tols=_tols(kind, a, b, N, ""),
              note="moments within six standard errors of the difference of two size-%d "
                   "estimates (see the module's docstring)" % N)(fn)


for _fn, _kw, _m in _DRAWS:
    _like_case(_fn, _kw, _m)


@cntk_case(names=["cntk.random.auto_select", "cntk.random.default_override_or"])
def random_auto_select_and_dtype_default(C, np):
    """``auto_select`` is the sentinel seed every random function defaults to; the ``dtype``
    default is a ``default_override_or`` that ``default_options(dtype=...)`` overrides."""
    u = C.random.uniform((3,), seed=C.random.auto_select)
    with C.layers.default_options(dtype=np.float64):
        d = C.random.normal((3,)).eval().dtype
    declared = C.random.default_override_or(np.float32)
    return {"auto_select": str(C.random.auto_select), "shape": list(u.eval().shape),
            "dtype_under_options": str(d),
            "override_value": str(np.dtype(declared.value))}


@cntk_case(names=["cntk.random.normal", "cntk.random.uniform_like", "cntk.random.bernoulli",
                  "cntk.random.gumbel_like", "cntk.Function.attributes",
                  "cntk.Function.set_attribute"],
           note="a random function's root showed Stadyn's op (NormalRandom, "
                "UniformRandomLike, ...) and its arguments (mu, sigma, seed); CNTK 2.7 shows "
                "one RandomDistribution with randomDistributionType/Args, rngSeed, rngOffset "
                "(and newShape/newDataType where it draws a shape of its own)")
def random_root_function_as_cntk(C, r):
    x = C.input_variable(3)
    out = {}
    draws = {"normal": C.random.normal((2, 3), mean=1.0, scale=2.0, seed=1),
             "uniform_like": C.random.uniform_like(x, low=-1, high=2, seed=2),
             "bernoulli": C.random.bernoulli((2,), mean=0.25, seed=3),
             "gumbel_like": C.random.gumbel_like(x, loc=0.5, scale=1.5, seed=4),
             "normal_double": C.random.normal((2,), dtype=np.float64, seed=5)}
    for key, f in draws.items():
        root = f.root_function
        out[key + "_op"] = root.op_name
        out[key + "_uid"] = root.uid.rstrip("0123456789")
        attrs = root.attributes
        out[key + "_keys"] = " ".join(sorted(attrs))
        for k in sorted(attrs):
            v = attrs[k]
            out[key + "_" + k] = [float(a) for a in v] if isinstance(v, (list, tuple)) else \
                str(v) if isinstance(v, str) else float(v)
    f = C.random.uniform_like(x, seed=7)
    f.root_function.set_attribute("rngSeed", 11)
    out["seed_after_set"] = float(f.root_function.attributes["rngSeed"])
    r.touch("cntk.Function.attributes", "cntk.Function.set_attribute")
    return out
