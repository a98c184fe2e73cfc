"""The ``cntk_import`` rules of the sequence ops: CNTK's delays outside a loop, its
``ReconcileDynamicAxis`` and the blocks its ``sequence`` module makes (``Sequence::Slice`` for
``first``/``last``, ``Sequence::ReduceElements``, ``Sequence::BroadcastAs``,
``Sequence::Softmax``), and the ops that leave the sequence axis or make a new one
(``UnpackSequenceOp``, ``ToSequenceOp``, ``Where``, ``Sequence::Gather``,
``Sequence::Scatter``).

A sequence input is ``(B, T, *sample)`` with its lengths (``node.lead(i) == 2``).  The importer
(``serialize/_legacy_import.py``, ``_legacy_loops.py``) calls a ``Sequence::*`` block's rule
instead of expanding its body, with the block's data arguments as inputs and the body's
functions as ``node.attr("body")``; a delay inside a graph loop never reaches a rule (the loop
becomes a ``recurrence``).
"""

from __future__ import annotations

import math

from ... import functions as F
from ... import sequence as S

__all__ = ["delay_cntk", "delay_cntk_v1", "reconcile_cntk", "sequence_slice_cntk",
           "sequence_reduce_cntk",
           "broadcast_as_cntk", "sequence_softmax_cntk", "unpack_cntk", "to_sequence_cntk",
           "where_cntk", "gather_cntk", "scatter_cntk", "gather_packed_cntk_v1",
           "scatter_packed_cntk_v1"]


def _sequence(node, i: int = 0):
    if node.lead(i) != 2:
        node.unsupported(f"input {i} {node.shape(i)} is not a sequence")
    return node.var(i)


def delay_cntk(node):
    """``PastValue(x, initial)`` / ``FutureValue``: ``offset`` steps earlier / later, the
    initial state (a constant, parameter or one value per sequence) outside the sequence."""
    offset = int(node.attr("offset", 1))
    if offset < 1:
        node.unsupported(f"offset {offset}")
    fn = S.past_value if node.type == "PastValue" else S.future_value
    return fn(_sequence(node), node.var(1), offset)


def delay_cntk_v1(node):
    """A v1 ``PastValue``/``FutureValue`` node (``time_step`` steps; its second input, where
    CNTK 2's v1 writer gives one, the initial state): as CNTK 2's."""
    if node.n_inputs != 2:
        node.unsupported("a v1 delay without an initial-state input")
    node.attrs = {"offset": node.attrs.get("time_step", 1)}
    return delay_cntk(node)


def reconcile_cntk(node):
    """``ReconcileDynamicAxis(x, like)``: ``x`` as it is when it has ``like``'s axes; a value
    per sequence repeated at each of ``like``'s steps; a value without dynamic axes (a
    constant: CNTK's ``sequence.is_first`` / ``is_last`` reconcile a 0 with the sequence) at
    every step of every sequence of ``like``.  A sequence on another sequence axis is put on
    ``like``'s, its lengths checked at run (CNTK 2.7's ValueError where they differ)."""
    a, b = node.lead(0), node.lead(1)
    if a == b == 2:
        x, like = node.var(0), node.var(1)
        if x.sequence_lengths is like.sequence_lengths:
            return x
        return F.sequence_reconcile(x, x.sequence_lengths, like, like.sequence_lengths)
    if a == b:
        return node.var(0)
    if a == 1 and b == 2:
        return S.broadcast_as(node.var(0), node.var(1))
    if a == 0 and b == 2:
        return _at_every_step(node.var(0), node.var(1))
    node.unsupported(f"reconciling {node.shape(0)} with the dynamic axes of {node.shape(1)}")


def _at_every_step(x, like):
    """``x`` (no dynamic axes, ``s``) as a sequence ``(B, T, *s)`` on ``like``'s axis: the
    unpacked mask of ``like`` (1 at real steps, finite whatever ``like`` holds) times ``x``."""
    _, mask = S.unpack(like)
    shape = tuple(x.shape)
    if shape:
        mask = F.reshape_trailing(mask, (1,) * len(shape), base_axis=2)
    return S.to_sequence_like(F.mul2(mask, x), like)


def _body_types(node) -> list[str]:
    return [f.type for f in node.attr("body") or ()]


def sequence_slice_cntk(node):
    """``Sequence::Slice``: ``sequence.slice(x, begin, end)``, read off the block's body.  CNTK
    marks the steps to keep with delays of a constant 0 whose initial state is 1: ``begin > 0``
    as ``1 - PastValue(begin)``, ``begin < 0`` as ``FutureValue(-begin)``, ``end > 0`` as
    ``PastValue(end)``, ``end < 0`` as ``1 - FutureValue(-end)`` (both: their product).  A
    slice of one step (``sequence.first``, ``last``) leaves no sequence axis, as in CNTK."""
    body = list(node.attr("body") or ())
    types = _body_types(node)
    delays = [f for f in body if f.type in ("PastValue", "FutureValue")]
    negated = {f.inputs[1] for f in body if f.type == "Minus"}
    begin = end = 0
    for f in delays:
        k = int(f.attrs.get("offset", 1))
        past, minus = f.type == "PastValue", f.outputs[0] in negated
        if past == minus:
            begin = k if past else -k
        else:
            end = k if past else -k
    expected = {"Where", "PackedIndex", "GatherPacked", "ReconcileDynamicAxis"}
    if not delays or len(delays) > 2 or not expected <= set(types) or \
            not set(types) <= expected | {"PastValue", "FutureValue", "Minus", "ElementTimes"}:
        node.unsupported(f"a sequence slice of {types}")
    x = _sequence(node)
    if (begin, end) == (0, 1):
        return S.first(x)
    if (begin, end) == (-1, 0):
        return S.last(x)
    y = S.slice(x, begin, end)
    return S.first(y) if end - begin == 1 else y


def sequence_reduce_cntk(node):
    """``Sequence::ReduceElements``: ``sequence.reduce_sum`` and ``reduce_max``."""
    reductions = [f.attrs.get("reductionOpName") for f in node.attr("body") or ()
                  if f.type == "ReduceElements"]
    ops = {"Sum": S.reduce_sum, "Max": S.reduce_max}
    if len(reductions) != 1 or reductions[0] not in ops:
        node.unsupported(f"a sequence reduction of {_body_types(node)} ({reductions})")
    return ops[reductions[0]](_sequence(node))


def broadcast_as_cntk(node):
    """``Sequence::BroadcastAs(x, like)``: ``sequence.broadcast_as``; a value without dynamic
    axes (``PastValueWindow``'s constants) at every step of every sequence; onto a value
    without a sequence axis (``AttentionModel`` on a decoder state that is not a sequence) a
    value per sample is that value, as CNTK's ``ReconcileDynamicAxis`` inside gives."""
    if node.lead(0) == 1 and node.lead(1) == 1:
        return node.var(0)
    if node.lead(0) == 0:
        return _at_every_step(node.var(0), _sequence(node, 1))
    if node.lead(0) != 1:
        node.unsupported(f"broadcasting {node.shape(0)}: one value per sequence is needed")
    return S.broadcast_as(node.var(0), _sequence(node, 1))


def sequence_softmax_cntk(node):
    """``Sequence::Softmax``: the softmax over each sequence's steps."""
    return S.softmax(_sequence(node))


def unpack_cntk(node):
    """``UnpackSequenceOp``: ``sequence.unpack``, the padded steps as a plain ``(B, T, ...)``
    value (``sequenceUnpackPaddingValue`` at padded steps) and, unless
    ``sequenceUnpackSuppressMaskOutput``, the ``(B, T)`` mask."""
    padded, mask = S.unpack(_sequence(node), float(node.attr("sequenceUnpackPaddingValue", 0.0)))
    return padded if node.n_outputs == 1 else (padded, mask)


def to_sequence_cntk(node):
    """``ToSequenceOp(x[, lengths])``: ``to_sequence``, the first sample axis of a batched
    ``x`` made the steps of new sequences (every one the padded length without lengths)."""
    if node.lead(0) != 1 or len(node.shape(0)) < 2:
        node.unsupported(f"to_sequence of {node.shape(0)}: a batched value with a step axis is "
                         "needed")
    if node.n_inputs == 1:
        return S.to_sequence(node.var(0))
    if node.lead(1) != 1 or len(node.shape(1)) > 2 or math.prod(node.shape(1)[1:]) != 1:
        node.unsupported(f"to_sequence with lengths {node.shape(1)}: one number per sequence "
                         "is needed")
    return S.to_sequence(node.var(0), node.var(1))


def where_cntk(node):
    """``Where(condition)``: ``sequence.where``, the positions of the steps whose condition
    (one number per step) is nonzero, as a new sequence."""
    condition = _sequence(node)
    return S.where(_per_step(node, condition))


def gather_cntk(node):
    """``Sequence::Gather(x, condition)``: ``sequence.gather``, the steps of ``x`` whose
    condition is nonzero, as a new sequence."""
    c = _condition_index(node, "gather")
    return S.gather(_sequence(node, 1 - c), _per_step(node, _sequence(node, c), c))


def scatter_cntk(node):
    """``Sequence::Scatter(x, condition)``: ``sequence.scatter``, the steps of ``x`` put back
    where the condition is nonzero, on the condition's axis (0 elsewhere)."""
    c = _condition_index(node, "scatter")
    return S.scatter(_sequence(node, 1 - c), _per_step(node, _sequence(node, c), c))


def gather_packed_cntk_v1(node):
    """A v1 file's gather of steps (``GatherPacked(PackedIndex(x, Where(c)), x)``, which the v1
    reader gives as ``GatherPacked(x, c)``, ``_cntk_v1_gathers``): the steps of ``x`` where
    ``c`` is nonzero; one step per sequence, without a sequence axis, where the ``Where`` makes
    none (``__noSequenceAxis``: ``sequence.first``, ``last``)."""
    if node.n_inputs != 2 or "dynamic_axis_name" not in node.attrs:
        node.unsupported("a GatherPacked without its PackedIndex and Where")
    steps = S.gather(_sequence(node), _per_step(node, _sequence(node, 1), 1))
    return S.first(steps) if node.attr("dynamic_axis_name") == "__noSequenceAxis" else steps


def scatter_packed_cntk_v1(node):
    """A v1 file's scatter of steps (``ScatterPacked(c, PackedIndex(c, Where(c)), y)``, which
    the v1 reader gives as ``ScatterPacked(y, c)``, ``_cntk_v1_gathers``): ``sequence.scatter``,
    the steps of ``y`` put where ``c`` is nonzero, on ``c``'s axis."""
    if node.n_inputs != 2 or "dynamic_axis_name" not in node.attrs:
        node.unsupported("a ScatterPacked without its PackedIndex and Where")
    return S.scatter(_sequence(node), _per_step(node, _sequence(node, 1), 1))


def _condition_index(node, what: str) -> int:
    """Which of a ``Sequence::Gather`` / ``Scatter`` block's two inputs is the condition: the
    inputs come in the order the body reads them, and the condition is what its ``Where``
    reads."""
    body = node.attr("body") or ()
    inner = {o for f in body for o in f.outputs}
    read = list(dict.fromkeys(n for f in body for n in f.inputs if n not in inner))
    where = [f for f in body if f.type == "Where"]
    if len(read) != 2 or len(where) != 1 or where[0].inputs[0] not in read:
        node.unsupported(f"a sequence {what} of {_body_types(node)}")
    return read.index(where[0].inputs[0])


def _per_step(node, condition, i: int = 0):
    """A condition of one number per step (``()`` or ``(1, ...)``)."""
    sample = node.shape(i)[2:]
    if math.prod(sample) != 1:
        node.unsupported(f"a condition of {sample} per step: one number per step is needed")
    return condition
