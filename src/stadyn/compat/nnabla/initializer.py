"""``nnabla.initializer`` on Stadyn."""

import numpy as _np

from ... import _random
from ...parametric import initializers as _I
from ...parametric.initializers import *  # noqa: F401,F403
from ...parametric.initializers import __all__  # noqa: F401


def calc_uniform_lim_glorot(inmaps, outmaps, kernel=(1, 1)):
    """NNabla's Glorot uniform range ``(-lim, lim)``, ``lim = sqrt(6 / (prod(kernel) * (inmaps
    + outmaps)))``: a pair, as ``UniformInitializer`` takes it (Stadyn's own function returns
    ``lim``).

    Example:
        >>> import stadyn.compat.nnabla.initializer as I
        >>> [round(v, 6) for v in I.calc_uniform_lim_glorot(1, 64, (3, 3))]
        [-0.101274, 0.101274]
    """
    lim = _I.calc_uniform_lim_glorot(inmaps, outmaps, kernel)
    return -lim, lim


__all__ = list(__all__) + ["BaseInitializer", "RangeInitializer",
                           "OrthogonalInitializer", "WeightNormalizationScaleInitializer"]

BaseInitializer = _I.Initializer   # NNabla's name of the base class (``__call__(shape)``)


class UniformIntInitializer(_I.UniformIntInitializer):
    """Uniform integers on ``[low, high)`` as NNabla 1.39 draws them: NumPy's ``randint`` of
    ``rng``, int64 (Stadyn's own initializer gives int32).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla.initializer as I
        >>> a = I.UniformIntInitializer((0, 7), rng=np.random.RandomState(5))((3,))
        >>> a.dtype, a.tolist()
        (dtype('int64'), [3, 6, 5])
    """

    def __call__(self, shape):
        return super().__call__(shape).astype(_np.int64)


class RangeInitializer(BaseInitializer):
    """``start + step * i`` along the last axis, the same for every leading index (NNabla's
    ``RangeInitializer``; integer ``start`` and ``step`` give integers, as NNabla's).

    Example:
        >>> import stadyn.compat.nnabla.initializer as I
        >>> I.RangeInitializer(1, 0.5)((2, 3)).tolist()
        [[1.0, 1.5, 2.0], [1.0, 1.5, 2.0]]
    """

    def __init__(self, start=0, step=1):
        self.start = start
        self.step = step

    def __call__(self, shape):
        row = self.start + _np.arange(shape[-1]) * self.step
        return _np.broadcast_to(row, tuple(shape)).copy()


class OrthogonalInitializer(BaseInitializer):
    """An orthogonal matrix times ``gain`` (Saxe et al.; NNabla's ``OrthogonalInitializer``):
    standard normal draws of shape ``(shape[0], prod(shape[1:]))`` from ``rng`` (default:
    Stadyn's seeded generator), and of their reduced SVD ``u, s, v`` the factor of that shape,
    float32.  The same ``rng`` state gives NNabla's values.

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla.initializer as I
        >>> w = I.OrthogonalInitializer(2.0, rng=np.random.RandomState(1))((3, 4))
        >>> np.allclose(w @ w.T, 4.0 * np.eye(3), atol=1e-5)
        True
    """

    def __init__(self, gain=1.0, rng=None):
        self.gain = gain
        self.rng = rng

    def __call__(self, shape):
        shape = tuple(shape)
        flat = (shape[0], int(_np.prod(shape[1:])))
        rng = _random.prng if self.rng is None else self.rng
        draws = rng.normal(0.0, 1.0, flat)
        u, _, v = _np.linalg.svd(draws, full_matrices=False)
        q = u if u.shape == flat else v
        return (q.reshape(shape) * self.gain).astype(_np.float32)


class WeightNormalizationScaleInitializer(BaseInitializer):
    """The L2 norm of each slice of ``w`` along ``dim`` (``sqrt(sum w^2 + eps)`` over the other
    axes; NNabla's ``WeightNormalizationScaleInitializer``, the initial ``g`` of weight
    normalisation, which keeps the weights' magnitude).  ``w``: a Variable or array; its value
    is read when the initializer is called.

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla.initializer as I
        >>> w = np.array([[3.0, 4.0], [0.0, 1.0]], np.float32)
        >>> I.WeightNormalizationScaleInitializer(w, dim=0)((2,)).tolist()
        [5.0, 1.0]
    """

    def __init__(self, w, dim=0, eps=1e-12):
        self.w = w
        self.dim = dim
        self.eps = eps

    def __call__(self, shape):
        w = _np.asarray(getattr(self.w, "d", self.w), dtype=_np.float32)
        axes = tuple(a for a in range(w.ndim) if a != self.dim % w.ndim)
        return _np.sqrt(_np.sum(w ** 2, axis=axes) + self.eps).astype(_np.float32)
