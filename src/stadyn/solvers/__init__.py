"""``stadyn.solvers`` (``S``): NNabla's solvers on multi-tensor solver maths."""

from . import _functional as functional
from ._hooks import (add_update_listener, remove_update_listener, set_solver_post_hook,
                     set_solver_pre_hook, unset_solver_post_hook, unset_solver_pre_hook)
from ._optimizer import Optimizer
from ._solver import (AMSGRAD, AdamW, Adam, AMSGrad, Momentum, Nesterov, Sgd, Solver,
                      SolverState)
from ._solver_nnabla import (AMSBound, AdaBelief, AdaBound, Adadelta, Adagrad, Adamax, Lamb, Lars,
                             Lion, RMSprop, RMSpropGraves, SgdW)
from ._state_layout import end_to_end, new_states

__all__ = ["Optimizer", "Solver", "SolverState", "Sgd", "Momentum", "Nesterov", "Adam", "AdamW",
           "AMSGRAD", "AMSGrad", "RMSprop", "Adagrad", "Adadelta", "Lion", "Adamax", "AdaBelief",
           "AdaBound", "AMSBound", "Lamb", "Lars", "SgdW", "RMSpropGraves", "functional"]
# NNabla's solver hooks (``nn.set_solver_pre_hook``, ...: ``_hooks.py``)
__all__ += ["set_solver_pre_hook", "set_solver_post_hook", "unset_solver_pre_hook",
            "unset_solver_post_hook"]
# Stadyn's: told which parameters each update wrote (``_hooks.py``; not an NNabla name)
__all__ += ["add_update_listener", "remove_update_listener"]
# Stadyn's: states of many parameters end to end in one buffer (``_state_layout.py``)
__all__ += ["end_to_end", "new_states"]
