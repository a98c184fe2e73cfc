"""CNTK's semantics over Stadyn's graph, written once for both CNTK front ends.

``stadyn.compat.cntk`` (CNTK's Python API) and ``stadyn.brainscript`` (its config language)
build the same graphs: a CNTK value has per-sample axes and, when it depends on an input, a batch
axis in front (Stadyn's axis 0).  The rules that follow from that live here:

* :class:`BatchAxes` tells which Variables carry the batch axis (those computed from an input);
* :func:`static_axis` turns CNTK's per-sample axis (row-major as CNTK's Python shows shapes, or
  column-major as BrainScript writes them) into a Stadyn axis;
* :func:`times` is CNTK's ``times``: the trailing axes of the data are reduced against the
  weight's leading (input) axes; where the shapes differ it infers the base axis from the number
  of elements, as CNTK does;
* :func:`reshape_sample` reshapes each sample and keeps the batch axis;
* :func:`over_sample` applies an axis function (softmax) over all axes of a sample at once;
* :func:`broadcast_pair` aligns two operands' sample axes on the right, the batch axis apart;
* :func:`divide` is CNTK's division (0 where the divisor is 0) and :func:`hardmax` its one-hot
  of each sample's first maximum, for the compat's ops and for CNTK model files' rules;
* :func:`auto_padding`, :func:`convolution` and :func:`pooling`: CNTK's auto-padding (windows
  centred on every ``stride``-th position, ``ceil(size / stride)`` outputs) for convolutions
  and pooling (padding never wins a max; an average counts only the values inside);
  :func:`roi_pooling` is CNTK's ``ROIPooling`` (Fast R-CNN's max pooling over regions).

Example:
    >>> import stadyn as sd, stadyn.cntk_semantics as S
    >>> x = sd.Variable((4, 2, 3))            # a batch of 4 samples of shape (2, 3)
    >>> S.times(x, sd.Variable((3, 5)), batched=True).shape
    (4, 2, 5)
    >>> S.reshape_sample(x, (6,), batched=True).shape
    (4, 6)
"""

from __future__ import annotations

import math
import weakref
from typing import Callable, Sequence

from . import functions as F
from ._errors import ShapeError
from .graph import Variable, format_location, user_location
from .sequence import reshape_samples

__all__ = ["BatchAxes", "static_axis", "times", "input_base_axis", "reshape_sample",
           "reshape_samples", "over_sample", "broadcast_pair", "auto_padding", "convolution",
           "convolution_transpose", "pooling", "divide", "hardmax", "roi_pooling"]


class BatchAxes:
    """Which Variables carry the batch axis: the inputs marked with :meth:`add` and everything
    computed from one (memoised per Variable, held weakly).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> batch = BatchAxes()
        >>> x, w = sd.Variable((2, 3)), sd.Variable((3, 4))
        >>> batch.add(x)
        >>> batch(F.affine(x, w)), batch(F.mul_scalar(w, 2.0))
        (True, False)
    """

    def __init__(self) -> None:
        self._inputs: "weakref.WeakSet[Variable]" = weakref.WeakSet()
        self._cut: "weakref.WeakSet[Variable]" = weakref.WeakSet()
        self._memo: "weakref.WeakKeyDictionary[Variable, bool]" = weakref.WeakKeyDictionary()

    def add(self, v: Variable) -> None:
        """Mark ``v`` (an input) as carrying the batch axis."""
        self._inputs.add(v)
        self._memo[v] = True

    def unmark(self, v: Variable) -> None:
        """``v`` has no batch axis whatever it is computed from (its batch axis became an
        ordinary one)."""
        self._cut.add(v)
        self._memo[v] = False

    def forget(self) -> None:
        """Drop what was worked out (after the graph changed in place); marks stay."""
        self._memo = weakref.WeakKeyDictionary((v, True) for v in self._inputs)
        for v in self._cut:
            self._memo[v] = False

    def __call__(self, v: Variable) -> bool:
        known = self._memo.get(v)
        if known is not None:
            return known
        # Iterative depth-first walk: deep graphs must not hit the recursion limit.
        stack, order = [v], []
        while stack:
            u = stack.pop()
            if u in self._memo:
                continue
            order.append(u)
            if u.parent is not None:
                stack.extend(i for i in u.parent.inputs if i not in self._memo)
        for u in reversed(order):
            if u in self._memo:
                continue
            self._memo[u] = (u in self._inputs) or (
                u.parent is not None and any(self._memo.get(i, False)
                                             for i in u.parent.inputs))
        return self._memo[v]


def static_axis(axis: int, ndim: int, batched: bool | int, column_major: bool = False) -> int:
    """CNTK's per-sample ``axis`` of a value with ``ndim`` Stadyn axes as a Stadyn axis.

    Row-major (CNTK's Python): 0 is a sample's first axis, -1 its last.  Column-major
    (BrainScript): 0 is the innermost (Stadyn's last) axis.  ``batched`` counts the leading
    axes that are not a sample's: True (1) for the batch axis, 2 for a sequence's batch and
    sequence axes.

    Example:
        >>> static_axis(0, 3, batched=True), static_axis(-1, 3, batched=True)
        (1, 2)
        >>> static_axis(0, 3, batched=True, column_major=True)
        2
    """
    lead = int(batched)
    rank = ndim - lead
    if not -rank <= axis < rank:
        raise ShapeError(f"axis {axis} is not an axis of a sample of rank {rank}")
    if column_major:
        return ndim - 1 - (axis % rank)
    return lead + (axis % rank)


def input_base_axis(data: Variable, in_size: int, batched: bool) -> int | None:
    """The first axis from which ``data``'s trailing axes hold ``in_size`` elements (the batch
    axis never counts), or None.

    Example:
        >>> import stadyn as sd
        >>> input_base_axis(sd.Variable((4, 2, 3)), 6, batched=True)
        1
    """
    start = 1 if batched else 0
    for axis in range(start, data.ndim + 1):
        if math.prod(data.shape[axis:]) == in_size:
            return axis if axis < data.ndim or in_size == 1 else None
    return None


def times(data: Variable, weight: Variable, output_rank: int = 1, batched: bool = True,
          bias: Variable | None = None) -> Variable:
    """CNTK's ``times(data, weight)``: the weight's axes but its last ``output_rank`` are its
    input axes; the data's trailing axes are reduced against them and the weight's output axes
    take their place.  When the data's trailing axes are not the input axes themselves, the
    base axis is the one after which the data holds as many elements (CNTK's inference).
    ``bias`` (the output axes' shape) is added in the same op.

    Example:
        >>> import stadyn as sd
        >>> times(sd.Variable((8, 2, 6)), sd.Variable((2, 6, 4)), batched=True).shape
        (8, 4)
        >>> times(sd.Variable((8, 12)), sd.Variable((2, 6, 4)), batched=True).shape
        (8, 4)
        >>> times(sd.Variable((8, 2)), sd.Variable((3,)), batched=True).shape   # outer product
        (8, 2, 3)
    """
    in_rank = weight.ndim - int(output_rank)
    if in_rank == 0 and weight.ndim:
        # a weight of output axes only: nothing is reduced, each of the data's elements times
        # the weight (CNTK 2.7: times of a (2,) input and a (2,) constant is their (2, 2)
        # outer product)
        lead = 1 if batched else 0
        spread = reshape_sample(data, tuple(data.shape[lead:]) + (1,) * weight.ndim, batched)
        out = F.mul2(spread, weight)
        return out if bias is None else F.add2(out, bias)
    if in_rank < 1:
        raise ShapeError(f"times: output_rank {output_rank} leaves no input axis in a weight of "
                         f"shape {weight.shape}")
    in_shape, out_shape = tuple(weight.shape[:in_rank]), tuple(weight.shape[in_rank:])
    in_size = math.prod(in_shape)
    lead = 1 if batched else 0
    if data.ndim - lead >= in_rank and tuple(data.shape[data.ndim - in_rank:]) == in_shape:
        base = data.ndim - in_rank
    else:
        base = input_base_axis(data, in_size, batched)
        if base is None:
            raise ShapeError(f"times: the data's shape {data.shape} does not end in {in_size} "
                             f"elements (the weight's input axes {in_shape})")
    w = weight if in_rank == 1 else F.reshape(weight, (in_size,) + out_shape)
    return F.affine(data, w, bias, base)


def reshape_sample(x: Variable, shape: Sequence[int], batched: bool, begin_axis: int | None = None,
                   end_axis: int | None = None, sequence: bool = False) -> Variable:
    """Each sample's axes ``begin_axis`` to ``end_axis`` (all by default; row-major) reshaped to
    ``shape``, which may hold one -1; the batch axis is kept, and with ``sequence`` (``x`` is
    ``(batch, steps, *sample)``) the sequence axis too, whatever the two axes' sizes.

    Example:
        >>> import stadyn as sd
        >>> reshape_sample(sd.Variable((5, 2, 6)), (3, -1), batched=True).shape
        (5, 3, 4)
        >>> reshape_sample(sd.Variable((5, 2, 6)), (3, 2), batched=True, sequence=True).shape
        (5, 2, 3, 2)
    """
    shape = tuple(int(s) for s in shape)
    lead = (2 if sequence else 1) if batched else 0
    sample = tuple(x.shape[lead:])
    begin = 0 if begin_axis is None else begin_axis % (len(sample) + 1)
    end = len(sample) if end_axis is None else end_axis % (len(sample) + 1)
    size = math.prod(sample[begin:end])
    if shape.count(-1) > 1:
        raise ShapeError(f"reshape: at most one -1 in {shape}")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or size % known:
            raise ShapeError(f"reshape: cannot reshape axes of shape {sample[begin:end]} to "
                             f"{shape}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    if math.prod(shape) != size:
        raise ShapeError(f"reshape: cannot reshape a sample's axes {sample[begin:end]} to {shape}")
    return reshape_samples(x, lead, sample[:begin] + shape + sample[end:])


def over_sample(fn: Callable[..., Variable], x: Variable, batched: bool,
                sequence: bool = False) -> Variable:
    """``fn(x, axis=...)`` over all of each sample's axes at once (CNTK's softmax of a tensor
    sample): the sample is flattened, ``fn`` runs along it and the shape is restored (with
    ``sequence``, ``x`` is ``(batch, steps, *sample)``: each step on its own).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = over_sample(F.softmax, sd.Variable.from_numpy_array(np.zeros((1, 2, 2))), True)
        >>> y.d.ravel().tolist()
        [0.25, 0.25, 0.25, 0.25]
    """
    n = (2 if sequence else 1) if batched else 0
    sample = tuple(x.shape[n:])
    if len(sample) <= 1:
        return fn(x, axis=x.ndim - 1)
    flat = reshape_samples(x, n, (math.prod(sample),))
    return reshape_samples(fn(flat, axis=flat.ndim - 1), n, sample)


def broadcast_pair(a: Variable, b: Variable, a_batched: bool,
                   b_batched: bool) -> tuple[Variable, Variable]:
    """``a`` and ``b`` ready for an element-wise op with CNTK's broadcasting: sample axes align
    on the right and the batch axis stays apart, so a batched operand of lower sample rank gets
    axes of size 1 after its batch axis.

    Example:
        >>> import stadyn as sd
        >>> a, b = broadcast_pair(sd.Variable((4, 3)), sd.Variable((2, 3)), True, False)
        >>> a.shape, b.shape
        ((4, 1, 3), (2, 3))
    """
    lead_a, lead_b = _lead(a, a_batched), _lead(b, b_batched)
    rank_a, rank_b = a.ndim - lead_a, b.ndim - lead_b
    if a_batched and rank_a < rank_b:
        a = _expand(a, lead_a, rank_b - rank_a)
    if b_batched and rank_b < rank_a:
        b = _expand(b, lead_b, rank_a - rank_b)
    return a, b


def _lead(v: Variable, batched: bool) -> int:
    """How many leading axes of ``v`` are not a sample's: the batch axis, and the sequence axis
    of a sequence (0 for an unbatched operand)."""
    if not batched:
        return 0
    return 2 if getattr(v, "sequence_lengths", None) is not None else 1


def _expand(v: Variable, lead: int, extra: int) -> Variable:
    """``v`` with ``extra`` axes of size 1 after its ``lead`` axes (a sequence axis kept)."""
    if lead == 1:
        return F.reshape(v, (-1,) + (1,) * extra + tuple(v.shape[1:]))
    for _ in range(extra):      # a sequence's length is not known when a static graph is built
        v = F.stack(v, axis=2)
    return v


def _per_axis(value, n: int) -> tuple:
    if isinstance(value, (bool, int)):
        return (value,) * n
    value = tuple(value)
    return value * n if len(value) == 1 and n > 1 else value


def auto_padding(sizes: Sequence[int], kernels: Sequence[int], strides: Sequence[int],
                 dilations: Sequence[int] | None = None,
                 flags: bool | Sequence[bool] = True) -> list[tuple[int, int]]:
    """CNTK's auto-padding, per axis ``(before, after)``: windows centred on every
    ``stride``-th input position, so an axis with its flag set has ``ceil(size / stride)``
    outputs, the first centred on position ``extra // 2``, where ``extra`` is what the centres'
    span leaves of the axis (``size - (outputs - 1) * stride - 1``; CNTK 2.7's
    ``ConvolveGeometry::GetLowerPad``, Source/Math/ConvolveGeometry.h:385-399: a stride of 3 or
    more may start past position 0); ``(0, 0)`` where the flag is False.  Where that start is
    past the window's half (a stride of 5 or more for a kernel of 3), CNTK drops the first
    positions; that case keeps the first window on position 0 here.

    Example:
        >>> auto_padding((32, 7, 12), (3, 3, 5), (1, 2, 4))
        [(1, 1), (1, 1), (1, 0)]
    """
    n = len(kernels)
    dilations = _per_axis(dilations or 1, n)
    flags = _per_axis(flags, n)
    pads = []
    for size, k, s, d, on in zip(sizes, kernels, strides, dilations, flags):
        if not on:
            pads.append((0, 0))
            continue
        span = d * (k - 1) + 1
        out = -(-size // s)
        before = (span - 1) // 2 - (size - (out - 1) * s - 1) // 2
        if before < 0:
            before = (span - 1) // 2
        pads.append((before, max(0, (out - 1) * s + span - size - before)))
    return pads


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
                groups: int = 1) -> Variable:
    """CNTK's convolution of ``x`` (channels first, batch axis in front) with ``weight`` of
    shape ``(out, in // groups, *kernel)``; ``bias`` has shape ``(out,)``.

    Example:
        >>> import stadyn as sd
        >>> convolution(sd.Variable((2, 3, 8, 8)), sd.Variable((4, 3, 3, 3)), None, (2, 2),
        ...             True).shape
        (2, 4, 4, 4)
    """
    kernel = tuple(weight.shape[2:])
    n = len(kernel)
    strides, dilation = _per_axis(strides, n), _per_axis(dilation, n)
    sizes = tuple(x.shape[-n:])
    refuse_window_beyond_input(kernel, sizes, "convolution")
    pads = auto_padding(sizes, kernel, strides, dilation, auto_pad)
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
    ``size * stride`` on auto-padded axes, the full ``(size - 1) * stride + span`` on the
    others).  ``bias`` has shape ``(out,)``.

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
    pads = auto_padding(wanted, kernel, strides, dilation, flags)
    lows = [lo for lo, _ in pads]
    extra = [max(0, lo + w - nat) for lo, w, nat in zip(lows, wanted, natural)]
    y = F.deconvolution(x, weight, bias, pad=(0,) * n, stride=strides, dilation=dilation,
                        output_padding=tuple(extra) if any(extra) else None)
    if any(lo or lo + w < nat + e for lo, w, nat, e in zip(lows, wanted, natural, extra)):
        start = [None] * (y.ndim - n) + lows
        stop = [None] * (y.ndim - n) + [lo + w for lo, w in zip(lows, wanted)]
        y = F.slice(y, start, stop, [1] * y.ndim)
    return y


def pooling(x: Variable, window: Sequence[int], strides: Sequence[int],
            auto_pad: bool | Sequence[bool], average: bool, nan_rule: str = "cntk") -> Variable:
    """CNTK's max or average pooling over the trailing ``len(window)`` axes; with auto-padding
    the padding never wins a max and an average counts only the values inside the input.  A
    max passes NaN by (CNTK 2.7's rule; ``nan_rule="torch"``: a NaN wins its window, with
    ATen's kernel, which a compiled step keeps, as Stadyn's own ``layers.MaxPooling`` has it).

    Example:
        >>> import stadyn as sd
        >>> pooling(sd.Variable((1, 4, 5, 5)), (3, 3), (2, 2), True, average=False).shape
        (1, 4, 3, 3)
    """
    window = tuple(int(k) for k in window)
    n = len(window)
    strides = _per_axis(strides, n)
    sizes = tuple(x.shape[-n:])
    refuse_window_beyond_input(window, sizes, "pooling")
    pads = auto_padding(sizes, window, strides, None, auto_pad)
    symmetric = _symmetric(pads, sizes, window, strides, (1,) * n)
    if symmetric is not None:
        if average:
            return F.average_pooling(x, window, strides, True, symmetric, including_pad=False)
        return F.max_pooling(x, window, strides, True, symmetric, rule=nan_rule)
    widths = tuple(v for lo_hi in pads for v in lo_hi)
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


def divide(a: Variable | None, b: Variable) -> Variable:
    """``a / b`` as CNTK 2.7 computes it (``ElementDivide``, and ``Reciprocal`` with ``a`` None
    for 1): 0 where ``b`` is 0, never inf or nan, and no gradient there.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> with sd.auto_forward():
        ...     y = divide(None, sd.Variable.from_numpy_array(np.array([0.0, 2.0], np.float32)))
        >>> y.d.tolist()
        [0.0, 0.5]
    """
    zero = F.stop_gradient(F.equal_scalar(b, 0.0))
    kept = F.r_sub_scalar(zero, 1.0)
    return F.div2(kept if a is None else F.mul2(a, kept), F.add2(b, zero))


def hardmax(x: Variable, lead: int, sample: Sequence[int]) -> Variable:
    """CNTK's ``Hardmax``: per sample (the axes after the ``lead`` ones, of shape ``sample``),
    1.0 at the first largest value in row-major order (the first value no later one exceeds:
    a NaN first wins, a later one is passed by) and 0.0 elsewhere, with no gradient.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> with sd.auto_forward():
        ...     y = hardmax(sd.Variable.from_numpy_array(np.array([[1.0, 3.0, 3.0]])), 1, (3,))
        >>> y.d.tolist()
        [[0.0, 1.0, 0.0]]
    """
    size = math.prod(sample)
    v = F.stop_gradient(x)
    flat = v if len(sample) == 1 else reshape_samples(v, lead, (size,))
    index = F.max(flat, axis=flat.ndim - 1, keepdims=True, only_index=True, rule="cntk")
    hot = F.cast(F.one_hot(F.cast(index, "int64"), (size,)), "float32")
    return hot if len(sample) == 1 else reshape_samples(hot, lead, tuple(sample))


def straight_through(x: Variable) -> Variable:
    """CNTK's ``StraightThrough`` (``straight_through_impl``): ``1`` where ``x > 0``, else
    ``-1`` (CNTK 2.7 gives -1 for 0 and for NaN), with the gradient of ``clip(x, -1, 1)``
    (what passes where ``|x| <= 1``, 0 for NaN): the sign plus the clipped input less itself
    held (a NaN clipped as 2).  ``C.straight_through_impl`` and the file reader's
    ``StraightThrough`` are this.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.cntk_semantics as S
        >>> x = sd.Variable.from_numpy_array(np.array([0.0, 2.0, -0.5, np.nan], np.float32))
        >>> with sd.auto_forward():
        ...     y = S.straight_through(x)
        >>> y.d.tolist()
        [-1.0, 1.0, -1.0, -1.0]
    """
    held = F.stop_gradient(x)
    sign = F.add_scalar(F.mul_scalar(F.greater(held, F.mul_scalar(held, 0.0)), 2.0), -1.0)
    number = F.equal(held, held)
    clipped = F.clip_by_value_scalar(F.where(number, x, F.add_scalar(
        F.mul_scalar(number, 0.0), 2.0)), -1.0, 1.0)
    return F.add2(sign, F.sub2(clipped, F.stop_gradient(clipped)))


def logistic(output: Variable, target: Variable, weight: Variable | None = None,
             samples: Variable | None = None) -> Variable:
    """CNTK's ``Logistic`` criterion (``weighted_binary_cross_entropy``; Source/
    ComputationNetworkLib/TrainingNodes.h:2081, LogisticNode), one number for the minibatch:
    with ``l = log(2 t o + 1 - t - o)`` (``t log o + (1 - t) log(1 - o)`` for a target of 0 or 1),
    ``-sum(l)``, or with a weight ``-N sum(w l) / sum(w)``, ``N`` the minibatch's samples
    (``samples``, a 0-d Variable; by default the number of ``weight``'s elements).  Its
    gradient is CNTK's (TrainingNodes.h:2046): for ``output`` only, that of ``-sum(w l)`` (the
    weighted value's ``N / sum(w)`` left out).  The three broadcast as element-wise ops do.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.cntk_semantics as S
        >>> o = sd.Variable.from_numpy_array(np.array([[0.25], [0.5]], np.float32))
        >>> t = sd.Variable.from_numpy_array(np.array([[1.0], [0.0]], np.float32))
        >>> w = sd.Variable.from_numpy_array(np.array([[3.0], [1.0]], np.float32))
        >>> with sd.auto_forward():
        ...     y = S.logistic(o, t, w)
        >>> round(float(y.d), 4)                  # -2 (3 log .25 + log .5) / 4
        2.426
    """
    t = F.stop_gradient(target)
    both = F.mul_scalar(F.mul2(output, t), 2.0)    # (output, target, weight: CNTK's order of
                                                    # the Logistic's inputs, as the graph shows)
    log_likelihood = F.log(F.sub2(F.add_scalar(F.sub2(both, t), 1.0), output))
    if weight is None:
        return F.mul_scalar(F.sum(log_likelihood), -1.0)
    w = F.stop_gradient(weight)
    if samples is None:
        samples = F.sum(F.add_scalar(F.mul_scalar(w, 0.0), 1.0))
    total = F.mul_scalar(F.sum(F.mul2(log_likelihood, w)), -1.0)    # (what the gradient is of)
    value = F.div2(F.mul2(samples, total), F.sum(w))
    return F.add2(total, F.stop_gradient(F.sub2(value, total)))


def constant_like(x: Variable, fill: float) -> Variable:
    """CNTK's ``ConstantOp`` (``zeros_like``, ``ones_like``): ``fill`` everywhere in ``x``'s
    shape, whatever ``x`` holds -- NaN and infinities too, which ``x * 0`` would keep: ``x`` is
    only compared with itself (0 or 1), and takes no gradient.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.cntk_semantics as S
        >>> x = sd.Variable.from_numpy_array(np.array([np.nan, np.inf, -1.0], np.float32))
        >>> with sd.auto_forward():
        ...     S.constant_like(x, 1.0).d.tolist(), S.constant_like(x, 0.0).d.tolist()
        ([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
    """
    x = F.stop_gradient(x)
    return F.add_scalar(F.mul_scalar(F.equal(x, x), 0.0), float(fill))


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
