"""NNabla's smaller tensor functions no other op module holds: ``bc_add2`` (``add2`` for a
broadcast right operand), ``prune`` (magnitude pruning with a straight-through gradient) and
``batch_cholesky``, as NNabla 1.39 computes them.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([0.1, -2.0, 0.5, 3.0]))
    >>> with sd.auto_forward():
    ...     y = F.prune(x, rate=0.5)
    >>> y.d.tolist()
    [0.0, -2.0, 0.5, 3.0]
"""

from __future__ import annotations

import torch

from ._registry import op

_C = "misc"


@op(2, category="arithmetic")
def bc_add2(x0, x1, inplace=False):
    """``x0 + x1`` with ``x1`` broadcast to ``x0`` (NNabla's internal ``bc_add2``, the forward
    of a broadcast ``add2``; ``inplace`` is obsolete and ignored, as in NNabla).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.bc_add2(sd.Variable.from_numpy_array(np.zeros((2, 2))),
        ...                   sd.Variable.from_numpy_array(np.array([[1.0, 2.0]])))
        >>> y.d.tolist()
        [[1.0, 2.0], [1.0, 2.0]]
    """
    if torch.broadcast_shapes(x0.shape, x1.shape) != x0.shape:
        raise ValueError(f"bc_add2: x1 {tuple(x1.shape)} must broadcast to x0 "
                         f"{tuple(x0.shape)}")
    return x0 + x1


@op(1, category=_C)
def prune(x, rate=0.9):
    """``x`` with its elements of magnitude below the threshold set to zero: the threshold is
    the ``int((x.size - 1) * rate)``-th smallest magnitude (``rate=1``: every element goes).
    Backward: the gradient passes unchanged (straight through), as NNabla's ``prune``.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([1.0, -3.0, 2.0]), need_grad=True)
        >>> with sd.auto_forward():
        ...     y = F.prune(x, rate=0.5)
        >>> y.backward(np.ones(3, np.float32))
        >>> y.d.tolist(), x.g.tolist()
        ([0.0, -3.0, 2.0], [1.0, 1.0, 1.0])
    """
    rate = float(rate)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"prune: rate {rate} must be in [0, 1]")
    magnitude = x.detach().abs()
    index = int((x.numel() - 1) * rate)
    threshold = magnitude.reshape(-1).sort().values[index] + (1.0 if rate == 1.0 else 0.0)
    kept = torch.where(magnitude < threshold, torch.zeros_like(x), x)
    return x + (kept - x).detach()


@op(1, category="linalg")
def batch_cholesky(x, upper=False):
    """The Cholesky factors of a batch of symmetric positive definite matrices ``(B, N, N)``:
    lower triangular ``L`` with ``L L^T = x`` (``upper``: ``U`` with ``U^T U = x``).  As NNabla,
    the input is not checked for symmetry (only its lower triangle is read); the gradient is a
    symmetric matrix.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> a = sd.Variable.from_numpy_array(np.array([[[4.0, 2.0], [2.0, 5.0]]]))
        >>> with sd.auto_forward():
        ...     y = F.batch_cholesky(a)
        >>> y.d.tolist()
        [[[2.0, 0.0], [1.0, 2.0]]]
    """
    if x.ndim != 3 or x.shape[1] != x.shape[2]:
        raise ValueError(f"batch_cholesky: the input {tuple(x.shape)} must be a batch of "
                         "square matrices (B, N, N)")
    return torch.linalg.cholesky(x, upper=bool(upper))
