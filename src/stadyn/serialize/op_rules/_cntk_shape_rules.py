"""The ``cntk_import`` rules of CNTK's shape and indexing functions (``Gather``, ``TopK``,
``OneHotOp``, ``Reshape``, ``Squeeze``, ``TransposeAxes``, ``Splice``, ``Slice``, ``Pad``) and
the static axes they read: CNTK's column-major axis indices as NumPy sample axes
(:func:`sample_axis`, CNTK's sentinel indices), each input's sample shape.  The conventions of
the nodes a rule receives are ``_cntk_rules.py``'s."""

from __future__ import annotations

import math
from typing import Any

from ... import functions as F
from ... import cntk_semantics as S
from ...sequence import reshape_samples
from .._cntk_format import CntkAxis
from ._cntk_read_others import symmetric_pad

__all__ = ["sample_axis", "gather_cntk", "top_k_cntk", "one_hot_cntk", "reshape_cntk",
           "squeeze_cntk", "transpose_axes_cntk", "splice_cntk", "slice_cntk", "slice_cntk_v1",
           "pad_cntk"]

# CNTK's sentinel static axis indices (Axis::SentinelStaticAxisIndexValueFor*, CNTK
# Source/CNTKv2LibraryDll/Common.cpp:804-808): INT_MAX a dynamic axis, INT_MAX-1 all static
# axes, INT_MAX-2 unknown axes, INT_MAX-3 the end of the static axes, INT_MAX-4 all axes
# (static and dynamic: ``C.Axis.all_axes()``, what the Trainer's aggregateLoss sums over)
_ALL_STATIC = 2147483646
_DYNAMIC = 2147483647
_ALL_AXES = 2147483643


def sample_axis(node, axis: Any, rank: int) -> int | None:
    """A CNTK static axis (column-major index: ``i >= 0`` is NumPy sample axis ``rank - 1 - i``,
    ``i < 0`` is ``-i - 1``) as a NumPy sample axis; ``None`` for all static axes.  Dynamic
    (batch or sequence) axes are refused.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> axis = NS(static_axis_idx=0), NS(static_axis_idx=-2)
        >>> sample_axis(None, axis[0], 3), sample_axis(None, axis[1], 3)
        (2, 1)
    """
    i = int(getattr(axis, "static_axis_idx", axis))
    if i == _ALL_STATIC:
        return None
    if i == _DYNAMIC:
        node.unsupported(f"an operation along the dynamic axis {getattr(axis, 'name', '')!r}")
    if i >= _ALL_AXES:
        node.unsupported(f"an operation along CNTK's axis {getattr(axis, 'name', '') or i!r}")
    return rank - 1 - i if i >= 0 else -i - 1


def gather_cntk(node):
    """CNTK's ``Gather(indices, reference)`` (C++ order; ``gather(reference, indices)``): rows
    of a ``reference`` without dynamic axes (a table) at the indices, the indices' shape in
    place of its first axis -- the catalog's ``embed``.  A batched reference CNTK 2.7 loads and
    refuses at every run (its validation, GatherNode: a RuntimeError in the words below): a
    stand-in of the output's shape reading both inputs, refused when run (also a sequence
    reference, or sequence indices: CNTK 2.7 loads those and refuses each run in the same
    words, tests/fixtures/cntk_gather_sequences); ``axis`` is refused."""
    if node.lead(1) and node.attr("axis") is None:
        # (CNTK 2.7 loads it, then refuses it whenever it validates the network to run it)
        table = F.constant(0.0, (1,) + tuple(node.shape(1)[node.lead(1) + 1:]))
        stand_in = F.add2(F.embed(F.cast(F.mul_scalar(node.var(0), 0.0), "int64"), table),
                          F.mul_scalar(F.sum(node.var(1)), 0.0))
        return node.refuse_when_run(stand_in, "Gather operation's right operand doesn't "
                                              "expect to have dynamic axis", RuntimeError)
    if node.lead(1) or node.attr("axis") is not None:
        node.unsupported(f"gather from {node.shape(1)} (batched: {node.batched(1)}, axis "
                         f"{node.attr('axis')}): a table without dynamic axes is read")
    return F.embed(F.cast(node.var(0), "int64"), node.var(1))


def top_k_cntk(node):
    """CNTK's ``TopK`` (``top_k(x, numItems, axis)``): the largest values along a sample axis,
    largest first, and their indices as floats (its two outputs)."""
    lead, sample = _sample(node, 0)
    axis = sample_axis(node, node.attr("axis") or 0, len(sample))
    if axis is None:
        node.unsupported("top_k along all static axes")
    x, last = node.var(0), lead + len(sample) - 1
    perm = list(range(last + 1))
    perm[lead + axis], perm[last] = last, lead + axis     # the axis last and back
    moved = x if lead + axis == last else F.transpose(x, tuple(perm))
    values, indices = F.top_k_data(moved, int(node.attr("numItems", 1)), base_axis=last,
                                   with_index=True, ties="cntk")
    if lead + axis != last:
        values, indices = F.transpose(values, tuple(perm)), F.transpose(indices, tuple(perm))
    return values, F.cast(indices, "float32")


def one_hot_cntk(node):
    """CNTK's ``OneHotOp`` (``one_hot(x, numClass, axis=onehotAxis)``): each value of ``x``, a
    class index, as a one-hot vector along a new sample axis (dense, also when CNTK's output
    is sparse)."""
    lead, sample = _sample(node, 0)
    n = int(node.attr("numClass"))
    rank = len(sample) + 1
    axis = sample_axis(node, node.attr("onehotAxis") or 0, rank)
    if axis is None:
        node.unsupported("one_hot along all static axes")
    flat = reshape_samples(S.class_ids(node.var(0), n), lead, (math.prod(sample), 1))
    hot = reshape_samples(F.cast(F.one_hot(flat, (n,)), "float32"), lead, sample + (n,))
    if axis != rank - 1:
        order = list(range(lead + rank - 1))
        hot = F.transpose(hot, tuple(order[:lead + axis] + [lead + rank - 1] +
                                     order[lead + axis:]))
    return hot


def _sample(node, i: int) -> tuple[int, tuple]:
    """(offset of the sample axes, the sample shape) of input ``i``."""
    shape = node.shape(i)
    lead = node.lead(i)
    return lead, tuple(shape[lead:])


def _axes_attr(node, rank: int) -> tuple[int, ...] | None:
    axes = node.attr("axisVec")
    if axes is None:
        axes = [node.attr("axis")] if node.attr("axis") is not None else []
    out = [sample_axis(node, a, rank) for a in axes]
    if not out or any(a is None for a in out):
        return None
    return tuple(sorted(set(out)))


def reshape_cntk(node):
    """CNTK's ``Reshape``: ``newShape`` replaces the sample axes from ``beginAxis`` to
    ``endAxis`` (``0`` copies a dimension, ``-1`` is inferred); the sample axes before them
    keep whatever size they have when run (CNTK's free dimension, the padded steps of
    ``sequence.unpack``, is one)."""
    lead, sample = _sample(node, 0)
    rank = len(sample)
    begin = node.attr("beginAxis")
    end = node.attr("endAxis")
    b = 0 if begin is None else int(begin.static_axis_idx)
    e = rank if end is None or int(end.static_axis_idx) >= _ALL_STATIC else int(
        end.static_axis_idx)
    lo, hi = rank - e, rank - b             # the NumPy range [lo, hi) being replaced
    old = sample[lo:hi]
    new = [old[k] if d == 0 and k < len(old) else int(d)
           for k, d in enumerate(node.attr("newShape") or ())]
    if new.count(-1) > 1:
        node.unsupported(f"newShape {tuple(new)}")
    if -1 in new:
        known = math.prod(d for d in new if d != -1)
        new[new.index(-1)] = math.prod(old) // known if known else 0
    if math.prod(new) != math.prod(old):
        node.unsupported(f"reshaping {old} into {tuple(new)}")
    if lo:    # the axes before the range keep their sizes when run (sequence.unpack's steps)
        return F.reshape_trailing(node.var(0), tuple(new) + sample[hi:], base_axis=lead + lo)
    return reshape_samples(node.var(0), lead, sample[:lo] + tuple(new) + sample[hi:])


def squeeze_cntk(node):
    """CNTK's ``Squeeze``: the size-1 sample axes removed (those of ``axisVec`` if given)."""
    lead, sample = _sample(node, 0)
    axes = _axes_attr(node, len(sample))
    keep = [d for k, d in enumerate(sample) if d != 1 or (axes is not None and k not in axes)]
    return reshape_samples(node.var(0), lead, tuple(keep))


def transpose_axes_cntk(node):
    """CNTK's ``TransposeAxes``: two axes swapped (``axis1``, ``axis2``) or a permutation
    (``axisVec``, column-major: output axis *j* is input axis ``axisVec[j]``)."""
    lead, sample = _sample(node, 0)
    r = len(sample)
    perm = list(range(r))
    if node.attr("axisVec") is not None:
        cm = [int(a.static_axis_idx) for a in node.attr("axisVec")]
        for j, src in enumerate(cm):
            perm[r - 1 - j] = r - 1 - src
    else:
        a = sample_axis(node, node.attr("axis1"), r)
        b = sample_axis(node, node.attr("axis2"), r)
        perm[a], perm[b] = perm[b], perm[a]
    return F.transpose(node.var(0), tuple(range(lead)) + tuple(p + lead for p in perm))


def transpose_dimensions_cntk_v1(node):
    """A v1 ``TransposeDimensions`` node: ``axis1``/``axis2`` swapped (CNTK's internal
    indices, a column-major static axis plus 1), as CNTK 2's ``TransposeAxes``
    (``AsAxis``, BackCompat.cpp:183-189).  A permutation (``axis1 = axis2 = 0``, the
    ``permutation`` field of version 25) is refused as CNTK 2.7 refuses the file: its axes
    0 are the dynamic axes, "TransposeAxes operation currently does not support transposing
    dynamic axes" (``tests/fixtures/cntk_v1_27/v1_survey.json``, ``transpose``)."""
    a = node.attrs
    axes = int(a.get("axis1", 1)), int(a.get("axis2", 2))
    if min(axes) < 1:
        node.unsupported(f"TransposeDimensions of the internal axes {axes} (a permutation: "
                         "CNTK 2.7 refuses it, TransposeAxes operation currently does not "
                         "support transposing dynamic axes)")
    node.attrs = {"axis1": axes[0] - 1, "axis2": axes[1] - 1}
    return transpose_axes_cntk(node)


def splice_cntk(node):
    """CNTK's ``Splice``: inputs joined along ``axis``; an axis past the inputs' rank is a
    new leading sample axis."""
    i = int(node.attr("axis").static_axis_idx)
    ranks = [_sample(node, k)[1] for k in range(node.n_inputs)]
    if i < 0 or i == _DYNAMIC or i == _ALL_STATIC:
        node.unsupported(f"splice along {node.attr('axis')}")
    rank = max(max(len(s) for s in ranks), i + 1)
    xs = []
    for k, sample in enumerate(ranks):
        if not node.batched(k) or node.lead(k) != node.lead(0):
            node.unsupported("splice of an input without the batch axis, or of sequences and "
                             "values without a sequence axis")
        x = node.var(k)
        if len(sample) < rank:
            x = reshape_samples(x, node.lead(k), (1,) * (rank - len(sample)) + sample)
        xs.append(x)
    return F.concatenate(*xs, axis=node.lead(0) + rank - 1 - i)


def slice_cntk(node):
    """CNTK's ``Slice``: ``beginIndex``/``endIndex``/``sliceStrides`` (or their ``...Vec``
    forms) along static axes; negative indices count from the end, an end of 0 is the end.  A
    negative stride walks the range ``[begin, end)`` backwards from its last element (CNTK 2.7:
    ``slice(x, 0, 1, 4, -2)`` of ``[0 1 2 3 4]`` is ``[3 1]``), not Python's ``x[1:4:-2]``."""
    lead, sample = _sample(node, 0)
    if node.attr("axisVec") is not None:
        axes, begins = node.attr("axisVec"), node.attr("beginIndexVec")
        ends, steps = node.attr("endIndexVec"), node.attr("sliceStridesVec") or [1] * len(axes)
    else:
        axes, begins = [node.attr("axis")], [node.attr("beginIndex")]
        ends, steps = [node.attr("endIndex")], [node.attr("sliceStrides", 1)]
    # the sample axes only: F.slice takes the leading (batch, sequence) axes whole, whatever
    # their size in a later forward pass
    start, stop, step = [0] * len(sample), list(sample), [1] * len(sample)
    for axis, b, e, s in zip(axes, begins, ends, steps):
        a = sample_axis(node, axis, len(sample))
        if a is None:
            node.unsupported("slice over all static axes")
        n = sample[a]
        b, e = int(b), int(e)
        b = b + n if b < 0 else b
        e = n if e == 0 else (e + n if e < 0 else e)
        s = int(s or 1)
        if s < 0:           # from the range's last element down to its first
            b, e = e - 1, (b - 1 if b > 0 else None)
        start[a], stop[a], step[a] = b, e, s
    return F.slice(node.var(0), tuple(start), tuple(stop), tuple(step))


def slice_cntk_v1(node):
    """A v1 ``Slice`` node: ``begin_index``/``end_index``/``stride_multiplier`` along the
    ``axis`` of each (CNTK's internal index: a column-major static axis plus 1), as CNTK 2's
    ``Slice``."""
    a = node.attrs
    if any(int(x) < 1 for x in a["axis"]):
        node.unsupported(f"a slice along the internal axes {a['axis']}")
    node.attrs = {"axisVec": [int(x) - 1 for x in a["axis"]],
                  "beginIndexVec": list(a["begin_index"]), "endIndexVec": list(a["end_index"]),
                  "sliceStridesVec": list(a["stride_multiplier"])}
    return slice_cntk(node)


def pad_cntk(node):
    """CNTK's ``Pad``: ``paddingHead``/``paddingFoot`` per sample axis (stored column-major),
    ``paddingMode`` 0 constant, 1 reflect or 2 symmetric (the edge mirrored too,
    :func:`._cntk_read_others.symmetric_pad`)."""
    lead, sample = _sample(node, 0)
    head = list(reversed(node.attr("paddingHead") or []))
    foot = list(reversed(node.attr("paddingFoot") or []))
    modes = {0: "constant", 1: "reflect", 2: "symmetric"}
    mode = modes.get(int(node.attr("paddingMode", 0)))
    if mode is None:
        node.unsupported(f"paddingMode {node.attr('paddingMode')}")
    if len(head) != len(sample) or len(foot) != len(sample):
        node.unsupported(f"padding {head}/{foot} in mode {node.attr('paddingMode')}")
    if mode == "symmetric":
        return symmetric_pad(node, node.var(0), [(int(h), int(f)) for h, f in zip(head, foot)])
    width = tuple(v for h, f in zip(head, foot) for v in (int(h), int(f)))
    return F.pad(node.var(0), width, mode, float(node.attr("paddingConstantValue", 0.0)))


def v1_axis(index: int) -> CntkAxis:
    """A v1 node's axis field (CNTK's internal index: a column-major static axis plus 1) as
    CNTK 2's stored ``Axis``.

    Example:
        >>> v1_axis(1).static_axis_idx
        0
    """
    return CntkAxis(int(index) - 1, f"staticAxisIdx={int(index) - 1}", True)


def splice_cntk_v1(node):
    """A v1 ``RowStack`` node (``splice``): its inputs joined along ``splice_dim``, as CNTK
    2's ``Splice``."""
    dim = int(node.attrs.get("splice_dim", 1))
    if dim < 1:
        node.unsupported(f"a splice along the internal axis {dim}")
    node.attrs = {"axis": v1_axis(dim)}
    return splice_cntk(node)


def reshape_cntk_v1(node):
    """A v1 ``Reshape`` node: ``shape`` replaces the sample axes ``begin_dim`` to ``end_dim``
    (internal indices), as CNTK 2's ``Reshape``."""
    a = node.attrs
    begin, end = int(a.get("begin_dim", 1)), int(a.get("end_dim", 0))
    node.attrs = {"newShape": tuple(a["shape"]), "beginAxis": v1_axis(begin),
                  "endAxis": v1_axis(end) if end >= 1 else None}
    return reshape_cntk(node)
