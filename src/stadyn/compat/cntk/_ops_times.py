"""CNTK's products: ``times`` (its ``output_rank`` and ``infer_input_rank_to_map``, batched
operands on either side, products over a sequence's steps) and ``times_transpose``.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.input_variable((2, 3))
    >>> C.times(x, C.parameter((3, 4), init=1.0)).eval(np.ones((1, 2, 3), np.float32)).tolist()
    [[[3.0, 3.0, 3.0, 3.0], [3.0, 3.0, 3.0, 3.0]]]
"""

from __future__ import annotations

import math


from ... import cntk_semantics as S
from ... import functions as F
from ... import sequence as Seq
from ._deferrable import defer_module
from ._adapt import (batched, float_arrays, lead_axes, named, one_op, operand, operands_dtype,
                     refuse_several_outputs, reshape_samples, root_as_output, same_dtype,
                     sample_shape, wrap)
from ._graph import SHAPELESS
from ._inferred_parameters import infer_times, infer_times_transpose, pending_shape
from ._mixins import GraphObject
from ._mixed_axes import refuse_other_sequence_axes
from ._ops_shape import (TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK, reshape,
                         transpose)
from ._run_checks import InvalidAtRunError, refuse_when_run
from ._sparse_operands import sparse_taken
from ._times_ranks import check_times_op
from ._seq_axes import free_steps, mark_free_axes

__all__ = ["times", "times_transpose"]


@float_arrays("left", "right")
def times(left, right, output_rank: int = 1, infer_input_rank_to_map=-1, name: str = ""):
    """The tensor product: ``right``'s first axes but its last ``output_rank`` are reduced
    against as many trailing axes of ``left``.  ``times(x, W)`` for a batched ``x`` is
    ``x @ W``; for a batched ``right`` (``times(W, x)``) each sample is multiplied in turn.
    Operands of too low a rank are refused as CNTK 2.7's ``Times`` refuses them
    (``_times_ranks.check_times_op``)."""
    refuse_several_outputs(left, None)      # (CNTK 2.7 reads each operand's one output)
    refuse_several_outputs(right, None)
    refuse_other_sequence_axes("Times", (right, left))     # (CNTK's Times(right, left))
    infer_times(root_as_output(left), root_as_output(right), output_rank)   # (W's inferred axes)
    dtype = operands_dtype(right, left, op="Times", arrays=True)   # CNTK's Times(right, left)
    b, a = same_dtype([operand(right, dtype), operand(left, dtype)], "Times")
    left_shape = sample_shape(left)
    check_times_op(left_shape, sample_shape(right), output_rank, infer_input_rank_to_map,
                   getattr(left, "name", "") or "", getattr(right, "name", "") or "")
    if not left_shape:
        # CNTK 2.7 builds a left operand of rank 0 against a weight of output axes only, of
        # the weight's shape, and refuses it when it first runs
        out = named(wrap(_times_rank0(a, b, left)), name, "Times")
        refuse_when_run(out.variable, f"times: the left operand {left!r} is a scalar; times "
                        "multiplies tensors of rank 1 or more (a scalar factor: element_times "
                        "or *) (CNTK 2.7: Times operation changed during final validation)",
                        InvalidAtRunError)
        return out
    if not batched(right):
        out = S.times(a, b, output_rank, batched(left))
        return named(wrap(one_op(out, a, b)), name, "Times")
    if batched(left):
        n = max(lead_axes(left), lead_axes(right))
        if lead_axes(left) < n:         # one value per sequence, at each of its steps
            a = Seq.broadcast_as(a, b)
        elif lead_axes(right) < n:
            b = Seq.broadcast_as(b, a)
        out = _times_both_batched(a, b, int(output_rank), n)
        if int(infer_input_rank_to_map) == TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK \
                and lead_axes(left) == lead_axes(right) == 2:
            # CNTK 2.7's Times reducing the sequence axis too: the products of each sequence's
            # steps summed, one value per sequence (its sequence.reduce_sum of the times)
            return named(wrap(one_op(Seq.reduce_sum(out), a, b)), name, "Times")
        return named(wrap(out if lead_axes(left) != lead_axes(right) else one_op(out, a, b)),
                     name, "Times")
    out = _times_batched_right(a, b, int(output_rank), lead_axes(right))
    return named(wrap(one_op(out, a, b)), name, "Times")


def _times_rank0(a, b, left):
    """A left operand of rank 0 (a scalar, or one per sample) times ``b``: each of its
    values times ``b`` (the graph CNTK 2.7 builds, of ``b``'s sample shape)."""
    if not hasattr(a, "shape"):
        return F.mul_scalar(b, float(a))
    if not batched(left):
        return F.mul2(b, a)
    return F.mul2(reshape_samples(a, lead_axes(left), (1,) * len(sample_shape(b))), b)


def _times_both_batched(a, b, output_rank: int, n: int):
    """Each sample of ``a`` times the same sample of ``b`` (CNTK's ``times`` of two inputs;
    ``n`` leading axes: batch, steps): ``b``'s first ``rank - output_rank`` sample axes reduced
    against ``a``'s last ones."""
    left, right = tuple(a.shape[n:]), tuple(b.shape[n:])
    in_rank = len(right) - output_rank
    free = free_steps(a) | free_steps(b)
    if free and 0 <= in_rank <= len(left):
        return _times_of_free_samples(a, b, in_rank, n, free)
    if in_rank < 0 or in_rank > len(left) or left[len(left) - in_rank:] != right[:in_rank]:
        raise ValueError(f"times: samples of shape {left} cannot multiply samples of shape "
                         f"{right} (output_rank {output_rank})")
    lead, out_shape = left[:len(left) - in_rank], right[in_rank:]
    k, m, r = math.prod(right[:in_rank]), math.prod(lead), math.prod(out_shape)
    y = F.batch_matmul(reshape_samples(a, n, (m, k)), reshape_samples(b, n, (k, r)))
    return reshape_samples(y, n, lead + out_shape)


def _times_of_free_samples(a, b, in_rank: int, n: int, free: frozenset):
    """:func:`_times_both_batched` of samples with free dimensions (their lengths each run's,
    so not known to the graph): an ``einsum`` of each sample pair, ``b``'s first ``in_rank``
    axes against ``a``'s last ones, whose output axes are free where an operand's were
    (CNTK 2.7's ``times`` of two ``(FreeDimension, FreeDimension)`` inputs is ``(-3, -3)``)."""
    letters = iter("abcdefghijklmnopqrstuvwxy")
    lead = "".join(next(letters) for _ in range(n))
    ka = a.ndim - n - in_rank
    kept_a = "".join(next(letters) for _ in range(ka))
    summed = "".join(next(letters) for _ in range(in_rank))
    kept_b = "".join(next(letters) for _ in range(b.ndim - n - in_rank))
    out = F.einsum(a, b, equation=f"{lead}{kept_a}{summed},{lead}{summed}{kept_b}->"
                                  f"{lead}{kept_a}{kept_b}")
    shown = [ax for ax in range(n, n + ka) if ax in free_steps(a)] + \
        [n + ka + j for j in range(b.ndim - n - in_rank) if n + in_rank + j in free_steps(b)]
    if shown:
        mark_free_axes(out, shown)
    return out


def _times_batched_right(w, x, output_rank: int, n: int):
    """``w`` (unbatched) times each sample of ``x`` (``n`` leading axes: batch, steps):
    ``x``'s first ``rank - output_rank`` sample axes are reduced against ``w``'s last axes."""
    sample = tuple(x.shape[n:])
    in_rank = len(sample) - output_rank
    if in_rank < 0:
        raise ValueError(f"times: output_rank {output_rank} exceeds the rank of {sample}")
    in_shape, out_shape = sample[:in_rank], sample[in_rank:]
    lead = tuple(w.shape[:w.ndim - in_rank])
    if in_rank and n == 1 and 1 in free_steps(x) and \
            tuple(w.shape[w.ndim - in_rank + 1:]) == in_shape[1:]:
        return _times_over_steps(w, x, lead, in_shape, out_shape)
    if tuple(w.shape[w.ndim - in_rank:]) != in_shape:
        raise ValueError(f"times: {tuple(w.shape)} cannot multiply samples of shape {sample}")
    k, m, r = math.prod(in_shape), math.prod(lead), math.prod(out_shape)
    free = [a - n - in_rank for a in free_steps(x) if a >= n + in_rank]
    if len(free) == 1:      # (an input's free dimension kept: its length is each run's)
        r, out_shape = -1, tuple(-1 if j == free[0] else d for j, d in enumerate(out_shape))
    keep = tuple(range(n))
    xs = F.transpose(_samples(x, n, (k, r)), keep + (n + 1, n))        # (..., r, k)
    wt = F.transpose(F.reshape(w, (m, k)), (1, 0))                     # (k, m)
    y = F.transpose(F.affine(xs, wt, None, n + 1), keep + (n + 1, n))  # (..., m, r)
    return _samples(y, n, lead + out_shape)


def _samples(v, n: int, shape: tuple):
    """:func:`reshape_samples`, the leading axes kept as they come where ``shape`` has an axis
    to infer (a free dimension's length, each run's)."""
    return F.reshape_trailing(v, shape, base_axis=n) if -1 in shape else \
        reshape_samples(v, n, shape)


def _times_over_steps(w, x, lead: tuple, in_shape: tuple, out_shape: tuple):
    """``w`` times each sample of ``x`` whose first sample axis, reduced, holds
    ``sequence.unpack``'s steps (CNTK's free dimension): their number is ``w``'s, whatever
    the graph was built with, as CNTK 2.7 infers it; a run of another padded length is a
    ValueError.  (The steps are broadcast against ``w``'s axis, so a graph built before its
    input was fed, of one step, takes any ``w``.)"""
    steps = int(w.shape[w.ndim - len(in_shape)])
    rest, m, r = math.prod(in_shape[1:]), math.prod(lead), math.prod(out_shape)
    xs = F.reshape_trailing(x, (1, -1, rest, r), base_axis=1)         # (B, 1, T, rest, r)
    ws = F.reshape(w, (1, m, steps, rest, 1))
    y = F.sum(F.mul2(xs, ws), axis=[2, 3])                           # (B, m, r)
    return reshape_samples(y, 1, lead + out_shape)


@float_arrays("left", "right")
def times_transpose(left, right, name: str = ""):
    """``left`` times the transpose of ``right``'s samples (a matrix, or a vector taken as a
    row: ``(m, k)`` times the transpose of a ``(k,)`` vector is ``(m, 1)``), as CNTK 2.7.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> a = C.constant(np.ones((3, 4), np.float32))
        >>> C.times_transpose(a, C.input_variable(4)).shape
        (3, 1)
        >>> C.times_transpose(a, C.constant(np.ones((2, 4), np.float32))).shape
        (3, 2)
    """
    infer_times_transpose(left, right)      # (a parameter's reduced axis, CNTK 2.7's)
    rank = len(sample_shape(right))
    if rank and not sample_shape(left):     # CNTK 2.7: a RuntimeError when built
        raise RuntimeError(f"times_transpose: the left operand {left!r} is a scalar; it "
                           "reduces over one axis of the left operand, which has none")
    if rank not in (1, 2):
        raise ValueError(f"times_transpose: the right operand must be a vector or a matrix, "
                         f"not of shape {tuple(sample_shape(right))}")
    k = sample_shape(right)[-1]
    with sparse_taken():            # (CNTK 2.7 takes a sparse right operand)
        bt = reshape(right, (k, 1)) if rank == 1 else transpose(right, (1, 0))
    return named(one_op(times(left, bt), left, right), name, "TransposeTimes")


def _ranks_checked(arguments: dict) -> "tuple | None":
    """``times``' hook as it is called (:func:`._deferrable.deferrable`): over a placeholder
    made with a shape (which waits for its binding here), CNTK 2.7's ``Times`` rank rule as
    the op is made (``check_times_op``: a placeholder of shape ``()`` against a weight with
    axes to reduce is its RuntimeError), and the shape it shows then where the left operand is
    a scalar (the right operand's)."""
    left, right = arguments["left"], arguments["right"]
    shapes = [tuple(v.shape) if isinstance(v, GraphObject) else None for v in (left, right)]
    if None in shapes or (-2,) in shapes:
        return None
    check_times_op(shapes[0], shapes[1], arguments["output_rank"],
                   arguments["infer_input_rank_to_map"], getattr(left, "name", "") or "",
                   getattr(right, "name", "") or "")
    return shapes[1] if not shapes[0] else None


def _output_axis_known(arguments: dict) -> None:
    """``times_transpose``' hook as it is called: CNTK 2.7's ValueError for a right operand
    of two axes whose first (the output's: TransposeTimes' ``outputRank`` 1) is a parameter's
    still inferred axis, which no operand can infer (CNTK refuses it as the op is made)."""
    shape = pending_shape(arguments["right"])
    if shape is not None and len(shape) == 2 and shape[0] == -1:
        dims = " x ".join("?" if d == -1 else str(d) for d in reversed(shape))
        raise ValueError(f"Times: The outputRank (1) dimensions of right operand's shape "
                         f"'[{dims}]' cannot be Inferred.")


_ranks_checked.acts_on = lambda x: isinstance(x, GraphObject) and x.variable in SHAPELESS

# CNTK 2.7 makes Times(right, left) and TransposeTimes(right, left): a walk of its graph
# (``placeholders``) meets the right operand first
times.cntk_operands_reversed = times_transpose.cntk_operands_reversed = True
# ops on placeholders without a shape (or on layers) wait for their shapes
defer_module(globals(), __all__, as_called={"times": _ranks_checked,
                                           "times_transpose": _output_axis_known})
