"""Value schedules looked up by the number of samples seen, with CNTK's units.

A :class:`Schedule` is a sequence of *segments*.  Each segment lasts a number of epochs (CNTK's
lists: ``count * epoch_size`` samples) or a number of samples (Stadyn's native schedules), and
gives either a constant or a function of the samples seen since the segment began; the last
segment lasts forever.  The value for a minibatch is looked up with the number of samples seen
**before** that minibatch.

A schedule also carries CNTK's *reference minibatch size* ``R`` (``minibatch_size``): ``1`` for a
per-sample value, ``0`` for a per-minibatch value (CNTK's ``IGNORE``), ``N`` for a value tuned for
``N``-sample minibatches.  Learners (:mod:`stadyn.learners`) use it to scale learning rates and
momenta to the actual minibatch size; the schedule itself only stores it.
"""

from __future__ import annotations

import copy
import math
import numbers
from enum import Enum, unique
from typing import Any, Sequence, Union

from .._errors import StadynError, checked_count

__all__ = ["Schedule", "UnitType", "IGNORE", "Values"]

IGNORE = 0
"""Reference minibatch size meaning "per minibatch, whatever its size" (CNTK's ``IGNORE``)."""

Values = Union[float, Sequence[Union[float, Sequence[float]]]]


@unique
class UnitType(Enum):
    """CNTK 2.0's units of a schedule: ``sample`` (per-sample values, ``R = 1``) or
    ``minibatch`` (per-minibatch values, ``R = 0``).

    Example:
        >>> from stadyn.schedules import UnitType, learning_rate_schedule
        >>> learning_rate_schedule(0.01, UnitType.sample).minibatch_size
        1
    """

    sample = "sample"
    minibatch = "minibatch"


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise StadynError(f"{what} must be a number, got {value!r}")
    value = float(value)
    if math.isnan(value):
        raise StadynError(f"{what} must not be NaN")
    return value


_count = checked_count


def _minibatch_size(value: Any, what: str = "minibatch_size") -> int | None:
    return None if value is None else _count(value, what, 0)


def _epoch_size(value: Any) -> int | None:
    if value is None or (isinstance(value, numbers.Integral) and not isinstance(value, bool)
                         and value == 0):
        return None             # CNTK's FullDataSweep is 0
    return _count(value, "epoch_size", 1)


# ---------------------------------------------------------------------------------------------
# Pieces: what a segment gives, as a function of the samples seen since it began
# ---------------------------------------------------------------------------------------------
class _Cosine:
    def __init__(self, initial: float, final: float, total: int):
        self.initial, self.final, self.total = initial, final, total

    def __call__(self, t: int) -> float:
        frac = min(t, self.total) / self.total
        return self.final + (self.initial - self.final) * 0.5 * (1.0 + math.cos(math.pi * frac))

    def config(self) -> dict:
        return {"kind": "cosine", "initial": self.initial, "final": self.final,
                "total": self.total}


class _StepDecay:
    def __init__(self, initial: float, factor: float, step: int):
        self.initial, self.factor, self.step = initial, factor, step

    def __call__(self, t: int) -> float:
        return self.initial * self.factor ** (t // self.step)

    def config(self) -> dict:
        return {"kind": "step_decay", "initial": self.initial, "factor": self.factor,
                "step": self.step}


class _Ramp:
    """Linear from ``start`` (at 0) towards the value ``target`` has at its own start."""

    def __init__(self, start: float, target: "float | Schedule", length: int):
        self.start, self.target, self.length = start, target, length

    def __call__(self, t: int) -> float:
        end = _evaluate(self.target, 0)
        return self.start + (end - self.start) * t / self.length

    def config(self) -> dict:
        return {"kind": "ramp", "start": self.start, "target": _piece_config(self.target),
                "length": self.length}


def _evaluate(piece: Any, t: int) -> float:
    if isinstance(piece, float):
        return piece
    if isinstance(piece, Schedule):
        return piece.value_at(t)
    return piece(t)


def _piece_config(piece: Any) -> Any:
    if isinstance(piece, float):
        return piece
    if isinstance(piece, Schedule):
        return {"kind": "schedule", "schedule": piece.config()}
    return piece.config()


def _piece_from_config(cfg: Any) -> Any:
    if isinstance(cfg, (int, float)):
        return float(cfg)
    kind = cfg["kind"]
    if kind == "schedule":
        return Schedule.from_config(cfg["schedule"])
    if kind == "cosine":
        return _Cosine(cfg["initial"], cfg["final"], cfg["total"])
    if kind == "step_decay":
        return _StepDecay(cfg["initial"], cfg["factor"], cfg["step"])
    if kind == "ramp":
        return _Ramp(cfg["start"], _piece_from_config(cfg["target"]), cfg["length"])
    raise StadynError(f"unknown schedule piece {kind!r}")


# ---------------------------------------------------------------------------------------------
class Schedule:
    """A training parameter (learning rate, momentum, ...) as a function of samples seen.

    ``values`` has CNTK's forms: a number (constant); a list ``[v1, ..., vn]`` (each value for
    ``epoch_size`` samples, the last forever); or a list of pairs ``[(n1, v1), ...]`` (``vi`` for
    ``ni * epoch_size`` samples; plain values and pairs may be mixed, a plain value counting as
    ``(1, v)``).  ``epoch_size`` is in samples; ``None`` means one full sweep of the data, which
    the trainer or reader supplies later with :meth:`resolve_epoch_size` (looking a value up
    before that raises an error naming the schedule).  ``minibatch_size`` is the reference
    minibatch size ``R`` (``1`` per sample, ``0`` per minibatch, ``None``: not given, which a
    learner may fill in; it reads as 0).

    Example:
        >>> from stadyn.schedules import Schedule
        >>> s = Schedule([(12, 0.1), (15, 0.01), (1, 0.001)], epoch_size=100)
        >>> s[0], s[1199], s[1200], s[2699], s[2700], s[10**9]
        (0.1, 0.1, 0.01, 0.01, 0.001, 0.001)
        >>> Schedule([0.5, 0.25], epoch_size=10).value_at(10)
        0.25
    """

    def __init__(self, values: Values, epoch_size: int | None = None,
                 minibatch_size: int | None = None, *, name: str | None = None):
        self._segments: list[tuple[int, str, Any]] = _cntk_segments(values)
        self._epoch_size = _epoch_size(epoch_size)
        self._minibatch_size = _minibatch_size(minibatch_size)
        self._name = name
        self._desc = f"Schedule({values!r}"

    @classmethod
    def _from_segments(cls, segments: list[tuple[int, str, Any]], desc: str,
                       minibatch_size: int | None) -> "Schedule":
        self = cls.__new__(cls)
        self._segments = segments
        self._epoch_size = None
        self._minibatch_size = _minibatch_size(minibatch_size)
        self._name = None
        self._desc = desc
        return self

    # -- properties -----------------------------------------------------------------------------
    @property
    def epoch_size(self) -> int | None:
        """Samples per epoch of a CNTK list (``None`` for one data sweep, not yet known)."""
        return self._epoch_size

    # a learner's minibatch_size written into a schedule made without one (CNTK 2.7's learner
    # functions set it on the user's schedule; it stays not explicitly specified)
    _learner_minibatch_size: int | None = None

    @property
    def minibatch_size(self) -> int:
        """The reference minibatch size ``R`` (0 = per minibatch).  Setting it (as CNTK 2.7's
        learner functions do to a schedule they are given) keeps
        :attr:`is_minibatch_size_explicitly_specified` as it was, as CNTK's does.

        Example:
            >>> from stadyn.schedules import Schedule
            >>> s = Schedule(0.05)
            >>> s.minibatch_size = 8
            >>> s.minibatch_size, s.is_minibatch_size_explicitly_specified
            (8, False)
        """
        if self._minibatch_size is not None:
            return self._minibatch_size
        return self._learner_minibatch_size or 0

    @minibatch_size.setter
    def minibatch_size(self, value: int) -> None:
        n = _minibatch_size(value)
        if n is None:
            raise StadynError(f"{self}: minibatch_size must be an integer >= 0, got None")
        if self._minibatch_size is not None:
            self._minibatch_size = n
        else:
            self._learner_minibatch_size = n

    @property
    def is_minibatch_size_explicitly_specified(self) -> bool:
        """Whether ``minibatch_size`` was given (a learner fills in its own otherwise)."""
        return self._minibatch_size is not None

    @property
    def needs_epoch_size(self) -> bool:
        """True while a value lookup would need the unknown sweep size."""
        if self._epoch_size is None and any(unit == "epochs"
                                            for _, unit, _ in self._segments[:-1]):
            return True
        return any(isinstance(p, Schedule) and p.needs_epoch_size for p in self._pieces())

    @property
    def is_constant(self) -> bool:
        """True when the schedule gives one value at every position.

        >>> from stadyn.schedules import Schedule, piecewise
        >>> Schedule(0.1).is_constant, piecewise([8], [0.5, 0.0]).is_constant
        (True, False)
        """
        pieces = [p for _, _, p in self._segments]
        return all(isinstance(p, float) for p in pieces) and len(set(pieces)) == 1

    def _pieces(self):
        for _, _, piece in self._segments:
            yield piece
            if isinstance(piece, _Ramp):
                yield piece.target

    # -- lookup ---------------------------------------------------------------------------------
    def value_at(self, samples_seen: int) -> float:
        """The value for a minibatch that starts after ``samples_seen`` samples."""
        if isinstance(samples_seen, bool) or not isinstance(samples_seen, numbers.Integral) \
                or samples_seen < 0:
            raise StadynError(f"{self}: samples_seen must be an integer >= 0, got "
                              f"{samples_seen!r}")
        start = 0
        for count, unit, piece in self._segments[:-1]:
            length = count * self._epoch() if unit == "epochs" else count
            if samples_seen < start + length:
                return _evaluate(piece, int(samples_seen) - start)
            start += length
        return _evaluate(self._segments[-1][2], int(samples_seen) - start)

    def value_at_sweep(self, sweeps_seen: int) -> float:
        """The value after ``sweeps_seen`` data sweeps, for a schedule whose epoch is one sweep
        (``epoch_size=None``): each value lasts that many sweeps, whatever their size.

        >>> from stadyn.schedules import Schedule
        >>> [Schedule([(2, 0.1), 0.01]).value_at_sweep(k) for k in range(4)]
        [0.1, 0.1, 0.01, 0.01]
        """
        if self._epoch_size is not None:
            raise StadynError(f"{self}: value_at_sweep needs epoch_size=None (one data sweep), "
                              f"this one is {self._epoch_size} samples")
        return copy.deepcopy(self).resolve_epoch_size(1).value_at(sweeps_seen)

    def __getitem__(self, samples_seen: int) -> float:
        return self.value_at(samples_seen)

    def __iter__(self):  # __getitem__ would otherwise make it an endless iterable
        raise TypeError("a Schedule is not iterable; look values up with schedule[samples_seen]")

    def _epoch(self) -> int:
        if self._epoch_size is None:
            raise StadynError(f"{self}: epoch_size=None means one full data sweep, but the sweep "
                              "size is not known yet; the trainer or reader must call "
                              "resolve_epoch_size(samples_per_sweep) first (or give epoch_size)")
        return self._epoch_size

    # -- changes --------------------------------------------------------------------------------
    def resolve_epoch_size(self, samples_per_sweep: int) -> "Schedule":
        """Fill in the sweep size where ``epoch_size`` was ``None`` (here and in schedules this
        one contains); a given ``epoch_size`` is kept.  Returns ``self``."""
        n = _count(samples_per_sweep, "samples_per_sweep", 1)
        if self._epoch_size is None:
            self._epoch_size = n
        for piece in self._pieces():
            if isinstance(piece, Schedule):
                piece.resolve_epoch_size(n)
        return self

    def with_minibatch_size(self, minibatch_size: int) -> "Schedule":
        """A copy with the reference minibatch size set (explicitly)."""
        other = copy.copy(self)
        other._minibatch_size = _minibatch_size(minibatch_size)
        return other

    def named(self, name: str) -> "Schedule":
        """A copy that error messages call ``name``."""
        other = copy.copy(self)
        other._name = name
        return other

    def constant_values(self) -> list[float]:
        """The constant values of the segments (for validation); functions are skipped."""
        out = []
        for piece in self._pieces():
            if isinstance(piece, float):
                out.append(piece)
            elif isinstance(piece, Schedule):
                out.extend(piece.constant_values())
            elif isinstance(piece, (_Cosine, _StepDecay)):
                out.extend([piece.initial, piece.final] if isinstance(piece, _Cosine)
                           else [piece.initial])
            elif isinstance(piece, _Ramp):
                out.append(piece.start)
        return out

    # -- serialisation ----------------------------------------------------------------------------
    def config(self) -> dict:
        """A plain (JSON-able) description; :meth:`from_config` rebuilds the schedule."""
        cfg = {"segments": [[c, u, _piece_config(p)] for c, u, p in self._segments],
               "epoch_size": self._epoch_size, "minibatch_size": self._minibatch_size,
               "name": self._name, "desc": self._desc}
        if self._learner_minibatch_size is not None:
            cfg["learner_minibatch_size"] = self._learner_minibatch_size
        return cfg

    @classmethod
    def from_config(cls, cfg: dict) -> "Schedule":
        """Rebuild a schedule from :meth:`config`."""
        segments = [(int(c), str(u), _piece_from_config(p)) for c, u, p in cfg["segments"]]
        self = cls._from_segments(segments, cfg.get("desc", "Schedule("),
                                  cfg.get("minibatch_size"))
        self._epoch_size = cfg.get("epoch_size")
        self._name = cfg.get("name")
        if cfg.get("learner_minibatch_size") is not None:
            self._learner_minibatch_size = _minibatch_size(cfg["learner_minibatch_size"])
        return self

    def __repr__(self) -> str:
        if self._name:
            return f"schedule '{self._name}'"
        extra = []
        if self._epoch_size is not None:
            extra.append(f"epoch_size={self._epoch_size}")
        if self._minibatch_size is not None:
            extra.append(f"minibatch_size={self._minibatch_size}")
        desc = self._desc if len(self._desc) <= 80 else self._desc[:77] + "..."
        return desc + "".join(", " + e for e in extra) + ")"


def _cntk_segments(values: Values) -> list[tuple[int, str, Any]]:
    if isinstance(values, Schedule):
        raise StadynError("Schedule(values): values is already a Schedule; use it as it is")
    if isinstance(values, (str, bytes)) or not isinstance(values, (numbers.Real, Sequence)):
        raise StadynError(f"schedule values must be a number, a list of numbers or a list of "
                          f"(count, value) pairs, got {values!r}")
    if isinstance(values, numbers.Real):
        return [(1, "epochs", _number(values, "schedule value"))]
    if len(values) == 0:
        raise StadynError("schedule values: the list is empty")
    segments = []
    for i, item in enumerate(values):
        last = i == len(values) - 1
        if isinstance(item, numbers.Real):
            segments.append((1, "epochs", _number(item, f"schedule value [{i}]")))
            continue
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
            raise StadynError(f"schedule values [{i}]: expected a number or a (count, value) "
                              f"pair, got {item!r}")
        count = _count(item[0], f"schedule values [{i}] count", 0 if last else 1)
        segments.append((count, "epochs", _number(item[1], f"schedule values [{i}] value")))
    return segments


def _as_piece(value: "float | Schedule", what: str) -> "float | Schedule":
    return value if isinstance(value, Schedule) else _number(value, what)
