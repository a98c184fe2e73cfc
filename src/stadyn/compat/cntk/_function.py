"""CNTK's ``Function``/``Variable`` face over Stadyn Variables, and the op and layer adapters.

CNTK programs pass ``Function`` objects around: graph outputs with ``.parameters``,
``.arguments``, ``.shape`` (per sample, no batch axis), ``.eval``, ``.save``; inputs made by
``input_variable``; layers that are Functions applied to other Functions.  Here a
:class:`Function` wraps one Stadyn :class:`~stadyn.graph.Variable` (the batch axis is the
first axis); ops and layers unwrap their arguments, call Stadyn, and wrap the result.  Behaviour
lives in Stadyn; this module only renames and adapts.
"""

from __future__ import annotations

import functools
import itertools
import os
from typing import Any, Callable

import numpy as np
import torch

from ...graph import Subgraph, Variable, topological_nodes, training
from ...train._trainer import feed

__all__ = ["Function", "unwrap", "wrap", "adapt", "input_variable", "constant", "parameter",
           "load_model", "Constant", "Parameter"]

_constant_ids = itertools.count()


class Function:
    """A CNTK Function: one output of the graph (or an input, constant or parameter)."""

    __slots__ = ("variable", "name", "kind")

    def __init__(self, variable: Variable, name: str = "", kind: str = "output"):
        self.variable = variable
        self.name = name
        self.kind = kind

    # -- what a CNTK Function offers -----------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The per-sample shape (CNTK's static shape, without the batch axis)."""
        shape = self.variable.shape
        return tuple(shape[1:]) if self.kind in ("input", "output") else tuple(shape)

    @property
    def dtype(self):
        return self.variable.dtype

    @property
    def output(self) -> "Function":
        return self

    @property
    def outputs(self) -> list["Function"]:
        return [self]

    @property
    def parameters(self) -> list["Function"]:
        """The learnable parameters this Function depends on, in creation order."""
        return [Function(v, v.name, "parameter") for v in Subgraph([self.variable]).parameters
                if v.need_grad]

    @property
    def constants(self) -> list["Function"]:
        """The named values without a gradient this Function depends on (CNTK calls a
        parameter that takes no gradient, such as a running mean, a Constant)."""
        return [Function(v, v.name, "constant") for v in Subgraph([self.variable]).parameters
                if not v.need_grad]

    @property
    def arguments(self) -> list["Function"]:
        """The inputs this Function depends on (CNTK's ``arguments``)."""
        return [_INPUTS.get(id(v)) or Function(v, "", "input")
                for v in Subgraph([self.variable]).inputs]

    @property
    def root_function(self) -> "Function":
        return self

    @property
    def value(self) -> np.ndarray:
        return self.variable.d

    def eval(self, arguments: Any = None, outputs=None, device=None, as_numpy: bool = True):
        """The value for ``arguments`` (``{input: data}``, or one array for one input), in the
        inference phase."""
        if arguments is not None:
            if not isinstance(arguments, dict):
                args = self.arguments
                if len(args) != 1:
                    raise TypeError(f"eval: give a dict for a Function with {len(args)} inputs")
                arguments = {args[0]: arguments}
            for key, value in arguments.items():
                feed(unwrap(key), value)
        with training(False), torch.no_grad():
            self.variable.forward(clear_buffer=True)
        return self.variable.d.copy()

    def save(self, filename: str | os.PathLike) -> None:
        """Save the network that computes this Function (Stadyn's model file)."""
        from ... import serialize
        folder = os.path.dirname(os.path.abspath(os.fspath(filename)))
        os.makedirs(folder, exist_ok=True)
        serialize.save(filename, [self.variable])

    save_model = save  # the 2017 betas' name

    def find_by_name(self, name: str) -> "Function | None":
        for node in topological_nodes([self.variable]):
            for ref in node._outputs:
                v = ref()
                if v is not None and v.name == name:
                    return Function(v, name)
        return None

    def __call__(self, *args):
        raise TypeError("this CNTK Function is a graph output; apply layers (callables) to "
                        "Functions instead")

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<cntk Function{label} ({self.kind}) shape={self.shape}>"

    def __hash__(self) -> int:
        return id(self.variable)

    def __eq__(self, other) -> bool:
        return isinstance(other, Function) and other.variable is self.variable

    # -- operators -----------------------------------------------------------------------------
    def __add__(self, other):
        return wrap(unwrap(self) + unwrap(other))

    __radd__ = __add__

    def __sub__(self, other):
        return wrap(unwrap(self) - unwrap(other))

    def __rsub__(self, other):
        return wrap(unwrap(other) - unwrap(self))

    def __mul__(self, other):
        return wrap(unwrap(self) * unwrap(other))

    __rmul__ = __mul__

    def __truediv__(self, other):
        return wrap(unwrap(self) / unwrap(other))

    def __neg__(self):
        return wrap(-unwrap(self))

    def __matmul__(self, other):
        from ... import functions as F
        return wrap(F.affine(unwrap(self), unwrap(other)))


# Input Functions by Variable id, so ``arguments`` returns the user's own input objects.
_INPUTS: dict[int, Function] = {}


def unwrap(value: Any) -> Any:
    """The Stadyn Variable inside a CNTK Function (other values unchanged)."""
    if isinstance(value, Function):
        return value.variable
    if isinstance(value, (list, tuple)):
        return type(value)(unwrap(v) for v in value)
    return value


def wrap(value: Any) -> Any:
    """Stadyn Variables (also inside tuples) as CNTK Functions."""
    if isinstance(value, Variable):
        return Function(value)
    if isinstance(value, tuple):
        return tuple(wrap(v) for v in value)
    return value


def adapt(fn: Callable, name: str | None = None) -> Callable:
    """A Stadyn function that takes and returns CNTK Functions (keyword ``name`` dropped)."""
    @functools.wraps(fn)
    def adapted(*args, name: str = "", **kwargs):
        out = wrap(fn(*unwrap(args), **{k: unwrap(v) for k, v in kwargs.items()}))
        if name and isinstance(out, Function):
            out.name = name
        return out
    if name:
        adapted.__name__ = name
    return adapted


def input_variable(shape, dtype=np.float32, needs_gradient: bool = False, is_sparse: bool = False,
                   dynamic_axes=None, name: str = "") -> Function:
    """An input with per-sample ``shape`` (the batch axis is added; its size follows the data).

    Example:
        >>> x = input_variable((3, 32, 32))
        >>> x.shape, x.variable.shape
        ((3, 32, 32), (1, 3, 32, 32))
    """
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    var = Variable((1,) + shape, need_grad=needs_gradient, dtype=dtype)
    f = Function(var, name, "input")
    _INPUTS[id(var)] = f
    return f


def constant(value=None, shape=None, dtype=np.float32, device=None, name: str = "") -> Function:
    """A constant (no gradient); broadcasts against batched inputs."""
    arr = np.asarray(0.0 if value is None else value, dtype=dtype)
    if shape is not None:
        arr = np.broadcast_to(arr, tuple(shape)).copy()
    var = Variable.from_numpy_array(arr)
    var.name = name or f"constant{next(_constant_ids)}"
    return Function(var, var.name, "constant")


Constant = constant


def parameter(shape=None, init=None, dtype=np.float32, device=None, name: str = "") -> Function:
    """A learnable parameter, created in the parameter registry under ``name``."""
    from ...layers._init import glorot_uniform, initial_value
    from ...parametric import get_parameter_or_create
    shape = tuple(int(s) for s in (shape or ()))
    init = glorot_uniform() if init is None else init
    fan_in = shape[0] if shape else 1
    fan_out = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    var = get_parameter_or_create(name or f"parameter{next(_constant_ids)}", shape,
                                  initial_value(init, shape, fan_in, fan_out))
    return Function(var, var.name or "", "parameter")


Parameter = parameter


def load_model(filename: str | os.PathLike, device=None) -> Function:
    """Load a model saved by ``Function.save`` (Stadyn's model file); returns its output."""
    from ... import serialize
    network = serialize.load(filename)
    outputs = list(network.outputs.values())
    for name, var in network.inputs.items():
        _INPUTS[id(var)] = Function(var, name, "input")
    return Function(outputs[0], next(iter(network.outputs)))
