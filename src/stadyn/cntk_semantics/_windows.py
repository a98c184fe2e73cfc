"""CNTK's windows: auto-padding, convolution (and its transpose), pooling and ROI pooling, with
CNTK's geometry (ConvolveGeometry) and its refusals."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import functions as F
from .._errors import ShapeError
from ..graph import Variable, format_location, user_location, widen_free_dimensions

from ._axes import _per_axis


def auto_padding(sizes: Sequence[int], kernels: Sequence[int], strides: Sequence[int],
                 dilations: Sequence[int] | None = None,
                 flags: bool | Sequence[bool] = True) -> list[tuple[int, int]]:
    """CNTK's auto-padding, per axis ``(before, after)``: windows centred on every
    ``stride``-th input position, so an axis with its flag set has ``ceil(size / stride)``
    outputs, the first centred on position ``extra // 2``, where ``extra`` is what the centres'
    span leaves of the axis (``size - (outputs - 1) * stride - 1``; CNTK 2.7's
    ``ConvolveGeometry::GetLowerPad`` / ``GetUpperPad``, Source/Math/ConvolveGeometry.h:385-399:
    a stride of 3 or more may start past position 0); ``(0, 0)`` where the flag is False.
    Where that start is past the window's half (a window of 2 with a stride of 3, a kernel of 3
    with a stride of 5), ``before`` is negative: CNTK skips that many positions at the start
    (no window reads them, a transposed convolution leaves them 0); a negative ``after`` skips
    positions at the end likewise.  :func:`padded` applies such paddings.

    Example:
        >>> auto_padding((32, 7, 12), (3, 3, 5), (1, 2, 4))
        [(1, 1), (1, 1), (1, 0)]
        >>> auto_padding((9,), (2,), (3,))          # windows 1-2, 4-5, 7-8
        [(-1, 0)]
    """
    n = len(kernels)
    dilations, flags = _per_axis(dilations or 1, n), _per_axis(flags, n)
    pads = []
    for size, k, s, d, on in zip(sizes, kernels, strides, dilations, flags):
        if not on:
            pads.append((0, 0))
            continue
        span = d * (k - 1) + 1
        out = -(-size // s)
        before = (span - 1) // 2 - (size - (out - 1) * s - 1) // 2
        pads.append((before, (out - 1) * s + span - size - before))
    return pads


def window_edges(size: int, k: int, s: int, auto: bool, lo: int = 0, hi: int = 0,
                 ceil: bool = False, what: str = "pooling", dilation: int = 1,
                 refuse: bool = True) -> tuple[int, int]:
    """One axis of CNTK's window geometry (ConvolveGeometry: ComputeOutputShape and the
    reference engine's first window) for a window of ``k`` every ``s`` over ``size``
    positions: how far the windows reach ``(before, after)`` the input, a negative value being
    positions they leave out (:func:`padded` applies it).  Auto-padding centres the windows
    as :func:`auto_padding` does; without it explicit pads ``lo``/``hi`` start the first window
    ``lo`` before the input; ``ceil`` (CNTK's ``ceilOutDim``) keeps a last window that hangs
    over the end (auto-padding then uses C++'s division, rounding toward zero, where the
    centres' span is longer than the axis).  A window ``dilation``-spaced spans
    ``dilation * (k - 1) + 1`` positions.  A ``ShapeError`` names ``what`` where CNTK's
    ConvolveGeometry refuses the geometry; ``refuse=False`` (a CNTK model file's node, which
    CNTK built) takes it as it is.

    Example:
        >>> window_edges(7, 3, 2, False, ceil=True)     # windows 0-2, 2-4, 4-6
        (0, 0)
        >>> window_edges(6, 3, 2, False, ceil=True)     # the last window 4-6 hangs over by 1
        (0, 1)
        >>> window_edges(9, 2, 3, True)                 # as auto_padding((9,), (2,), (3,))
        (-1, 0)
        >>> window_edges(8, 3, 1, True, dilation=2)     # a span of 5: 2 before, 2 after
        (2, 2)
    """
    k = int(dilation) * (k - 1) + 1
    if refuse and k > size:
        raise ShapeError(f"{what}: the window ({k}) is longer than the input ({size}) on an "
                         "axis (CNTK: kernel dim <= input dim)")
    padded_size = size + (k - 1 if auto else lo + hi)
    whole, rest = divmod(padded_size - k, s)
    out = whole + 1 + (1 if ceil and rest else 0)
    if refuse and not auto and (lo or hi) and (out - 1) * s + k != padded_size:
        raise ShapeError(f"{what}: lowerPad {lo} and upperPad {hi} with a window of {k} every "
                         f"{s} leave part of the padded axis ({padded_size}) uncovered; CNTK "
                         "requires the windows to fill it exactly")
    if auto:
        extra = size - (out - 1) * s - 1
        before = (k - 1) // 2 - (extra // 2 if extra >= 0 else -(-extra // 2))
    else:
        before = lo
    return before, (out - 1) * s + k - size - before


def padded(x: Variable, pads: Sequence[tuple[int, int]], value: float = 0.0) -> Variable:
    """``x`` with CNTK's signed paddings ``(before, after)`` of its trailing ``len(pads)`` axes
    (:func:`auto_padding`'s): ``value`` added where one is positive, that many positions
    dropped where it is negative.

    Example:
        >>> import stadyn as sd
        >>> x = sd.Variable((2, 9))
        >>> padded(x, [(-1, 0)]).shape, padded(x, [(1, 2)]).shape
        ((2, 8), (2, 12))
    """
    x, rest = _crop_negative(x, list(pads))
    widths = tuple(v for lo_hi in rest for v in lo_hi)
    return F.pad(x, widths, constant_value=value) if any(widths) else x


def _crop_negative(x: Variable, pads: list[tuple[int, int]]):
    """``x`` without the positions a negative pad drops from its trailing ``len(pads)`` axes,
    and the pads left (none negative)."""
    if all(lo >= 0 and hi >= 0 for lo, hi in pads):
        return x, pads
    lead = x.ndim - len(pads)
    sizes = x.shape[lead:]
    # (None where nothing is dropped: an axis whose length is known only when it runs, a
    # sequence's steps, keeps them all)
    start = [None] * lead + [-lo if lo < 0 else None for lo, _ in pads]
    stop = [None] * lead + [size + hi if hi < 0 else None for size, (_, hi) in zip(sizes, pads)]
    x = F.slice(x, start, stop, [1] * x.ndim)
    return x, [(max(0, lo), max(0, hi)) for lo, hi in pads]


def _symmetric(pads, sizes, kernels, strides, dilations) -> tuple[int, ...] | None:
    """The symmetric padding giving the same windows as ``pads``, if any: padding only the start
    by ``before`` works whenever it yields as many windows."""
    out = []
    for (lo, hi), size, k, s, d in zip(pads, sizes, kernels, strides, dilations):
        span = d * (k - 1) + 1
        if (size + 2 * lo - span) // s + 1 != (size + lo + hi - span) // s + 1:
            return None
        out.append(lo)
    return tuple(out)


def _fit_free_dimensions(x: Variable, spans: Sequence[int]) -> None:
    """An input whose free dimensions (CNTK's ``FreeDimension``) were never fed holds a
    stand-in length there: lengthen it where ``x``'s last axes are shorter than the window
    ``spans`` (CNTK infers nothing from a free axis; the data fed decides)."""
    n = len(spans)
    widen_free_dimensions([x], lambda: all(
        int(s) >= k for s, k in zip(x.shape[x.ndim - n:], spans)))


def refuse_windows_over_free_lengths(free: Sequence[bool], window: Sequence[int],
                                     strides: Sequence[int], auto: Sequence[bool],
                                     dilation: Sequence[int] | int = 1, op: str = "pooling",
                                     shape: tuple = (), ceil: bool = False) -> None:
    """Refuse a window op over free dimensions (the axes flagged in ``free``: CNTK's
    ``FreeDimension``, each minibatch's length) whose CNTK geometry depends on the length: the
    padding CNTK 2.7 puts before the first window, or the count of windows the fixed padding
    gives, changes with it (an even window auto-padded every 2), while a static graph fixes the
    padding when it is built (checked against CNTK 2.7 for windows of 2 to 5 every 1 to 3 over
    lengths 6 to 12: those it refuses are those whose values went wrong).  A ``ShapeError``
    naming the op and the user's line.

    Example:
        >>> refuse_windows_over_free_lengths([True], (3,), (2,), [True])     # the same at all
        >>> refuse_windows_over_free_lengths([True], (2,), (2,), [True])
        Traceback (most recent call last):
        ...
        stadyn._errors.ShapeError: pooling: a window (2,) every (2,) auto-padded over a free ...
    """
    n = len(window)
    strides, dilation, auto = _per_axis(strides, n), _per_axis(dilation, n), _per_axis(auto, n)
    for on, k, s, d, a in zip(free, window, strides, dilation, auto):
        if not on:
            continue
        span = d * (int(k) - 1) + 1
        first = None
        for size in range(span, span + 2 * int(s) + 2):
            lo, hi = window_edges(size, int(k), int(s), bool(a), ceil=ceil, dilation=d,
                                  refuse=False)
            count = (size + lo + hi - span) // int(s) + 1
            if first is None:
                first = (lo, hi)
            if lo != first[0] or (size + first[0] + first[1] - span) // int(s) + 1 != count:
                where = format_location(user_location())
                raise ShapeError(
                    f"{op}: a window {tuple(int(v) for v in window)} every "
                    f"{tuple(int(v) for v in strides)} auto-padded over a free dimension (-3) "
                    f"of an input of shape {shape}: CNTK pads it by each minibatch's "
                    "length, which Stadyn's static graph fixes when it is built (not "
                    "supported; an odd window, a stride of 1 or no padding is the same at "
                    "every length)" + (f" (made at {where})" if where else ""))


def refuse_window_beyond_input(window: Sequence[int], sizes: Sequence[int], op: str) -> None:
    """CNTK refuses a convolution or pooling window longer than its input on any axis, padded
    or not (``ConvolveGeometry::ComputeOutputShape``, CNTK's Source/Math/ConvolveGeometry.h:447,
    for its Python API and cntk.exe alike); a ``ShapeError`` (a ``ValueError``, as CNTK 2.7's)
    whose first line is CNTK's and whose second names the op and the user's line.  Unknown
    (non-positive) sizes pass.

    Example:
        >>> refuse_window_beyond_input((3, 3), (2, 2), "convolution")
        Traceback (most recent call last):
        ...
        stadyn._errors.ShapeError: Convolution operation requires that kernel dim 3 <= input dim 2.
        ...
    """
    for k, size in zip(window, sizes):
        if isinstance(size, int) and size > 0 and int(k) > size:
            where = format_location(user_location())
            raise ShapeError(
                f"Convolution operation requires that kernel dim {int(k)} <= input dim {size}."
                f"\n({op} of a window {tuple(int(v) for v in window)} over an input of "
                f"{tuple(sizes)} on those axes" + (f", made at {where})" if where else ")"))


def convolution(x: Variable, weight: Variable, bias: Variable | None, strides: Sequence[int],
                auto_pad: bool | Sequence[bool], dilation: Sequence[int] | int = 1,
                groups: int = 1, lower_pad: Sequence[int] | None = None,
                upper_pad: Sequence[int] | None = None) -> Variable:
    """CNTK's convolution of ``x`` (channels first, batch axis in front) with ``weight`` of
    shape ``(out, in // groups, *kernel)``; ``bias`` has shape ``(out,)``.  ``lower_pad`` /
    ``upper_pad`` (per axis, no dilation) pad the axes without auto-padding with zeros, as
    BrainScript's ``lowerPad``/``upperPad`` (:func:`window_edges`).

    Example:
        >>> import stadyn as sd
        >>> convolution(sd.Variable((2, 3, 8, 8)), sd.Variable((4, 3, 3, 3)), None, (2, 2),
        ...             True).shape
        (2, 4, 4, 4)
    """
    kernel = tuple(weight.shape[2:])
    n = len(kernel)
    strides, dilation = _per_axis(strides, n), _per_axis(dilation, n)
    _fit_free_dimensions(x, tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation)))
    sizes = tuple(x.shape[-n:])
    refuse_window_beyond_input(kernel, sizes, "convolution")
    if any(lower_pad or ()) or any(upper_pad or ()):
        if any(d != 1 for d in dilation):
            raise ShapeError("Convolution: explicit lower_pad/upper_pad with a dilation are not "
                             "supported")
        pads = [window_edges(*axis, False, "Convolution") for axis in
                zip(sizes, kernel, strides, _per_axis(auto_pad, n), _per_axis(lower_pad or 0, n),
                    _per_axis(upper_pad or 0, n))]
    else:
        pads = auto_padding(sizes, kernel, strides, dilation, auto_pad)
    x, pads = _crop_negative(x, pads)
    sizes = tuple(x.shape[-n:])
    symmetric = _symmetric(pads, sizes, kernel, strides, dilation)
    if symmetric is None:
        x = F.pad(x, tuple(v for lo_hi in pads for v in lo_hi))
        symmetric = (0,) * n
    return F.convolution(x, weight, bias, pad=symmetric, stride=strides, dilation=dilation,
                         group=int(groups))


def convolution_transpose(x: Variable, weight: Variable, bias: Variable | None,
                          strides: Sequence[int], auto_pad: bool | Sequence[bool],
                          dilation: Sequence[int] | int = 1,
                          output_shape: Sequence[int] | None = None) -> Variable:
    """CNTK's transposed convolution of ``x`` with ``weight`` of shape ``(in, out, *kernel)``:
    the transpose of :func:`convolution` over an input of ``output_shape`` (by default
    ``(size - 1) * stride + 1`` on auto-padded axes, the full ``(size - 1) * stride + span``
    on the others).  ``bias`` has shape ``(out,)``.

    Example:
        >>> import stadyn as sd
        >>> convolution_transpose(sd.Variable((2, 3, 4, 4)), sd.Variable((3, 2, 2, 3)), None,
        ...                       (1, 1), True).shape
        (2, 2, 4, 4)
    """
    kernel = tuple(weight.shape[2:])
    n = len(kernel)
    strides, dilation = _per_axis(strides, n), _per_axis(dilation, n)
    flags = _per_axis(auto_pad, n)
    sizes = tuple(x.shape[-n:])
    spans = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    natural = [(i - 1) * s + span for i, s, span in zip(sizes, strides, spans)]
    if output_shape is not None:
        wanted = [int(v) for v in tuple(output_shape)[-n:]]
    else:
        wanted = [(i - 1) * s + 1 if on else nat
                  for i, s, on, nat in zip(sizes, strides, flags, natural)]
    lows = [lo for lo, _ in auto_padding(wanted, kernel, strides, dilation, flags)]
    # output position p is the full transposed convolution's p + lo: its positions
    # max(lo, 0) .. lo + wanted, after -lo zeros where CNTK's windows skip the first positions
    front = [max(0, -lo) for lo in lows]
    starts = [max(0, lo) for lo in lows]
    stops = [lo + w for lo, w in zip(lows, wanted)]
    extra = [max(0, stop - nat) for stop, nat in zip(stops, natural)]
    skips = any(front)
    y = F.deconvolution(x, weight, None if skips else bias, pad=(0,) * n, stride=strides,
                        dilation=dilation, output_padding=tuple(extra) if any(extra) else None)
    if any(a or b < nat + e for a, b, nat, e in zip(starts, stops, natural, extra)):
        y = F.slice(y, [None] * (y.ndim - n) + starts, [None] * (y.ndim - n) + stops,
                    [1] * y.ndim)
    if skips:
        y = F.pad(y, tuple(v for lo in front for v in (lo, 0)))
        if bias is not None:
            y = F.add2(y, F.reshape(bias, tuple(bias.shape) + (1,) * n))
    return y


def pooling(x: Variable, window: Sequence[int], strides: Sequence[int],
            auto_pad: bool | Sequence[bool], average: bool, nan_rule: str = "cntk",
            include_pad: bool = False, ceil_out_dim: bool = False,
            lower_pad: Sequence[int] | None = None,
            upper_pad: Sequence[int] | None = None) -> Variable:
    """CNTK's max or average pooling over the trailing ``len(window)`` axes; with auto-padding
    the padding never wins a max and an average counts only the values inside the input
    (``include_pad``: the whole window, the padding as zeros, CNTK's ``poolIncludePad``).  A
    max passes NaN by (CNTK 2.7's rule; ``nan_rule="torch"``: a NaN wins its window, with
    ATen's kernel, which a compiled step keeps, as Stadyn's own ``layers.MaxPooling`` has it).
    ``ceil_out_dim`` keeps a last window that hangs over the end, as CNTK's ``ceilOutDim``;
    ``lower_pad``/``upper_pad`` (per axis) pad the axes without auto-padding explicitly, as
    BrainScript's ``lowerPad``/``upperPad`` (:func:`window_edges`).

    Example:
        >>> import stadyn as sd
        >>> pooling(sd.Variable((1, 4, 5, 5)), (3, 3), (2, 2), True, average=False).shape
        (1, 4, 3, 3)
        >>> pooling(sd.Variable((1, 4, 6, 6)), (3, 3), (2, 2), False, average=False,
        ...         ceil_out_dim=True).shape
        (1, 4, 3, 3)
    """
    window = tuple(int(k) for k in window)
    n = len(window)
    strides = _per_axis(strides, n)
    _fit_free_dimensions(x, window)
    sizes = tuple(x.shape[-n:])
    refuse_window_beyond_input(window, sizes, "pooling")
    pads = _pooling_edges(sizes, window, strides, auto_pad, ceil_out_dim, lower_pad, upper_pad)
    x, pads = _crop_negative(x, pads)
    sizes = tuple(x.shape[-n:])
    symmetric = _symmetric(pads, sizes, window, strides, (1,) * n)
    if symmetric is not None:
        if average:
            return F.average_pooling(x, window, strides, True, symmetric,
                                     including_pad=bool(include_pad))
        return F.max_pooling(x, window, strides, True, symmetric, rule=nan_rule)
    widths = tuple(v for lo_hi in pads for v in lo_hi)
    if average and include_pad:
        return F.average_pooling(F.pad(x, widths), window, strides, True)
    if not average:
        return F.max_pooling(F.pad(x, widths, constant_value=float("-inf")), window, strides,
                             True, rule=nan_rule)
    # The mean over the part of each window inside the input: window sums over a zero-padded
    # input divided by window sums over a padded mask of ones.  The ones are x ** 0 (1 for
    # NaN and inf too, where x * 0 + 1 is NaN) and take no gradient: CNTK 2.7's average of a
    # window holding inf is inf, its gradient g / count whatever the values
    ones = F.stop_gradient(F.pow_scalar(x, 0.0))
    total = F.average_pooling(F.pad(x, widths), window, strides, True)
    count = F.average_pooling(F.pad(ones, widths), window, strides, True)
    return F.div2(total, count)


def _pooling_edges(sizes, window, strides, auto_pad, ceil_out_dim=False, lower_pad=None,
                   upper_pad=None) -> list[tuple[int, int]]:
    """Each pooled axis's signed ``(before, after)`` reach of the windows (:func:`window_edges`;
    :func:`auto_padding` where neither ``ceil_out_dim`` nor an explicit pad is given)."""
    n = len(window)
    if ceil_out_dim or any(lower_pad or ()) or any(upper_pad or ()):
        lows, highs = _per_axis(lower_pad or 0, n), _per_axis(upper_pad or 0, n)
        return [window_edges(*axis, bool(ceil_out_dim), "Pooling") for axis in
                zip(sizes, window, strides, _per_axis(auto_pad, n), lows, highs)]
    return auto_padding(sizes, window, strides, None, auto_pad)


def max_unpooling(values: Variable, x: Variable, window: Sequence[int], strides: Sequence[int],
                  auto_pad: bool | Sequence[bool], lower_pad: Sequence[int] | None = None,
                  upper_pad: Sequence[int] | None = None) -> Variable:
    """CNTK's ``MaxUnpooling``: ``values`` (the output of :func:`pooling`'s max pooling of ``x``
    with this window, stride and padding) put back in ``x``'s shape, each at its window's
    maximum (the first in row-major order), zeros elsewhere; CNTK's auto-padding whatever its
    sides (a window's padding never holds its maximum; positions a negative lower pad skips get
    zeros).  Where overlapping windows (a stride shorter than the window) have their maximum at
    the same place, the last of them in row-major order keeps it, as CNTK 2.7's
    (``CPUMatrix::MaxUnpooling`` writes window after window).  ``lower_pad``/``upper_pad`` (per
    axis) place the windows of the axes without auto-padding as :func:`pooling`'s.  The
    gradient is CNTK 2.7's (:func:`F.cntk_max_unpooled`): ``values`` get the max pooling of the
    output's gradient over each window, ``x`` none.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.cntk_semantics as S
        >>> x = sd.Variable.from_numpy_array(np.array([[[[1.0, 3.0, 2.0, 0.0, 5.0]]]], np.float32))
        >>> v = sd.Variable.from_numpy_array(np.array([[[[7.0, 8.0, 9.0]]]], np.float32))
        >>> with sd.auto_forward():
        ...     y = S.max_unpooling(v, x, (1, 2), (1, 2), True)
        >>> y.d.ravel().tolist()
        [0.0, 7.0, 8.0, 0.0, 9.0]
        >>> v = sd.Variable.from_numpy_array(np.array([[[[7.0, 8.0, 9.0, 6.0]]]], np.float32))
        >>> with sd.auto_forward():        # windows of 2, stride 1: 3 is the first two's maximum
        ...     y = S.max_unpooling(v, x, (1, 2), (1, 1), False)
        >>> y.d.ravel().tolist()
        [0.0, 8.0, 9.0, 0.0, 6.0]
    """
    window = tuple(int(k) for k in window)
    n = len(window)
    strides = _per_axis(strides, n)
    pads = _pooling_edges(tuple(x.shape[-n:]), window, strides, auto_pad, False, lower_pad,
                          upper_pad)
    # the windows' input (its padding never a maximum), then back to x's shape: the padding
    # cropped off, zeros where a negative pad left positions out
    out = _unpool_last_wins(values, padded(F.stop_gradient(x), pads, float("-inf")), window,
                            strides)
    # (CNTK's gradient: values get the max pooling of the output's gradient)
    return F.cntk_max_unpooled(padded(out, [(-lo, -hi) for lo, hi in pads]), values, window,
                               strides, tuple(lo for lo, _ in pads), tuple(hi for _, hi in pads))


def _unpool_last_wins(values: Variable, padded: Variable, window: tuple, strides: tuple):
    """``values`` put at their windows' maxima in ``padded`` (no padding left to add), the last
    window in row-major order kept where several put theirs at one place.  The windows are
    dealt in groups that do not overlap (those whose positions agree modulo ``ceil(window /
    stride)`` on every axis; one group when the windows tile): each group is put back with
    :func:`F.max_pooling_backward`, carrying the windows' row-major ordinals along, and a
    group's value replaces what the groups before it put where its ordinal is higher."""
    n = len(window)
    apart = tuple(-(-k // s) for k, s in zip(window, strides))
    if all(a == 1 for a in apart):
        return F.max_pooling_backward(values, padded, window, strides, True, (0,) * n)
    grid = tuple(int(d) for d in values.shape[-n:])
    # (the windows' row-major ordinals and each group's mask are computed by ops, not held as
    # constants: the op shows the two inputs CNTK's Unpooling shows, no leaves of its own)
    ordinal = F.reshape(F.arange(1, int(np.prod(grid)) + 1), grid)
    best = kept = None
    for group in np.ndindex(*apart):
        if any(g >= d for g, d in zip(group, grid)):
            continue
        mask = _periodic_mask(grid, apart, group)
        ranks = F.mul2(ordinal, mask)
        put = F.max_pooling_backward(F.mul2(values, F.cast(mask, str(values.dtype))), padded,
                                     window, strides, True, (0,) * n)
        # (the ordinals at values' shape when it runs: a where whose both branches are them)
        spread = F.where(F.stop_gradient(values), ranks, ranks)
        rank = F.max_pooling_backward(spread, padded, window, strides, True, (0,) * n)
        if best is None:
            best, kept = rank, put
        else:
            kept = F.where(F.greater(rank, best), put, kept)
            best = F.maximum2(rank, best)
    return kept


def _periodic_mask(grid: tuple, apart: tuple, group: tuple) -> Variable:
    """1 at the places of ``grid`` whose index along each axis is ``group``'s modulo
    ``apart``'s, else 0 (float32), computed by ops from ``arange``."""
    mask = None
    for axis, (d, a, g) in enumerate(zip(grid, apart, group)):
        shifted = F.add_scalar(F.arange(0, d), -float(g))
        # (r - a * floor((r + 0.5) / a): exact for the integers r, half a step from a multiple)
        quotient = F.floor(F.mul_scalar(F.add_scalar(shifted, 0.5), 1.0 / a))
        rest = F.sub2(shifted, F.mul_scalar(quotient, float(a)))
        along = F.reshape(F.equal_scalar(rest, 0.0),
                          tuple(d if k == axis else 1 for k in range(len(grid))))
        mask = along if mask is None else F.mul2(mask, along)
    return mask


def _roi_bins(first: Variable, last: Variable, bins: int, size: int) -> Variable:
    """``(B, R, bins, 2)``: the ``(start, stop)`` of the map positions each bin covers along
    one axis, for region corners ``first``, ``last`` (``(B, R, 1)``, already rounded): CNTK's
    bins ``floor(k * s) .. ceil((k + 1) * s)`` from ``first`` with ``s = max(last - first + 1,
    1) / bins`` (a division, as CNTK's C++ does), clipped to the axis (a bin with ``stop <=
    start`` is empty)."""
    length = F.maximum_scalar(F.add_scalar(F.sub2(last, first), 1.0), 1.0)
    step = F.div2(length, F.constant(float(bins), (1,)))                  # (B, R, 1)
    k = F.arange(0, bins)                                                 # (bins,)
    lo = F.clip_by_value_scalar(F.add2(F.floor(F.mul2(k, step)), first), 0.0, float(size))
    hi = F.clip_by_value_scalar(F.add2(F.ceil(F.mul2(F.add_scalar(k, 1.0), step)), first),
                                0.0, float(size))
    # stacked, not reshaped: the regions' count R is free (a user function's FreeDimension
    # rows, known only when it runs), so no shape here names it
    return F.stack(lo, hi, axis=3)


def roi_pooling(x: Variable, rois: Variable, output_shape: Sequence[int],
                spatial_scale: float) -> Variable:
    """CNTK's ``ROIPooling`` with max pooling (``C.roipooling``; Source/Math/CPUMatrixImpl.h,
    ``MaxROIPoolingForward``): ``x`` ``(B, C, H, W)`` feature maps, ``rois`` ``(B, R, 4)``
    regions ``x1, y1, x2, y2`` in the image's pixels, scaled by ``spatial_scale`` and rounded
    (half away from zero) onto the map; each region is cut into ``output_shape`` ``(h, w)``
    bins ``floor(k * s) .. ceil((k + 1) * s)`` (neighbours may share a row or column), clipped
    to the map: ``(B, R, C, h, w)``.  A bin's value is its largest, NaN passed by (at least
    -FLT_MAX, where CNTK's scan starts); an empty bin gives 0.  The first largest value in
    row-major order takes the gradient, summed over the bins that chose it, as CNTK's
    ``MaxROIPoolingBackward``; the regions take none.  The pooling over the bins is the op
    ``F.cntk_bin_max_pooling`` (``ops/_roi_pool.py``: no intermediate of the map's size per
    region); a float16 map is pooled in float32 (a float32 output, as before).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.cntk_semantics as S
        >>> fm = sd.Variable.from_numpy_array(np.arange(16.0, dtype=np.float32).reshape(1, 1, 4, 4))
        >>> box = sd.Variable.from_numpy_array(np.array([[[0.0, 0.0, 3.0, 3.0]]], np.float32))
        >>> with sd.auto_forward():
        ...     y = S.roi_pooling(fm, box, (2, 2), 1.0)
        >>> y.d.reshape(2, 2).tolist()
        [[5.0, 7.0], [13.0, 15.0]]
    """
    ph, pw = (int(s) for s in output_shape)
    h, w = (int(s) for s in x.shape[2:])
    # the corners in double precision, as CNTK's C++ scales them (float * double)
    scaled = F.round(F.mul_scalar(F.cast(F.stop_gradient(rois), "float64"), float(spatial_scale)))
    corners = F.cast(scaled, str(x.dtype))

    def corner(i):
        return F.slice(corners, [None, None, i], [None, None, i + 1], [1, 1, 1])   # (B, R, 1)
    cols = _roi_bins(corner(0), corner(2), pw, w)                          # (B, R, pw, 2)
    rows = _roi_bins(corner(1), corner(3), ph, h)                          # (B, R, ph, 2)
    if str(x.dtype) not in ("float32", "float64"):
        x = F.cast(x, "float32")
    return F.cntk_bin_max_pooling(x, rows, cols)
