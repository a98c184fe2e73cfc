"""The argument types of ``cntk.layers.typing``: ``Tensor[3]``, ``SparseTensor[...]``,
``ParameterTensor[...]`` (``Tensor[np.float64, 3]`` with a data type), ``tensor`` (of any
shape) and the ``Signature`` decorator; ``_signature`` makes the arguments of those types.

Example:
    >>> from stadyn.compat.cntk.layers.typing import Tensor
    >>> str(Tensor[2, 3]), Tensor[2, 3]["shape"]
    ('Tensor[2,3]', (2, 3))
"""

from __future__ import annotations

import inspect

import numpy as np

from ._axis import Axis
from ._variables import Record

__all__ = ["Tensor", "SparseTensor", "ParameterTensor", "tensor", "Signature"]


class _Type(Record):
    """An argument's type: ``shape``, ``is_sparse``, ``dynamic_axes`` (and ``dtype`` when one
    was given, ``Tensor[np.float64, 3]``).  A type is abstract: calling it is refused, as
    CNTK 2.7 refuses it.

    Example:
        >>> import numpy as np
        >>> from stadyn.compat.cntk.layers.typing import Tensor
        >>> str(Tensor[np.float64, 3]), Tensor[np.float64, 3].dtype
        ('Tensor[np.float64,3]', <class 'numpy.float64'>)
    """

    def named(self, name: str) -> "_Type":
        """Itself, shown as ``name`` (``Tensor[13,42]``)."""
        object.__setattr__(self, "_type_name", name)
        return self

    def __call__(self, *args, **kwargs):
        raise TypeError(f"abstract type {self} cannot be instantiated; use "
                        f"'input_variable(**{self})' instead")

    def __str__(self) -> str:
        return self.__dict__.get("_type_name") or dict.__repr__(self)


_DTYPES = (np.float32, np.float64, np.float16)


class _TypeMaker:
    """``Tensor[shape]`` (``Tensor[dtype, shape...]``): the type of an argument of that
    per-sample shape."""

    def __init__(self, name: str, is_sparse: bool, batch: bool):
        self._name, self._sparse, self._batch = name, is_sparse, batch

    def __getitem__(self, shape) -> _Type:
        shape = tuple(shape) if isinstance(shape, tuple) else (shape,)
        dtype = shape[0] if shape and any(shape[0] is d for d in _DTYPES) else None
        dims = tuple(int(s) for s in (shape[1:] if dtype is not None else shape))
        fields = dict(shape=dims)
        if dtype is not None:
            fields["dtype"] = dtype
        shown = ",".join(str(d) for d in dims)
        if dtype is not None and dtype is not np.float32:     # (CNTK 2.7 omits float32)
            shown = f"np.{dtype.__name__}," + shown
        return _Type(**fields, is_sparse=self._sparse,
                     dynamic_axes=[Axis.default_batch_axis()] if self._batch else []
                     ).named(f"{self._name}[{shown}]")

    def __repr__(self) -> str:
        return self._name


Tensor = _TypeMaker("Tensor", False, True)
SparseTensor = _TypeMaker("SparseTensor", True, True)
ParameterTensor = _TypeMaker("ParameterTensor", False, False)
tensor = _Type(shape=(-2,), is_sparse=False, dynamic_axes=[Axis.default_batch_axis()])


def Signature(*types, **named_types):  # noqa: N802 - CNTK's name
    """A decorator giving a Python function's arguments types (as annotations), read later by
    ``@C.Function``."""
    def decorate(f):
        names = list(inspect.signature(f).parameters)
        f.__annotations__ = {**dict(zip(names, types)), **named_types}
        return f
    return decorate
