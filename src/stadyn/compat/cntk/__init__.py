"""CNTK's Python API on Stadyn: ``import stadyn.compat.cntk as cntk``.

CNTK 2.x names (``cntk.layers``, ``cntk.io``, ``cntk.learners``, ``cntk.train``,
``cntk.logging``, ``cntk.ops``, ``cntk.losses``, ``cntk.metrics``, ``cntk.input_variable``, ...)
and the 2017 betas' names the CIFAR-10 seed uses (``cntk.models``, ``cntk.learner``,
``cntk.utils``, ``cntk.learning_rate_schedule``, ``z.save_model``; ``import _cntk_py`` becomes
``from stadyn.compat.cntk import _cntk_py``).

Example:
    >>> import stadyn.compat.cntk as cntk
    >>> x = cntk.input_variable((3, 8, 8))
    >>> with cntk.layers.default_options(activation=cntk.relu, pad=True):
    ...     z = cntk.layers.Sequential([cntk.layers.Convolution((3, 3), 4),
    ...                                 cntk.layers.Dense(10, activation=None)])(x)
    >>> z.shape, len(z.parameters)
    ((10,), 4)
"""

from . import (_cntk_py, device, io, layers, learner, learners, logging, losses, metrics,
               models, ops, sequence, train, utils)
from ._function import Function, load_model
from .learners import (UnitType, learning_parameter_schedule,
                       learning_parameter_schedule_per_sample, learning_rate_schedule,
                       momentum_as_time_constant_schedule, momentum_schedule,
                       momentum_schedule_per_sample, training_parameter_schedule)
from .ops import *  # noqa: F401,F403
from .ops import __all__ as _ops_all
from .train import Trainer

cntk_py = _cntk_py
__version__ = "2.7+stadyn"

__all__ = list(_ops_all) + [
    "Function", "load_model", "Trainer", "UnitType", "learning_rate_schedule",
    "learning_parameter_schedule", "learning_parameter_schedule_per_sample",
    "training_parameter_schedule", "momentum_schedule", "momentum_schedule_per_sample",
    "momentum_as_time_constant_schedule", "io", "layers", "learners", "learner", "logging",
    "losses", "metrics", "models", "ops", "train", "utils", "device", "cntk_py", "sequence",
]
