"""Plans shared by graphs of one structure: a graph rebuilt op for op replays the plan of the
first.

Programs that define their graph again on every iteration (nnabla-examples' MAML: each task
calls the network anew, then ``nn.grad``; any loop that builds a loss inside it) make new root
Variables each time, so the runner's cache, which lives on the roots (``_runner.py``), never
finds a plan, and each iteration pays a build: a trace and its passes, hundreds of times what a
replay costs.  The programs a build makes read nothing of the Variables they were traced from
but their position in the graph, so any graph with the same *structure* can run them:

* its ops in the same order, each with the same spec, the same context it is bound to
  (``FunctionNode.context``), the same attributes (the non-Variable arguments, by value) and
  its inputs at the same positions (a leaf by its index among the leaves, an op output by its
  node's index and output index);
* the same roots, the same live and ``persistent`` outputs and the same outputs the program
  holds (what a forward fills, ``_held_values.py``: checked when a plan is reused), the same
  ``recompute`` flags, the same views among the leaves and the same leaves sharing one tensor;
* and, as for any plan, the same leaf signature (shape, dtype, device, ``requires_grad``),
  gradient marks and flags (grad mode, phase, context, buffer flags).

:func:`structure` is that key (None for a graph it cannot describe by value: an op holding a
tensor, an array or a function as an attribute, an op with state, which runs eagerly anyway, or
a random op with a seed of its own, whose program holds its generator).
An attribute that is itself a graph (a recurrence's step, ``ops.StepFunction``) is keyed by
its own structure (:func:`graph_structure`, asked through the attribute's ``structure_key``
method), so a graph rebuilt with a recurrence in it (a greedy decoder, an attention read out
of its step) replays the plan of the first too.
The runner asks :func:`reuse` before it builds a plan and gives :func:`remember` each static
plan it built.  What is kept (:class:`_Template`, at most :data:`MAX_TEMPLATES`, least recently
used dropped first) holds the generated programs and positions only, never a Variable, so a
graph that is gone leaves no values behind; :func:`clear` forgets them all.  A reused plan is a
:class:`~stadyn.graph.StaticPlan` of its own graph's Variables, with buffers of its own, and its
Variables get the shapes the build inferred (what ``refresh_shapes`` would find: the same
structure on the same leaf signature).
An evaluation (grad mode off) of a structure no graph ran before runs eagerly instead of being
lowered (``_runner.py``); :func:`sighted` remembers that structure, so that the next graph of
it (or the same graph run again) is lowered and its plan kept for the ones after it.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> from stadyn.graph import Subgraph
    >>> from stadyn.graph._plan_reuse import structure
    >>> def loss(w):
    ...     return F.sum(F.tanh(w) * 2.0)
    >>> a = sd.Variable.from_numpy_array(np.ones(3), need_grad=True)
    >>> b = sd.Variable.from_numpy_array(np.zeros(3), need_grad=True)
    >>> structure(Subgraph([loss(a)])) == structure(Subgraph([loss(b)]))
    True
    >>> structure(Subgraph([loss(a)])) == structure(Subgraph([F.sum(F.tanh(a) * 3.0)]))
    False
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import torch

from .._memory import keep_freed_cpu_memory
from ._edge_cuts import cut_key
from ._own_streams import own_seed
from ._plan import StaticPlan, holds_loop
from ._shared_values import drop_stale
from ._subgraph import Subgraph
from ._variable import Variable
from ._versions import shapes_changed

__all__ = ["structure", "graph_structure", "reuse", "remember", "sighted", "loop_and_own_stream",
           "clear", "MAX_TEMPLATES", "MAX_SIGHTED"]

#: Structures whose plans are kept for graphs rebuilt alike.
MAX_TEMPLATES = 64
#: Structures remembered as run once eagerly (a first evaluation, ``_runner.py``), so that the
#: next graph of one is lowered.
MAX_SIGHTED = 256

_PLAIN = (int, bool, str, bytes, type(None), type(Ellipsis), torch.dtype, torch.device)


class _Unkeyed(Exception):
    """An attribute :func:`structure` cannot key by value."""


def _attribute(a: Any, where: dict) -> Any:
    """``a``'s share of the key: a Variable by its position (``where``: a leaf's, or its node's
    and its output index), a value by type and value (a float by its exact bits: 0.0 and -0.0
    are two attributes)."""
    if isinstance(a, Variable):
        found = where.get(id(a) if a.parent is None else id(a.parent))
        if found is None:                  # not a leaf or op of the graph (held in a list)
            raise _Unkeyed
        return found if a.parent is None else (found, a._index)
    t = type(a)
    if t is float or isinstance(a, np.floating):
        return (t, float(a).hex())
    if t in _PLAIN or isinstance(a, np.integer) or isinstance(a, np.bool_):
        return (t, a)
    if isinstance(a, (tuple, list)):
        return (t, tuple(_attribute(e, where) for e in a))
    if t is slice:
        return (t, _attribute(a.start, where), _attribute(a.stop, where),
                _attribute(a.step, where))
    keyed = getattr(a, "structure_key", None)
    if callable(keyed) and not isinstance(a, (torch.Tensor, np.ndarray)):
        found = keyed()                    # a graph of its own (a recurrence's step)
        if found is not None:
            return (t, found)
    raise _Unkeyed


def loop_and_own_stream(nodes) -> tuple[bool, bool]:
    """Whether an op among ``nodes`` holds a loop (``_plan.holds_loop``) and whether a random
    op among them draws from a generator of its own seed, in one walk: what the runner asks of
    a graph's first signature (the runner lowers such a graph at once: ``_runner._rent_first``;
    plans, trials and eager runs all draw from the node's own generator, ``_own_streams.py``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import Subgraph
        >>> x = sd.Variable.from_numpy_array(np.ones(3, np.float32))
        >>> loop_and_own_stream(Subgraph([F.dropout(x, 0.5, seed=7)]).nodes)
        (False, True)
    """
    loop = own = False
    for node in nodes:
        loop = loop or holds_loop(node)
        own = own or own_seed(node) is not None
        if loop and own:
            break
    return loop, own


def structure(subgraph: Subgraph) -> tuple | None:
    """The structure of ``subgraph`` (see the module docstring), or None when some op's
    attributes cannot be keyed by value."""
    return graph_structure(subgraph.leaves, subgraph.nodes, subgraph.roots)


def _view_of(v: Variable, where: dict) -> Any:
    """A leaf's view key: False for no view; for a view of an op output of the graph, that
    output's position (a plan reading it after its op ran runs eagerly: ``_late_views.py``)."""
    if v._alias is None:
        return False
    h = v._alias
    while h._alias is not None:
        h = h._alias
    pos = where.get(id(h.parent)) if h.parent is not None else None
    return True if pos is None else (pos, h._index)


def graph_structure(leaves, nodes, roots) -> tuple | None:
    """The structure of the graph of ``nodes`` (in execution order) over ``leaves`` giving
    ``roots``: ops, attributes, inputs and roots by position (see the module docstring); None
    when some op's attributes cannot be keyed by value.

    Example (one step of a recurrence, recorded twice alike):
        >>> import stadyn as sd, stadyn.functions as F
        >>> def step():
        ...     h, x = sd.Variable((1, 2)), sd.Variable((1, 2))
        ...     return [h, x], [F.tanh(h + x)]
        >>> (l1, r1), (l2, r2) = step(), step()
        >>> from stadyn.graph import Subgraph
        >>> key = lambda leaves, roots: graph_structure(leaves, Subgraph(roots).nodes, roots)
        >>> key(l1, r1) == key(l2, r2)
        True
    """
    where: dict[int, Any] = {}
    first: dict[int, int] = {}
    keyed_leaves = []
    for i, node in enumerate(nodes):
        where[id(node)] = ("op", i)
    for k, v in enumerate(leaves):
        where[id(v)] = ("leaf", k)
        shared = first.setdefault(id(v._data), k) if v._alias is None and v._data is not None \
            else k
        keyed_leaves.append((_view_of(v, where), shared))
    ops = []
    try:
        for node in nodes:
            # a generator of its own seed (own_seed) is held by the program (made when the op
            # first runs): a graph rebuilt alike running the same program would go on drawing
            # the first graph's stream, where each such function starts its own (NNabla's rule)
            if node.state is not None or own_seed(node) is not None:
                return None
            args = tuple(_attribute(a, where) for a in node.args)
            kwargs = tuple((k, _attribute(a, where)) for k, a in node.kwargs.items())
            outputs = tuple((v is not None, v is not None and v._persistent,
                             v is not None and bool(v.recompute))
                            for v in (ref() for ref in node._outputs))
            # the context a node is bound to (an NNabla function made in cpu:half) is part of
            # its program: the casts of its inputs and the Half formulas are traced into it
            # (and the gradient parts an nn.grad node leaves out: _edge_cuts.py)
            ops.append((node.spec, args, kwargs, outputs, node.context,  # spec: by identity
                        cut_key(node, where)))
        keyed_roots = tuple(_attribute(r, where) for r in roots)
    except _Unkeyed:
        return None
    return (tuple(ops), keyed_roots, tuple(keyed_leaves))


class _Template:
    """A static plan's programs and what it reads by position (``("leaf", k)`` or an op
    output's node and output index): which leaves get gradients, which values it fills (the
    values a clearing forward keeps for its backward too), which of them are differentiated
    roots and intermediates whose gradients a backward may give, and every op output's shape
    and dtype as the build inferred them."""

    __slots__ = ("fw", "bw", "raw_bw", "grad_leaves", "fill", "diff_roots", "all_inters",
                 "positions", "n_kept", "copy_grad", "out_slots", "cast_slots", "copy_inter",
                 "shapes", "seconds", "restore_layout")

    def __init__(self, plan: StaticPlan, seconds: float):
        at = _positions(plan.leaves, plan.nodes)
        self.fw, self.bw, self.raw_bw = plan.fw, plan.bw, plan._raw_bw
        self.grad_leaves = [at[id(v)] for v in plan.grad_leaves]
        self.fill = [at[id(v)] for v in plan.fill]
        self.diff_roots = [at[id(v)] for v in plan.diff_roots]
        self.all_inters = [at[id(v)] for v in plan.all_inters]
        self.positions, self.n_kept = plan._positions, len(plan.kept)
        self.copy_grad = list(plan._copy_grad)
        self.out_slots, self.cast_slots = plan._out_slots, plan._cast_slots
        self.copy_inter = list(plan._copy_inter)
        self.shapes = [[(v._shape, v._dtype) if (v := ref()) is not None else None
                        for ref in node._outputs] for node in plan.nodes]
        self.seconds = seconds
        self.restore_layout = plan.restore_layout

    def bind(self, subgraph: Subgraph, keep_all: bool) -> StaticPlan:
        """A plan of ``subgraph`` (of this template's structure) running these programs."""
        nodes, leaves = subgraph.nodes, subgraph.leaves
        for node, shapes in zip(nodes, self.shapes):
            for ref, found in zip(node._outputs, shapes):
                v = ref()
                if v is not None and found is not None:
                    if v.shape != found[0]:
                        shapes_changed()
                    v._shape, v._dtype = found
                    drop_stale(v)          # a held buffer of another shape goes (refresh_shapes')
        if any(leaf.device.type == "cpu" for leaf in subgraph.leaf_tensors()):
            keep_freed_cpu_memory()

        def variable(where):
            if where[0] == "leaf":
                return leaves[where[1]]
            return nodes[where[0]]._outputs[where[1]]()

        fill = [variable(w) for w in self.fill]
        inters = [variable(w) for w in self.all_inters]
        return StaticPlan(subgraph.roots, list(nodes), list(leaves), fill, self.fw, self.bw,
                          [variable(w) for w in self.grad_leaves],
                          [variable(w) for w in self.diff_roots], list(self.copy_grad),
                          self.out_slots, self.cast_slots,
                          grad_inters=[inters[k] for k in self.positions],
                          copy_inter=list(self.copy_inter), all_inters=inters,
                          raw_bw=self.raw_bw, positions=self.positions,
                          kept=fill[len(fill) - self.n_kept:] if self.n_kept else (),
                          restore_layout=self.restore_layout)


def _positions(leaves, nodes) -> dict[int, tuple]:
    """Each Variable of a graph (by id) at its position: ``("leaf", k)`` or ``(i, j)``, the
    ``j``-th output of the ``i``-th node."""
    at: dict[int, tuple] = {id(v): ("leaf", k) for k, v in enumerate(leaves)}
    for i, node in enumerate(nodes):
        for j, ref in enumerate(node._outputs):
            v = ref()
            if v is not None:
                at[id(v)] = (i, j)
    return at


_TEMPLATES: OrderedDict = OrderedDict()
_SIGHTED: OrderedDict = OrderedDict()


def reuse(key: tuple | None, subgraph: Subgraph, keep_all: bool
          ) -> tuple[StaticPlan, float] | None:
    """A plan of ``subgraph`` from a kept template under ``key`` (the runner's plan key and
    :func:`structure`), and the seconds that template's build took; None when there is none."""
    template = _TEMPLATES.get(key) if key is not None else None
    if template is None:
        return None
    # the values a forward gives out depend on what the program holds too (_held_values.py)
    at = _positions(subgraph.leaves, subgraph.nodes)
    if [at.get(id(v)) for v in subgraph.filled(keep_all)] != \
            template.fill[:len(template.fill) - template.n_kept]:
        return None
    _TEMPLATES.move_to_end(key)
    return template.bind(subgraph, keep_all), template.seconds


def remember(key: tuple | None, plan: Any, seconds: float) -> None:
    """Keep the programs of ``plan`` (a static plan built in ``seconds``) under ``key``."""
    if key is None or not isinstance(plan, StaticPlan):
        return
    _TEMPLATES[key] = _Template(plan, seconds)
    if len(_TEMPLATES) > MAX_TEMPLATES:
        _TEMPLATES.popitem(last=False)


def sighted(key: tuple) -> bool:
    """Whether a graph under ``key`` (the runner's plan key and :func:`structure`) ran before:
    a template is kept for it, or one ran eagerly as a first evaluation.  Records this one
    (at most :data:`MAX_SIGHTED` are remembered, the least recently seen dropped first).

    Example:
        >>> from stadyn.graph._plan_reuse import clear, sighted
        >>> clear()
        >>> sighted(("a structure",)), sighted(("a structure",))
        (False, True)
    """
    if key + (False,) in _TEMPLATES or key + (True,) in _TEMPLATES:
        return True
    seen = key in _SIGHTED
    _SIGHTED[key] = True
    _SIGHTED.move_to_end(key)
    if len(_SIGHTED) > MAX_SIGHTED:
        _SIGHTED.popitem(last=False)
    return seen


def clear() -> None:
    """Forget every kept template and sighted structure (the test suite does before each
    test, so that a test's count of builds does not depend on the graphs of the tests before
    it)."""
    _TEMPLATES.clear()
    _SIGHTED.clear()
