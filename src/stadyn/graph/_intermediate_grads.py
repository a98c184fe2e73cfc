"""The gradients of intermediate Variables after ``backward()``, kept as NNabla keeps them.

In NNabla 1.39 a backward writes the gradient of every Variable of the graph, intermediates
included: after ``loss.backward()`` a hidden ``h.g`` is d loss / d h (overwritten by each
backward, where a leaf's gradient accumulates).  ``backward(clear_buffer=True)`` frees the
intermediates' gradients as it goes, except those of ``persistent`` Variables.  The root's own
``.g`` is not written (it is the seed only when ``grad=None``).

Stadyn keeps the same gradients without a cost on the training path:

* a static plan's backward program also returns the intermediates' gradients (``_plan.py``):
  every one after a plain ``forward()``; after ``forward(clear_no_need_grad=True)`` the
  program ``backward(clear_buffer=True)`` runs (the training idiom) returns only the
  ``persistent`` ones' -- the program of a plan without them -- and the one a ``backward()``
  runs, every one's, is made once from the untouched backward (:func:`backward_returning`);
* a dynamic graph (and a static one run eagerly) asks torch's autograd to retain them
  (``Tensor.retain_grad``) just before the backward runs.

:func:`keep_intermediate_grads` stores them; :func:`retain_intermediate_grads` and
:func:`take_retained_grads` do the autograd side.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([1.0, -2.0]), need_grad=True)
    >>> h = F.relu(x)
    >>> y = F.sum(h * 3.0)
    >>> y.forward(); y.backward()
    >>> h.g.tolist(), x.g.tolist()
    ([3.0, 3.0], [3.0, 0.0])
"""

from __future__ import annotations

from typing import AbstractSet as Set
from typing import Mapping, Sequence

import torch
import torch.fx as fx

from ._held_values import held_variables
from ._passes import drop_dead_code
from ._shared_values import set_grad
from ._tracing import program_module
from ._variable import FunctionNode, Variable, topological_nodes

__all__ = ["keep_intermediate_grads", "retain_intermediate_grads", "take_retained_grads",
           "intermediates_of", "intermediates_beyond",
           "backward_returning", "roots_read", "keep_grads_of_roots", "kept_positions"]


def keep_intermediate_grads(variables: Sequence[Variable], grads: Sequence[torch.Tensor],
                            must_copy: Sequence[bool], clear_buffer: bool) -> None:
    """Set each intermediate's gradient to its value in ``grads`` (copied where ``must_copy``:
    it may share memory with a leaf's gradient, which later accumulates in place).  After
    ``backward(clear_buffer=True)`` only persistent Variables keep theirs (NNabla frees the
    others; here they read zeros).

    Example:
        >>> import torch, stadyn as sd, stadyn.functions as F
        >>> h = F.relu(sd.Variable((2,)))
        >>> keep_intermediate_grads([h], [torch.ones(2)], [False], clear_buffer=False)
        >>> h.g.tolist()
        [1.0, 1.0]
    """
    for v, g, copy in zip(variables, grads, must_copy):
        if clear_buffer and not v._persistent:
            v._grad = None
            continue
        if copy or g.dtype != v._dtype:
            g = g.to(v._dtype, copy=True)
        set_grad(v, g)


def roots_read(roots: Sequence[Variable], nodes: Sequence[FunctionNode]) -> list[Variable]:
    """The roots of a plan (op outputs among ``roots``) that an op of ``nodes`` reads: a
    backward from another root passes through them and gives them a gradient, as NNabla 1.39
    writes it (``sink(l1, m)`` with ``m = l1*2``: ``l1.g`` is 1 from the sink plus 2 from
    ``m``'s function; ``forward_all([h, y])`` then ``y.backward()``: ``h.g`` is dy/dh), each
    once, in order.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> h = F.tanh(sd.Variable((2,)))
        >>> y = F.sum(h)
        >>> roots_read([h, y], [h.parent, y.parent]) == [h]
        True
    """
    read = {id(v) for node in nodes for v in node.inputs}
    out = {id(r): r for r in roots if r.parent is not None and id(r) in read}
    return list(out.values())


def kept_positions(variables: Sequence[Variable], roots: Set[int],
                   clear_buffer: bool) -> tuple[int, ...]:
    """The positions among ``variables`` whose gradients a backward keeps: every one, or with
    ``clear_buffer`` the ``persistent`` ones and the plan's roots (their ``id``s in ``roots``:
    NNabla 1.39's ``backward(clear_buffer=True)`` from a sink keeps its inputs' gradients, and
    their values).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> a, b = F.relu(sd.Variable((2,))), F.tanh(sd.Variable((2,)))
        >>> kept_positions([a, b], {id(b)}, True), kept_positions([a, b], set(), False)
        ((1,), (0, 1))
    """
    if not clear_buffer:
        return tuple(range(len(variables)))
    return tuple(k for k, v in enumerate(variables) if v._persistent or id(v) in roots)


def keep_grads_of_roots(root: Variable, variables: Sequence[Variable],
                        grads: Sequence[torch.Tensor], must_copy: Sequence[bool],
                        clear_buffer: bool, roots: Set[int],
                        upstream: dict[int, set[int]]) -> None:
    """:func:`keep_intermediate_grads` after a backward from ``root`` where some of
    ``variables`` are other roots of the plan (their ``id``s in ``roots``,
    :func:`roots_read`): a root's gradient is kept (``clear_buffer`` or not) where ``root``
    depends on it, and left as it is elsewhere (``root``'s own, which a backward does not
    write, and a root ``root`` does not read).  ``upstream`` caches, by the ``id`` of a root,
    the ``id``s of the Variables it depends on.  Without ``roots``,
    :func:`keep_intermediate_grads` itself.

    Example:
        >>> import torch, stadyn as sd, stadyn.functions as F
        >>> h = F.tanh(sd.Variable((2,))); y = F.sum(h)
        >>> keep_grads_of_roots(y, [h], [torch.ones(2)], [False], False, {id(h)}, {})
        >>> h.g.tolist()
        [1.0, 1.0]
    """
    if not roots:
        keep_intermediate_grads(variables, grads, must_copy, clear_buffer)
        return
    above = upstream.get(id(root))
    if above is None:
        above = upstream[id(root)] = {id(v) for v in intermediates_of(root)}
    for v, g, copy in zip(variables, grads, must_copy):
        if id(v) not in roots:
            keep_intermediate_grads([v], [g], [copy], clear_buffer)
        elif id(v) in above:
            keep_intermediate_grads([v], [g], [copy], False)


def intermediates_of(root: Variable, nodes: Sequence[FunctionNode] | None = None
                     ) -> list[Variable]:
    """The live Variables computed by ``nodes`` (the ops ``root`` depends on,
    ``topological_nodes([root])``, unless given), other than ``root``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> h = F.relu(sd.Variable((2,)))
        >>> y = F.sum(h)
        >>> intermediates_of(y) == [h]
        True
    """
    out = []
    for node in topological_nodes([root]) if nodes is None else nodes:
        for ref in node._outputs:
            v = ref()
            if v is not None and v is not root:
                out.append(v)
    return out


def retain_intermediate_grads(variables: Sequence[Variable], clear_buffer: bool,
                              nodes: Sequence[FunctionNode],
                              values: Mapping[int, torch.Tensor] | None = None,
                              spare: Sequence[Variable] = ()
                              ) -> list[tuple[Variable, torch.Tensor]]:
    """Before an autograd backward: ask torch to keep the gradients of ``variables`` (those
    computed by autograd-recorded ops; with ``clear_buffer`` only the persistent ones, and the
    others' old gradients and values are dropped where the backward passes through them:
    NNabla's ``backward(clear_buffer=True)`` frees those, and keeps a branch's that needs no
    gradient, its gradient too (what a ``PythonFunction``'s ``backward_impl`` reading it
    sees, case ``nnabla_pyfunc_36.python_function__input_needing_no_gradient``); a static
    graph's forward keeps its roots', ``spare``, and their gradients where the backward
    passes through them, as a static plan's (``kept_positions``: a sink's inputs read by one
    another keep theirs), and the values the program holds stay,
    ``_held_values.py``: ``nodes`` are the graph's, whose inputs are Stadyn's references to
    them).  ``values``
    gives the tensors of the Variables (by ``id``) whose run left them no value (an eager run
    of a clearing forward); the others' are their ``.data``.  Returns what
    :func:`take_retained_grads` reads after.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([2.0]), need_grad=True)
        >>> with sd.auto_forward():
        ...     h = F.tanh(x); y = F.sum(h * 2.0)
        >>> kept = retain_intermediate_grads([h], False, [h.parent, y.parent.inputs[0].parent,
        ...                                                  y.parent])
        >>> len(kept), h.g.tolist()
        (1, [0.0])
    """
    kept = []
    roots = {id(v) for v in spare}
    spared = set(roots)
    if clear_buffer:                # a value the program holds stays (_held_values.py)
        spared |= held_variables(nodes, variables, spare)
    for v in variables:
        t = values.get(id(v), v._data) if values else v._data
        if clear_buffer and not v._persistent and id(v) not in roots:
            passed = t is not None and t.requires_grad and not v._stops_grad
            if passed or t is None:    # (one needing no gradient keeps what it holds)
                v._grad = None
            if passed and id(v) not in spared:
                v._data = None         # NNabla frees the values its backward passes through
        elif (t is not None and t.requires_grad and not v._stops_grad
              and (not t.is_leaf or v._starts_grad)):
            t.retain_grad()                # (a leaf where need_grad=True started gradients)
            t.grad = None                  # a backward overwrites an intermediate's gradient
            kept.append((v, t))
    return kept


def take_retained_grads(kept: Sequence[tuple[Variable, torch.Tensor]]) -> None:
    """After the backward: move the retained gradients onto their Variables.

    Example:
        >>> import numpy as np, torch, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([2.0]), need_grad=True)
        >>> with sd.auto_forward():
        ...     h = F.tanh(x); y = F.sum(h * 2.0)
        >>> kept = retain_intermediate_grads([h], False, [h.parent])
        >>> torch.autograd.backward(y.data, torch.ones(()), retain_graph=True)
        >>> take_retained_grads(kept); h.g.tolist()
        [2.0]
    """
    for v, t in kept:
        g = t.grad
        t.grad = None
        if g is not None:
            set_grad(v, g)


def intermediates_beyond(nodes: Sequence[FunctionNode], fill: Sequence[Variable]
                         ) -> list[Variable]:
    """The live outputs of ``nodes`` a forward gives no value to (not in ``fill``), in order.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> h = F.relu(sd.Variable((2,)))
        >>> y = F.sum(h)
        >>> intermediates_beyond([h.parent, y.parent], [y]) == [h]
        True
    """
    seen = {id(v) for v in fill}
    out = []
    for node in nodes:
        for ref in node._outputs:
            v = ref()
            if v is not None and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


def backward_returning(raw: fx.GraphModule, n_leaf_grads: int, positions: Sequence[int]
                       ) -> fx.GraphModule:
    """A copy of the backward program ``raw`` (which returns the leaves' gradients, then
    every intermediate's) that returns the leaves' and only the intermediates' at
    ``positions``; what only the others needed is dropped, so each of those gradients is
    freed as soon as the program has used it (``raw`` is left as it is).

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> gm = make_fx(lambda g: (g * 2, g * 3, g * 4))(torch.ones(2))
        >>> backward_returning(gm, 1, [1])(torch.ones(2))
        (tensor([2., 2.]), tensor([4., 4.]))
    """
    graph = fx.Graph()
    outs = graph.graph_copy(raw.graph, {})
    outs = list(outs)
    graph.output(tuple(outs[:n_leaf_grads]) + tuple(outs[n_leaf_grads + k] for k in positions))
    drop_dead_code(graph)
    return program_module(raw, graph)
