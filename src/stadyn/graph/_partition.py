"""Splitting a traced joint forward+backward graph into a forward and a backward program.

Lowering traces the *joint* function of a static graph — its forward values and, with
``torch.autograd.grad``, the gradients of its roots w.r.t. its leaves — as one ATen graph.
:func:`partition` cuts it where the roots' gradients (the *tangents*) come in: what does not
depend on them runs in the forward, which also returns the *residuals* the backward needs.

The split follows data edges and *writes*: an in-place op (``add_``, ``copy_``, ``index_put_``)
on a tensor or on a view of it changes what every later reader of that storage reads, though
nothing reads the in-place op's own result.  A kernel's backward that adds its pieces into
strided slices of a zeroed image and returns a copy of the image's middle (``col2im``) is such
a program: the copy reads the image, not the additions, so without the write edges the
additions fell out of the backward program and the gradient came out all zeros.  Each node
that reads a storage therefore also depends on the last write to it before it
(:func:`_write_edges`).
"""

from __future__ import annotations

import torch
import torch.fx as fx
from torch.utils._pytree import tree_leaves

from .._errors import StadynError
from ._aliases import aliasing, argument, viewed_source
from ._labels import is_range_marker, place_ranges
from ._passes import drop_dead_code
from ._tracing import program_module

__all__ = ["partition"]


def partition(gm: fx.GraphModule, n_primals: int, n_fw_outputs: int
              ) -> tuple[fx.GraphModule, fx.GraphModule, int]:
    """Split a joint graph into forward and backward programs.

    ``gm`` takes ``n_primals`` primal inputs followed by tangents (the roots' gradients) and
    returns ``n_fw_outputs`` forward values followed by gradients.  Returns ``(fw, bw,
    n_residuals)``: ``fw(*primals) -> (*forward values, *residuals)`` holds every node that does
    not depend on a tangent and is needed by a forward value or has a side effect (running
    statistics, random numbers); ``bw(*residuals, *tangents) -> gradients`` holds the rest.

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> from stadyn.graph import partition
        >>> def joint(x, g):
        ...     y = (x * x).sum()
        ...     dx, = torch.autograd.grad(y, x, g)
        ...     return y, dx
        >>> gm = make_fx(joint)(torch.ones(3, requires_grad=True), torch.tensor(1.0))
        >>> fw, bw, n_residuals = partition(gm, n_primals=1, n_fw_outputs=1)
        >>> y, *saved = fw(torch.full((3,), 2.0))
        >>> float(y), bw(*saved, torch.tensor(1.0))
        (12.0, (tensor([4., 4., 4.]),))
    """
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    primals, tangents = placeholders[:n_primals], placeholders[n_primals:]
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    outs = list(output.args[0])
    fw_outs, bw_outs = outs[:n_fw_outputs], outs[n_fw_outputs:]

    after_write = _write_edges(graph)

    def inputs_of(n: fx.Node) -> list[fx.Node]:
        written = after_write.get(n)
        return n.all_input_nodes + written if written else n.all_input_nodes

    tangent_dependent: set[fx.Node] = set(tangents)
    for n in graph.nodes:
        if n.op != "placeholder" and any(i in tangent_dependent for i in inputs_of(n)):
            tangent_dependent.add(n)

    forward: set[fx.Node] = set()
    stack = [n for n in fw_outs if isinstance(n, fx.Node)]
    stack += [n for n in graph.nodes if n.op == "call_function"
              and n not in tangent_dependent and n.is_impure() and not is_range_marker(n)]
    while stack:
        n = stack.pop()
        if n not in forward:
            forward.add(n)
            stack.extend(inputs_of(n))
    if forward & tangent_dependent:  # pragma: no cover - a forward value cannot need a tangent
        raise StadynError("internal error: forward values depend on the backward seed")

    primal_set = set(primals)
    available = forward | primal_set
    backward_set: set[fx.Node] = set()
    residual_set: set[fx.Node] = set()
    stack = [n for n in bw_outs if isinstance(n, fx.Node)]
    while stack:
        n = stack.pop()
        if n in backward_set or n in residual_set:
            continue
        if n in available and not _recast_of_primal(n, primal_set):
            residual_set.add(n)
            continue
        backward_set.add(n)
        stack.extend(n.all_input_nodes)
        # (a write the forward made is done by then: no residual for it)
        stack.extend(w for w in after_write.get(n, ()) if w not in available)
    residuals = [n for n in graph.nodes if n in residual_set]
    # Profiler ranges (a labelled plan's) go with the ops they bracket (_labels.py).
    fw_markers, bw_markers = place_ranges(graph, forward, backward_set)
    forward |= fw_markers
    backward_set |= bw_markers

    fw_graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for p in primals:
        env[p] = fw_graph.placeholder(p.name)
    for n in graph.nodes:
        if n in forward and n.op not in ("placeholder", "output"):
            env[n] = fw_graph.node_copy(n, env.__getitem__)
    fw_graph.output(tuple(env[n] for n in fw_outs) + tuple(env[n] for n in residuals))
    drop_dead_code(fw_graph)

    bw_graph = fx.Graph()
    benv: dict[fx.Node, fx.Node] = {}
    for i, r in enumerate(residuals):
        benv[r] = bw_graph.placeholder(f"saved_{i}")
    for t in tangents:
        benv[t] = bw_graph.placeholder(t.name)
    for n in graph.nodes:
        if n in backward_set and n.op != "placeholder":
            benv[n] = bw_graph.node_copy(n, benv.__getitem__)
    bw_graph.output(tuple(benv[n] for n in bw_outs))
    drop_dead_code(bw_graph)
    # Lazy modules: the plan's passes rewrite both before their code is generated (_tracing.py).
    return program_module(gm, fw_graph), program_module(gm, bw_graph), len(residuals)


def _write_edges(graph: fx.Graph) -> dict[fx.Node, list[fx.Node]]:
    """For each node that reads a storage an earlier node wrote in place, that last write: the
    edges a split must follow besides the data edges (see the module docstring).  A storage
    is named by the node that made it (views and in-place results name their input's)."""
    base: dict[fx.Node, fx.Node] = {}
    last_write: dict[fx.Node, fx.Node] = {}
    edges: dict[fx.Node, list[fx.Node]] = {}
    for n in graph.nodes:
        if n.op != "call_function":
            continue
        before = {last_write[b] for i in n.all_input_nodes
                  if (b := base.get(i, i)) in last_write}
        before.discard(n)
        if before:
            edges[n] = list(before)
        source = viewed_source(n)
        if source is not None:
            base[n] = base.get(source, source)
        for k, formal in aliasing(n.target)[1]:
            for a in tree_leaves(argument(n, k, formal)):
                if isinstance(a, fx.Node):
                    last_write[base.get(a, a)] = n
    return edges


def _recast_of_primal(n: fx.Node, primals: set) -> bool:
    """Whether ``n`` is a dtype cast of a primal on its own device (``aten._to_copy`` of a
    leaf: the fp16 copy of an fp32 parameter that a ``cpu:half`` op reads).  The backward
    casts such a value again from the primal rather than taking the forward's copy as a
    residual: the primal is the leaf's own tensor, so a parameter a solver updated between
    the forward and the backward is read with its new value, as NNabla 1.39's backward reads
    the current array (cast to half when the backward runs) -- the forward's copy held the
    old one (case ``nnabla_passes_41.passes41__backward_after_an_update_reads_the_new_weight``).
    """
    if n.op != "call_function" or n.target is not torch.ops.aten._to_copy.default:
        return False
    if len(n.args) != 1 or n.args[0] not in primals:
        return False
    source, value = n.args[0].meta.get("val"), n.meta.get("val")
    return (isinstance(source, torch.Tensor) and isinstance(value, torch.Tensor)
            and source.device == value.device and set(n.kwargs) <= {"dtype", "layout"})
