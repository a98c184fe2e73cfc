"""``cntk.ops.functions``: ``Function`` and what goes with it (``CloneMethod``,
``ModelFormat``, ``load_model``, ``BlockFunction``), and ``UserFunction``: an op written in
Python on NumPy arrays.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> class MySigmoid(C.ops.functions.UserFunction):
    ...     def __init__(self, arg, name="MySigmoid"):
    ...         super().__init__([arg], name=name)
    ...     def forward(self, argument, device=None, outputs_to_retain=None):
    ...         s = 1 / (1 + np.exp(-argument))
    ...         return s, s
    ...     def backward(self, state, root_gradients):
    ...         return root_gradients * state * (1 - state)
    ...     def infer_outputs(self):
    ...         x = self.inputs[0]
    ...         return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]
    >>> x = C.input_variable(2, needs_gradient=True)
    >>> f = C.user_function(MySigmoid(x))
    >>> f.eval({x: np.zeros((1, 2), np.float32)}).tolist()
    [[0.5, 0.5]]
    >>> f.grad({x: np.zeros((1, 2), np.float32)}).tolist()
    [[0.25, 0.25]]
"""

from __future__ import annotations

import inspect

import numpy as np

from .... import functions as F
from .. import _graph as G
from .._adapt import operand
from .._blocks import BlockFunction
from .._function import CloneMethod, Function, ModelFormat, load_model
from .._mixins import GraphObject
from .._values import Value
from .._variables import Record, Variable
from ..device import DeviceDescriptor, cpu

__all__ = ["Function", "CloneMethod", "ModelFormat", "BlockFunction", "load_model",
           "UserFunction", "Record", "Value", "Variable", "DeviceDescriptor",
           "cpu"]


class UserFunction(Function):
    """An op in Python: subclass it, pass the inputs to ``__init__`` and write
    ``forward(argument(s), ...)`` returning ``(state, output)``, ``backward(state,
    root_gradients[, variables])`` returning the gradient (one input) or filling
    ``variables`` (several), and ``infer_outputs()`` returning ``[output_variable(...)]``;
    ``cntk.user_function(instance)`` is the Function to use.  One output is supported.
    """

    def __init__(self, inputs, as_numpy: bool = True, attributes=None, name: str = ""):
        self._user_inputs = [i if isinstance(i, GraphObject) else i for i in inputs]
        self._user_name = name
        self.attributes_ = dict(attributes or {})
        outputs = self.infer_outputs()
        if len(outputs) != 1:
            raise ValueError("UserFunction: Stadyn's compat supports one output")
        self._output_type = outputs[0]
        out = F.cntk_user_function(*[operand(i) for i in self._user_inputs],
                                   function=_Call(self))
        G.set_op_name(out, type(self).__name__)
        if name:
            out.name = name
        Function.__init__(self, out)

    @property
    def inputs(self) -> list:
        """The inputs given to ``__init__``."""
        return list(self._user_inputs)

    def infer_outputs(self) -> list:
        """The output's shape and type (``[output_variable(...)]``); override it."""
        raise NotImplementedError("UserFunction.infer_outputs: return [output_variable(...)]")


class _Call:
    """A UserFunction as the ``cntk_user_function`` op calls it (NumPy in and out)."""

    def __init__(self, function: UserFunction):
        self.function = function

    def output_shape(self, input_shapes):
        import torch
        v = self.function._output_type.variable
        shape = tuple(v.shape)
        if G.BATCH(v) and input_shapes:
            shape = (input_shapes[0][0],) + shape[1:]
        return shape, torch.float32 if np.dtype(v.dtype) == np.float32 else torch.float64

    def forward_arrays(self, arrays):
        f = self.function
        state, out = f.forward(arrays[0] if len(arrays) == 1 else list(arrays))
        return state, np.asarray(out, dtype=np.float32)

    def backward_arrays(self, state, gradient):
        f = self.function
        params = inspect.signature(f.backward).parameters
        if len(f._user_inputs) == 1 and len(params) < 3:
            return [np.asarray(f.backward(state, gradient))]
        variables = {i: None for i in f._user_inputs}
        f.backward(state, gradient, variables)
        return [variables[i] for i in f._user_inputs]


def _user_function(user_func: UserFunction) -> Function:
    """The Function of a :class:`UserFunction` instance."""
    return Function(user_func.variable)
