"""NNabla 1.39's masked and scattered writes and its confusion matrix: ``scatter_add``,
``bool_fill`` and ``confusion_matrix`` (checked by tests/compat's ``nnabla_functions_2026``
cases).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> d = sd.Variable.from_numpy_array(np.arange(4.0))
    >>> m = sd.Variable.from_numpy_array(np.array([1.0, 0.0, 0.0, 1.0]))
    >>> with sd.auto_forward():
    ...     y = F.bool_fill(d, m, -1.0)
    >>> y.d.tolist()
    [-1.0, 1.0, 2.0, -1.0]
"""

from __future__ import annotations

import torch

from ._registry import op
from ._util import norm_axis

_C = "indexing"


@op(3, category=_C)
def scatter_add(x0, indices, x1, axis=None):
    """``x0`` plus ``x1`` added at ``indices`` along ``axis`` (default 0): ``out[..., indices[i,
    j, ...], ...] += x1[i, j, ...]`` for every position of ``indices`` (NNabla's ``scatter_add``;
    ``indices`` may be smaller than ``x1``, which is then read at ``indices``' positions).
    Backward, ``x0`` gets the output gradient and ``x1`` the gradient at its positions.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x0 = sd.Variable.from_numpy_array(np.zeros(3))
        >>> ids = sd.Variable.from_numpy_array(np.array([2, 2, 0], np.int32))
        >>> x1 = sd.Variable.from_numpy_array(np.array([1.0, 2.0, 5.0]))
        >>> with sd.auto_forward():
        ...     y = F.scatter_add(x0, ids, x1)
        >>> y.d.tolist()
        [5.0, 0.0, 3.0]
    """
    dim = norm_axis(0 if axis is None else int(axis), x0.ndim)
    if indices.ndim != x0.ndim or x1.ndim != x0.ndim or any(
            i > s for i, s in zip(indices.shape, x1.shape)):
        raise ValueError(f"scatter_add: indices {tuple(indices.shape)} must have as many axes "
                         f"as x0 {tuple(x0.shape)} and x1 {tuple(x1.shape)}, and be no larger "
                         "than x1 on any axis")
    src = x1[tuple(slice(0, n) for n in indices.shape)]   # the part read (torch's backward
    return x0.scatter_add(dim, indices.long(), src.to(x0.dtype))   # wants src's own shape)


@op(2, category=_C)
def bool_fill(data, mask, value=0):
    """``data`` with ``value`` where ``mask`` (broadcast to ``data``'s shape) is nonzero
    (NNabla's ``bool_fill``); backward, ``data`` gets the gradient where ``mask`` is zero.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> d = sd.Variable.from_numpy_array(np.ones((2, 2)))
        >>> m = sd.Variable.from_numpy_array(np.array([[1.0], [0.0]]))
        >>> with sd.auto_forward():
        ...     y = F.bool_fill(d, m, 9.0)
        >>> y.d.tolist()
        [[9.0, 9.0], [1.0, 1.0]]
    """
    return data.masked_fill(torch.broadcast_to(mask != 0, data.shape), float(value))


@op(2, category=_C, sequence="drop")
def confusion_matrix(x, target, axis=None):
    """The ``C x C`` count of (target class, predicted class) pairs, int32 (NNabla's
    ``confusion_matrix``): the prediction is ``x``'s arg-max along ``axis`` (default: the
    last), ``target`` holds the class indices with size 1 on that axis.  No gradient.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]))
        >>> t = sd.Variable.from_numpy_array(np.array([[1], [1], [0]], np.int32))
        >>> with sd.auto_forward():
        ...     y = F.confusion_matrix(x, t)
        >>> y.d.tolist()
        [[0, 1], [1, 1]]
    """
    dim = norm_axis(x.ndim - 1 if axis is None else int(axis), x.ndim)
    classes = x.shape[dim]
    expected = tuple(x.shape[:dim]) + (1,) + tuple(x.shape[dim + 1:])
    if tuple(target.shape) != expected:
        raise ValueError(f"confusion_matrix: target {tuple(target.shape)} must be {expected} "
                         f"(x {tuple(x.shape)} with size 1 on axis {dim})")
    pairs = target.squeeze(dim).long() * classes + x.argmax(dim)
    counts = torch.zeros(classes * classes, dtype=torch.int32, device=x.device)
    counts = counts.index_add(0, pairs.reshape(-1),
                              torch.ones(pairs.numel(), dtype=torch.int32, device=x.device))
    return counts.reshape(classes, classes)
