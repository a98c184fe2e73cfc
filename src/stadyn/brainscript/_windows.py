"""The locally-connected convolution (``sharing = false``) of the raw ``Convolution`` node of
:class:`~._stadyn_library.StadynLibrary`, on CNTK's window geometry
(:func:`stadyn.cntk_semantics.window_edges`, ConvolveGeometry of CNTK's Source/Math).
"""

from __future__ import annotations

from .. import functions as F
from ..cntk_semantics import padded
from ..graph import Variable

__all__ = ["locally_connected"]


def locally_connected(x: Variable, weight: Variable, strides: tuple[int, int],
                      edges) -> Variable:
    """CNTK's ``Convolution`` with ``sharing = false`` over the last two axes of ``x``
    (``(N, C, H, W)``): every output position has its own kernel.  ``weight`` holds them as
    CNTK's engines read the weight's values whatever its shape: kernel after kernel, each
    ``W`` fastest, then ``H``, then ``C``, the kernels ordered output column fastest, then row,
    then map -- that is ``(maps, out H, out W, C, kH, kW)``.  ``edges`` are
    :func:`~stadyn.cntk_semantics.window_edges` of the two axes.

    Example:
        >>> import stadyn as sd
        >>> locally_connected(sd.Variable((2, 3, 5, 5)), sd.Variable((4, 5, 5, 3, 3, 3)),
        ...                   (1, 1), [(1, 1), (1, 1)]).shape
        (2, 4, 5, 5)
    """
    x = padded(x, edges)
    maps, oh, ow, c, kh, kw = weight.shape
    sh, sw = strides
    patches = [F.slice(x, [None, None, i, j], [None, None, i + (oh - 1) * sh + 1,
                                                j + (ow - 1) * sw + 1], [1, 1, sh, sw])
               for i in range(kh) for j in range(kw)]
    windows = F.stack(*patches, axis=2)                       # (N, C, kH * kW, oh, ow)
    kernels = F.reshape(weight, (maps, oh, ow, c, kh * kw))
    return F.einsum(windows, kernels, equation="nckyx,myxck->nmyx")
