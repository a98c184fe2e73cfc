"""Function hooks (NNabla's ``nn.set_function_pre_hook`` and the rest): callables that a static
graph's ``forward`` and ``backward`` call with each op's :class:`FunctionNode`, just before and
after the op runs (its forward, then, in reverse order, its backward).  Hooks are global, keyed
by a name, called in the order they were set; the dynamic mode calls none, as NNabla's does.

While a hook is set (or ``forward`` is given ``function_pre_hook``/``function_post_hook``), a
forward runs the graph op by op (:class:`HookedPlan`) instead of its lowered program, and keeps
every intermediate value, so a hook can read each op's outputs; the backward runs op by op
too, each op's gradients from torch's autograd over its own piece of that run, in the order
NNabla's backward runs the functions (:class:`HookedPlan`).  The
hooks given to ``forward`` are its own; ``backward(function_pre_hook=..., function_post_hook=...)``
gives the backward's (after a forward that ran its lowered program, the graph is run again op
by op first, as NNabla's hooks need each op's values).  As in NNabla, a backward post hook reads
the gradients of the op's inputs as they stand once the op has added its share: a leaf's
accumulated so far, an intermediate's summed over the consumers that ran.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> from stadyn.graph import set_function_pre_hook, unset_function_pre_hook
    >>> x = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
    >>> y = F.sum(F.tanh(x))
    >>> seen = []
    >>> set_function_pre_hook("names", lambda node: seen.append(node.name))
    >>> y.forward(); y.backward()
    >>> unset_function_pre_hook("names")
    >>> seen
    ['tanh', 'sum', 'sum', 'tanh']
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Sequence

import torch

from .._errors import StadynError
from ._backward_seed import input_seeds
from ._context import get_current_context
from ._grad_buffers import accumulate_grads
from ._intermediate_grads import intermediates_of
from ._interpret import _node_arguments, _node_error
from ._reader_order import backward_order
from ._shared_values import set_output
from ._subgraph import Subgraph, leaf_tensor, output_key, value_key
from ._variable import FunctionNode, Variable

__all__ = ["set_function_pre_hook", "set_function_post_hook", "unset_function_pre_hook",
           "unset_function_post_hook"]

_PRE: "OrderedDict[str, Callable[[FunctionNode], None]]" = OrderedDict()
_POST: "OrderedDict[str, Callable[[FunctionNode], None]]" = OrderedDict()


def _checked(key, hook, which):
    if not callable(hook):
        raise TypeError(f"set_function_{which}_hook({key!r}, ...): the hook must be callable "
                        f"(taking the function), got {type(hook).__name__}")
    return hook


def set_function_pre_hook(key: str, hook: Callable[[FunctionNode], None]) -> None:
    """Call ``hook(node)`` just before each op of a static graph's forward and backward runs
    (``key`` names it for :func:`unset_function_pre_hook`; setting a key again replaces it)."""
    _PRE[key] = _checked(key, hook, "pre")


def set_function_post_hook(key: str, hook: Callable[[FunctionNode], None]) -> None:
    """Call ``hook(node)`` just after each op of a static graph's forward and backward ran."""
    _POST[key] = _checked(key, hook, "post")


def unset_function_pre_hook(key: str) -> None:
    """Remove the pre hook ``key`` (an unknown key is ignored, as in NNabla)."""
    _PRE.pop(key, None)


def unset_function_post_hook(key: str) -> None:
    """Remove the post hook ``key`` (an unknown key is ignored, as in NNabla)."""
    _POST.pop(key, None)


def hooks_set() -> bool:
    """Whether any global function hook is set."""
    return bool(_PRE or _POST)


class HookedPlan:
    """A static graph run op by op with the function hooks (see the module docstring); the
    plan interface of :class:`~stadyn.graph._eager_plan.EagerPlan`.  Its backward, too, runs op by
    op: each op is given its inputs cut from the graph (``_cut``), and its gradients come from
    torch's autograd over its own piece of the recorded forward, in NNabla's order (the deepest
    function first; of equal depth, the one reached first from the root, its inputs in order).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import Subgraph
        >>> x = sd.Variable.from_numpy_array(np.array([1.0, 2.0]))
        >>> y = F.sum(x * x)
        >>> plan = HookedPlan(Subgraph([y]), [lambda n: None], [])
        >>> plan.run(); float(y.d)
        5.0
    """

    __slots__ = ("roots", "nodes", "leaves", "pre", "post", "diff_roots", "saved",
                 "has_backward", "_records")

    def __init__(self, subgraph: Subgraph, pre: Sequence[Callable], post: Sequence[Callable]):
        self.roots, self.nodes, self.leaves = subgraph.roots, subgraph.nodes, subgraph.leaves
        self.pre, self.post = list(pre), list(post)
        self.diff_roots: list[Variable] = []
        self.saved: list | None = None
        self.has_backward = False
        # per node: its inputs as (Variable, tensor it got) and its output tensors
        self._records: dict = {}

    def run(self) -> None:
        tensors = [leaf_tensor(v) for v in self.leaves]
        self.has_backward = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
        env = {value_key(v): t for v, t in zip(self.leaves, tensors)}
        half = get_current_context().half_dtype
        kept, records = [], {}
        with torch.set_grad_enabled(self.has_backward):
            for node in self.nodes:
                args, kwargs = _node_arguments(node, env, half)
                if self.has_backward:           # each op's own piece of autograd graph
                    args = [_cut(a) for a in args]
                    kwargs = {k: _cut(a) for k, a in kwargs.items()}
                for hook in self.pre:
                    hook(node)
                try:
                    out = node.spec.impl(*args, **kwargs)
                except Exception as exc:
                    raise _node_error(node, env, exc) from exc
                outs = [out] if isinstance(out, torch.Tensor) else list(out)
                for i, (t, v) in enumerate(zip(outs, node.outputs)):
                    env[output_key(node, i)] = t
                    if v is not None:
                        set_output(v, t)
                    kept.append(t)
                if self.has_backward:
                    given = list(zip(node.args, args))
                    given += [(node.kwargs[k], kwargs[k]) for k in (node.kwargs or {})]
                    inputs, once = [], set()      # a tensor given twice (x * x) once
                    for v, t in given:
                        if (isinstance(v, Variable) and isinstance(t, torch.Tensor)
                                and t.requires_grad and id(t) not in once):
                            once.add(id(t))
                            inputs.append((v, t))
                    records[id(node)] = (inputs, outs)
                for hook in self.post:
                    hook(node)
        self.diff_roots = [r for r in self.roots if r._data is not None and r._data.requires_grad]
        self.saved = kept if self.has_backward else None
        self._records = records

    def run_backward(self, root: Variable, seed: torch.Tensor, clear_buffer: bool,
                     pre: Sequence[Callable] = (), post: Sequence[Callable] = ()) -> None:
        """The backward op by op (see the class docstring), calling the global hooks, then
        ``pre`` / ``post``, around each op's: a leaf's gradient accumulates as each op adds its
        share, an intermediate's is the sum of its consumers' that ran (as NNabla's)."""
        if self.saved is None:
            raise StadynError("backward: the buffers of the last forward were cleared "
                              "(backward(clear_buffer=True) ran already); run forward again")
        pre_hooks, post_hooks = list(_PRE.values()) + list(pre), list(_POST.values()) + list(post)
        leaves = {id(v) for v in self.leaves}
        sums = {id(root): seed, **{k: t for k, (_, t) in input_seeds(root).items()}}
        for node in _backward_order(root, self.nodes, self._records):
            inputs, outs = self._records[id(node)]
            for hook in pre_hooks:
                hook(node)
            grads_out = []
            for t, v in zip(outs, node.outputs):
                g = sums.get(id(v)) if v is not None else None
                grads_out.append(torch.zeros_like(t) if g is None else g.to(t.dtype))
            wanted = [(o, g) for o, g in zip(outs, grads_out) if o.requires_grad]
            grads = torch.autograd.grad([o for o, _ in wanted], [t for _, t in inputs],
                                        [g for _, g in wanted], retain_graph=True,
                                        allow_unused=True) if wanted and inputs else ()
            for (v, t), g in zip(inputs, grads):
                if g is None:
                    continue
                if id(v) in leaves:
                    accumulate_grads([v], [g.detach()], must_copy=[True])
                else:
                    so_far = sums.get(id(v))
                    sums[id(v)] = g.to(v._dtype) if so_far is None else so_far + g
                    v._grad = sums[id(v)]
            for hook in post_hooks:
                hook(node)
        for v in intermediates_of(root):
            if clear_buffer and not v._persistent:
                v._grad = None
        if clear_buffer:
            self.saved = None
            self._records = {}


def _cut(value):
    """A tensor needing a gradient as a leaf of its own (same memory): an op's backward then
    reaches its inputs and no further."""
    if isinstance(value, torch.Tensor) and value.requires_grad:
        return value.detach().requires_grad_(True)
    return value


def _backward_order(root: Variable, nodes: Sequence[FunctionNode], records: dict
                    ) -> list[FunctionNode]:
    """The functions of ``nodes`` (in forward order) that ``root`` depends on, in the order
    NNabla 1.39's backward runs them (:func:`~stadyn.graph.backward_order`: the deepest first,
    of equal depth the one reached first going from ``root`` through each function's inputs in
    order), going down only through the inputs recorded as needing a gradient."""
    if root.parent is None or id(root.parent) not in records:
        return []
    needing = {id(v) for inputs, _ in records.values() for v, _ in inputs}
    return backward_order(root.parent, nodes,
                          lambda u: id(u) in needing and id(u.parent) in records)
