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

import gc as _gc
import os as _os

# Importing torch and Stadyn makes ~300k objects that live as long as the process.  The cyclic
# garbage collector is off while they are made and they are frozen afterwards (gc.freeze: never
# examined again), so a small program pays no full collections over them: during the import, at
# each later full collection (tracing a static plan makes many objects) and at exit.  About a
# quarter of a small CNTK program's CPU time (docs/performance.md, "Start-up").
# STADYN_GC_FREEZE=0 leaves the collector alone.
_FREEZE = _os.environ.get("STADYN_GC_FREEZE", "1") != "0"
_COLLECTING = _gc.isenabled()
if _FREEZE:
    _gc.disable()
try:
    from torch import no_grad

    from . import functions, ops, parametric, sequence, solvers  # noqa: F401  (ops: Variable operators)
    from ._errors import (ArgumentError, ConfigError, DataError, DeprecatedCallError,
                          EmptySequenceError, ModelFileError, NumericsError, OpArgumentError,
                          ParameterError, ShapeError, StadynError, UnrunnableError)
    from ._random import seed
    from ._version import __version__
    from .compile import CompiledStep, compile_step
    from .inspect import profile, reset_trace_counts, show, summary, trace
    from .graph import (Context, Variable, auto_forward, check_numerics, context, context_scope,
                        forward_all, get_auto_forward, get_current_context,
                        get_static_options, is_training, set_auto_forward,
                        set_default_context, set_static_options, set_training, static_options,
                        training)
    from .ops import grad
    from .parametric import (ParameterRegistry, clear_parameters, get_parameter_or_create,
                             get_parameters, parameter_registry, parameter_scope)
    from .serialize import (Network, export_onnx, import_onnx, load, load_nnp, load_parameters,
                            read_parameter_file, save, save_nnp, save_parameters)
finally:
    if _FREEZE:
        if _COLLECTING:
            _gc.enable()
        _gc.freeze()

__all__ = [
    "Variable", "auto_forward", "set_auto_forward", "get_auto_forward", "forward_all", "grad",
    "no_grad", "training", "is_training", "set_training", "static_options",
    "set_static_options", "get_static_options", "Context", "context",
    "set_default_context", "get_current_context",
    "context_scope", "parameter_scope", "parameter_registry", "ParameterRegistry",
    "get_parameters", "clear_parameters", "get_parameter_or_create", "save_parameters",
    "load_parameters", "read_parameter_file", "save", "load", "load_nnp", "save_nnp",
    "export_onnx", "import_onnx",
    "Network", "seed", "StadynError", "ShapeError", "OpArgumentError", "ArgumentError",
    "ParameterError", "DataError", "ConfigError", "ModelFileError", "UnrunnableError",
    "EmptySequenceError", "DeprecatedCallError",
    "compile_step",
    "CompiledStep", "show", "summary", "__version__", "NumericsError", "check_numerics",
    "profile", "trace", "reset_trace_counts",
]
