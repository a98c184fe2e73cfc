"""The CNTK v2 model-file writer's rule for ``sequence.broadcast_as`` (see
:mod:`._cntk_write`): CNTK 2.7's ``Sequence::BroadcastAs`` block, as CNTK 2.7 writes it
(learnt by saving the op with CNTK 2.7 and decoding the file, kept decoded in
``tests/fixtures/cntk_write_forms/written.json``): no attributes, no leaves, its arguments the
value (one per sequence: the batch axis only) and the sequence it is broadcast along; its body
one ``ReconcileDynamicAxis(value, sequence)``.

Example:
    >>> sorted(RULES)
    ['sequence_broadcast_as']
"""

from __future__ import annotations

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


RULES = {"sequence_broadcast_as": _broadcast_as}
