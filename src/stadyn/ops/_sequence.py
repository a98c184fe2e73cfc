"""Ops over the sequence axis: padded values ``(B, T, *sample)`` and their lengths ``(B,)``.

Every op here takes the sequences' lengths as an input (see ``stadyn/graph/_sequence.py`` for
the layout) and masks padded steps with ``where`` -- never with a product, so that whatever a
padded step holds (even ``inf`` or ``nan``) reaches neither a value nor a gradient.  The
per-sequence semantics are CNTK's (``cntk.sequence.*``, ``past_value``, ``future_value``).
``stadyn.sequence`` calls these ops with a Variable's own lengths.  Each declaration says which
sequence axis its outputs have (``sequence=``: ``"drop"`` for the reductions over the steps,
``"lengths:lengths"`` for a sequence on the lengths given, ``"lengths:output1"`` for new
lengths the op computes), so a direct ``F`` call gives the same axes.
"""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor

from .._errors import EmptySequenceError, ShapeError
from ._registry import op

_C = "sequence"


def step_mask(lengths: torch.Tensor, steps: int, ndim: int = 2) -> torch.Tensor:
    """``(B, steps, 1, ...)`` booleans (``ndim`` axes): True where step ``t < lengths[b]``.

    Example:
        >>> import torch
        >>> step_mask(torch.tensor([2, 1]), 3).tolist()
        [[True, True, False], [True, False, False]]
    """
    if steps == 1:              # one step (a recurrence stepped inside a loop): 2 ops, not 4
        mask = (lengths > 0).unsqueeze(1)
    else:
        t = torch.arange(steps, device=lengths.device)
        mask = t.unsqueeze(0) < lengths.unsqueeze(1)
    return mask if ndim == 2 else mask.reshape(mask.shape + (1,) * (ndim - 2))


def _masked(x: torch.Tensor, lengths: torch.Tensor, fill: float) -> torch.Tensor:
    return torch.where(step_mask(lengths, x.shape[1], x.ndim), x, x.new_full((), fill))


@op(2, category=_C, precision="float", sequence="drop")
def sequence_reduce_sum(x, lengths):
    """The sum of each sequence's steps: ``(B, T, *s)`` -> ``(B, *s)`` (CNTK's
    ``sequence.reduce_sum``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.ones((2, 3, 1)))
        ...     n = sd.Variable.from_numpy_array(np.array([3, 1]))
        ...     F.sequence_reduce_sum(x, n).d.ravel().tolist()
        [3.0, 1.0]
    """
    return _masked(x, lengths, 0.0).sum(1)


@op(2, category=_C, precision="float", sequence="drop")
def sequence_reduce_max(x, lengths):
    """The maximum over each sequence's steps, element-wise (``sequence.reduce_max``).

    Example: ``F.sequence_reduce_max(x, lengths)`` of ``(B, T, *s)`` is ``(B, *s)``.
    """
    return _masked(x, lengths, float("-inf")).amax(1)


@op(2, category=_C, precision="float", sequence="lengths:lengths")
def sequence_softmax(x, lengths):
    """Softmax over each sequence's steps (the sequence axis), element-wise over the sample
    axes; padded steps are 0.

    Example: attention weights over a sentence, ``F.sequence_softmax(scores, lengths)``.
    """
    mask = step_mask(lengths, x.shape[1], x.ndim)
    y = torch.softmax(torch.where(mask, x, x.new_full((), float("-inf"))), dim=1)
    return torch.where(mask, y, y.new_zeros(()))


@op(2, category=_C, sequence="drop")
def sequence_first(x, lengths):
    """Each sequence's first step: ``(B, T, *s)`` -> ``(B, *s)`` (``sequence.first``).

    Example: ``F.sequence_first(x, lengths)``.
    """
    return x[:, 0]


@op(2, category=_C, sequence="drop")
def sequence_last(x, lengths):
    """Each sequence's last step (at ``lengths - 1``): ``(B, T, *s)`` -> ``(B, *s)``
    (``sequence.last``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.arange(6.0).reshape(2, 3))
        ...     n = sd.Variable.from_numpy_array(np.array([3, 1]))
        ...     F.sequence_last(x, n).d.tolist()
        [2.0, 3.0]
    """
    index = (lengths - 1).clamp(min=0)
    return x[torch.arange(x.shape[0], device=x.device), index]


def _slice_bounds(lengths, begin_index, end_index):
    begin = (lengths + begin_index).clamp(min=0) if begin_index < 0 else \
        torch.clamp(torch.full_like(lengths, begin_index), max=lengths)
    if end_index > 0:
        end = torch.clamp(torch.full_like(lengths, end_index), max=lengths)
    else:
        end = (lengths + end_index).clamp(min=0)
    return begin, (end - begin).clamp(min=0)


def _slice_steps(steps: int, begin_index: int, end_index: int) -> int:
    """The padded length of a slice of sequences padded to ``steps``."""
    if begin_index < 0:
        most = -begin_index if end_index >= 0 else end_index - begin_index
    elif end_index > 0:
        most = end_index - begin_index
    else:
        most = steps - begin_index + end_index
    return max(1, min(steps, most))


@op(2, category=_C, sequence=("lengths:output1", "drop"))
def sequence_slice(x, lengths, begin_index=0, end_index=0):
    """Steps ``begin_index`` to ``end_index`` of each sequence (CNTK's ``sequence.slice``:
    negative indices count from each sequence's end, ``end_index=0`` is the end).  Returns the
    sliced sequences and their lengths.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.arange(8.0).reshape(2, 4))
        ...     n = sd.Variable.from_numpy_array(np.array([4, 2]))
        ...     y, m = F.sequence_slice(x, n, 1, 0)
        >>> y.d.tolist(), m.d.tolist()
        ([[1.0, 2.0, 3.0], [5.0, 0.0, 0.0]], [3, 1])
    """
    begin, new_lengths = _slice_bounds(lengths, int(begin_index), int(end_index))
    steps = _slice_steps(x.shape[1], int(begin_index), int(end_index))
    index = begin.unsqueeze(1) + torch.arange(steps, device=x.device).unsqueeze(0)
    index = index.clamp(max=x.shape[1] - 1)
    rows = torch.arange(x.shape[0], device=x.device).unsqueeze(1)
    return _masked(x[rows, index], new_lengths, 0.0), new_lengths


@op(3, category=_C, sequence="lengths:lengths")
def sequence_broadcast_as(x, like, lengths):
    """``x`` (one value per sequence, ``(B, *s)``) repeated at every step of the sequences
    of ``like`` (``(B, T, ...)`` with ``lengths``); padded steps are 0
    (``sequence.broadcast_as``).

    Example: ``F.sequence_broadcast_as(context, words, lengths)``.
    """
    steps = like.shape[1]
    y = x.unsqueeze(1).expand((x.shape[0], steps) + tuple(x.shape[1:]))
    return _masked(y, lengths, 0.0)


@op(4, category=_C, sequence="lengths:like_lengths")
def sequence_reconcile(x, lengths, like, like_lengths):
    """The sequences ``x`` (with ``lengths``) put on the sequence axis of ``like`` (with
    ``like_lengths``; CNTK's ``reconcile_dynamic_axes`` of a sequence on another axis): the
    values as they are, checked at run to have the same lengths (a ``ValueError`` where they
    differ).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.arange(4.0).reshape(2, 2))
        ...     n = sd.Variable.from_numpy_array(np.array([2, 1]))
        ...     F.sequence_reconcile(x, n, x * 0, n).d.tolist()
        [[0.0, 1.0], [2.0, 3.0]]
    """
    if tuple(x.shape[:2]) != tuple(like.shape[:2]) or lengths.shape != like_lengths.shape:
        raise ValueError(f"{_UNRECONCILED}: padded {tuple(x.shape[:2])} and "
                         f"{tuple(like.shape[:2])} (sequences, steps)")
    if lengths.is_meta or like_lengths.is_meta:     # (a shape inferred: nothing to check)
        pass
    elif isinstance(lengths, FakeTensor):     # traced: the check is in the program (CPU)
        if lengths.device.type == "cpu":
            torch._assert_async(torch.all(lengths == like_lengths), _UNRECONCILED)
    elif bool((lengths != like_lengths).any()):
        raise ValueError(f"{_UNRECONCILED}: lengths {lengths.tolist()} and "
                         f"{like_lengths.tolist()}")
    return x.view_as(x)     # (a view: the output gets its own autograd node)


_UNRECONCILED = ("sequence_reconcile: sequences cannot be put on the axis of sequences of other "
                 "lengths (CNTK 2.7: an MB layout that is incompatible)")


def _initial(initial_state, like):
    """The initial state broadcast to one step of ``like`` (``(B, *s)``)."""
    return initial_state.to(like.dtype).expand_as(like) if initial_state.ndim <= like.ndim \
        else initial_state


@op(3, category=_C, sequence="lengths:lengths")
def past_value(x, lengths, initial_state, time_step=1):
    """The value ``time_step`` steps earlier in the same sequence; ``initial_state`` (a scalar,
    one step's shape or one per sequence) before the start (CNTK's ``past_value``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]]))
        ...     n = sd.Variable.from_numpy_array(np.array([3, 2]))
        ...     F.past_value(x, n, sd.Variable.from_numpy_array(np.float32(9))).d.tolist()
        [[9.0, 1.0, 2.0], [9.0, 4.0, 0.0]]
    """
    k, steps = int(time_step), x.shape[1]
    head = _initial(initial_state, x[:, 0]).unsqueeze(1)
    if k >= steps:
        y = head.expand_as(x)
    else:
        y = torch.cat([head.expand((x.shape[0], k) + tuple(x.shape[2:])), x[:, :steps - k]], 1)
    return _masked(y, lengths, 0.0)


@op(3, category=_C, sequence="lengths:lengths")
def future_value(x, lengths, initial_state, time_step=1):
    """The value ``time_step`` steps later in the same sequence; ``initial_state`` past each
    sequence's end (CNTK's ``future_value``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]]))
        ...     n = sd.Variable.from_numpy_array(np.array([3, 2]))
        ...     F.future_value(x, n, sd.Variable.from_numpy_array(np.float32(9))).d.tolist()
        [[2.0, 3.0, 9.0], [5.0, 9.0, 0.0]]
    """
    k, steps = int(time_step), x.shape[1]
    tail = _initial(initial_state, x[:, 0]).unsqueeze(1)
    shifted = torch.cat([x[:, min(k, steps):],
                         tail.expand((x.shape[0], min(k, steps)) + tuple(x.shape[2:]))], 1)
    inside = step_mask(lengths - k, steps, x.ndim)
    y = torch.where(inside, shifted, tail.expand_as(x))
    return _masked(y, lengths, 0.0)


_SHORTER = ("Convolution operation requires that kernel dim %d <= input dim %s. (the minibatch's "
            "longest sequence is shorter than the window, padded or not: CNTK 2.7 refuses it)")
_MASK = ("The first entry of a Value mask must be Valid or SequenceBegin. (a sequence shorter "
         "than the window's %d steps is left no step beside longer ones: CNTK 2.7 refuses it)")
_NO_STEP = ("AddSequence: Sequences must be a least one frame long. (the sequences are shorter "
            "than the window's %d steps: none is left a step)")


def _window_lengths_shape(lengths, kernel=1, span=1, stride=1, pad=False):
    return torch.empty(lengths.shape, dtype=torch.int64, device="meta")


@op(1, category=_C, sequence="drop", shape=_window_lengths_shape)
def sequence_window_lengths(lengths, kernel=1, span=1, stride=1, pad=False):
    """The lengths of the sequences a convolution along the steps leaves (CNTK's
    ``SequentialConvolution``): ``ceil(n / stride)`` with ``pad``, ``(n - span) // stride + 1``
    without (``span`` the dilated window).  As CNTK 2.7, a minibatch whose longest sequence is
    shorter than the ``kernel`` is refused (a ``ShapeError``, CNTK's ValueError "Convolution
    operation requires that kernel dim ..."), padded or not, and a sequence left no step
    beside longer ones (an ``EmptySequenceError``: its Value-mask RuntimeError).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     n = sd.Variable.from_numpy_array(np.array([5, 3]))
        ...     F.sequence_window_lengths(n, kernel=3, span=3).d.tolist()
        [3, 1]
    """
    kernel, span, stride = int(kernel), int(span), int(stride)
    out = torch.div(lengths + stride - 1, stride, rounding_mode="floor") if pad else \
        torch.div(lengths - span, stride, rounding_mode="floor") + 1
    if not lengths.numel():
        return out
    if isinstance(lengths, FakeTensor):    # traced: the checks are in the program (CPU)
        if lengths.device.type == "cpu":
            torch._assert_async(lengths.max() >= kernel, _SHORTER % (kernel, "?"))
            if not pad:
                torch._assert_async(torch.all(out >= 1), _MASK % span)
        return out
    longest = int(lengths.max())
    if longest < kernel:
        raise ShapeError(_SHORTER % (kernel, longest))
    if not pad and bool((out < 1).any()):
        said = _NO_STEP if bool((out < 1).all()) else _MASK
        raise EmptySequenceError(said % span)
    return out


@op(2, category=_C, sequence="drop")
def sequence_unpack(x, lengths, padding_value=0.0):
    """The padded sequences as a plain tensor and its mask: ``(y, mask)`` with
    ``padding_value`` at padded steps and ``mask`` ``(B, T)`` 1 at real steps
    (CNTK's ``sequence.unpack``).

    Example: ``y, mask = F.sequence_unpack(x, lengths)``.
    """
    mask = step_mask(lengths, x.shape[1], x.ndim)
    y = torch.where(mask, x, x.new_full((), float(padding_value)))
    return y, step_mask(lengths, x.shape[1]).to(x.dtype)
