"""``cntk.layers``."""

from ._layers import *  # noqa: F401,F403
from ._layers import __all__  # noqa: F401
