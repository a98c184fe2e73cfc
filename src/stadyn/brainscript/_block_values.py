"""What the blocks of a ``.cntk`` file share: located errors, CNTK's per-epoch vectors, range
checks that point at the number that fails, and the keys a block leaves to others."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ._ast import config_error as _err
from ._config import ConfigList, ConfigRecord, ConfigString, to_float, to_int

__all__ = ["per_epoch"]


def per_epoch(values: Sequence[Any], epoch: int) -> Any:
    """The value for 0-based ``epoch`` of a CNTK per-epoch vector (the last value repeats).

    >>> per_epoch([0.1, 0.1, 0.05], 0), per_epoch([0.1, 0.1, 0.05], 7)
    (0.1, 0.05)
    """
    return values[min(epoch, len(values) - 1)]


def _check(rec: ConfigRecord, key: str, ok: Callable[[float], bool], what: str, *,
           convert: Callable[[str], float] = to_float, finite: bool = False,
           inherited: bool = False) -> None:
    """Check each number of ``key`` (a scalar or a per-epoch vector such as ``64*2:0``) as it
    was written, and report the first that fails ``ok`` where it stands
    (``file:line:col: Train.SGD.minibatchSize must be >= 1, got 0``).  Run it after the typed
    getter, which reports values that are not numbers at all.

    >>> from stadyn.brainscript import parse_config
    >>> _check(parse_config("S = { m = 64*2:-1 }", "c.cntk")["S"], "m", _at_least_1, "be >= 1")
    Traceback (most recent call last):
    stadyn._errors.ConfigError: c.cntk:1:16: S.m must be >= 1, got -1
    """
    owner: ConfigRecord | None = rec
    while inherited and owner is not None and key not in owner:
        owner = owner.parent
    if owner is None or key not in owner:
        return
    value = owner[key]
    for item in value if isinstance(value, ConfigList) else [value]:
        for piece in str(item).split(":"):
            text = piece.partition("*")[0].strip()
            number = convert(text)
            if finite and not math.isfinite(number):
                problem = "be a finite number"
            elif not ok(number):
                problem = what
            else:
                continue
            loc = getattr(item, "loc", None) or owner.location(key)
            raise _err(f"{owner.key_path(key)} must {problem}, got {text}", loc)


def _at_least_1(x: float) -> bool:
    return x >= 1


def _non_negative(x: float) -> bool:
    return x >= 0


def _positive(x: float) -> bool:
    return x > 0


def _fraction(x: float) -> bool:
    return 0 <= x < 1


def _extra(rec: ConfigRecord, known: set[str], *, consumed: bool = True) -> dict[str, Any]:
    """The values of ``rec`` outside ``known``; ``consumed=False`` where nothing uses them
    (they do not count as read: an override of one is reported as unused)."""
    return {k: (rec[k] if consumed else rec.peek(k)) for k in rec if k.lower() not in known}


def _auto(v: Any) -> Any:
    """A config value with numbers and booleans converted (for transform parameters)."""
    if isinstance(v, ConfigList):
        return [_auto(x) for x in v]
    if isinstance(v, ConfigRecord):
        return {k: _auto(v[k]) for k in v}
    if isinstance(v, ConfigString) and not v.quoted:
        for convert in (to_int, to_float):
            try:
                return convert(v)
            except ValueError:
                pass
        if v.lower() in ("true", "false"):
            return v.lower() == "true"
    return str(v) if isinstance(v, str) else v
