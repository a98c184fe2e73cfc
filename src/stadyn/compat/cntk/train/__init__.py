"""``cntk.train``: the Trainer, the training session with its configs, the Evaluator.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x, y = C.input_variable(3), C.input_variable(2)
    >>> z = C.layers.Dense(2)(x)
    >>> trainer = C.train.Trainer(z, (C.cross_entropy_with_softmax(z, y),
    ...                               C.classification_error(z, y)),
    ...                           [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    >>> trainer.train_minibatch({x: np.ones((2, 3), np.float32), y: np.eye(2)})
    True
"""

from . import training_session as _module  # noqa: F401 - first: the name is the function's
from .. import io as _io
from .._trainer import Trainer
from .._training import (CheckpointConfig, CrossValidationConfig, DataUnit, TestConfig,
                         TrainingSession, minibatch_size_schedule, training_session)
from ..device import use_default_device
from . import distributed
from .distributed import (Communicator, DistributedLearner, WorkerDescriptor,
                          block_momentum_distributed_learner, data_parallel_distributed_learner,
                          mpi_communicator)

MinibatchData = _io.MinibatchData

__all__ = ["Trainer", "training_session", "TrainingSession", "CheckpointConfig",
           "CrossValidationConfig", "TestConfig", "DataUnit", "minibatch_size_schedule",
           "MinibatchData", "use_default_device", "distributed", "Communicator",
           "DistributedLearner", "WorkerDescriptor", "block_momentum_distributed_learner",
           "data_parallel_distributed_learner", "mpi_communicator"]
