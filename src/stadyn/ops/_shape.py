"""Shape ops: reshape, reshape_trailing, transpose, concatenate, split, slice, flatten,
broadcast, stack, pad."""

from __future__ import annotations

import builtins

import numpy as np
import torch
import torch.nn.functional as TF

from ._registry import op
from ._sequence_axis import at_axis, from_base_axis, slice_rule, stack_axis, unless_moved
from ._util import norm_axis

_C = "shape"


@op(1, category=_C, keeps_input_dtype=lambda attrs: bool(attrs["inplace"]))
def reshape(x, shape, inplace=True):
    """View ``x`` with another shape (one entry may be -1).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.reshape(sd.Variable((2, 3)), (3, -1)).shape
        (3, 2)
    """
    return torch.reshape(x, tuple(int(s) for s in shape))


@op(1, category=_C, frameworks=("cntk",), sequence=from_base_axis())
def reshape_trailing(x, shape, base_axis=1):
    """Reshape the axes from ``base_axis`` on to ``shape`` (one entry may be -1) and keep the
    axes before it, whatever their sizes: the graph holds no batch size or sequence length, so
    one node serves every minibatch (CNTK's reshape of a sequence's steps, ``base_axis=2``;
    the result is on the input's sequence axis when ``base_axis >= 2``, else on none).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.reshape_trailing(sd.Variable((2, 5, 6)), (3, -1), base_axis=2).shape
        (2, 5, 3, 2)
    """
    base = int(base_axis)
    return torch.reshape(x, tuple(x.shape[:base]) + tuple(int(s) for s in shape))


@op(1, category=_C, sequence=unless_moved)
def transpose(x, axes):
    """Permute the axes: output axis ``i`` is input axis ``axes[i]``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.transpose(sd.Variable((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    return x.permute(*[int(a) for a in axes])


@op(category=_C)
def concatenate(*x, axis=None):
    """Join arrays along ``axis`` (default: the last axis).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.concatenate(sd.Variable((2, 3)), sd.Variable((2, 1)), axis=1).shape
        (2, 4)
    """
    ndim = x[0].ndim
    return torch.cat(x, dim=norm_axis(ndim - 1 if axis is None else axis, ndim))


@op(category=_C, sequence=stack_axis)
def stack(*x, axis=0):
    """Stack arrays of equal shape along a new ``axis``.  Example: ``F.stack(a, b, axis=0)``."""
    return torch.stack(x, dim=norm_axis(axis, x[0].ndim + 1))


@op(1, category=_C, sequence=at_axis)
def split(x, axis=0):
    """Split along ``axis`` into ``x.shape[axis]`` arrays with that axis removed (NNabla's split).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> [v.shape for v in F.split(sd.Variable((3, 2)), axis=0)]
        [(2,), (2,), (2,)]
    """
    return tuple(torch.unbind(x, dim=norm_axis(axis, x.ndim)))


@op(1, category=_C, sequence=slice_rule)
def slice(x, start=None, stop=None, step=None):  # noqa: A001 - NNabla's name
    """Basic slicing: ``start``/``stop``/``step`` are lists, one entry per axis; shorter lists
    apply to the trailing axes (NNabla fills the leading ones with the whole axis).  A
    negative step walks backwards, as in Python (``start=(-1,), stop=(None,), step=(-1,)``
    reverses the last axis).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.slice(sd.Variable((4, 6)), start=(1, 0), stop=(3, 6), step=(1, 2)).shape
        (2, 3)
        >>> F.slice(sd.Variable((4, 6)), start=(1,), stop=(3,)).shape
        (4, 2)
    """
    n = len(start if start is not None else stop if stop is not None else step or ())
    start = list(start) if start is not None else [None] * n
    stop = list(stop) if stop is not None else [None] * n
    step = list(step) if step is not None else [1] * n
    lead = x.ndim - n
    for i, c in enumerate(step):  # negative steps: a positive one over the flipped axis
        if c is not None and c < 0:
            axis = lead + i
            size = x.shape[axis]
            picked = range(*builtins.slice(start[i], stop[i], c).indices(size))
            x = torch.flip(x, (axis,))
            first = size - 1 - picked[0] if picked else 0
            start[i], stop[i], step[i] = first, first + len(picked) * -c, -c
    whole = (builtins.slice(None),) * lead
    index = whole + tuple(builtins.slice(a, b, c) for a, b, c in zip(start, stop, step))
    return x[index]


@op(1, category=_C, frameworks=("stadyn", "cntk"))
def flatten(x, axis=1):
    """Keep the axes before ``axis`` and merge the rest into one.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.flatten(sd.Variable((2, 3, 4))).shape
        (2, 12)
    """
    axis = norm_axis(axis, x.ndim) if x.ndim else 0
    return torch.reshape(x, tuple(x.shape[:axis]) + (-1,))


@op(1, category=_C)
def broadcast(x, shape):
    """Broadcast axes of size 1 to ``shape``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.broadcast(sd.Variable((1, 3)), (4, 3)).shape
        (4, 3)
    """
    return x.expand(*[int(s) for s in shape])


@op(1, category=_C)
def pad(x, pad_width, mode="constant", constant_value=0.0):
    """Pad the trailing axes: ``pad_width`` is ``(before_1, after_1, before_2, after_2, ...)``
    for the last ``len(pad_width)//2`` axes, first axis first (NNabla's order).  ``mode``:
    ``"constant"`` (``constant_value``), ``"reflect"`` (mirrored without repeating the edge,
    again and again for pads longer than the axis), ``"repeat"`` (the edge value).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.pad(sd.Variable((1, 2, 3)), (1, 1, 2, 2)).shape
        (1, 4, 7)
    """
    pairs = [tuple(pad_width[i:i + 2]) for i in range(0, len(pad_width), 2)]
    torch_pad = [int(v) for pair in reversed(pairs) for v in pair]
    if mode == "constant":
        return TF.pad(x, torch_pad, mode="constant", value=constant_value)
    if mode not in ("reflect", "repeat"):
        raise ValueError(f"pad: mode {mode!r} is not one of constant, reflect, repeat")
    # Gather each padded axis's source positions: any number of axes, and pads longer than
    # the axis (NNabla reflects again and again, with period 2 * (n - 1)).
    y = x
    for axis, (before, after) in zip(range(x.ndim - len(pairs), x.ndim), pairs):
        n = x.shape[axis]
        at = np.arange(-int(before), n + int(after))
        if mode == "repeat" or n == 1:
            at = np.clip(at, 0, n - 1)
        else:
            at = np.mod(at, 2 * (n - 1))
            at = np.where(at >= n, 2 * (n - 1) - at, at)
        y = y.index_select(axis, torch.as_tensor(at, dtype=torch.long, device=x.device))
    return y
