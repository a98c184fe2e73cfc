"""The positions ``top_k`` takes, in NNabla 1.39's and CNTK 2.7's order among equal values.

Both frameworks select the k largest entries of a vector with the C++ standard library's heap
algorithms (GCC's libstdc++), comparing values only, so among equal values the positions they
take, and their order, are the heap's:

* NNabla (``utils/top_k.hpp``, used by ``top_k_data`` and ``top_k_grad``): a heap of the first
  k ``(value, position)`` pairs (``make_heap``, its top the smallest); each later entry strictly
  greater than the top replaces it (``pop_heap``, the new pair written last, ``push_heap``);
  then ``sort_heap``.  ``largest=False`` mirrors the comparison; ``abs`` compares magnitudes.
* CNTK (``CPUMatrix::VectorMax``, the CPU ``TopK``): for k = 1 the first largest; otherwise
  ``std::partial_sort`` of the positions by value, largest first: the same heap of the first
  k, but a greater entry replaces the top in one sift (``__pop_heap`` into its place), so with
  more ties it may keep other positions than NNabla (``[2, 7, 2, 7, 2, 7]``, k = 4: CNTK
  ``[1, 3, 5, 0]``, NNabla ``[5, 3, 1, 0]``).

Where the k + 1 largest values of a vector are all different the result is the sorted order,
whatever the heap did, so :func:`top_k_index` sorts (a stable sort: the lowest position first),
and replays the heap on the host only for the vectors with a tie among them.  It is a torch
operator (``stadyn_kernels::top_k_index``), so a traced or compiled graph calls it as one step.

Example:
    >>> import torch
    >>> top_k_index(torch.tensor([[0.0, 1.0, 9.0, 2.0, 2.0, 2.0]]), 3).tolist()
    [[2, 4, 3]]
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

from ._kernels import kernel_op

__all__ = ["top_k_index", "heap_top_k", "TIE_ORDERS"]

#: The orders among equal values: NNabla 1.39's ``top_k_data``, CNTK 2.7's ``top_k``, or the
#: lowest position first (a stable sort's; never leaves the device).
TIE_ORDERS = ("nnabla", "cntk", "lowest")

Before = Callable[[float, float], bool]


# libstdc++'s heap primitives over a list, ``before(a, b)`` its comparison (a heap keeps the
# entry no other is ``before``... at its top: the one the comparison puts last).
def _push_heap(h: list, hole: int, top: int, value, before: Callable) -> None:
    parent = (hole - 1) // 2
    while hole > top and before(h[parent], value):
        h[hole] = h[parent]
        hole = parent
        parent = (hole - 1) // 2
    h[hole] = value


def _adjust_heap(h: list, hole: int, length: int, value, before: Callable) -> None:
    top = child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if before(h[child], h[child - 1]):
            child -= 1
        h[hole] = h[child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        h[hole] = h[child - 1]
        hole = child - 1
    _push_heap(h, hole, top, value, before)


def _make_heap(h: list, length: int, before: Callable) -> None:
    for parent in range((length - 2) // 2, -1, -1):
        _adjust_heap(h, parent, length, h[parent], before)


def _sort_heap(h: list, length: int, before: Callable) -> None:
    while length > 1:
        length -= 1
        value, h[length] = h[length], h[0]
        _adjust_heap(h, 0, length, value, before)


def heap_top_k(values: Sequence[float], k: int, largest: bool = True,
               ties: str = "nnabla") -> list[int]:
    """The positions of the ``k`` largest (``largest=False``: smallest; CNTK has only the
    largest) of ``values``, in the order NNabla's or CNTK's heap gives them (module docstring).

    Example:
        >>> heap_top_k([2, 7, 2, 7, 2, 7], 4), heap_top_k([2, 7, 2, 7, 2, 7], 4, ties="cntk")
        ([5, 3, 1, 0], [1, 3, 5, 0])
    """
    array = np.asarray(values, dtype=np.float64)
    x = array.tolist()
    # the heap's top only grows from the worst of the first k: what is not beyond it never
    # enters, so only the entries beyond it are looked at (the same result, far fewer steps)
    # (a NaN among the first k compares false with all: every entry is looked at then)
    first = array[:k]
    if np.isnan(first).any():
        entering = list(range(k, len(x)))
    else:
        beyond = (array[k:] > first.min()) if largest else (array[k:] < first.max())
        entering = (np.flatnonzero(beyond) + k).tolist()
    if largest:
        def greater(a, b):
            return a > b
    else:
        def greater(a, b):
            return a < b
    if ties == "cntk":
        if k == 1:       # CNTK's own loop: the first largest
            return [max(range(len(x)), key=lambda i: (x[i] if largest else -x[i], -i))]

        def before(a, b):
            return greater(x[a], x[b])
        positions = list(range(len(x)))
        _make_heap(positions, k, before)
        for i in entering:
            if before(positions[i], positions[0]):
                newcomer = positions[i]
                positions[i] = positions[0]
                _adjust_heap(positions, 0, k, newcomer, before)
        _sort_heap(positions, k, before)
        return positions[:k]

    def pair_before(a, b):
        return greater(a[0], b[0])
    heap = [(x[i], i) for i in range(k)]
    _make_heap(heap, k, pair_before)
    for i in entering:
        if greater(x[i], heap[0][0]):
            last = heap[k - 1]                      # pop_heap: the top moves last
            heap[k - 1] = heap[0]
            _adjust_heap(heap, 0, k - 1, last, pair_before)
            heap[k - 1] = (x[i], i)                 # replaced, then push_heap
            _push_heap(heap, k - 1, 0, heap[k - 1], pair_before)
    _sort_heap(heap, k, pair_before)
    return [i for _, i in heap]


def _top_k_index_impl(key: torch.Tensor, k: int, largest: bool, ties: str) -> torch.Tensor:
    if ties not in TIE_ORDERS:
        raise ValueError(f"top_k: ties must be one of {TIE_ORDERS}, not {ties!r}")
    ordered = torch.sort(key, dim=-1, descending=bool(largest), stable=True)
    index = ordered.indices[..., :k]
    n = key.shape[-1]
    if key.numel() == 0 or ties == "lowest":
        return index.contiguous()
    # the heap's order differs from the sorted one only where the k + 1 first values tie, or
    # where a row holds a NaN (the sort puts it first; the heaps' comparisons pass it by)
    if k < 2 and not key.is_floating_point():
        return index.contiguous()           # (no tie changes the first largest; no NaN)
    replay = torch.isnan(key).any(dim=-1).reshape(-1) if key.is_floating_point() else None
    if k >= 2:
        head = ordered.values[..., :min(k + 1, n)]
        tied = (head[..., 1:] == head[..., :-1]).any(dim=-1).reshape(-1)
        replay = tied if replay is None else replay | tied
    # The one place this operator waits for the device (issue 23: a CUDA graph cannot capture
    # it): one boolean read back, whether any row needs the heap replayed.  Where none does
    # (all k + 1 first values different, no NaN: the common case) the sorted positions are the
    # result and nothing else leaves the device; otherwise the rows are found (``nonzero``,
    # a second read) and replayed on the host.
    if not bool(replay.any()):
        return index.contiguous()
    rows = replay.nonzero().reshape(-1)
    flat = index.reshape(-1, k).clone()
    values = key.reshape(-1, n)[rows].detach().double().cpu().numpy()
    replayed = [heap_top_k(v, k, largest, ties) for v in values]
    flat[rows] = torch.tensor(replayed, dtype=flat.dtype).to(flat.device)
    return flat.reshape(index.shape)


def _top_k_index_fake(key: torch.Tensor, k: int, largest: bool, ties: str) -> torch.Tensor:
    return key.new_empty(tuple(key.shape[:-1]) + (k,), dtype=torch.int64)


_top_k_index = kernel_op("stadyn_kernels::top_k_index",
                         "(Tensor key, int k, bool largest, str ties) -> Tensor",
                         _top_k_index_impl, _top_k_index_fake)


def top_k_index(key: torch.Tensor, k: int, largest: bool = True,
                ties: str = "nnabla") -> torch.Tensor:
    """The positions (int64) of the ``k`` largest (``largest=False``: smallest) entries of
    ``key`` along its last axis, largest first, among equal values in NNabla 1.39's order
    (``ties="nnabla"``), CNTK 2.7's (``"cntk"``; see the module docstring) or the lowest
    position first (``"lowest"``).

    Example:
        >>> top_k_index(torch.tensor([[2.0, 7.0, 2.0, 7.0, 2.0, 7.0]]), 4, ties="cntk").tolist()
        [[1, 3, 5, 0]]
    """
    return _top_k_index(key.detach(), int(k), bool(largest), str(ties))
