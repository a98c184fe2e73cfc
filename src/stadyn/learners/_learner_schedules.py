"""A learner's schedules: CNTK 2.7's rules for adopting a learning-rate or momentum schedule
(the reference minibatch size a schedule takes from its learner), looking values up with the
samples (or sweeps) seen, and resetting the rate.  A mixin of
:class:`~stadyn.learners.Learner`, whose attributes (``name``, ``_schedules``, ``_reference``,
``_use_mean_gradient``, ``_epoch_size``, ``_momentum_names``, the counts) it reads and sets.
"""

from __future__ import annotations

import copy
import math
import numbers
from typing import Any

from .._errors import ArgumentError, StadynError
from .._errors import checked_count as _count
from ..schedules import IGNORE, Schedule

__all__ = ["LearnerSchedules"]


class LearnerSchedules:
    """The schedule methods of :class:`~stadyn.learners.Learner`.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.learners import sgd
        >>> w = sd.Variable.from_numpy_array(np.zeros(2), need_grad=True)
        >>> sgd([w], [0.1, 0.01], epoch_size=4).schedule_value("lr")
        (0.1, 0)
    """

    def _set_schedule(self, key: str, value: Any, *, made: bool = True) -> None:
        """Adopt ``value`` as schedule ``key`` (CNTK's ``_infer_learning_parameter_schedule``):
        numbers and lists get the learner's reference minibatch size (0 if none) and
        ``epoch_size``; a schedule without an explicit minibatch size takes the learner's.
        That size (and ``use_mean_gradient``'s ``IGNORE``) is written into the caller's
        schedule, as CNTK 2.7's learner functions write it (``cntk/learners/__init__.py:
        568-575``), so a learner made later with that schedule and no ``minibatch_size`` takes
        it; once the learner is made (``reset_learning_rate``) only a size other than
        ``IGNORE`` is written (``Learner.reset_learning_rate``, 143-146).  The learner keeps its
        own copy, which a later learner's write does not reach (CNTK's C++ learner copies it)."""
        if isinstance(value, Schedule):
            schedule = copy.copy(value)
            if not schedule.is_minibatch_size_explicitly_specified and \
                    self._reference is not None:
                schedule = schedule.with_minibatch_size(self._reference)
                if made or self._reference != IGNORE:
                    value.minibatch_size = self._reference
            if key == "lr" and self._use_mean_gradient and schedule.minibatch_size == 1:
                schedule = schedule.with_minibatch_size(IGNORE)     # CNTK's legacy combination
                if made:
                    value.minibatch_size = IGNORE
        elif isinstance(value, (numbers.Real, list, tuple)) and not isinstance(value, bool):
            reference = self._reference if self._reference is not None else IGNORE
            try:
                schedule = Schedule(value, self._epoch_size, reference)
            except StadynError as exc:
                raise StadynError(f"{self.name}: {key}: {exc}") from None
        else:
            raise ArgumentError(f"{self.name}: {key} must be a number, a list or a Schedule, "
                                f"got {value!r}")
        for v in schedule.constant_values():
            self._check(key, v)
        self._schedules[key] = schedule

    def _check(self, key: str, value: float) -> float:
        if not math.isfinite(value):
            raise StadynError(f"{self.name}: {key} is {value}")
        if value < 0:
            raise StadynError(f"{self.name}: {key} must be >= 0, got {value}"
                              + (" (invalid learning rate)" if key == "lr" else ""))
        if key in self._momentum_names and value > 1:
            raise StadynError(f"{self.name}: {key} must lie in [0, 1], got {value}")
        return value

    def _value(self, key: str, samples_seen: int, sweeps_seen: int | None = None) -> float:
        schedule = self._schedules[key]
        try:
            if schedule.epoch_size is None and schedule.needs_epoch_size:
                # per data sweep, its size never told: CNTK counts the sweeps that ended
                value = schedule.value_at_sweep(self.sweeps_seen if sweeps_seen is None
                                                else sweeps_seen)
            else:
                value = schedule.value_at(samples_seen)
        except StadynError as exc:
            raise StadynError(f"{self.name}: the '{key}' schedule: {exc}") from None
        return self._check(key, value)

    def _per_minibatch(self, key: str, sample_count: int) -> float:
        """A momentum-like value for this minibatch: ``m`` if ``R = 0``, else ``m ** (M / R)``."""
        value = self._value(key, self.samples_seen)
        reference = self._schedules[key].minibatch_size
        return value if reference == 0 else value ** (sample_count / reference)

    def learning_rate(self) -> float:
        """The current learning rate as the schedule gives it (per sample, per minibatch or per
        reference minibatch, in the schedule's own unit)."""
        return self._value("lr", self.samples_seen - self._lr_offset,
                           self.sweeps_seen - self._lr_sweep_offset)

    def schedule_value(self, key: str) -> tuple[float, int]:
        """Schedule ``key``'s current value (``"lr"``, ``"momentum"``, ...: in its own unit,
        as :meth:`learning_rate` gives the rate) and its reference minibatch size (0: per
        minibatch), which CNTK's progress lines name (``Momentum per 64 samples: 0.9``).

        Example:
            >>> import numpy as np, stadyn as sd
            >>> from stadyn.learners import momentum_sgd, momentum_schedule_per_sample
            >>> w = sd.Variable.from_numpy_array(np.zeros(2), need_grad=True)
            >>> momentum_sgd([w], 0.1, momentum_schedule_per_sample(0.99)).schedule_value(
            ...     "momentum")
            (0.99, 1)
        """
        if key not in self._schedules:
            raise StadynError(f"{self.name}: no '{key}' schedule (it has "
                              f"{', '.join(sorted(self._schedules))})")
        if key == "lr":
            return self.learning_rate(), self._schedules[key].minibatch_size
        return self._value(key, self.samples_seen), self._schedules[key].minibatch_size

    def reset_learning_rate(self, learning_rate: "Schedule | float | list") -> None:
        """Replace the learning-rate schedule; its position 0 is the current number of samples
        seen — or of sweeps seen, for a schedule per data sweep — (CNTK's semantics).  A
        checkpoint taken afterwards records the new schedule.

        Example:
            >>> import numpy as np, stadyn as sd
            >>> from stadyn.learners import sgd
            >>> from stadyn.schedules import Schedule
            >>> w = sd.Variable.from_numpy_array(np.zeros(2), need_grad=True)
            >>> learner = sgd([w], Schedule([0.1, 0.01]))      # per data sweep
            >>> learner.end_sweep(); learner.reset_learning_rate(Schedule([0.5, 0.05]))
            >>> before = learner.learning_rate(); learner.end_sweep()
            >>> before, learner.learning_rate()
            (0.5, 0.05)
        """
        self._set_schedule("lr", learning_rate, made=False)
        if self._sweep_size is not None:
            self._schedules["lr"].resolve_epoch_size(self._sweep_size)
        self._lr_offset = self.samples_seen
        self._lr_sweep_offset = self.sweeps_seen
        self._lr_reset = True

    def resolve_epoch_size(self, samples_per_sweep: int) -> None:
        """Tell every schedule with ``epoch_size=None`` (one data sweep) the sweep size."""
        n = _count(samples_per_sweep, f"{self.name}: samples_per_sweep", 1)
        for schedule in self._schedules.values():
            schedule.resolve_epoch_size(n)
        self._sweep_size = n

    def end_sweep(self) -> None:
        """Count a data sweep that ended with the minibatch just stepped on: a schedule given
        per sweep (``epoch_size=None``) whose sweep size was never told moves on by sweeps, as
        CNTK's Trainer moves it on a reader's ``sweep_end`` (or ``is_sweep_end=True``).

        Example:
            >>> import numpy as np, stadyn as sd
            >>> from stadyn.learners import sgd
            >>> from stadyn.schedules import Schedule
            >>> w = sd.Variable.from_numpy_array(np.zeros(2), need_grad=True)
            >>> learner = sgd([w], Schedule([0.1, 0.01]))
            >>> before = learner.learning_rate(); learner.end_sweep()
            >>> before, learner.learning_rate()
            (0.1, 0.01)
        """
        self.sweeps_seen += 1
