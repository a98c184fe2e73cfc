"""The generators a compiled step draws from, as inputs of its program.

A traced step holds each generator a drawing operator takes (a CNTK stream's handle, a seeded
NNabla op's generator) as a constant of its graph.  Inductor's on-disk cache keeps a graph's
tensor constants but not such opaque ones: a step loaded from the cache in a new process (a
training program run a second time) called the draw with ``None`` for its generator and
failed.  :func:`lift_generators` therefore calls each Stadyn draw in its keyed form
(:func:`stadyn.ops.keyed_draw_op`), the generator named by a 0-d tensor the program takes as
an input, so the compiled code holds no generator and the cached program draws, in each
process, from that process's generator: the same numbers as a static plan's.

A generator that only a torch operator takes (``torch.rand(..., generator=g)`` of an op with
a seed of its own, on a device where Stadyn draws torch's numbers) has no keyed form; such a
graph is compiled without inductor's on-disk cache (:func:`lift_generators` says so).
"""

from __future__ import annotations

import torch
import torch.fx as fx

from ..graph import new_placeholder
from ..ops import generator_key, keyed_draw_op

__all__ = ["lift_generators"]


def _generator_constant(gm: fx.GraphModule, arg) -> torch.Generator | None:
    if isinstance(arg, fx.Node) and arg.op == "get_attr":
        value = getattr(gm, arg.target, None)
        return value if isinstance(value, torch.Generator) else None
    return arg if isinstance(arg, torch.Generator) else None


def lift_generators(gm: fx.GraphModule) -> tuple[list[torch.Tensor], bool]:
    """Call every Stadyn draw in ``gm`` in its keyed form, its generator named by a new input
    placed after ``gm``'s own (one for each generator); returns those inputs' values (0-d int64
    tensors, to pass on every call) and whether the program can be kept in inductor's on-disk
    cache (no generator left in the graph).

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> from stadyn.ops import CNTKStream
        >>> from stadyn.ops._cntk_draws import cntk_draw
        >>> s = CNTKStream(7)
        >>> f = lambda x: x * cntk_draw("dropout", 0.5, 0.0, (6,), torch.float32, s)
        >>> gm = make_fx(f, tracing_mode="fake")(torch.ones(6))     # (draws nothing)
        >>> keys, cacheable = lift_generators(gm)
        >>> len(keys), cacheable, gm(torch.ones(6), *keys).tolist()
        (1, True, [1.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    """
    graph = gm.graph
    inputs: dict[int, fx.Node] = {}          # id(generator) -> its input
    keys: list[torch.Tensor] = []
    cacheable = True
    for n in list(graph.nodes):
        if n.op != "call_function" or not n.args:
            continue
        generator = _generator_constant(gm, n.args[-1])
        keyed = keyed_draw_op(n.target) if generator is not None and not n.kwargs else None
        if keyed is None:
            if any(_generator_constant(gm, a) is not None
                   for a in (*n.args, *n.kwargs.values())):
                cacheable = False
            continue
        node = inputs.get(id(generator))
        if node is None:
            key = torch.tensor(generator_key(generator), dtype=torch.int64)
            node = new_placeholder(gm, f"generator_key_{len(keys)}", key)
            inputs[id(generator)] = node
            keys.append(key)
        n.target, n.args = keyed, (*n.args[:-1], node)
    for n in list(graph.nodes):
        if n.op == "get_attr" and not n.users:
            graph.erase_node(n)
    if keys:
        gm.recompile()
    return keys, cacheable
