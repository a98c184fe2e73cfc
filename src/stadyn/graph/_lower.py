"""Static graphs: lowering to generated code, replay, and backward without torch's autograd.

``forward()`` on a static graph lowers the subgraph its roots depend on, once, to torch.fx code:

1. The graph's nodes are replayed through their op implementations under
   :func:`torch.fx.experimental.proxy_tensor.make_fx` on *fake* tensors (no computation, no side
   effects, no random numbers drawn).  The result is straight-line ATen code: Stadyn's own
   per-op Python (argument handling, shape logic, nodes, Variables) does not run in a replay.
2. When a backward may follow (some leaf needs a gradient and grad mode is on), the trace is of
   the *joint* function (forward outputs and the gradients of the roots w.r.t. the leaves), and
   :func:`partition` splits it into a forward program, which also returns the intermediates the
   gradients need ("residuals"), and a backward program that maps residuals and the roots'
   gradients to the leaves' gradients.  The forward runs under ``no_grad``; ``backward()`` runs
   the backward program and accumulates into the leaves' ``.grad``.  No autograd tape is built
   per iteration, which is where static beats dynamic.
3. Plans are cached on the root by the graph version, the leaves' shapes, dtypes, devices and
   ``requires_grad`` flags, the precision context and the buffer-clearing flags.

:mod:`stadyn.compile` builds on the same trace to compile whole training steps.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.fx as fx
from torch.fx.experimental.proxy_tensor import make_fx

from .._errors import StadynError
from ._context import get_current_context
from ._mode import is_training
from ._precision import cast_arguments
from ._spec import OpSpec
from ._variable import FunctionNode, Variable, layout_version, op_error, topological_nodes

__all__ = ["run_forward", "backward", "build_plan", "StaticPlan", "EagerPlan", "partition",
           "refresh_shapes", "GRAD_SPEC",
           "bump_graph_version", "graph_version"]

_graph_version = 0


def bump_graph_version() -> None:
    """Invalidate every cached plan (called when a graph is rewired)."""
    global _graph_version
    _graph_version += 1


def graph_version() -> int:
    return _graph_version


# ---------------------------------------------------------------------------------------------
# The gradient op: sd.grad builds one of these nodes.
# ---------------------------------------------------------------------------------------------
def _grad_impl(*tensors, n_outputs: int = 1, grad_outputs: tuple = ()):
    outs, ins = tensors[:n_outputs], tensors[n_outputs:]
    seeds = []
    for o, g in zip(outs, grad_outputs or (None,) * n_outputs):
        if g is None:
            seeds.append(torch.ones_like(o))
        else:
            seeds.append(torch.as_tensor(g, dtype=o.dtype, device=o.device).expand_as(o))
    grads = torch.autograd.grad(outs, ins, seeds, create_graph=True, allow_unused=True)
    return tuple(torch.zeros_like(i) if g is None else g for i, g in zip(ins, grads))


def _grad_shape(*tensors, n_outputs: int = 1, grad_outputs: tuple = ()):
    return tuple(torch.empty_like(t) for t in tensors[n_outputs:])


GRAD_SPEC = OpSpec(name="grad", impl=_grad_impl, inputs=("*x",),
                   attrs={"n_outputs": 1, "grad_outputs": ()}, shape=_grad_shape,
                   category="graph", doc="Gradients of the first n_outputs inputs w.r.t. the rest.")


# ---------------------------------------------------------------------------------------------
# Collecting and interpreting a subgraph
# ---------------------------------------------------------------------------------------------
def _key(v: Variable):
    return id(v) if v.parent is None else (id(v.parent), v._index)


def _leaf_tensor(v: Variable) -> torch.Tensor:
    if v._alias is not None:
        return v._alias.data.detach()
    if v._data is None:
        return v.data
    return v._data


def _collect(roots: Sequence[Variable]) -> tuple[list[FunctionNode], list[Variable]]:
    nodes = topological_nodes(roots)
    leaves: list[Variable] = []
    seen: set[int] = set()
    for node in nodes:
        for v in node.inputs:
            if v.parent is None and id(v) not in seen:
                seen.add(id(v))
                leaves.append(v)
    for r in roots:
        if r.parent is None and id(r) not in seen:
            seen.add(id(r))
            leaves.append(r)
    return nodes, leaves


def _node_arguments(node: FunctionNode, env: dict, half: torch.dtype | None
                    ) -> tuple[list, dict]:
    """``node``'s call arguments with Variables replaced by their tensors in ``env``, cast by
    the op's declared precision under a half-precision context."""
    args = [env[_key(a)] if isinstance(a, Variable) else a for a in node.args]
    kwargs = ({k: (env[_key(v)] if isinstance(v, Variable) else v)
               for k, v in node.kwargs.items()} if node.kwargs else {})
    if half is not None and node.spec.precision != "any":
        args, kwargs = cast_arguments(node.spec.precision, args, kwargs, half)
    return args, kwargs


def _node_error(node: FunctionNode, env: dict, exc: BaseException) -> StadynError:
    """:func:`op_error` for ``node`` failing on the tensors ``env`` gave it."""
    shapes = [tuple(env[_key(v)].shape) for v in node.inputs]
    return op_error(node.spec, node.inputs, node.scope, exc, shapes)


def interpret(nodes: Sequence[FunctionNode], leaves: Sequence[Variable],
              leaf_tensors: Sequence[torch.Tensor], wanted: Sequence[Variable],
              name_errors: bool = False) -> list:
    """Run ``nodes`` in order on torch tensors; return the tensors of ``wanted``.

    This is the reference semantics of a static graph; lowering traces exactly this function.
    With ``name_errors`` an op that fails raises the error dynamic mode gives (op, scope and
    input shapes: :func:`op_error`).
    """
    env: dict[Any, torch.Tensor] = {id(v): t for v, t in zip(leaves, leaf_tensors)}
    half = get_current_context().half_dtype
    for node in nodes:
        args, kwargs = _node_arguments(node, env, half)
        try:
            out = node.spec.impl(*args, **kwargs)
        except Exception as exc:
            if not name_errors:
                raise
            raise _node_error(node, env, exc) from exc
        nid = id(node)
        if isinstance(out, torch.Tensor):
            env[(nid, 0)] = out
        else:
            for i, t in enumerate(out):
                env[(nid, i)] = t
    return [env[_key(v)] for v in wanted]


def _as_meta(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value if value.device.type == "meta" else value.to("meta")
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(_as_meta(v) for v in value)
    return value


def refresh_shapes(nodes: Sequence[FunctionNode], leaves: Sequence[Variable]) -> None:
    """Re-infer the shape and dtype of every node output from the leaves' current shapes.

    A static graph records shapes when it is built; when an input is later given a batch of
    another size, this brings the intermediate Variables up to date (on ``meta`` tensors).  An
    op that cannot take its new input shapes raises the error it raises while a graph is built
    (:func:`op_error`: op, scope, input shapes).

    A node output that still holds a buffer of another shape (computed before the
    resize, and not recomputed since: an intermediate of a ``clear_no_need_grad`` forward, or
    one that belongs to another root's plan) drops it: ``Variable.shape`` reads a held buffer
    first, so a stale one would make the Variable report its old shape (and a model file
    record it).
    """
    env: dict[Any, torch.Tensor] = {}
    for v in leaves:
        t = _leaf_tensor(v)
        env[id(v)] = torch.empty(t.shape, dtype=t.dtype, device="meta")
    half = get_current_context().half_dtype
    for node in nodes:
        args, kwargs = _node_arguments(node, env, half)
        args = [_as_meta(a) for a in args]                 # constants held by the node
        kwargs = {k: _as_meta(v) for k, v in kwargs.items()}
        try:
            out = node.spec.infer(args, kwargs)
        except Exception as exc:
            raise _node_error(node, env, exc) from exc
        outs = (out,) if isinstance(out, torch.Tensor) else tuple(out)
        for i, (ref, t) in enumerate(zip(node._outputs, outs)):
            env[(id(node), i)] = t
            v = ref()
            if v is not None:
                v._shape, v._dtype = tuple(t.shape), t.dtype
                held = v._data
                if held is not None and tuple(held.shape) != v._shape:
                    v._data = None


# ---------------------------------------------------------------------------------------------
# Partitioning a joint forward+backward graph
# ---------------------------------------------------------------------------------------------
def partition(gm: fx.GraphModule, n_primals: int, n_fw_outputs: int
              ) -> tuple[fx.GraphModule, fx.GraphModule, int]:
    """Split a joint graph into forward and backward programs.

    ``gm`` takes ``n_primals`` primal inputs followed by tangents (the roots' gradients) and
    returns ``n_fw_outputs`` forward values followed by gradients.  Returns ``(fw, bw,
    n_residuals)``: ``fw(*primals) -> (*forward values, *residuals)`` holds every node that does
    not depend on a tangent and is needed by a forward value or has a side effect (running
    statistics, random numbers); ``bw(*residuals, *tangents) -> gradients`` holds the rest.
    """
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    primals, tangents = placeholders[:n_primals], placeholders[n_primals:]
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    outs = list(output.args[0])
    fw_outs, bw_outs = outs[:n_fw_outputs], outs[n_fw_outputs:]

    tangent_dependent: set[fx.Node] = set(tangents)
    for n in graph.nodes:
        if n.op != "placeholder" and any(i in tangent_dependent for i in n.all_input_nodes):
            tangent_dependent.add(n)

    forward: set[fx.Node] = set()
    stack = [n for n in fw_outs if isinstance(n, fx.Node)]
    stack += [n for n in graph.nodes if n.op == "call_function"
              and n not in tangent_dependent and n.is_impure()]
    while stack:
        n = stack.pop()
        if n not in forward:
            forward.add(n)
            stack.extend(n.all_input_nodes)
    if forward & tangent_dependent:  # pragma: no cover - a forward value cannot need a tangent
        raise StadynError("internal error: forward values depend on the backward seed")

    available = forward | set(primals)
    backward_set: set[fx.Node] = set()
    residual_set: set[fx.Node] = set()
    stack = [n for n in bw_outs if isinstance(n, fx.Node)]
    while stack:
        n = stack.pop()
        if n in backward_set or n in residual_set:
            continue
        if n in available:
            residual_set.add(n)
            continue
        backward_set.add(n)
        stack.extend(n.all_input_nodes)
    residuals = [n for n in graph.nodes if n in residual_set]

    fw_graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for p in primals:
        env[p] = fw_graph.placeholder(p.name)
    for n in graph.nodes:
        if n in forward and n.op not in ("placeholder", "output"):
            env[n] = fw_graph.node_copy(n, env.__getitem__)
    fw_graph.output(tuple(env[n] for n in fw_outs) + tuple(env[n] for n in residuals))
    fw_graph.eliminate_dead_code()

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
    bw_graph.eliminate_dead_code()
    return fx.GraphModule(gm, fw_graph), fx.GraphModule(gm, bw_graph), len(residuals)


# ---------------------------------------------------------------------------------------------
# Plans
# ---------------------------------------------------------------------------------------------
class StaticPlan:
    """A lowered static graph: a forward program and (when needed) a backward program."""

    __slots__ = ("roots", "leaves", "fill", "fw", "bw", "n_fill", "grad_leaves", "diff_roots",
                 "saved", "_fw_call", "_bw_call", "nodes", "_copy_grad", "has_backward",
                 "_out_slots", "_cast_slots", "_owned")

    def __init__(self, roots, nodes, leaves, fill, fw, bw, grad_leaves, diff_roots,
                 copy_grad: list[bool] | None = None,
                 out_slots: Sequence[tuple[int, torch.dtype | None]] = (),
                 cast_slots: Sequence[tuple[int, torch.dtype]] = ()):
        self.roots: list[Variable] = roots
        self.nodes: list[FunctionNode] = nodes
        self.leaves: list[Variable] = leaves
        self.fill: list[Variable] = fill
        self.n_fill = len(fill)
        self.fw: fx.GraphModule = fw
        self.bw: fx.GraphModule | None = bw
        self.grad_leaves: list[Variable] = grad_leaves
        self.diff_roots: list[Variable] = diff_roots
        self.saved: tuple | None = None
        self._fw_call = fw.forward
        self._bw_call = bw.forward if bw is not None else None
        if copy_grad is None:
            copy_grad = aliased_outputs(bw) if bw is not None else []
        self._copy_grad = copy_grad
        self._out_slots = tuple(out_slots)    # gradients the program writes into given buffers
        self._cast_slots = tuple(cast_slots)  # leaves the forward casts into given buffers
        self._owned: dict = {}                # buffers the plan keeps, by slot
        self.has_backward = bw is not None

    @property
    def code(self) -> str:
        """The generated Python of the forward (and backward) program, for inspection."""
        text = self.fw.code
        if self.bw is not None:
            text += "\n# backward\n" + self.bw.code
        return text

    def run(self) -> None:
        tensors = [_leaf_tensor(v) for v in self.leaves]
        if self._cast_slots:
            tensors += [self._buffer(("cast", i), tensors[i], dtype)
                        for i, dtype in self._cast_slots]
        try:
            with torch.no_grad():
                outs = self._fw_call(*tensors)
        except Exception as exc:
            # The generated program does not know the ops; replaying the graph op by op on the
            # same inputs finds the one that fails and names it, as dynamic mode would.
            with torch.no_grad():
                interpret(self.nodes, self.leaves, tensors[:len(self.leaves)], [],
                          name_errors=True)
            raise
        n = self.n_fill
        for v, t in zip(self.fill, outs):
            v._data = t
        self.saved = tuple(outs[n:]) if self.bw is not None else None

    def run_backward(self, root: Variable, seed: torch.Tensor, clear_buffer: bool) -> None:
        if self.saved is None:
            raise StadynError("backward: the buffers of the last forward were cleared "
                              "(backward(clear_buffer=True) ran already); run forward again")
        tangents = []
        for r in self.diff_roots:
            if r is root:
                tangents.append(seed)
            else:
                tangents.append(torch.zeros_like(r._data))
        buffers = [self._buffer(("grad", k), self.grad_leaves[k]._data, owned) if owned
                   else _grad_out_buffer(self.grad_leaves[k]._data)
                   for k, owned in self._out_slots]
        with torch.no_grad():
            grads = self._bw_call(*self.saved, *tangents, *buffers)
        if clear_buffer:
            self.saved = None
        accumulate_grads(self.grad_leaves, grads, self._copy_grad)

    def _buffer(self, key: tuple, like: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """The plan's own buffer for a slot (shaped like ``like``), made on first use and
        kept."""
        buffer = self._owned.get(key)
        if buffer is None:
            buffer = self._owned[key] = torch.empty(like.shape, dtype=dtype, device=like.device)
        return buffer


_aten = torch.ops.aten
_SAME_SHAPE_NOOPS = {_aten.view.default, _aten._unsafe_view.default, _aten.reshape.default,
                     _aten.expand.default}


def _shape_of(n) -> tuple | None:
    val = n.meta.get("val") if isinstance(n, fx.Node) else None
    return tuple(val.shape) if isinstance(val, torch.Tensor) else None


def _output_node(gm: fx.GraphModule) -> fx.Node:
    return next(n for n in reversed(gm.graph.nodes) if n.op == "output")


def simplify(gm: fx.GraphModule) -> fx.GraphModule:
    """Remove ops that do nothing when the program runs under ``no_grad``.

    ``detach``; ``view``/``reshape``/``expand`` to the shape the tensor already has; and
    ``t(t(x))``.  make_fx emits these liberally (each costs an ATen dispatch at replay).
    """
    graph = gm.graph
    for n in list(graph.nodes):
        if n.op != "call_function" or not n.args:
            continue
        src = n.args[0]
        if n.target is _aten.detach.default:
            replacement = src
        elif n.target in _SAME_SHAPE_NOOPS and _shape_of(n) is not None \
                and _shape_of(n) == _shape_of(src):
            replacement = src
        elif n.target is _aten.t.default and isinstance(src, fx.Node) \
                and src.target is _aten.t.default:
            replacement = src.args[0]
        else:
            continue
        n.replace_all_uses_with(replacement)
        graph.erase_node(n)
    graph.eliminate_dead_code()
    gm.recompile()
    return gm


def defer_output_casts(gm: fx.GraphModule) -> fx.GraphModule:
    """Return a backward program's gradients in the precision they were computed in.

    Under a ``bfloat16``/``float16`` context a parameter's gradient is computed in half
    precision and cast back to the parameter's fp32 at the end of the traced backward.  Each
    such cast allocates a new fp32 tensor per step (for a large weight, fresh pages the kernel
    must fault in).  This drops a cast whose only use is the program's output; the
    accumulation into ``.grad`` (:func:`accumulate_grads`) then converts while it adds or
    copies into a buffer it already has.
    """
    output = _output_node(gm)
    outs = list(output.args[0])
    changed = False
    for k, n in enumerate(outs):
        if not (isinstance(n, fx.Node) and n.target is _aten._to_copy.default
                and len(n.users) == 1 and len(n.args) == 1
                and set(n.kwargs) <= {"dtype", "layout", "device"}
                and isinstance(n.args[0], fx.Node)):
            continue
        src, val = n.args[0], n.meta.get("val")
        before = src.meta.get("val")
        if not (isinstance(val, torch.Tensor) and isinstance(before, torch.Tensor)
                and before.dtype in (torch.bfloat16, torch.float16)
                and val.dtype.is_floating_point and before.shape == val.shape
                and before.device == val.device and before.layout == val.layout):
            continue
        outs[k] = src
        changed = True
    if changed:
        output.args = (tuple(outs),)
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return gm


#: Matrix-product gradients and half-precision parameter copies at least this large are
#: written into reused buffers.
OUT_BUFFER_BYTES = 1 << 20
_HALF_TYPES = (torch.bfloat16, torch.float16)


def _is_large(val: torch.Tensor) -> bool:
    return val.numel() * val.element_size() >= OUT_BUFFER_BYTES


def is_large_product(n) -> bool:
    """Is ``n`` an ``mm`` with a contiguous result of at least :data:`OUT_BUFFER_BYTES` (the
    products whose fresh result memory costs page faults on every step)?"""
    val = n.meta.get("val") if isinstance(n, fx.Node) else None
    return (isinstance(val, torch.Tensor) and n.target is _aten.mm.default
            and val.is_contiguous() and _is_large(val))


def _write_into_placeholder(gm: fx.GraphModule, n: fx.Node, name: str,
                            call: Callable[[fx.Node], tuple]) -> fx.Node:
    """Replace ``n`` by a call that writes its value into a new placeholder ``name``, appended
    after the program's other placeholders (first, in a program that has none);
    ``call(placeholder)`` gives that call's ``(target, args, kwargs)``.  Returns the
    placeholder."""
    graph = gm.graph
    placeholders = graph.find_nodes(op="placeholder")
    with (graph.inserting_after(placeholders[-1]) if placeholders
          else graph.inserting_before(next(iter(graph.nodes)))):
        buffer = graph.placeholder(name)
    buffer.meta["val"] = n.meta["val"]
    with graph.inserting_after(n):
        written = graph.call_function(*call(buffer))
    written.meta["val"] = n.meta["val"]
    n.replace_all_uses_with(written)
    graph.erase_node(n)
    return buffer


def write_products_into_buffers(gm: fx.GraphModule, leaves: Sequence[torch.Tensor]
                                ) -> list[tuple[int, torch.dtype | None]]:
    """Let a backward program write large weight gradients into buffers it is given.

    A gradient computed by a matrix product (``mm``: an affine layer's weight) comes out of the
    program as a new tensor every step; for a large weight that means fresh memory the kernel
    must fault in page by page (a 8192 x 1024 fp32 gradient: 32 MB, several milliseconds).
    For each output ``k`` that is such a product, of at least :data:`OUT_BUFFER_BYTES`, this
    adds a trailing placeholder and computes the product with ``mm.out`` into it.  Returns
    ``(k, owned)`` for each, in the order of the new placeholders: the caller passes one
    buffer per position — the leaf's gradient buffer (:func:`_grad_out_buffer`) when
    ``owned`` is None, or, for a half-precision product of an fp32 leaf
    (:func:`defer_output_casts` left it unconverted), a buffer of dtype ``owned`` the plan
    keeps: the product never becomes a ``.grad`` itself.
    """
    output = _output_node(gm)
    outs = list(output.args[0])
    slots: list[tuple[int, torch.dtype | None]] = []
    seen: set = set()
    for k, (n, leaf) in enumerate(zip(outs, leaves)):
        if not (is_large_product(n) and n not in seen):
            continue
        val = n.meta["val"]
        if not ((val.dtype == leaf.dtype or (val.dtype in _HALF_TYPES
                                             and leaf.dtype == torch.float32))
                and tuple(val.shape) == tuple(leaf.shape)):
            continue
        seen.add(n)
        _write_into_placeholder(gm, n, f"grad_out_{k}",
                                lambda buffer: (_aten.mm.out, tuple(n.args), {"out": buffer}))
        slots.append((k, val.dtype if val.dtype != leaf.dtype else None))
    if slots:
        gm.recompile()
    return slots


def cast_parameters_into_buffers(gm: fx.GraphModule, leaves: Sequence[torch.Tensor],
                                 n_values: int) -> list[tuple[int, torch.dtype]]:
    """Let a forward program write the half-precision copies of large parameters into buffers
    it is given.

    Under a ``bfloat16``/``float16`` context each op casts its fp32 parameters on every step
    (:mod:`stadyn.graph._precision`).  For a large weight the cast is a new tensor each step,
    fresh pages once the allocator has given the last one back (8192 x 1024 in bf16: 16 MB).
    Each cast of a leaf that needs a gradient, of at least :data:`OUT_BUFFER_BYTES`, becomes
    ``copy_`` into a trailing placeholder; returns the leaf positions and the copies' dtypes,
    in placeholder order.
    The caller keeps one buffer per position: a forward overwrites the copy the previous
    forward saved for its backward, which holds the same values unless the parameter changed,
    and a plan's backward always belongs to its latest forward.  A copy that one of the first
    ``n_values`` outputs (the values Variables receive) could share memory with is left alone.
    """
    exposed = {_storage_owner(n) for n in _output_node(gm).args[0][:n_values]}
    placeholders = gm.graph.find_nodes(op="placeholder")
    slots: list[tuple[int, torch.dtype]] = []
    for i, (ph, leaf) in enumerate(zip(placeholders, leaves)):
        if not (leaf.requires_grad and leaf.dtype == torch.float32 and leaf.is_contiguous()):
            continue
        for n in list(ph.users):
            val = n.meta.get("val")
            if not (n.target is _aten._to_copy.default and n.args == (ph,) and n not in exposed
                    and set(n.kwargs) <= {"dtype"} and isinstance(val, torch.Tensor)
                    and val.dtype in _HALF_TYPES and _is_large(val)):
                continue
            _write_into_placeholder(gm, n, f"cast_out_{i}",
                                    lambda buffer: (_aten.copy_.default, (buffer, ph), {}))
            slots.append((i, val.dtype))
            break
    if slots:
        gm.recompile()
    return slots


def _grad_out_buffer(t: torch.Tensor) -> torch.Tensor:
    """Where the backward program writes ``t``'s gradient: the buffer of its previous gradient
    when the solver has dropped it and no one holds it (:func:`_take_spare`), else a new one
    (remembered for the next step)."""
    spare = _take_spare(t)
    if spare is None:
        spare = torch.empty_like(t, memory_format=torch.contiguous_format)
        setattr(t, _SPARE, spare)
    return spare


class EagerPlan:
    """A static graph run by interpreting its nodes eagerly, with torch's autograd for backward.

    Used when the graph holds an op declared ``traceable=False`` (e.g. a collective) or when
    tracing fails; same interface as :class:`StaticPlan`, same results, none of its speed-up.
    """

    __slots__ = ("roots", "nodes", "leaves", "fill", "diff_roots", "saved", "has_backward",
                 "reason")

    def __init__(self, roots, nodes, leaves, fill, needs_backward: bool, reason: str):
        self.roots, self.nodes, self.leaves, self.fill = roots, nodes, leaves, fill
        self.has_backward = needs_backward
        self.diff_roots: list[Variable] = []
        self.saved: list | None = None
        self.reason = reason

    @property
    def code(self) -> str:
        return f"# runs eagerly: {self.reason}"

    def run(self) -> None:
        tensors = [_leaf_tensor(v) for v in self.leaves]
        with torch.set_grad_enabled(self.has_backward):
            outs = interpret(self.nodes, self.leaves, tensors, self.fill, name_errors=True)
        for v, t in zip(self.fill, outs):
            v._data = t
        self.diff_roots = [r for r in self.roots if r._data is not None and r._data.requires_grad]
        self.saved = outs if self.has_backward else None

    def run_backward(self, root: Variable, seed: torch.Tensor, clear_buffer: bool) -> None:
        if self.saved is None:
            raise StadynError("backward: the buffers of the last forward were cleared "
                              "(backward(clear_buffer=True) ran already); run forward again")
        torch.autograd.backward(root._data, seed, retain_graph=not clear_buffer)
        if clear_buffer:
            self.saved = None


def _storage_owner(n):
    """The node whose result owns ``n``'s storage: follows view ops (ATen ops whose result
    aliases an argument) back through their first argument."""
    while isinstance(n, fx.Node) and n.op == "call_function":
        schema = getattr(n.target, "_schema", None)
        returns = schema.returns if schema is not None else ()
        if not (returns and returns[0].alias_info is not None and n.args):
            break
        n = n.args[0]
    return n


def aliased_outputs(gm: fx.GraphModule) -> list[bool]:
    """For each output of ``gm``: may it share memory with an input or another output?

    Follows view ops (ATen ops whose result aliases an argument) back to the node that owns the
    storage.  Outputs owned by an input (a tangent, a residual) or by the same node as an earlier
    output must be copied before they become a ``.grad`` that later accumulates in place.
    """
    output = _output_node(gm)
    flags, owners = [], set()
    for n in output.args[0]:
        root = _storage_owner(n)
        flags.append(not isinstance(root, fx.Node) or root.op == "placeholder" or root in owners)
        owners.add(root)
    return flags


# The .grad tensor a parameter last got from a copy or conversion in accumulate_grads is kept
# on the parameter's tensor under this attribute, to be reused once the solver has dropped it
# (zero_grad) and nothing else holds it.
_SPARE = "_stadyn_spare_grad"


def _take_spare(t: torch.Tensor) -> torch.Tensor | None:
    """``t``'s former ``.grad`` if it may be overwritten: it matches ``t`` and no one else
    refers to it (the attribute holds the one Python reference besides the local name and
    getrefcount's argument; the storage is held by it and by the storage object this check
    creates)."""
    spare = getattr(t, _SPARE, None)
    if (spare is not None and spare.shape == t.shape and spare.dtype == t.dtype
            and spare.device == t.device and sys.getrefcount(spare) == 3
            and torch._C._storage_Use_Count(spare.untyped_storage()._cdata) == 2):
        return spare
    return None


def accumulate_grads(leaves: Sequence[Variable], grads: Sequence[torch.Tensor],
                     must_copy: Sequence[bool] | None = None) -> None:
    """Add ``grads`` into the leaves' ``.grad`` (set it where there is none yet).

    A gradient that must be copied (it aliases a program input or another output) or converted
    (computed in half precision for an fp32 parameter) goes into the buffer this leaf's previous
    gradient occupied, when the solver has dropped it and nothing else holds it — no fresh
    allocation per step.
    """
    olds, news = [], []
    for k, (v, g) in enumerate(zip(leaves, grads)):
        t = v._data
        if t.grad is None:
            if (must_copy[k] if must_copy is not None else g._base is not None) \
                    or g.dtype != t.dtype:
                spare = _take_spare(t)
                if spare is not None:
                    g = spare.copy_(g)
                else:
                    g = g.to(t.dtype, copy=True)
                    setattr(t, _SPARE, g)
            t.grad = g
        else:
            olds.append(t.grad)
            news.append(g)
    if olds:
        if all(o.dtype == n.dtype for o, n in zip(olds, news)):
            torch._foreach_add_(olds, news)
        else:
            for o, n in zip(olds, news):
                o.add_(n)


def _fill_list(roots: Sequence[Variable], nodes: Sequence[FunctionNode], keep_all: bool
               ) -> list[Variable]:
    fill: list[Variable] = []
    seen: set[int] = set()
    for r in roots:
        if id(r) not in seen and r.parent is not None:
            seen.add(id(r))
            fill.append(r)
    for node in nodes:
        for ref in node._outputs:
            v = ref()
            if v is not None and id(v) not in seen and (keep_all or v.persistent):
                seen.add(id(v))
                fill.append(v)
    return fill


def build_plan(roots: Sequence[Variable], nodes: Sequence[FunctionNode],
               leaves: Sequence[Variable], keep_all: bool) -> StaticPlan | EagerPlan:
    """Lower the subgraph of ``roots`` (see the module docstring); fall back to an
    :class:`EagerPlan` for graphs that cannot be traced."""
    roots = list(roots)
    leaf_tensors = [_leaf_tensor(v) for v in leaves]
    refresh_shapes(nodes, leaves)            # inputs may have changed size since the build
    fill = _fill_list(roots, nodes, keep_all)
    needs_backward = torch.is_grad_enabled() and any(t.requires_grad for t in leaf_tensors)
    untraceable = sorted({n.spec.name for n in nodes if not n.spec.traceable})
    if untraceable:
        return EagerPlan(roots, list(nodes), list(leaves), fill, needs_backward,
                         f"holds op(s) that cannot be traced: {', '.join(untraceable)}")
    try:
        return _lower(roots, nodes, leaves, leaf_tensors, fill, needs_backward)
    except Exception as exc:  # noqa: BLE001 - any tracing failure falls back, loudly
        reason = f"tracing failed ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
        warnings.warn(f"a static graph runs eagerly: {reason}", RuntimeWarning, stacklevel=4)
        return EagerPlan(roots, list(nodes), list(leaves), fill, needs_backward, reason)


def _lower(roots, nodes, leaves, leaf_tensors, fill, needs_backward) -> StaticPlan:
    if not needs_backward:
        def forward_only(*ts):
            return tuple(interpret(nodes, leaves, ts, fill))
        with torch.enable_grad():
            fw = make_fx(forward_only, tracing_mode="fake")(*leaf_tensors)
        simplify(fw)
        cast_slots = cast_parameters_into_buffers(fw, leaf_tensors, len(fill))
        return StaticPlan(roots, list(nodes), list(leaves), fill, fw, None, [], [],
                          cast_slots=cast_slots)

    grad_idx = [i for i, t in enumerate(leaf_tensors) if t.requires_grad]
    root_pos = [fill.index(r) for r in roots if r.parent is not None]
    traced: dict[str, list[int]] = {}

    def joint(*ts):
        primals = ts[:len(leaves)]
        tangents = ts[len(leaves):]
        values = interpret(nodes, leaves, primals, fill)
        diff = [k for k, p in enumerate(root_pos) if values[p].requires_grad]
        inputs = [primals[i] for i in grad_idx]
        grads = torch.autograd.grad([values[root_pos[k]] for k in diff], inputs,
                                    [tangents[k] for k in diff], allow_unused=True) if diff else []
        used = [j for j, g in enumerate(grads) if g is not None]
        traced["diff"], traced["used"] = diff, used
        return (*values, *[grads[j] for j in used])

    tangent_examples = [torch.zeros(tuple(fill[p]._shape), dtype=fill[p]._dtype,
                                    device=leaf_tensors[0].device if leaf_tensors else None)
                        for p in root_pos]
    with torch.enable_grad():
        gm = make_fx(joint, tracing_mode="fake")(*leaf_tensors, *tangent_examples)
    # Tangents of roots that do not need a gradient are unused placeholders: drop them.
    diff, used = traced["diff"], traced["used"]
    keep = set(diff)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for k, ph in enumerate(placeholders[len(leaves):]):
        if k not in keep:
            gm.graph.erase_node(ph)
    gm.recompile()
    fw, bw, _ = partition(gm, len(leaves), len(fill))
    simplify(fw)
    simplify(bw)
    defer_output_casts(bw)
    grad_leaves = [leaves[grad_idx[j]] for j in used]
    diff_roots = [fill[root_pos[k]] for k in diff]
    copy_grad = aliased_outputs(bw)
    out_slots = write_products_into_buffers(bw, [_leaf_tensor(v) for v in grad_leaves])
    cast_slots = cast_parameters_into_buffers(fw, leaf_tensors, len(fill))
    for k, _ in out_slots:
        copy_grad[k] = False
    return StaticPlan(roots, list(nodes), list(leaves), fill, fw, bw, grad_leaves, diff_roots,
                      copy_grad, out_slots, cast_slots)


def _signature(leaves: Sequence[Variable]) -> tuple:
    sig = []
    for v in leaves:
        t = _leaf_tensor(v)
        sig.append((t.shape, t.dtype, t.device, t.requires_grad))
    return tuple(sig)


class _PlanCache:
    """The subgraph of a set of roots and its lowered plans (by leaf signature and flags).

    ``last``/``last_key`` skip recomputing the leaf signature while no leaf changed layout
    (:func:`stadyn.graph._variable.layout_changed` is called by every API that could)."""

    __slots__ = ("graph_version", "nodes", "leaves", "plans", "last", "last_key")

    def __init__(self, nodes, leaves):
        self.graph_version = _graph_version
        self.nodes, self.leaves = nodes, leaves
        self.plans: dict = {}
        self.last: StaticPlan | None = None
        self.last_key: tuple | None = None


def run_forward(roots: list[Variable], clear_buffer: bool = False,
                clear_no_need_grad: bool = False) -> StaticPlan | None:
    """Forward the static graph of ``roots`` through a cached plan."""
    head = roots[0]
    if head._plans is None:
        head._plans = {}
    roots_key = tuple(id(r) for r in roots)
    entry = head._plans.get(roots_key)
    if entry is None or entry.graph_version != _graph_version:
        entry = _PlanCache(*_collect(roots))
        head._plans[roots_key] = entry
    if not entry.nodes:
        return None
    ctx = get_current_context()
    keep_all = not (clear_buffer or clear_no_need_grad)
    fast = (keep_all, torch.is_grad_enabled(), is_training(), ctx, layout_version())
    plan = entry.last if entry.last_key == fast else None
    if plan is None:
        key = fast[:4] + (_signature(entry.leaves),)
        plan = entry.plans.get(key)
        if plan is None:
            plan = build_plan(roots, entry.nodes, entry.leaves, keep_all)
            entry.plans[key] = plan
        entry.last, entry.last_key = plan, fast
    plan.run()
    for r in roots:
        r._plan = plan
    return plan


# ---------------------------------------------------------------------------------------------
# Backward
# ---------------------------------------------------------------------------------------------
def _seed(var: Variable, grad: Any, like: torch.Tensor) -> torch.Tensor:
    if grad is None:
        return var._grad_buffer().to(like.dtype)
    if isinstance(grad, torch.Tensor):
        return grad.detach().to(like.dtype, like.device).expand_as(like).clone()
    arr = np.asarray(grad)
    if arr.ndim == 0:
        return torch.full_like(like, float(arr))
    # A copy: the seed may flow unchanged into a leaf's .grad, which later accumulates in place.
    return torch.tensor(arr, dtype=like.dtype, device=like.device).expand_as(like).clone()


def _clear_intermediates(root: Variable) -> None:
    for node in topological_nodes([root]):
        for ref in node._outputs:
            v = ref()
            if v is not None and v is not root and not v.persistent:
                v._data = None


def backward(var: Variable, grad: Any = 1, clear_buffer: bool = False) -> None:
    """Backward from ``var``: the static plan's backward program, or torch autograd (dynamic)."""
    plan = var._plan
    data = var._data
    if plan is not None and plan.has_backward and data is not None:
        if not any(r is var for r in plan.diff_roots):
            return
        plan.run_backward(var, _seed(var, grad, data), clear_buffer)
        return
    if data is not None and data.grad_fn is not None:
        torch.autograd.backward(data, _seed(var, grad, data), retain_graph=not clear_buffer)
        if clear_buffer:
            _clear_intermediates(var)
        return
    if var.parent is None or (plan is not None and not plan.has_backward):
        return  # nothing this Variable depends on needs a gradient
    warnings.warn("backward() from a Variable that was not the root of its last forward re-runs "
                  "its forward first", RuntimeWarning, stacklevel=3)
    run_forward([var])
    backward(var, grad, clear_buffer)
