"""``cntk.train.training_session``: the training session, its configs and
``minibatch_size_schedule`` (see :mod:`stadyn.compat.cntk._training`).

Example:
    >>> from stadyn.compat.cntk.train.training_session import minibatch_size_schedule
    >>> minibatch_size_schedule([32, 64], 1000)[1000]
    64
"""

from .._training import (CheckpointConfig, CrossValidationConfig, DataUnit, TestConfig,
                         TrainingSession, minibatch_size_schedule, training_session)
from ..device import use_default_device

__all__ = ["training_session", "TrainingSession", "CheckpointConfig", "CrossValidationConfig",
           "TestConfig", "DataUnit", "minibatch_size_schedule", "use_default_device"]
