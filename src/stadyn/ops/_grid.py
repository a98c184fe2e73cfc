"""Sampling positions and grids (NNabla's names): ``shift`` (translation with border
handling), ``meshgrid``, ``affine_grid`` and ``warp_by_grid`` (sampling an image at a grid of
normalised positions).

Example:
    >>> import stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     y = F.shift(sd.Variable.from_numpy_array([1.0, 2.0, 3.0]), (1,))
    >>> y.d
    array([1., 1., 2.], dtype=float32)
"""

from __future__ import annotations

import torch
import torch.nn.functional as TF

from ._registry import op

_C = "resampling"


def shift_index(n: int, s: int, border_mode: str, device=None) -> torch.Tensor:
    """Where each of ``n`` output positions of :func:`shift` reads from after shifting by ``s``
    (int64; ``border_mode`` ``"nearest"`` or ``"reflect"``).

    Example:
        >>> shift_index(4, 2, "reflect").tolist()
        [1, 0, 0, 1]
    """
    k = torch.arange(n, device=device) - s
    if border_mode == "nearest":
        return k.clamp(0, n - 1)
    m = torch.remainder(k, 2 * n)          # reflect with the edge repeated (period 2n)
    return torch.where(m < n, m, 2 * n - 1 - m)


@op(1, category=_C)
def shift(x, shifts=None, border_mode="nearest"):
    """``x`` translated by ``shifts`` along its last ``len(shifts)`` axes (positive moves
    values to higher indices); the positions left undetermined copy the border value
    (``"nearest"``) or mirror the array with the edge repeated (``"reflect"``).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.shift(sd.Variable.from_numpy_array([1.0, 2.0, 3.0]), (-1,), "reflect")
        >>> y.d
        array([2., 3., 3.], dtype=float32)
    """
    if border_mode not in ("nearest", "reflect"):
        raise ValueError(f"shift: border_mode must be 'nearest' or 'reflect', got "
                         f"{border_mode!r}")
    shifts = tuple(int(s) for s in (shifts or ()))
    if len(shifts) > x.ndim:
        raise ValueError(f"shift: {len(shifts)} shifts for a {x.ndim}-d input")
    y = x
    for axis, s in zip(range(x.ndim - len(shifts), x.ndim), shifts):
        if s:
            y = torch.index_select(y, axis,
                                   shift_index(x.shape[axis], s, border_mode, x.device))
    return y


@op(None, category=_C, sequence="drop")
def meshgrid(*x, ij_indexing=False):
    """Coordinate arrays from 1-d arrays, one output per input: NumPy's ``meshgrid``
    (``"xy"`` indexing, or ``"ij"`` with ``ij_indexing``).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> a, b = F.meshgrid(sd.Variable((3,)), sd.Variable((2,)))
        >>> a.shape, b.shape
        ((2, 3), (2, 3))
    """
    if any(v.ndim != 1 for v in x):
        raise ValueError(f"meshgrid: expects 1-d inputs, got shapes "
                         f"{[tuple(v.shape) for v in x]}")
    return tuple(torch.meshgrid(*x, indexing="ij" if ij_indexing else "xy"))


@op(1, category=_C, precision="float")
def affine_grid(theta, size, align_corners=False):
    """The normalised sampling positions (in ``[-1, 1]``) of an output of spatial ``size``
    (``(H, W)`` or ``(D, H, W)``) under the affine maps ``theta`` (``(B, 2, 3)`` or
    ``(B, 3, 4)``): shape ``(B, *size, len(size))``, ``x`` first.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.affine_grid(sd.Variable((1, 2, 3)), (4, 5)).shape
        (1, 4, 5, 2)
    """
    size = tuple(int(s) for s in size)
    if theta.ndim != 3 or theta.shape[1:] != (len(size), len(size) + 1):
        raise ValueError(f"affine_grid: theta of shape {tuple(theta.shape)} does not fit "
                         f"size {size} (expects (B, {len(size)}, {len(size) + 1}))")
    return TF.affine_grid(theta, (theta.shape[0], 1) + size, align_corners=bool(align_corners))


_PADDING = {"zero": "zeros", "repeat": "border", "reflect": "reflection"}
_MODES = {"linear": "bilinear", "nearest": "nearest"}


@op(2, category=_C, precision="float")
def warp_by_grid(x, grid, mode="linear", padding_mode="zero", align_corners=False,
                 channel_last=False):
    """``x`` (``(B, C, H, W)`` or ``(B, C, D, H, W)``; channels last with ``channel_last``)
    sampled at the normalised positions ``grid`` (``(B, H', W', 2)``, ``x`` first, ``[-1, 1]``
    spanning the image): interpolated ``"linear"``-ly or ``"nearest"``; outside, ``"zero"``,
    the border (``"repeat"``) or the mirrored image (``"reflect"``).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.warp_by_grid(sd.Variable((1, 3, 4, 4)), sd.Variable((1, 2, 5, 2))).shape
        (1, 3, 2, 5)
    """
    if mode not in _MODES or padding_mode not in _PADDING:
        raise ValueError(f"warp_by_grid: mode is one of {sorted(_MODES)} and padding_mode one "
                         f"of {sorted(_PADDING)}, got {mode!r}, {padding_mode!r}")
    if channel_last:
        x = torch.movedim(x, -1, 1)
    y = TF.grid_sample(x, grid, mode=_MODES[mode], padding_mode=_PADDING[padding_mode],
                       align_corners=bool(align_corners))
    return torch.movedim(y, 1, -1) if channel_last else y
