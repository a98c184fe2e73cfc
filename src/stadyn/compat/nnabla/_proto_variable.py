"""NNabla 1.39's ``nn.ProtoVariable`` (``nnabla.core.graph_def``): the placeholder of its proto
graphs.  In NNabla, ``F.relu(nn.ProtoVariable((64, 3)))`` records a ``ReLU`` in a proto graph
(``with nn.graph_def.graph() as g: ...``) that is then saved or instantiated.

Stadyn records no proto graphs of ``ProtoVariable``: a static Stadyn graph built from
``nn.Variable`` is the same description, saved with ``nnabla.utils.save.save`` or described by
``nn.graph_def.create_graph_from_variable`` (``graph_def.py``, whose networks list their
variables as ``ProtoVariable`` s).  So a ``ProtoVariable`` here is the object
and its description (``name``, ``shape``, ``need_grad``, ``type``, ``initializer``,
``repeat_id``, ``clone()``, ``proto``), and a function or operator given one raises a
``TypeError`` saying so.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

__all__ = ["ProtoVariable", "refusing_proto_variables"]

_NO_GRAPHS = ("nn.ProtoVariable: NNabla's proto graphs (nnabla.core.graph_def) are not in Stadyn; "
              "build the network from nn.Variable (a static graph) and save it with "
              "nnabla.utils.save.save")


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

    def _no_graphs(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(_NO_GRAPHS)

    __neg__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_graphs
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _no_graphs
    __array__ = _no_graphs


def refusing_proto_variables(fn: Callable) -> Callable:
    """``fn`` (an ``F`` function) whose failure on a ``ProtoVariable`` argument is the
    ``TypeError`` saying Stadyn has no proto graphs (nothing is checked until it fails).

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> F.relu(nn.ProtoVariable((2,)))
        Traceback (most recent call last):
        TypeError: nn.ProtoVariable: NNabla's proto graphs (nnabla.core.graph_def) are not in ...
    """
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if any(isinstance(a, ProtoVariable) for a in list(args) + list(kwargs.values())):
                raise TypeError(_NO_GRAPHS) from exc
            raise
    return call
