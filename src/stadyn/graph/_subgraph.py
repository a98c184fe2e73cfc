"""The part of a graph some roots depend on, with the role of each leaf.

A :class:`Subgraph` is what every consumer of a graph starts from — the runner lowering it, a
compiled step tracing it, the Trainer finding the inputs to feed, model files and ONNX export
sorting leaves into inputs, parameters and constants, CNTK's ``Function.arguments``.  Its op
nodes come in execution order, its leaves in the order the nodes first use them (then the roots
that are leaves themselves), and each leaf has exactly one role, decided here and nowhere else:

* **view** — a leaf that reads a parameter's value (:meth:`Variable.unlinked` of a parameter:
  a frozen view such as ``get_parameter_or_create(..., as_need_grad=False)``);
* **parameter** — any other leaf with a name: the parameter registry names every entry
  (``cnn/conv1/conv/W``, trainable weights and running statistics alike), and CNTK's named
  constants are named too;
* **input** — every other leaf: the values a caller feeds (with or without ``need_grad``);
  with explicit ``inputs``, only those;
* **constant** — with explicit ``inputs``, an unnamed leaf not among them (a value the graph
  holds, saved with it).

:func:`value_key` is the one key under which a Variable's value is found while a graph is
interpreted, lowered, saved or exported: a leaf by its identity, an op output by its node and
position (so two Variables standing for the same output share it).
"""

from __future__ import annotations

from typing import Hashable, Sequence

import torch

from ._deferred_layout import settled
from ._held_values import held_variables, keeps_value
from ._tensors import data_of, grad_of
from ._variable import FunctionNode, Variable, topological_nodes
from ._variable_arrays import grad_follows_alias

__all__ = ["Subgraph", "value_key", "output_key", "leaf_tensor", "INPUT", "PARAMETER", "VIEW",
           "CONSTANT"]

INPUT, PARAMETER, VIEW, CONSTANT = "input", "parameter", "view", "constant"


def output_key(node: FunctionNode, index: int) -> Hashable:
    """The :func:`value_key` of output ``index`` of ``node``."""
    return (id(node), index)


def value_key(v: Variable) -> Hashable:
    """The key of the value ``v`` holds: a leaf by identity, an op output by (node, position).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import output_key, value_key
        >>> x = sd.Variable((2,))
        >>> y = F.relu(x)
        >>> value_key(x) == id(x), value_key(y) == output_key(y.parent, 0)
        (True, True)
    """
    return id(v) if v.parent is None else (id(v.parent), v._index)


def leaf_tensor(v: Variable, value: torch.Tensor | None = None) -> torch.Tensor:
    """The tensor a leaf feeds into a graph run.  A view's (:meth:`Variable.unlinked`) is its
    source's value (``value``, where given: the source's value in the run, ``_late_views.py``),
    detached; when the view needs a gradient, it is a fresh leaf tensor whose
    ``.grad`` is the source's gradient buffer, kept as the view's tensor for the backward to
    accumulate into: the source sees the gradient (NNabla shares the arrays).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.graph import leaf_tensor
        >>> w = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
        >>> leaf_tensor(w) is w.data, leaf_tensor(w.unlinked(need_grad=False)).requires_grad
        (True, False)
    """
    if v._alias is not None:
        t = (data_of(v._alias) if value is None else value).detach()
        if v._need_grad and t.is_floating_point():
            own = None if grad_follows_alias(v) else Variable.grad.fget(v)
            t.requires_grad_(True)
            if own is None or (own.shape == t.shape and own.dtype == t.dtype):
                t.grad = _shared_grad(v._alias, t) if own is None and grad_follows_alias(v) \
                    else own                # (a view keeping its own: keep_own_grad)
            v._data = t
        return t
    if v._data is None:
        return data_of(v)
    return settled(v)


def run_tensor(v: Variable) -> torch.Tensor:
    """The tensor an eager run (the dynamic mode, an :class:`EagerPlan`) computes with for the
    leaf ``v``: for a view that needs a gradient, of a parameter (a leaf whose tensor needs
    one), that parameter's own tensor, so the backward adds into the parameter's gradient as
    it is then (NNabla shares the arrays; a ``zero_grad`` between forward and backward drops
    it, and the solver skips a parameter nothing wrote since); else :func:`leaf_tensor`.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.graph._subgraph import run_tensor
        >>> w = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
        >>> run_tensor(w.unlinked(need_grad=True)) is run_tensor(w) is w.data
        True
    """
    t = parameter_tensor_of_view(v) if v._need_grad and grad_follows_alias(v) else None
    return t if t is not None else leaf_tensor(v)


def parameter_tensor_of_view(v: Variable) -> torch.Tensor | None:
    """The tensor of the parameter ``v`` views (its source: a leaf whose tensor needs a
    gradient), or None when ``v`` is no view of one: where a view's gradient belongs."""
    source = _viewed(v)
    if source is None or source.parent is not None:
        return None
    t = source._data
    return t if t is not None and t.requires_grad else None


def _shared_grad(source: Variable, like: torch.Tensor) -> torch.Tensor:
    """``source``'s gradient buffer (zeros made for it if it has none, or one of another
    shape): what a view of it accumulates into."""
    g = grad_of(source)
    if g is None or g.shape != like.shape or g.dtype != like.dtype or g.device != like.device:
        g = torch.zeros_like(like, requires_grad=False)
        Variable.grad.fset(source, g)
    return g


def _viewed(v: Variable) -> Variable | None:
    """What the view ``v`` reads at the end of its chain (a view of a view of ``w`` reads
    ``w``: a graph converted twice), or None when ``v`` is no view."""
    target = v._alias
    while target is not None and target._alias is not None:
        target = target._alias
    return target


def _reads_parameter(v: Variable) -> bool:
    target = _viewed(v)
    return target is not None and target.parent is None and target.graph_name is not None


class Subgraph:
    """The op nodes and leaves that ``roots`` depend on, each leaf with its role (see the
    module docstring).  ``inputs``, when given, are the leaves to treat as inputs (any other
    unnamed leaf is then a constant); they are not checked against the leaves.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> import stadyn.parametric_functions as PF
        >>> from stadyn.graph import Subgraph
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     x = sd.Variable((4, 3))
        ...     y = F.sum(PF.affine(x, 2) * sd.Variable.from_numpy_array(np.ones(2)))
        ...     sub = Subgraph([y])
        >>> [n.spec.name for n in sub.nodes]
        ['affine', 'mul2', 'sum']
        >>> [v.name for v in sub.parameters], len(sub.inputs), sub.role(x)
        (['affine/W', 'affine/b'], 2, 'input')
    """

    __slots__ = ("roots", "nodes", "leaves", "_given", "_roles")

    def __init__(self, roots: Sequence[Variable], inputs: Sequence[Variable] | None = None):
        self.roots: list[Variable] = list(roots)
        self.nodes: list[FunctionNode] = topological_nodes(self.roots)
        leaves: list[Variable] = []
        seen: set[int] = set()
        for node in self.nodes:
            for v in node.inputs:
                if v.parent is None and id(v) not in seen:
                    seen.add(id(v))
                    leaves.append(v)
        for r in self.roots:
            if r.parent is None and id(r) not in seen:
                seen.add(id(r))
                leaves.append(r)
        self.leaves: list[Variable] = leaves
        self._given = None if inputs is None else {id(v) for v in inputs}
        self._roles: dict[int, str] | None = None

    # -- roles -----------------------------------------------------------------------------------
    def role(self, v: Variable) -> str:
        """``"input"``, ``"parameter"``, ``"view"`` or ``"constant"`` for a leaf of this
        subgraph."""
        if self._roles is None:
            self._roles = {id(leaf): self._role_of(leaf) for leaf in self.leaves}
        return self._roles[id(v)]

    def _role_of(self, v: Variable) -> str:
        if self._given is not None and id(v) in self._given:
            return INPUT
        if _reads_parameter(v):
            return VIEW
        if v.graph_name is not None:
            return PARAMETER
        return INPUT if self._given is None else CONSTANT

    def _with_role(self, role: str) -> list[Variable]:
        return [v for v in self.leaves if self.role(v) == role]

    @property
    def inputs(self) -> list[Variable]:
        """The leaves a caller feeds, in leaf order."""
        return self._with_role(INPUT)

    @property
    def parameters(self) -> list[Variable]:
        """The named leaves (registry parameters, trainable or not; named constants)."""
        return self._with_role(PARAMETER)

    @property
    def views(self) -> list[tuple[Variable, Variable]]:
        """``(view, parameter)`` for each leaf that reads a parameter."""
        return [(v, _viewed(v)) for v in self._with_role(VIEW)]

    @property
    def constants(self) -> list[Variable]:
        """Unnamed leaves other than the given ``inputs`` (none when no inputs were given)."""
        return self._with_role(CONSTANT)

    # -- what a run reads and fills ----------------------------------------------------------------
    def leaf_tensors(self) -> list[torch.Tensor]:
        """The tensors the leaves feed into a run (:func:`leaf_tensor`)."""
        return [leaf_tensor(v) for v in self.leaves]

    def signature(self) -> tuple:
        """Shape, dtype, device and ``requires_grad`` of every leaf: a lowered program is valid
        for one signature."""
        sig = []
        for v in self.leaves:
            t = leaf_tensor(v)
            sig.append((t.shape, t.dtype, t.device, t.requires_grad))
        return tuple(sig)

    def filled(self, keep_all: bool) -> list[Variable]:
        """The Variables a forward run gives values to: the roots computed by ops, then (with
        ``keep_all``) every live intermediate, or else only the ``persistent`` ones and those
        the program holds (``_held_values.py``)."""
        fill: list[Variable] = []
        seen: set[int] = set()
        held = set() if keep_all else held_variables(self.nodes)
        for r in self.roots:
            if id(r) not in seen and r.parent is not None:
                seen.add(id(r))
                fill.append(r)
        for node in self.nodes:
            for ref in node._outputs:
                v = ref()
                if v is not None and id(v) not in seen and (keep_all or keeps_value(v, held)):
                    seen.add(id(v))
                    fill.append(v)
        return fill

    def __repr__(self) -> str:
        return f"<Subgraph: {len(self.nodes)} nodes, {len(self.leaves)} leaves>"
