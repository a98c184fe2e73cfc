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
import weakref
from typing import Any, Callable

import numpy as np
import torch

from ...graph import Subgraph, Variable, forward_all, topological_nodes, training
from ...train._trainer import feed

__all__ = ["Function", "unwrap", "wrap", "adapt", "named", "cntk_name", "batched", "operand",
           "binary",
           "input_variable", "constant", "parameter", "load_model", "Constant", "Parameter"]

_constant_ids = itertools.count()


class Function:
    """A CNTK Function: an output of the graph (or an input, constant or parameter); made by
    ``combine``, several outputs."""

    __slots__ = ("variable", "name", "kind", "members")

    def __init__(self, variable: Variable, name: str = "", kind: str = "output",
                 members: "list[Function] | None" = None):
        self.variable = variable
        self.name = name
        self.kind = kind
        self.members = members

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
        """The only output (a Function made by ``combine`` has several: see ``outputs``)."""
        if self.members is not None and len(self.members) > 1:
            raise ValueError(f"this Function has {len(self.members)} outputs; use .outputs")
        return self

    @property
    def outputs(self) -> list["Function"]:
        return list(self.members) if self.members is not None else [self]

    def _roots(self) -> list[Variable]:
        return [o.variable for o in self.outputs]

    def _subgraph(self) -> Subgraph:
        return Subgraph(self._roots())

    @property
    def parameters(self) -> list["Function"]:
        """The learnable parameters this Function depends on, in creation order."""
        return [Function(v, cntk_name(v), "parameter") for v in self._subgraph().parameters
                if v.need_grad]

    @property
    def constants(self) -> list["Function"]:
        """The constants (and batch-normalisation statistics) this Function depends on."""
        return [Function(v, cntk_name(v), "constant") for v in self._subgraph().parameters
                if not v.need_grad]

    @property
    def arguments(self) -> list["Function"]:
        """The inputs this Function depends on (CNTK's ``arguments``)."""
        return [Function(v, _INPUTS.get(v, ""), "input") for v in self._subgraph().inputs]

    @property
    def needs_gradient(self) -> bool:
        """Whether gradients flow to this input or parameter."""
        return bool(self.variable.need_grad)

    @property
    def root_function(self) -> "Function":
        return self

    @property
    def value(self) -> np.ndarray:
        """A copy of a parameter's or constant's value (settable, as CNTK's
        ``Parameter.value``)."""
        return self.variable.d.copy()

    @value.setter
    def value(self, array) -> None:
        self.variable.d = np.asarray(array, dtype=self.variable.dtype)

    def _feed(self, arguments: Any, what: str) -> None:
        if arguments is None:
            return
        if not isinstance(arguments, dict):
            args = self.arguments
            if len(args) != 1:
                raise TypeError(f"{what}: give a dict for a Function with {len(args)} inputs")
            arguments = {args[0]: arguments}
        for key, value in arguments.items():
            feed(unwrap(key), value)

    def eval(self, arguments: Any = None, outputs=None, device=None, as_numpy: bool = True):
        """The value for ``arguments`` (``{input: data}``, or one array for one input), in the
        inference phase; ``{output: value}`` for several outputs."""
        wanted = self.outputs if outputs is None else list(outputs)
        _, values = self.forward(arguments, wanted)
        return values[wanted[0]] if len(wanted) == 1 else values

    def forward(self, arguments: Any, outputs=None, keep_for_backward=None, device=None,
                as_numpy: bool = True):
        """CNTK's ``forward``: ``(state, {output: value})``.  With ``keep_for_backward`` the
        graph runs in the training phase and ``state`` is what :meth:`backward` takes; without,
        in the inference phase and ``state`` is None.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> x = C.input_variable(2, needs_gradient=True)
            >>> f = C.sigmoid(x)
            >>> state, out = f.forward({x: np.zeros((1, 2), np.float32)}, [f.output], {f.output})
            >>> out[f.output].tolist()
            [[0.5, 0.5]]
            >>> f.backward(state, {f.output: np.ones((1, 2), np.float32)}, {x})[x].tolist()
            [[0.25, 0.25]]
        """
        self._feed(arguments, "forward")
        wanted = self.outputs if outputs is None else list(outputs)
        keep = bool(keep_for_backward)
        roots = self._roots()
        roots += [unwrap(o) for o in wanted if not any(unwrap(o) is v for v in roots)]
        if keep:
            with training(True):
                forward_all(roots, clear_no_need_grad=True)
        else:
            with training(False), torch.no_grad():
                forward_all(roots, clear_buffer=True)
        return (self if keep else None), {o: unwrap(o).d.copy() for o in wanted}

    def backward(self, state, root_gradients: dict, variables, as_numpy: bool = True) -> dict:
        """CNTK's ``backward``: the gradients w.r.t. ``variables`` (inputs made with
        ``needs_gradient=True``, or parameters) of ``sum(output * root_gradient)`` over the
        given outputs, after a :meth:`forward` that kept state.  Parameters' own ``.grad`` are
        left as they were."""
        if state is None:
            raise ValueError("backward: the forward() before it kept no state (give "
                             "keep_for_backward)")
        roots = [unwrap(root) for root in root_gradients]
        leaves = [v for v in Subgraph(roots).leaves if v.need_grad]
        saved = [(v, v.grad) for v in leaves]
        for v in leaves:
            v.grad = None
        try:
            for root, seed in root_gradients.items():
                unwrap(root).backward(np.asarray(seed, dtype=np.float32))
            return {v: unwrap(v).g.copy() for v in variables}
        finally:
            for v, g in saved:
                v.grad = g

    def grad(self, at: Any, wrt=None, outputs=None, device=None, as_numpy: bool = True,
             grad_root=None):
        """CNTK's ``grad``: the gradient of the sum of this Function's values w.r.t. ``wrt``
        (default: the arguments made with ``needs_gradient=True``); one array for one ``wrt``.
        With ``outputs``, also their values: ``(gradients, values)``."""
        if wrt is None:
            wrt = [a for a in self.arguments if a.needs_gradient]
        root = self.output if grad_root is None else grad_root
        state, values = self.forward(at, [root] + list(outputs or []), {root})
        grads = self.backward(state, {root: np.ones_like(values[root])}, wrt)
        grads = grads[wrt[0]] if len(grads) == 1 else grads
        if not outputs:
            return grads
        values = {o: values[o] for o in outputs}
        return grads, (next(iter(values.values())) if len(values) == 1 else values)

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

    # -- operators (CNTK's: ``x + y`` is ``plus(x, y)``, ...) -----------------------------------
    def __add__(self, other):
        return binary(_F().add2, self, other)

    def __radd__(self, other):
        return binary(_F().add2, other, self)

    def __sub__(self, other):
        return binary(_F().sub2, self, other)

    def __rsub__(self, other):
        return binary(_F().sub2, other, self)

    def __mul__(self, other):
        return binary(_F().mul2, self, other)

    def __rmul__(self, other):
        return binary(_F().mul2, other, self)

    def __truediv__(self, other):
        return binary(_F().div2, self, other)

    def __rtruediv__(self, other):
        return binary(_F().div2, other, self)

    def __neg__(self):
        return wrap(-unwrap(self))

    def __matmul__(self, other):
        return wrap(_F().affine(unwrap(self), unwrap(other)))


def _F():
    from ... import functions
    return functions


def batched(x: Any) -> bool:
    """Whether ``x`` has the batch axis first (inputs and what is computed from them)."""
    return isinstance(x, Function) and x.kind in ("input", "output")


def operand(x: Any) -> Any:
    """An op's operand as Stadyn takes it: Functions unwrapped, NumPy arrays (and lists) as
    constants, Python numbers as they are."""
    if isinstance(x, Function):
        return x.variable
    if isinstance(x, (np.ndarray, list, tuple)):
        return Variable.from_numpy_array(np.asarray(x, dtype=np.float32))
    return x


def binary(fn: Callable, left: Any, right: Any) -> Function:
    """``fn(left, right)`` with CNTK's broadcasting: the sample axes align on the right, the batch
    axis apart (a batched operand of lower sample rank gets axes of size 1 after its batch
    axis)."""
    a, b = operand(left), operand(right)
    rank_a = len(a.shape) - 1 if batched(left) else getattr(a, "ndim", 0)
    rank_b = len(b.shape) - 1 if batched(right) else getattr(b, "ndim", 0)
    if batched(left) and rank_a < rank_b:
        a = _F().reshape(a, (-1,) + (1,) * (rank_b - rank_a) + tuple(a.shape[1:]))
    if batched(right) and rank_b < rank_a:
        b = _F().reshape(b, (-1,) + (1,) * (rank_a - rank_b) + tuple(b.shape[1:]))
    return wrap(fn(a, b))


# Stadyn's names for batch normalisation's parameters and statistics, and CNTK's.
_BN_NAMES = {"beta": "bias", "gamma": "scale", "mean": "aggregate_mean",
             "var": "aggregate_variance"}


def cntk_name(v: Variable) -> str:
    """A parameter's CNTK name: the last part of its scope path (``dense/W`` is ``W``), with
    batch normalisation's names as CNTK's layer gives them."""
    scope, _, last = (v.name or "").rpartition("/")
    if scope.rpartition("/")[2].startswith("batchnormalization"):
        return _BN_NAMES.get(last, last)
    return last


# The names of the Variables made by ``input_variable`` (and of loaded models' inputs).
_INPUTS: "weakref.WeakKeyDictionary[Variable, str]" = weakref.WeakKeyDictionary()


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


def named(out: Function, name: str) -> Function:
    """``out`` named ``name`` (found by ``find_by_name``); an unnamed call leaves it as is."""
    if name:
        out.name = name
        if out.variable.parent is not None:   # a leaf's name says what it is: keep it
            out.variable.name = name
    return out


def adapt(fn: Callable, name: str | None = None) -> Callable:
    """A Stadyn function that takes and returns CNTK Functions (keyword ``name`` dropped)."""
    @functools.wraps(fn)
    def adapted(*args, name: str = "", **kwargs):
        out = wrap(fn(*unwrap(args), **{k: unwrap(v) for k, v in kwargs.items()}))
        return named(out, name) if isinstance(out, Function) else out
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
    _INPUTS[var] = name
    return Function(var, name, "input")


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
    from ...layers import glorot_uniform, initial_value
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
        _INPUTS[var] = name
    return Function(outputs[0], next(iter(network.outputs)))
