"""CNTK's ops on shapes: ``reshape``, ``splice``, ``transpose``, ``pad``, ``one_hot``, ...
(the products are in ``_ops_times.py``; ``slice`` and ``gather``, which pick parts of a value,
in ``_ops_select.py``).  Axes are per sample
(row-major, as CNTK's Python shows shapes); the batch axis stays in front, and a sequence's two
leading axes (batch, steps) stay as they are: a reshape of a sequence's steps reshapes from
axis 2 on (``F.reshape_trailing``), so the graph holds no batch size or padded length and a
padded step never mixes with another's values.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.input_variable((2, 3))
    >>> C.reshape(x, 6).shape, C.transpose(x, (1, 0)).shape
    ((6,), (3, 2))
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ... import cntk_semantics as S
from ... import functions as F
from ... import sequence as Seq
from . import _graph as G
from ._deferrable import defer_module
from ._sparse_operands import computes_sparse, refuse_sparse_operands
from ._adapt import (batched, float_arrays, lead_axes, named, one_op,
                     operand as _as_operand, operands_dtype, reshape_samples, same_dtype,
                     refuse_several_outputs, sample_axis, sample_shape, unwrap, wrap)
from ._axis import Axis
from ._axis_arguments import refuse_whole_sample, takes_axes
from ._run_checks import check_each_run
from ._mixed_axes import refuse_mixed_axes
from ._mixins import GraphObject
from ._cntk_attributes import CNTK_ATTRIBUTES
from ._seq_axes import FREE_DIMENSION, free_steps, mark_free_axes

__all__ = ["reshape", "splice", "transpose", "swapaxes",
           "expand_dims", "squeeze", "flatten", "pad", "one_hot", "zeros_like",
           "ones_like", "eye_like", "depth_to_space", "space_to_depth",
           "reconcile_dynamic_axes", "to_batch", "unpack_batch", "CONSTANT_PAD", "REFLECT_PAD",
           "SYMMETRIC_PAD", "TIMES_NO_INFERRED_INPUT_RANK",
           "TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK"]

CONSTANT_PAD, REFLECT_PAD, SYMMETRIC_PAD = 0, 1, 2
TIMES_NO_INFERRED_INPUT_RANK = -1
TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK = -2


def _shown(x) -> str:
    """``x`` as CNTK 2.7 names an operand in an op's error (``Input('x', [#], [3])``)."""
    return repr(x if isinstance(x, GraphObject) else wrap(x))


def _axis_index(x, axis) -> int:
    """A per-sample axis (an int or a static ``Axis``) as a Stadyn axis."""
    if isinstance(axis, Axis):
        axis = axis.static_axis_index()
    return sample_axis(x, int(axis))


@takes_axes(end_axis="axis", begin_axis="axis")     # (CNTK 2.7 reads end_axis first)
def reshape(x, shape, begin_axis=None, end_axis=None, name: str = ""):
    """Each sample's axes ``begin_axis`` to ``end_axis`` (all by default) reshaped to ``shape``
    (one entry may be -1)."""
    refuse_several_outputs(x, "reshape")
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    rank = len(sample_shape(x))
    # Axis.new_leading_axis() is the place after the sample's last axis (CNTK 2.7's reshape
    # swaps it with Axis(0) as it reverses the axes): (2, 3) to (1, 1) there is (2, 3, 1, 1)
    begin, end = (rank if isinstance(a, Axis) and a == Axis.new_leading_axis() else
                  a.static_axis_index() if isinstance(a, Axis) else a
                  for a in (begin_axis, end_axis))
    # CNTK counts a negative axis from the end of the sample: -1 is its last axis
    begin = begin + rank if begin is not None and begin < 0 else begin
    end = end + rank if end is not None and end < 0 else end
    v = _as_operand(x)
    if FREE_DIMENSION in shape:
        shape = _free_target(v, shape)
        if begin is None and end is None and lead_axes(x) == 1:    # (the whole sample, the
            # free axis' part inferred at each run)
            return named(wrap(F.reshape_trailing(v, shape, base_axis=1)), name, "Reshape")
    if begin is None and end is None and lead_axes(x) == 0 and -1 in shape and free_steps(v):
        # a value without a batch axis (unpack_batch's) whose free axis a -1 takes in: its
        # size inferred at each run, shown as -3 (CNTK 2.7: (-3, 3, 2) to (3, -1) is (3, -3))
        return named(wrap(F.reshape_trailing(v, shape, base_axis=0)), name, "Reshape")
    out = _reshape_after_steps(v, shape, begin, end) if lead_axes(x) == 1 else None
    if out is None:
        out = S.reshape_sample(v, shape, batched(x), begin, end, sequence=lead_axes(x) == 2)
    return named(wrap(out), name, "Reshape")


def _free_target(v, shape: tuple) -> tuple:
    """A reshape's target with a free dimension (-3): the operand's free axis goes there, as
    CNTK 2.7 reshapes ``(-3, 3)`` to ``(-3, 1, 3)`` (the -3 read as the one axis to infer);
    an operand without one is CNTK 2.7's RuntimeError."""
    if not free_steps(v) or shape.count(FREE_DIMENSION) != 1 or -1 in shape:
        # (CNTK 2.7 shows the free dimension as '*' and the inferred one, -1, as 0)
        shown = " x ".join("*" if d == FREE_DIMENSION else str(max(d, 0)) for d in shape)
        raise RuntimeError(f"NDShape::TotalSize: TotalSize cannot be determined for a NDShape "
                           f"'[{shown}]' with one or more dimensions being InferredDimension or "
                           f"FreeDimension.\nreshape: the target {shape} has a free dimension "
                           "(-3) that the operand's free axes do not give")
    return tuple(-1 if d == FREE_DIMENSION else d for d in shape)


def _reshape_after_steps(v, shape: tuple, begin, end):
    """The reshape of a value holding ``sequence.unpack``'s padded steps (CNTK's free
    dimension), which keep the size they have when run: of the axes after them (``expand_dims``,
    a new shape that starts with the steps), or of them and the axes after them into a shape
    with a -1 (which the steps join); None otherwise."""
    free = [a - 1 for a in free_steps(v)]
    if not free:
        return None
    sample = tuple(v.shape[1:])
    b = 0 if begin is None else begin % (len(sample) + 1)
    e = len(sample) if end is None else end % (len(sample) + 1)
    need = max(free) + 1 - b          # a new shape that starts as the sample does keeps them
    if 0 < need <= len(shape) and shape[:need] == sample[b:b + need] and -1 not in shape[:need]:
        b, shape = b + need, shape[need:]
    if all(a < b for a in free) and shape.count(-1) <= 1:
        known = math.prod(s for s in shape if s != -1)
        size = math.prod(sample[b:e])
        new = tuple(size // known if s == -1 and known else s for s in shape)
        if math.prod(new) != size:
            raise ValueError(f"reshape: cannot reshape a sample's axes {sample[b:e]} to {shape}")
        return F.reshape_trailing(v, new + sample[e:], base_axis=1 + b)
    if shape.count(-1) == 1 and all(b <= a < e for a in free):
        return F.reshape_trailing(v, shape + sample[e:], base_axis=1 + b)
    return None


@takes_axes(axis="axis", unless=lambda args, kwargs: len(args) == 1)   # (one: returned as is)
def splice(*inputs, axis=-1, name: str = ""):
    """The operands joined along the per-sample ``axis`` (``Axis.new_leading_axis()``: along a
    new first axis).  As in CNTK, operands of a lower rank get leading axes of 1 and an axis of
    1 is broadcast to the others' size (``splice(x, y)`` of samples ``(16,)`` and ``(1, 1,
    24)`` is ``(1, 1, 40)``; scalars spliced along the default axis make a vector); along
    ``axis=None`` (all of the sample's axes) CNTK 2.7's RuntimeError as the shape is
    inferred."""
    items = list(inputs[0]) if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)) \
        else list(inputs)
    if any(isinstance(i, GraphObject) and len(getattr(i, "outputs", ())) > 1 for i in items):
        raise TypeError("cannot convert list element to CNTK::Variable\n(an operand is a "
                        "Function of several outputs: pick one of its outputs)")
    refuse_mixed_axes("Splice", tuple(items))
    if len(items) == 1:
        from ._ops_math import alias
        return alias(items[0], name)
    refuse_whole_sample((axis,), lambda: (   # (each operand named once)
        f"Function 'Splice: {', '.join(dict.fromkeys(_shown(i) for i in items))} -> Unknown': "
        "Splice operation currently does not support splicing along dynamic axis"))
    rank = max(len(sample_shape(i)) for i in items)
    if rank == 0 and not isinstance(axis, Axis) and int(axis) == -1:
        rank = 1    # scalars spliced along the default axis: a vector (CNTK 2.7)
    if not isinstance(axis, Axis) and int(axis) < -rank:
        rank = -int(axis)   # (CNTK 2.7: leading axes of 1 up to it, (1,) along -3: (2, 1, 1))
    dtype = operands_dtype(*items, op="Splice")
    vs = [_to_rank(v, i, rank) for v, i in zip(
        same_dtype([_as_operand(i, dtype) for i in items], "Splice"), items)]
    ref = next((i for i in items if batched(i)), items[0])
    along = axis
    if isinstance(axis, Axis) and axis == Axis.new_leading_axis():
        vs = [_new_leading_axis(v, lead_axes(i), rank) for v, i in zip(vs, items)]
        along, rank = 0, rank + 1
    ax = S.static_axis(along.static_axis_index() if isinstance(along, Axis) else int(along),
                       rank, 0) - rank
    vs = _broadcast_sample_axes([_match_batch(v, i, ref) for v, i in zip(vs, items)], ax,
                                 rank)
    out = named(wrap(F.concatenate(*vs, axis=ax)), name, "Splice")
    # (a clone calls splice again over the substitutes: the ranks, broadcasts and alignments
    # above are the operands', and the axis is the one given: a new leading axis stays new)
    G.CALLS[out.variable] = (splice, tuple(unwrap(i) for i in items), {"axis": axis, "name": name})
    return out


def _new_leading_axis(v, lead: int, rank: int):
    """``v`` (``lead`` leading axes, then ``rank`` sample axes) with a sample axis of 1 before
    its sample's; a free dimension's length is each run's, never written in."""
    sample = tuple(v.shape[v.ndim - rank:])
    free = [k - lead for k in free_steps(v) if k >= lead]
    if len(free) == 1:
        return F.reshape_trailing(v, (1,) + tuple(-1 if k in free else d
                                                  for k, d in enumerate(sample)), base_axis=lead)
    return reshape_samples(v, lead, (1,) + sample)


def _to_rank(v, item, rank: int):
    """``v`` with leading sample axes of 1 up to ``rank`` sample axes."""
    for _ in range(rank - len(sample_shape(item))):
        v = F.stack(v, axis=v.ndim - len(sample_shape(item)))
    return v


def _broadcast_sample_axes(vs, ax: int, rank: int):
    """Every one of the last ``rank`` (sample) axes but ``ax`` (negative) of size 1 broadcast
    to the others' size; two sizes above 1 that differ are CNTK's error."""
    sizes = {}
    for k in range(-rank, 0):
        dims = {int(v.shape[k]) for v in vs} - {1}
        if k != ax and len(dims) > 1:
            raise ValueError(f"splice: conflicting sizes {sorted(dims)} of sample axis "
                             f"{rank + k} between the operands")
        if k != ax and dims:
            sizes[k] = dims.pop()
    out = []
    for v in vs:
        if any(int(v.shape[k]) == 1 for k in sizes):
            v = F.broadcast(v, tuple(sizes.get(k - v.ndim, -1) for k in range(v.ndim)))
        out.append(v)
    return out


def _match_batch(v, item, ref, lead: int | None = None):
    """An unbatched operand spliced with batched ones is repeated for every sample (every step
    of a sequence ``ref``; ``lead=1``: once per sequence)."""
    if batched(item) or not batched(ref):
        return v
    batch = _as_operand(ref)
    n = lead_axes(ref) if lead is None else lead
    zeros = F.mul_scalar(reshape_samples(F.sum(batch, axis=list(range(n, batch.ndim))), n,
                                       (1,) * v.ndim), 0.0)
    return F.add2(zeros, F.reshape(v, (1,) + tuple(v.shape)))


@takes_axes(perm="permutation")
def transpose(x, perm, name: str = ""):
    """The sample's axes permuted: output axis ``i`` is input axis ``perm[i]``."""
    lead = lead_axes(x)
    axes = [_axis_index(x, p) for p in perm]
    return named(wrap(F.transpose(_as_operand(x), tuple(range(lead)) + tuple(axes))), name,
                 "TransposeAxes")


@takes_axes(axis1="axis", axis2="axis")
def swapaxes(x, axis1: int = 0, axis2: int = 1, name: str = ""):
    """The sample's axes ``axis1`` and ``axis2`` (ints or static ``Axis`` objects) swapped;
    None (all of the sample's axes) is CNTK 2.7's RuntimeError as the shape is inferred."""
    refuse_whole_sample((axis1, axis2), lambda: (
        f"Function 'TransposeAxes: {_shown(x)} -> Unknown': TransposeAxes operation currently "
        "does not support transposing dynamic axes."))
    shape = tuple(sample_shape(x))
    if all(not isinstance(k, Axis) for k in (axis1, axis2)):
        # CNTK 2.7 counts the axes from the last (Python's axis k is its static axis -k-1): one
        # counted back past the first is a ValueError, one counted on past the last adds axes
        # of 1 in front (swapaxes of a (2,) sample's 0 and -2: (2, 1))
        at = [-int(k) - 1 for k in (axis1, axis2)]
        for c in at:
            if c + len(shape) < 0:
                raise ValueError(f"Axis 'Axis('staticAxisIdx={c}')' is out of bounds for the "
                                 f"rank '{len(shape)}' it applies to.")
        at = [c + len(shape) if c < 0 else c for c in at]   # (CNTK's own order, from 0)
        n = max([len(shape)] + [c + 1 for c in at])
        if n > len(shape):
            x = reshape(x, (1,) * (n - len(shape)) + shape)
        a, b = (n - 1 - c for c in at)
    else:
        n = len(shape)
        a, b = (int(k.static_axis_index() if isinstance(k, Axis) else k) % n
                for k in (axis1, axis2))
    perm = list(range(n))
    perm[a], perm[b] = perm[b], perm[a]
    return named(transpose(x, perm), name, "TransposeAxes")


@takes_axes(axis="axis", whole="Reshape: operation does not support reshaping dynamic axis")
def expand_dims(x, axis, name: str = ""):
    """A new sample axis of size 1 after the per-sample ``axis`` (CNTK 2.7 counts it so:
    ``axis=0`` makes the second axis, -1 the last); ``Axis.end_static_axis()`` puts it
    first."""
    shape = list(sample_shape(x))
    if isinstance(axis, Axis) and axis == Axis.end_static_axis():
        at = 0
    else:
        a = axis.static_axis_index() if isinstance(axis, Axis) else int(axis)
        at = (a % len(shape)) + 1 if shape else 0
    shape.insert(at, 1)
    return named(reshape(x, shape), name, "ExpandDims")


@takes_axes(axes="axes")
def squeeze(x, axes=None, name: str = ""):
    """The sample without its axes of size 1 (or just ``axes``)."""
    shape = list(sample_shape(x))
    if axes is None:
        drop = [i for i, s in enumerate(shape) if s == 1]
    else:
        drop = [(a.static_axis_index() if isinstance(a, Axis) else int(a)) % len(shape)
                for a in (axes if isinstance(axes, (list, tuple)) else [axes])]
    kept = [s for i, s in enumerate(shape) if i not in drop]
    return named(reshape(x, kept), name, "Squeeze")


@takes_axes(axis="axis")
def flatten(x, axis=None, name: str = ""):
    """The sample as a matrix: its axes before ``axis`` merged, and those from ``axis`` on
    (``axis=None``: ``(1, size)``)."""
    shape = sample_shape(x)
    k = 0 if axis is None else (axis.static_axis_index() if isinstance(axis, Axis)
                                else int(axis)) % max(len(shape), 1)
    new = (math.prod(shape[:k]), math.prod(shape[k:]))
    free = [a - lead_axes(x) for a in free_steps(_as_operand(x))]
    if len(free) == 1:          # (an input's free dimension: its part is each run's)
        new = tuple(FREE_DIMENSION if (free[0] < k) == (j == 0) else d
                    for j, d in enumerate(new))
    return named(reshape(x, new), name, "Flatten")


def pad(x, pattern, mode=CONSTANT_PAD, constant_value=0, name: str = ""):
    """The sample padded by ``pattern`` (``[(before, after)]`` per axis) with a constant, by
    reflection (``REFLECT_PAD``) or by mirroring the edge too (``SYMMETRIC_PAD``)."""
    refuse_several_outputs(x, "pad")
    v = _as_operand(x)
    pattern = [tuple(int(p) for p in pair) for pair in pattern]
    lead = v.ndim - len(pattern)
    if mode in (REFLECT_PAD, SYMMETRIC_PAD):
        _check_mirror_widths(v.shape[lead:], pattern, mode == REFLECT_PAD)
    if mode == CONSTANT_PAD:
        widths = tuple(p for pair in pattern for p in pair)
        out = F.pad(v, widths, "constant", float(constant_value))
    elif mode == REFLECT_PAD:
        out = F.pad(v, tuple(p for pair in pattern for p in pair), "reflect")
    elif mode == SYMMETRIC_PAD:
        out = v
        for k, (before, after) in enumerate(pattern):
            ax = lead + k
            size = out.shape[ax]
            parts = [_index(out, ax, i) for i in range(before - 1, -1, -1)] + [out] + \
                [_index(out, ax, size - 1 - i) for i in range(after)]
            out = F.concatenate(*parts, axis=ax) if len(parts) > 1 else out
    else:
        raise ValueError(f"pad: unknown mode {mode!r}")
    # (one op reading x, as CNTK 2.7 shows Pad: the symmetric pad's slices are inside it)
    return named(wrap(one_op(out, v)), name, "Pad")


def _check_mirror_widths(sample, pattern, reflect: bool) -> None:
    """CNTK 2.7 mirrors an axis once: a reflection's head and foot each fit in its length - 1,
    a symmetric pad's in its length (longer ones it refuses when the op is built)."""
    room = "input dimension - 1" if reflect else "input dimension"
    for k, (size, pair) in enumerate(zip(sample, pattern)):
        if max(pair) > size - (1 if reflect else 0):
            raise RuntimeError(
                f"pad: with {'REFLECT_PAD' if reflect else 'SYMMETRIC_PAD'} the head and foot "
                f"{pair} of axis {k} (of length {size}) must be no greater than {room} "
                "(CNTK 2.7 refuses longer ones)")


def _index(v, axis: int, i: int):
    start, stop = [None] * v.ndim, [None] * v.ndim
    start[axis], stop[axis] = i, i + 1
    return F.slice(v, start, stop, [1] * v.ndim)


@takes_axes(axis="axis")
def one_hot(x, num_classes: int, sparse_output: bool = False, axis=-1, name: str = ""):
    """Each value of ``x`` (a class index) as a one-hot vector of ``num_classes`` along a new
    per-sample ``axis`` (None, all of the sample's axes: CNTK 2.7's RuntimeError as the shape
    is inferred)."""
    refuse_several_outputs(x, "one_hot_op")
    refuse_whole_sample((axis,), lambda: (
        f"Function 'OneHotOp: {_shown(x)} -> Unknown': one hot operation currently does not "
        "support on dynamic axis"))
    v = _as_operand(x)
    shape = tuple(sample_shape(x))
    n = lead_axes(x)
    # each index on an axis of its own: no size is written into the graph (sequence.unpack's
    # steps keep the size they have when run)
    index = F.reshape_trailing(S.class_ids(v, int(num_classes)), (1,), base_axis=v.ndim)
    out = F.cast(F.one_hot(index, (int(num_classes),)), "float32")
    ax = axis.static_axis_index() if isinstance(axis, Axis) else int(axis)
    rank = len(shape) + 1
    ax = ax % rank
    if ax != rank - 1:
        perm = list(range(n)) + [n + i for i in range(ax)] + [n + rank - 1] + \
            [n + i for i in range(ax, rank - 1)]
        out = F.transpose(out, tuple(perm))
    out = named(wrap(one_op(out, v)), name, "OneHotOp")
    return computes_sparse(out) if sparse_output else out


def zeros_like(x, name: str = ""):
    """Zeros of ``x``'s shape, whatever ``x`` holds (NaN too), as CNTK 2.7's ``ConstantOp``.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(2)
        >>> C.zeros_like(x).eval({x: np.array([[np.nan, -1.0]], np.float32)}).tolist()
        [[0.0, 0.0]]
    """
    v = _as_operand(x)
    return named(wrap(one_op(S.constant_like(v, 0.0), v)), name, "ConstantOp")


def ones_like(x, name: str = ""):
    """Ones of ``x``'s shape, whatever ``x`` holds (NaN too), as CNTK 2.7's ``ConstantOp``."""
    v = _as_operand(x)
    return named(wrap(one_op(S.constant_like(v, 1.0), v)), name, "ConstantOp")


def eye_like(x, sparse_output: bool = True, name: str = ""):
    """An identity matrix of ``x``'s shape (with the batch axis: the rows are the samples);
    with ``sparse_output`` (the default) ``eval`` gives it as a SciPy CSR matrix, as CNTK 2.7
    does (a dense array where SciPy is not installed).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(3)
        >>> C.eye_like(x).eval({x: np.zeros((2, 3), np.float32)}).toarray().tolist()
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    v = _as_operand(x)
    if v.ndim != 2:
        raise ValueError(f"eye_like: needs a matrix (a batch of vectors), got {v.shape}")
    out = named(wrap(F.cntk_eye_like(v)), name, "EyeLikeOp")
    CNTK_ATTRIBUTES[out.variable] = {"OutputSparse": bool(sparse_output)}
    if sparse_output:
        G.SPARSE_OUTPUTS.add(out.variable)
    return out


@float_arrays("operand")
def depth_to_space(operand, block_size: int, name: str = ""):
    """``(C * b * b, H, W)`` samples rearranged to ``(C, H * b, W * b)``."""
    v = _as_operand(operand)
    b = int(block_size)
    c, h, w = sample_shape(operand)
    n = lead_axes(operand)
    y = reshape_samples(v, n, (b, b, c // (b * b), h, w))
    y = F.transpose(y, tuple(range(n)) + tuple(n + a for a in (2, 3, 0, 4, 1)))
    out = one_op(wrap(reshape_samples(y, n, (c // (b * b), h * b, w * b))), operand)
    return named(out, name, "DepthToSpace")    # (one op reading the operand, as CNTK's block)


@float_arrays("operand")
def space_to_depth(operand, block_size: int, name: str = ""):
    """``(C, H, W)`` samples rearranged to ``(C * b * b, H / b, W / b)``."""
    v = _as_operand(operand)
    b = int(block_size)
    c, h, w = sample_shape(operand)
    n = lead_axes(operand)
    y = reshape_samples(v, n, (c, h // b, b, w // b, b))
    y = F.transpose(y, tuple(range(n)) + tuple(n + a for a in (2, 4, 0, 1, 3)))
    out = one_op(wrap(reshape_samples(y, n, (c * b * b, h // b, w // b))), operand)
    return named(out, name, "SpaceToDepth")    # (one op reading the operand, as CNTK's block)


def reconcile_dynamic_axes(x, dynamic_axes_as, name: str = ""):
    """``x`` with the dynamic axes of ``dynamic_axes_as``: without sequences, ``x`` itself
    (repeated for every sample when it has no batch axis); on a sequence's axes, one value
    per sequence (or one for all) is repeated at every step; a sequence on another sequence
    axis is put on that of ``dynamic_axes_as`` (a ValueError at run where the lengths
    differ)."""
    like = _as_operand(dynamic_axes_as)
    if getattr(like, "sequence_lengths", None) is not None:
        v = _as_operand(x)
        if getattr(v, "sequence_lengths", None) is None:
            v = Seq.broadcast_as(_match_batch(v, x, dynamic_axes_as, lead=1), like)
        elif v.sequence_lengths is not like.sequence_lengths:
            # a sequence on another axis: on like's, its lengths checked at run (CNTK 2.7)
            out = named(wrap(F.sequence_reconcile(v, v.sequence_lengths, like,
                                                  like.sequence_lengths)),
                        name, "ReconcileDynamicAxis")
            _check_layouts_at_run(out, x, dynamic_axes_as)
            return out
        return named(wrap(F.identity(v)), name, "ReconcileDynamicAxis")
    if batched(x) or not batched(dynamic_axes_as):
        from ._ops_math import alias
        return named(alias(x), name, "ReconcileDynamicAxis")
    out = _match_batch(_as_operand(x), x, dynamic_axes_as)
    return named(wrap(out), name, "ReconcileDynamicAxis")


def to_batch(x, name: str = ""):
    """The first axis of an unbatched ``x`` becomes the batch axis (an ``x`` that has a batch
    or sequence axis already is refused, as CNTK 2.7 refuses it)."""
    if batched(x):
        raise RuntimeError("to_batch: the input should not have a dynamic axis (it has "
                           "the batch axis already; CNTK 2.7 refuses it: 'ToBatch: the input "
                           "should not have dynamic axis.')")
    out = F.identity(_as_operand(x))
    G.BATCH.add(out)
    return named(wrap(out), name, "ToBatchAxis")


def unpack_batch(x, name: str = ""):
    """The batch axis of ``x`` becomes an ordinary first axis (an ``x`` with a sequence axis
    is refused, as CNTK 2.7 refuses it)."""
    operand = _as_operand(x)
    if operand.sequence_lengths is not None:
        raise RuntimeError("UnpackBatch: only support input with batch axis and no sequence "
                           "axis. (unpack_batch of a sequence: CNTK 2.7 refuses it; unpack "
                           "its steps first with sequence.unpack)")
    out = F.identity(operand)
    G.BATCH.unmark(out)
    # (the batch, shown as CNTK 2.7's FreeDimension, -3, and the operand's own free axes,
    # which a slice reads as an input's: CNTK 2.7 slices and runs any range along them)
    free, unpacked = free_steps(operand), free_steps(operand, of_inputs=False)
    mark_free_axes(out, {0} | free, inputs_own=free - unpacked)
    return named(wrap(out), name, "UnpackBatchAxis")


# CNTK 2.7 refuses these when run on a sparse input (a tensor operation on sparse data)
def _keeps_last_axis(args: tuple, kwargs: dict, out) -> bool:
    """Whether a ``reshape`` keeps its operand's last sample axis: CNTK 2.7 holds sparse data
    as a matrix whose rows are that axis (ComputationNode.h:433-435, "for sparse matrices ...
    we keep the underlying storage identical"), and reshapes a sparse matrix only to the same
    rows and columns (Matrix.cpp:1882-1891, else Feature Not Implemented at the run): such a
    reshape of a sparse input runs, and gives dense data."""
    x = args[0] if args else kwargs.get("x")
    before, after = tuple(sample_shape(x)), tuple(getattr(out, "shape", ()))
    return bool(before) and bool(after) and before[-1] == after[-1]


refuse_sparse_operands(globals(), ["reshape", "splice", "transpose", "swapaxes", "pad",
                                  "one_hot"], unless={"reshape": _keeps_last_axis})

# ops on placeholders without a shape (or on layers) wait for their shapes
defer_module(globals(), __all__)


def _check_layouts_at_run(out, x, like) -> None:
    """CNTK 2.7's ValueError where a run gives a sequence put on another sequence axis
    (``reconcile_dynamic_axes(a, b)``) other lengths than ``like``'s: "ReconcileDynamicAxis5
    ReconcileDynamicAxis operation discovered that Input3 InputValue operation produced an MB
    layout that is incompatible with that of Input4 InputValue." (each node by its uid and
    CNTK's operation), as the run's data are fed (``_run_checks.check_each_run``); where the
    lengths are computed in the graph, the op's own check at run remains."""
    lengths = [getattr(_as_operand(v), "sequence_lengths", None) for v in (x, like)]
    if any(n is None or n.parent is not None for n in lengths):
        return
    refs = [weakref.ref(n) for n in lengths]

    def node(v) -> str:
        if getattr(v, "is_input", False):
            return f"{v.uid} InputValue"
        root = getattr(v, "root_function", None) or getattr(v, "owner", None)
        return f"{root.uid} {root.op_name}" if root is not None else v.uid

    def check() -> None:
        ours, theirs = (r() for r in refs)
        if ours is None or theirs is None or (tuple(ours.shape) == tuple(theirs.shape) and
                                              bool((ours.data == theirs.data).all())):
            return
        raise ValueError(
            f"{out.root_function.uid} ReconcileDynamicAxis operation discovered that "
            f"{node(x)} operation produced an MB layout that is incompatible with that of "
            f"{node(like)}.\nreconcile_dynamic_axes: the sequences of lengths "
            f"{ours.data.tolist()} cannot be put on the axis of sequences of lengths "
            f"{theirs.data.tolist()}")
    check_each_run(unwrap(out), check)
