"""NumPy arrays handed out over a tensor's memory, and whether one is still alive.

``v.g`` (and NNabla's ``v.grad.data``) give the user a NumPy array sharing the gradient's
memory.  NNabla 1.39's ``zero()`` / ``fill()`` of that gradient give it a new array and leave
the old one to the NumPy arrays holding it, which keep their values; Stadyn writes the same
memory in place when nobody can see the difference, and takes new memory when a NumPy array
handed out is still alive (``stadyn.compat.nnabla``'s ``NdArray``).  :func:`numpy_reader`
hands such an array out and records it (a weak reference to the tensor torch makes as the
array's base, which the array and every NumPy view of it keep alive); :func:`viewed` asks.
"""

from __future__ import annotations

import weakref

import numpy as np
import torch

__all__ = ["handed_out", "numpy_reader", "viewed"]

_READERS = "_stadyn_numpy_readers"
_COUNT = "_stadyn_numpy_count"


def numpy_reader(t: torch.Tensor) -> np.ndarray:
    """A NumPy array sharing ``t``'s memory (a CPU tensor NumPy can hold), recorded on ``t``
    while it (or a NumPy view of it) lives.

    Example:
        >>> import torch
        >>> t = torch.zeros(2)
        >>> a = numpy_reader(t); a[0] = 5.0
        >>> t.tolist(), viewed(t)
        ([5.0, 0.0], True)
    """
    array = t.detach().numpy()
    readers = getattr(t, _READERS, None)
    if readers is None:
        readers = []
        setattr(t, _READERS, readers)
    elif len(readers) >= 8:
        readers[:] = [r for r in readers if r() is not None]
    # the array's base: a tensor of its own that torch makes for it, alive while the array
    # or a NumPy view of it is
    readers.append(weakref.ref(array.base))
    setattr(t, _COUNT, getattr(t, _COUNT, 0) + 1)
    return array


def handed_out(t: torch.Tensor) -> int:
    """How many NumPy arrays :func:`numpy_reader` handed out over ``t`` so far: a value
    unchanged since and no such array alive (:func:`viewed`) means no NumPy write into ``t``
    since (``_precision.HalfCopies``).

    Example:
        >>> import torch
        >>> t = torch.zeros(2); before = handed_out(t)
        >>> a = numpy_reader(t); handed_out(t) - before
        1
    """
    return getattr(t, _COUNT, 0)


def viewed(t: torch.Tensor) -> bool:
    """Whether a NumPy array :func:`numpy_reader` handed out over ``t`` is still alive.

    Example:
        >>> import torch
        >>> t = torch.zeros(2)
        >>> a = numpy_reader(t); viewed(t)
        True
        >>> del a; viewed(t)
        False
    """
    readers = getattr(t, _READERS, None)
    return readers is not None and any(r() is not None for r in readers)
