"""libstdc++'s ``std::sort`` (introsort: median-of-three quicksort down to runs of 16, heapsort
past ``2 log2 n`` levels, then one insertion sort), step for step, so that elements its
comparator calls equal end in the order CNTK 2.7's C++ leaves them (``std::sort`` is not
stable): LambdaRank ranks a query's documents so, and its gradient depends on which of two
documents of equal score and gain is ranked first."""

from __future__ import annotations

from typing import Callable, MutableSequence

__all__ = ["std_sort"]

_THRESHOLD = 16             # libstdc++'s _S_threshold


def std_sort(items: MutableSequence, less: Callable[[object, object], bool]) -> MutableSequence:
    """Sort ``items`` in place as libstdc++'s ``std::sort(first, last, comp)`` does with
    ``less`` as ``comp``; returns ``items``.

    Example:
        >>> rows = list(enumerate([2, 1, 2, 1] * 5))        # (index, key), keys tie
        >>> [i for i, _ in std_sort(rows, lambda a, b: a[1] < b[1])][:6]
        [1, 19, 17, 15, 13, 11]
    """
    n = len(items)
    if n > 1:
        _introsort(items, 0, n, 2 * (n.bit_length() - 1), less)
        _final_insertion_sort(items, 0, n, less)
    return items


def _introsort(a, first, last, depth, less):
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(a, first, last, less)
            return
        depth -= 1
        cut = _partition_around_median(a, first, last, less)
        _introsort(a, cut, last, depth, less)
        last = cut


def _partition_around_median(a, first, last, less):
    """The median of the second, middle and last elements moved to ``first``, then the
    unguarded partition of the rest around it; returns the cut."""
    x, y, z = first + 1, first + (last - first) // 2, last - 1
    if less(a[x], a[y]):
        m = y if less(a[y], a[z]) else z if less(a[x], a[z]) else x
    else:
        m = x if less(a[x], a[z]) else z if less(a[y], a[z]) else y
    a[first], a[m] = a[m], a[first]
    lo, hi = first + 1, last
    while True:
        while less(a[lo], a[first]):
            lo += 1
        hi -= 1
        while less(a[first], a[hi]):
            hi -= 1
        if lo >= hi:
            return lo
        a[lo], a[hi] = a[hi], a[lo]
        lo += 1


def _linear_insert(a, last, less):
    value, before = a[last], last - 1
    while less(value, a[before]):
        a[last] = a[before]
        last, before = before, before - 1
    a[last] = value


def _insertion_sort(a, first, last, less):
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            value = a[i]
            a[first + 1:i + 1] = a[first:i]
            a[first] = value
        else:
            _linear_insert(a, i, less)


def _final_insertion_sort(a, first, last, less):
    if last - first > _THRESHOLD:
        _insertion_sort(a, first, first + _THRESHOLD, less)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


def _adjust_heap(a, first, hole, length, value, less):
    top = child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole, parent = parent, (parent - 1) // 2
    a[first + hole] = value


def _heap_sort(a, first, last, less):
    """``std::partial_sort(first, last, last)``: make the heap, then pop it."""
    length = last - first
    for parent in range((length - 2) // 2, -1, -1):
        _adjust_heap(a, first, parent, length, a[first + parent], less)
    while last - first > 1:
        last -= 1
        value, a[last] = a[last], a[first]
        _adjust_heap(a, first, 0, last - first, value, less)
