"""``cntk.layers.models``: layers that stand for a kind of model rather than a generic block;
CNTK 2.7 keeps ``AttentionModel`` here (``cntk.layers.models.attention``) and re-exports it
from ``cntk.layers``.

Example:
    >>> import stadyn.compat.cntk as C
    >>> from stadyn.compat.cntk.layers.models.attention import AttentionModel
    >>> AttentionModel is C.layers.AttentionModel
    True
"""

from .attention import *  # noqa: F401,F403  (as CNTK's module does)
from .attention import __all__  # noqa: F401
