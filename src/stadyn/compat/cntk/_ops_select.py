"""CNTK's ops that pick parts of a value: ``slice`` (ranges of axes, checked against the
lengths met at each run) and ``gather`` (rows of a reference by indices).  Axes are per
sample, as in ``_ops_shape.py``.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.input_variable((2, 3))
    >>> C.slice(x, 1, 1, 3).shape, C.gather(C.constant(np.eye(3)), [[2], [0]]).shape
    ((2, 2), (2, 1, 3))
"""

from __future__ import annotations

import math
import weakref

from ... import functions as F
from ...graph import Variable, widen_free_dimensions
from . import _graph as G
from ._deferrable import defer_module
from ._sparse_operands import refuse_sparse_operands
from ._adapt import (float_arrays, lead_axes, named, one_op, operand as _as_operand,
                     refuse_several_outputs, reshape_samples, sample_shape, unwrap, wrap)
from ._axis import Axis
from ._axis_arguments import takes_axes
from ._cntk_attributes import CNTK_ATTRIBUTES, CNTK_ROOT_ATTRIBUTES, static_axis_attribute
from ._ops_shape import _axis_index
from ._run_checks import InvalidAtRunError, check_each_run, refuse_when_run, shape_at_run
from ._seq_axes import free_shown, free_steps
from ._variable_text import layout_text

__all__ = ["slice", "gather"]


@takes_axes(axis="axes", whole="Slice: Invalid axis argument provided. Slice along the dynamic "
            "batch axis is currently unsupported. To slice a sequence along its ordered dynamic "
            "axis use Sequence::Slice.")
def slice(x, axis, begin_index, end_index, strides=None, name: str = ""):  # noqa: A001
    """``x`` sliced along the per-sample ``axis`` (or several: lists) from ``begin_index`` to
    ``end_index`` (0: to the end; negative: from the end) every ``strides``.  A negative
    stride walks the same range ``[begin, end)`` backwards from its last element, as CNTK 2.7
    does (``C.slice(x, 0, 0, 0, strides=-1)`` reverses the axis)."""
    refuse_several_outputs(x, "slice")
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    begins = list(begin_index) if isinstance(begin_index, (list, tuple)) else [begin_index]
    ends = list(end_index) if isinstance(end_index, (list, tuple)) else [end_index]
    steps = (list(strides) if isinstance(strides, (list, tuple)) else [strides]) \
        if strides is not None else [1] * len(axes)
    if any(isinstance(a, Axis) and not a.is_static_axis for a in axes):
        raise RuntimeError("Slice: Invalid axis argument provided. Slice along a dynamic axis "
                           "is unsupported (CNTK 2.7); slice a sequence along its steps with "
                           "C.sequence.slice")
    v = _as_operand(x)
    start, stop, step = [None] * v.ndim, [None] * v.ndim, [1] * v.ndim
    flipped = []
    free = free_steps(v)
    unpacked = free_steps(v, of_inputs=False) if free else frozenset()
    at_run = []         # (the free axes' ranges, checked against each run's length)
    never = []          # (unpacked steps' axes of a static range CNTK 2.7 cannot run)
    room = []           # (unpacked steps' axes of a static range: padded to its end)
    narrow = []         # (unpacked steps' ranges CNTK 2.7's node refuses: NarrowTo's words)
    for a, b, e, s in zip(axes, begins, ends, steps):
        k = _axis_index(x, a)
        b, e, s = int(b), int(e), int(s if s is not None else 1)
        if k not in free:
            _check_slice(x, a, v.shape[k], b, e, s)
        else:
            at_run.append((_run_length(v, k), a, b, e, s))
            refusal = _narrow_refusal(b, e, s) if b >= 0 and e > 0 else ""
            if refusal:
                # (CNTK 2.7's Function narrows a free axis's shape to a range from the start)
                raise RuntimeError(f"{refusal} (slice [{b}, {e}) every {s} along the free "
                                   f"axis {a} of {x!r})")
            if b >= 0 and e > 0:    # (a range of an input's unfed free dimension: room for it)
                widen_free_dimensions([v], lambda k=k, e=e: v.shape[k] >= e)
                if k in unpacked:
                    room.append((k, a, e))
                    if -(-(e - b) // abs(s or 1)) != 1:
                        never.append((k, a, e))
            if k in unpacked:
                refused = _narrowed_on_one_step(b, e, s)
                if refused:
                    narrow.append(refused)
        # Python's slice of the range, counted from the end where CNTK counts so (an axis of
        # unpacked steps has its length only when the graph runs); a negative stride walks
        # the range reversed
        start[k], stop[k] = b, (e if e != 0 else None)
        if s < 0:
            flipped.append(k)
        step[k] = abs(s)
    padded = _room_for(v, room)
    if not flipped:
        out = named(wrap(F.slice(padded, start, stop, step)), name, "Slice")
        if padded is not v:     # (one Slice reading x, as CNTK 2.7 shows it, the pad inside)
            out = one_op(out, x)
    else:
        whole = [None] * v.ndim
        ranged = F.flip(F.slice(padded, start, stop), axes=flipped)
        # (one Slice reading x, as CNTK 2.7 shows it, the range and its flip inside)
        out = one_op(named(wrap(F.slice(ranged, whole, whole, step)), name, "Slice"), x)
    _check_ranges_at_run(out, x, at_run)
    if never:
        _refuse_unpacked_ranges(out, never)
    if narrow:
        refuse_when_run(unwrap(out), narrow[0], InvalidAtRunError)
    return out


def _narrowed_on_one_step(b: int, e: int, s: int) -> str:
    """CNTK 2.7's refusal (its message; "" where none) of a slice ``[b, e)`` every ``s`` along
    unpacked steps as its graph is compiled: the ComputationNode takes that axis as of length 1
    and narrows it where the range, read over that length (negative ends counted from it),
    lies inside it (ReshapingNodes.h:835-850, SliceNode::Validate), which TensorShape::NarrowTo
    refuses for an empty range or a stride longer than the range (TensorShape.h:644-655):
    ``[1, 0)``, ``[0, -1)``, ``[0, 0)`` every 2; ``[2, 3)`` or ``[-2, 0)`` lie outside it and
    are left to the run's length."""
    begin = b if b >= 0 else b + 1
    end = e if e > 0 else e + 1
    refusal = _narrow_refusal(begin, end, s) if 0 <= begin <= end <= 1 else ""
    if not refusal:
        return ""
    return (f"{refusal} (CNTK 2.7 reads the slice [{b}, {e}) of unpacked steps over one "
            f"step: [{begin}, {end}))")


def _narrow_refusal(begin: int, end: int, s: int) -> str:
    """TensorShape::NarrowTo's refusal (TensorShape.h:648-655) of the range ``[begin, end)``
    every ``s`` ("" where none): an empty range, a stride longer than the range."""
    if end <= begin:
        return "NarrowTo: Invalid bounds parameter, dimensions must be at least one."
    if abs(s) > end - begin:
        return f"NarrowTo: stride {abs(s)} is invalid for interval [{begin}, {end})."
    return ""


def _room_for(v: Variable, room: list) -> Variable:
    """``v`` padded at the end of each axis of unpacked steps in ``room`` (``(axis, user's
    axis, end)``) to the range's end, where the axis's stand-in length is shorter: CNTK 2.7's
    ``.shape`` has the range's length there (its runs are refused, so nothing of the padding
    is ever computed)."""
    for k, _, e in room:
        if v.shape[k] < e:
            v = F.pad(v, [0, e - v.shape[k]] + [0, 0] * (v.ndim - k - 1))
    return v


def _refuse_unpacked_ranges(out, never: list) -> None:
    """CNTK 2.7 refuses to run a slice along unpacked steps (``sequence.unpack``'s, the batch
    ``unpack_batch`` makes, what is computed from them) of a range counted from the start at
    both ends and other than one step long: its ComputationNode takes the steps' axis as of
    length 1 and its output's layout differs from the Function's (a RuntimeError at the run)."""
    value = unwrap(out)
    shown = free_shown(tuple(value.shape), free_steps(value))[1:]
    node = list(shown)
    for k, _, _ in never:
        node[k - 1] = 1
    axes = ", ".join(str(a) for _, a, _ in never)
    refuse_when_run(value, f"Slice: The output Variable shape '{layout_text(shown)}' does not "
                           f"match the SampleLayout shape '{layout_text(node)}' of the "
                           "corresponding ComputationNode in the network (CNTK 2.7 cannot run a "
                           "slice of "
                           f"more than one unpacked step along axis {axes})", InvalidAtRunError)


def _run_length(v: Variable, k: int):
    """How to read the length axis ``k`` of ``v`` (a free one) has in a run, once its data
    are fed: an input's free dimension, the padded steps ``sequence.unpack`` makes of an
    input's sequences, or the axis of a value computed from them (inferred from the run's
    data: CNTK 2.7 checks those at each run too)."""
    node = v.parent
    source = node.inputs[0] if node is not None and node.inputs else None
    if node is not None and node.spec.name == "sequence_unpack" and k == 1 and \
            isinstance(source, Variable) and source.parent is None:
        ref = weakref.ref(source)
        return lambda: int(ref().shape[1]) if ref() is not None else None
    shape = shape_at_run(v)
    return lambda: None if (found := shape()) is None else int(found[k])


def _check_ranges_at_run(out, x, ranges: list) -> None:
    """CNTK 2.7 checks a slice's range along a free dimension against each run's length (its
    RuntimeError where the range selects nothing or runs past the end): registered as a check
    of the lengths a Function's run is fed (``_run_checks.check_each_run``)."""
    if not ranges:
        return
    shown = repr(x)

    def check():
        for length, a, b, e, s in ranges:
            n = length()
            if n is not None:
                _check_slice(shown, a, n, b, e, s, " (this run's length)")
    check_each_run(unwrap(out), check)


def _check_slice(x, axis, size: int, b: int, e: int, s: int, when: str = "") -> None:
    """CNTK 2.7's refusals of a slice when it is made (so iterating a Function ends): a range
    selecting nothing or elements past the axis's end, a stride of 0 or longer than the
    range (``when``: said of the size, for a run's)."""
    begin = b + size if b < 0 else b
    end = e + size if e <= 0 else e
    if not 0 <= begin < end <= size:
        shown = x if isinstance(x, str) else repr(x)
        raise RuntimeError(f"slice: the range [{b}, {e}) of axis {axis}, read as "
                           f"[{begin}, {end}), selects no elements or elements past the "
                           f"{size}{when} of the axis of {shown}")
    if s == 0:
        raise RuntimeError(f"slice: a stride of 0 along axis {axis} of {x!r} (CNTK 2.7: "
                           "Narrow with stride 0 is not supported)")
    if abs(s) > end - begin:
        raise RuntimeError(f"slice: the stride {s} along axis {axis} of {x!r} is longer "
                           f"than the range [{begin}, {end}) it walks")


@float_arrays("reference")
@takes_axes(axis="axis", dynamic="Gather operation only supports a single static axis.")
def gather(reference, indices, axis=None, name: str = ""):
    """The slices of ``reference`` along its first sample axis (or ``axis``) at the positions
    in ``indices`` (no gradient to them): the indices' shape takes that axis's place.

    As CNTK 2.7 builds it: with an ``axis`` other than the first (``0``) the op is a block of
    kind ``GatherOp`` around a ``TransposeAxes``; a ``reference`` with dynamic axes (an input,
    an op of one) is built but refused when its graph first runs (CNTK's "Gather operation's
    right operand doesn't expect to have dynamic axis"): the table is a constant or a
    parameter, the indices may be computed from the minibatch.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> table = C.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
        >>> i = C.input_variable(2)
        >>> g = C.gather(table, i, axis=1)
        >>> g.shape, g.root_function.op_name, g.root_function.block_root.op_name
        ((2, 2), 'GatherOp', 'TransposeAxes')
        >>> g.eval({i: np.array([[2, 0]], np.float32)}).tolist()
        [[[2.0, 0.0], [5.0, 3.0]]]
    """
    ref, ids = _as_operand(reference), _as_operand(indices)
    ref_n, ids_n = lead_axes(reference), lead_axes(indices)
    if ref_n and ids_n and ref_n != ids_n:
        raise ValueError("gather: one operand is a sequence and the other is not (CNTK gathers "
                         "within samples of the same dynamic axes)")
    sample, id_shape = tuple(sample_shape(reference)), tuple(sample_shape(indices))
    a = 0 if axis is None else (axis.static_axis_index() if isinstance(axis, Axis) else int(axis))
    if axis is not None:
        _axis_index(reference, a)           # (an axis the sample lacks: the error)
    # CNTK 2.7 swaps the axis with the first, gathers along the first and swaps the output's
    # axis ``a`` (a negative one counted from the output's own rank) with its first again:
    # the indices' axes land where a multi-axis index put them in CNTK
    ax = a % len(sample)
    src = F.transpose(ref, _swap(ref_n, len(sample), ax)) if ax else ref
    sample = (sample[ax],) + sample[1:ax] + (sample[0],) + sample[ax + 1:] if ax else sample
    rest = sample[1:]
    table = reshape_samples(src, ref_n, (sample[0], math.prod(rest)))
    free = [k - ids_n for k in free_steps(ids) if k >= ids_n]
    if len(free) > 1:
        raise ValueError(f"gather: indices of shape {free_shown(id_shape, free)} have more "
                         "than one free dimension (-3); Stadyn's compat gathers with one")
    n = max(ref_n, ids_n)
    whole = F.cast(F.stop_gradient(ids), "int64")
    if free:        # (an input's free dimension: its length is each run's, never written in)
        id_shape = tuple(-1 if k in free else d for k, d in enumerate(id_shape))
        flat = F.reshape_trailing(whole, (-1, 1), base_axis=ids_n)
    else:
        flat = reshape_samples(whole, ids_n, (math.prod(id_shape), 1))
    hot = F.cast(F.one_hot(flat, (sample[0],)),                   # (..., n_ids, size)
                 "float64" if str(table.dtype) == "float64" else "float32")
    if not ref_n:
        picked = F.affine(hot, table, None, hot.ndim - 1)          # (..., n_ids, rest)
    else:
        picked = F.batch_matmul(hot, table)
    out = (F.reshape_trailing(picked, id_shape + rest, base_axis=n) if free
           else reshape_samples(picked, n, id_shape + rest))
    rank = len(id_shape) + len(rest)
    back = a if a >= 0 else a + rank
    if 0 < back < rank:
        out = F.transpose(out, _swap(n, rank, back))
    G.show_operands_in_order(out, (ref, ids))    # CNTK lists the reference first
    one_op(out, ref, ids)
    if ref_n:
        refuse_when_run(out, "gather: the reference has dynamic axes (an input or an op of "
                        "one); it must be a constant, a parameter or an op of those (CNTK 2.7: "
                        "Gather operation's right operand doesn't expect to have dynamic axis)",
                        InvalidAtRunError)
    # CNTK 2.7's attributes: the axis given, as its C++ counts it (none without one)
    shown = {} if axis is None else {"axis": static_axis_attribute(a)}
    if not _first_axis(axis):
        # CNTK 2.7's GatherOp(indices, reference, axis): a block around TransposeAxes
        G.mark_block(out, "GatherOp", name, [ref, ids], "TransposeAxes")
        CNTK_ATTRIBUTES[out] = shown
        # its root swaps the output's last axis in C++'s order (its first) with the given
        # one, CNTK's attribute counted from the output's rank where negative
        cpp = shown["axis"][2]
        CNTK_ROOT_ATTRIBUTES[out] = {
            "axis1": ("ordered", "static", rank - 1),
            "axis2": ("ordered", "static", cpp + rank if cpp < 0 else cpp)}
        return wrap(out)
    result = named(wrap(out), name, "Gather")
    CNTK_ATTRIBUTES[result.variable] = shown
    return result


def _swap(lead: int, rank: int, axis: int) -> tuple:
    """The permutation swapping sample axis ``axis`` with the first (``lead`` axes before)."""
    perm = list(range(lead + rank))
    perm[lead], perm[lead + axis] = perm[lead + axis], perm[lead]
    return tuple(perm)


def _first_axis(axis) -> bool:
    """Whether gather's ``axis`` is the one CNTK 2.7 gathers along without a block: none
    given, ``0`` or ``Axis(0)`` (``-rank``, the same axis, makes the block)."""
    if axis is None:
        return True
    index = axis.static_axis_index() if isinstance(axis, Axis) else int(axis)
    return index == 0


# CNTK 2.7 refuses a slice when run on a sparse input (a tensor operation on sparse data)
refuse_sparse_operands(globals(), ["slice"])

# ops on placeholders without a shape (or on layers) wait for their shapes
gather.cntk_operands_reversed = True    # (CNTK 2.7's GatherOp(indices, reference))
defer_module(globals(), __all__)
