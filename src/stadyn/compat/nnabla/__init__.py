"""NNabla's names on Stadyn: ``import stadyn.compat.nnabla as nn``.

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> import stadyn.compat.nnabla.functions as F
    >>> x = nn.Variable((2, 3))
    >>> F.relu(x).shape
    (2, 3)
"""

from ...graph import (auto_forward, get_auto_forward, recompute, recompute_fn,
                      set_auto_forward, set_global_recompute)
from ._scope_order import clear_parameters, parameter_scope
from ...solvers import (set_solver_post_hook, set_solver_pre_hook, unset_solver_post_hook,
                        unset_solver_pre_hook)
from ._arrays import (add_available_context, array_classes, available_contexts,
                      prefer_cached_array, reset_array_preference)
from ._context import Context, context_scope, get_current_context, set_default_context
from ._callback import (set_function_post_hook, set_function_pre_hook, unset_function_post_hook,
                        unset_function_pre_hook)
from ._grad import grad
from ._module import Module, Sequential
from ._ndarray import NdArray
from ._proto_variable import ProtoVariable
from ._parameter import (get_current_parameter_scope, get_parameter_or_create, get_parameters,
                         load_parameters, no_grad, save_parameters)
from ._variable import Variable, forward_all
from .logger import logger  # noqa: F401 - NNabla binds the logger over its module's name
from . import parameter, solver  # noqa: F401,E402 - ``nn.parameter``, ``nn.solver`` as in NNabla
from . import graph_def  # noqa: F401,E402 - ``nn.graph_def`` (nnabla.core.graph_def)
# ``import nnabla`` alone gives ``nn.functions`` and ``nn.utils`` in NNabla 1.39 (its package
# imports them); its own tests call ``nn.functions.identity(x)``
from . import functions, utils  # noqa: F401,E402
from .random import seed  # noqa: E402 - nnabla.random's (both seeds, or one: its keywords)

__all__ = [
    "Variable", "NdArray", "auto_forward", "set_auto_forward", "get_auto_forward",
    "forward_all", "grad",
    "Context", "context_scope", "set_default_context", "get_current_context", "parameter_scope",
    "get_parameters", "clear_parameters", "get_parameter_or_create", "load_parameters",
    "save_parameters", "seed",
]
# NNabla's modules, parameter-scope view and no_grad (``_module.py``, ``_parameter.py``).
__all__ += ["Module", "Sequential", "get_current_parameter_scope", "no_grad"]
# NNabla's recompute flag (``stadyn.graph``'s).
__all__ += ["recompute", "recompute_fn", "set_global_recompute"]
# NNabla's function hooks (``_callback.py``) and solver hooks (``stadyn.solvers``').
__all__ += ["set_function_pre_hook", "set_function_post_hook", "unset_function_pre_hook",
            "unset_function_post_hook"]
__all__ += ["set_solver_pre_hook", "set_solver_post_hook", "unset_solver_pre_hook",
            "unset_solver_post_hook"]
# NNabla's array-class preference and available contexts (``_arrays.py``: bookkeeping only).
__all__ += ["add_available_context", "available_contexts", "array_classes", "prefer_cached_array",
            "reset_array_preference"]
# NNabla's proto graphs' placeholder (``_proto_variable.py``: the description only).
__all__ += ["ProtoVariable"]
