"""``nnabla.initializer`` on Stadyn."""

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
