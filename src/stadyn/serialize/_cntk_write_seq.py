"""The CNTK v2 model-file writer's rules for ``sequence.broadcast_as``, ``sequence.is_first``
and ``sequence.is_last`` (see :mod:`._cntk_write`): CNTK 2.7's blocks, as CNTK 2.7 writes them
(learnt by saving the ops with CNTK 2.7 and decoding the file, kept decoded in
``tests/fixtures/cntk_write_forms/written.json``):

* ``Sequence::BroadcastAs``: no attributes, no leaves, its arguments the value (one per
  sequence: the batch axis only) and the sequence it is broadcast along; its body one
  ``ReconcileDynamicAxis(value, sequence)``;
* ``Sequence::IsFirst`` / ``Sequence::IsLast``: the scalar constants 0 and 1 as leaves, then the
  sequence; its body ``PastValue`` (``FutureValue``) of ``ReconcileDynamicAxis(0, sequence)``
  with 1 as the initial value, ``offset`` 1;
* ``sequence.slice`` of more than one step: a ``Sequence::Slice`` block over the sequence, the
  flags of the steps kept -- ``Internal::IsWithin(x, k)``, ``PastValue`` (``FutureValue`` for
  ``k < 0``) of ``ReconcileDynamicAxis(0, x)`` with 1 initially, ``offset |k|``; ``1 - `` it
  for a positive begin or a negative end, the two multiplied (``ElementTimes``) where both are
  given (the end's functions first) -- then ``Where`` with the new axis' length factors and
  name (CNTK's ``GetDerivedDynamicAxes``: ``<axis>_times_1_minus_2`` for ``slice(x, 1, -1)``,
  ``<axis>_fixedSliceOf_2`` for ``slice(x, 0, 2)``), ``PackedIndex`` and ``GatherPacked``;
  the scalar constants as the block's leaves in the order CNTK's walk meets them;
* ``sequence.where``: one ``Where`` of the condition, its new axis
  ``whereNodeDynamicAxis_conditionVar_<the condition's uid>``;
* ``sequence.gather`` / ``scatter``: ``Sequence::Gather`` (``GatherPacked`` of the values at
  ``PackedIndex(values, Where(condition))``; with ``new_sequence_axis_typeinfo`` the ``Where``
  of the derived axis and its factors, read back from the axis' name the caller gives) and
  ``Sequence::Scatter`` (``ScatterPacked`` of the values at ``PackedIndex(condition,
  Where(condition))`` onto the condition's layout) blocks over the values and the condition;
* ``sequence.unpack`` (``no_mask_output``): ``UnpackSequenceOp`` with
  ``sequenceUnpackPaddingValue`` and ``sequenceUnpackSuppressMaskOutput`` True;
* a loaded file's ``ReconcileDynamicAxis`` (CNTK 2.7's conversion of a cntk.exe file's
  ``sequence.last``): the operand, then the sequence whose axes it takes;
* ``sequence.softmax``: inside the ``Sequence::Softmax`` block the compat marks, the largest
  step (a ``Sequence::ReduceElements`` block, ``Max`` of the steps unpacked with -inf) taken
  back to the steps (a ``Sequence::BroadcastAs`` block), ``Exp(Minus(x, it))``, its sum over
  the steps (``Sum``, padding 0) taken back alike, and the ``ElementDivide`` block of the two;
  the inner blocks unnamed (``tests/fixtures/cntk_files_16/``, written by CNTK 2.7).

Example:
    >>> sorted(RULES)[:3]
    ['cntk:ElementDivide', 'cntk:ReconcileDynamicAxis', 'cntk:Sequence::IsFirst']
"""

from __future__ import annotations

import re

from . import _cntk_write_proto as P
from ._cntk_write_graph import CntkWriteUnsupported
from ._cntk_write_more import element_divide, node_attributes, Shaped
from ._cntk_write_writer import BATCH_AXIS, DEFAULT_SEQUENCE_AXIS

__all__ = ["RULES", "NEW_AXES"]


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


def _is_within(w, p: str, zero: str, one: str, offset: int) -> str:
    """CNTK's ``Internal::IsWithin(p, offset)``: 1 at the first ``offset`` steps of each
    sequence (the last ``-offset``), 0 elsewhere."""
    zeros = w.function("ReconcileDynamicAxis", [zero, p]) + "_Output_0"
    delay = "PastValue" if offset > 0 else "FutureValue"
    return w.function(delay, [zeros, one], {"offset": P.size_t(abs(offset))}) + "_Output_0"


def _where(w, flags: str, axis: "str | None", factors: "tuple[int, int] | None",
           name: str = "") -> str:
    """``Where`` of ``flags`` onto the new sequence axis ``axis`` (None: none, one step of
    each sequence kept; ``factors``: the new length's scaling and additive factors, as CNTK
    writes them when given); its uid."""
    axes = P.vector(([P.axis(P.STATIC_AXIS_DYNAMIC, axis, True)] if axis is not None else [])
                    + [BATCH_AXIS])
    if factors is None:
        return w.function("Where", [flags], {"newDynamicAxes": axes}, name=name)
    return w.function("Where", [flags], {
        "newSequenceAxisLengthScalingFactor": P.size_t(factors[0]), "newDynamicAxes": axes,
        "newSequenceAxisLengthAdditiveFactor": P.integer(factors[1])}, name=name)


def _derived_axis(name: str, scale: int, add: int) -> str:
    """CNTK's ``GetDerivedDynamicAxes`` name of an axis ``scale`` times as long plus ``add``."""
    if scale:
        return f"{name}_times_{scale}_" + (f"plus_{add}" if add > 0 else f"minus_{-add}")
    return f"{name}_fixedSliceOf_{add}"


def _on_sequences(op: str, w, ins) -> None:
    if any(w.lead(v) != 2 for v in ins):
        raise CntkWriteUnsupported(op, "a value without a sequence axis")


def _slice(w, ins, uids, attrs, out, name):
    # (a slice of one step -- the compat's first step of the slice, written in its place
    # (_cntk_write_graph.fold_shapes) -- is no sequence: its Where keeps the batch axis only)
    _on_sequences("Sequence::Slice", w, ins[:1])
    begin, end = int(attrs["begin_index"]), int(attrs["end_index"])
    length = end - begin
    if (begin, end) == (0, 0) or (length == 1 and id(out) in w.sequences):
        raise CntkWriteUnsupported("Sequence::Slice", "a slice of every step (CNTK's axis is "
                                                      "not a new one there)")
    factors = (0 if length > 0 else 1, length)
    axis = None if length == 1 else _derived_axis(w.sequence_axis_name(ins[0]), *factors)
    if axis is not None:
        w.axis_names[id(out)] = axis
    # the scalar constants as CNTK's walk from the root meets them: the begin's flags (1 of
    # the subtraction, then 0 and 1 of IsWithin), then the end's
    begins = ((1.0,) if begin > 0 else ()) + (0.0, 1.0) if begin else ()
    ends = ((1.0,) if end < 0 else ()) + (0.0, 1.0) if end else ()

    def body(w_, p, c, n):
        cb, ce = c[:len(begins)], c[len(begins):]
        flags = []
        for offset, k in ((end, ce), (begin, cb)):       # (CNTK makes the end's first)
            if offset:
                flag = _is_within(w_, p[0], k[-2], k[-1], offset)
                if len(k) == 3:
                    flag = w_.function("Minus", [k[0], flag]) + "_Output_0"
                flags.append(flag)
        kept = flags[0] if len(flags) == 1 else \
            w_.function("ElementTimes", [flags[1], flags[0]]) + "_Output_0"
        where = _where(w_, kept, axis, factors) + "_Output_0"
        index = w_.function("PackedIndex", [p[0], where]) + "_Output_0"
        return w_.function("GatherPacked", [p[0], index]) + "_Output_0"
    return w.fixed_block("Sequence::Slice", name, ins[:1], uids[:1], begins + ends, body)


_WHERE_AXIS = "whereNodeDynamicAxis_conditionVar_"


def _where_rule(w, ins, uids, attrs, out, name):
    _on_sequences("Where", w, ins[:1])
    w.axis_names[id(out)] = _WHERE_AXIS + uids[0]
    return _where(w, uids[0], w.axis_names[id(out)], None, name)


def _factors(named: str, base: str) -> "tuple[int, int] | None":
    """The length factors of the axis ``named``, derived from ``base`` (the inverse of
    :func:`_derived_axis`), or None."""
    rest = named[len(base):] if named.startswith(base) else ""
    fixed = re.fullmatch(r"_fixedSliceOf_(\d+)", rest)
    if fixed:
        return 0, int(fixed.group(1))
    scaled = re.fullmatch(r"_times_(\d+)_(plus|minus)_(\d+)", rest)
    if scaled:
        return int(scaled.group(1)), int(scaled.group(3)) * (1 if scaled.group(2) == "plus" else -1)
    return None


def _gather(w, ins, uids, attrs, out, name):
    _on_sequences("Sequence::Gather", w, ins[:2])
    axis, factors = _WHERE_AXIS + uids[1], None
    named = w.named_axis(out)
    if named and not named.startswith(_WHERE_AXIS):      # (new_sequence_axis_typeinfo)
        factors = _factors(named, w.named_axis(ins[1]) or DEFAULT_SEQUENCE_AXIS)
        if factors is None or factors in ((1, 0), (0, 1)):
            raise CntkWriteUnsupported("Sequence::Gather", f"the new axis {named!r}")
        axis = _derived_axis(w.sequence_axis_name(ins[1]), *factors)
    w.axis_names[id(out)] = axis

    def body(w_, p, c, n):
        where = _where(w_, p[1], axis, factors) + "_Output_0"
        index = w_.function("PackedIndex", [p[0], where]) + "_Output_0"
        return w_.function("GatherPacked", [p[0], index]) + "_Output_0"
    return w.fixed_block("Sequence::Gather", name, ins[:2], uids[:2], (), body)


def _scatter(w, ins, uids, attrs, out, name):
    _on_sequences("Sequence::Scatter", w, ins[:2])
    axis = _WHERE_AXIS + uids[1]

    def body(w_, p, c, n):
        where = _where(w_, p[1], axis, None) + "_Output_0"
        index = w_.function("PackedIndex", [p[1], where]) + "_Output_0"
        return w_.function("ScatterPacked", [p[0], index, p[1]]) + "_Output_0"
    return w.fixed_block("Sequence::Scatter", name, ins[:2], uids[:2], (), body)


def _unpack(w, ins, uids, attrs, out, name):
    """``sequence.unpack``'s padded values: CNTK's ``UnpackSequenceOp`` with its padding value
    and the mask output suppressed (a graph reading the mask is refused)."""
    node = out.parent
    _on_sequences("UnpackSequenceOp", w, ins[:1])
    if len(uids) != 1 or node is None or node.spec.name != "sequence_unpack" or \
            node.outputs[0] is not out:
        raise CntkWriteUnsupported("UnpackSequenceOp", "its mask (the writer writes the values "
                                                       "alone, the mask suppressed)")
    padding = float(node_attributes(node)["padding_value"])
    return w.function("UnpackSequenceOp", uids, {
        "sequenceUnpackPaddingValue": P.double(padding),
        "sequenceUnpackSuppressMaskOutput": P.boolean(True)}, name=name)


def _divide(w, ins, uids, attrs, out, name):
    """The compat's ``ElementDivide``: CNTK 2.7's block of two values, or, over one sequence,
    the inside of ``sequence.softmax``'s ``Sequence::Softmax`` block."""
    if len(uids) == 1:
        return _sequence_softmax(w, ins, uids)   # (the block around it takes the name)
    return w.fixed_block("ElementDivide", name, ins, uids, (), element_divide)


def _sequence_softmax(w, ins, uids):
    x, ux = ins[0], uids[0]
    if w.lead(x) != 2:
        raise CntkWriteUnsupported("Sequence::Softmax", "a value without a sequence axis")
    rank = w.static_rank(x)
    # (what the placeholders of the blocks taking a value back to the steps stand for: one
    # value per sequence, the batch axis only)
    per_sequence = Shaped(x.shape[:1] + x.shape[2:], x.dtype, True)

    def over_steps(kind: str, padding: float):
        def body(w_, p, c, n):
            unpacked = w_.function("UnpackSequenceOp", [p[0]], {
                "sequenceUnpackPaddingValue": P.double(padding),
                "sequenceUnpackSuppressMaskOutput": P.boolean(True)}) + "_Output_0"
            return w_.function("ReduceElements", [unpacked], {
                "axis": P.static_axis(rank), "reductionOpName": P.text(kind),
                "reductionKeepDimensions": P.boolean(False)}) + "_Output_0"
        return body

    def at_every_step(value: str) -> str:
        def body(w_, p, c, n):
            return w_.function("ReconcileDynamicAxis", [p[0], p[1]]) + "_Output_0"
        return w.fixed_block("Sequence::BroadcastAs", "", [per_sequence, x], [value, ux], (),
                             body) + "_Output_0"

    top = w.fixed_block("Sequence::ReduceElements", "", [x], [ux], (),
                        over_steps("Max", float("-inf"))) + "_Output_0"
    shifted = w.function("Minus", [ux, at_every_step(top)]) + "_Output_0"
    e = w.function("Exp", [shifted]) + "_Output_0"
    total = w.fixed_block("Sequence::ReduceElements", "", [x], [e], (),
                          over_steps("Sum", 0.0)) + "_Output_0"
    return w.fixed_block("ElementDivide", "", [x, x], [e, at_every_step(total)], (),
                         element_divide)


def _reconcile(w, ins, uids, attrs, out, name):
    """A loaded file's ``ReconcileDynamicAxis`` (a cntk.exe file's, CNTK 2.7's conversion of
    ``sequence.last`` / ``first``: of a scalar 0 onto a sequence's layout): the operand
    first, the sequence whose axes it takes second, as CNTK 2.7 writes it again.  The
    compat shows ``sequence.broadcast_as``'s value so too: its own rule writes it, CNTK's
    ``Sequence::BroadcastAs`` block."""
    if out.parent is not None and out.parent.spec.name == "sequence_broadcast_as":
        return _broadcast_as(w, ins, uids, attrs, out, name)
    layout = [k for k, v in enumerate(ins[:2]) if w.lead(v) == 2]
    if len(ins) != 2 or len(layout) != 1:
        raise CntkWriteUnsupported("ReconcileDynamicAxis", "other than a value and a sequence")
    k = layout[0]
    return w.function("ReconcileDynamicAxis", [uids[1 - k], uids[k]], name=name)


RULES = {"sequence_broadcast_as": _broadcast_as, "cntk:ElementDivide": _divide,
         "cntk:ReconcileDynamicAxis": _reconcile,
         "cntk:UnpackSequenceOp": _unpack,
         "cntk:Sequence::IsFirst": _flag("Sequence::IsFirst", "PastValue"),
         "cntk:Sequence::IsLast": _flag("Sequence::IsLast", "FutureValue"),
         "sequence_slice": _slice, "sequence_where": _where_rule, "sequence_gather": _gather,
         "sequence_scatter": _scatter}
#: the ops of these rules that put their output on a new sequence axis, by the block CNTK 2.7
#: makes of them (its rule writes the block: the caller's mark of it is not a layer)
NEW_AXES = {"sequence_slice": "Sequence::Slice", "sequence_gather": "Sequence::Gather",
            "sequence_scatter": "Sequence::Scatter"}
