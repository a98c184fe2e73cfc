"""``cntk.random``: random values as Functions -- ``uniform``, ``normal``, ``gumbel``,
``bernoulli`` of a given shape, and their ``*_like`` forms, of another operand's shape (its batch
axis included).

CNTK's rules: every evaluation draws new values; a Function made with an explicit ``seed``
starts from the same values as any other Function made with that seed and then draws the next
values of its stream on each evaluation; ``seed=auto_select`` (the default) takes the next of a
fixed sequence of seeds when the Function is made, so a program's run repeats from one process
to the next as in CNTK 2.7 (:func:`stadyn.seed` starts another sequence), or, after
``cntk.cntk_py.set_fixed_random_seed(s)``, ``s`` itself.  The
values are CNTK 2.7's own, to the bit (its CPU's: ``std::mt19937_64`` and Boost's
distributions, :class:`stadyn.ops.CNTKStream`), whatever device computes the graph.  No
gradient flows through a ``*_like`` Function into its operand; of a placeholder without a
shape it waits for the shape (its seed drawn as it is made).  A ``scale`` of 0 gives the mean
(or ``loc``) everywhere, a negative one is a RuntimeError, as in CNTK 2.7.  A graph holding a random
Function is lowered like any other and saves to a model file (the loaded graph draws on from
where each stream stood, as CNTK 2.7's loaded models do).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> u = C.random.uniform((2, 3), low=-1.0, high=1.0, seed=5)
    >>> a, b = u.eval(), u.eval()
    >>> a.shape, bool((a >= -1).all() and (a < 1).all()), bool((a != b).any())
    ((2, 3), True, True)
    >>> bool((C.random.uniform((2, 3), low=-1.0, high=1.0, seed=5).eval() == a).all())
    True
    >>> x = C.input_variable(4)
    >>> C.random.bernoulli_like(x, mean=0.3).eval({x: np.zeros((5, 4), np.float32)}).shape
    (5, 4)
"""

from __future__ import annotations

import numpy as np

from ... import functions as F
from . import _graph as G
from ._adapt import named, operand, wrap
from ._cntk_attributes import CNTK_ATTRIBUTES
from ._defaults import default_override_or, get_default_override
from ._deferrable import deferrable
from ._seeds import SentinelValueForAutoSelectRandomSeed, drawn_seed, resolved_seed
from ._variables import Constant

__all__ = ["uniform", "normal", "gumbel", "bernoulli", "uniform_like", "normal_like",
           "gumbel_like", "bernoulli_like", "auto_select", "default_override_or"]

auto_select = SentinelValueForAutoSelectRandomSeed


_OPS = {"uniform": F.rand_like, "normal": F.randn_like, "gumbel": F.gumbel_like}


def _shown(out, kind: str, a: float, b: float, stream: int, extra: dict = None):
    """``out`` a random Function's root as CNTK 2.7 shows it: one ``RandomDistribution`` op
    whatever the distribution, of the attributes CNTK's C++ records (``newShape`` and
    ``newDataType`` only where it draws a shape of its own)."""
    G.set_op_name(out, "RandomDistribution")
    args = [float(a)] if kind == "bernoulli" else [float(a), float(b)]
    CNTK_ATTRIBUTES[out] = {**(extra or {}), "randomDistributionArgs": args,
                            "randomDistributionType": kind, "rngOffset": 0,
                            "rngSeed": int(stream)}


def _draw(like, kind: str, a: float, b: float, seed, name: str, op: str, extra: dict = None,
          double: bool = False):
    v = operand(like)
    if double:      # (the values drawn in double, as CNTK's float64 node draws them)
        v = F.cast(v, "float64")
    if kind == "uniform":
        _refuse_endless(op, a, b, np.dtype(v.dtype))
    stream = resolved_seed(seed).for_operand(v)
    if kind == "bernoulli":     # (a NaN mean: all ones, as CNTK's draw of u <= 1 - NaN)
        out = F.bernoulli_like(v, 1.0 if np.isnan(float(a)) else a, seed=stream)
    else:
        out = _OPS[kind](v, a, b, seed=stream)
    _shown(out, kind, a, b, stream, extra)
    return named(wrap(out), name, "RandomDistribution")


def _fixed(shape, dtype, kind, a, b, seed, name, op):
    dtype = np.dtype(get_default_override(None, dtype=dtype))
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"cntk.random.{op.lower()}: dtype must be float32 or float64, "
                         f"got {dtype}")
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s)
                                                                             for s in shape)
    # CNTK's DataType: 1 float, 2 double
    extra = {"newDataType": 2 if dtype == np.float64 else 1, "newShape": shape}
    out = _draw(Constant(np.zeros(shape, np.float32)), kind, a, b, seed, name, op, extra,
                dtype == np.float64)
    if dtype == np.float64:     # (a float64 value, which compat.cntk's Functions cast to)
        drawn = CNTK_ATTRIBUTES[out.variable]
        out = named(wrap(F.cast(out.variable, "float64")), name, "RandomDistribution")
        G.set_op_name(out.variable, "RandomDistribution")
        CNTK_ATTRIBUTES[out.variable] = drawn
    return out


def _check_range(op: str, low, high) -> None:
    """CNTK 2.7's RuntimeError as a uniform op is made of a range whose ``low`` is not below
    its ``high`` (Function.cpp:1434-1443, ``UniformRandom``/``UniformRandomLike``: ``low >=
    high`` in double, printed with ``%g``; a NaN passes)."""
    if float(low) >= float(high):
        raise RuntimeError(f"{op}: low end of the range ({float(low):g}) must be < high end "
                           f"of the range ({float(high):g})")


def _refuse_endless(op: str, low, high, dtype: np.dtype) -> None:
    """Refuse a uniform draw that CNTK 2.7 makes but never ends: it draws a run's values with
    Boost's ``uniform_real_distribution<ElemType>(low, high)`` (Source/Math/CPUMatrixImpl.h:
    1044), which draws again while a value is not below ``high``: of a range NaN or empty in
    the node's dtype (``low=1, high=1 + 1e-9`` in float32) it never returns, and of one with
    an end infinite in it (``high=1e300`` in float32) CNTK 2.7's Python API ends in a
    segmentation fault (each seen in a child process of CNTK 2.7 under a time limit)."""
    with np.errstate(over="ignore"):        # (1e300 in float32: inf, as CNTK casts it)
        lo, hi = dtype.type(low), dtype.type(high)
    if np.isinf(lo) or np.isinf(hi):
        what, ends = "infinite", "its first run ends CNTK 2.7's Python API in a segmentation fault"
    elif np.isnan(lo) or np.isnan(hi) or not lo < hi:
        what = "NaN" if np.isnan(lo) or np.isnan(hi) else "empty"
        ends = ("its first run never returns (Boost's uniform_real_distribution draws again "
                "for ever)")
    else:
        return
    raise ValueError(f"cntk.random: {op}'s range [{low}, {high}) is {what} in {dtype.name}: "
                     f"CNTK 2.7 makes the op, and {ends}; Stadyn refuses it")


def _range_checked(arguments: dict) -> None:
    """``uniform_like``'s ``as_called`` hook: its range checked, then its seed drawn, as
    CNTK 2.7 does both as the op is called, of a placeholder without a shape too."""
    _check_range("UniformRandomLike", arguments["low"], arguments["high"])
    _seed_drawn(arguments)


# CNTK 2.7's op names (in its RuntimeError) and what it calls the scale
_SCALED = {"normal": ("NormalRandom", "standard deviation"), "gumbel": ("GumbelRandom", "scale")}


def _check_scale(op: str, scale) -> float:
    """``scale`` as CNTK 2.7 takes it: 0 (every value the mean), infinity and NaN too (its
    check is ``scale < 0``: NaN values), a negative one refused (its RuntimeError)."""
    kind = op.replace("_like", "")
    if float(scale) < 0:
        cntk_op, what = _SCALED[kind]
        raise RuntimeError(f"{cntk_op}{'Like' if op.endswith('_like') else ''}: {what} "
                           f"({float(scale):g}) must be non-negative")   # (Function.cpp:1451)
    return float(scale)


def _check_mean(op: str, mean) -> float:
    """A Bernoulli op's ``mean`` (the probability of 1) as CNTK 2.7 takes it: outside [0, 1]
    its RuntimeError as the op is made (Function.cpp:1509-1522, ``mean < 0 || mean > 1`` in
    double, printed with ``%g``); a NaN passes, and then every value is 1 (its draw is
    ``u <= 1 - mean ? 0 : 1``, CPUMatrixImpl.h:1163-1190, false for a NaN)."""
    if float(mean) < 0 or float(mean) > 1:
        cntk_op = "BernoulliRandomLike" if op.endswith("_like") else "BernoulliRandom"
        raise RuntimeError(f"{cntk_op}: mean ({float(mean):g}) must be between 0 and 1")
    return float(mean)


def _seed_drawn(arguments: dict) -> None:
    """The ``as_called`` hook of a random op: its ``seed`` drawn (:func:`_seeds.drawn_seed`)
    as it is called, of a placeholder without a shape too, as CNTK 2.7 draws it."""
    arguments["seed"] = drawn_seed(arguments["seed"])


def _checked(op: str, argument: str, check):
    """The ``as_called`` hook of the ``*_like`` op ``op``: ``argument`` checked (``check``),
    then the seed drawn, as CNTK 2.7 does both as the op is called, of a placeholder without
    a shape too."""
    def as_called(arguments: dict) -> None:
        arguments[argument] = check(op, arguments[argument])
        _seed_drawn(arguments)
    return as_called


def uniform(shape, dtype=default_override_or(np.float32), low=0.0, high=1.0, seed=auto_select,
            name: str = ""):
    """Values drawn uniformly from ``[low, high)``, of ``shape`` (no batch axis).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> v = C.random.uniform(1000, low=2.0, high=3.0).eval()
        >>> v.shape, bool(v.min() >= 2.0 and v.max() < 3.0)
        ((1000,), True)
    """
    _check_range("UniformRandom", low, high)
    return _fixed(shape, dtype, "uniform", low, high, seed, name, "UniformRandom")


def normal(shape, dtype=default_override_or(np.float32), mean=0.0, scale=1.0,
           seed=auto_select, name: str = ""):
    """Values drawn from the normal distribution with ``mean`` and standard deviation
    ``scale``, of ``shape``.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> v = C.random.normal((100, 100), mean=5.0, scale=0.1, seed=1).eval()
        >>> round(float(v.mean()), 1), v.dtype.name
        (5.0, 'float32')
    """
    return _fixed(shape, dtype, "normal", mean, _check_scale("normal", scale), seed, name,
                  "NormalRandom")


def gumbel(shape, dtype=default_override_or(np.float32), loc=0.0, scale=1.0, seed=auto_select,
           name: str = ""):
    """Values drawn from the Gumbel distribution (``loc - scale * log(-log(u))`` for uniform
    ``u``), of ``shape``: the noise of the Gumbel-max trick.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> v = C.random.gumbel(20000, seed=3).eval()
        >>> round(float(v.mean()), 1)    # Euler's constant, 0.577...
        0.6
    """
    return _fixed(shape, dtype, "gumbel", loc, _check_scale("gumbel", scale), seed, name,
                  "GumbelRandom")


def bernoulli(shape, dtype=default_override_or(np.float32), mean=0.5, seed=auto_select,
              name: str = ""):
    """Ones with probability ``mean``, zeros otherwise, of ``shape``.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> sorted(set(C.random.bernoulli(50, mean=0.5, seed=2).eval().tolist()))
        [0.0, 1.0]
    """
    return _fixed(shape, dtype, "bernoulli", _check_mean("bernoulli", mean), 0.0, seed, name,
                  "BernoulliRandom")


@deferrable(as_called=_range_checked)
def uniform_like(x, low=0.0, high=1.0, seed=auto_select, name: str = ""):
    """:func:`uniform` values of ``x``'s shape and dtype, its batch axis included.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(3)
        >>> f = C.random.uniform_like(x, low=5.0, high=6.0, seed=4)
        >>> a = f.eval({x: np.zeros((2, 3), np.float32)})
        >>> b = C.random.uniform_like(x, low=5.0, high=6.0, seed=4).eval({x: np.ones((2, 3))})
        >>> a.shape, bool((a == b).all()), bool((a >= 5).all() and (a < 6).all())
        ((2, 3), True, True)
    """
    return _draw(x, "uniform", low, high, seed, name, "UniformRandomLike")


@deferrable(as_called=_checked("normal_like", "scale", _check_scale))
def normal_like(x, mean=0.0, scale=1.0, seed=auto_select, name: str = ""):
    """:func:`normal` values of ``x``'s shape and dtype, its batch axis included.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(3)
        >>> C.random.normal_like(x, scale=2.0).eval({x: np.zeros((4, 3), np.float32)}).shape
        (4, 3)
    """
    return _draw(x, "normal", mean, scale, seed, name, "NormalRandomLike")


@deferrable(as_called=_checked("gumbel_like", "scale", _check_scale))
def gumbel_like(x, loc=0.0, scale=1.0, seed=auto_select, name: str = ""):
    """:func:`gumbel` values of ``x``'s shape and dtype, its batch axis included.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> c = C.constant(np.zeros((5, 4), np.float32))
        >>> v = C.random.gumbel_like(c, loc=2.0).eval()
        >>> v.shape, v.dtype.name, bool(np.isfinite(v).all())
        ((5, 4), 'float32', True)
    """
    return _draw(x, "gumbel", loc, scale, seed, name, "GumbelRandomLike")


@deferrable(as_called=_checked("bernoulli_like", "mean", _check_mean))
def bernoulli_like(x, mean=0.5, seed=auto_select, name: str = ""):
    """:func:`bernoulli` values of ``x``'s shape and dtype, its batch axis included.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(3)
        >>> C.random.bernoulli_like(x, mean=1.0).eval({x: np.zeros((2, 3), np.float32)}).tolist()
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    return _draw(x, "bernoulli", mean, 0.0, seed, name, "BernoulliRandomLike")
