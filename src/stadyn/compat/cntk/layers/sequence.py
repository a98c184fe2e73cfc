"""``cntk.layers.sequence``: the recurrent layers (``Recurrence``, ``RecurrenceFrom``, ``Fold``,
``UnfoldFrom``, ``Delay``, ``PastValueWindow``), the steps they take (``LSTM``, ``GRU``,
``RNNStep``, ``RNNUnit``) and the names CNTK's module imports beside them.

Example:
    >>> import stadyn.compat.cntk as C
    >>> from stadyn.compat.cntk.layers.sequence import Recurrence, LSTM
    >>> Recurrence is C.layers.Recurrence, LSTM is C.layers.LSTM
    (True, True)
"""

from .._defaults import default_override_or, get_default_override
from .._blocks import BlockFunction
from .._function import Function
from .._layers import Stabilizer, identity
from .._recurrent import GRU, LSTM, Fold, Recurrence, RecurrenceFrom, RNNStep
from .._sequence_layers import (Delay, ForwardDeclaration, PastValueWindow, RNNUnit,
                               UnfoldFrom)
from .._variables import Constant, InferredDimension, Parameter, Record, placeholder
from ..initializer import glorot_uniform
from ..ops import (alias, combine, reconcile_dynamic_axes, sigmoid, slice, softplus, splice,
                   tanh, times)

__all__ = ["Delay", "ForwardDeclaration", "PastValueWindow", "RNNUnit", "UnfoldFrom",
           "Recurrence", "RecurrenceFrom", "Fold", "LSTM", "GRU", "RNNStep", "Stabilizer",
           "identity", "BlockFunction", "Function", "Constant", "InferredDimension", "Parameter",
           "Record", "placeholder", "default_override_or", "get_default_override",
           "glorot_uniform", "alias", "combine", "reconcile_dynamic_axes", "sigmoid", "slice",
           "softplus", "splice", "tanh", "times", "UntestedBranchError"]


def UntestedBranchError(name: str):
    """Raise for a code path CNTK marks as untested.

    Example:
        >>> UntestedBranchError("x")
        Traceback (most recent call last):
        NotImplementedError: Untested code branch: x
    """
    raise NotImplementedError(f"Untested code branch: {name}")
