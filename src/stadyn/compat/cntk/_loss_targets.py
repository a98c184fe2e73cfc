"""The targets of compat.cntk's losses as CNTK 2.7 reads them against their outputs: a label
of the scores' last axis alone broadcast over the rows (:func:`_target_like`), the
``ElementTimes`` broadcast of a loss along an axis or over the whole sample
(:func:`_broadcast_target`, :func:`_cross_entropy_of_whole_samples`), an unbatched target's
cross entropy (:func:`_cross_entropy_of`), and a top-N error's label column
(:func:`_topn_target`).  Used by :mod:`._ops_losses` only."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ... import cntk_semantics as S
from ._adapt import binary, const, lead_axes, operand, reshape_samples, sample_shape

__all__: list = []


def _core(shape: tuple) -> tuple:
    """``shape`` less its leading axes of 1."""
    while shape and shape[0] == 1:
        shape = shape[1:]
    return shape


def _target_like(target, output, one_axis: bool = False):
    """The target, reshaped to the output's sample shape where the two differ only by leading
    axes of length 1 (CNTK's shapes then match: a ``(1, n)`` output and an ``(n,)`` label, as
    in CNTK 207's full softmax); where its sample shape is the end of the output's (a ``(V,)``
    label of ``(R, V)`` scores), given leading axes of 1 that the loss broadcasts over, as
    CNTK 2.7 does (its ``ElementTimes`` along an axis; along the default axis its
    ``TransposeTimes`` of the label and each row, of a label of ``one_axis`` only)."""
    t = operand(target)
    have, want = tuple(sample_shape(target)), tuple(sample_shape(output))
    if have == want or lead_axes(target) != lead_axes(output):
        return t
    if _core(have) == _core(want):
        return reshape_samples(t, lead_axes(target), want)
    k = len(_core(have))
    if 0 < k < len(want) and _core(have) == want[-k:] and (k == 1 or not one_axis):
        return reshape_samples(t, lead_axes(target), (1,) * (len(want) - k) + want[-k:])
    return t


def _broadcast_target(target, output, what: str):
    """The target broadcast to the output's sample shape, as CNTK 2.7's ``ElementTimes`` of
    the two does (a loss along an axis other than the default one, or over the whole
    sample), or its RuntimeError where the shapes are not compatible."""
    have, want = tuple(sample_shape(target)), tuple(sample_shape(output))
    if have == want:
        return target
    if len(have) > len(want) or any(h not in (1, w) for h, w in zip(reversed(have),
                                                                     reversed(want))):
        raise RuntimeError(
            f"Binary elementwise operation ElementTimes: Left operand {target!r} shape "
            f"{have} is not compatible with right operand {output!r} shape {want} ({what})")
    return binary(F.add2, target, const(np.zeros(want, np.dtype(str(operand(output).dtype)))))


def _cross_entropy_of_whole_samples(output_vector, target_vector):
    """``log_sum_exp(z) - sum(t * z)`` over each whole sample (``axis=None``), of shape ``()``:
    the target broadcast to the output's sample shape first (:func:`_broadcast_target`);
    one without the output's batch (a constant) is broadcast over it."""
    t = _broadcast_target(target_vector, output_vector,
                          "cross_entropy_with_softmax over the whole sample")
    lead, size = lead_axes(output_vector), int(np.prod(sample_shape(output_vector)))
    o = S.reshape_sample(operand(output_vector), (size,), lead > 0, sequence=lead == 2)
    t = S.reshape_sample(operand(t), (size,), lead_axes(t) > 0, sequence=lead_axes(t) == 2)
    return F.reshape_trailing(_cross_entropy_of(o, t, lead, lead_axes(target_vector) != lead),
                              (), base_axis=lead)


def _cross_entropy_of(o, t, axis: int, unbatched: bool, shift: int = 0):
    """The native op's cross entropy along ``axis``; of an ``unbatched`` operand (a
    constant, no batch axis), CNTK's ``ReduceLogSum`` less ``ElementTimes``' sum, the constant
    broadcast over the batch: an output ``shift`` leading axes short of the target's (a
    constant output) has ``axis`` counted in its own axes."""
    if not unbatched:
        return F.cross_entropy_with_softmax(o, t, axis)
    top = F.max(o, axis=axis, keepdims=True)
    lse = F.add2(F.log(F.sum(F.exp(F.sub2(o, top)), axis=axis, keepdims=True)), top)
    return F.sub2(lse, F.sum(F.mul2(o, t), axis=axis + shift, keepdims=True))


def _topn_target(target_vector, output_vector, t, size: int):
    """The target ``t`` of a top-N ``classification_error`` as one column of ``size`` values
    per sample, as CNTK 2.7's ``ClassificationError`` node reads it; a label of the sample's
    last axis alone (``(V,)`` of ``(R, V)`` scores: its column of V values) padded with its
    own least value, so that its first largest (the class the node reads) stays in its V.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> z, y = C.input_variable((2, 3)), C.input_variable(3)
        >>> C.classification_error(z, y, topN=2).eval(
        ...     {z: np.array([[[1, 5, 0], [4, 0, 0]]], np.float32),
        ...      y: np.array([[0, 1, 0]], np.float32)}).tolist()
        0.0
    """
    lead = lead_axes(output_vector)
    have = _core(tuple(sample_shape(target_vector)))
    if have == tuple(sample_shape(output_vector)) or have != tuple(sample_shape(
            output_vector))[-1:] or lead_axes(target_vector) != lead:
        return S.reshape_sample(t, (size,), lead > 0, sequence=lead == 2)
    t = S.reshape_sample(t, have, lead > 0, sequence=lead == 2)
    low = F.min(t, axis=lead, keepdims=True)
    rest = const(np.ones(size - have[0], np.dtype(str(t.dtype))), np.dtype(str(t.dtype)))
    return F.concatenate(t, F.mul2(low, rest), axis=lead)
