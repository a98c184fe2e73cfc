"""Loop-invariant values of a recurrence's step, computed once outside the loop.

A step function records its graph on placeholders (the previous states and one step of each
input), but it may read values computed outside the loop: an encoder's states an attention
reads at every decoder step, a stabiliser's scale made from a parameter.  Left in the step's
graph, each would be computed again at every step (and an op that cannot run on shapes alone,
such as a fused recurrent kernel over a whole sequence, would break the step's shape
inference).  :func:`hoist_invariants` replays the ops that depend on the placeholders with every
value that does not (an op output) replaced by a fresh leaf, and says which outside value each
leaf stands for: the recurrence takes those values as inputs.  In dynamic mode the step is
still recorded on shapes alone, so the outside values it made itself (a stabiliser's scale) have
no value yet: they are computed then, their ops run eagerly, so gradients reach what they read.

Example:
    >>> import stadyn as sd, stadyn.functions as F
    >>> x, h = sd.Variable((1, 3)), sd.Variable((1, 3))
    >>> outer = F.tanh(x)                       # computed outside the loop
    >>> (step,), taken = hoist_invariants([h + outer], [h])
    >>> [v is outer for v in taken.values()], step.parent.inputs[0] is h
    ([True], True)
"""

from __future__ import annotations

from typing import Sequence

from ._apply import apply
from ._kept import keep_with, kept_with
from ._mode import is_auto_forward
from ._scope import name_scope
from ._variable import Variable, topological_nodes

__all__ = ["hoist_invariants", "replayed_from", "replayed_with"]

_REPLAYS = "graph: the step's value this replays"
_REPLAY = "graph: what the replay that made this made of each recorded value"


def replayed_from(v: Variable) -> "Variable | None":
    """The value of the recorded step that :func:`hoist_invariants` replayed as ``v`` (what a
    caller noted of the recorded value -- a layer applied in the step -- is noted there);
    None for a value no hoisting made.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> x, h = sd.Variable((1, 3)), sd.Variable((1, 3))
        >>> recorded = F.tanh(h) + F.tanh(x)
        >>> (step,), _ = hoist_invariants([recorded], [h])
        >>> replayed_from(step) is recorded, replayed_from(recorded)
        (True, None)
    """
    return kept_with(v, _REPLAYS)


def replayed_with(v: Variable, recorded: Variable) -> "Variable | None":
    """What the replay that made ``v`` made of the recorded step's value ``recorded`` (the
    leaf standing for it where it was computed outside the loop); None where ``v`` is no
    replayed value or that replay did not replay ``recorded`` (a value no output reads).  A
    cell of two outputs the step applies: the other output, replayed beside ``v``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> x, h = sd.Variable((1, 3)), sd.Variable((1, 3))
        >>> a, b = F.tanh(h), F.sin(h) + F.tanh(x)
        >>> (ra, rb), _ = hoist_invariants([a * 2, b], [h])
        >>> replayed_with(rb, b) is rb, replayed_with(rb, a) is ra.parent.inputs[0]
        (True, True)
        >>> replayed_with(a, b) is None
        True
    """
    made = kept_with(v, _REPLAY)
    return None if made is None else made.get(id(recorded))


def hoist_invariants(outputs: Sequence[Variable], inner: Sequence[Variable]
                     ) -> tuple[list[Variable], dict[int, Variable]]:
    """``(new outputs, {id(leaf): outside value})``: ``outputs`` computed from ``inner`` (the
    step's placeholders) with every op output that does not depend on ``inner`` replaced by a
    new leaf of its shape.  Outputs that need no change are returned as they are."""
    depends = {id(v) for v in inner}
    nodes = []
    for node in topological_nodes(list(outputs)):
        if any(id(i) in depends for i in node.inputs):
            nodes.append(node)
            depends.update(id(o) for o in node.outputs if o is not None)
    mapping: dict[int, Variable] = {}
    taken: dict[int, Variable] = {}
    for node in nodes:
        for i in node.inputs:
            if id(i) not in depends and i.parent is not None and id(i) not in mapping:
                leaf = Variable(i.shape, need_grad=i.need_grad, dtype=i.dtype)
                leaf._seq = i._seq
                mapping[id(i)] = leaf
                taken[id(leaf)] = i
    if not taken:
        return list(outputs), {}
    for node in nodes:
        args = tuple(mapping.get(id(a), a) if isinstance(a, Variable) else a for a in node.args)
        kwargs = {k: mapping.get(id(a), a) if isinstance(a, Variable) else a
                  for k, a in node.kwargs.items()}
        with name_scope(node.scope, absolute=True):
            made = apply(node.spec, args, kwargs)
        made = made if isinstance(made, tuple) else (made,)
        for old, new in zip(node.outputs, made):
            if old is not None:
                new._seq = mapping.get(id(old._seq), old._seq) if old._seq is not None else None
                new.graph_name = old.graph_name
                keep_with(new, _REPLAYS, old)
                keep_with(new, _REPLAY, mapping)
                mapping[id(old)] = new
    if is_auto_forward():
        taken = _computed(taken)
    return [mapping.get(id(v), v) for v in outputs], taken


def _computed(taken: dict[int, Variable]) -> dict[int, Variable]:
    """``taken`` with every value recorded but not computed (made while the step was recorded
    on shapes) replaced by its value computed now, in dynamic mode."""
    done: dict[int, Variable] = {}

    def now(a):
        return done.get(id(a), a) if isinstance(a, Variable) else a
    for node in topological_nodes(list(taken.values())):
        if all(o is None or o._data is not None for o in node.outputs) and \
                not any(id(i) in done for i in node.inputs):
            continue                          # computed already (made in dynamic mode)
        with name_scope(node.scope, absolute=True):
            made = apply(node.spec, tuple(now(a) for a in node.args),
                         {k: now(a) for k, a in node.kwargs.items()})
        for old, new in zip(node.outputs, made if isinstance(made, tuple) else (made,)):
            if old is not None:
                new._seq = done.get(id(old._seq), old._seq) if old._seq is not None else None
                done[id(old)] = new
    return {k: now(v) for k, v in taken.items()}
