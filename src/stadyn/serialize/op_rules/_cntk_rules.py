"""Helpers of the ``cntk_import`` rules: CNTK's products, window geometry and broadcasting
expressed with catalog ops.

A rule receives a :class:`~stadyn.serialize._legacy_api.LegacyNode` whose attributes are as
CNTK's Python API shows them, in NumPy order (the decoder reverses CNTK's column-major lists);
inputs keep CNTK's C++ order (``Times`` and ``Convolution`` have the weight first).  Data
inputs carry the batch axis first (``node.batched(i)``), parameters and constants none, so
NumPy broadcasting aligns them from the last axis as CNTK does.

**Window geometry** (``Convolution``, ``Pooling``), checked against CNTK 2.7 on every padding
case of ``tests/fixtures/legacy/cntk_ff_ops.model`` (odd and even kernels, strides 1 and 2,
dilation-free): per spatial axis of size *n* with kernel *k* (dilated: *(k - 1) d + 1*) and
stride *s*, auto padding gives ``ceil(n / s)`` outputs with ``(k - 1) // 2`` padding below
(less where a stride of 3 or more leaves cells over, below 0 where the first window skips
cells: :func:`stadyn.cntk_semantics.auto_padding`) and what the last window needs above (an
even kernel pads one more above than below); without it ``lowerPad``/``upperPad`` and
``floor`` (``ceilOutDim``: ``ceil``) output sizes.  Lists shorter than the rank (CNTK
broadcasts its last column-major entry) are filled from the front.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ... import functions as F
from ... import cntk_semantics as S
from ...cntk_semantics import convolution_transpose
from ...graph import Variable, holds_free_stand_ins
from ...sequence import reshape_samples
from ._cntk_shape_rules import _sample, sample_axis

__all__ = ["cntk_same", "cntk_elementwise", "window", "fill", "windowed", "times_cntk"]


def cntk_same(op: Callable[..., Any], *args: Any) -> Callable[..., Any]:
    """A ``cntk_import`` rule calling ``op`` on all the function's inputs (and ``args``).

    Example:
        >>> import stadyn.functions as F
        >>> cntk_same(F.relu).__name__
        'relu_cntk'
    """
    def build(node):
        return op(*[node.var(i) for i in range(node.n_inputs)], *args)
    build.__name__ = f"{getattr(op, '__name__', 'op')}_cntk"
    return build


def cntk_elementwise(op: Callable[..., Any], *args: Any) -> Callable[..., Any]:
    """A ``cntk_import`` rule for an element-wise op with CNTK's broadcasting: sample axes
    align from the last one and the batch axis with the batch axis, so a batched input of lower
    rank gets singleton axes after its batch axis (``(B, 4)`` against ``(B, 2, 3, 4)`` becomes
    ``(B, 1, 1, 4)``); unbatched inputs broadcast as in NumPy.

    Example:
        >>> import stadyn.functions as F
        >>> cntk_elementwise(F.add2).__name__
        'add2_cntk'
    """
    def build(node):
        leads = [node.lead(i) for i in range(node.n_inputs)]
        ranks = [len(node.shape(i)) - leads[i] for i in range(node.n_inputs)]
        rank = max(ranks, default=0)
        if len({lead for lead in leads if lead}) > 1:
            node.unsupported("an element-wise operation of a sequence and a value without its "
                             f"sequence axis ({[node.shape(i) for i in range(node.n_inputs)]})")
        xs = []
        for i in range(node.n_inputs):
            x, shape = node.var(i), node.shape(i)
            if leads[i] and ranks[i] < rank:
                x = reshape_samples(x, leads[i], (1,) * (rank - ranks[i]) + shape[leads[i]:])
            xs.append(x)
        return op(*xs, *args)
    build.__name__ = f"{getattr(op, '__name__', 'op')}_cntk"
    return build


def fill(values: Any, n: int, default: Any) -> tuple:
    """A CNTK per-axis list (NumPy order) for the last ``n`` axes: longer lists keep their last
    ``n`` entries, shorter ones repeat their first (CNTK's last column-major) entry in front.

    Example:
        >>> fill((3, 1, 1), 2, 1), fill((0,), 2, 0), fill((), 2, 1)
        ((1, 1), (0, 0), (1, 1))
    """
    items = tuple(values) if isinstance(values, (list, tuple)) else (
        () if values is None else (values,))
    if not items:
        return (default,) * n
    if len(items) >= n:
        return items[len(items) - n:]
    return (items[0],) * (n - len(items)) + items


def window(n: int, k: int, s: int, d: int, auto: bool, lo: int,
           hi: int) -> tuple[int, int, int]:
    """``(pad below, pad above, output size)`` of one spatial axis (see the module docstring):
    :func:`stadyn.cntk_semantics.window_edges`'s reach of the windows before and after the
    input, and their count.

    Example:
        >>> window(32, 3, 2, 1, True, 0, 0)      # the CIFAR ConvNet's 3x3/2 pooling
        (1, 0, 16)
        >>> window(5, 3, 1, 1, False, 0, 0)
        (0, 0, 3)
        >>> window(9, 2, 3, 1, True, 0, 0)      # the first cell skipped: windows 1-2, 4-5, 7-8
        (-1, 0, 3)
    """
    # (S.window_edges: the first window's centre as CNTK places it, below 0 where it skips
    # cells; with explicit pads the reach of the last whole window above)
    below, above = S.window_edges(n, k, s, auto, lo, hi, dilation=d, refuse=False)
    return below, above, (n + below + above - (k - 1) * d - 1) // s + 1


def _free_sizes(node, kernel, strides, dilation, auto, lower, upper) -> tuple:
    """Lengths standing for any length of the spatial axes of a window op's input computed
    from free dimensions (CNTK's ``FreeDimension``): its padding and the windows the catalog's
    op computes must then be CNTK's at every length (a padding that depends on the length, an
    even window auto-padded with a stride, is refused)."""
    sizes = []
    for k, s, d, a, lo, hi in zip(kernel, strides, dilation, auto, lower, upper):
        span = (int(k) - 1) * int(d) + 1
        seen = set()
        for n in range(span, span + 2 * int(s) + 2):
            below, above, out = window(n, int(k), int(s), int(d), bool(a), int(lo), int(hi))
            natural = (n + 2 * below + max(0, above - below) - span) // int(s) + 1
            seen.add((below, max(0, above - below), out == natural))
        if len(seen) != 1 or not next(iter(seen))[2] or next(iter(seen))[0] < 0:
            node.unsupported(f"a window {tuple(kernel)} every {tuple(strides)} over a free "
                             "dimension (-3) whose padding depends on its length")
        sizes.append(span + int(s))
    return tuple(sizes)


def windowed(node, x, shape: tuple, spatial: int, kernel: tuple, strides: Any, dilation: Any,
             auto: Any, lower: Any, upper: Any, apply: Callable[..., Any],
             pad_value: float | None):
    """Run ``apply(x, pad, stride, dilation, ignore_border)`` (a catalog convolution or pooling
    with symmetric padding) so that it computes CNTK's windows over the last ``spatial`` axes
    of ``x`` (of ``shape``):
    symmetric padding by the lower amount, an explicit ``F.pad`` (``pad_value``) where more
    is needed above, and a crop where the symmetric padding gives extra outputs.  Without a
    ``pad_value`` (average pooling not counting padding) the windows reaching past the padding
    above are NNabla's partial windows (``ignore_border=False``)."""
    sizes = shape[len(shape) - spatial:]
    strides = fill(strides, spatial, 1)
    dilation = fill(dilation, spatial, 1)
    auto = fill(auto, spatial, False)
    lower, upper = fill(lower, spatial, 0), fill(upper, spatial, 0)
    free = holds_free_stand_ins(x)      # (sizes from an input's free dimensions: any length)
    if free:
        sizes = _free_sizes(node, kernel, strides, dilation, auto, lower, upper)
    geo = [window(n, k, s, d, bool(a), int(lo), int(hi))
           for n, k, s, d, a, lo, hi in zip(sizes, kernel, strides, dilation, auto, lower, upper)]
    if any(g[0] < 0 for g in geo):      # (the cells CNTK's first window skips: dropped)
        x = S.padded(x, [(min(0, g[0]), 0) for g in geo])
        geo = [(max(0, lo), hi, out) for lo, hi, out in geo]
    below = [g[0] for g in geo]
    extra = [max(0, g[1] - g[0]) for g in geo]
    border = True
    if any(extra) and pad_value is None:
        border = False              # partial windows at the end, averaged over what they hold
    elif any(extra):
        width = [0, 0] * (len(shape) - spatial)
        for e in extra:
            width += [0, e]
        x = F.pad(x, tuple(width), "constant", pad_value)
    y = apply(x, tuple(below), tuple(int(s) for s in strides), tuple(int(d) for d in dilation),
              border)
    if free:            # (every length's windows as those of _free_sizes: no crop)
        return y
    out = [g[2] for g in geo]
    have = y.shape[len(y.shape) - spatial:]
    if any(h < o for h, o in zip(have, out)):
        node.unsupported(f"gives {tuple(have)} where CNTK computes {tuple(out)}")
    if tuple(have) != tuple(out):
        lead = len(y.shape) - spatial
        y = F.slice(y, (0,) * len(y.shape), tuple(y.shape[:lead]) + tuple(out))
    return y


def times_cntk(node):
    """CNTK's ``Times(W, x)`` (C++ order): ``x``'s last axes contracted with ``W``'s leading
    ones, ``W``'s last ``outputRank`` axes the output's -- an ``affine`` without bias."""
    w_shape, x_shape = node.shape(0), node.shape(1)
    if node.batched(0):
        # (``times(const, v)`` with only ``v`` batched, which CNTK 2.7 computes: Stadyn's
        # times takes the batched value on the left and a weight without a batch axis)
        node.unsupported("the right operand of times is batched (Stadyn's times takes a "
                         "weight without a batch axis on the right)")
    rank = int(node.attr("outputRank", 1))
    in_rank = len(w_shape) - rank
    if in_rank < 1 or in_rank > len(x_shape) or \
            tuple(x_shape[len(x_shape) - in_rank:]) != tuple(w_shape[:in_rank]):
        node.unsupported(f"times of {tuple(x_shape)} by {tuple(w_shape)} with outputRank "
                         f"{rank} (inferInputRankToMap {node.attr('inferInputRankToMap')})")
    w = node.var(0)
    if in_rank != 1:
        w = F.reshape(w, (math.prod(w_shape[:in_rank]),) + tuple(w_shape[in_rank:]))
    return F.affine(node.var(1), w, None, base_axis=len(x_shape) - in_rank)


def convolution_cntk(node):
    """CNTK's ``Convolution(W, x)``: channels first, the kernel over every sample axis (its
    first entry the input channels); ``transpose``: :func:`convolution_transpose_cntk`."""
    if node.attr("transpose"):
        return convolution_transpose_cntk(node)
    if not all(node.attr("sharing") or [True]):
        node.unsupported("convolution without weight sharing")
    kernel = tuple(node.attr("kernelShape") or node.shape(0)[1:])
    shape = node.shape(1)
    lead = node.lead(1)         # the batch axis, or a sequence's two axes (each step's image)
    if lead not in (1, 2) or len(shape) != len(kernel) + lead:
        node.unsupported(f"convolution of {shape} (batched: {node.batched(1)}) by the kernel "
                         f"{kernel}")
    groups = int(node.attr("groups", 1) or 1)
    weight = node.var(0)
    if len(node.shape(0)) == len(kernel):
        # a kernel without the output maps' axis (one map: CNTK 2.7's LocalResponseNormalization
        # block sums the squares over a window of channels so)
        weight = F.reshape(weight, (1,) + tuple(node.shape(0)))
    windows = _channel_windows(node, kernel, shape[lead], groups)

    def apply(x, pad, stride, dilation, border):
        if windows > 1:     # (the stand-in: the kernel over the first channels, repeated)
            at = tuple(x.shape)
            first = F.slice(x, (0,) * len(at), at[:lead] + (kernel[0],) + at[lead + 1:])
            y = F.convolution(first, weight, None, base_axis=lead, pad=pad, stride=stride,
                              dilation=dilation)
            return F.concatenate(*([y] * windows), axis=lead)
        return F.convolution(x, weight, None, base_axis=lead, pad=pad, stride=stride,
                             dilation=dilation, group=groups)
    y = windowed(node, node.var(1), shape, len(kernel) - 1, kernel[1:], node.attr("strides"),
                 node.attr("dilation"), node.attr("autoPadding"), node.attr("lowerPad"),
                 node.attr("upperPad"), apply, 0.0)
    if windows > 1:
        # CNTK's CPU engine (Source/Math/ConvolutionEngine.cpp:921, GetSizesAndStrides)
        return node.refuse_when_run(y, "Mismatching outputShape and mapCount", RuntimeError)
    return y


def _channel_windows(node, kernel: tuple, channels: int, groups: int) -> int:
    """How many windows CNTK 2.7's geometry puts along the channel axis of an ungrouped
    ``Convolution`` whose kernel spans fewer channels than the input has (a grouped
    convolution's v1 file: v1's ConvolutionNode keeps no groups): the channel axis is
    windowed as a spatial one, unpadded, each window giving the kernel's maps, so CNTK 2.7
    loads the file with ``maps * windows`` output channels and its CPU engine refuses it when
    it runs; 1 where the kernel spans every channel (or the geometry is not that one)."""
    if groups != 1 or kernel[0] >= channels:
        return 1
    stride = fill(node.attr("strides"), len(kernel), 1)[0]
    auto = fill(node.attr("autoPadding"), len(kernel), False)[0]
    lower = fill(node.attr("lowerPad"), len(kernel), 0)[0]
    upper = fill(node.attr("upperPad"), len(kernel), 0)[0]
    if int(stride) != 1 or auto or lower or upper:
        node.unsupported(f"convolution of {channels} channels by a kernel of {kernel[0]}, "
                         "strided or padded along the channels")
    return channels - int(kernel[0]) + 1


def convolution_transpose_cntk(node):
    """CNTK's ``convolution_transpose`` (a ``Convolution`` with ``transpose``: ``W`` is
    ``(in, out, *kernel)``): CNTK's geometry -- auto padding, strides, dilation and
    ``outputShape`` over the spatial axes (the last entries of its per-axis lists) -- as
    ``cntk_semantics.convolution_transpose`` computes it for the compat layer."""
    w_shape, shape = node.shape(0), node.shape(1)
    n = len(w_shape) - 2
    if node.lead(1) != 1 or len(shape) != n + 2 or shape[1] != w_shape[0]:
        node.unsupported(f"transposed convolution of {shape} (batched: {node.batched(1)}) by "
                         f"{w_shape}: a batch of images with the kernel's input channels is "
                         "needed")
    if int(node.attr("groups", 1) or 1) != 1 or not all(node.attr("sharing") or [True]):
        node.unsupported("transposed convolution with groups or without weight sharing")
    if any(fill(node.attr("lowerPad"), n, 0)) or any(fill(node.attr("upperPad"), n, 0)):
        node.unsupported("transposed convolution with explicit padding")
    out = tuple(int(d) for d in node.attr("outputShape") or ())
    return convolution_transpose(node.var(1), node.var(0), None,
                                 fill(node.attr("strides"), n, 1),
                                 tuple(bool(a) for a in fill(node.attr("autoPadding"), n, False)),
                                 fill(node.attr("dilation"), n, 1),
                                 out[len(out) - n:] if any(out) else None)


def pooling_cntk(node):
    """CNTK's ``Pooling``: ``poolingType`` 0 is max pooling, 1 average pooling (``includePad``
    counting the padding or not), over the last axes the window covers."""
    kind = int(node.attr("poolingType", 0))
    include = False
    kernel = tuple(int(k) for k in node.attr("poolingWindowShape"))
    shape = node.shape(0)
    if node.lead(0) not in (1, 2) or len(shape) < len(kernel) + node.lead(0):
        node.unsupported(f"pooling of {shape} (batched: {node.batched(0)}) by {kernel}")
    if kind == 0:
        def apply(x, pad, stride, dilation, border):
            return F.max_pooling(x, kernel, stride, True, pad, rule="cntk")   # (NaN passed by)
        pad_value = float("-inf")
    elif kind == 1:
        include = bool(node.attr("includePad", False))

        def apply(x, pad, stride, dilation, border):
            return F.average_pooling(x, kernel, stride, border, pad, including_pad=include)
        pad_value = 0.0 if include else None
    else:
        node.unsupported(f"poolingType {kind}")
    if node.attr("ceilOutDim", False):      # CNTK's geometry, shared with C.pooling
        n = len(kernel)
        return S.pooling(node.var(0), kernel, fill(node.attr("strides"), n, 1),
                         tuple(bool(a) for a in fill(node.attr("autoPadding"), n, False)),
                         kind == 1, include_pad=kind == 1 and include, ceil_out_dim=True,
                         lower_pad=fill(node.attr("lowerPad"), n, 0),
                         upper_pad=fill(node.attr("upperPad"), n, 0))
    return windowed(node, node.var(0), shape, len(kernel), kernel, node.attr("strides"), (),
                    node.attr("autoPadding"), node.attr("lowerPad"), node.attr("upperPad"),
                    apply, pad_value)


def batch_normalization_cntk(node):
    """CNTK's ``BatchNormalization(x, scale, bias, mean, variance, count)``: per channel
    (``spatial``) or per element of a sample, or of each step of a sequence (statistics over
    the sequences' steps, padded ones left out, as CNTK 2.7 computes them); the running
    statistics normalise outside training, and in training are updated by CNTK's rule from the
    file's statistics and count (``normalizationTimeConstant``, ``blendTimeConstant``)."""
    return _batch_normalization(node, node.var(5))


def _batch_normalization(node, count):
    lead = node.lead(0)
    if lead not in (1, 2):
        node.unsupported("batch normalisation of an input without the batch axis")
    x = node.var(0)
    return F.cntk_batch_normalization(
        x, node.var(1), node.var(2), node.var(3), node.var(4), count,
        x.sequence_lengths, bool(node.attr("spatial")),
        float(node.attr("normalizationTimeConstant", 0) or 0.0),
        float(node.attr("blendTimeConstant", 0) or 0.0), float(node.attr("epsilon", 1e-5)))


def batch_normalization_cntk_v1(node):
    """A v1 ``BatchNormalization`` node (its fields renamed to CNTK 2's attributes): of six
    inputs as CNTK 2's; of five, a model of before the sample count was an input (versions 13
    to 18), the count a new constant ``<node>.run_sample_count`` of 0, as CNTK 2.7 reads it
    (ComputationNetwork::Read gives such a node that parameter, of 0, which then rules over the
    node's own ``run_count`` field).  An older one (a minibatch count, and an inverse standard
    deviation where the variance is now, which CNTK converts approximately) is refused."""
    if node.n_inputs == 6:
        return batch_normalization_cntk(node)
    if node.n_inputs != 5:
        node.unsupported(f"a batch normalisation of {node.n_inputs} inputs (CNTK's: 5 or 6)")
    if "run_count" not in node.attrs:
        node.unsupported("a model of before version 13 (a minibatch count and an inverse "
                         "standard deviation where the sample count and the variance are now)")
    # (of shape (1,), CNTK 2.7's TensorShape(1), which the op reads as its one number; named
    # as CNTK names it, a constant of the network, not an input a Trainer feeds)
    count = Variable((1,), need_grad=False)
    count.name = f"{node.name}.run_sample_count"
    count.d = np.zeros((1,), dtype=np.dtype(str(node.var(3).dtype)))
    return _batch_normalization(node, count)


# -- products and activations over a sample --------------------------------------------------
def transpose_times_cntk(node):
    """CNTK's ``TransposeTimes`` (C++ order: right, left): a batched vector by a matrix
    parameter (``W x``) or two batched vectors (their dot product, shape ``(1,)``)."""
    (rl, rs), (ll, ls) = _sample(node, 0), _sample(node, 1)
    if rl and ll and len(rs) == 1 and rs == ls:
        return F.sum(F.mul2(node.var(0), node.var(1)), axis=-1, keepdims=True)
    if rl and not ll and len(rs) == 1 and len(ls) == 2 and ls[1] == rs[0]:
        y = F.affine(node.var(0), F.transpose(node.var(1), (1, 0)), None, base_axis=rl)
        return reshape_samples(y, rl, (ls[0], 1))      # W x^T: a column
    node.unsupported(f"times_transpose of {node.shape(1)} and {node.shape(0)}")


def softmax_cntk(node):
    """CNTK's ``Softmax``: over ``axis``, else over the whole sample (each row of an operand
    with no dynamic axes, which CNTK 2.7 holds as a matrix of its rows)."""
    lead, sample = _sample(node, 0)
    if node.attr("axis") is not None:
        a = sample_axis(node, node.attr("axis"), len(sample))
        if a is not None:
            return F.softmax(node.var(0), axis=a + lead)
    if len(sample) == 1 or (lead == 0 and sample):
        return F.softmax(node.var(0), axis=len(sample) - 1 + lead)
    flat = reshape_samples(node.var(0), lead, (math.prod(sample),))
    return reshape_samples(F.softmax(flat, axis=lead), lead, sample)


def hardmax_cntk(node):
    """CNTK's ``Hardmax`` over the whole sample: 1.0 at the first maximum, 0.0 elsewhere (of
    each row of an operand with no dynamic axes, as :func:`softmax_cntk`)."""
    lead, sample = _sample(node, 0)
    if lead == 0 and len(sample) > 1:
        return S.hardmax(node.var(0), len(sample) - 1, sample[-1:])
    return S.hardmax(node.var(0), lead, sample)


def log_plus_cntk(node):
    """CNTK's ``LogPlus`` (``log_add_exp``): :func:`stadyn.cntk_semantics.log_add_exp` on its
    two inputs broadcast as CNTK's element-wise ops, the rule ``C.log_add_exp`` and
    BrainScript's ``LogPlus`` read too."""
    return cntk_elementwise(S.log_add_exp)(node)


# -- CNTK v1 (BrainScript cntk.exe) nodes: their stored fields as CNTK 2's attributes ------------
def v1(rule: Callable[..., Any], **names: str) -> Callable[..., Any]:
    """A ``cntk_v1_import`` rule: the v1 node's fields renamed to CNTK 2's attribute names
    (``names``: v1 field -> CNTK 2 attribute), then the CNTK 2 ``rule``.

    Example:
        >>> v1(times_cntk, output_rank="outputRank").__name__
        'times_cntk_v1'
    """
    def build(node):
        node.attrs = {names.get(k, k): v for k, v in node.attrs.items()}
        return rule(node)
    build.__name__ = f"{getattr(rule, '__name__', 'rule')}_v1"
    return build


#: v1 Convolution/Pooling fields -> CNTK 2 attributes.
V1_WINDOW = dict(kernel_shape="kernelShape", auto_padding="autoPadding", lower_pad="lowerPad",
                 upper_pad="upperPad", ceil_out_dim="ceilOutDim", include_pad="includePad",
                 output_shape="outputShape")


def pooling_v1(node):
    """A v1 ``Pooling`` node: ``pool_kind`` Max 1 / Average 2 (CNTK 2: 0 / 1) over
    ``kernel_shape``, whose leading entries of 1 (the channel axis, not strided or padded) are
    left out."""
    a = node.attrs
    kind = {1: 0, 2: 1}.get(int(a.get("pool_kind", 0)))
    if kind is None:
        node.unsupported(f"pool_kind {a.get('pool_kind')}")
    kernel = list(a["kernel_shape"])
    strides = list(fill(a.get("strides"), len(kernel), 1))
    auto = list(fill(a.get("auto_padding"), len(kernel), False))
    while len(kernel) > 1 and kernel[0] == 1 and strides[0] == 1 and not auto[0]:
        kernel, strides, auto = kernel[1:], strides[1:], auto[1:]
    node.attrs = {"poolingType": kind, "poolingWindowShape": tuple(kernel),
                  "strides": tuple(strides), "autoPadding": auto,
                  "lowerPad": fill(a.get("lower_pad"), len(kernel), 0),
                  "upperPad": fill(a.get("upper_pad"), len(kernel), 0),
                  "ceilOutDim": a.get("ceil_out_dim", False),
                  "includePad": a.get("include_pad", False)}
    return pooling_cntk(node)
