"""The 2017 betas' ``cntk.learner``."""

from .learners import *  # noqa: F401,F403
from .learners import __all__  # noqa: F401
