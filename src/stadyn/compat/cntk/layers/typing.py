"""``cntk.layers.typing``: the argument types of Python functions made Functions
(``@C.Function``, ``Function.with_signature``); see :mod:`stadyn.compat.cntk._signature`.

Example:
    >>> from stadyn.compat.cntk.layers.typing import Tensor, ParameterTensor
    >>> Tensor[3]["shape"], ParameterTensor[2]["dynamic_axes"]
    ((3,), [])
"""

from .._axis import Axis
from .._signature import ParameterTensor, Signature, SparseTensor, Tensor, tensor
from .._variables import Record, Variable

__all__ = ["Tensor", "SparseTensor", "ParameterTensor", "tensor", "Signature", "Axis", "Record",
           "Variable"]
