"""CNTK's ``CosDistanceWithNegativeSamples`` (CosDistanceWithNegativeSamplesNode,
LinearAlgebraNodes.h:1612; CNTK 2.7's ``C.cosine_distance_with_negative_samples``): for the
``j``-th column of the minibatch, its cosine similarity with the same column of the other
input, then with the columns ``(j + shift + k - 1) mod n`` for ``k = 1 .. count``
(CPUMatrix::InnerProductWithShiftNeg, CPUMatrixImpl.h:6013-6060).  A sequence's steps are the
columns of CNTK's minibatch, counted time-major (step 0 of every sequence, then step 1, ...),
as cntk.exe and CNTK 2.7 pack sequences of one length.
"""

from __future__ import annotations

from .. import functions as F
from ..graph import Variable
from ..sequence import reshape_samples

__all__ = ["cosine_with_negative_samples"]


def cosine_with_negative_samples(x: Variable, y: Variable, shift: int, count: int,
                                 lead: int) -> Variable:
    """CNTK's cosine similarities of ``x``'s columns with ``y``'s and ``count`` shifted ones:
    ``x`` and ``y`` have ``lead`` leading axes (1: a batch of samples ``(N, ...)``; 2: a batch
    of sequences ``(N, T, ...)``) and samples of the same shape; the result has the same
    leading axes and samples of shape ``(1 + count,)``.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.cntk_semantics import cosine_with_negative_samples
        >>> x = sd.Variable.from_numpy_array(np.eye(3, dtype=np.float32))
        >>> out = cosine_with_negative_samples(x, x, shift=1, count=1, lead=1)
        >>> out.forward(); out.d.tolist()
        [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]]
    """
    size = 1
    for d in x.shape[lead:]:
        size *= int(d)
    if lead == 2:
        return _negative_steps(x, y, shift, count, size)

    sim = _cosines(F.reshape(x, (-1, size)), F.reshape(y, (-1, size)))   # (N, N)
    return _shifted(sim, shift, count)


def _unit(rows: Variable) -> Variable:
    """``rows`` (n, D) each divided by its norm; a zero row (a zero sample, or a gap of CNTK's
    packed minibatch) is divided by sqrt(0 + 1) and stays 0, so its cosine with a non-zero row
    is 0 as in CNTK 2.7, whose inverse norm is clipped at 1/1e-30 (AssignElementInverseOf,
    CPUMatrixImpl.h:2213-2230; EPS_IN_INVERSE, CommonMatrix.h:33) rather than 1/0, and the
    square root's gradient stays finite (at 0 it is 1/0, a NaN everywhere once multiplied).
    Two zero rows score 0 here; CNTK 2.7's float gives NaN (1e30 * 1e30 overflows, times 0)."""
    squares = F.sum(F.mul2(rows, rows), axis=1, keepdims=True)
    return F.div2(rows, F.sqrt(F.add2(squares, F.equal_scalar(squares, 0.0))))


def _cosines(x_rows: Variable, y_rows: Variable) -> Variable:
    """(n, n): the cosine of each row of ``x_rows`` with each row of ``y_rows``."""
    return F.affine(_unit(x_rows), F.transpose(_unit(y_rows), (1, 0)))


def _shifted(sim: Variable, shift: int, count: int) -> Variable:
    """(n, 1 + count): row ``j``'s entries of ``sim`` at ``j``, then at ``(j + shift + k - 1)
    mod n`` for ``k = 1 .. count`` (CPUMatrix::InnerProductWithShiftNeg)."""
    ones, (i,) = _ones_and_positions(sim, 1, (0,))                 # i: 0 .. n-1
    n = F.sum(ones)
    columns = []
    for k in range(count + 1):
        j = F.add_scalar(i, float(0 if k == 0 else shift + k - 1))
        j = F.sub2(j, F.mul2(n, F.floor(F.div2(j, n))))           # mod n
        columns.append(F.take_along_axis(sim, F.reshape(F.cast(j, "int64"), (-1, 1)), axis=1))
    return F.concatenate(*columns, axis=1)


def _negative_steps(x: Variable, y: Variable, shift: int, count: int, size: int) -> Variable:
    """:func:`cosine_with_negative_samples` of sequences ``(N, T, ...)``: the samples are the
    columns of CNTK's minibatch, the sequences packed into parallel streams as CNTK packs them
    (``F.cntk_sequence_columns``: step by step, a stream's gaps zero columns that count in
    ``n``); each column meets the column ``j + shift + k - 1 (mod n)``, and each step's row of
    the result is read back from its column."""
    lengths = x.sequence_lengths

    def columns(v):
        return F.cntk_sequence_columns(reshape_samples(v, 2, (size,)), lengths)   # (n, D)
    packed = _shifted(_cosines(columns(x), columns(y)), shift, count)  # (n, 1 + count)
    # back to the steps: number each step (N, T) 1, 2, ... (row-major), pack the numbers as
    # the values were (gaps 0), and read each step's row from the column its number went to
    # (a gather, so that a NaN in one column stays there); a padded step matches no column
    # and is 0
    step_ones, (b_of, t_of) = _ones_and_positions(reshape_samples(x, 2, (size,)), 2, (0, 1),
                                                  keepdims=True)                # (N, T, 1)
    steps = F.sum(step_ones, axis=1, keepdims=True)                              # T
    number = F.add_scalar(F.add2(F.mul2(b_of, steps), t_of), 1.0)
    packed_number = F.cntk_sequence_columns(number, lengths)                     # (n, 1)
    _, (column,) = _ones_and_positions(packed_number, 1, (0,))                   # 0 .. n-1
    # (1 - |sign(difference)|: the numbers are whole, in the values' dtype)
    where = F.r_sub_scalar(F.abs(F.sign(F.sub2(number, F.reshape(packed_number, (1, 1, -1))),
                                        0.0)), 1.0)                              # (N, T, n)
    at = F.sum(F.mul2(where, F.reshape(column, (1, 1, -1))), axis=2)             # (N, T)
    rows = F.gather(packed, F.cast(at, "int64"), axis=0)                  # (N, T, 1 + count)
    return F.where(F.sum(where, axis=2), rows, F.mul_scalar(F.isnan(rows), 0.0))


def _ones_and_positions(v: Variable, axis: int, along: tuple, keepdims: bool = False):
    """Ones shaped as ``v`` summed over ``axis`` (made of its shape, not its values: a NaN or
    an infinity in ``v`` leaves them 1), and for each axis of ``along`` the positions 0, 1,
    ... of those ones along it: the index CNTK's columns are counted with."""
    ones = F.add_scalar(F.mul_scalar(F.isnan(F.sum(v, axis=axis, keepdims=keepdims)), 0.0),
                        1.0)
    return ones, [F.cumsum(ones, axis=a, exclusive=True) for a in along]
