"""CNTK 2.7's schedule functions (``learning_parameter_schedule``, ``momentum_schedule``, ...)
on Stadyn's :class:`~stadyn.schedules.Schedule`, looked up as CNTK looks them up.

CNTK's ``schedule[count]`` counts in the schedule's own units: samples when it was given an
``epoch_size``, data sweeps when it was not (CNTK's ``FullDataSweep``; ``Utils.cpp``,
``TrainingParameterSchedule::ConstructSchedule`` and ``operator[]``).  Stadyn's schedule of
one data sweep refuses a lookup until it is told the sweep's size; such a schedule made here
gives the value after ``count`` sweeps instead (its learners count sweeps as CNTK's do).

Example:
    >>> import stadyn.compat.cntk as C
    >>> m = C.momentum_schedule([(2, 0.9), 0.5])
    >>> m[0], m[1], m[2], m[100]
    (0.9, 0.9, 0.5, 0.5)
"""

from __future__ import annotations

import functools
import inspect
import itertools
import warnings

from ... import learners as _L
from ...schedules import Schedule

__all__ = ["CNTKSchedule", "SweepSchedule", "training_parameter_schedule",
           "learning_parameter_schedule",
           "learning_parameter_schedule_per_sample", "learning_rate_schedule",
           "momentum_schedule", "momentum_schedule_per_sample",
           "momentum_as_time_constant_schedule"]


class CNTKSchedule(Schedule):
    """A schedule as CNTK 2.7's ``training_double_parameter_schedule`` shows itself besides its
    values: ``is_sweep_based()`` (no ``epoch_size`` was given: its values move on once per
    data sweep), and the constants ``full_data_sweep`` and ``ignored_minibatch_size`` (both 0
    in CNTK 2.7).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> s = C.learning_parameter_schedule([0.1, 0.2], epoch_size=10)
        >>> s.is_sweep_based(), C.learning_parameter_schedule(0.1).is_sweep_based()
        (False, True)
        >>> s.full_data_sweep, s.ignored_minibatch_size, s.minibatch_size
        (0, 0, 0)
    """

    full_data_sweep = 0          # CNTK 2.7's FullDataSweep: an epoch_size of one data sweep
    ignored_minibatch_size = 0   # CNTK 2.7's IgnoredMinibatchSize

    def __iter__(self):
        """Endless, as CNTK 2.7's (its SWIG class has ``__getitem__`` and no ``__iter__``):
        ``schedule[0], schedule[1], ...`` (``zip(schedule, values)`` stops with ``values``).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> list(zip(C.momentum_schedule([0.9, 0.5], epoch_size=2), range(3)))
            [(0.9, 0), (0.9, 1), (0.5, 2)]
        """
        return map(self.__getitem__, itertools.count())

    def is_sweep_based(self) -> bool:
        """Whether it was made without an ``epoch_size`` (one data sweep per value)."""
        return getattr(self, "_cntk_sweep_based", self.epoch_size is None)


class SweepSchedule(CNTKSchedule):
    """A schedule of one data sweep per epoch (no ``epoch_size`` given), whose
    ``schedule[count]`` is the value after ``count`` sweeps, as CNTK 2.7's."""

    def __getitem__(self, sweeps: int) -> float:
        if self.epoch_size is None:
            return self.value_at_sweep(sweeps)
        return self.value_at(sweeps * self.epoch_size)   # (a learner told it the sweep size)


def _cntk_schedule(make):
    signature = inspect.signature(make)
    first = next(iter(signature.parameters))

    @functools.wraps(make)
    def cntk_schedule(*args, **kwargs):
        try:
            given = signature.bind(*args, **kwargs).arguments
        except TypeError:
            given = {}
        if isinstance(given.get(first), (int, float)) and given.get("epoch_size") is not None:
            # (CNTK 2.7's learners/__init__.py: a number's schedule has no epochs)
            warnings.warn("When providing the schedule as a number, epoch_size is ignored",
                          RuntimeWarning, stacklevel=2)
        schedule = make(*args, **kwargs)
        if isinstance(schedule, Schedule) and type(schedule) is Schedule:
            # (a learner may tell it the sweep's size later: what it was made as is kept)
            schedule._cntk_sweep_based = schedule.epoch_size is None
            schedule.__class__ = SweepSchedule if schedule.epoch_size is None and \
                schedule.needs_epoch_size else CNTKSchedule
        return schedule
    return cntk_schedule


training_parameter_schedule = _cntk_schedule(_L.training_parameter_schedule)
learning_parameter_schedule = _cntk_schedule(_L.learning_parameter_schedule)
learning_parameter_schedule_per_sample = _cntk_schedule(_L.learning_parameter_schedule_per_sample)
learning_rate_schedule = _cntk_schedule(_L.learning_rate_schedule)
momentum_schedule = _cntk_schedule(_L.momentum_schedule)
momentum_schedule_per_sample = _cntk_schedule(_L.momentum_schedule_per_sample)
momentum_as_time_constant_schedule = _cntk_schedule(_L.momentum_as_time_constant_schedule)
