"""Layers applied without being built: a recurrence step's state shape found as CNTK 2.7 infers
it through the loop where the step applies a layer (``Recurrence(lambda h, x: d(splice(h,
x)))`` with ``d = Dense(3)``: the state is ``d``'s output, ``(3,)``).

CNTK 2.7 leaves the layer's weight of an inferred input axis (``[? x 3]``) until the loop's
shapes settle; Stadyn's layer makes its parameters at its first application, so the step
recorded on a state of a guessed shape (the input step's) would give ``d`` a weight of the
wrong shape.  Inside :func:`dry_layers`, :func:`dry_copy` gives a copy of each layer without
its parameters (one built already too: its copy is built again on each shape tried), in a
registry of its own, the program's seeds kept, so the real layer is built once, with the
shapes found.  The state is found by CNTK's validation passes
(``_step_state_shapes.fixed_point_shapes``, each pass in a :func:`dry_layers` of its own, the
copies' parameters compared from pass to pass: CNTK fixes a weight's input axes in the first
pass that gives them); :func:`dry_fixed_point`, a search from the input step's shape
and the shapes the step reshapes its state to, is left for a step the passes refuse.

Example:
    >>> import stadyn.compat.cntk as C
    >>> d = C.layers.Dense(3)
    >>> step = lambda h, x: d(C.splice(h, x))
    >>> dry_fixed_point(step, (4,)), d.W.shape
    ([(3,)], (-1, 3))
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any, Callable

from ...graph import Variable, auto_forward
from ...layers import Layer
from ...parametric import ParameterRegistry, parameter_registry
from ..._random import auto_seeds_kept
from ._layers_composite import CompositeLayer

__all__ = ["dry_layers", "dry_copy", "in_dry_run", "dry_fixed_point"]

# the copies of the layers applied in the current dry run (by the layer's id), while one runs
_DRY: "list[dict]" = []
_TRIES = 4      # shapes not settled after so many tries: no fixed point (the loop's error)


@contextlib.contextmanager
def dry_layers():
    """Layers applied inside are applied by :func:`dry_apply` (yields the dict of the copies
    made, empty where the code applied no layer)."""
    copies: dict = {}
    _DRY.append(copies)
    try:
        with auto_seeds_kept(), parameter_registry(ParameterRegistry()):
            yield copies
    finally:
        _DRY.pop()


def dry_copy(layer: Any) -> Any:
    """The layer to apply in place of ``layer`` (a Stadyn layer): inside a dry run, a copy of it
    without its parameters (one copy per run, as the real layer is one); a composite itself
    (a ``Sequential``: its steps, layers, are copied as they are applied); ``layer`` itself
    outside a dry run."""
    if not _DRY or isinstance(layer, CompositeLayer):
        return layer
    copies = _DRY[-1]
    if id(layer) not in copies:
        copies[id(layer)] = (layer, _unbuilt_copy(layer))
    return copies[id(layer)][1]


def _unbuilt_copy(layer: Any) -> Any:
    """A deep copy of ``layer`` (a native layer) and of the layers it holds, their parameters
    left out (made again when the copy is applied)."""
    other = copy.deepcopy(layer, {id(p): None for p in layer.parameters})
    seen: set = set()
    todo = [other]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, Layer):
            obj._params = {}
            todo.extend(vars(obj).values())
        elif isinstance(obj, (list, tuple)):
            todo.extend(obj)
    return other


def in_dry_run() -> bool:
    """Whether a dry run (:func:`dry_layers`) is on: an applied layer's output is only looked
    at, not recorded as a block."""
    return bool(_DRY)


def dry_fixed_point(step: Callable, step_shape: tuple) -> "list | None":
    """The shape of the one state of ``step`` (``(state, x) -> state``, over CNTK Functions) over
    input steps of ``step_shape`` where the step applies a layer: tried first as the input
    step's, then as the step returns it, until the step maps it to itself (CNTK 2.7's loop
    inference); where the step refuses the input step's shape, tried so from each shape the
    step reshapes its state to (``d(splice(reshape(h, (6,)), x))``: ``(6,)``, as CNTK's loop
    takes the reshape's shape), then from ``(1,)``, the initial state's (``d(x) + h`` with
    ``d = Dense(3)`` over ``(2,)``: ``(3,)``, as CNTK 2.7's); None where the step applies no
    layer, cannot be called so, or its state does not settle."""
    from ._step_state_shapes import state_reshapes
    found = _settled(step, tuple(int(d) for d in step_shape), step_shape)
    if found is not _REFUSED:
        return found
    for shape in state_reshapes(step) + [(1,)]:   # (last: initial_state=0's, from which
        found = _settled(step, shape, step_shape)   # CNTK's loop passes go: d(x) + h)
        if found is not _REFUSED:
            return found
    return None


_REFUSED = object()     # (the step refused the state's shape: another may be tried)


def _settled(step: Callable, shape: tuple, step_shape: tuple) -> Any:
    """:func:`dry_fixed_point` from the state's shape ``shape``: ``[shape]`` it settles at,
    None (no layer applied, no settling), or ``_REFUSED`` where the step refuses a shape."""
    from . import _graph as G
    from ._adapt import unwrap, wrap
    for _ in range(_TRIES):
        try:
            with dry_layers() as copies, auto_forward(False):
                state, x = Variable((1,) + shape), Variable((1,) + tuple(step_shape))
                for v in (state, x):        # (one step of each: batch axis first)
                    G.BATCH.add(v)
                    G.STEP_VALUES.add(v)
                out = unwrap(step(wrap(state), wrap(x)))
        except Exception:       # (not this shape: CNTK's loop refuses it too)
            return _REFUSED
        if not copies or not isinstance(out, Variable):
            return None
        found = tuple(int(d) for d in out.shape[1:])
        if found == shape:
            return [shape]
        shape = found
    return None
