"""CNTK's ``CosDistance`` (CosDistanceNode, LinearAlgebraNodes.h:1417-1520; CNTK 2.7's
``C.cosine_distance``, BrainScript's ``CosDistance``, a model file's ``CosDistance`` node):
the cosine similarity of two samples, computed as CNTK computes it.
"""

from __future__ import annotations

import numpy as np

from .. import functions as F
from ..graph import Variable

__all__ = ["cos_distance", "cos_distance_of", "inverse_norm"]

#: CNTK's ``EPS_IN_INVERSE`` (CommonMatrix.h:33): ``AssignElementInverseOf`` gives 1/1e-30
#: for a value in [0, 1e-30) (CPUMatrixImpl.h:2213-2232)
EPS_IN_INVERSE = float(np.float32(1e-30))


def cos_distance(a: Variable, b: Variable, axes: tuple) -> Variable:
    """CNTK's cosine "distance" (a similarity) of ``a`` and ``b`` over ``axes``: the dot
    product times ``a``'s inverse norm, times ``b``'s (CosDistanceNode::ForwardProp,
    LinearAlgebraNodes.h:1453-1467, in that order), each inverse norm ``1 / max(|v|, 1e-30)``
    as ``AssignElementInverseOf`` clamps it: a zero vector gives 0 (not 0/0), a NaN stays NaN.
    Its gradient is autograd's of that, which at a zero vector is NaN for the zero vector's
    own gradient (the square root's at 0) and 0 for the other's, as CNTK's
    ``CosDistanceNode::BackpropTo`` gives (``0 * inf``, inf the inverse norm squared).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.cntk_semantics import cos_distance
        >>> a = sd.Variable.from_numpy_array(np.array([[1., 2.], [0., 0.]], np.float32))
        >>> b = sd.Variable.from_numpy_array(np.array([[2., 4.], [1., 1.]], np.float32))
        >>> out = cos_distance(a, b, (1,))
        >>> out.forward(); np.round(out.d, 6).tolist()
        [1.0, 0.0]
    """
    dot = F.sum(F.mul2(a, b), axis=axes, keepdims=False)
    return cos_distance_of(dot, inverse_norm(a, axes), inverse_norm(b, axes))


def cos_distance_of(dot: Variable, inverse_a: Variable, inverse_b: Variable) -> Variable:
    """CNTK's cosine "distance" from its parts, in the order CosDistanceNode::ForwardProp
    multiplies them (LinearAlgebraNodes.h:1453-1467): the dot product times the first
    operand's inverse norm, then times the second's (:func:`inverse_norm`).  The one
    declaration of that order, for :func:`cos_distance`, ``C.cosine_distance`` (whose
    operands may differ in their axes) and BrainScript's ``CosDistance`` (which sums a
    sample its own way); the order decides the float32 rounding, and which of ``0 * inf``
    and ``inf * 0`` a zero vector's gradient meets.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.cntk_semantics import cos_distance_of
        >>> dot, ia, ib = (sd.Variable.from_numpy_array(np.array([v], np.float32))
        ...                for v in (10.0, 0.2, 0.5))
        >>> out = cos_distance_of(dot, ia, ib)
        >>> out.forward(); out.d.tolist()
        [1.0]
    """
    return F.mul2(F.mul2(dot, inverse_a), inverse_b)


def inverse_norm(v: Variable, axes: tuple, squares: bool = False) -> Variable:
    """``1 / max(|v|, 1e-30)``, the norm over ``axes``: CNTK's inverse norm
    (``AssignVectorNorm2Of`` then ``AssignElementInverseOf``, CPUMatrixImpl.h:2213-2232), for
    a cosine whose operands have different axes (one without the batch axis), as
    ``C.cosine_distance`` builds it: ``(dot * inverse_norm(a)) * inverse_norm(b)``.
    ``squares``: ``v`` is already the sum of the squares (``axes`` then unused).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.cntk_semantics import inverse_norm
        >>> v = sd.Variable.from_numpy_array(np.array([[3., 4.], [0., 0.]], np.float32))
        >>> out = inverse_norm(v, (1,))
        >>> out.forward(); out.d.tolist()
        [0.20000000298023224, 1.0000000150474662e+30]
    """
    norm = F.sqrt(v if squares else F.sum(F.mul2(v, v), axis=axes, keepdims=False))
    return F.r_div_scalar(F.maximum_scalar(norm, EPS_IN_INVERSE), 1.0)
