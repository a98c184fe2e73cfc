"""The ``cntk_import`` rules of the sequence ops: CNTK's delays outside a loop, its
``ReconcileDynamicAxis`` and the blocks its ``sequence`` module makes (``Sequence::Slice`` for
``first``/``last``, ``Sequence::ReduceElements``, ``Sequence::BroadcastAs``,
``Sequence::Softmax``).

A sequence input is ``(B, T, *sample)`` with its lengths (``node.lead(i) == 2``).  The importer
(``serialize/_legacy_import.py``, ``_legacy_loops.py``) calls a ``Sequence::*`` block's rule
instead of expanding its body, with the block's data arguments as inputs and the body's
functions as ``node.attr("body")``; a delay inside a graph loop never reaches a rule (the loop
becomes a ``recurrence``).
"""

from __future__ import annotations

from ... import sequence as S

__all__ = ["delay_cntk", "reconcile_cntk", "sequence_slice_cntk", "sequence_reduce_cntk",
           "broadcast_as_cntk", "sequence_softmax_cntk"]


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


def reconcile_cntk(node):
    """``ReconcileDynamicAxis(x, like)``: ``x`` as it is when it has ``like``'s axes; a value
    per sequence repeated at each of ``like``'s steps."""
    a, b = node.lead(0), node.lead(1)
    if a == b:
        return node.var(0)
    if a == 1 and b == 2:
        return S.broadcast_as(node.var(0), node.var(1))
    node.unsupported(f"reconciling {node.shape(0)} with the dynamic axes of {node.shape(1)}")


def _body_types(node) -> list[str]:
    return [f.type for f in node.attr("body") or ()]


def sequence_slice_cntk(node):
    """``Sequence::Slice`` as CNTK's ``sequence.first`` (a one-step ``PastValue`` marks the
    first step) and ``sequence.last`` (a ``FutureValue`` the last); other slices are
    refused."""
    types = _body_types(node)
    delays = [f for f in node.attr("body") or () if f.type in ("PastValue", "FutureValue")]
    if sorted(types) != sorted(["ReconcileDynamicAxis", "Where", "PackedIndex", "GatherPacked",
                                delays[0].type if delays else "-"]) or \
            int(delays[0].attrs.get("offset", 1)) != 1:
        node.unsupported(f"a sequence slice of {types} (sequence.first and last are read)")
    fn = S.first if delays[0].type == "PastValue" else S.last
    return fn(_sequence(node))


def sequence_reduce_cntk(node):
    """``Sequence::ReduceElements``: ``sequence.reduce_sum`` and ``reduce_max``."""
    reductions = [f.attrs.get("reductionOpName") for f in node.attr("body") or ()
                  if f.type == "ReduceElements"]
    ops = {"Sum": S.reduce_sum, "Max": S.reduce_max}
    if len(reductions) != 1 or reductions[0] not in ops:
        node.unsupported(f"a sequence reduction of {_body_types(node)} ({reductions})")
    return ops[reductions[0]](_sequence(node))


def broadcast_as_cntk(node):
    """``Sequence::BroadcastAs(x, like)``: ``sequence.broadcast_as``."""
    if node.lead(0) != 1:
        node.unsupported(f"broadcasting {node.shape(0)}: one value per sequence is needed")
    return S.broadcast_as(node.var(0), _sequence(node, 1))


def sequence_softmax_cntk(node):
    """``Sequence::Softmax``: the softmax over each sequence's steps."""
    return S.softmax(_sequence(node))
