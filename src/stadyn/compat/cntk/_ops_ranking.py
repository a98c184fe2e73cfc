"""CNTK's ranking criteria over a minibatch of scored samples grouped into queries:
``lambda_rank`` (a loss with LambdaRank gradients) and ``ndcg_at_1`` (a metric).

Each takes, per sample, a score (``output``), a ``gain`` and a ``group`` id, all of shape
``(1,)`` (of a longer vector, as CNTK 2.7, the first element only); a group is a run of
consecutive samples with the same id, listed in decreasing gain.
A sample's discount is ``log(2 + rank)``; within a group, ranking is by decreasing score (ties:
the lower gain first; equal score and gain in a group of more than 16: libstdc++'s
``std::sort`` order, as CNTK 2.7's, which LambdaRank's gradient depends on).  The value is one
number for the minibatch, as CNTK's: ``(1 - mean NDCG) * 100 * N`` for ``lambda_rank``, ``mean
NDCG@1 * 100 * N`` for ``ndcg_at_1``.  They are
the catalog ops ``F.lambda_rank`` and ``F.ndcg_at_1`` (CNTK's algorithm, pairwise over the
minibatch), so a graph holding one is lowered like any other.  Over sequences they read the
minibatch's samples as CNTK 2.7 lays them out (:func:`_columns`).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> group, score, gain = C.input_variable(1), C.input_variable(1), C.input_variable(1)
    >>> f = C.ndcg_at_1(score, gain, group)
    >>> g = np.array([[1], [1], [2], [2]], np.float32)
    >>> s = np.array([[2], [1], [3], [1]], np.float32)
    >>> n = np.array([[7], [1], [3], [1]], np.float32)
    >>> float(f.eval({score: s, gain: n, group: g}))
    400.0
"""

from __future__ import annotations

from ... import functions as F
from ...cntk_semantics import sequence_columns
from . import _graph as G
from ._adapt import batched, float_arrays, named, one_op, operand, sample_shape, wrap

__all__ = ["lambda_rank", "ndcg_at_1"]


def _ranking(kind: str, op: str, output, gain, group, name: str):
    operands = (("output", output), ("gain", gain), ("group", group))
    for label, x in operands:
        if not batched(x) or len(sample_shape(x)) != 1 or sample_shape(x)[0] < 1:
            raise ValueError(f"{kind}: {label} needs the batch axis and a vector shape ((1,); "
                             f"of a longer one its first element is read), got "
                             f"{tuple(sample_shape(x))}")
    over = [operand(x).sequence_lengths is not None for _, x in operands]
    if any(over) and not all(over):
        raise ValueError(f"{kind}: output, gain and group must all be sequences or none, got "
                         + ", ".join(f"{label} {'a sequence' if o else 'no sequence'}"
                                     for (label, _), o in zip(operands, over)))
    op_fn = F.lambda_rank if kind == "lambda_rank" else F.ndcg_at_1
    # (sequences: their steps as CNTK 2.7's minibatch holds them, the order its ranking ops
    # read the samples in, forming the groups and counting the gaps among the samples)
    columns = [sequence_columns(operand(x)) for x in (output, gain, group)]
    # (of vectors longer than 1, CNTK 2.7's nodes read the first row of its minibatch
    # matrix: each sample's first element; the gradient reaches that element only)
    columns = [c if c.shape[-1] == 1 else F.slice(c, start=(0,), stop=(1,)) for c in columns]
    out = one_op(op_fn(*columns), output, gain, group)      # (CNTK's one op over the three)
    G.BATCH.unmark(out)
    G.set_op_name(out, op)
    return named(wrap(out), name, op)


@float_arrays("output", "gain", "group")
def lambda_rank(output, gain, group, name: str = ""):
    """``(1 - mean NDCG) * 100 * N`` over the minibatch's groups; backward gives LambdaRank's
    gradients to ``output`` (the scores).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> group, gain = C.input_variable(1), C.input_variable(1)
        >>> score = C.input_variable(1, needs_gradient=True)
        >>> f = C.lambda_rank(score, gain, group)
        >>> g = np.array([[1], [1], [2], [2]], np.float32)
        >>> s = np.array([[1], [2], [3], [4]], np.float32)
        >>> n = np.array([[7], [1], [3], [1]], np.float32)
        >>> f.grad({score: s, gain: n, group: g}, wrt=[score]).ravel().round(4)
        array([-0.2121,  0.2121, -0.1486,  0.1486], dtype=float32)
    """
    return _ranking("lambda_rank", "LambdaRank", output, gain, group, name)


@float_arrays("output", "gain", "group")
def ndcg_at_1(output, gain, group, name: str = ""):
    """The mean over the minibatch's groups of the gain of the top-scored sample divided by
    the group's first (largest) gain, times ``100 * N``; no gradient (an evaluation metric).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> group, score, gain = C.input_variable(1), C.input_variable(1), C.input_variable(1)
        >>> f = C.ndcg_at_1(score, gain, group)
        >>> v = f.eval({score: [[1], [2]], gain: [[3], [1]], group: [[0], [0]]})
        >>> v.shape, round(float(v), 3)
        ((), 66.667)
    """
    return _ranking("ndcg_at_1", "NDCG", output, gain, group, name)
