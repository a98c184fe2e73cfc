"""``nnabla.functions`` on Stadyn (the op catalog under NNabla's names)."""

from ...functions import *  # noqa: F401,F403
from ...functions import __all__  # noqa: F401
