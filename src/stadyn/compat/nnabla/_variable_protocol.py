"""The Python protocol of NNabla's ``nn.Variable``: indexing (``x[key]``, ``x[key] = v``),
truth, ``==``, ``len()``, ``abs()``, ``np.asarray(x)`` and the repr, as NNabla 1.39 has them
(``VariableProtocol``, mixed into ``_variable.Variable`` before Stadyn's Variable, whose own
``len()``, ``==`` and ``__array__`` differ).

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> x = nn.Variable((3, 2))
    >>> bool(x), x == x, [v.shape for v in x], repr(x).startswith("<Variable((3, 2)")
    (True, True, [(2,), (2,), (2,)], True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...graph import Variable as _Core, data_of, grad_of
from ._float_inputs import as_float32
from ._indexing import getitem, setitem
from ._ndarray import NdArray
from ._variable_identity import same_variable, share_identity, variable_hash

__all__ = ["VariableProtocol"]


class VariableProtocol:
    """What Python's operators and built-ins do with an NNabla Variable (see the module
    docstring); ``x[key] = v`` builds its graph with the Variable's class
    (``_op_output_class``: NNabla's ``Variable``).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> x = nn.Variable.from_numpy_array(np.arange(4.0))
        >>> y = x[1:3]; y.forward(); y.d.tolist()
        [1.0, 2.0]
    """

    __slots__ = ()

    def __getitem__(self, key) -> Any:
        """``x[key]``: NumPy-like indexing in the graph, as NNabla's (``_indexing.py``):
        ``x[:, 0, 1:3]`` is a ``slice`` (and a ``reshape``), ``x[[1, 0]]`` a ``gather_nd``."""
        return getitem(self, key)

    def __setitem__(self, key, value) -> None:
        """``x[key] = value``, as NNabla's: ``x`` becomes the output of a graph that writes
        ``value`` (a Variable, an NdArray, an array or a number, broadcast to the indexed
        shape) into what ``x`` was (``_indexing.setitem``); gradients reach the old ``x``
        except where it was overwritten, and ``value`` where it was written.

        Example:
            >>> import numpy as np, stadyn.compat.nnabla as nn
            >>> x = nn.Variable.from_numpy_array(np.zeros((2, 3)))
            >>> x[1, ::2] = 7.0
            >>> x.forward(); x.d.tolist()
            [[0.0, 0.0, 0.0], [7.0, 0.0, 7.0]]
        """
        if not isinstance(value, _Core):
            arr = value.data if isinstance(value, NdArray) else np.asarray(value)
            value = self._op_output_class.from_numpy_array(np.asarray(arr, np.float32))
        old = self._op_output_class(tuple(self.shape), need_grad=self.need_grad)
        if self.parent is None:             # a leaf: the old one holds its value and gradient
            _Core.data.fset(old, data_of(self))
            if grad_of(self) is not None:
                _Core.grad.fset(old, grad_of(self))
        else:                               # the output of its function is the old one now
            old.rewire_as(self)
        result = setitem(old, key, as_float32(value))
        self.rewire_as(result)
        share_identity(self, result)        # (NNabla's rewire_on: the output's nbla::Variable)
        # NNabla's rewire copies the flags of the function's output: ``x`` needs a gradient
        # when the old ``x`` or ``value`` does (steal_variable_from_to, computation_graph.cpp)
        _Core.need_grad.fset(self, result.need_grad)

    def __len__(self) -> int:
        """Refused, as NNabla 1.39's Variable has no ``len()`` (``TypeError``); iterating still
        goes over the first axis (``x[0]``, ``x[1]``, ... until an ``IndexError``), as there.

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> x = nn.Variable((3, 2))
            >>> [v.shape for v in x]
            [(2,), (2,), (2,)]
        """
        raise TypeError("object of type 'Variable' has no len() (NNabla 1.39's has none: "
                        "use x.shape[0])")

    def __bool__(self) -> bool:
        """A Variable is true (NNabla 1.39's, whatever its shape or values)."""
        return True

    def __eq__(self, other) -> bool:
        """``x == y``: whether ``x`` and ``y`` hold one C++ ``nbla::Variable``, as NNabla
        1.39's (``_variable.pyx``): ``x.get_unlinked_variable()`` equals ``x``, and so does a
        Variable ``rewire_on(x)`` rewired; comparing with anything else (a number, None, an
        NdArray) is a ``TypeError``, as NNabla's (so is ``1.0 in [x]``).  Not an element-wise
        comparison: that is ``F.equal(x, y)``.  (``_variable_identity.py``)

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> x = nn.Variable((2,))
            >>> x == x, x != nn.Variable((2,)), x == x.get_unlinked_variable()
            (True, True, True)
        """
        if not isinstance(other, _Core):
            raise TypeError(f"Cannot convert {type(other).__name__} to nnabla Variable "
                            "(NNabla 1.39 compares a Variable with Variables only; for "
                            "element-wise comparison use F.equal / F.equal_scalar)")
        return same_variable(self, other)

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        """The hash of the ``nbla::Variable`` this Variable holds, as NNabla 1.39's: a view
        (``get_unlinked_variable``) hashes as its source; ``rewire_on`` changes it.

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> x = nn.Variable((2,))
            >>> hash(x.get_unlinked_variable()) == hash(x)
            True
        """
        return variable_hash(self)

    def __abs__(self):
        """Refused, as NNabla 1.39's Variable takes no ``abs()`` (``TypeError``): use
        ``F.abs(x)``."""
        raise TypeError("bad operand type for abs(): 'Variable' (NNabla 1.39 has no abs() of "
                        "a Variable: use F.abs(x))")

    def __array__(self, dtype=None, copy=None):
        """NumPy sees a Variable as one object (``np.asarray(x)`` is a 0-d object array), as
        NNabla's, whose Variable has no ``len()``: not as a sequence of graph slices ``x[0]``,
        ``x[1]``, ... (Stadyn's Variable has a length, and ``x[i]`` indexes the graph)."""
        out = np.empty((), dtype=object)
        out[()] = self
        return out

    def __repr__(self) -> str:
        return f"<Variable({self.shape}, need_grad={self.need_grad}) at {hex(id(self))}>"
