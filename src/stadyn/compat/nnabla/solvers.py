"""``nnabla.solvers`` on Stadyn."""

from ...solvers import *  # noqa: F401,F403
from ...solvers import __all__  # noqa: F401
