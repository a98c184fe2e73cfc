"""The order in which NNabla 1.39's ``Solver::update`` visits its parameters: it iterates an
``std::unordered_map<std::string, Params>`` (``include/nbla/solver.hpp:113``,
``src/nbla/solver.cpp:213-230``), so the order is libstdc++'s hash table's.  Only an update that
stops part way shows it: Lars raises on a bad parameter after updating those it visited first.

libstdc++ (the one NNabla 1.39's wheel runs with; the order matches NNabla's own
``get_parameters()`` for sets of 1 to 100 random names,
``tests/solvers/test_lars_partial_update.py``):

- ``std::hash<std::string>`` is ``_Hash_bytes(data, len, 0xc70f6907)``, the 64-bit Murmur
  variant (``libsupc++/hash_bytes.cc``); a name lands in bucket ``hash % bucket_count``;
- the nodes form one list, each bucket's nodes together: a node whose bucket is empty goes to
  the front of the list, else in front of its bucket's first node;
- before an insertion that would exceed the next resize (``size + 1 > next_resize``; 0 at the
  start, so the first insertion makes 13 buckets) the table grows to the smallest prime of
  ``__prime_list`` (from 13 up: ``_M_next_bkt``) at least ``max(size + 2, 2 * buckets)``, and
  the list is rebuilt node by node from its front, each to the front of the list (an empty
  bucket) or of its bucket.

Example:
    >>> nnabla_update_order(["p0", "p1", "p2"])
    ['p2', 'p1', 'p0']
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from typing import Iterable

__all__ = ["hash_bytes", "nnabla_update_order", "initializer_list_order", "MapOrder"]

_MASK = (1 << 64) - 1
_MUL = (0xC6A4A793 << 32) + 0x5BD1E995
_SEED = 0xC70F6907
# the start of libstdc++'s __prime_list (src/shared/hashtable-aux.cc)
_PRIMES = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79,
           83, 89, 97, 103, 109, 113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227,
           241, 257, 277, 293, 313, 337, 359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709,
           761, 823, 887, 953, 1031, 1109, 1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029,
           2179, 2357, 2549, 2753, 2971, 3209, 3469, 3739, 4027, 4349, 4703, 5087, 5503, 5953,
           6427, 6949, 7517, 8123, 8783, 9497, 10273, 11113, 12011, 12983, 14033, 15173, 16411,
           17749, 19183, 20753, 22447, 24281, 26267, 28411, 30727, 33223, 35933, 38873, 42043,
           45481, 49201, 53201, 57557, 62233, 67307, 72817, 78779, 85229, 92203, 99733]
_SMALL = [2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13]      # _M_next_bkt's fast table


def _mix(v: int) -> int:
    return v ^ (v >> 47)


def hash_bytes(data: bytes, seed: int = _SEED) -> int:
    """libstdc++'s 64-bit ``_Hash_bytes`` (``std::hash<std::string>`` with its seed).

    Example:
        >>> hash_bytes(b"") == _mix(_mix(_SEED) * _MUL & _MASK)
        True
    """
    n = len(data)
    whole = n & ~7
    h = (seed ^ (n * _MUL)) & _MASK
    for p in range(0, whole, 8):
        word = int.from_bytes(data[p:p + 8], "little")
        h = ((h ^ (_mix(word * _MUL & _MASK) * _MUL & _MASK)) * _MUL) & _MASK
    if n & 7:
        h = ((h ^ int.from_bytes(data[whole:], "little")) * _MUL) & _MASK
    return _mix(_mix(h) * _MUL & _MASK)


def _next_buckets(n: int) -> int:
    if n < len(_SMALL):
        return _SMALL[n]
    i = bisect.bisect_left(_PRIMES, n, 6)
    if i == len(_PRIMES):
        raise ValueError(f"{n} buckets: beyond the primes kept here")
    return _PRIMES[i]


def nnabla_update_order(names: Iterable[str]) -> list[str]:
    """The order NNabla's ``unordered_map`` holds ``names`` in after inserting them, in the
    order given, into an empty map (``set_parameters`` of a new solver: the dictionary's
    order); :class:`MapOrder` follows a map that also lost names or was cleared."""
    order = MapOrder()
    for name in names:
        order.insert(name)
    return order.order()


def initializer_list_order(names: Iterable[str]) -> list[str]:
    """The order of an ``unordered_map`` made from an initializer list of ``names`` (a solver's
    state map, ``pstate{{"mean", m}, {"var", v}}`` in ``src/nbla/solver/generic/adam.cpp:41``):
    the range constructor takes ``_M_next_bkt(len(names))`` buckets at once (2 for 2 names,
    not the 13 of a map filled one name at a time), then inserts the names in their order.

    Example:
        >>> initializer_list_order(["n", "g", "d"]), nnabla_update_order(["n", "g", "d"])
        (['g', 'd', 'n'], ['d', 'g', 'n'])
    """
    names = list(names)
    buckets = _next_buckets(len(names)) if names else 1
    runs: OrderedDict = OrderedDict()
    for name in names:
        _insert(runs, (name, hash_bytes(name.encode("utf-8"))), buckets)
    return _listed(runs)


def _grown(size: int, buckets: int, next_resize: int) -> tuple[int, int]:
    """The table's ``(buckets, next_resize)`` for one more name in a map of ``size``
    (``_M_need_rehash``: growing only)."""
    if size + 1 > next_resize:
        least = max(size + 1, 0 if next_resize else 11)
        if least >= buckets:
            buckets = _next_buckets(max(least + 1, 2 * buckets))
        next_resize = buckets
    return buckets, next_resize


class MapOrder:
    """NNabla's ``unordered_map`` of a solver's parameters through ``insert`` (a name it holds
    stays where it is), ``erase`` and ``clear``: an erased name leaves the others in their
    order, and neither erasing nor clearing shrinks the table, so a name added after
    ``remove_parameters`` or a ``reset`` may land elsewhere than in a new map.  The work is
    done when :meth:`order` is asked for (Lars' error), not on every ``set_parameters``.

    Example:
        >>> m = MapOrder()
        >>> for name in ["p0", "p1", "p2"]:
        ...     m.insert(name)
        >>> m.erase("p1")
        >>> m.order()
        ['p2', 'p0']
    """

    def __init__(self) -> None:
        self._buckets, self._next_resize = 1, 0
        # the list as of the last order(): each bucket's run of nodes (name, hash), the runs
        # in the list's order
        self._runs: OrderedDict[int, list[tuple[str, int]]] = OrderedDict()
        self._size = 0
        self._log: list[tuple[bool, str]] = []       # (inserted, name) since
        self._names: set[str] = set()

    def insert(self, name: str) -> None:
        if name not in self._names:
            self._names.add(name)
            self._log.append((True, name))

    def erase(self, name: str) -> None:
        if name in self._names:
            self._names.discard(name)
            self._log.append((False, name))

    def clear(self) -> None:
        """No names; the table keeps the size the names since the last :meth:`order` grew it
        to."""
        size = self._size
        for inserted, _ in self._log:
            if inserted:
                self._buckets, self._next_resize = _grown(size, self._buckets,
                                                          self._next_resize)
            size += 1 if inserted else -1
        self._runs, self._size, self._log, self._names = OrderedDict(), 0, [], set()

    def order(self) -> list[str]:
        """The names in the map's order."""
        for inserted, name in self._log:
            code = hash_bytes(name.encode("utf-8"))
            if not inserted:
                bucket = code % self._buckets
                run = [node for node in self._runs[bucket] if node[0] != name]
                if run:
                    self._runs[bucket] = run
                else:
                    del self._runs[bucket]
                self._size -= 1
                continue
            buckets, self._next_resize = _grown(self._size, self._buckets, self._next_resize)
            if buckets != self._buckets:
                self._buckets = buckets
                self._runs = _rebuilt(self._runs, buckets)
            _insert(self._runs, (name, code), buckets)
            self._size += 1
        self._log = []
        return _listed(self._runs)


def _insert(runs: OrderedDict, node: tuple[str, int], buckets: int) -> None:
    """``node`` in front of its bucket's first node, or at the front of the list (the list is
    the runs of its buckets' nodes, the run of a bucket that was empty first)."""
    bucket = node[1] % buckets
    run = runs.get(bucket)
    if run is None:
        runs[bucket] = [node]
        runs.move_to_end(bucket, last=False)
    else:
        run.insert(0, node)


def _rebuilt(runs: OrderedDict, buckets: int) -> OrderedDict:
    """The list rebuilt node by node from its front into ``buckets`` buckets."""
    out: OrderedDict = OrderedDict()
    for run in runs.values():
        for node in run:
            _insert(out, node, buckets)
    return out


def _listed(runs: OrderedDict) -> list[str]:
    return [name for run in runs.values() for name, _ in run]
