"""CNTK's schedule functions (``learning_parameter_schedule``, ``momentum_schedule``,
``momentum_as_time_constant_schedule``, ...): a :class:`~._schedule.Schedule` of CNTK's values
(a number, a list, ``(count, value)`` pairs, each lasting ``epoch_size`` samples) and its
reference minibatch size or unit."""

from __future__ import annotations

import math
import numbers
from typing import Any, Sequence

from .._errors import StadynError
from ._schedule import IGNORE, Schedule, UnitType, Values, _number

__all__ = ["training_parameter_schedule", "learning_parameter_schedule",
           "learning_parameter_schedule_per_sample", "learning_rate_schedule",
           "momentum_schedule", "momentum_schedule_per_sample",
           "momentum_as_time_constant_schedule"]


class _UnitError(StadynError, ValueError):
    """A unit that is no :class:`UnitType` (CNTK 2.7: the ``ValueError`` of its enum)."""


def training_parameter_schedule(schedule: "Values | Schedule",
                                unit: "UnitType | str" = UnitType.minibatch,
                                epoch_size: int | None = None) -> Schedule:
    """CNTK 2.0's schedule with a unit: ``UnitType.sample`` (``R = 1``) or
    ``UnitType.minibatch`` (``R = 0``).  A :class:`Schedule` is returned as it is.

    Example:
        >>> from stadyn.schedules import training_parameter_schedule, UnitType
        >>> s = training_parameter_schedule([0.01, 0.001], UnitType.sample, 1000)
        >>> s[999], s[1000], s.minibatch_size
        (0.01, 0.001, 1)
    """
    if isinstance(schedule, Schedule):
        return schedule
    try:
        unit = UnitType(unit.value if isinstance(unit, UnitType) else unit)
    except ValueError:
        raise _UnitError(f"{unit!r} is not a valid UnitType: unit must be UnitType.sample or "
                         "UnitType.minibatch") from None
    return Schedule(schedule, epoch_size, 1 if unit is UnitType.sample else IGNORE)


def learning_parameter_schedule(schedule: "Values | Schedule",
                                minibatch_size: int | None = None,
                                epoch_size: int | None = None) -> Schedule:
    """CNTK 2.2+: values tuned for ``minibatch_size``-sample minibatches (``None``: apply per
    minibatch, unless the learner's ``minibatch_size`` says otherwise).

    Example:
        >>> from stadyn.schedules import learning_parameter_schedule
        >>> s = learning_parameter_schedule([0.1, 0.01], minibatch_size=32, epoch_size=500)
        >>> s[499], s[500], s.minibatch_size
        (0.1, 0.01, 32)
    """
    if isinstance(schedule, Schedule):
        return schedule
    return Schedule(schedule, epoch_size, minibatch_size)


def learning_parameter_schedule_per_sample(schedule: "Values | Schedule",
                                           epoch_size: int | None = None) -> Schedule:
    """Per-sample values (``R = 1``): the learner applies ``value`` to each sample's gradient.

    Example:
        >>> from stadyn.schedules import learning_parameter_schedule_per_sample
        >>> learning_parameter_schedule_per_sample(0.001).minibatch_size
        1
    """
    return learning_parameter_schedule(schedule, minibatch_size=1, epoch_size=epoch_size)


def learning_rate_schedule(lr: "Values | Schedule", unit: "UnitType | str",
                           epoch_size: int | None = None) -> Schedule:
    """CNTK 2.0's learning-rate schedule (the same as :func:`training_parameter_schedule`).

    Example:
        >>> import stadyn.schedules as S
        >>> lr = S.learning_rate_schedule([0.0015625] * 20 + [0.00046875], S.UnitType.sample,
        ...                               epoch_size=50000)
        >>> lr[0], lr[20 * 50000]
        (0.0015625, 0.00046875)
    """
    return training_parameter_schedule(lr, unit, epoch_size)


def momentum_schedule(momentum: "Values | Schedule", epoch_size: int | None = None,
                      minibatch_size: int | None = None) -> Schedule:
    """Momentum values; with ``minibatch_size=N`` a value ``m`` becomes ``m ** (M / N)`` on an
    ``M``-sample minibatch (equal decay per sample), without it ``m`` per minibatch.

    Example:
        >>> from stadyn.schedules import momentum_schedule
        >>> m = momentum_schedule([(999, 0.99), (888, 0.88), (0, 0.77)], epoch_size=1)
        >>> m[0], m[998], m[999], m[999 + 888 - 1], m[999 + 888]
        (0.99, 0.99, 0.88, 0.88, 0.77)
    """
    return learning_parameter_schedule(momentum, minibatch_size, epoch_size)


def momentum_schedule_per_sample(momentum: "Values | Schedule",
                                 epoch_size: int | None = None) -> Schedule:
    """Per-sample momentum (``R = 1``): ``m ** M`` on an ``M``-sample minibatch.

    Example:
        >>> from stadyn.schedules import momentum_schedule_per_sample
        >>> momentum_schedule_per_sample(0.99).minibatch_size
        1
    """
    return momentum_schedule(momentum, epoch_size, minibatch_size=1)


def _time_constant(tc: Any, what: str) -> float:
    tc = _number(tc, what)
    if tc < 0:
        raise StadynError(f"{what} must be >= 0 samples, got {tc}")
    return 0.0 if tc == 0 else math.exp(-1.0 / tc)


def momentum_as_time_constant_schedule(momentum: "Values | Schedule",
                                       epoch_size: int | None = None) -> Schedule:
    """Momentum given as the time constant ``tc`` (in samples) of a unit-gain first-order IIR
    filter: per-sample momentum ``exp(-1 / tc)`` (0 when ``tc = 0``), so ``exp(-M / tc)`` on an
    ``M``-sample minibatch.  A gradient's weight falls to ``1/e`` after ``tc`` samples.

    Example:
        >>> import math
        >>> from stadyn.schedules import momentum_as_time_constant_schedule
        >>> m = momentum_as_time_constant_schedule([0, 600], epoch_size=100)
        >>> m[0], m[100] == math.exp(-1 / 600), m.minibatch_size
        (0.0, True, 1)
    """
    if isinstance(momentum, Schedule):
        return momentum
    if isinstance(momentum, numbers.Real):
        values: Any = _time_constant(momentum, "momentum time constant")
    elif isinstance(momentum, Sequence) and not isinstance(momentum, (str, bytes)):
        values = []
        for i, item in enumerate(momentum):
            what = f"momentum time constant [{i}]"
            if isinstance(item, numbers.Real):
                values.append(_time_constant(item, what))
            elif isinstance(item, Sequence) and len(item) == 2:
                values.append((item[0], _time_constant(item[1], what)))
            else:
                raise StadynError(f"{what}: expected a number or a (count, value) pair, got "
                                  f"{item!r}")
    else:
        raise StadynError(f"momentum time constants must be a number or a list, got "
                          f"{momentum!r}")
    schedule = Schedule(values, epoch_size, minibatch_size=1)
    schedule._desc = f"momentum_as_time_constant_schedule({momentum!r}"
    return schedule
