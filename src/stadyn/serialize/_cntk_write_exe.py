"""The CNTK v2 writer's rules (:mod:`._cntk_write`) for what a loaded ``cntk.exe`` (v1) file
holds, written as CNTK 2.7 writes the file again (``C.load_model`` of the ``.dnn``, then
``Function.save``: ``tests/fixtures/cntk_exe_resave/``):

- its criteria -- ``CrossEntropyWithSoftmax``, ``ClassificationError`` (``topN`` a constant
  third input), ``SquaredError`` and ``Logistic`` -- are CNTK's *primitive* functions (op
  35, 36, 34, 48) of the inputs in v2's order (prediction first, but ``SquaredError``'s labels
  first, as the v1 node's), no attributes, one number over the minibatch: not the blocks CNTK
  2.7's Python builds for ``cross_entropy_with_softmax``, ``classification_error`` and
  ``squared_error`` (whose rules, in :mod:`._cntk_write_ops`, still write those where the
  caller shows such a block);
- a v1 ``Sigmoid`` is CNTK's primitive ``Sigmoid`` (op 1), not the ``StableSigmoid`` of
  CNTK 2.7's Python ``C.sigmoid``;
- the reshape the v1 reader puts before an element-wise op of a ``[n]`` and a ``[n x 1]``
  value (cntk.exe's ``Plus`` of ``Times``'s ``[n]`` and a bias ``[n x 1]``) is no function:
  CNTK's element-wise op broadcasts the shorter operand itself.

Example:
    >>> sorted(RULES)[:3]
    ['cntk:ClassificationError', 'cntk:CrossEntropyWithSoftmax', 'cntk:Logistic']
"""

from __future__ import annotations

from . import _cntk_write_proto as P
from ._cntk_write_graph import CntkWriteUnsupported
from ._cntk_write_ops import RULES as _PYTHON_FORMS

__all__ = ["RULES", "CRITERIA", "CRITERION_OPS"]

#: the criteria a loaded cntk.exe file holds as CNTK's primitive functions, by the number of
#: inputs each may show (ClassificationError's third: topN; Logistic's: a weight)
CRITERIA = {"CrossEntropyWithSoftmax": (2,), "ClassificationError": (2, 3),
            "SquaredError": (2,), "Logistic": (2, 3)}
#: their catalog names (``cntk:<op>``, :data:`RULES`' keys for them)
CRITERION_OPS = frozenset("cntk:" + op for op in CRITERIA)


def _criterion(op: str):
    """The rule of ``cntk:<op>``: CNTK's primitive function where the caller shows no block
    for the value (a loaded cntk.exe or CNTK v2 file's primitive: one number over the
    minibatch, ``PrimitiveFunction.cpp``:108-122), else the block's rule (CNTK 2.7's Python
    builds one for the op)."""
    python_form = _PYTHON_FORMS.get("cntk:" + op)

    def rule(w, ins, uids, attrs, out, name):
        if id(out) in w.shown_blocks or (python_form is not None and out.ndim > 0):
            if python_form is None:
                raise CntkWriteUnsupported(op, "a block of this op")
            return python_form(w, ins, uids, attrs, out, name)
        if len(uids) not in CRITERIA[op]:
            raise CntkWriteUnsupported(op, f"{len(uids)} inputs shown")
        return w.function(op, list(uids), name=name)
    return rule


def _transpose_times(w, ins, uids, attrs, out, name):
    """A loaded file's ``TransposeTimes`` (CNTK 2.7's conversion of the v1 node its
    ``save_as_legacy_model`` writes of ``cross_entropy_with_softmax``'s ``t . z``): CNTK's
    primitive of the file's ``outputRank`` over its operands as the file stores them (the
    labels first: ``TransposeTimes11(Input4, Times6)``), as CNTK 2.7 writes it again."""
    loaded = w.loaded[1] if w.loaded is not None and w.loaded[0] == "TransposeTimes" else {}
    if len(uids) != 2 or set(loaded) - {"outputRank"}:
        raise CntkWriteUnsupported("TransposeTimes", "other than two operands and an outputRank")
    return w.function("TransposeTimes", list(uids),
                      {"outputRank": P.size_t(int(loaded.get("outputRank", 1)))}, name=name)


def _reshape_trailing(w, ins, uids, attrs, out, name):
    """The v1 reader's reshape of a sample to a ``[n x 1]`` column (axes of 1 put in front,
    in NumPy's order) read only by element-wise ops: nothing written (CNTK's op aligns the
    shorter operand so).  Any other ``reshape_trailing`` is refused, and so is one the caller
    shows as a CNTK op (the compat's ``C.reshape``, which CNTK writes as a ``Reshape``)."""
    x = ins[0]
    lead = w.lead(x)
    op_of = getattr(w, "cntk_op_of", None)
    shown = op_of(out) if op_of is not None else None
    if shown is None and attrs.get("base_axis") == lead and \
            w.aligned_for_broadcast(x, out, lead):
        return None
    raise CntkWriteUnsupported("reshape_trailing", "a reshape of the samples other than the "
                                                   "column a v1 file's element-wise op reads")


def _sigmoid(w, ins, uids, attrs, out, name):
    # (a v1 Sigmoid node loads as CNTK's primitive Sigmoid, op 1, and is written again so;
    # CNTK 2.7's Python C.sigmoid makes StableSigmoid, which the compat shows as that)
    return w.function("Sigmoid", uids[:1], name=name)


RULES = {**{"cntk:" + op: _criterion(op) for op in CRITERIA},
         "cntk:Sigmoid": _sigmoid, "reshape_trailing": _reshape_trailing,
         "cntk:TransposeTimes": _transpose_times}
