"""What a front end keeps alive as long as a Variable lives (``Variable._kept``, a slot set
on first use).

A front end's knowledge of a Variable that must live as long as it does, and may refer back
to it, belongs on the Variable rather than in a registry weakly keyed by it: after a run of
both, every root of the run refers to every other (the run's plan, ``_runner.py``), so a
weakly keyed registry's value that is a root of a run with its key would keep the key alive
for ever; kept on the Variable, the two are a cycle the garbage collector frees.
"""

from __future__ import annotations

from typing import Any

from ._variable import Variable

__all__ = ["keep_with", "kept_with", "keep_as"]


def keep_with(v: Variable, key: str, value: Any) -> None:
    """Keep ``value`` alive as long as ``v`` lives, under ``key`` (:func:`kept_with` reads it).

    Example:
        >>> import stadyn as sd
        >>> from stadyn.graph import keep_with, kept_with
        >>> v = sd.Variable((2,))
        >>> keep_with(v, "note", [1, 2])
        >>> kept_with(v, "note"), kept_with(v, "other"), kept_with(sd.Variable(()), "note")
        ([1, 2], None, None)
    """
    kept = getattr(v, "_kept", None)
    if kept is None:
        kept = v._kept = {}
    kept[key] = value


def kept_with(v: Variable, key: str) -> Any:
    """What :func:`keep_with` kept with ``v`` under ``key``, or None."""
    kept = getattr(v, "_kept", None)
    return None if kept is None else kept.get(key)


def keep_as(v: Variable, source: Variable) -> None:
    """``v`` keeps what ``source`` keeps, in place of what it kept (``v`` rewired as ``source``:
    ``Variable.rewire_as``, the front end's knowledge of ``source``'s op now ``v``'s).

    Example:
        >>> import stadyn as sd
        >>> from stadyn.graph import keep_as, keep_with, kept_with
        >>> old, new = sd.Variable((2,)), sd.Variable((2,))
        >>> keep_with(old, "note", 1); keep_with(new, "other", 2)
        >>> keep_as(old, new)
        >>> kept_with(old, "note"), kept_with(old, "other")
        (None, 2)
    """
    kept = getattr(source, "_kept", None)
    v._kept = dict(kept) if kept else {}
