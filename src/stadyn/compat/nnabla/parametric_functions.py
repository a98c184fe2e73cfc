"""``nnabla.parametric_functions`` on Stadyn (NNabla also exports ``get_parameter_or_create``
here, the one of ``nnabla``)."""

from ...parametric import get_parameter_or_create
from ...parametric_functions import *  # noqa: F401,F403
from ...parametric_functions import __all__ as _pf_all

__all__ = list(_pf_all) + ["get_parameter_or_create"]
