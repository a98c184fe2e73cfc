"""``cntk.initializer``: CNTK's parameter initialisers (Stadyn's, which take CNTK's fan-in and
fan-out rules), ``bilinear`` and ``initializer_with_rank``.

For a parameter made directly (``C.parameter(shape, init=...)``) the fan-out is the last axis
and the fan-in the product of the others, as in CNTK; layers give their own (a convolution's
filter counts in both).  The values are CNTK 2.7's, to the bit (the same seeds, CNTK's
``mt19937_64`` and, for the normal kinds, Boost's ziggurat: ``stadyn._mt19937``).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> w = C.parameter((400, 300), init=C.initializer.he_uniform()).value
    >>> bool(np.abs(w).max() <= np.sqrt(6 / 400))
    True
"""

from ...layers import (CNTKInitializer, bilinear, glorot_normal, glorot_uniform, he_normal,
                       he_uniform, normal, truncated_normal, uniform, xavier)
from .ops import SentinelValueForAutoSelectRandomSeed

DefaultParamInitScale = 1
SentinelValueForInferParamInitRank = 2147483647


def initializer_with_rank(initializer, output_rank=None, filter_rank=None):
    """``initializer`` with the given output and filter ranks (how many trailing axes are the
    output's, how many are a filter's): they set the fans of a parameter made with it.

    Example:
        >>> init = initializer_with_rank(he_uniform(), output_rank=1)
        >>> init.output_rank
        1
    """
    if not isinstance(initializer, CNTKInitializer):
        raise TypeError("initializer_with_rank: give an initializer from cntk.initializer")
    out = CNTKInitializer(initializer.kind, initializer.scale, initializer.mode,
                          initializer.gain, initializer.seed)
    out.output_rank = output_rank
    out.filter_rank = filter_rank
    return out


__all__ = ["glorot_uniform", "glorot_normal", "xavier", "he_uniform", "he_normal", "uniform",
           "normal", "truncated_normal", "bilinear", "initializer_with_rank",
           "DefaultParamInitScale", "SentinelValueForAutoSelectRandomSeed",
           "SentinelValueForInferParamInitRank"]
