"""NNabla 1.39's array functions that no other op module holds: ``flip``, ``trilu``,
``eye_like``, ``linspace``, ``einsum``, ``shape``, ``mod2``, ``bit_shift`` and ``sum_pooling``.
Each follows NNabla 1.39's outputs (checked by tests/compat's ``nnabla_functions_2026`` cases).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     y = F.flip(sd.Variable.from_numpy_array(np.arange(6.0).reshape(2, 3)))
    >>> y.d
    array([[2., 1., 0.],
           [5., 4., 3.]], dtype=float32)
"""

from __future__ import annotations

import torch
import torch.nn.functional as TF

from ..graph import get_current_context
from ._registry import op
from ._sequence_axis import einsum_rule, unless_axes
from ._util import norm_axis, pool_geometry

_C = "misc"


@op(1, category=_C, sequence=unless_axes("axes", default=-1))
def flip(x, axes=None):
    """``x`` reversed along ``axes`` (NNabla's default: the last axis).  Backward flips the
    gradient back.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.flip(sd.Variable.from_numpy_array(np.arange(4.0).reshape(2, 2)), axes=[0])
        >>> y.d.tolist()
        [[2.0, 3.0], [0.0, 1.0]]
    """
    axes = [-1] if axes is None else list(axes)
    return torch.flip(x, [norm_axis(int(a), x.ndim) for a in axes])


@op(1, category=_C)
def trilu(x, k=0, upper=True):
    """The upper (``upper=True``) or lower triangle of the last two axes of ``x`` from diagonal
    ``k`` on (NNabla's ``trilu``, ONNX's ``Trilu``), zeros elsewhere; the gradient passes where
    the value is kept.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.trilu(sd.Variable.from_numpy_array(np.ones((3, 3), np.float32)), k=1)
        >>> y.d.tolist()
        [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    """
    if x.ndim < 2:
        raise ValueError(f"trilu: x must have at least 2 axes, got shape {tuple(x.shape)}")
    return torch.triu(x, int(k)) if upper else torch.tril(x, int(k))


@op(1, category=_C)
def eye_like(x, k=0):
    """A matrix of ``x``'s 2-D shape with ones on diagonal ``k`` (``k > 0`` above the main one)
    and zeros elsewhere (NNabla's ``eye_like``).  No gradient.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.eye_like(sd.Variable.from_numpy_array(np.zeros((2, 3), np.float32)), k=1)
        >>> y.d.tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    if x.ndim != 2:
        raise ValueError(f"eye_like: x must be 2-D, got shape {tuple(x.shape)}")
    rows, cols, k = x.shape[0], x.shape[1], int(k)
    i = torch.arange(rows, device=x.device)[:, None]
    j = torch.arange(cols, device=x.device)[None, :]
    return (j - i == k).to(x.dtype)


@op(0, category=_C)
def linspace(start, stop, num):
    """``num`` evenly spaced float32 values from ``start`` to ``stop``, both included (NNabla's
    ``linspace``; ``num=1`` gives ``[start]``).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.linspace(0, 1, 5)
        >>> y.d.tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    if int(num) < 0:
        raise ValueError(f"linspace: num must be >= 0, got {num}")
    return torch.linspace(float(start), float(stop), int(num), dtype=torch.float32,
                          device=get_current_context().device)


@op(category=_C, sequence=einsum_rule)
def einsum(*x, equation=""):
    """The Einstein summation ``equation`` over the inputs (NumPy's ``einsum`` notation, as
    NNabla's ``einsum``); differentiable in every input.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> a = sd.Variable.from_numpy_array(np.ones((2, 3), np.float32))
        >>> b = sd.Variable.from_numpy_array(np.ones((3, 4), np.float32))
        >>> with sd.auto_forward():
        ...     y = F.einsum(a, b, equation="ij,jk->ik")
        >>> y.shape, float(y.d[0, 0])
        ((2, 4), 3.0)
    """
    if not equation:
        raise ValueError("einsum: give equation= (e.g. 'ij,jk->ik')")
    if isinstance(equation, bytes):        # NNabla's binding takes bytes as well
        equation = equation.decode()
    return torch.einsum(equation, *x)


@op(1, category=_C, sequence="drop")
def shape(x, start=None, end=None):
    """The shape of ``x`` (its axes ``start:end``, Python's slice rules) as a float32 vector,
    as NNabla 1.39's ``shape`` gives it.  No gradient.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.shape(sd.Variable((4, 2, 3)), 1)
        >>> y.d.tolist()
        [2.0, 3.0]
    """
    return torch.tensor(list(x.shape)[start:end], dtype=torch.float32, device=x.device)


@op(2, category=_C, elementwise=True)
def mod2(x0, x1, fmod=False):
    """The element-wise remainder of ``x0 / x1`` (NNabla's ``mod2``, broadcasting).  As NNabla
    1.39 computes it: floats always take the sign of ``x0`` (C's ``fmod``); integers take the
    sign of ``x1`` (Python's ``%``) unless ``fmod=True``.  No gradient.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> a = sd.Variable.from_numpy_array(np.array([-5, 5], np.int32))
        >>> b = sd.Variable.from_numpy_array(np.array([3, 3], np.int32))
        >>> with sd.auto_forward():
        ...     y = F.mod2(a, b)
        >>> y.d.tolist()
        [1, 2]
    """
    if x0.is_floating_point() or x1.is_floating_point() or fmod:
        return torch.fmod(x0, x1)
    return torch.remainder(x0, x1)


@op(2, category=_C)
def bit_shift(x, shift, direction="LEFT"):
    """``x`` shifted bitwise by ``shift`` (integer arrays, broadcasting) to the ``"LEFT"`` or
    ``"RIGHT"`` (NNabla's ``bit_shift``, ONNX's ``BitShift``; bits shifted out of the type are
    lost).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> a = sd.Variable.from_numpy_array(np.array([1, 2, 255], np.uint8))
        >>> s = sd.Variable.from_numpy_array(np.array([1, 2, 3], np.uint8))
        >>> with sd.auto_forward():
        ...     y = F.bit_shift(a, s)
        >>> y.d.tolist()
        [2, 8, 248]
    """
    if x.is_floating_point() or shift.is_floating_point():
        raise TypeError(f"bit_shift: x and shift must be integer arrays, got {x.dtype} and "
                        f"{shift.dtype}")
    if direction not in ("LEFT", "RIGHT"):
        raise ValueError(f"bit_shift: direction must be 'LEFT' or 'RIGHT', got {direction!r}")
    if x.dtype in (torch.uint16, torch.uint32, torch.uint64):
        return _wide_unsigned_shift(x, shift, direction == "LEFT")
    if direction == "LEFT":
        return torch.bitwise_left_shift(x, shift.to(x.dtype))
    return torch.bitwise_right_shift(x, shift.to(x.dtype))


def _wide_unsigned_shift(x, shift, left):
    """``bit_shift`` of uint16, uint32 or uint64 ``x``, which torch's shift kernels do not take:
    shifted as the bits of an int64 (uint64's reinterpreted, the others widened) and cut back
    to the type's width; a right shift of uint64 bits clears the bits the arithmetic shift
    copied from the sign."""
    s = shift.to(torch.int64)
    if x.dtype == torch.uint64:
        bits = x.view(torch.int64)
        if left:
            return torch.bitwise_left_shift(bits, s).view(torch.uint64)
        kept = torch.bitwise_left_shift(torch.ones_like(s), 64 - s.clamp(min=1)) - 1
        out = torch.where(s > 0, torch.bitwise_right_shift(bits, s) & kept, bits)
        return out.view(torch.uint64)
    wide = x.to(torch.int64)
    out = torch.bitwise_left_shift(wide, s) if left else torch.bitwise_right_shift(wide, s)
    width = 16 if x.dtype == torch.uint16 else 32
    return (out & ((1 << width) - 1)).to(x.dtype)


@op(1, category="nn")
def sum_pooling(x, kernel, stride=None, ignore_border=True, pad=None, channel_last=False):
    """The sum over each window (NNabla's ``sum_pooling``): windows of ``kernel`` every
    ``stride`` (default: the kernel) over the trailing axes, zero padding ``pad`` on both
    sides; ``ignore_border=False`` keeps the partial windows at the end (summing what they
    hold): ``(W + P - 1) // S + 1`` windows, as for :func:`max_pooling`.  ``channel_last``:
    the channels are the last axis.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.arange(16.0).reshape(1, 1, 4, 4))
        >>> with sd.auto_forward():
        ...     y = F.sum_pooling(x, (2, 2))
        >>> y.d[0, 0].tolist()
        [[10.0, 18.0], [42.0, 50.0]]
    """
    n = len(kernel)
    if n not in (1, 2, 3) or x.ndim < n + 1:
        raise ValueError(f"sum_pooling: kernel {tuple(kernel)} needs 1 to 3 spatial axes and x "
                         f"more axes than that, got shape {tuple(x.shape)}")
    if channel_last:
        x = x.movedim(-1, x.ndim - n - 1)
    lead = x.shape[:x.ndim - n]
    flat = x.reshape((-1, 1) + tuple(x.shape[x.ndim - n:]))
    # NNabla 1.39's windows (ignore_border=False: (W + P - 1) // S + 1, each starting inside)
    n, kernel, stride, pad, sizes, out, extra = pool_geometry(flat, kernel, stride,
                                                              ignore_border, pad)
    flat = TF.pad(flat, [p for q in reversed(pad) for p in (q, q)])
    flat = TF.pad(flat, [p for e in reversed(extra) for p in (0, e)])
    pool = (TF.avg_pool1d, TF.avg_pool2d, TF.avg_pool3d)[n - 1]
    size = 1
    for k in kernel:
        size *= k
    y = pool(flat, kernel, stride) * size
    if not ignore_border:   # the right pad can make room for windows NNabla does not have
        y = y[(Ellipsis,) + tuple(slice(0, o) for o in out)]
    y = y.reshape(tuple(lead) + tuple(y.shape[2:]))
    return y.movedim(x.ndim - n - 1, -1) if channel_last else y
