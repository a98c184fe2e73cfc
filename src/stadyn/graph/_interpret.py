"""Interpreting a graph on tensors: the reference semantics of a static graph.

:func:`interpret` runs a subgraph's nodes in order through their op implementations — the same
impls dynamic mode calls, with the same precision casts — and is what lowering traces.
:func:`refresh_shapes` does the same on ``meta`` tensors to bring recorded shapes up to date
after an input was resized, and :class:`Shapes` keeps what it found for a plan to put back when
the plan replays.  Both name a failing op as dynamic mode does (:func:`op_error`).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from .._errors import StadynError
from ._apply import op_error, passes_through
from ._context import get_current_context
from ._edge_cuts import run_cuts
from ._labels import _active as _labelling
from ._labels import backward_label, label_backward, op_label
from ._layout import channels_last_arguments
from ._numerics import check_outputs, numerics_enabled, probe_inputs
from ._own_streams import seeded_arguments
from ._precision import cast_for_node, half_of, HalfCopies
from ._shape_cache import key as shape_key
from ._shared_values import drop_stale
from ._subgraph import leaf_tensor, output_key, value_key
from ._variable import FunctionNode, Variable
from ._versions import shapes_changed

__all__ = ["interpret", "refresh_shapes", "Shapes", "release_points"]

# The Shapes record whose shapes the graph's Variables hold now (None: unknown, since a
# refresh_shapes changed some): a replay of the same plan as last time costs one comparison.
_current: list = [None]


def _node_arguments(node: FunctionNode, env: dict, half: torch.dtype | None,
                    copies: HalfCopies | None = None) -> tuple[list, dict]:
    """``node``'s call arguments with Variables replaced by their tensors in ``env``, cast by
    the op's declared precision under a half-precision context (``half``: the one in effect;
    one bound to the node is its own, :func:`cast_for_node`; an fp32 value read in half is
    the run's one copy of it, ``copies``)."""
    args = [env[value_key(a)] if isinstance(a, Variable) else a for a in node.args]
    kwargs = ({k: (env[value_key(v)] if isinstance(v, Variable) else v)
               for k, v in node.kwargs.items()} if node.kwargs else {})
    if node.state is not None:
        kwargs["state"] = node.state
    if "seed" in node.spec.attrs:
        args, kwargs = _own_seed(node, args, kwargs, env)
    return cast_for_node(node, half, args, kwargs, copies)


def _own_seed(node: FunctionNode, args: list, kwargs: dict, env: dict) -> tuple[list, dict]:
    """The arguments with a plain seed of the op's own replaced by the node's generators
    (``_own_streams.py``: kept from run to run, set up again for new input shapes)."""
    return seeded_arguments(node, args, kwargs,
                            tuple(tuple(env[value_key(v)].shape) for v in node.inputs))


def _node_error(node: FunctionNode, env: dict, exc: BaseException) -> StadynError:
    """:func:`op_error` for ``node`` failing on the tensors ``env`` gave it."""
    shapes = [tuple(env[value_key(v)].shape) for v in node.inputs]
    return op_error(node.spec, node.inputs, node.scope, exc, shapes, node.location)


def _infer_on_values(node: FunctionNode, values: dict, half: torch.dtype | None,
                     margs: list, mkw: dict):
    """Output meta tensors of a node whose shape depends on its inputs' values (all leaves):
    the op run on the leaves' tensors; where the op refuses those values (an input's
    placeholder, not yet the data: a ``sequence_gather`` of zeros takes no step), its shape
    rule on the meta tensors ``margs``/``mkw``, as a static build takes them (the run will
    tell), else the op's error on the values."""
    args, kwargs = _node_arguments(node, values, half)
    try:
        with torch.no_grad():
            out = node.spec.impl(*[a.detach() if isinstance(a, torch.Tensor) else a
                                   for a in args], **kwargs)
    except Exception as exc:
        if passes_through(exc):
            raise
        try:
            return node.spec.infer(margs, mkw)
        except Exception:  # noqa: BLE001 - the error on the values is the one reported
            raise exc from None
    need = any(v._need_grad for v in node.inputs)
    outs = (out,) if isinstance(out, torch.Tensor) else tuple(out)
    metas = tuple(torch.empty(o.shape, dtype=o.dtype, device="meta").requires_grad_(
        need and o.is_floating_point()) for o in outs)
    return metas[0] if isinstance(out, torch.Tensor) else metas


def release_points(nodes: Sequence[FunctionNode], kept: Sequence[Variable]) -> list[list]:
    """For each of ``nodes`` (in order), the op outputs no later node reads and ``kept`` does
    not hold: what a run may let go of once that node ran (a plan's program frees its values
    alike), so that a run keeping few values holds few at a time.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import Subgraph
        >>> x = sd.Variable((2,))
        >>> a = F.tanh(x)
        >>> y = F.relu(a * 2.0)
        >>> sub = Subgraph([y])
        >>> [len(keys) for keys in release_points(sub.nodes, [y])]
        [0, 1, 1]
    """
    keep = {value_key(v) for v in kept}
    last: dict = {}
    for i, node in enumerate(nodes):
        for k in range(len(node._outputs)):
            last[output_key(node, k)] = i              # made here; read later, or never
        for a in (*node.args, *node.kwargs.values()):
            if isinstance(a, Variable) and a.parent is not None:
                last[value_key(a)] = i
    points: list[list] = [[] for _ in nodes]
    for key, i in last.items():
        if key not in keep:
            points[i].append(key)
    return points


def interpret(nodes: Sequence[FunctionNode], leaves: Sequence[Variable],
              leaf_tensors: Sequence[torch.Tensor], wanted: Sequence[Variable],
              name_errors: bool = False, channels_last: frozenset[int] = frozenset(),
              release: Sequence[Sequence] | None = None, shapes: dict | None = None,
              after: dict | None = None, seen: dict | None = None) -> list:
    """Run ``nodes`` in order on torch tensors; return the tensors of ``wanted``.

    This is the reference semantics of a static graph; lowering traces exactly this function.
    With ``name_errors`` (a run, not a trace) an op that fails raises the error dynamic mode
    gives (op, scope, the user's line and input shapes: :func:`op_error`), and under
    :func:`stadyn.check_numerics` outputs and input gradients are checked as dynamic mode
    checks them.  The nodes whose ``id`` is in ``channels_last`` get their input and weight in
    channels-last strides (a plan's layout, :func:`~stadyn.graph._layout.plan_layout`).
    ``release`` (:func:`release_points` for ``wanted``) lets each value go once its last reader
    ran; ``shapes`` then gets every op output's shape and dtype by its key.  ``after`` (node
    position -> ``hook(env)``) runs a hook as that node's outputs are in: views given their
    source's value of the run (:func:`~stadyn.graph._late_views.view_hooks`).  ``seen``
    gets the run's tensors (``"env"``: by :func:`value_key`) and half copies (``"copies"``),
    for a backward's hooks (``_ordered_sums.py``).

    Example:
        >>> import torch, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import Subgraph, interpret
        >>> x = sd.Variable((2,))
        >>> y = F.relu(x) * 2.0
        >>> sub = Subgraph([y])
        >>> interpret(sub.nodes, sub.leaves, [torch.tensor([-1.0, 3.0])], [y])
        [tensor([0., 6.])]
    """
    env: dict[Any, torch.Tensor] = {value_key(v): t for v, t in zip(leaves, leaf_tensors)}
    half = get_current_context().half_dtype
    checking = name_errors and numerics_enabled()
    probing = checking and torch.is_grad_enabled()
    # A labelled trace for a backward also labels each op's autograd nodes (_labels.py).
    backward_seen: set | None = set() if (_labelling[0] and not name_errors
                                           and torch.is_grad_enabled()) else None
    # A root set need_grad=False still differentiates itself (NNabla's backward from it
    # reaches its inputs); what reads it in the graph reads it stopped.
    roots: dict[Any, torch.Tensor] = {}
    wanted_keys = {value_key(v) for v in wanted}
    copies = HalfCopies()          # one half copy of each fp32 value, read by all its readers
    if seen is not None:
        seen["env"], seen["copies"] = env, copies
    cuts = run_cuts(nodes)          # parts an nn.grad leaves out (_edge_cuts.py)
    for i, node in enumerate(nodes):
        args, kwargs = _node_arguments(node, env, half, copies)
        if channels_last and id(node) in channels_last:
            args, kwargs = channels_last_arguments(node, args, kwargs)
        if probing:
            args, kwargs = probe_inputs(node, args, node.args, kwargs, node.kwargs)
        try:
            if cuts is not None and cuts.cutting(node):
                out = cuts.run(node, copies, args, kwargs)
            elif _labelling[0]:
                with torch.profiler.record_function(op_label(node.spec.name, node.scope)):
                    out = node.spec.impl(*args, **kwargs)
                if backward_seen is not None:
                    label_backward(out, backward_label(node.spec.name, node.scope),
                                   backward_seen)
            else:
                out = node.spec.impl(*args, **kwargs)
        except Exception as exc:
            if not name_errors or passes_through(exc):
                raise
            raise _node_error(node, env, exc) from exc
        if checking:
            check_outputs(node, out)
        out = _stop_gradients(node, out, wanted_keys, roots)
        if isinstance(out, torch.Tensor):
            env[output_key(node, 0)] = out
        else:
            for k, t in enumerate(out):
                env[output_key(node, k)] = t
        if cuts is not None:
            cuts.note(node, env)
        if after is not None and i in after:
            after[i](env)
        if release is not None:
            del args, kwargs
            outs = (out,) if isinstance(out, torch.Tensor) else out
            for k, t in enumerate(outs):
                if isinstance(t, torch.Tensor):
                    shapes[output_key(node, k)] = (tuple(t.shape), t.dtype)
            del out, outs
            for key in release[i]:
                env.pop(key, None)
    return [roots[k] if (k := value_key(v)) in roots else env[k] for v in wanted]


def _stop_gradients(node: FunctionNode, out: Any, wanted: set | frozenset = frozenset(),
                    roots: dict | None = None) -> Any:
    """``out`` with the outputs whose Variables were set ``need_grad=False`` detached: NNabla
    propagates no gradient through such a Variable; and those set ``need_grad=True`` whose
    inputs need no gradient made to need one (NNabla computes gradients down to them).  A
    detached output whose key is in ``wanted`` (a root of the run) is kept undetached in
    ``roots``, by its key: a backward from the root itself reaches its inputs, as NNabla's."""
    refs = node._outputs
    if not any((v := ref()) is not None and (v._stops_grad or v._starts_grad) for ref in refs):
        return out
    outs = [out] if isinstance(out, torch.Tensor) else list(out)
    for i, ref in enumerate(refs):
        v = ref()
        if v is None or i >= len(outs):
            continue
        if v._stops_grad:
            if roots is not None and (key := output_key(node, i)) in wanted:
                roots[key] = outs[i]
            outs[i] = outs[i].detach()
        elif (not outs[i].requires_grad and outs[i].is_floating_point()
              and torch.is_grad_enabled()):
            outs[i] = outs[i].detach().requires_grad_(True)
    return outs[0] if isinstance(out, torch.Tensor) else type(out)(outs)


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

    Example:
        >>> import torch, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import Subgraph, refresh_shapes
        >>> x = sd.Variable((2, 3))
        >>> y = F.sum(x, axis=1)
        >>> x.data = torch.zeros(5, 3)
        >>> sub = Subgraph([y])
        >>> refresh_shapes(sub.nodes, sub.leaves)
        >>> y.shape
        (5,)
    """
    env: dict[Any, torch.Tensor] = {}
    values: dict[Any, torch.Tensor] = {}                   # the leaves' own tensors
    half = get_current_context().half_dtype
    # While every leaf still has the shape its Variable records, each node's call is keyed as
    # it was when the graph was defined (its inputs' shapes are set in order below), and what
    # inference found then is read back (_shape_cache.py) instead of inferring again.
    cached = half is None
    for v in leaves:
        t = leaf_tensor(v)
        env[value_key(v)] = torch.empty(t.shape, dtype=t.dtype, device="meta")
        values[value_key(v)] = t
        cached = cached and v._shape == tuple(t.shape) and v._dtype == t.dtype
    for node in nodes:
        k = shape_key(node.args, node.kwargs) if (cached and not node.spec.value_shape
                                                  and half_of(node, None) is None) else None
        found = node.spec.inferred.get(k) if k is not None else None
        if found is not None:
            env_outs = tuple(torch.empty(shape, dtype=dtype, device="meta")
                             for shape, dtype, _ in found[1])
            _set_shapes(node, env_outs, env)
            continue
        args, kwargs = _node_arguments(node, env, half)
        args = [_as_meta(a) for a in args]                 # constants held by the node
        kwargs = {k: _as_meta(v) for k, v in kwargs.items()}
        try:
            if node.spec.value_shape and all(value_key(v) in values for v in node.inputs):
                out = _infer_on_values(node, values, half, args, kwargs)
            else:
                out = node.spec.infer(args, kwargs)
        except Exception as exc:
            if passes_through(exc):
                raise
            raise _node_error(node, env, exc) from exc
        _set_shapes(node, (out,) if isinstance(out, torch.Tensor) else tuple(out), env)
    _current[0] = None


def _set_shapes(node: FunctionNode, outs: Sequence[torch.Tensor], env: dict) -> None:
    """Record ``node``'s output meta tensors in ``env`` and their shapes on its Variables."""
    for i, (ref, t) in enumerate(zip(node._outputs, outs)):
        env[output_key(node, i)] = t
        v = ref()
        if v is not None:
            if v.shape != tuple(t.shape):
                shapes_changed()
            v._shape, v._dtype = tuple(t.shape), t.dtype
            drop_stale(v)


class Shapes:
    """The shapes and dtypes of ``nodes``' outputs now (as :func:`refresh_shapes` left them);
    :meth:`restore` gives the Variables these shapes again.

    A plan is built for one signature of its leaves (one batch size) and cached; when a cached
    plan replays after one built for another batch size, the intermediates still carry the
    other plan's shapes.  The plan restores its own first, so that ``h.shape`` (and ``size``,
    ``len``) of an intermediate the forward did not keep is the batch just run, as NNabla's
    forward sets it up.

    Example:
        >>> import torch, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import Subgraph, Shapes, refresh_shapes
        >>> x = sd.Variable((2, 3))
        >>> y = F.sum(x, axis=1)
        >>> two = Shapes(Subgraph([y]).nodes)
        >>> x.data = torch.zeros(5, 3)
        >>> refresh_shapes(Subgraph([y]).nodes, [x])
        >>> y.shape, (two.restore(), y.shape)[1]
        ((5,), (2,))
    """

    __slots__ = ("_outputs",)

    def __init__(self, nodes: Sequence[FunctionNode]):
        self._outputs = [(ref, v._shape, v._dtype) for node in nodes for ref in node._outputs
                         if (v := ref()) is not None]
        _current[0] = self

    def restore(self) -> None:
        """Set the recorded shapes (dropping a held buffer of another shape: ``Variable.shape``
        reads a buffer first)."""
        if _current[0] is self:
            return
        for ref, shape, dtype in self._outputs:
            v = ref()
            if v is None:
                continue
            if v.shape != shape:
                shapes_changed()
            v._shape, v._dtype = shape, dtype
            held = v._data
            # (dropped without :func:`drop_stale`'s note for ``on_renew`` listeners: a view of
            # a value of another size stays with it, as NNabla 1.39's does, either way;
            # tests/compat/test_nnabla_views_across_batches.py)
            if held is not None and tuple(held.shape) != shape:
                v._data = None
        _current[0] = self
