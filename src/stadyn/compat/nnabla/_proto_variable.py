"""NNabla 1.39's ``nn.ProtoVariable`` (``nnabla.core.graph_def``): the placeholder of its proto
graphs.  ``F.relu(nn.ProtoVariable((64, 3)))`` computes nothing: it records a ``ReLU`` in the
proto graph being recorded (``with nn.graph_def.graph() as g: ...``, or the default graph) and
gives its output, another ``ProtoVariable`` (``ReLU_out``); ``graph_def.py`` makes the recorded
network a ``ProtoNetwork`` that is saved or called on ``nn.Variable`` s.

Stadyn records each call on a stand-in: a ``ProtoVariable`` holds an ``nn.Variable`` of its
shape (its own for an input, the function's output for an output), the function is applied to
the stand-ins (building a static graph, computing nothing), and the recorder
(``_proto_recording.py``) names the inputs, the function and its outputs as NNabla names them.
Operators: ``-x``, ``x + y``, ``x - y``, ``x * y``, ``x / y`` record ``MulScalar``, ``Add2`` /
``AddScalar``, ``Sub2`` / ``AddScalar``, ``Mul2`` / ``MulScalar``, ``Div2`` / ``MulScalar`` as
NNabla's (an ``nn.Variable`` operand stands for a new unnamed ``ProtoVariable`` of its shape);
NNabla's ``ProtoVariable`` defines no reflected operators (``2 * x`` is Python's
``TypeError``) and its ``x ** y`` takes three arguments (``TypeError`` too).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from ... import functions as _F
from ._proto_recording import current_recorder
from ._variable import Variable

__all__ = ["ProtoVariable", "recording_proto_variables", "record"]


class _Shape:
    def __init__(self, dims: Sequence[int]):
        self.dim = [int(d) for d in dims]

    def __repr__(self) -> str:
        return f"shape {{ dim: {self.dim} }}"


class _Initializer:
    def __init__(self, kind: str, multiplier: float):
        self.type = kind
        self.multiplier = float(multiplier)

    def __repr__(self) -> str:
        return f"initializer {{ type: {self.type!r} multiplier: {self.multiplier} }}"


class _VariableProto:
    """A ``ProtoVariable``'s description as NNabla's ``Variable`` message holds it."""

    def __init__(self, name: str, kind: str, repeat_id: Sequence[str], shape: Sequence[int]):
        self.name = name
        self.type = kind
        self.repeat_id = list(repeat_id)
        self.shape = _Shape(shape)
        self.initializer: _Initializer | None = None

    def HasField(self, field: str) -> bool:  # noqa: N802 - protobuf's name
        return getattr(self, field, None) is not None

    def __repr__(self) -> str:
        return f"<Variable {self.name!r} {self.type} {self.shape!r}>"


def _multiplier(initializer: Any) -> float:
    kind = type(initializer).__name__.replace("Initializer", "")
    if kind == "Constant":
        return float(initializer.value)
    if kind == "Uniform":
        return float(-initializer.lim[0])
    if kind == "Normal":
        return float(initializer.sigma)
    return 0.0


class ProtoVariable:
    """A variable of a proto graph: its ``shape``, ``name``, ``need_grad`` and ``type``
    (``'Buffer'`` or ``'Parameter'``), as NNabla's (see the module's docstring for what Stadyn
    does not do with it).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> v = nn.ProtoVariable((2, 3), name="x")
        >>> v.shape, v.type, v.proto.shape.dim
        ((2, 3), 'Buffer', [2, 3])
    """

    def __init__(self, shape: Sequence[int], name: str | None = None, need_grad: bool = False,
                 var_type: str = "Buffer"):
        global _MADE
        _MADE = True
        self.name = name
        self.shape = tuple(shape)
        self.need_grad = need_grad
        self.parent = None
        self.required: list = []
        self.type = var_type
        self.info = None
        self.initializer = None
        self.variable_instance = None
        self.repeat_id: list = []
        self.stop = False
        self.delegate = None
        self._proto: _VariableProto | None = None
        self._stand_in: Variable | None = None

    def clone(self) -> "ProtoVariable":
        """A copy: the description, ``parent``, a copy of ``required`` and ``repeat_id``, the
        same ``initializer`` and ``variable_instance``."""
        v = ProtoVariable(self.shape[:], self.name, self.need_grad, self.type)
        v.parent = self.parent
        v.required = self.required.copy()
        v.initializer = self.initializer
        v.info = self.info.copy() if self.info is not None else None
        v.variable_instance = self.variable_instance
        v.repeat_id = self.repeat_id.copy()
        return v

    @property
    def proto(self) -> _VariableProto:
        """The description as NNabla's ``Variable`` message (made once): ``name``, ``type``,
        ``repeat_id``, ``shape.dim`` and, with a constant, uniform or normal initializer,
        ``initializer.type`` and ``.multiplier``."""
        if self._proto is None:
            if not isinstance(self.name, str):
                raise TypeError("ProtoVariable.proto: the variable has no name (NNabla's "
                                "message needs one)")
            proto = _VariableProto(self.name, self.type, self.repeat_id, self.shape)
            if self.initializer:
                proto.initializer = _Initializer(
                    type(self.initializer).__name__.replace("Initializer", ""),
                    _multiplier(self.initializer))
            self._proto = proto
        return self._proto

    def prepare_renaming(self, renames: dict) -> None:
        """Record in ``renames`` the name the ``proto`` was given, if it was changed."""
        if self._proto is not None and self.name != self._proto.name:
            renames[self.name] = self._proto.name

    def __pos__(self) -> "ProtoVariable":
        return self

    def __repr__(self) -> str:
        return f"<ProtoVariable {self.name!r} {self.shape} {self.type}>"

    def _variable(self) -> Variable:
        """The ``nn.Variable`` this stands for in the graph being recorded: a new leaf of its
        shape for an input (also one that an earlier network made, which is an input of the
        network being recorded), the output of the recorded function for an output."""
        recorded = current_recorder().variables
        if self._stand_in is None or (
                self.parent is not None and not any(v is self for v in recorded.values())):
            self._stand_in = Variable(self.shape, need_grad=self.need_grad)
        return self._stand_in

    def __neg__(self) -> Any:
        return record(_F.mul_scalar, (self, -1), {})

    def __add__(self, y: Any) -> Any:
        return _binary(self, y, _F.add2, lambda x, c: record(_F.add_scalar, (x, c), {}))

    def __sub__(self, y: Any) -> Any:
        return _binary(self, y, _F.sub2, lambda x, c: record(_F.add_scalar, (x, -c), {}))

    def __mul__(self, y: Any) -> Any:
        return _binary(self, y, _F.mul2, lambda x, c: record(_F.mul_scalar, (x, c), {}))

    def __truediv__(self, y: Any) -> Any:
        return _binary(self, y, _F.div2,
                       lambda x, c: record(_F.mul_scalar, (x, 1.0 / c), {}))

    def __pow__(self, y: Any, z: Any) -> Any:   # NNabla's: ``x ** y`` passes no ``z``
        if z is not None:
            return NotImplemented
        return _binary(self, y, _F.pow2, lambda x, c: record(_F.pow_scalar, (x, c), {}))



def _binary(x: ProtoVariable, y: Any, two: Callable, scalar: Callable) -> Any:
    """NNabla's ``ProtoVariable`` operator: another ``ProtoVariable`` (an ``nn.Variable`` or
    ``NdArray`` stands for a new one of its shape) records the binary function, anything else
    the scalar one."""
    if isinstance(y, Variable) or type(y).__name__ == "NdArray":
        y = ProtoVariable(y.shape)
    if isinstance(y, ProtoVariable):
        return record(two, (x, y), {})
    return scalar(x, y)


def _holds_proto(a: Any) -> bool:
    return isinstance(a, ProtoVariable) or (
        isinstance(a, (list, tuple)) and any(isinstance(e, ProtoVariable) for e in a))


_HOLDING = (ProtoVariable, list, tuple)     # what can be or hold a ProtoVariable
# whether a ProtoVariable was ever made: until then no F call can be given one, and the check
# of every F call's arguments is skipped (one global read: a program without proto graphs
# pays ~0.3 us a call, where the loop over the arguments cost 0.7-2 us)
_MADE = False


def record(fn: Callable, args: Sequence[Any], kwargs: dict) -> Any:
    """Record ``fn(*args, **kwargs)`` (``args`` holding ``ProtoVariable`` s, also in a list) in
    the current proto graph: ``fn`` applied to their stand-ins, the inputs, the function and
    its outputs named as NNabla 1.39 names them; gives the output ``ProtoVariable`` (a tuple
    of them for several).

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> with nn.graph_def.graph() as g:
        ...     y = F.tanh(nn.ProtoVariable((2, 3)))
        >>> y.name, y.shape, g.default_graph().inputs
        ('Tanh_out', (2, 3), ['Tanh_in'])
    """
    recorder = current_recorder()
    given: list[ProtoVariable] = []
    loose: list[tuple[int, Variable]] = []    # (input index, the parameter's stand-in)
    place = [0]                                # the index of the next variable input

    def stand_in(a: Any) -> Any:
        if isinstance(a, ProtoVariable):
            given.append(a)
            place[0] += 1
            return a._variable()
        if isinstance(a, Variable):
            place[0] += 1
            if a.graph_name is None:         # not a scope's parameter: see _loose_parameter
                loose.append((place[0] - 1, _loose_parameter(a)))
                return loose[-1][1]
            return a
        if isinstance(a, (list, tuple)) and any(isinstance(e, (ProtoVariable, Variable))
                                                for e in a):
            return type(a)(stand_in(e) for e in a)
        return a

    out = fn(*[stand_in(a) for a in args], **{k: stand_in(v) for k, v in kwargs.items()})
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    node = getattr(outs[0], "parent", None) if outs else None
    kind = node.name if node is not None else getattr(fn, "__name__", "Function")
    fname = recorder.function_name(kind)
    for index, leaf in loose:
        leaf.graph_name = recorder.variable_name_after(fname, index)
        recorder.parameters[leaf.graph_name] = leaf
    for pv in given:
        if not any(v is pv for v in recorder.variables.values()):
            if pv.name is None:
                pv.name = recorder.variable_name(kind + "_in")
            recorder.variables[pv.name] = pv
        pv.required.append(fname)
    made = []
    for v in outs:
        name = recorder.variable_name(kind + "_out")
        pv = ProtoVariable(tuple(v.shape), name, False, "Buffer")
        pv.parent = fname
        pv._stand_in = v
        recorder.variables[name] = pv
        made.append(pv)
    recorder.functions[fname] = [pv.name for pv in made]
    recorder.dirty = True
    return made[0] if len(made) == 1 else tuple(made)


def _loose_parameter(v: Variable) -> Variable:
    """The parameter NNabla 1.39 makes of an ``nn.Variable`` (of no parameter scope) given to
    a function with ``ProtoVariable`` s (its ``ProtoNetwork.resolve_function_parameters``): a
    leaf of its shape and ``need_grad`` holding its array, a parameter of its own at each use
    (``F.mul2(F.add2(x, v), v)``: ``Add2_1`` and ``Mul2_1``), named when the function is."""
    leaf = Variable(tuple(v.shape), need_grad=bool(v.need_grad))
    leaf.data = v.data
    return leaf


def recording_proto_variables(fn: Callable) -> Callable:
    """``fn`` (an ``F`` function) recording itself in the current proto graph when an argument
    is a ``ProtoVariable`` (see :func:`record`); ``fn`` itself otherwise.

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> with nn.graph_def.graph(name="n") as g:
        ...     y = F.relu(nn.ProtoVariable((2,), name="x"))
        >>> y.name, list(g.networks["n"].functions)
        ('@n/ReLU_out', ['@n/ReLU'])
    """
    @functools.wraps(fn)
    def call(*args, **kwargs):
        # (every F call of every program passes here: skipped until a ProtoVariable is made,
        # then a loop, not any() over a generator)
        if not _MADE:
            return fn(*args, **kwargs)
        for a in args:
            if isinstance(a, _HOLDING) and _holds_proto(a):
                return record(fn, args, kwargs)
        if kwargs:
            for a in kwargs.values():
                if isinstance(a, _HOLDING) and _holds_proto(a):
                    return record(fn, args, kwargs)
        return fn(*args, **kwargs)
    return call
