"""Losses and metrics with CNTK's semantics (dense, e.g. one-hot, targets)."""

from __future__ import annotations

import torch

from ._registry import op
from ._util import norm_axis


def _dense_target(z, t, axis):
    """CNTK's rule: the target is dense (one-hot or soft), of the output's very shape (CNTK's
    ``Times`` refuses any other); returns the class axis."""
    a = norm_axis(axis, z.ndim)
    if tuple(t.shape) != tuple(z.shape):
        ids = tuple(t.shape) == tuple(z.shape[:a]) + (1,) + tuple(z.shape[a + 1:])
        hint = ("; it takes one-hot rows, not class ids (those go to softmax_cross_entropy and "
                "top_n_error)" if ids else "")
        raise ValueError(f"the target has shape {tuple(t.shape)}; a dense (one-hot) target of "
                         f"the output's shape {tuple(z.shape)} is needed{hint}")
    if t.dtype == torch.bool or t.is_complex():
        raise ValueError(f"the target has dtype {t.dtype}; a dense target holds numbers")
    return a


@op(2, category="loss", precision="float")
def cross_entropy_with_softmax(output_vector, target_vector, axis=-1):
    """``-sum(t * log softmax(z))`` along ``axis`` for a dense (one-hot or soft) target ``t`` of
    ``z``'s shape; the reduced axis is kept with size 1 (``(B, 1)`` for ``(B, C)`` inputs).
    Class ids go to :func:`softmax_cross_entropy`.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     z = sd.Variable.from_numpy_array([[0.0, 0.0]])
        ...     y = F.cross_entropy_with_softmax(z, sd.Variable.from_numpy_array([[0.0, 1.0]]))
        >>> np.round(y.d, 5)
        array([[0.69315]], dtype=float32)
    """
    a = _dense_target(output_vector, target_vector, axis)
    logp = torch.log_softmax(output_vector, a)
    return -torch.sum(target_vector.to(logp.dtype) * logp, dim=a, keepdim=True)


@op(2, category="metric", precision="float")
def classification_error(output_vector, target_vector, axis=-1, topN=1):
    """1 where the target's class (its argmax) is not among the ``topN`` highest outputs, else 0;
    the reduced axis is kept with size 1.  No gradient.  The target is dense (one-hot), of the
    output's shape.  A NaN output counts as higher than any number (as ``torch.topk`` orders
    it), so a row of NaN is an error.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     e = F.classification_error(sd.Variable.from_numpy_array([[0.2, 0.5, 0.3]]),
        ...                                sd.Variable.from_numpy_array([[0.0, 0.0, 1.0]]))
        >>> e.d
        array([[1.]], dtype=float32)
    """
    a = _dense_target(output_vector, target_vector, axis)
    z = output_vector.detach()
    target = torch.argmax(target_vector, dim=a, keepdim=True)
    score = torch.gather(z, a, target)
    # outputs above the target's: a NaN on either side counts (NaN <= x is false)
    better = z.shape[a] - (z <= score).sum(dim=a, keepdim=True)
    return (better >= topN).to(z.dtype if z.dtype.is_floating_point else torch.float32)
