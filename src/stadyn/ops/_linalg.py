"""Linear algebra over batches of matrices (NNabla's names): ``batch_inv``, ``batch_det``,
``batch_logdet``, ``matrix_diag``, ``matrix_diag_part``, and ``dot`` (NumPy's ``dot``).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     d = F.batch_det(sd.Variable.from_numpy_array([[[2.0, 1.0], [1.0, 3.0]]]))
    >>> np.round(d.d, 4)
    array([5.], dtype=float32)
"""

from __future__ import annotations

import functools
import os

import torch

from ._registry import op
from ._sequence_axis import dot_rule, matrix_axes_rule

_C = "linalg"


def _square_batch(name: str, x) -> None:
    if x.ndim != 3 or x.shape[1] != x.shape[2]:
        raise ValueError(f"{name}: expects a batch of square matrices (B, N, N), "
                         f"got shape {tuple(x.shape)}")


@op(1, category=_C, precision="float", sequence="drop")
def batch_inv(x, rule="torch"):
    """The inverse of each square matrix of the batch ``x`` (shape ``(B, N, N)``).  A singular
    matrix is an error, unless ``rule="nnabla"``: then each inverse is computed in the order
    NNabla 1.39's Eigen computes it (partial-pivoting LU, blocked above 16 x 16, and panel
    solves: the same float32 roundings), so a singular matrix gives NNabla's infinities and
    NaN (``[[1, 2], [2, 4]]`` gives ``[[-inf, inf], [inf, -inf]]``) and an ill-conditioned one
    NNabla's values.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.batch_inv(sd.Variable.from_numpy_array([[[2.0, 0.0], [0.0, 4.0]]]))
        >>> y.d
        array([[[0.5 , 0.  ],
                [0.  , 0.25]]], dtype=float32)
    """
    _square_batch("batch_inv", x)
    if rule not in ("torch", "nnabla"):
        raise ValueError(f"batch_inv: rule={rule!r}: 'torch' or 'nnabla'")
    if rule == "nnabla":
        return _EigenInverse.apply(x)
    return torch.linalg.inv(x)


def _eigen_lu_inverse(x: torch.Tensor) -> torch.Tensor:
    """The inverses of the batch ``x`` computed in Eigen 3.3.5's order, as NNabla 1.39's CPU
    kernel (``Map::inverse()`` of a row-major matrix: ``PartialPivLU``, then ``P * I`` solved
    by the unit-lower factor and by the upper one; SSE, no fused multiply-add), so that a
    singular or ill-conditioned matrix gives NNabla's values, infinities and NaN (a pivot that
    rounds to exactly zero, as ``[[1, 2, 3], [4, 5, 6], [7, 8, 9]]``'s in float32, is left in
    place), where LAPACK's LU would give other rounding or a huge finite inverse.

    The LU (:func:`_eigen_lu`) is unblocked up to 16 columns and blocked above (Eigen's
    ``blocked_lu``); the two solves (:func:`_eigen_solve_lower_block`, :func:`_eigen_solve_upper`)
    go in panels of 8 (Eigen's ``SmallPanelWidth`` for floats over SSE): the panels already
    solved are subtracted as one sum, then the panel's own columns one by one."""
    a = x.clone()
    b, n, _ = a.shape
    perm = torch.arange(n, device=x.device).repeat(b, 1)
    _eigen_lu(a, perm, 0, n, n, 256)
    eye = torch.eye(n, dtype=x.dtype, device=x.device).expand(b, n, n)
    rows = torch.arange(b, device=x.device)
    r = eye[rows[:, None], perm].clone()
    _eigen_solve_lower_block(a, r)
    _eigen_solve_upper(a, r)
    return r


_PANEL = 8      # Eigen's SmallPanelWidth for floats (max of the GEBP kernel's mr 8, nr 4)


def _ordered_sum(lhs: torch.Tensor, rhs: torch.Tensor, split: torch.Tensor | None = None):
    """``lhs @ rhs`` (batched) summed as Eigen's GEBP kernel without FMA sums it: each element
    in order over the inner axis, one rounding a product and an addition; where ``split`` (a
    mask of the result's elements) is set, as the kernel's rows left over from its packets of
    4 sum them: four partial sums (inner indices by their remainder mod 4, up to the last
    multiple of 4), added as ``(c0 + c1) + (c2 + c3)``, then the rest in order."""
    depth = lhs.shape[2]
    # One product at a time (memory of a few results, not ``depth`` of them): ``acc`` in order,
    # and, where split, the four partial sums up to ``whole``, then their total and the rest.
    whole = depth // 4 * 4 if split is not None and depth >= 4 else 0
    acc = None
    parts: list[torch.Tensor] = []
    other = None
    for p in range(depth):
        term = lhs[:, :, p:p + 1] * rhs[:, p:p + 1, :]
        if p < whole:
            if p < 4:
                parts.append(term.clone())
            else:
                parts[p % 4].add_(term)
        elif whole:
            if other is None:
                other = (parts[0] + parts[1]) + (parts[2] + parts[3])
                parts.clear()
            other.add_(term)
        if acc is None:
            acc = term
        else:
            acc.add_(term)
    if not whole:
        return acc
    if other is None:
        other = (parts[0] + parts[1]) + (parts[2] + parts[3])
    return torch.where(split, other, acc)


def _left_over(rows: int, cols: int, gebp_rows_are_cols: bool, device) -> torch.Tensor | None:
    """The elements of a ``rows`` x ``cols`` result that Eigen's GEBP sums in four parts: its
    rows left over from packets of 4, in its full groups of 4 columns (None: none).  The kernel
    sees the result column-major: a row-major result's columns are its rows
    (``gebp_rows_are_cols``)."""
    g_rows, g_cols = (cols, rows) if gebp_rows_are_cols else (rows, cols)
    if g_rows % 4 == 0 or g_cols < 4:
        return None
    mask = torch.zeros(g_rows, g_cols, dtype=torch.bool, device=device)
    mask[g_rows // 4 * 4:, :g_cols // 4 * 4] = True
    return mask.T if gebp_rows_are_cols else mask


def _eigen_lu(a: torch.Tensor, perm: torch.Tensor, c: int, rows: int, cols: int,
              max_block: int) -> None:
    """Eigen's ``partial_lu_impl::blocked_lu`` on the block of ``a`` from ``(c, c)``, ``rows``
    by ``cols``, in place; row exchanges move whole rows of ``a`` and ``perm`` (the columns
    outside the block are not read before Eigen applies them)."""
    size = min(rows, cols)
    if size <= 16:
        _eigen_unblocked_lu(a, perm, c, rows, cols)
        return
    block = min(max((size // 8) // 16 * 16, 8), max_block)
    for k in range(0, size, block):
        bs = min(size - k, block)
        trows, tsize = rows - k - bs, size - k - bs
        _eigen_lu(a, perm, c + k, trows + bs, bs, 16)
        if trows:
            top, left = c + k, c + k + bs
            a12 = a[:, top:left, left:left + tsize]
            _eigen_solve_lower_block(a[:, top:left, top:left], a12)
            # (a product this small is Eigen's coefficient-based one: every sum in order)
            split = (_left_over(trows, tsize, True, a.device)
                     if trows + tsize + bs >= 20 else None)
            a[:, left:c + rows, left:left + tsize] -= _ordered_sum(
                a[:, left:c + rows, top:left], a12, split)


def _eigen_unblocked_lu(a: torch.Tensor, perm: torch.Tensor, c: int, rows: int,
                        cols: int) -> None:
    """Eigen's ``unblocked_lu``: the first largest pivot of each column, rows exchanged, the
    column divided by it (a zero pivot left in place), then the rank-1 update of the block."""
    b = a.shape[0]
    index = torch.arange(b, device=a.device)
    end_r, end_c = c + rows, c + cols
    for k in range(c, c + min(rows, cols)):
        column = a[:, k:end_r, k].abs()
        nonzero = column.amax(dim=1) != 0
        pivot = torch.where(nonzero, column.argmax(dim=1) + k, k)
        row_k, row_p = a[index, k].clone(), a[index, pivot].clone()
        a[index, k], a[index, pivot] = row_p, row_k
        perm_k, perm_p = perm[index, k].clone(), perm[index, pivot].clone()
        perm[index, k], perm[index, pivot] = perm_p, perm_k
        if k < end_r - 1:
            scaled = a[:, k + 1:end_r, k] / a[:, k, k:k + 1]
            a[:, k + 1:end_r, k] = torch.where(nonzero[:, None], scaled, a[:, k + 1:end_r, k])
            a[:, k + 1:end_r, k + 1:end_c] -= a[:, k + 1:end_r, k:k + 1] * a[:, k:k + 1,
                                                                             k + 1:end_c]


@functools.lru_cache(maxsize=None)
def _l1_cache_bytes() -> int:
    """The first-level data cache's size, which Eigen reads from the processor to choose its
    blocking (32 KiB, Eigen's default, where Linux does not say)."""
    try:
        base = "/sys/devices/system/cpu/cpu0/cache"
        for entry in sorted(os.listdir(base)):
            with open(os.path.join(base, entry, "level")) as f:
                level = f.read().strip()
            with open(os.path.join(base, entry, "type")) as f:
                kind = f.read().strip()
            if level == "1" and kind in ("Data", "Unified"):
                with open(os.path.join(base, entry, "size")) as f:
                    size = f.read().strip().upper()
                scale = {"K": 1024, "M": 1024 * 1024}.get(size[-1:], 1)
                return int(size.rstrip("KM")) * scale
    except (OSError, ValueError):
        pass
    return 32 * 1024


def _solve_depth(size: int, rhs: int) -> int:
    """How many rows Eigen 3.3.5's triangular solve takes at a time (``kc`` of
    ``computeProductBlockingSizes`` with the solve's ``KcFactor`` 4, for floats over SSE:
    ``mr`` 8, ``nr`` 4): all of them up to a bound set by the L1 cache (168 rows at 32 KiB,
    248 at 48 KiB), above it blocks chosen to leave the last as large as possible.  So NNabla's
    own inverses of matrices that large depend on the processor it runs on."""
    if max(size, rhs) < 48:
        return size
    limit = max(((_l1_cache_bytes() - 8 * 4 * 4) // (4 * (8 * 4 + 4 * 4))) & ~7, 1)
    if size <= limit:
        return size
    if size % limit == 0:
        return limit
    return limit - 8 * ((limit - 1 - size % limit) // (8 * (size // limit + 1)))


def _eigen_solve_lower_block(lower: torch.Tensor, x: torch.Tensor) -> None:
    """``x = L^-1 x`` in place for the unit-lower part of ``lower`` (Eigen's triangular solve
    of a row-major right-hand side), in blocks of :func:`_solve_depth` rows from the top: in a
    block, panels of 8 rows, each first less the sum over the block's rows solved before it,
    then row by row less each earlier row of its panel; after a block, the rows below it less
    the sum over the block."""
    n, cols = lower.shape[1], x.shape[2]
    depth = _solve_depth(n, cols)
    for k2 in range(0, n, depth):
        end = min(n, k2 + depth)
        for p0 in range(k2, end, _PANEL):
            p1 = min(p0 + _PANEL, end)
            if p0 > k2:
                x[:, p0:p1] -= _ordered_sum(lower[:, p0:p1, k2:p0], x[:, k2:p0],
                                            _left_over(p1 - p0, cols, True, x.device))
            for j in range(p0 + 1, p1):
                for m in range(p0, j):
                    x[:, j] -= lower[:, j, m:m + 1] * x[:, m]
        if end < n:
            x[:, end:] -= _ordered_sum(lower[:, end:, k2:end], x[:, k2:end],
                                       _left_over(n - end, cols, True, x.device))


def _eigen_solve_upper(upper: torch.Tensor, x: torch.Tensor) -> None:
    """``x = U^-1 x`` in place (Eigen's order), in blocks of :func:`_solve_depth` rows from the
    bottom: in a block, panels of 8 rows from its bottom (its top one the shorter), each first
    less the sum over the block's rows solved below it, then from its last row up, each less
    the later rows of its panel in order and times its pivot's reciprocal; after a block, the
    rows above it less the sum over the block."""
    n, cols = upper.shape[1], x.shape[2]
    depth = _solve_depth(n, cols)
    k2 = n
    while k2 > 0:
        start = k2 - min(k2, depth)
        width = k2 - start
        for j2 in range(width - (width % _PANEL or _PANEL), -1, -_PANEL):
            p0, p1 = start + j2, min(start + j2 + _PANEL, k2)
            if p1 < k2:
                x[:, p0:p1] -= _ordered_sum(upper[:, p0:p1, p1:k2], x[:, p1:k2],
                                            _left_over(p1 - p0, cols, True, x.device))
            for j in range(p1 - 1, p0 - 1, -1):
                for m in range(j + 1, p1):
                    x[:, j] -= upper[:, j, m:m + 1] * x[:, m]
                x[:, j] *= 1.0 / upper[:, j, j:j + 1]
        if start > 0:
            x[:, :start] -= _ordered_sum(upper[:, :start, start:k2], x[:, start:k2],
                                         _left_over(start, cols, True, x.device))
        k2 = start


class _EigenInverse(torch.autograd.Function):
    """NNabla's ``BatchInv``: Eigen's inverse forward, ``-inv^T @ dy @ inv^T`` backward."""

    @staticmethod
    def forward(ctx, x):
        y = _eigen_lu_inverse(x.detach())
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        yt = y.transpose(1, 2)
        return -yt @ dy @ yt


@op(1, category=_C, precision="float", sequence="drop")
def batch_det(x):
    """The determinant of each square matrix of the batch ``x`` (shape ``(B,)``).  Example:
    ``F.batch_det(x)``."""
    _square_batch("batch_det", x)
    return torch.linalg.det(x)


@op(1, category=_C, precision="float", sequence="drop")
def batch_logdet(x):
    """``log(|det|)`` of each square matrix of the batch ``x`` (shape ``(B,)``).  Example:
    ``F.batch_logdet(x)``."""
    _square_batch("batch_logdet", x)
    return torch.linalg.slogdet(x)[1]


@op(1, category=_C)
def matrix_diag(x):
    """Square matrices with the last axis of ``x`` on their diagonals (shape ``x.shape +
    (x.shape[-1],)``).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.matrix_diag(sd.Variable.from_numpy_array([1.0, 2.0]))
        >>> y.d
        array([[1., 0.],
               [0., 2.]], dtype=float32)
    """
    return torch.diag_embed(x)


@op(1, category=_C, sequence=matrix_axes_rule)
def matrix_diag_part(x):
    """The diagonals of the matrices on the last two axes of ``x`` (which must be equal).
    Example: ``F.matrix_diag_part(x)``."""
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_diag_part: the last two axes must be equal, got shape "
                         f"{tuple(x.shape)}")
    return torch.diagonal(x, dim1=-2, dim2=-1)


@op(2, category=_C, precision="half", sequence=dot_rule)
def dot(a, b):
    """NumPy's ``dot``: the inner product of two vectors, the matrix product of two matrices,
    a product with a 0-d array, or the sum product over the last axis of ``a`` and the
    second-to-last axis of ``b`` (the last if ``b`` is a vector).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.dot(sd.Variable.from_numpy_array([[1.0, 2.0]]),
        ...               sd.Variable.from_numpy_array([[3.0], [4.0]]))
        >>> y.d
        array([[11.]], dtype=float32)
    """
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    axis_b = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[axis_b]:
        raise ValueError(f"dot: shapes {tuple(a.shape)} and {tuple(b.shape)} do not align "
                         f"(axis -1 of a, axis {axis_b} of b)")
    return torch.tensordot(a, b, dims=([a.ndim - 1], [axis_b]))
