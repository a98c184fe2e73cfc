"""``stadyn.solvers`` (``S``): NNabla's solvers on multi-tensor solver maths."""

from . import _functional as functional
from ._solver import (AdamW, Adadelta, Adagrad, Adam, AMSGrad, Lion, Momentum, Nesterov, RMSprop,
                      Sgd, Solver)

__all__ = ["Solver", "Sgd", "Momentum", "Nesterov", "Adam", "AdamW", "AMSGrad", "RMSprop",
           "Adagrad", "Adadelta", "Lion", "functional"]
