"""``nnabla.parametric_functions`` on Stadyn."""

from ...parametric_functions import *  # noqa: F401,F403
from ...parametric_functions import __all__  # noqa: F401
