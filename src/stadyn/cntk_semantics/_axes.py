"""CNTK's per-sample axes over Stadyn's batch-first tensors: which Variables carry the batch
axis, CNTK's axis numbers, ``times``, reshapes of a sample, and operand alignment."""

from __future__ import annotations

import math
import weakref
from typing import Callable, Sequence

from .. import functions as F
from .._errors import ShapeError
from ..graph import Variable
from ..sequence import reshape_samples

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

    def unmarked(self, v: Variable) -> bool:
        """Whether ``v`` was :meth:`unmark`-ed (a copy of it, made by replaying its op, is
        unmarked too).

        Example:
            >>> import stadyn as sd, stadyn.functions as F
            >>> batch, x = BatchAxes(), sd.Variable((2, 3))
            >>> batch.add(x)
            >>> s = F.sum(x)
            >>> batch.unmark(s)
            >>> batch.unmarked(s), batch.unmarked(x), batch(s)
            (True, False, False)
        """
        return v in self._cut

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
        if data.ndim > lead:    # axes of 1 after the last, no other length written in (a
            spread = F.reshape_trailing(  # free dimension's is each run's)
                data, (-1,) + (1,) * weight.ndim, base_axis=data.ndim - 1)
        else:
            spread = reshape_sample(data, (1,) * weight.ndim, batched)
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
