"""``cntk.variables``: inputs, placeholders, parameters and constants.

Example:
    >>> import stadyn.compat.cntk as C
    >>> p = C.variables.Parameter((2,), init=0.5, name="p")
    >>> isinstance(p, C.variables.Parameter), isinstance(p, C.variables.Variable), p.is_parameter
    (True, False, True)
"""

from ._defaults import default_override_or, get_default_override
from ._mixins import TensorOpsMixin, VariableMixin
from ._values import NDArrayView
from ._variables import Constant, Parameter, Record, Variable
from .device import DeviceDescriptor, use_default_device

__all__ = ["Variable", "Parameter", "Constant", "Record", "VariableMixin", "TensorOpsMixin",
           "NDArrayView", "DeviceDescriptor", "default_override_or", "get_default_override",
           "use_default_device"]
