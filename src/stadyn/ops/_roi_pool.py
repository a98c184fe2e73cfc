"""CNTK 2.7's max pooling over given bins of a feature map (its ``ROIPooling``'s pooling):
``cntk_bin_max_pooling``, one declaration, which ``stadyn.cntk_semantics.roi_pooling`` (what
``C.roipooling`` and a loaded CNTK file's ``ROIPooling`` compute) calls with the bins it cuts
each region into.

**What a bin gives.**  A bin is a rectangle of the map, rows ``start <= h < stop`` and columns
``start <= w < stop`` (its ``(start, stop)`` pair per axis, numbers of the map's type; neighbours
may share a row or column).  Its value is its largest, NaN passed by, and at least -FLT_MAX
(where CNTK's scan starts, ``Source/Math/CPUMatrixImpl.h``, ``MaxROIPoolingForward``); a bin
with ``stop <= start`` on an axis is empty and gives 0.  The first largest value in row-major
order takes the gradient, summed over the bins that chose it; the bins take none.  A bin whose
largest is below -FLT_MAX (-inf, NaN only, float64 numbers below it) passes no gradient; one
whose largest is exactly -FLT_MAX passes it only where no position outside the bin comes first
in the map's row-major order -- the bin starts at row and column 0 and spans every column or has
that value in its first row (what the masked two-step composition this op replaced did; CNTK
2.7 itself gives such a bin's gradient to the map's position (0, 0): left as it was).

**Without the large intermediate.**  The composition it replaced masked the map once per region
and bin column, a ``(B, R, C, H, pw, W)`` tensor (3.3 GB for 64 regions of a 256-channel 38x38
map; docs/performance.md).  Here the largest value of every power-of-two rectangle the bins need
is tabled (a two-dimensional sparse table of the map: for each size ``2^i x 2^j`` in use, the
first largest's position at every place), so a bin is the best of four overlapping tabled
rectangles; the tables hold a few copies of the map, the bins are looked up a block of regions
at a time, and the backward adds the output's gradient at the chosen positions in CNTK 2.7's
order: a region's bins that chose a position summed in row-major order, then the regions' sums
added region after region (bit for bit CNTK's, ``tests/fixtures/cntk_roipooling/
gradients.npz``; the composition summed in its reductions' order, the last bit of 37 of that
fixture's 4,096 gradients otherwise).  The kernel is
the torch operator ``stadyn_kernels::cntk_bin_max_pool`` (``kernel_op``: a static plan records
it as one call; a compiled step runs it as an opaque kernel), its gradient
``stadyn_kernels::cntk_bin_max_pool_grad``.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> fm = sd.Variable.from_numpy_array(np.arange(16.0, dtype=np.float32).reshape(1, 1, 4, 4))
    >>> rows = sd.Variable.from_numpy_array(np.array([[[[0, 2], [2, 4]]]], np.float32))
    >>> cols = sd.Variable.from_numpy_array(np.array([[[[0, 3], [5, 5]]]], np.float32))
    >>> with sd.auto_forward():
    ...     y = F.cntk_bin_max_pooling(fm, rows, cols)
    >>> y.d.reshape(2, 2).tolist()                 # the second column of bins is empty
    [[6.0, 0.0], [14.0, 0.0]]
"""

from __future__ import annotations

import math

import torch

from ._kernels import kernel_op
from ._registry import op

__all__ = ["LOWEST", "BLOCK_BYTES"]

#: -FLT_MAX: where CNTK's scan over a bin starts (a bin's value is at least this).
LOWEST = -3.4028234663852886e38

#: About how many bytes of looked-up table entries one block of regions may hold at once.
BLOCK_BYTES = 32 << 20


def _ranges(bounds: torch.Tensor, size: int):
    """``(start, stop, empty)`` of ``bounds`` ``(B, R, bins, 2)``: the first and one past the
    last position ``p`` with ``start <= p < stop`` on an axis of ``size`` (int64, ``stop >=
    start``; no positions for a NaN bound), and whether the bin is empty (``stop <= start``)."""
    lo, hi = bounds[..., 0], bounds[..., 1]
    empty = hi <= lo
    unordered = torch.isnan(lo) | torch.isnan(hi)
    first = torch.ceil(lo).clamp(0, size).masked_fill(unordered, 0).to(torch.int64)
    last = torch.ceil(hi).clamp(0, size).masked_fill(unordered, 0).to(torch.int64)
    return first, torch.maximum(last, first), empty


def _level(n: torch.Tensor, size: int) -> torch.Tensor:
    """``floor(log2(n))`` of counts ``n`` (at least 1 counts as 1), exactly."""
    k = torch.zeros_like(n)
    step = 2
    while step <= size:
        k += n >= step
        step *= 2
    return k


_LOW_BITS = (1 << 32) - 1


def _keys(v: torch.Tensor) -> torch.Tensor:
    """int64 keys of the map ``v`` ``(B, C, H, W)`` (NaN read as -inf already) whose largest
    is the first largest value in row-major order: the value's rank in the high 32 bits (its
    IEEE bits, ordered as integers, for float32; its rank among the map's values for
    float64), ``2^32 - 1 - position`` in the low ones."""
    h, w = v.shape[2:]
    if v.dtype == torch.float32:
        bits = (v + 0.0).view(torch.int32)              # + 0.0: -0.0 ties with 0.0
        rank = torch.where(bits < 0, bits ^ 0x7FFFFFFF, bits).to(torch.int64)
    else:
        rank = torch.unique(v, return_inverse=True)[1].view(v.shape)
    position = torch.arange(h * w, dtype=torch.int64, device=v.device).view(h, w)
    return rank * (1 << 32) + (_LOW_BITS - position)


def _tables(keys: torch.Tensor, needed: list):
    """The sparse table of ``keys`` ``(B, C, H, W)`` for the rectangle sizes ``needed``
    (``(i, j)``: ``2^i`` rows by ``2^j`` columns): each size's largest key at every place the
    rectangle fits (row-major), all sizes in one ``(B, C, N)`` buffer; returns it and each
    size's offset in it."""
    b, c, h, w = keys.shape
    offsets, total = {}, 0
    for i, j in needed:
        offsets[(i, j)] = total
        total += (h - (1 << i) + 1) * (w - (1 << j) + 1)
    table = keys.new_empty((b, c, total))
    high = keys
    for i in range(max(k for k, _ in needed) + 1):
        if i:                           # rectangles 2^i rows high: two of 2^(i-1), one below
            half, fit = 1 << (i - 1), h - (1 << i) + 1
            high = torch.maximum(high[:, :, :fit], high[:, :, half:half + fit])
        widths = [j for k, j in needed if k == i]
        if not widths:
            continue
        wide = high
        for j in range(max(widths) + 1):
            if j:                       # 2^j columns wide: two of 2^(j-1), side by side
                half, fit = 1 << (j - 1), w - (1 << j) + 1
                wide = torch.maximum(wide[..., :fit], wide[..., half:half + fit])
            if j in widths:
                at, n = offsets[(i, j)], wide.shape[2] * wide.shape[3]
                table[..., at:at + n] = wide.reshape(b, c, n)
    return table, offsets


def _pool_impl(x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor):
    _check(x, rows, cols)
    b, c, h, w = x.shape
    r, ph, pw = rows.shape[1], rows.shape[2], cols.shape[2]
    out = x.new_empty((b, r, c, ph, pw))
    src = torch.empty((b, r, c, ph, pw), dtype=torch.int32, device=x.device)
    if out.numel():                     # written through (B, C, R, PH, PW) views
        _pool_into(out.transpose(1, 2), src.transpose(1, 2), x, rows, cols)
    return out, src


def _pool_into(out, src, x, rows, cols):
    b, c, h, w = x.shape
    first_h, stop_h, empty_h = _ranges(rows, h)                       # (B, R, ph)
    first_w, stop_w, empty_w = _ranges(cols, w)                       # (B, R, pw)
    level_h, level_w = _level(stop_h - first_h, h), _level(stop_w - first_w, w)
    empty = empty_h[..., :, None] | empty_w[..., None, :]             # (B, R, ph, pw)
    some = (stop_h > first_h)[..., :, None] & (stop_w > first_w)[..., None, :] & ~empty
    levels_w = int(_level(torch.tensor(w), w)) + 1
    kinds = level_h[..., :, None] * levels_w + level_w[..., None, :]
    needed = sorted(divmod(k, levels_w) for k in torch.unique(kinds[some]).tolist())
    if not needed:                      # only empty bins (0) or bins with no positions
        out.copy_(torch.where(empty, 0.0, LOWEST)[:, None].expand(out.shape))
        src.fill_(h * w)
        return
    lowest = torch.tensor(LOWEST, dtype=x.dtype, device=x.device)
    places = sum((h - (1 << i) + 1) * (w - (1 << j) + 1) for i, j in needed)
    # the tables of a block of channels at a time (a channel's tables are its own): about
    # BLOCK_BYTES a block, with the chain of sizes that leads to them
    step = max(1, BLOCK_BYTES // (b * (places + 3 * h * w) * 8))
    for c0 in range(0, c, step):
        channels = slice(c0, min(c, c0 + step))
        v = torch.nan_to_num(x[:, channels].detach(), nan=-math.inf, posinf=math.inf,
                             neginf=-math.inf)
        table, offsets = _tables(_keys(v), needed)
        _look_up(out[:, channels], src[:, channels], v.reshape(b, v.shape[1], h * w), table,
                 offsets, (first_h, stop_h, level_h), (first_w, stop_w, level_w), some, empty,
                 lowest, (h, w))


def _look_up(out, src, v, table, offsets, along_h, along_w, some, empty, lowest, size):
    """Each bin's first largest (``out``, ``src``: ``(B, C, R, ph, pw)`` views) from the tables
    of ``v`` ``(B, C, H * W)``, a block of regions at a time."""
    b, c, r, ph, pw = out.shape
    (first_h, stop_h, level_h), (first_w, stop_w, level_w) = along_h, along_w
    h, w = size
    levels_w = int(_level(torch.tensor(w), w)) + 1
    offset = torch.zeros(int(level_h.max()) + 1, levels_w, dtype=torch.int64, device=v.device)
    for (i, j), at in offsets.items():
        offset[i, j] = at
    fit_w = w - (1 << torch.arange(levels_w, device=v.device)) + 1    # each width's places
    block = max(1, BLOCK_BYTES // (ph * pw * c * b * 8))
    for r0 in range(0, r, block):
        part = slice(r0, min(r, r0 + block))
        fh, sh, kh = first_h[:, part], stop_h[:, part], level_h[:, part]
        fw, sw, kw = first_w[:, part], stop_w[:, part], level_w[:, part]
        ok = some[:, part]
        base = offset[kh[..., :, None], kw[..., None, :]]               # (B, r, ph, pw)
        width = fit_w[kw][..., None, :]
        best = None
        # the bin: four tabled rectangles of 2^kh x 2^kw, from its corners inwards
        for top in (fh, (sh - (1 << kh)).clamp(min=0)):
            for left in (fw, (sw - (1 << kw)).clamp(min=0)):
                place = torch.where(ok, base + top[..., :, None] * width + left[..., None, :],
                                    0).view(b, 1, -1)
                found = table.gather(2, place.expand(b, c, place.shape[2]))
                best = found if best is None else torch.maximum(best, found, out=best)
        at = _LOW_BITS - (best & _LOW_BITS)                             # the first largest
        del best
        value = v.gather(2, at)
        at, value = at.view(b, c, *ok.shape[1:]), value.view(b, c, *ok.shape[1:])
        # the masked composition's rules at -FLT_MAX (module docstring): a largest equal to it
        # passes the gradient only where no position outside the bin comes first
        passes = value > lowest
        tied = value == lowest
        if bool(tied.any()):
            first = ((fh == 0)[..., :, None] & (fw == 0)[..., None, :])[:, None]
            passes |= tied & first & ((sw == w)[:, None, :, None, :] | (at < w))
        unpooled = ~ok[:, None]
        src[:, :, part] = at.masked_fill_(~passes | unpooled, h * w)
        value.clamp_(min=LOWEST).masked_fill_(unpooled, LOWEST)
        out[:, :, part] = value.masked_fill_(empty[:, part][:, None], 0.0)


def _check(x, rows, cols):
    if x.dim() != 4 or rows.dim() != 4 or cols.dim() != 4 or rows.shape[-1] != 2 \
            or cols.shape[-1] != 2 or rows.shape[:2] != cols.shape[:2] \
            or rows.shape[0] != x.shape[0]:
        raise ValueError(f"cntk_bin_max_pooling: a (B, C, H, W) map and its bins' rows "
                         f"(B, R, PH, 2) and columns (B, R, PW, 2) are needed, got "
                         f"{tuple(x.shape)}, {tuple(rows.shape)} and {tuple(cols.shape)}")
    if x.dtype not in (torch.float32, torch.float64):
        raise ValueError(f"cntk_bin_max_pooling: a float32 or float64 map is needed (CNTK's "
                         f"float and double), not {x.dtype}")


def _pool_fake(x, rows, cols):
    _check(x, rows, cols)
    shape = (x.shape[0], rows.shape[1], x.shape[1], rows.shape[2], cols.shape[2])
    return x.new_empty(shape), x.new_empty(shape, dtype=torch.int32)


def _pool_setup(ctx, inputs, output):
    x = inputs[0]
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(output[1])
    ctx.map_shape = tuple(x.shape)


def _grad_impl(gy: torch.Tensor, src: torch.Tensor, h: int, w: int) -> torch.Tensor:
    b, r, c, ph, pw = gy.shape
    # CNTK 2.7's order (MaxROIPoolingBackward): each region's bins that chose a position summed
    # in row-major order from 0, then the regions' sums added to the position in region order.
    # scatter_add_ adds along a row in the row's order (on any number of threads; an
    # accumulating index_put_ does not): first into a region's own row of the map's places,
    # then each region's sum once, from its first bin, into the gradient; a block of regions
    # at a time.
    plane = h * w + 1                               # the last place: bins that pass none
    bins = ph * pw
    gx = gy.new_zeros((b, c, plane))
    block = min(r, max(1, BLOCK_BYTES // max(1, b * c * (plane * 8 + bins * 24))))
    # a region's row of places, kept from block to block (only the places its bins chose are
    # cleared and read: the rows are never filled whole)
    sums_rows = gy.new_empty((b, c, block, plane))
    firsts_rows = torch.empty((b, c, block, plane), dtype=torch.int32, device=gy.device)
    order = torch.arange(bins, dtype=torch.int32, device=gy.device).expand(b, c, block, bins)
    for r0 in range(0, r, block):
        part = slice(r0, min(r, r0 + block))
        n = part.stop - part.start
        where = src[:, part].transpose(1, 2).reshape(b, c, n, bins).to(torch.int64)
        g = gy[:, part].transpose(1, 2).reshape(b, c, n, bins)
        sums = sums_rows[:, :, :n].scatter_(3, where, 0.0).scatter_add_(3, where, g)
        firsts = firsts_rows[:, :, :n].scatter_(3, where, bins)
        firsts.scatter_reduce_(3, where, order[:, :, :n], "amin")
        later = firsts.gather(3, where) != order[:, :, :n]   # not the region's first bin there
        total = sums.gather(3, where).masked_fill_(later, 0.0)
        gx.scatter_add_(2, where.masked_fill_(later, plane - 1).reshape(b, c, n * bins),
                        total.reshape(b, c, n * bins))
    return gx[..., :h * w].reshape(b, c, h, w)


_pool_grad = kernel_op("stadyn_kernels::cntk_bin_max_pool_grad",
                       "(Tensor gy, Tensor src, int h, int w) -> Tensor", _grad_impl,
                       lambda gy, src, h, w: gy.new_empty((gy.shape[0], gy.shape[2], h, w)))


def _pool_backward(ctx, gy, _gsrc):
    src, = ctx.saved_tensors
    h, w = ctx.map_shape[2], ctx.map_shape[3]
    return _pool_grad(gy.contiguous(), src, h, w), None, None


_pool = kernel_op("stadyn_kernels::cntk_bin_max_pool",
                  "(Tensor x, Tensor rows, Tensor cols) -> (Tensor, Tensor)",
                  _pool_impl, _pool_fake, _pool_backward, _pool_setup)


@op(3, category="neural", frameworks=("cntk",))
def cntk_bin_max_pooling(x, rows, cols):
    """CNTK 2.7's max pooling of ``x`` ``(B, C, H, W)`` over bins given per image and region:
    ``rows`` ``(B, R, PH, 2)`` and ``cols`` ``(B, R, PW, 2)`` the ``(start, stop)`` of each
    bin's rows and columns (positions ``start <= p < stop``), giving ``(B, R, C, PH, PW)``: a
    bin's largest value, NaN passed by, at least -FLT_MAX, 0 for an empty bin (``stop <=
    start``); the first largest in row-major order takes the gradient, summed over the bins
    that chose it.  ``stadyn.cntk_semantics.roi_pooling`` (CNTK's ``ROIPooling``) cuts the
    regions into bins and calls it; the module docstring has the rules and how it keeps its
    memory small.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> fm = sd.Variable.from_numpy_array(np.array([[[[1.0, 5.0], [5.0, np.nan]]]]))
        >>> whole = sd.Variable.from_numpy_array(np.array([[[[0.0, 2.0]]]]))
        >>> with sd.auto_forward():
        ...     y = F.cntk_bin_max_pooling(fm, whole, whole)
        >>> y.d.ravel().tolist()
        [5.0]
    """
    return _pool(x, rows.detach(), cols.detach())[0]
