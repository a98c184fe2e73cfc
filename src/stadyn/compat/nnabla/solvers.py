"""``nnabla.solvers`` on Stadyn (Stadyn's functional solver maths, ``stadyn.solvers.functional``,
and the optimizer protocol ``stadyn.solvers.Optimizer`` are not NNabla's and stay out of this
module's names, as are Stadyn's state layout helpers ``end_to_end`` and ``new_states``; NNabla
has the solver hooks at its top level, ``nn.set_solver_pre_hook``)."""

from ...solvers import *  # noqa: F401,F403
from ...solvers import __all__ as _all
from ._context_api import solver_api

__all__ = [name for name in _all
           if name not in ("functional", "Optimizer", "end_to_end", "new_states")
           and "solver_p" not in name and "update_listener" not in name]
# NNabla's decorator passing the current context to a solver factory (``_context_api.py``).
__all__ += ["solver_api"]
