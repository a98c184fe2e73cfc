"""``stadyn.learners``: CNTK's learners on Stadyn's solver maths.

A learner receives the gradient **summed** over an ``M``-sample minibatch in each parameter's
``.grad`` and applies CNTK's rule with CNTK's units (per-sample or per-minibatch learning rates,
momentum as time constants, per-sample L2/L1/clipping).  See ``docs/learners.md``.

Example:
    >>> import numpy as np, torch, stadyn as sd
    >>> import stadyn.learners as L
    >>> w = sd.Variable.from_numpy_array(np.ones(3), need_grad=True)
    >>> learner = L.momentum_sgd([w], L.learning_rate_schedule(0.01, L.UnitType.sample),
    ...                          L.momentum_as_time_constant_schedule(600),
    ...                          l2_regularization_weight=0.002)
    >>> w.grad = torch.ones(3)
    >>> learner.update(64)
    True
"""

from ..schedules import (IGNORE, UnitType, learning_parameter_schedule,
                         learning_parameter_schedule_per_sample, learning_rate_schedule,
                         momentum_as_time_constant_schedule, momentum_schedule,
                         momentum_schedule_per_sample, training_parameter_schedule)
from ._learner import Learner, default_unit_gain_value, set_default_unit_gain_value
from ._learners import (adadelta, adagrad, adam, fsadagrad, momentum_sgd, nesterov, rmsprop,
                        sgd)

__all__ = ["Learner", "sgd", "momentum_sgd", "nesterov", "adam", "adagrad", "adadelta",
           "rmsprop", "fsadagrad", "default_unit_gain_value", "set_default_unit_gain_value",
           "UnitType", "IGNORE", "training_parameter_schedule", "learning_parameter_schedule",
           "learning_parameter_schedule_per_sample", "learning_rate_schedule",
           "momentum_schedule", "momentum_schedule_per_sample",
           "momentum_as_time_constant_schedule"]
