"""The 1-bit value CNTK 2.7's netopt trains binarised convolutions with (its ``Multibit``
user function at one bit): each element ``mean(|v|) * sign(v)`` -- the mean over a sample's
elements (a parameter's: all of them), ``sign(0)`` taken as -1 -- with the straight-through
gradient ``g * (|v| <= 1)``."""

from __future__ import annotations

from ... import ops as _ops

__all__ = ["binarized"]


def binarized(v):
    """``v`` binarised to one bit per element, scaled by the mean of its absolute values;
    the gradient passes where ``|v| <= 1``.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(4, needs_gradient=True)
        >>> y = binarized(x)
        >>> data = np.array([[-3.0, 0.0, 0.5, 0.5]], np.float32)
        >>> y.eval({x: data}).tolist()
        [[-1.0, -1.0, 1.0, 1.0]]
        >>> y.grad({x: data}).tolist()
        [[0.0, 1.0, 1.0, 1.0]]
    """
    magnitude = _ops.reduce_mean(_ops.abs(v), axis=_ops.Axis.all_static_axes())
    signs = _ops.element_select(_ops.greater(v, 0), 1.0, -1.0)
    passes = _ops.stop_gradient(_ops.less_equal(_ops.abs(v), 1.0))
    through = _ops.element_times(v, passes)
    return _ops.stop_gradient(_ops.element_times(magnitude, signs) - through) + through
