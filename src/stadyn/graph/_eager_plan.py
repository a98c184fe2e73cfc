"""An :class:`EagerPlan`: a static graph run by interpreting its nodes with torch's autograd,
when it cannot be lowered (an op declared ``traceable=False``, or a failed trace:
``_plan.build_plan`` makes one); the same interface as ``_plan.StaticPlan``.

Example:
    >>> import stadyn as sd
    >>> from stadyn.graph import OpSpec, apply
    >>> spec = OpSpec.from_function(lambda x: x + 1, 1, name="plus_one", traceable=False)
    >>> y = apply(spec, (sd.Variable.from_numpy_array([1.0]),), {})
    >>> y.forward(); y._plan.code.startswith("# runs eagerly"), y.d.tolist()
    (True, [2.0])
"""

from __future__ import annotations

import torch

from .._errors import StadynError
from ._backward_seed import input_seeds
from ._held_values import count_tables
from ._intermediate_grads import intermediates_of, retain_intermediate_grads, take_retained_grads
from ._interpret import Shapes, interpret
from ._late_views import view_hooks
from ._ordered_sums import ordered_sums
from ._reader_order import readers_before
from ._shared_values import set_output
from ._subgraph import leaf_tensor, run_tensor
from ._variable import Variable

__all__ = ["EagerPlan", "differentiates", "inner_graphs"]


class EagerPlan:
    """A static graph run by interpreting its nodes eagerly, with torch's autograd for backward.

    Used when the graph holds an op declared ``traceable=False`` (e.g. a collective) or when
    tracing fails; same interface as :class:`StaticPlan`, same results, none of its speed-up.

    Example:
        >>> import torch, stadyn as sd
        >>> from stadyn.graph import OpSpec, apply
        >>> spec = OpSpec.from_function(lambda x: x * 2, 1, name="twice", traceable=False)
        >>> x = sd.Variable.from_numpy_array([1.0, 2.0], need_grad=True)
        >>> y = apply(spec, (x,), {})
        >>> y.forward()
        >>> y._plan.code, y.d.tolist()
        ('# runs eagerly: holds op(s) that cannot be traced: twice', [2.0, 4.0])
    """

    __slots__ = ("roots", "nodes", "leaves", "fill", "diff_roots", "saved", "has_backward",
                 "reason", "shapes", "marks", "marks_seen", "keep_all", "_others", "_inter_values",
                 "_differentiates", "_after", "__weakref__")

    def __init__(self, roots, nodes, leaves, fill, needs_backward: bool, reason: str):
        # its own fill (a list another plan shares would be counted for both: count_tables)
        self.roots, self.nodes, self.leaves, self.fill = roots, nodes, leaves, list(fill)
        count_tables(self)              # Stadyn's references, not the program's
        mine = {id(v) for v in fill}
        self._others = [ref for node in nodes for ref in node._outputs
                        if (v := ref()) is not None and id(v) not in mine]
        # The intermediates given no value and their tensors of the last run, whose gradients
        # a backward keeps (NNabla's clear_no_need_grad keeps every one's)
        self._inter_values: dict = {}
        self.marks, self.marks_seen, self.keep_all = None, -1, True     # as StaticPlan's
        self.shapes = Shapes(nodes)
        self.has_backward = needs_backward
        self.diff_roots: list[Variable] = []
        self.saved: list | None = None
        self.reason = reason
        self._differentiates = differentiates(nodes)
        self._after = view_hooks(nodes, leaves)     # views read after their source's op

    def _interpret(self, tensors: list, wanted: list, release=None, shapes=None) -> list:
        """``wanted``'s values from the leaves' ``tensors``, op by op; with autograd where a
        backward may follow or a ``grad`` op differentiates (as traced), detached for the latter
        (``release``, ``shapes``: :func:`~stadyn.graph.interpret`'s)."""
        with torch.set_grad_enabled(self.has_backward or self._differentiates):
            outs = interpret(self.nodes, self.leaves, tensors, wanted, name_errors=True,
                             release=release, shapes=shapes, after=self._after)
        if self._differentiates and not self.has_backward:
            outs = [t.detach() for t in outs]
        return outs

    @property
    def code(self) -> str:
        return f"# runs eagerly: {self.reason}"

    def run(self) -> None:
        self.shapes.restore()
        tensors = [run_tensor(v) for v in self.leaves]
        others = [v for ref in self._others if (v := ref()) is not None] if self.has_backward \
            else []
        outs = self._interpret(tensors, self.fill + others)
        self._inter_values = {id(v): t for v, t in zip(others, outs[len(self.fill):])}
        outs = outs[:len(self.fill)]
        for v, t in zip(self.fill, outs):
            set_output(v, t)
            if v._shape != tuple(t.shape):               # an op's shape depends on values
                v._shape = tuple(t.shape)
        self.diff_roots = [r for r in self.roots if r._data is not None and r._data.requires_grad]
        self.saved = outs if self.has_backward else None

    def _tensor_of(self, v: Variable) -> torch.Tensor | None:
        """``v``'s tensor in the last run (a leaf's, an output's or an intermediate's)."""
        if v.parent is None:
            return leaf_tensor(v)
        held = next((t for u, t in zip(self.fill, self.saved or ()) if u is v), None)
        return held if held is not None else self._inter_values.get(id(v))

    def run_backward(self, root: Variable, seed: torch.Tensor, clear_buffer: bool) -> None:
        if self.saved is None:
            raise StadynError("backward: the buffers of the last forward were cleared "
                              "(backward(clear_buffer=True) ran already); run forward again")
        kept = retain_intermediate_grads(intermediates_of(root), clear_buffer, self.nodes,
                                         self._inter_values, self.roots)
        # the run's own value of the root: the root may hold another since (a backward run
        # again from an inner Variable gives it back the value it held: outputs_held)
        data, seeds = [], []
        for u, t in ((root, seed), *input_seeds(root).values()):
            value = next((d for v, d in zip(self.fill, self.saved) if v is u), u._data)
            if u is root or value.requires_grad:
                data.append(value)
                seeds.append(t)
        with readers_before(root.parent, self.nodes, self._tensor_of), \
                ordered_sums(root.parent, self.nodes, self._tensor_of, accumulate=True):
            torch.autograd.backward(data, seeds, retain_graph=not clear_buffer)
        take_retained_grads(kept)
        if clear_buffer:
            self.saved = None
            self._inter_values = {}


def inner_graphs(node) -> list:
    """The node lists of the graphs ``node`` holds as attributes (a recurrence's step).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> inner_graphs(F.tanh(sd.Variable((2,))).parent)
        []
    """
    return [inner for a in list(node.args) + list(node.kwargs.values())
            if not isinstance(a, Variable) and isinstance(inner := getattr(a, "nodes", None),
                                                          list)]


def differentiates(nodes) -> bool:
    """Whether a ``grad`` op is among ``nodes`` or in a graph one of them holds as an attribute
    (a recurrence's step).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> differentiates([F.tanh(sd.Variable((2,))).parent])
        False
    """
    return any(node.spec.name == "grad" or any(differentiates(g) for g in inner_graphs(node))
               for node in nodes)
