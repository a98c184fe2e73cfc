"""``cntk.core``: CNTK 2.7's module of values and arrays (``from cntk.core import Value``, as
CNTK's Examples/ReinforcementLearning/DeepQNeuralNetwork.py and its object-detection scripts
write it).  The same objects as the package's ``cntk.Value``, ``cntk.NDArrayView``, ...

Example:
    >>> import numpy as np
    >>> from stadyn.compat.cntk.core import Value
    >>> Value.one_hot([[1, 0]], 3).shape
    (1, 2, 3)
"""

from ._values import NDArrayView, Value, asarray, asvalue
from .device import DeviceKind, cpu, use_default_device
from .ops.functions import _user_function as user_function

__all__ = ["DeviceKind", "NDArrayView", "Value", "asarray", "asvalue", "cpu",
           "use_default_device", "user_function"]
