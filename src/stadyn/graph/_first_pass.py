"""The shapes CNTK 2.7's first inference pass gives values after a loop whose state took
another shape than the one its step was declared with.

CNTK infers a graph's shapes in passes from its root until no recurrent output changes
(``Function::ValidateOrUpdateOutputs``).  In the first pass a loop's state is the output of a
node not inferred yet: its shape and dynamic axes are unknown.  An op whose dynamic axes are
known (an input of it has them) and that is elementwise takes its known operands' shape
(``PrimitiveFunction::InferOutputs``, ``BinaryElementwiseOpOutputShape``); any other op of an
unknown value, and any op whose inputs' dynamic axes are all unknown or absent (``dh + K``, a
constant ``K``; a value ``sequence.broadcast_as`` the state), stays unknown.  A parameter with
an inferred axis after the loop (``Dense``'s ``W``) is fixed on that first pass, and later
passes map the axes the loop's output gained in front of it.  So in Sequence2Sequence.py's
decoder, ``LSTM(dh, dc, splice(x, attention(dh)))``, the attention's ``(1, 1, ...)`` reaches
the state only from the second pass on: the first pass's output is ``b``'s ``(H,)`` (``b +
times(x, W) + times(dh, H)`` with both products unknown) and the ``Dense`` after it has ``W``
``(H, V)``, output ``(1, 1, V)``; when the extra axes come from the step's input, the first
pass has them already.

:func:`step_first_pass` (called by ``sequence.recurrence`` for a step whose state changed
shape) computes, on the step's first recording, the shapes of its outputs with the states
unknown, and :func:`note` keeps them for the recurrence's outputs for as long as the CNTK
Function being applied (:func:`joint_inference`: a layer, an ``@Function``; a ``Dense``
applied to the loop's typed output afterwards sees its settled shape, as in CNTK);
:func:`first_pass_shape` gives a value's first-pass shape, re-inferring the ops between it
and a noted value (none noted: its shape, at no cost).
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Iterator, Sequence

import numpy as np
import torch

from ._base_axis import base_axis_kept
from ._variable import Variable, topological_nodes

# id(value) -> (weak reference, its first-pass shape)
_NOTED: dict[int, tuple[weakref.ref, tuple[int, ...]]] = {}


_DEPTH = [0]          # joint inferences open (CNTK Functions being applied)


def _forget(key: int) -> None:
    _NOTED.pop(key, None)


@contextlib.contextmanager
def joint_inference() -> Iterator[None]:
    """Applying a CNTK Function (a layer, an ``@Function``) to its operands: CNTK infers the
    Function's graph in passes from its first, so what a loop in it notes (:func:`note`) holds
    for the layers after it in the same Function; once the outermost one is applied, the loop's
    output has its settled shape (a ``Dense`` applied to it later infers from that).

    Example:
        >>> with joint_inference():
        ...     pass
    """
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        if _DEPTH[0] == 0:
            _NOTED.clear()


def note(v: Variable, shape: Sequence[int]) -> None:
    """Note that CNTK's first inference pass gives ``v`` the shape ``shape`` (its full shape,
    batch and sequence axes included), for the rest of the outermost :func:`joint_inference`
    (outside one, nothing is noted)."""
    if not _DEPTH[0]:
        return
    key = id(v)
    _NOTED[key] = (weakref.ref(v, lambda _r, k=key: _forget(k)), tuple(int(d) for d in shape))


# id(value) -> (weak reference, weak references to the step values it was broadcast like: one
# per recording of a step that reads it)
_LIKE: dict[int, tuple[weakref.ref, list[weakref.ref]]] = {}


def broadcast_like(v: Variable, like: Variable) -> None:
    """Note that a step uses ``v`` (a value per sequence) as broadcast like ``like`` (one step
    of the step's sequence; CNTK's ``sequence.broadcast_as(v, like)``, whose dynamic axes are
    ``like``'s: unknown in the first pass when ``like`` is computed from the state)."""
    key = id(v)
    found = _LIKE.get(key)
    if found is None or found[0]() is not v:
        found = _LIKE[key] = (weakref.ref(v, lambda _r, k=key: _LIKE.pop(k, None)), [])
    found[1][:] = [r for r in found[1] if r() is not None] + [weakref.ref(like)]


def _noted(v: Variable) -> tuple[int, ...] | None:
    found = _NOTED.get(id(v))
    if found is None or found[0]() is not v:
        return None
    return found[1]


def first_pass_shape(v: Variable) -> tuple[int, ...]:
    """``v``'s shape in CNTK's first inference pass (its batch and sequence axes included):
    its shape unless a loop before it gave its state another shape than the step's declared
    one (then the shape the ops from that loop's first-pass output give).

    Example:
        >>> import stadyn as sd
        >>> first_pass_shape(sd.Variable((2, 3)))
        (2, 3)
    """
    if not _NOTED:
        return tuple(v.shape)
    found = _walk([v], {})[id(v)][0]
    return tuple(v.shape) if found is None else found


def step_first_pass(outs: Sequence[Variable], states: Sequence[Variable],
                    step_inputs: Sequence[Variable], input_shapes: Sequence[tuple]
                    ) -> list[tuple[int, ...] | None]:
    """The shapes of a step's outputs ``outs`` (recorded on ``states`` and ``step_inputs``,
    batch axis first) in CNTK's first pass: the states unknown, the step's inputs of
    ``input_shapes``; None for an output that pass leaves unknown."""
    given: dict[int, tuple] = {id(s): (None, None) for s in states}
    given.update({id(v): (tuple(s), _KNOWN) for v, s in zip(step_inputs, input_shapes)})
    found = _walk(list(outs), given)
    return [found[id(o)][0] for o in outs]


def _walk(roots: list[Variable], given: dict[int, tuple]) -> dict[int, tuple]:
    """``{id(value): (first-pass shape or None, dynamic axes)}`` for ``roots`` and every value
    before them (dynamic axes: ``_KNOWN``, ``_NONE`` for a parameter's or constant's, None
    unknown); ``given`` holds the placeholders' entries."""
    known = dict(given)

    def leaf(v: Variable):
        if id(v) not in known:
            noted = _noted(v)
            axes = _KNOWN if v.parent is not None or getattr(v, "_seq", None) is not None \
                else _NONE
            known[id(v)] = (tuple(v.shape) if noted is None else noted, axes)
        return known[id(v)]

    for node in topological_nodes(roots):
        outs = node.outputs
        noted = [_noted(o) if o is not None else None for o in outs]
        inputs = [_as_broadcast(i, leaf(i) if i.parent is None or id(i) in known
                                else known[id(i)], known) for i in node.inputs]
        axes = _output_axes([a for _, a in inputs])
        if all(n is not None for n, o in zip(noted, outs) if o is not None) and \
                any(o is not None for o in outs):
            shapes = noted
        else:
            shapes = _node_first_pass(node, inputs)
        for o, s in zip(outs, shapes):
            if o is not None:
                known[id(o)] = (s if _noted(o) is None else _noted(o), axes)
    for r in roots:
        leaf(r)
    return known


_KNOWN, _NONE = "known", "none"


def _as_broadcast(v: Variable, entry: tuple, known: dict) -> tuple:
    """``v``'s entry as an input: unknown where the step broadcasts it like a value whose
    dynamic axes are unknown in this pass."""
    like = _LIKE.get(id(v))
    if like is None or like[0]() is not v:
        return entry
    for ref in like[1]:
        found = known.get(id(ref())) if ref() is not None else None
        if found is not None and found[1] is None:
            return (None, None)
    return entry


def _output_axes(axes: list) -> str | None:
    """An op's dynamic axes from its inputs' (CNTK's ``GetOutputDynamicAxes``): none if no
    input has any, else the known ones if an input has them, else unknown."""
    if all(a == _NONE for a in axes):
        return _NONE
    return _KNOWN if _KNOWN in axes else None


def _node_first_pass(node, inputs: list[tuple]) -> list:
    """The first-pass shapes of ``node``'s outputs from its inputs' (``(shape or None,
    dynamic axes)`` each, in ``node.inputs``' order)."""
    recorded = [tuple(o.shape) if o is not None else None for o in node.outputs]
    if all(s is not None and s == tuple(i.shape) for (s, _), i in zip(inputs, node.inputs)):
        return recorded
    unknown = [s is None for s, _ in inputs]
    if any(unknown):
        return [_with_unknown(node, inputs, unknown)] + [None] * (len(recorded) - 1)
    try:
        return _reinfer(node, {id(i): s for (s, _), i in zip(inputs, node.inputs)})
    except Exception:  # noqa: BLE001 - an op that does not take these shapes: unknown
        return [None] * len(recorded)


def _with_unknown(node, inputs: list[tuple], unknown: list[bool]):
    """An op with an input of unknown shape in the first pass (CNTK's
    ``PrimitiveFunction::InferOutputs``): when its dynamic axes are known, an elementwise op
    takes its known operands' shape (a batch axis added when they have none); so does
    ``affine``'s bias (CNTK's ``b + times(x, W)``, with ``times`` of ``x``'s axes); any other op,
    and any op whose dynamic axes are unknown (all from the state), stays unknown."""
    name = node.spec.name
    if name == "affine":
        if len(node.inputs) < 3 or not unknown[0] or any(unknown[1:]) or \
                inputs[0][1] != _KNOWN:
            return None
        return (1,) + tuple(node.inputs[2].shape)
    if not node.spec.elementwise or all(unknown) or \
            _output_axes([a for _, a in inputs]) != _KNOWN:
        return None
    shapes = [s for s, _ in inputs if s is not None]
    try:
        shape = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None
    if all(a == _NONE for s, a in inputs if s is not None):
        shape = (1,) + shape                 # the batch axis of the unknown operand's
    return shape


def _reinfer(node, shapes: dict[int, tuple]) -> list:
    """``node``'s output shapes for inputs of ``shapes`` (by ``id``); an attribute
    ``base_axis`` keeps its distance from the first input's last axis."""
    def meta(a):
        if isinstance(a, Variable):
            return torch.empty(shapes.get(id(a), a.shape), dtype=a._dtype, device="meta")
        if isinstance(a, (list, tuple)) and any(isinstance(e, Variable) for e in a):
            return type(a)(meta(e) for e in a)
        return a
    args = [meta(a) for a in node.args]
    kwargs = {k: meta(a) for k, a in node.kwargs.items()}
    if node.inputs:
        first = node.inputs[0]
        args, kwargs = base_axis_kept(node, args, kwargs, shapes.get(id(first), first.shape),
                                      checked=False)
    out = node.spec.infer(list(args), kwargs)
    outs = (out,) if isinstance(out, torch.Tensor) else tuple(out)
    return [tuple(o.shape) for o in outs]
