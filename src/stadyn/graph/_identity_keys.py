"""Weak maps and sets of objects keyed by identity, not by ``==`` and ``hash()``.

``weakref.WeakKeyDictionary`` and ``weakref.WeakSet`` look their keys up with the keys'
``__hash__`` and ``__eq__``; NNabla's Variables compare and hash by the C++ ``nbla::Variable``
they hold (an unlinked view equals its source), so a weak map keyed by Variables that way would
take a view for its source.  Stadyn's own records about Variables (and anything else kept by
object) use these instead: each entry is keyed by ``id(key)`` beside a weak reference whose
finalizer drops the entry when the key dies (the reference is checked, so an id reused by a
new object never reads a dead key's entry).

Example:
    >>> class Same:
    ...     def __eq__(self, other): return True
    ...     def __hash__(self): return 0
    >>> a, b = Same(), Same()
    >>> m = IdentityKeyDict({a: 1}); m[b] = 2
    >>> len(m), m[a], m[b], a in IdentitySet([b])
    (2, 1, 2, False)
    >>> del a; len(m)
    1
"""

from __future__ import annotations

import weakref
from collections.abc import MutableMapping, MutableSet
from typing import Any, Iterable, Iterator

__all__ = ["IdentityKeyDict", "IdentitySet"]


def _dropper(owner: Any):
    """A finalizer removing a dead key's entry from ``owner``'s table (``owner`` held weakly,
    so a map that dies first leaves the callback a no-op)."""
    owner_ref = weakref.ref(owner)

    def drop(ref: weakref.ref, key: int) -> None:
        table = owner_ref()
        if table is not None:
            entry = table._table.get(key)
            if entry is not None and entry[0] is ref:
                del table._table[key]
    return drop


class IdentityKeyDict(MutableMapping):
    """A mapping whose keys are held weakly and compared by identity (``is``), as
    ``weakref.WeakKeyDictionary`` but blind to the keys' ``__eq__`` and ``__hash__``.

    Example:
        >>> class K: pass
        >>> k = K(); m = IdentityKeyDict(); m.setdefault(k, []).append(1)
        >>> m[k], k in m, K() in m
        ([1], True, False)
    """

    __slots__ = ("_table", "_drop", "__weakref__")

    def __init__(self, items: Any = ()) -> None:
        self._table: dict[int, tuple[weakref.ref, Any]] = {}
        self._drop = _dropper(self)
        for key, value in (items.items() if isinstance(items, MutableMapping) else items):
            self[key] = value

    def __getitem__(self, key: Any) -> Any:
        entry = self._table.get(id(key))
        if entry is None or entry[0]() is not key:
            raise KeyError(key)
        return entry[1]

    def get(self, key: Any, default: Any = None) -> Any:
        entry = self._table.get(id(key))
        return default if entry is None or entry[0]() is not key else entry[1]

    def __contains__(self, key: Any) -> bool:
        entry = self._table.get(id(key))
        return entry is not None and entry[0]() is key

    def __setitem__(self, key: Any, value: Any) -> None:
        k = id(key)
        entry = self._table.get(k)
        if entry is not None and entry[0]() is key:
            self._table[k] = (entry[0], value)
        else:
            drop = self._drop
            self._table[k] = (weakref.ref(key, lambda ref, k=k: drop(ref, k)), value)

    def __delitem__(self, key: Any) -> None:
        entry = self._table.get(id(key))
        if entry is None or entry[0]() is not key:
            raise KeyError(key)
        del self._table[id(key)]

    def __iter__(self) -> Iterator[Any]:
        for ref, _ in list(self._table.values()):
            key = ref()
            if key is not None:
                yield key

    def __len__(self) -> int:
        return sum(1 for ref, _ in list(self._table.values()) if ref() is not None)

    def copy(self) -> "IdentityKeyDict":
        return IdentityKeyDict(self.items())

    def __repr__(self) -> str:
        return f"<IdentityKeyDict of {len(self)} keys>"


class IdentitySet(MutableSet):
    """A set of objects held weakly and compared by identity (``is``), as
    ``weakref.WeakSet`` but blind to their ``__eq__`` and ``__hash__``.

    Example:
        >>> class K: pass
        >>> a, b = K(), K(); s = IdentitySet([a]); s.add(b); s.discard(a)
        >>> a in s, b in s, len(s)
        (False, True, 1)
    """

    __slots__ = ("_keys", "__weakref__")

    def __init__(self, items: Iterable[Any] = ()) -> None:
        self._keys = IdentityKeyDict()
        for item in items:
            self.add(item)

    def __contains__(self, item: Any) -> bool:
        return item in self._keys

    def __iter__(self) -> Iterator[Any]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, item: Any) -> None:
        self._keys[item] = None

    def discard(self, item: Any) -> None:
        if item in self._keys:
            del self._keys[item]

    def update(self, items: Iterable[Any]) -> None:
        for item in items:
            self.add(item)

    def copy(self) -> "IdentitySet":
        return IdentitySet(self)

    def __repr__(self) -> str:
        return f"<IdentitySet of {len(self)} items>"
