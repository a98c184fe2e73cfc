"""``nnabla.functions`` on Stadyn (the op catalog under NNabla's names; the ops that exist
only for CNTK's semantics, ``cntk_*``, are left out)."""

from ...functions import *  # noqa: F401,F403
from ...functions import __all__ as _all

__all__ = [name for name in _all if not name.startswith("cntk_")]
