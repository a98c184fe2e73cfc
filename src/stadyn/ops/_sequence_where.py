"""Ops that give a value a new sequence axis: ``sequence_where``, ``sequence_gather``,
``sequence_scatter`` (CNTK's ``sequence.where / gather / scatter``) and ``to_sequence``.

The layout is ``ops/_sequence.py``'s: padded ``(B, T, *sample)`` values and int64 lengths
``(B,)``.  A condition holds one number per step; CNTK reads it as a *count*: a step with
condition 2 is taken twice, 0 not at all, and counts accumulate, negative ones too: after step
``t`` the new sequence holds ``n_t = max(n_{t-1}, ceil(m * (c_0 + ... + c_t)))`` steps (at
least 0), ``m`` one less its type's epsilon (CNTK 2.7's ``WhereNode``,
``ComputationNetworkLib/ReshapingNodes.cpp``: a margin for ratios such as 1/3, whose float32
sum overshoots), so 0.5 takes every other step and 1/3 every third.
The new axis is as long as the longest new sequence: its length depends on the counts, as the
layout CNTK's ``WhereNode`` builds on the host from the condition's values does, so ``where``
and ``gather`` declare ``value_shape`` (a static graph holding one runs eagerly; a build on a
condition without values shows ``max_repeat`` times its padded length ``T`` until a run).  A
sequence whose counts take no step is refused with CNTK 2.7's RuntimeError ("AddSequence:
Sequences must be a least one frame long.", an ``EmptySequenceError``), whether or not the
other sequences of the minibatch take steps.
"""

from __future__ import annotations

import torch

from .._errors import EmptySequenceError, ShapeError
from ._registry import op
from ._sequence import step_mask

_C = "sequence"


def _per_step(condition: torch.Tensor, op_name: str) -> torch.Tensor:
    """``condition`` ``(B, T)`` or ``(B, T, 1, ...)`` as ``(B, T)``."""
    if condition.ndim > 2:
        if condition[0, 0].numel() != 1:
            raise ShapeError(f"{op_name}: the condition must hold one number per step, not "
                             f"{tuple(condition.shape[2:])}")
        condition = condition.reshape(condition.shape[:2])
    return condition


def _ends(condition: torch.Tensor, lengths: torch.Tensor, op_name: str) -> torch.Tensor:
    """How many new steps the steps up to each one make (int64 ``(B, T)``): the accumulated
    counts, less the margin, rounded up, never fewer than before (nor than 0); padded steps
    add nothing."""
    c = _per_step(condition, op_name)
    margin = 1.0 - torch.finfo(c.dtype).eps if c.is_floating_point() else 1.0
    c = c.to(torch.float64)
    c = torch.where(step_mask(lengths, c.shape[1]), c, torch.zeros_like(c))
    return torch.ceil(c.cumsum(1) * margin).clamp(min=0).long().cummax(1).values


def _taken(condition, lengths, op_name: str):
    """``(index (B, steps) of the step each new step takes, new lengths (B,))``, ``steps`` the
    longest new sequence (read on the host: the new axis's length is the data's)."""
    ends = _ends(condition, lengths, op_name)
    new_lengths = ends[:, -1].contiguous()
    if new_lengths.numel() and int(new_lengths.min()) < 1:
        empty = int(torch.nonzero(new_lengths < 1)[0, 0])
        raise EmptySequenceError(
            f"AddSequence: Sequences must be a least one frame long. ({op_name}: the condition "
            f"of sequence {empty} of the minibatch takes no step: its counts add up to 0 or "
            "less)")
    steps = int(new_lengths.max()) if new_lengths.numel() else 0
    j = torch.arange(steps, device=ends.device).expand(ends.shape[0], steps).contiguous()
    index = torch.searchsorted(ends.contiguous(), j, right=True)
    return index.clamp(max=ends.shape[1] - 1), new_lengths


def _rows(x: torch.Tensor) -> torch.Tensor:
    return torch.arange(x.shape[0], device=x.device).unsqueeze(1)


def _positions_dtype(condition) -> torch.dtype:
    """The positions' type: the condition's floating type (float32 for another)."""
    return condition.dtype if condition.is_floating_point() else torch.float32


def _where_shape(condition, lengths, max_repeat=1):
    n = max(int(max_repeat), 1) * condition.shape[1]
    return (torch.empty((condition.shape[0], n), dtype=_positions_dtype(condition),
                        device="meta"),
            torch.empty((condition.shape[0],), dtype=torch.int64, device="meta"))


@op(2, category=_C, shape=_where_shape, sequence=("lengths:output1", "drop"),
    value_shape="the condition's counts (the longest new sequence)")
def sequence_where(condition, lengths, max_repeat=1):
    """The positions of each sequence's steps whose ``condition`` is nonzero, as a new
    sequence (CNTK's ``sequence.where``; a count ``k`` repeats a position ``k`` times).
    Returns the positions (``(B, longest new sequence)``, of the condition's floating type) and
    their lengths.  ``max_repeat`` only sizes the axis a build shows before the data is known
    (``max_repeat`` times the condition's padded length).  No gradient.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     c = sd.Variable.from_numpy_array(np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]]))
        ...     n = sd.Variable.from_numpy_array(np.array([3, 2]))
        ...     y, m = F.sequence_where(c, n)
        >>> y.d.tolist(), m.d.tolist()
        ([[0.0, 2.0, 2.0], [1.0, 0.0, 0.0]], [3, 1])
    """
    index, new_lengths = _taken(condition, lengths, "sequence_where")
    positions = index.to(_positions_dtype(condition))
    valid = step_mask(new_lengths, positions.shape[1])
    return torch.where(valid, positions, positions.new_zeros(())), new_lengths


def _gather_shape(x, condition, lengths, max_repeat=1):
    n = max(int(max_repeat), 1) * condition.shape[1]
    return (torch.empty((x.shape[0], n) + tuple(x.shape[2:]), dtype=x.dtype, device="meta",
                        requires_grad=x.requires_grad),
            torch.empty((x.shape[0],), dtype=torch.int64, device="meta"))


@op(3, category=_C, shape=_gather_shape, sequence=("lengths:output1", "drop"),
    value_shape="the condition's counts (the longest new sequence)")
def sequence_gather(x, condition, lengths, max_repeat=1):
    """The steps of ``x`` whose ``condition`` is nonzero, as a new sequence (CNTK's
    ``sequence.gather``): returns them and their lengths; padded steps 0.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]]))
        ...     c = sd.Variable.from_numpy_array(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))
        ...     n = sd.Variable.from_numpy_array(np.array([3, 2]))
        ...     y, m = F.sequence_gather(x, c, n)
        >>> y.d.tolist(), m.d.tolist()
        ([[1.0, 3.0], [5.0, 0.0]], [2, 1])
    """
    index, new_lengths = _taken(condition, lengths, "sequence_gather")
    y = x[_rows(x), index]
    valid = step_mask(new_lengths, y.shape[1], y.ndim)
    return torch.where(valid, y, y.new_zeros(())), new_lengths


@op(3, category=_C, sequence="lengths:lengths")
def sequence_scatter(x, condition, lengths):
    """The adjoint of ``sequence_gather``: each step of ``x`` (a sequence as long as the one
    ``condition``'s counts make) added to the step of ``condition``'s sequences (with
    ``lengths``) it was taken from, so a step counted twice gets the sum of two steps; 0 where
    no step was taken (CNTK's ``sequence.scatter``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.array([[7.0, 8.0], [9.0, 0.0]]))
        ...     c = sd.Variable.from_numpy_array(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))
        ...     n = sd.Variable.from_numpy_array(np.array([3, 2]))
        ...     F.sequence_scatter(x, c, n).d.tolist()
        [[7.0, 0.0, 8.0], [0.0, 9.0, 0.0]]
    """
    ends = _ends(condition, lengths, "sequence_scatter")
    j = torch.arange(x.shape[1], device=x.device).expand(x.shape[0], x.shape[1]).contiguous()
    index = torch.searchsorted(ends.contiguous(), j, right=True).clamp(max=ends.shape[1] - 1)
    valid = j < ends[:, -1:]                  # the steps the condition made (the rest padding)
    shape = index.shape + (1,) * (x.ndim - 2)
    values = torch.where(valid.reshape(shape), x, x.new_zeros(()))
    out = x.new_zeros((x.shape[0], ends.shape[1]) + tuple(x.shape[2:]))
    return out.scatter_add(1, index.reshape(shape).expand(x.shape), values)


@op(2, category=_C, sequence=("lengths:output1", "drop"))
def to_sequence(x, lengths):
    """A plain ``(B, T, *s)`` value as sequences of ``lengths`` (numbers ``(B,)`` or
    ``(B, 1)``, rounded; CNTK's ``to_sequence``): returns the value (steps past a length are 0)
    and the lengths as int64.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
        ...     n = sd.Variable.from_numpy_array(np.array([2.0, 3.0]))
        ...     y, m = F.to_sequence(x, n)
        >>> y.d.tolist(), m.d.tolist()
        ([[1.0, 2.0, 0.0], [4.0, 5.0, 6.0]], [2, 3])
    """
    n = lengths.reshape(lengths.shape[0])
    n = (torch.round(n) if n.is_floating_point() else n).long().clamp(min=0, max=x.shape[1])
    mask = step_mask(n, x.shape[1], x.ndim)
    return torch.where(mask, x, x.new_zeros(())), n


@op(1, category=_C, sequence="drop")
def sequence_full_lengths(x):
    """Lengths ``(B,)`` saying every sequence of ``x`` ``(B, T, ...)`` is ``T`` steps long (a
    plain value made a sequence without lengths).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     n = F.sequence_full_lengths(sd.Variable.from_numpy_array(np.zeros((2, 4, 3))))
        >>> n.d.tolist()
        [4, 4]
    """
    return torch.full((x.shape[0],), x.shape[1], dtype=torch.int64, device=x.device)
