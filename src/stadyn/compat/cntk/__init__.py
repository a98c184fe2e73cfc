"""CNTK's Python API on Stadyn: ``import stadyn.compat.cntk as cntk`` (or ``as C``).

CNTK 2.7's modules (``cntk.ops``, ``cntk.layers``, ``cntk.learners``, ``cntk.io`` with
``transforms``, ``cntk.train``, ``cntk.logging`` with ``graph``, ``cntk.losses``,
``cntk.metrics``, ``cntk.initializer``, ``cntk.variables``, ``cntk.device``) and the names
CNTK keeps at the top level, plus the 2017 betas' names the CIFAR-10 seed uses
(``cntk.models``, ``cntk.learner``, ``cntk.utils``, ``z.save_model``; ``import _cntk_py``
becomes ``from stadyn.compat.cntk import _cntk_py``).  What is left out, and why, is in
docs/cntk-names.md.

Example:
    >>> import stadyn.compat.cntk as cntk
    >>> x = cntk.input_variable((3, 8, 8))
    >>> with cntk.layers.default_options(activation=cntk.relu, pad=True):
    ...     z = cntk.layers.Sequential([cntk.layers.Convolution((3, 3), 4),
    ...                                 cntk.layers.Dense(10, activation=None)])(x)
    >>> z.shape, len(z.parameters)
    ((10,), 4)
"""

import sys as _sys

from . import (_cntk_py, axis, debugging, device, eval, initializer, io, layers, learner,
               learners, logging, losses, metrics, models, ops, random, sequence, train, utils,
               variables)
from ._defaults import (default_override_or, get_default_override, get_global_option,
                        is_default_override, set_global_option)
from .default_options import default_options, default_options_for  # (the module first: its
#                                       name then means the function, as in CNTK 2.7)
from ._function_training import Evaluator
from ._values import NDArrayView, Value, asarray, asvalue
from ._variables import Constant, FreeDimension, InferredDimension, Parameter, Variable
from .device import (DeviceDescriptor, DeviceKind, all_devices, cpu, get_gpu_properties, gpu,
                     set_excluded_devices, try_set_default_device, use_default_device)
from .initializer import (DefaultParamInitScale, SentinelValueForInferParamInitRank, bilinear,
                          glorot_normal, glorot_uniform, he_normal, he_uniform,
                          initializer_with_rank, normal, truncated_normal, uniform, xavier)
from .io import MinibatchData
from .learners import (IGNORE, Learner, UnitType, adadelta, adagrad, adam,
                       default_unit_gain_value, fsadagrad, learning_parameter_schedule,
                       learning_parameter_schedule_per_sample, learning_rate_schedule,
                       momentum_as_time_constant_schedule, momentum_schedule,
                       momentum_schedule_per_sample, momentum_sgd, nesterov, rmsprop,
                       set_default_unit_gain_value, sgd, training_parameter_schedule,
                       UserLearner, universal)
from .losses import (auto_select, cosine_distance, cosine_distance_with_negative_samples,
                     hierarchical_softmax_layer, lambda_rank, nce_loss,
                     weighted_binary_cross_entropy)
from .metrics import edit_distance_error, ndcg_at_1
from .ops import *  # noqa: F401,F403
from .ops.functions import _user_function as user_function
from .ops import __all__ as _ops_all
from .train import (CheckpointConfig, CrossValidationConfig, DataUnit, TestConfig, Trainer,
                    TrainingSession, minibatch_size_schedule, training_session)
from .train.distributed import (Communicator, DistributedLearner, WorkerDescriptor,
                                block_momentum_distributed_learner,
                                data_parallel_distributed_learner, mpi_communicator)

cntk_py = _cntk_py
_sys.modules[__name__ + ".cntk_py"] = _cntk_py    # ``import cntk.cntk_py`` works too
# ``cntk.ops.sequence`` is ``cntk.sequence`` (CNTK's examples import ``from cntk.ops.sequence
# import last``): the same module object, so it counts once among the public names
ops.sequence = sequence
_sys.modules[ops.__name__ + ".sequence"] = sequence
optimized_rnnstack = ops.optimized_rnnstack   # (seq-engine) not in __all__: see ops/__init__.py
__version__ = "2.7+stadyn"

__all__ = [n for n in _ops_all if n != "use_default_device"] + ["use_default_device",

    # modules
    "debugging", "device", "eval", "initializer", "io", "layers", "learner", "learners",
    "logging", "losses", "metrics", "models", "ops", "random", "train", "utils", "variables",
    "cntk_py", "sequence", "axis",
    # graph objects and values
    "Variable", "Parameter", "Constant", "InferredDimension", "FreeDimension", "NDArrayView",
    "Value", "asarray", "asvalue", "MinibatchData",
    # options
    "default_options", "default_options_for", "default_override_or", "get_default_override",
    "is_default_override", "get_global_option", "set_global_option",
    # devices
    "DeviceDescriptor", "DeviceKind", "all_devices", "cpu", "gpu", "get_gpu_properties",
    "set_excluded_devices", "try_set_default_device",
    # initializers
    "DefaultParamInitScale", "SentinelValueForInferParamInitRank", "bilinear", "glorot_normal",
    "glorot_uniform", "he_normal", "he_uniform", "initializer_with_rank", "normal",
    "truncated_normal", "uniform", "xavier",
    # learners and schedules
    "Learner", "UserLearner", "universal", "UnitType", "IGNORE", "sgd", "momentum_sgd",
    "nesterov", "adam", "adagrad", "adadelta", "rmsprop", "fsadagrad", "default_unit_gain_value",
    "set_default_unit_gain_value",
    "learning_rate_schedule", "learning_parameter_schedule",
    "learning_parameter_schedule_per_sample", "training_parameter_schedule",
    "momentum_schedule", "momentum_schedule_per_sample", "momentum_as_time_constant_schedule",
    # training
    "Trainer", "Evaluator", "training_session", "TrainingSession", "CheckpointConfig",
    "CrossValidationConfig", "TestConfig", "DataUnit", "minibatch_size_schedule",
    # distributed training
    "Communicator", "DistributedLearner", "WorkerDescriptor", "mpi_communicator",
    "data_parallel_distributed_learner", "block_momentum_distributed_learner",
    # losses kept at the top level
    "cosine_distance", "weighted_binary_cross_entropy", "auto_select", "user_function",
    "lambda_rank", "ndcg_at_1", "cosine_distance_with_negative_samples", "edit_distance_error",
    "hierarchical_softmax_layer", "nce_loss",
]
__all__ = list(dict.fromkeys(__all__))     # the ops list already holds some of them

# CNTK 2.7's cntk.layers imports cntk as C, so `from cntk.layers import *` hands out the package
layers.C = _sys.modules[__name__]

# what CNTK 2.7's star imports hand out besides each module's own names (``sys``, ``np``, ...)
from ._star_imports import bind as _bind_star_imports  # noqa: E402

_bind_star_imports(__name__)
