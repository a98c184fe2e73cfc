"""``nnabla.solver``: the module NNabla 1.39 defines its solver classes in (``nnabla.solvers``
re-exports them); its tutorials write ``import nnabla.solver as S``.  The same classes as
:mod:`stadyn.compat.nnabla.solvers`.

Example:
    >>> import stadyn.compat.nnabla.solver as S
    >>> import stadyn.compat.nnabla.solvers as SS
    >>> S.Adam is SS.Adam
    True
"""

from .solvers import *  # noqa: F401,F403
from .solvers import __all__  # noqa: F401
