"""NNabla's Function API on one function: ``f.setup(inputs, outputs)``, ``f.forward(inputs,
outputs)``, ``f.backward(inputs, outputs, accum=None)`` on the node ``f = y.parent`` an ``F``
call made, computing on the Variables given (not the ones ``f`` was made on), as NNabla's
``nnabla.function.Function`` does and ``nbla_test_utils.function_tester`` drives it.

Each ``F`` function records how it was called on its output's node (:func:`recording_calls`:
the function, its arguments, which of them are the Variables, in order: NNabla's inputs of the
function).  ``forward`` calls it again, static, on leaves holding the given inputs' data, under
the context ``f`` was made in, and writes the outputs' data (``setup`` gives the outputs their
shapes); the op is the declared one, run as any graph runs it.  ``backward`` sends the given
outputs' ``grad`` back through that graph and writes each input's gradient, as NNabla 1.39's
(``python/src/nnabla/function.pyx.tmpl``, ``Function.backward``, checked there): only an input
with ``need_grad`` (NNabla's ``propagate_down`` is the inputs' ``need_grad``) is written, added
to its ``grad`` where ``accum[i]`` (the default: all True), else overwriting it (a NaN there
is gone).  One Variable at two positions (``F.mul2(x, x)``) takes both positions' gradients in
order.  The graph of the last ``forward`` is kept: a ``backward`` on inputs holding the same
data uses its values (a random function's draw with it), else it runs the forward first;
where a forward of the program's graph wrote the outputs since (``y.forward()``, then
``y.parent.backward([x], [y])`` on the function's own leaf inputs), that graph's backward
runs, reading what its forward drew (``test_dropout.py``'s mask).

``recompute`` is ``forward`` again (``need_setup_recompute`` is False).  The call is noted on
the node that stands for all of it: the call's one node (its inputs are the call's
Variables), or the top node of a composition Stadyn makes of one NNabla function (its type
name is the function's: ``F.reduce_mean``'s ``ReduceMean``).  Any other node (the top of a
function NNabla composes itself, ``F.clip_by_value``'s ``MinimumScalar``; an operator's
``x + y``) runs its own op again on the given inputs, as NNabla's runs that function alone.
A node with a state of its own and a ``PythonFunction``'s refuse the API with a
``RuntimeError`` naming the function.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any, Sequence

import numpy as np

from ... import functions as _F
from ...graph import FunctionNode, Variable as _Core, apply, auto_forward
from ._context import context_scope

__all__ = ["recording_calls", "setup", "forward", "backward", "recorded_outputs"]


class _Call:
    """How an ``F`` call made a node: ``fn(*args, **kwargs)`` with the Variables taken out
    (``slots``: where each sits, NNabla's input order)."""

    __slots__ = ("fn", "args", "kwargs", "slots")

    def __init__(self, fn, args: tuple, kwargs: dict):
        self.fn = fn
        self.slots: list = []
        self.args = [self._take(a, ("a", k)) for k, a in enumerate(args)]
        self.kwargs = {k: self._take(v, ("k", k)) for k, v in kwargs.items()}

    def _take(self, value: Any, where: tuple) -> Any:
        if isinstance(value, _Core):
            self.slots.append(where)
            return None
        if isinstance(value, (list, tuple)) and any(isinstance(v, _Core) for v in value):
            return type(value)(self._take(v, (*where, j)) for j, v in enumerate(value))
        return value

    def call(self, leaves: Sequence) -> Any:
        args, kwargs = list(self.args), dict(self.kwargs)
        for where, leaf in zip(self.slots, leaves):
            holder = args if where[0] == "a" else kwargs
            key = where[1]
            if len(where) == 2:
                holder[key] = leaf
            else:
                inner = list(holder[key])
                inner[where[2]] = leaf
                holder[key] = type(holder[key])(inner)
        return self.fn(*args, **kwargs)


class _NodeCall:
    """A node's own op called again (for a node no ``F`` call is recorded on): its arguments
    with its input Variables, in order, replaced."""

    __slots__ = ("spec", "args", "kwargs", "slots")

    def __init__(self, node: FunctionNode):
        self.spec, self.args, self.kwargs = node.spec, node.args, dict(node.kwargs or {})
        self.slots = [v for v in (*node.args, *self.kwargs.values()) if isinstance(v, _Core)]

    def call(self, leaves: Sequence) -> Any:
        given = iter(leaves)
        args = tuple(next(given) if isinstance(a, _Core) else a for a in self.args)
        kwargs = {k: next(given) if isinstance(v, _Core) else v for k, v in self.kwargs.items()}
        return apply(self.spec, args, kwargs)


# node -> how it was made; node -> the graph its last forward() ran.
_CALLS: "weakref.WeakKeyDictionary[FunctionNode, _Call]" = weakref.WeakKeyDictionary()
_RUNS: "weakref.WeakKeyDictionary[FunctionNode, tuple]" = weakref.WeakKeyDictionary()


def _outputs_of(out: Any) -> list:
    return [v for v in (out if isinstance(out, (list, tuple)) else (out,))
            if isinstance(v, _Core)]


def recording_calls(fn, name: str):
    """``fn`` (the ``F`` function of NNabla's type name ``name``) noting on its output's node
    how it was called, for the node's Function API (:func:`forward`).

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> import numpy as np
        >>> y = F.add_scalar(nn.Variable((2,)), 1.5)
        >>> x2 = nn.Variable.from_numpy_array(np.array([1.0, 2.0]))
        >>> y2 = nn.Variable((2,))
        >>> y.parent.forward([x2], [y2]); y2.d.tolist()
        [2.5, 3.5]
    """
    @functools.wraps(fn)
    def call(*args, **kwargs):
        out = fn(*args, **kwargs)
        outs = _outputs_of(out)
        node = outs[0].parent if outs else None
        if node is not None and node not in _CALLS:
            given = [v for a in (*args, *kwargs.values())
                     for v in (a if isinstance(a, (list, tuple)) else (a,))
                     if isinstance(v, _Core)]
            inputs = [v for v in node.inputs if v is not None]
            # (the inputs first: the type name is a lookup per call, ~1 us of an F call)
            if ((len(inputs) == len(given) and all(a is b for a, b in zip(inputs, given)))
                    or getattr(node, "name", None) == name):
                _CALLS[node] = _Call(fn, args, kwargs)
        return out
    return call


def recorded_outputs(node: FunctionNode, inputs: Sequence) -> list:
    """The outputs of ``node``'s ``F`` call made again, static, on ``inputs`` (Variables, in
    NNabla's input order), in the context ``node`` was made in: a graph of the declared ops
    (what ``nnabla.backward_functions`` differentiates)."""
    made = _CALLS.get(node)
    if made is None:
        if node.state is not None or node.spec.name == "python_function":
            raise RuntimeError(f"{node!r}: Stadyn runs the Function API (setup/forward/"
                               "backward on given Variables) of a function without a state "
                               "of its own only")
        made = _NodeCall(node)
    if len(inputs) != len(made.slots):
        raise ValueError(f"{node!r} takes {len(made.slots)} inputs, got {len(inputs)}")
    ctx = getattr(node, "context", None)
    with auto_forward(False):
        if ctx is None:
            return _outputs_of(made.call(inputs))
        with context_scope(ctx):
            return _outputs_of(made.call(inputs))


def _key(inputs: Sequence) -> tuple:
    return tuple((tuple(v.shape), str(v.d.dtype), bool(v.need_grad)) for v in inputs)


def _run(node: FunctionNode, inputs: Sequence) -> tuple:
    """The graph of ``node``'s call on leaves holding ``inputs``' data, run forward (kept:
    made again only for other shapes, dtypes or ``need_grad``)."""
    key = _key(inputs)
    kept = _RUNS.get(node)
    if kept is None or kept[0] != key:
        leaves = [type(v)(v.shape, need_grad=bool(v.need_grad)) for v in inputs]
        for leaf, v in zip(leaves, inputs):
            leaf.data.cast(v.d.dtype)
        outs = recorded_outputs(node, leaves)
        top = outs[0] if len(outs) == 1 else _F.sink(*outs, one_input_grad=False)
        kept = (key, leaves, outs, top)
        _RUNS[node] = kept
    _, leaves, outs, top = kept
    for leaf, v in zip(leaves, inputs):
        leaf.d = v.d
    top.forward()
    return kept


def setup(node: FunctionNode, inputs: Sequence, outputs: Sequence) -> None:
    """Give ``outputs`` the shapes ``node`` computes from ``inputs``."""
    _, _, outs, _ = _run(node, inputs)
    for o, y in zip(outputs, outs):
        if tuple(o.shape) != tuple(y.shape):
            o.reset_shape(y.shape, True)


def forward(node: FunctionNode, inputs: Sequence, outputs: Sequence) -> None:
    """Compute ``node`` on ``inputs``' data into ``outputs``' data."""
    _, _, outs, _ = _run(node, inputs)
    for o, y in zip(outputs, outs):
        if tuple(o.shape) != tuple(y.shape):
            o.reset_shape(y.shape, True)
        o.d = y.d


def _same_data(leaves: Sequence, inputs: Sequence) -> bool:
    return all(np.array_equal(leaf.d, v.d, equal_nan=leaf.d.dtype.kind in "fc")
               for leaf, v in zip(leaves, inputs))


def _through_own_graph(node: FunctionNode, inputs: Sequence, outputs: Sequence,
                       accum: Sequence) -> bool:
    """The backward of ``node`` on its own inputs (distinct leaves) and its one output, whose
    values a forward of the graph wrote (not :func:`forward`): that graph's backward, which
    reads what its forward drew (a dropout's mask, as NNabla's function keeps it).  False
    where it does not apply."""
    own = [v for v in node.inputs if v is not None]
    if (len(outputs) != 1 or outputs[0] is not node.outputs[0] or len(own) != len(inputs)
            or any(a is not b or a.parent is not None for a, b in zip(inputs, own))
            or len({id(v) for v in inputs}) != len(inputs)):
        return False
    before = [v.g.copy() if v.need_grad else None for v in inputs]
    for v in inputs:
        if v.need_grad:
            v.grad.zero()
    outputs[0].backward(outputs[0].g)
    for k, v in enumerate(inputs):
        if v.need_grad:
            v.g = before[k] + v.g if accum[k] else v.g
    return True


def backward(node: FunctionNode, inputs: Sequence, outputs: Sequence,
             accum: Sequence | None = None) -> None:
    """Send ``outputs``' grads back through ``node`` into the grads of ``inputs`` that need one
    (added where ``accum[i]``, overwritten elsewhere)."""
    # (NNabla reads accum[i] for the inputs its function writes; an input past a shorter
    # list is added to, as by default)
    given = [] if accum is None else [bool(a) for a in accum]
    accum = given + [True] * (len(inputs) - len(given))
    kept = _RUNS.get(node)
    fresh = (kept is not None and kept[0] == _key(inputs) and _same_data(kept[1], inputs)
             and all(np.array_equal(o.d, y.d, equal_nan=True) for o, y in zip(outputs, kept[2])))
    if not fresh and _through_own_graph(node, inputs, outputs, accum):
        return
    if kept is None or kept[0] != _key(inputs) or not _same_data(kept[1], inputs):
        kept = _run(node, inputs)
    _, leaves, outs, top = kept
    if not any(leaf.need_grad for leaf in leaves):
        return
    for leaf in leaves:
        if leaf.need_grad:
            leaf.grad.zero()
    for o, y in zip(outputs, outs):
        if y.need_grad:
            y.g = o.g
    if len(outs) == 1:
        top.backward(outputs[0].g)
    else:
        top.backward()
    for k, (v, leaf) in enumerate(zip(inputs, leaves)):
        if not v.need_grad:
            continue
        g = leaf.g
        v.g = v.g + g if accum[k] else g
