"""``cntk.layers.typing``: the argument types of Python functions made Functions
(``@C.Function``, ``Function.with_signature``); see :mod:`stadyn.compat.cntk._signature`.
``Sequence[Tensor[...]]`` (``SequenceOver[axis][...]``) is the type of a sequence: an input
made from it has the sequence axis.

Example:
    >>> from stadyn.compat.cntk.layers.typing import Tensor, ParameterTensor, Sequence
    >>> Tensor[3]["shape"], ParameterTensor[2]["dynamic_axes"]
    ((3,), [])
    >>> Sequence[Tensor[2]]["dynamic_axes"]
    [Axis('defaultBatchAxis'), Axis('defaultDynamicAxis')]
"""

import numpy as np

from .._axis import Axis
from .._argument_types import ParameterTensor, Signature, SparseTensor, Tensor, _Type, tensor
from .._variables import Record, Variable

# ``np``: CNTK 2.7's module has no __all__, so its star import hands out its NumPy too
__all__ = ["np", "Tensor", "SparseTensor", "ParameterTensor", "tensor", "Signature", "Axis",
           "Record", "Variable", "Sequence", "SequenceOver", "SequenceOverMeta"]


class _SequenceOf:
    """``Sequence[item type]``: the item type with the batch axis and a sequence axis."""

    def __init__(self, axes):
        self._axes = list(axes)

    def __getitem__(self, item_type) -> _Type:
        if not isinstance(item_type, _Type) or len(item_type["dynamic_axes"]) != 1:
            raise TypeError(f"Sequence[...] takes a Tensor[...] or SparseTensor[...] type, got "
                            f"{item_type!r} (sequences of sequences are not supported)")
        fields = {"dtype": item_type["dtype"]} if "dtype" in item_type else {}
        made = _Type(shape=item_type["shape"], **fields, is_sparse=item_type["is_sparse"],
                     dynamic_axes=list(self._axes))
        return made.named(f"Sequence[{item_type}]") if self is Sequence else made

    def __repr__(self) -> str:
        return "Sequence"


class SequenceOverMeta(type):
    """The type of ``SequenceOver``: ``SequenceOver[axis]`` is ``Sequence`` over ``axis``.

    Example:
        >>> from stadyn.compat.cntk.layers.typing import SequenceOver, Tensor, Axis
        >>> SequenceOver[Axis("words")][Tensor[4]]["shape"]
        (4,)
    """

    def __getitem__(cls, axis) -> _SequenceOf:
        return _SequenceOf([Axis.default_batch_axis(), axis])


Sequence = _SequenceOf(Axis.default_input_variable_dynamic_axes())
SequenceOver = SequenceOverMeta("SequenceOver", (), {})
