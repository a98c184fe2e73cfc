"""``nnabla.initializer`` on Stadyn."""

from ...parametric.initializers import *  # noqa: F401,F403
from ...parametric.initializers import __all__  # noqa: F401
