"""``stadyn.schedules``: training parameters that change with the number of samples seen.

CNTK's schedule functions (``learning_parameter_schedule``, ``momentum_as_time_constant_schedule``,
...) and Stadyn's native ones (``constant``, ``piecewise``, ``step_decay``, ``cosine``,
``warmup``) all build a :class:`Schedule`; values are looked up with the number of samples seen
before the current minibatch.  :class:`ScheduledSolver` drives the hyperparameters of an NNabla
solver (``stadyn.solvers``) from schedules.  See ``docs/learners.md``.

Example:
    >>> import stadyn.schedules as S
    >>> lr = S.warmup(S.cosine(0.1, total_samples=10000), warmup_samples=1000)
    >>> lr[0], lr[500], lr[1000], round(lr[6000], 6), lr[11000]
    (0.0, 0.05, 0.1, 0.05, 0.0)
"""

from ._schedule import IGNORE, Schedule, UnitType
from ._native_schedules import constant, cosine, piecewise, step_decay, warmup
from ._cntk_schedules import (learning_parameter_schedule, learning_parameter_schedule_per_sample,
                              learning_rate_schedule, momentum_as_time_constant_schedule,
                              momentum_schedule, momentum_schedule_per_sample,
                              training_parameter_schedule)
from ._iteration_schedulers import (BaseLearningRateScheduler, CosineScheduler,
                                    ExponentialScheduler, LinearWarmupScheduler,
                                    PolynomialScheduler, StepScheduler)
from ._scheduled_solver import ScheduledSolver

__all__ = ["Schedule", "UnitType", "IGNORE", "constant", "piecewise", "step_decay", "cosine",
           "warmup", "training_parameter_schedule", "learning_parameter_schedule",
           "learning_parameter_schedule_per_sample", "learning_rate_schedule",
           "momentum_schedule", "momentum_schedule_per_sample",
           "momentum_as_time_constant_schedule", "ScheduledSolver",
           # NNabla's learning rates by iteration (``get_learning_rate(iter)``)
           "BaseLearningRateScheduler", "PolynomialScheduler", "CosineScheduler",
           "ExponentialScheduler", "StepScheduler", "LinearWarmupScheduler"]
