"""The values the sequence-begin flags splice in where a recurrence reads an initial state
(``_sequence_begin``: ``s0 * begin + carried * (1 - begin)``), each recorded with the value it
stands for: CNTK's graph does not change when flags are given, so the walks, clones and saves
see through them (:func:`seen_through`).  Moved out of ``_graph.py`` as it was."""

from __future__ import annotations

import weakref

from ...graph import Variable

__all__ = ["mark_spliced", "is_splice_leaf", "seen_through"]


# Values the sequence-begin flags splice in where a recurrence reads an initial state
# (``_sequence_begin``: ``s0 * begin + carried * (1 - begin)``) -> the value each stands for:
# CNTK's graph does not change when flags are given, so the walks, clones and saves see that.
# The leaves such a value is computed from besides the original are set by the runs, not fed.
_SPLICED: "weakref.WeakKeyDictionary[Variable, weakref.ref]" = weakref.WeakKeyDictionary()
_SPLICE_LEAVES: "weakref.WeakSet[Variable]" = weakref.WeakSet()


def mark_spliced(spliced: Variable, original: Variable, leaves=()) -> None:
    """Record ``spliced`` as standing, in CNTK's view of the graph, for ``original`` (which it
    is computed from, with the ``leaves`` the runs set)."""
    _SPLICED[spliced] = weakref.ref(original)
    _SPLICE_LEAVES.update(leaves)


def is_splice_leaf(v: Variable) -> bool:
    """``v`` is one of the leaves a spliced value is computed from (:func:`mark_spliced`)."""
    return v in _SPLICE_LEAVES


def seen_through(v: Variable) -> Variable:
    """The value CNTK's view of the graph shows in place of ``v`` (``v`` itself but for a
    value :func:`mark_spliced` recorded)."""
    ref = _SPLICED.get(v)
    original = ref() if ref is not None else None
    return v if original is None else original
