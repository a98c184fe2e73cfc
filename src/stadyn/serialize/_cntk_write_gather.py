"""The CNTK v2 model-file writer's rule for ``gather`` along another axis than the table's
first (see :mod:`._cntk_write`): CNTK 2.7's ``GatherOp`` block, as CNTK 2.7 writes it (learnt
by saving ``C.gather(table, indices, axis=a)`` with CNTK 2.7 and decoding the file, kept decoded
in ``tests/fixtures/cntk_write_forms/written.json``):

* the block's attribute ``axis``: the axis given, as CNTK's Python API passes it
  (``Axis(-a - 1)`` for ``a``: ``staticAxisIdx=-2`` for ``axis=1``); its arguments the indices,
  then the table;
* its body: ``TransposeAxes`` of the table swapping its stored last axis (Python's first) with
  the axis, ``Gather(indices, that)`` named ``<name>_inner``, and ``TransposeAxes`` of the
  output swapping its stored last axis with the axis counted in the output (from its end where
  the axis given was negative).

Stadyn's compat computes it as a transpose of the table, a gather along the first axis and a
transpose back; the writer reads the axis from those two transposes.  A table with the batch
axis (which CNTK 2.7 refuses when run) is refused.

Example:
    >>> sorted(RULES)
    ['cntk:GatherOp']
"""

from __future__ import annotations

from . import _cntk_write_proto as P
from ._cntk_write_graph import CntkWriteUnsupported
from ._cntk_write_more import inner_nodes, node_attributes

__all__ = ["RULES"]


def _swapped(node, lead: int) -> int:
    """The sample axis a transpose swaps with the sample's first (``lead`` axes before)."""
    perm = [int(a) for a in node_attributes(node)["axes"]]
    return perm[lead] - lead


def _gather_op(w, ins, uids, attrs, out, name):
    if len(uids) != 2:
        raise CntkWriteUnsupported("GatherOp", f"{len(uids)} inputs shown, CNTK's has 2")
    table, ids = ins
    if w.lead(table):
        raise CntkWriteUnsupported("GatherOp", "a table with dynamic axes (CNTK 2.7 refuses it "
                                               "when run)")
    nodes = inner_nodes(out, ins)
    first = [n for n in nodes if n.spec.name == "transpose" and n.inputs[0] is table]
    last = out.parent
    if len(first) != 1 or last is None or last.spec.name != "transpose":
        raise CntkWriteUnsupported("GatherOp", "a gather the writer cannot read")
    rank, out_rank, lead = len(table.shape), w.static_rank(out), w.lead(out)
    axis = _swapped(first[0], 0)                    # (the table's axis, from 0)
    back = _swapped(last, lead)                     # (the output's axis swapped back)
    given = axis if back == axis else axis - rank   # (negative: counted from the end)
    if back != (given if given >= 0 else given + out_rank) or not 0 < axis < rank:
        raise CntkWriteUnsupported("GatherOp", "a gather the writer cannot read")

    def swap(operand: str, r: int, k: int) -> str:
        return w.function("TransposeAxes", [operand], {
            "axis1": P.static_axis(r - 1), "axis2": P.static_axis(r - 1 - k)}) + "_Output_0"

    def body(w_, p, c, n):
        moved = swap(p[1], rank, axis)
        picked = w_.function("Gather", [p[0], moved], name=f"{name}_inner") + "_Output_0"
        return swap(picked, out_rank, back)

    return w.fixed_block("GatherOp", name, [ids, table], [uids[1], uids[0]], (), body,
                         {"axis": P.static_axis(-given - 1)})


RULES = {"cntk:GatherOp": _gather_op}
