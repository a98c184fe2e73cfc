"""``stadyn.functions`` (``F``): one function per op of the catalog, NNabla's names and arguments.

Each function builds a graph node; in dynamic mode (:func:`stadyn.auto_forward`) it also runs at
once.  The list below is derived from the catalog, not kept by hand.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable((2, 3))
    >>> y = F.mean(F.relu(x))
    >>> x.d = [[1, -1, 2], [0, 3, -5]]
    >>> y.forward()
    >>> float(y.d)
    1.0
"""

from .ops import CATALOG as _CATALOG
from .ops import function_of as _function_of

__all__ = sorted(_CATALOG)
globals().update({_name: _function_of(_name) for _name in __all__})
