"""Stadyn: one network, two graphs — CNTK- and NNabla-style deep learning on PyTorch.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F, stadyn.parametric_functions as PF
    >>> x = sd.Variable((4, 3))
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     y = F.mean(PF.affine(x, 2))
    >>> x.d = np.ones((4, 3))
    >>> y.forward()
    >>> y.shape
    ()
"""

from torch import no_grad

from . import functions, ops, parametric, sequence, solvers  # noqa: F401  (ops: Variable operators)
from ._errors import (ArgumentError, ConfigError, DataError, ModelFileError, NumericsError,
                      OpArgumentError, ParameterError, ShapeError, StadynError)
from ._random import seed
from ._version import __version__
from .compile import CompiledStep, compile_step
from .inspect import profile, reset_trace_counts, show, summary, trace
from .graph import (Context, Variable, auto_forward, check_numerics, context, context_scope,
                    forward_all, get_auto_forward, get_current_context, is_training,
                    set_auto_forward, set_default_context, set_training, training)
from .ops import grad
from .parametric import (ParameterRegistry, clear_parameters, get_parameter_or_create,
                         get_parameters, parameter_registry, parameter_scope)
from .serialize import (Network, export_onnx, import_onnx, load, load_nnp, load_parameters,
                        read_parameter_file, save, save_nnp, save_parameters)

__all__ = [
    "Variable", "auto_forward", "set_auto_forward", "get_auto_forward", "forward_all", "grad",
    "no_grad", "training", "is_training", "set_training", "Context", "context",
    "set_default_context", "get_current_context",
    "context_scope", "parameter_scope", "parameter_registry", "ParameterRegistry",
    "get_parameters", "clear_parameters", "get_parameter_or_create", "save_parameters",
    "load_parameters", "read_parameter_file", "save", "load", "load_nnp", "save_nnp",
    "export_onnx", "import_onnx",
    "Network", "seed", "StadynError", "ShapeError", "OpArgumentError", "ArgumentError",
    "ParameterError", "DataError", "ConfigError", "ModelFileError", "compile_step",
    "CompiledStep", "show", "summary", "__version__", "NumericsError", "check_numerics",
    "profile", "trace", "reset_trace_counts",
]
