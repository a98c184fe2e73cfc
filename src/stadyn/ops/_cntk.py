"""Losses and metrics with CNTK's semantics (dense, e.g. one-hot, targets)."""

from __future__ import annotations

import torch

from ._registry import op
from ._util import norm_axis


@op(2, category="loss", precision="float")
def cross_entropy_with_softmax(output_vector, target_vector, axis=-1):
    """``-sum(t * log softmax(z))`` along ``axis`` for a dense (one-hot or soft) target ``t``;
    the reduced axis is kept with size 1 (``(B, 1)`` for ``(B, C)`` inputs).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     z = sd.Variable.from_numpy_array([[0.0, 0.0]])
        ...     y = F.cross_entropy_with_softmax(z, sd.Variable.from_numpy_array([[0.0, 1.0]]))
        >>> np.round(y.d, 5)
        array([[0.69315]], dtype=float32)
    """
    a = norm_axis(axis, output_vector.ndim)
    logp = torch.log_softmax(output_vector, a)
    return -torch.sum(target_vector.to(logp.dtype) * logp, dim=a, keepdim=True)


@op(2, category="metric", precision="float")
def classification_error(output_vector, target_vector, axis=-1, topN=1):
    """1 where the target's class (its argmax) is not among the ``topN`` highest outputs, else 0;
    the reduced axis is kept with size 1.  No gradient.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     e = F.classification_error(sd.Variable.from_numpy_array([[0.2, 0.5, 0.3]]),
        ...                                sd.Variable.from_numpy_array([[0.0, 0.0, 1.0]]))
        >>> e.d
        array([[1.]], dtype=float32)
    """
    a = norm_axis(axis, output_vector.ndim)
    z = output_vector.detach()
    target = torch.argmax(target_vector, dim=a, keepdim=True)
    score = torch.gather(z, a, target)
    better = (z > score).sum(dim=a, keepdim=True)
    return (better >= topN).to(z.dtype if z.dtype.is_floating_point else torch.float32)
