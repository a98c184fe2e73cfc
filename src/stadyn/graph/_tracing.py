"""Tracing a function over fake tensors into an ATen program: the one ``make_fx`` call that
static plans (``_plan.py``) and ``compile_step`` share.

``make_fx`` by default also runs the traced function under a torch-function mode that records
which ``torch.*`` call each ATen node came from (``node.meta["torch_fn"]``).  Nothing here reads
that record, and the mode is costly: every ``torch.*`` call the trace makes goes through
Python once more, and ``torch.autograd.grad`` inside a joint trace runs the whole backward
under it.  For an unrolled recurrence (nnabla-examples' PTB LSTM, 35 steps x 2 layers: about
6,500 ATen ops) it took about half of the trace's time.  The generated programs are the
same without it (``tests/graph/test_tracing.py``).

The programs are *lazy* ``GraphModule``s (torch's ``_LazyGraphModule``): a pass that rewrites
one marks it for regeneration instead of generating its Python at once, so a plan's programs
are generated once each, after the last pass (:func:`realize`), not after the trace, the
forward/backward split and every pass (six times over for a joint trace; each costs time
linear in the program, about 0.2 s per 10,000 nodes).  A lazy program called or shown
before :func:`realize` regenerates itself then.

Python's cyclic garbage collector is paused while a plan is built (:func:`collector_paused`):
a trace allocates tens of thousands of objects (fake tensors, fx nodes, autograd nodes) that
live until the build ends, and each of the collector's full passes walks every one of them
again, so with it running a build's cost grew faster than its node count (a quarter of a
35-step PTB LSTM's build).  The runner keeps it paused for its whole build (the structure
key and the template kept for graphs rebuilt alike allocate per node too).  What the build
leaves as cyclic garbage is collected at the next pass after it.
"""

from __future__ import annotations

import gc
import inspect
from contextlib import contextmanager, nullcontext
from typing import Any, Callable, Iterator

import torch.fx as fx
from torch.fx.experimental.proxy_tensor import make_fx

__all__ = ["trace_fake", "program_module", "realize", "collector_paused"]

try:                                                  # torch >= 2.3
    from torch.fx._lazy_graph_module import _LazyGraphModule, _use_lazy_graph_module
except ImportError:                                   # pragma: no cover - older torch
    _LazyGraphModule, _use_lazy_graph_module = fx.GraphModule, None

# torch >= 2.6 (an older make_fx has no such mode to turn off)
_OPTIONS = ({"_disable_torch_fn_metadata_mode": True}
            if "_disable_torch_fn_metadata_mode" in inspect.signature(make_fx).parameters
            else {})


def trace_fake(fn: Callable[..., Any], *args: Any) -> fx.GraphModule:
    """``make_fx(fn, tracing_mode="fake")(*args)`` without the torch-function metadata mode
    (see the module docstring): no computation, no side effects, the same program.

    Example:
        >>> import torch
        >>> from stadyn.graph import trace_fake
        >>> gm = trace_fake(lambda x: torch.tanh(x) * 2, torch.ones(3))
        >>> [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"]
        ['tanh.default', 'mul.Tensor']
    """
    with _use_lazy_graph_module(True) if _use_lazy_graph_module else nullcontext():
        return make_fx(fn, tracing_mode="fake", **_OPTIONS)(*args)


def program_module(root: fx.GraphModule, graph: fx.Graph) -> fx.GraphModule:
    """A (lazy) ``GraphModule`` running ``graph``, with ``root``'s attributes.

    Example:
        >>> import torch, torch.fx as fx
        >>> from stadyn.graph import program_module, realize
        >>> graph = fx.Graph()
        >>> x = graph.placeholder("x")
        >>> _ = graph.output(graph.call_function(torch.ops.aten.neg.default, (x,)))
        >>> realize(program_module(fx.GraphModule({}, fx.Graph()), graph))(torch.ones(2))
        tensor([-1., -1.])
    """
    return _LazyGraphModule(root, graph)


def realize(gm: fx.GraphModule) -> fx.GraphModule:
    """Generate ``gm``'s Python now if a rewrite left it to be regenerated; returns ``gm``.
    A plan calls it once per program, after its last pass, before it keeps ``gm.forward``.

    Example:
        >>> import torch
        >>> from stadyn.graph import realize, trace_fake
        >>> gm = trace_fake(lambda x: x + 1, torch.ones(2))
        >>> realize(gm)(torch.zeros(2)).tolist()
        [1.0, 1.0]
    """
    if isinstance(gm, _LazyGraphModule) and _LazyGraphModule is not fx.GraphModule:
        gm.real_recompile()
    return gm


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the block (see the module docstring); it
    runs again afterwards if it ran before, and stays off if something else turned it off.

    Example:
        >>> import gc
        >>> from stadyn.graph import collector_paused
        >>> with collector_paused():
        ...     gc.isenabled()
        False
        >>> gc.isenabled()
        True
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
