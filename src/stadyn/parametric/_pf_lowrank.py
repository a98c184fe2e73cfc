"""NNabla's low-rank layers: ``svd_affine`` (``x U V + b``), ``svd_convolution`` (a depthwise
convolution with ``U``, then a 1x1 convolution with ``V``) and ``cpd3_convolution`` (1x1 with
``I``, depthwise with ``K``, 1x1 with ``O``).  Their factors start as a factorisation of a
full weight drawn from ``uv_init``/``oik_init`` (an initialiser or an array): the truncated SVD,
or a rank-``r`` CP decomposition by alternating least squares (``cp_als``).  Existing factors
in the scope are kept, as in NNabla.

Example:
    >>> import stadyn as sd, stadyn.parametric_functions as PF
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     y = PF.svd_affine(sd.Variable((4, 6)), 5, 2)
    ...     y.shape, [p.shape for p in sd.get_parameters().values()]
    ((4, 5), [(6, 2), (2, 5), (5,)])
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import functions as F
from .._errors import ShapeError
from ..graph import Variable
from . import initializers as I
from ._pf_common import checked_base_axis, count, counts, given_or, parameter, pf_scope
from ._registry import get_parameter, set_parameter

__all__ = ["svd_affine", "svd_convolution", "cpd3_convolution", "cp_als"]


def _full_weight(init, shape, fan_in, fan_out, kernel, rng) -> np.ndarray:
    """The full weight the factors approximate: ``init`` if an array, else drawn from ``init``
    (default: Glorot uniform)."""
    if isinstance(init, np.ndarray):
        if init.size != math.prod(shape):
            raise ShapeError(f"PF: the initial weight has {init.size} elements; {shape} needs "
                             f"{math.prod(shape)}")
        return np.asarray(init, dtype=np.float32)
    if init is None:
        lim = I.calc_uniform_lim_glorot(fan_in, fan_out, kernel)
        init = I.UniformInitializer((-lim, lim), rng=rng)
    return np.asarray(init(tuple(shape)), dtype=np.float32)


def _rank(r, fn):
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r < 1:
        raise ShapeError(f"PF.{fn}: the rank r must be a positive int, got {r!r}")
    return int(r)


def _factors(names, make, fix_parameters):
    """The parameters ``names`` of the current scope; when one is missing, all are set from
    ``make()`` (arrays in ``names``' order).  With ``fix_parameters`` the graph sees views that
    need no gradient."""
    if any(get_parameter(n) is None for n in names):
        for n, value in zip(names, make()):
            set_parameter(n, Variable.from_numpy_array(np.asarray(value, np.float32),
                                                       need_grad=True))
    return [parameter(n, get_parameter(n).shape, None, fix_parameters) for n in names]


def _bias(with_bias, shape, b_init, fix_parameters):
    if not with_bias:
        return None
    return parameter("b", shape, given_or(b_init, I.ConstantInitializer(0.0)), fix_parameters)


def svd_affine(inp: Variable, n_outmaps: int | Sequence[int], r: int, base_axis: int = 1,
               uv_init=None, b_init=None, fix_parameters: bool = False, rng=None,
               with_bias: bool = True, name: str | None = None) -> Variable:
    """Low-rank affine layer ``(x U) V + b`` (NNabla's ``PF.svd_affine``) in scope
    ``svd_affine``: ``U`` ``(inmaps, r)`` and ``V`` ``(r, *n_outmaps)`` start as the rank-``r``
    truncated SVD of a full ``(inmaps, *n_outmaps)`` weight from ``uv_init`` (the singular
    values folded into ``U``); ``b`` zeros.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.parametric_functions as PF
        >>> w = np.outer([1.0, 2.0, 3.0], [1.0, -1.0])
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = PF.svd_affine(sd.Variable((1, 3)), 2, 1, uv_init=w)
        ...     p = sd.get_parameters()
        ...     np.allclose(p["svd_affine/U"].d @ p["svd_affine/V"].d, w)
        True
    """
    r = _rank(r, "svd_affine")
    out = counts(n_outmaps, "svd_affine", "n_outmaps", True)
    inmaps = inp.size_from_axis(checked_base_axis(base_axis, inp, "svd_affine"))
    with pf_scope(name, "svd_affine"):
        def make():
            full = _full_weight(uv_init, (inmaps,) + out, inmaps, math.prod(out), (1, 1), rng)
            u, s, vt = np.linalg.svd(full.reshape(inmaps, -1), full_matrices=False)
            return (u * s)[:, :r], vt[:r].reshape((r,) + out)
        u, v = _factors(("U", "V"), make, fix_parameters)
        b = _bias(with_bias, out, b_init, fix_parameters)
        return F.affine(F.affine(inp, u, None, base_axis), v, b, base_axis)


def svd_convolution(inp: Variable, outmaps: int, kernel: Sequence[int], r: int, pad=None,
                    stride=None, dilation=None, uv_init=None, b_init=None, base_axis: int = 1,
                    fix_parameters: bool = False, rng=None, with_bias: bool = True,
                    name: str | None = None) -> Variable:
    """Low-rank convolution (NNabla's ``PF.svd_convolution``) in scope ``svd_conv``: a
    depthwise convolution with ``U`` ``(inmaps * r, *kernel)`` (multiplier ``r``; ``pad``,
    ``stride``, ``dilation`` apply here), then a 1x1 convolution with ``V``
    ``(outmaps, inmaps * r, 1, ...)`` and ``b``.  Per input map, the full weight's
    ``(kernel size, outmaps)`` slice is replaced by its rank-``r`` SVD.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = PF.svd_convolution(sd.Variable((1, 3, 8, 8)), 6, (3, 3), 2, pad=(1, 1))
        ...     y.shape, sd.get_parameters()["svd_conv/U"].shape
        ((1, 6, 8, 8), (6, 3, 3))
    """
    r = _rank(r, "svd_convolution")
    outmaps = count(outmaps, "svd_convolution", "outmaps")
    kernel = counts(kernel, "svd_convolution", "kernel", True)
    inmaps = inp.shape[checked_base_axis(base_axis, inp, "svd_convolution")]
    ksize = math.prod(kernel)
    with pf_scope(name, "svd_conv"):
        def make():
            full = _full_weight(uv_init, (outmaps, inmaps) + kernel, inmaps, outmaps, kernel,
                                rng).reshape(outmaps, inmaps, ksize)
            us = np.zeros((inmaps, r, ksize), np.float32)
            vs = np.zeros((outmaps, inmaps, r), np.float32)
            for i in range(inmaps):
                u, s, vt = np.linalg.svd(full[:, i, :].T, full_matrices=False)
                us[i] = (u[:, :r] * s[:r]).T
                vs[:, i, :] = vt[:r].T
            return (us.reshape((inmaps * r,) + kernel),
                    vs.reshape((outmaps, inmaps * r) + (1,) * len(kernel)))
        u, v = _factors(("U", "V"), make, fix_parameters)
        b = _bias(with_bias, (outmaps,), b_init, fix_parameters)
        y = F.depthwise_convolution(inp, u, None, base_axis, pad, stride, dilation, multiplier=r)
        return F.convolution(y, v, b, base_axis)


def cpd3_convolution(inp: Variable, outmaps: int, kernel: Sequence[int], r: int, pad=None,
                     stride=None, dilation=None, oik_init=None, b_init=None, base_axis: int = 1,
                     fix_parameters: bool = False, rng=None, with_bias: bool = True,
                     max_iter: int = 500, stopping_criterion: float = 1e-5,
                     lambda_reg: float = 0.0, name: str | None = None) -> Variable:
    """Convolution with a rank-``r`` CP-decomposed kernel (NNabla's ``PF.cpd3_convolution``)
    in scope ``cpd3_conv``: a 1x1 convolution with ``I`` ``(r, inmaps, 1, ...)``, a depthwise
    one with ``K`` ``(r, *kernel)`` (``pad``, ``stride``, ``dilation`` apply here), a 1x1 one
    with ``O`` ``(outmaps, r, 1, ...)`` and ``b``.  The factors start as :func:`cp_als` of the
    full ``(outmaps, inmaps, kernel size)`` weight from ``oik_init`` (``max_iter``,
    ``stopping_criterion``, ``lambda_reg``; ``rng`` seeds it).

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = PF.cpd3_convolution(sd.Variable((1, 3, 8, 8)), 6, (3, 3), 2, pad=(1, 1))
        ...     y.shape, [p.shape for p in sd.get_parameters().values()]
        ((1, 6, 8, 8), [(6, 2, 1, 1), (2, 3, 1, 1), (2, 3, 3), (6,)])
    """
    r = _rank(r, "cpd3_convolution")
    outmaps = count(outmaps, "cpd3_convolution", "outmaps")
    kernel = counts(kernel, "cpd3_convolution", "kernel", True)
    inmaps = inp.shape[checked_base_axis(base_axis, inp, "cpd3_convolution")]
    ones = (1,) * len(kernel)
    with pf_scope(name, "cpd3_conv"):
        def make():
            full = _full_weight(oik_init, (outmaps, inmaps) + kernel, inmaps, outmaps, kernel,
                                rng).reshape(outmaps, inmaps, math.prod(kernel))
            (o, i, k), scale = cp_als(full, r, max_iter, stopping_criterion, lambda_reg, rng)
            return ((o * scale).reshape((outmaps, r) + ones), i.T.reshape((r, inmaps) + ones),
                    k.T.reshape((r,) + kernel))
        o, i, k = _factors(("O", "I", "K"), make, fix_parameters)
        b = _bias(with_bias, (outmaps,), b_init, fix_parameters)
        y = F.convolution(inp, i, None, base_axis)
        y = F.depthwise_convolution(y, k, None, base_axis, pad, stride, dilation)
        return F.convolution(y, o, b, base_axis)


def cp_als(x: np.ndarray, rank: int, max_iter: int = 500, stopping_criterion: float = 1e-5,
           lambda_reg: float = 0.0, rng=None) -> tuple[list[np.ndarray], np.ndarray]:
    """Rank-``rank`` CP decomposition of ``x`` by alternating least squares (NNabla's
    ``cpd.ALS``): factors ``A_n`` ``(x.shape[n], rank)`` with unit-scaled columns and weights
    ``lmbda`` such that ``x ~ sum_r lmbda[r] * outer(A_0[:, r], A_1[:, r], ...)``.  It stops
    after ``max_iter`` sweeps or when the explained fraction of ``|x|^2`` changes by less than
    ``stopping_criterion`` (a negative one never stops early); ``lambda_reg`` regularises the
    solves; ``rng`` (default ``RandomState(313)``) draws the starting factors.

    Example:
        >>> import numpy as np
        >>> x = np.einsum("i,j,k->ijk", [1.0, 2.0], [3.0, 1.0, 0.5], [1.0, -1.0])
        >>> (a, b, c), lmbda = cp_als(x, 1)
        >>> bool(np.allclose(np.einsum("i,j,k->ijk", a[:, 0], b[:, 0], c[:, 0]) * lmbda, x))
        True
    """
    x = np.asarray(x, dtype=np.float64)
    rng = np.random.RandomState(313) if rng is None else rng
    n_modes = x.ndim
    factors = [None] + [rng.rand(x.shape[n], rank) for n in range(1, n_modes)]
    norm2 = float(np.sum(x ** 2))
    lmbda = np.ones(rank)
    explained = 0.0
    for it in range(max_iter):
        for n in range(n_modes):
            others = [m for m in range(n_modes) if m != n]
            gram = np.ones((rank, rank))
            for m in others:
                gram = gram * (factors[m].T @ factors[m])
            # x unfolded along n, times the Khatri-Rao product of the other factors
            letters = "abcdefghij"[:n_modes]
            spec = letters + "," + ",".join(letters[m] + "r" for m in others)
            rhs = np.einsum(spec + "->" + letters[n] + "r", x, *[factors[m] for m in others])
            a_n = rhs @ np.linalg.pinv(gram + np.eye(rank) * lambda_reg)
            if it == 0:
                lmbda = np.sqrt((a_n ** 2).sum(axis=0))
            else:
                lmbda = np.maximum(a_n.max(axis=0), 1.0)
            factors[n] = a_n / lmbda
        if stopping_criterion < 0:
            continue
        approx = np.einsum(",".join("abcdefghij"[m] + "r" for m in range(n_modes)) + ",r->"
                           + "abcdefghij"[:n_modes], *factors, lmbda)
        residual = norm2 + np.sum(approx ** 2) - 2 * np.sum(x * approx)
        previous, explained = explained, 1.0 - residual / norm2
        if it > 0 and abs(previous - explained) < stopping_criterion:
            break
    return [f.astype(np.float32) for f in factors], lmbda.astype(np.float32)
