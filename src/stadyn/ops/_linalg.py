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
    matrix is an error, unless ``rule="nnabla"``: NNabla 1.39 inverts it as its LU
    factorisation does (Eigen's partial pivoting, as LAPACK's), to infinities and NaN
    (``[[1, 2], [2, 4]]`` gives ``[[-inf, inf], [inf, -inf]]``).

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
    """The inverses of the batch ``x`` computed in Eigen's order, as NNabla 1.39's CPU kernel
    (``Map::inverse()``: an unblocked partial-pivoting LU, the first largest pivot, a zero
    pivot left in place; then ``P * I`` solved by the unit-lower factor and by the upper one,
    dividing by multiplying with the pivot's reciprocal).  A singular matrix (one whose pivot
    rounds to exactly zero, as ``[[1, 2, 3], [4, 5, 6], [7, 8, 9]]`` in float32 does) gives
    NNabla's infinities and NaN where LAPACK's LU would give a huge finite inverse."""
    a = x.clone()
    b, n, _ = a.shape
    rows = torch.arange(b, device=x.device)
    perm = torch.arange(n, device=x.device).repeat(b, 1)
    for k in range(n):
        column = a[:, k:, k].abs()
        nonzero = column.amax(dim=1) != 0
        pivot = torch.where(nonzero, column.argmax(dim=1) + k, k)
        row_k, row_p = a[rows, k].clone(), a[rows, pivot].clone()
        a[rows, k], a[rows, pivot] = row_p, row_k
        perm_k, perm_p = perm[rows, k].clone(), perm[rows, pivot].clone()
        perm[rows, k], perm[rows, pivot] = perm_p, perm_k
        if k < n - 1:
            scaled = a[:, k + 1:, k] / a[:, k, k:k + 1]
            a[:, k + 1:, k] = torch.where(nonzero[:, None], scaled, a[:, k + 1:, k])
            a[:, k + 1:, k + 1:] -= a[:, k + 1:, k:k + 1] * a[:, k:k + 1, k + 1:]
    eye = torch.eye(n, dtype=x.dtype, device=x.device).expand(b, n, n)
    r = eye[rows[:, None], perm]
    for i in range(n):
        for j in range(i):
            r[:, i] -= a[:, i, j:j + 1] * r[:, j]
    for i in reversed(range(n)):
        r[:, i] *= 1.0 / a[:, i, i:i + 1]
        for j in range(i):
            r[:, j] -= a[:, j, i:i + 1] * r[:, i]
    return r


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
