"""Function hooks (NNabla's ``nn.set_function_pre_hook`` and the rest): callables that a static
graph's ``forward`` and ``backward`` call with each op's :class:`FunctionNode`, just before and
after the op runs (its forward, then, in reverse order, its backward).  Hooks are global, keyed
by a name, called in the order they were set; the dynamic mode calls none, as NNabla's does.

While a hook is set (or ``forward`` is given ``function_pre_hook``/``function_post_hook``), a
forward runs the graph op by op (:class:`HookedPlan`) instead of its lowered program, and keeps
every intermediate value, so a hook can read each op's outputs; the backward is torch's
autograd over that run, with one marker per op calling the hooks when its gradients pass.  The
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
from ._context import get_current_context
from ._intermediate_grads import intermediates_of
from ._interpret import _node_arguments, _node_error
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


class _Marker(torch.autograd.Function):
    """The identity on tensors; its backward calls ``callback()`` once, when the gradients of
    all its outputs are there, and passes them on."""

    @staticmethod
    def forward(ctx, callback, *tensors):
        ctx.callback = callback
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        ctx.callback(grads)
        return (None,) + grads


def _marked(tensors: list, callback) -> list:
    """``tensors`` with those that need a gradient passed through one :class:`_Marker`."""
    at = [k for k, t in enumerate(tensors) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not at or not torch.is_grad_enabled():
        return tensors
    marked = _Marker.apply(callback, *[tensors[k] for k in at])
    out = list(tensors)
    for k, t in zip(at, marked):
        out[k] = t
    return out


class HookedPlan:
    """A static graph run op by op with the function hooks (see the module docstring); the
    plan interface of :class:`~stadyn.graph._plan.EagerPlan`.

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
                 "has_backward", "backward_hooks", "_sums", "_leaf_tensors", "_reached")

    def __init__(self, subgraph: Subgraph, pre: Sequence[Callable], post: Sequence[Callable]):
        self.roots, self.nodes, self.leaves = subgraph.roots, subgraph.nodes, subgraph.leaves
        self.pre, self.post = list(pre), list(post)
        self.diff_roots: list[Variable] = []
        self.saved: list | None = None
        self.has_backward = False
        # the backward's (pre, post) hooks: the global ones, unless run_backward is given more
        self.backward_hooks: tuple[list, list] = (list(_PRE.values()), list(_POST.values()))
        self._sums: dict = {}              # id(Variable) -> its gradient so far in a backward
        self._leaf_tensors: dict = {}      # id(leaf Variable) -> the tensor the run fed in
        self._reached: set = set()         # the leaves a marker gave a gradient to

    def _call(self, hooks, node):
        def call():
            for hook in hooks:
                hook(node)
        return call

    def _backward_pre(self, node):
        def call(grads):
            for hook in self.backward_hooks[0]:
                hook(node)
        return call

    def _backward_post(self, node, args: list):
        """The callback of the marker over ``node``'s inputs: adds the gradients the op gives
        them to theirs (a leaf's ``.grad``, an intermediate's running sum), then calls the
        backward's post hooks."""
        at = [k for k, t in enumerate(args) if isinstance(t, torch.Tensor) and t.requires_grad]

        def call(grads):
            for k, g in zip(at, grads):
                v = node.args[k]
                if g is None or not isinstance(v, Variable):
                    continue
                t = self._leaf_tensors.get(id(v))
                if t is not None:
                    self._reached.add(id(v))
                    if t.grad is None:
                        t.grad = g.detach().to(t.dtype, copy=True)
                    else:
                        t.grad.add_(g.detach().to(t.grad.dtype))
                else:
                    so_far = self._sums.get(id(v))
                    total = g.detach().to(v._dtype) if so_far is None else so_far + g.detach()
                    self._sums[id(v)] = total
                    v._grad = total
            for hook in self.backward_hooks[1]:
                hook(node)
        return call

    def run(self) -> None:
        tensors = [leaf_tensor(v) for v in self.leaves]
        self._leaf_tensors = {id(v): t for v, t in zip(self.leaves, tensors) if t.requires_grad}
        self.has_backward = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
        env = {value_key(v): t for v, t in zip(self.leaves, tensors)}
        half = get_current_context().half_dtype
        kept = []
        with torch.set_grad_enabled(self.has_backward):
            for node in self.nodes:
                args, kwargs = _node_arguments(node, env, half)
                # the backward's post hooks: once the gradients of the op's inputs are there
                args = _marked(args, self._backward_post(node, args))
                self._call(self.pre, node)()
                try:
                    out = node.spec.impl(*args, **kwargs)
                except Exception as exc:
                    raise _node_error(node, env, exc) from exc
                outs = [out] if isinstance(out, torch.Tensor) else list(out)
                # the backward's pre hooks: once the gradients of the op's outputs are there
                outs = _marked(outs, self._backward_pre(node))
                for i, (t, v) in enumerate(zip(outs, node.outputs)):
                    env[output_key(node, i)] = t
                    if v is not None:
                        v._data = t
                    kept.append(t)
                self._call(self.post, node)()
        self.diff_roots = [r for r in self.roots if r._data is not None and r._data.requires_grad]
        self.saved = kept if self.has_backward else None

    def run_backward(self, root: Variable, seed: torch.Tensor, clear_buffer: bool,
                     pre: Sequence[Callable] = (), post: Sequence[Callable] = ()) -> None:
        """torch's autograd over the saved forward; the markers add each op's gradients to its
        inputs' (so the hooks read them as they are made) and call the global hooks, then
        ``pre`` / ``post``."""
        if self.saved is None:
            raise StadynError("backward: the buffers of the last forward were cleared "
                              "(backward(clear_buffer=True) ran already); run forward again")
        self.backward_hooks = (list(_PRE.values()) + list(pre),
                               list(_POST.values()) + list(post))
        ids = list(self._leaf_tensors)
        wanted = [self._leaf_tensors[i] for i in ids]
        self._sums, self._reached = {}, set()
        try:
            # the markers accumulate the leaves' gradients; autograd.grad itself writes none
            grads = torch.autograd.grad(root._data, wanted, seed, retain_graph=not clear_buffer,
                                        allow_unused=True) if wanted else ()
            for i, t, g in zip(ids, wanted, grads):
                if g is not None and i not in self._reached:   # reached by no marked argument
                    t.grad = g if t.grad is None else t.grad.add_(g)
        finally:
            self._sums, self._reached = {}, set()
            self.backward_hooks = (list(_PRE.values()), list(_POST.values()))
        for v in intermediates_of(root):
            if clear_buffer and not v._persistent:
                v._grad = None
        if clear_buffer:
            self.saved = None
