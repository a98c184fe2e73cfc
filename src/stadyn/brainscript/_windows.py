"""CNTK's window geometry for the raw ``Pooling`` and ``Convolution`` nodes of
:class:`~._stadyn_library.StadynLibrary` (ConvolveGeometry of CNTK's Source/Math): where each
axis's windows start and end around the input (auto-padding, explicit ``lowerPad``/``upperPad``,
``ceilOutDim``), and the locally-connected convolution (``sharing = false``) on it.
"""

from __future__ import annotations

from .. import functions as F
from .._errors import ConfigError
from ..graph import Variable

__all__ = ["window_edges", "crop_to_edges", "locally_connected"]


def window_edges(what: str, size: int, k: int, s: int, auto: bool, lo: int, hi: int,
                 ceil: bool = False) -> tuple[int, int]:
    """One axis of CNTK's window geometry (ConvolveGeometry: ComputeOutputShape and the
    reference engine's first window): how far the windows reach ``(before, after)`` the input,
    a negative value being positions they leave out.  Auto-padding centres the windows as
    CNTK does (C++'s division rounding toward zero where ``ceilOutDim`` makes the centres'
    span longer than the axis); explicit pads start the first window ``lo`` before the
    input."""
    if k > size:
        raise ConfigError(f"{what}: the window ({k}) is longer than the input ({size}) on an "
                          "axis (CNTK: kernel dim <= input dim)")
    padded = size + (k - 1 if auto else lo + hi)
    whole, rest = divmod(padded - k, s)
    out = whole + 1 + (1 if ceil and rest else 0)
    if not auto and (lo or hi) and (out - 1) * s + k != padded:
        raise ConfigError(f"{what}: lowerPad {lo} and upperPad {hi} with a window of {k} every "
                          f"{s} leave part of the padded axis ({padded}) uncovered; CNTK "
                          "requires the windows to fill it exactly")
    if auto:
        extra = size - (out - 1) * s - 1
        before = (k - 1) // 2 - (extra // 2 if extra >= 0 else -(-extra // 2))
    else:
        before = lo
    return before, (out - 1) * s + k - size - before


def crop_to_edges(x: Variable, edges) -> tuple[Variable, tuple[int, ...]]:
    """``x`` without the positions a negative edge leaves out of its trailing ``len(edges)``
    axes, and the padding widths left (``F.pad``'s: before, after for each of those axes)."""
    if any(lo < 0 or hi < 0 for lo, hi in edges):
        lead = x.ndim - len(edges)
        start = [None] * lead + [max(0, -lo) for lo, _ in edges]
        stop = [None] * lead + [size - max(0, -hi) for size, (_, hi) in
                                zip(x.shape[lead:], edges)]
        x = F.slice(x, start, stop, [1] * x.ndim)
    return x, tuple(max(0, v) for lo_hi in edges for v in lo_hi)


def locally_connected(x: Variable, weight: Variable, strides: tuple[int, int],
                      edges) -> Variable:
    """CNTK's ``Convolution`` with ``sharing = false`` over the last two axes of ``x``
    (``(N, C, H, W)``): every output position has its own kernel.  ``weight`` holds them as
    CNTK's engines read the weight's values whatever its shape: kernel after kernel, each
    ``W`` fastest, then ``H``, then ``C``, the kernels ordered output column fastest, then row,
    then map -- that is ``(maps, out H, out W, C, kH, kW)``.  ``edges`` are
    :func:`window_edges` of the two axes.

    Example:
        >>> import stadyn as sd
        >>> locally_connected(sd.Variable((2, 3, 5, 5)), sd.Variable((4, 5, 5, 3, 3, 3)),
        ...                   (1, 1), [(1, 1), (1, 1)]).shape
        (2, 4, 5, 5)
    """
    x, widths = crop_to_edges(x, edges)
    if any(widths):
        x = F.pad(x, widths)
    maps, oh, ow, c, kh, kw = weight.shape
    sh, sw = strides
    patches = [F.slice(x, [None, None, i, j], [None, None, i + (oh - 1) * sh + 1,
                                                j + (ow - 1) * sw + 1], [1, 1, sh, sw])
               for i in range(kh) for j in range(kw)]
    windows = F.stack(*patches, axis=2)                       # (N, C, kH * kW, oh, ow)
    kernels = F.reshape(weight, (maps, oh, ow, c, kh * kw))
    return F.einsum(windows, kernels, equation="nckyx,myxck->nmyx")
