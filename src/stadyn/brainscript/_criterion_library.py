"""CNTK's class-factored softmax criterion for :class:`~._stadyn_library.StadynLibrary` (a mixin:
it uses the library's ``_value``, ``_node`` and ``has_batch_axis``).

``ClassBasedCrossEntropyWithSoftmax (labelClassDescriptorVectorSequence, mainInputInfo,
mainWeight, classLogProbsBeforeSoftmax)`` is CNTK's ``ClassBasedCrossEntropyWithSoftmaxNode``
(``TrainingNodes.h``): a language model's output layer that factors ``P(word)`` into
``P(class) * P(word | class)``.  Per sample (time step):

- the label has 4 rows, as ``LMSequenceReader`` writes them for ``mode = "class"``: the word id
  ``y``, its class ``c``, and the first and one-past-last word id of that class (the words of a
  class are numbered together);
- ``mainWeight`` is ``[hiddenDim x vocabularySize]``; the words of the class score
  ``h' W[:, first:last]`` and the criterion is ``-(log softmax of those scores at y - first) -
  (log softmax (classLogProbsBeforeSoftmax) at c)``.

CNTK's node gave the sum over the minibatch; here, as for ``CrossEntropyWithSoftmax``, it is one
value per sample that the trainer sums.  The words outside the class are masked rather than
sliced out, so the cost is that of the full vocabulary (the value and gradients are the same).
A sample whose class range is empty (a sequence's padding) contributes 0; a word outside its
class range gives a value of about 1e30 (CNTK stopped with a LogicError).

CTC training, with ``CNTK.core.bs``'s signatures (Tests/EndToEndTests/Speech/LSTM_CTC):

- ``LabelsToGraph (labels)``: the label graph of a sequence of frame labels (CNTK's one-hot rows
  with 2 where a token starts and 1 where it continues): the labels themselves;
- ``ForwardBackward (graph, features, blankTokenId, delayConstraint = -1)``: the CTC criterion
  ``-log p(labels | softmax (features))`` summed over the minibatch's sequences, one number for
  the minibatch (counted as the network's frames, as cntk.exe's SGD counts it);
- ``EditDistanceError (leftInput, rightInput, subPen = 1.0, delPen = 1.0, insPen = 1.0,
  squashInputs = false, tokensToIgnore = [||])``: the edit distance between the argmax classes
  of the two sequences, one number for the minibatch, no gradient (``tokensToIgnore``: one
  class or an array of them, the CTC blank).

They are the catalog ops ``F.cntk_forward_backward`` and ``F.cntk_edit_distance_error``
(``stadyn/ops/_ctc.py``), as ``stadyn.compat.cntk``'s ``forward_backward`` and
``edit_distance_error``.

Ranking (Tests/EndToEndTests/Text/IRMetric), over a minibatch of scored documents whose
``queryId`` runs group them, each input one number per sample:

- ``LambdaRank (gain, prediction, queryId)``: ``(1 - mean NDCG) * 100 * N``, one number for
  the minibatch, with LambdaRank's gradient for ``prediction``;
- ``NDCG1Eval (gain, prediction, queryId)``: the mean NDCG@1 times ``100 * N``, no gradient.

An input that is a sequence (every Input of a network that uses recurrence is one) gives every
column of the minibatch as cntk.exe's node reads it (``ValueFor`` the whole minibatch,
``F.cntk_sequence_columns``): CNTK's readers pack the minibatch's sequences into parallel
streams as its Python API does (``MBLayout::InitAsPackedSequences``: first fit, in the
minibatch's order, within the longest sequence's steps), and the node reads the steps
time-major across the streams, a stream's steps after its sequences as documents of gain 0,
score 0 and query 0 (CNTK 2.7's Python nodes on the same sequences).  A ranking reader's
documents are one-step sequences: one sample each.

They are the catalog ops ``F.lambda_rank`` and ``F.ndcg_at_1`` (``stadyn/ops/_ranking.py``),
as ``stadyn.compat.cntk``'s ``lambda_rank`` and ``ndcg_at_1``.
"""

from __future__ import annotations

from typing import Any

from .. import functions as F
from .._errors import ConfigError
from ..cntk_semantics import sequence_columns
from ..graph import Variable

__all__ = ["CriterionFunctions"]

_MASKED = -1e30      # the score of a word outside the sample's class (exp() is 0 in float32)


class CriterionFunctions:
    """``ClassBasedCrossEntropyWithSoftmax``, ``LabelsToGraph``, ``ForwardBackward``,
    ``EditDistanceError``, ``LambdaRank`` and ``NDCG1Eval``."""

    def _init_criteria(self) -> dict[str, Any]:
        return {"ClassBasedCrossEntropyWithSoftmax": self.ClassBasedCrossEntropyWithSoftmax,
                "LabelsToGraph": self.LabelsToGraph, "ForwardBackward": self.ForwardBackward,
                "EditDistanceError": self.EditDistanceError, "LambdaRank": self.LambdaRank,
                "NDCG1Eval": self.NDCG1Eval}

    def LambdaRank(self, gain, prediction, queryId, tag=""):
        """``(1 - mean NDCG) * 100 * N`` over the minibatch's queries, with LambdaRank's
        gradient for ``prediction`` (the module's description)."""
        return self._ranking(F.lambda_rank, "LambdaRank", gain, prediction, queryId, tag)

    def NDCG1Eval(self, gain, prediction, queryId, tag=""):
        """The mean NDCG@1 over the minibatch's queries, times ``100 * N``."""
        return self._ranking(F.ndcg_at_1, "NDCG1Eval", gain, prediction, queryId, tag)

    def _ranking(self, op, what, gain, prediction, queryId, tag):
        values = []
        for role, v in zip(("gain", "prediction", "queryId"), (gain, prediction, queryId)):
            x = sequence_columns(self._value(v, what))     # every column, as CNTK packs them
            if not self.has_batch_axis(x) or tuple(x.shape[1:]) != (1,):
                raise ConfigError(f"{what}: {role} must be one number per sample (a minibatch "
                                  f"of [1]), got a node of shape {x.shape}")
            values.append(x)
        g, s, q = values
        out = op(s, g, q)
        self._batched.unmark(out)          # one number for the minibatch
        return self._node(out, what, tag)

    def LabelsToGraph(self, labels, tag=""):
        """The label graph of a sequence of frame labels, for ``ForwardBackward``."""
        return self._node(F.identity(_sequence(self, labels, "LabelsToGraph", "labels")),
                          "LabelsToGraph", tag)

    def ForwardBackward(self, graph, features, blankTokenId, delayConstraint=-1, tag=""):
        """CTC: ``-log p(labels | softmax (features))`` summed over the minibatch (the
        module's description)."""
        what = "ForwardBackward"
        g = _sequence(self, graph, what, "the label graph")
        z = _sequence(self, features, what, "the network output")
        _same_sample(g, z, what)
        out = F.cntk_forward_backward(g, z, z.sequence_lengths,
                                      blank_token_id=_int(blankTokenId, what, "blankTokenId"),
                                      delay_constraint=_int(delayConstraint, what,
                                                            "delayConstraint"))
        self._batched.unmark(out)          # one number for the minibatch
        return self._node(out, what, tag)

    def EditDistanceError(self, leftInput, rightInput, subPen=1.0, delPen=1.0, insPen=1.0,
                          squashInputs=False, tokensToIgnore=(), tag=""):
        """The edit distance between the argmax classes of two sequences (the module's
        description)."""
        what = "EditDistanceError"
        a, b = self._value(leftInput, what), self._value(rightInput, what)
        if (a.sequence_lengths is None) != (b.sequence_lengths is None):
            raise ConfigError(f"{what}: both inputs must be sequences, or neither")
        _same_sample(a, b, what)
        ignore = [tokensToIgnore] if isinstance(tokensToIgnore, (int, float)) else \
            list(tokensToIgnore)
        pens = [_number(p, what, n) for p, n in ((subPen, "subPen"), (delPen, "delPen"),
                                                  (insPen, "insPen"))]
        if not isinstance(squashInputs, bool):
            raise ConfigError(f"{what}: squashInputs must be true or false, got {squashInputs!r}")
        out = F.cntk_edit_distance_error(
            a, b, a.sequence_lengths, sub_pen=pens[0], del_pen=pens[1], ins_pen=pens[2],
            squash_inputs=squashInputs,
            tokens_to_ignore=tuple(_int(t, what, "tokensToIgnore") for t in ignore))
        if self.has_batch_axis(a):
            self._batched.unmark(out)      # one number for the minibatch
        return self._node(out, what, tag)

    def ClassBasedCrossEntropyWithSoftmax(self, labelClassDescriptorVectorSequence, mainInputInfo,
                                          mainWeight, classLogProbsBeforeSoftmax, tag=""):
        """The class-factored cross entropy of each sample (see the module's description)."""
        what = "ClassBasedCrossEntropyWithSoftmax"
        label = self._value(labelClassDescriptorVectorSequence, what)
        hidden = self._value(mainInputInfo, what)
        weight = self._value(mainWeight, what)
        classes = self._value(classLogProbsBeforeSoftmax, what)
        _check_shapes(self, label, hidden, weight, classes)
        word, cls, first, last = (_row(label, k) for k in range(4))
        scores = F.affine(hidden, F.transpose(weight, (1, 0)), base_axis=hidden.ndim - 1)
        ids = F.arange(0, weight.shape[0])
        inside = F.mul2(F.greater_equal(ids, first), F.less(ids, last))
        masked = F.where(inside, scores, F.add_scalar(F.mul_scalar(scores, 0.0), _MASKED))
        word_term = _pick(F.log_softmax(masked, axis=-1), word)
        class_term = _pick(F.log_softmax(classes, axis=-1), cls)
        value = F.mul_scalar(F.add2(word_term, class_term), -1.0)
        present = F.greater(last, first)          # a sequence's padding: an empty range
        return self._node(F.mul2(value, present), what, tag)


def _row(label: Variable, k: int) -> Variable:
    """Row ``k`` of each sample's label, kept as an axis of 1."""
    start = [None] * (label.ndim - 1) + [k]
    stop = [None] * (label.ndim - 1) + [k + 1]
    return F.slice(label, start, stop, [1] * label.ndim)


def _pick(log_probs: Variable, index: Variable) -> Variable:
    """``log_probs[..., index]`` (``index`` has an axis of 1 last, which is kept)."""
    return F.take_along_axis(log_probs, F.cast(index, "int64"), axis=-1)


def _check_shapes(lib: Any, label: Variable, hidden: Variable, weight: Variable,
                  classes: Variable) -> None:
    """CNTK's validation: 4 label rows, the weight's rows the hidden dimension, one layout."""
    def cntk(v: Variable) -> str:
        return ":".join(str(d) for d in reversed(v.shape[_lead(lib, v):])) or "scalar"
    if label.ndim - _lead(lib, label) != 1 or label.shape[-1] != 4:
        raise ConfigError("ClassBasedCrossEntropyWithSoftmax: the label must have 4 rows (word, "
                          f"class, first and one-past-last word of the class), got [{cntk(label)}]")
    if hidden.ndim - _lead(lib, hidden) != 1 or classes.ndim - _lead(lib, classes) != 1:
        raise ConfigError("ClassBasedCrossEntropyWithSoftmax: the hidden activation and the class "
                          f"scores must be vectors, got [{cntk(hidden)}] and [{cntk(classes)}]")
    if lib.has_batch_axis(weight) or weight.ndim != 2 or weight.shape[1] != hidden.shape[-1]:
        raise ConfigError("ClassBasedCrossEntropyWithSoftmax: mainWeight must be a [hiddenDim x "
                          f"vocabularySize] parameter with hiddenDim {hidden.shape[-1]}, got "
                          f"[{cntk(weight)}]")
    if len({_lead(lib, v) for v in (label, hidden, classes)}) != 1:
        raise ConfigError("ClassBasedCrossEntropyWithSoftmax: the label, the hidden activation "
                          "and the class scores must have the same layout (all sequences or "
                          "all not)")


def _lead(lib: Any, v: Variable) -> int:
    return 2 if v.sequence_lengths is not None else int(lib.has_batch_axis(v))


def _sequence(lib: Any, v: Any, what: str, role: str) -> Variable:
    x = lib._value(v, what)
    if x.sequence_lengths is None:
        raise ConfigError(f"{what}: {role} must be a sequence (depend on a sequence Input), got "
                          f"a node of shape {x.shape}")
    return x


def _same_sample(a: Variable, b: Variable, what: str) -> None:
    sa, sb = (tuple(v.shape[2:] if v.sequence_lengths is not None else v.shape[1:])
              for v in (a, b))
    if sa != sb:
        raise ConfigError(f"{what}: the inputs have samples of shape {sa} and {sb}; they need "
                          "one shape (one row per class)")


def _number(v: Any, what: str, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"{what}: {name} must be a number, got {v!r}")
    return float(v)


def _int(v: Any, what: str, name: str) -> int:
    value = _number(v, what, name)
    if value != int(value):
        raise ConfigError(f"{what}: {name} must be a whole number, got {v!r}")
    return int(value)
