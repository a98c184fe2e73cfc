"""The CNTK v2 model-file writer's rules for ``sequence.broadcast_as``, ``sequence.is_first``
and ``sequence.is_last`` (see :mod:`._cntk_write`): CNTK 2.7's blocks, as CNTK 2.7 writes them
(learnt by saving the ops with CNTK 2.7 and decoding the file, kept decoded in
``tests/fixtures/cntk_write_forms/written.json``):

* ``Sequence::BroadcastAs``: no attributes, no leaves, its arguments the value (one per
  sequence: the batch axis only) and the sequence it is broadcast along; its body one
  ``ReconcileDynamicAxis(value, sequence)``;
* ``Sequence::IsFirst`` / ``Sequence::IsLast``: the scalar constants 0 and 1 as leaves, then the
  sequence; its body ``PastValue`` (``FutureValue``) of ``ReconcileDynamicAxis(0, sequence)``
  with 1 as the initial value, ``offset`` 1.

Example:
    >>> sorted(RULES)
    ['cntk:Sequence::IsFirst', 'cntk:Sequence::IsLast', 'sequence_broadcast_as']
"""

from __future__ import annotations

from . import _cntk_write_proto as P
from ._cntk_write_graph import CntkWriteUnsupported

__all__ = ["RULES"]


def _broadcast_as(w, ins, uids, attrs, out, name):
    if len(uids) != 2 or w.lead(ins[0]) != 1 or w.lead(ins[1]) != 2:
        raise CntkWriteUnsupported("Sequence::BroadcastAs", "a value the writer cannot read "
                                                            "(one per sequence, with the batch "
                                                            "axis, along a sequence)")

    def body(w_, p, c, n):
        return w_.function("ReconcileDynamicAxis", [p[0], p[1]]) + "_Output_0"
    return w.fixed_block("Sequence::BroadcastAs", name, ins[:2], uids[:2], (), body)


def _flag(op: str, delay: str):
    def body(w, p, c, n):
        zeros = w.function("ReconcileDynamicAxis", [c[0], p[0]]) + "_Output_0"
        return w.function(delay, [zeros, c[1]], {"offset": P.size_t(1)}) + "_Output_0"

    def rule(w, ins, uids, attrs, out, name):
        if len(uids) != 1 or w.lead(ins[0]) != 2:
            raise CntkWriteUnsupported(op, "a value without a sequence axis")
        return w.fixed_block(op, name, ins[:1], uids[:1], (0.0, 1.0), body)
    return rule


RULES = {"sequence_broadcast_as": _broadcast_as,
         "cntk:Sequence::IsFirst": _flag("Sequence::IsFirst", "PastValue"),
         "cntk:Sequence::IsLast": _flag("Sequence::IsLast", "FutureValue")}
