"""The CNTK v2 model-file writer's rules for ``top_k`` (see :mod:`._cntk_write`): CNTK 2.7's
``TopK`` primitive, one function of two outputs, as CNTK 2.7 writes it (learnt by saving
``C.top_k(x, k)`` with CNTK 2.7 and decoding the file, kept decoded in
``tests/fixtures/cntk_write_forms/written.json``): attributes ``axis`` (the stored static axis
0: the sample's last in Python's order) and ``numItems`` (size_t); ``<uid>_Output_0`` the
values, ``<uid>_Output_1`` the indices (floats).

Stadyn computes it as the catalog's ``top_k_data`` along the last axis with CNTK's ties, whose
two outputs become the function's two, and a ``cast`` of the indices to float32, which is
CNTK's second output itself (nothing written for it: :func:`indices_cast`, which the rule for
``cast`` of ``_cntk_write_ops`` calls).  Along another axis (CNTK 2.7's block around
``TransposeAxes``) it is refused.

Example:
    >>> sorted(RULES)
    ['top_k_data']
"""

from __future__ import annotations

from . import _cntk_write_proto as P
from ._cntk_write_graph import CntkWriteUnsupported
from ._cntk_write_more import python_axis

__all__ = ["RULES", "SEVERAL_OUTPUTS"]

#: the catalog ops written as one CNTK function of several outputs (``<uid>_Output_<k>``)
SEVERAL_OUTPUTS = frozenset({"top_k_data"})


def _top_k(w, ins, uids, attrs, out, name):
    x = ins[0]
    last = len(x.shape) - 1
    if not attrs["with_index"] or attrs["ties"] != "cntk" or attrs["abs"] or \
            not attrs["reduce"] or not attrs["largest"] or attrs["base_axis"] != last or \
            w.static_rank(x) < 1:
        raise CntkWriteUnsupported("top_k_data", "a top_k other than CNTK's (the largest "
                                                 "along the sample's last axis, with indices "
                                                 "and CNTK's ties)")
    k = P.size_t(int(attrs["k"]))
    moved = w.moved_top_k.get(id(out.parent))
    if moved is None:
        return w.function("TopK", uids[:1], {"axis": P.static_axis(0), "numItems": k},
                          name=name)
    return _top_k_block(w, x, uids[0], k, *moved, out.parent.outputs[1])


def _top_k_block(w, x, uid: str, k, axis: int, shown, indices) -> str:
    """CNTK 2.7's ``TopK`` block along the sample's ``axis`` (Python's order) of ``x`` (read
    as ``uid``; Stadyn's value with that axis swapped with the last): ``TransposeAxes`` of the
    stored axes 0 and the axis, ``TopK`` along 0 (named as the block), both outputs swapped
    back, their ``Combine`` the root; the block's attributes ``axis`` (as CNTK's Python API
    passes it) and ``numItems``.  The functions in the order CNTK 2.7 writes them (the
    indices' swap first; CNTK 2.7's loader needs the indices, read before the ``TopK`` is,
    listed as a placeholder named by that output's uid, as it writes them).  Returns the
    block's uid (its outputs ``_Output_0``, ``_Output_1``)."""
    name = w.name_of(shown)
    x = w.folded.get(id(x), x)          # (the value before the swap: the block's argument)
    swap = {"axis1": P.static_axis(0), "axis2": P.static_axis(w.static_axis_index(x, axis))}

    def body(w_, p, c, n):
        start = len(w_.functions)
        inner = w_.function("TransposeAxes", p[:1], swap) + "_Output_0"
        top = w_.function("TopK", [inner], {"axis": P.static_axis(0), "numItems": k}, name=name)
        values = w_.function("TransposeAxes", [top + "_Output_0"], swap) + "_Output_0"
        back = w_.function("TransposeAxes", [top + "_Output_1"], swap) + "_Output_0"
        w_.functions.insert(start, w_.functions.pop())     # (the indices' swap first)
        w_.placeholder(indices, top + "_Output_1")
        return w_.function("Combine", [values, back]) + "_Output_0"
    return w.fixed_block("TopK", name, [x], [uid], (), body,
                         {"axis": python_axis(axis - w.lead(x)), "numItems": k})


def indices_cast(w, ins, uids, attrs, out, name):
    """The rule for a ``cast`` of a ``top_k``'s indices to float32 (nothing written); refuses
    any other cast."""
    # the indices of a TopK as floats: CNTK's second output itself (along another axis than
    # the last: the indices swapped back, the block's second output)
    source = w.folded.get(id(ins[0]), ins[0]).parent
    if source is None or source.spec.name not in SEVERAL_OUTPUTS or \
            source.outputs[1] is not w.folded.get(id(ins[0]), ins[0]) or \
            "float32" not in str(out.dtype):
        raise CntkWriteUnsupported("cast", "a cast other than of top_k's indices to float32 "
                                           "(stadyn.compat.cntk's cast is CNTK's Cast)")
    return None


RULES = {"top_k_data": _top_k}
