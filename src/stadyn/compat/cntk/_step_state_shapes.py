"""The shapes of a recurrence step's states where the step applies no recurrent cell, found
as CNTK 2.7 infers them through the loop: the step called on placeholders without a shape
(:func:`trial`), then replayed over states of candidate shapes until it maps them to
themselves (:func:`fixed_point_shapes`).

Example:
    >>> import stadyn.compat.cntk as C
    >>> fixed_point_shapes(lambda h, c, x: (C.tanh(h + x), c + h * 0.5), (3,), 2)
    [(3,), (3,)]
"""

from __future__ import annotations

from typing import Any

from ..._random import auto_seeds_kept

__all__ = ["fixed_point_shapes", "trial", "reshaped_states", "state_reshapes"]


def fixed_point_shapes(fn: Any, step_shape: tuple, n_states: int = 1, tried: Any = None) -> Any:
    """The shapes of the ``n_states`` states of the step ``fn`` (no recurrent cell inside) over
    input steps of ``step_shape``, as CNTK 2.7 infers them through the loop: the shapes the
    step maps to themselves, each state tried first as the input's, then as the shape the step
    reshapes a state to (``reshape(h, (6,))``: ``(6,)``), then as a vector of each
    length of the parameters and constants the step reads (``tanh(times(h, H) + times(x, W) +
    b)`` with ``H`` of ``(2, 2)``: ``(2,)``), and where a state comes out otherwise, tried
    again as it came out.  None where none is (or the step applies a layer, which the trial
    would build).  ``tried``: :func:`trial`'s result for the step where the caller has it
    already (the trial is run otherwise)."""
    from ._deferred_shapes import read_lengths
    from ._variables import input_variable
    if tried is None:
        tried = trial(fn, n_states)
    if tried is None:
        return None
    states, x, outs = tried
    lengths = [n for o in outs for n in read_lengths(o)]
    candidates = [tuple(step_shape)] + reshaped_states(outs, states) + \
        [(n,) for n in dict.fromkeys(lengths)]
    for candidate in dict.fromkeys(candidates):
        shapes = [candidate] * n_states
        for _ in range(n_states + 1):       # (a state shaped by another's: tried as it came)
            bound = {id(s.variable): input_variable(shape) for s, shape in zip(states, shapes)}
            bound[id(x.variable)] = input_variable(tuple(step_shape))
            memo: dict = {}
            try:
                with auto_seeds_kept():
                    built = [tuple(o._replay(bound, memo).shape) for o in outs]
            except Exception:       # (not these shapes: an op of the step refuses them)
                break
            if built == shapes:
                return shapes
            shapes = built
    return None


def trial(fn: Any, n_states: int) -> Any:
    """``(state placeholders, input placeholder, new states)`` of the step ``fn`` called on
    placeholders without a shape, each new state waiting (a ``Deferred``); None where the step
    cannot be called so, gives other than ``n_states`` states, or applies a layer (which the
    trial would build)."""
    from ._deferred import Deferred
    from ._deferred_shapes import _applies_a_layer
    from ._variables import placeholder
    fn = getattr(fn, "_fn", fn)
    states = [placeholder(name=f"state{k}" if n_states > 1 else "state")
              for k in range(n_states)]
    x = placeholder(name="x")
    try:
        with auto_seeds_kept():
            out = fn(*states, x)
    except Exception:       # (a step the trial cannot run: its shape stays unknown)
        return None
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(outs) != n_states or not all(isinstance(o, Deferred) and not _applies_a_layer(o)
                                        for o in outs):
        return None
    return states, x, outs


def reshaped_states(outs: list, states: list) -> list:
    """The shapes the step whose results (waiting on placeholders) are ``outs`` reshapes one of
    its ``states`` (those placeholders) to, whole (``reshape(h, (6,))``: ``(6,)``; none with
    an inferred axis, -1, or axes named), each once, first met first: CNTK 2.7's loop takes
    the reshape's shape as known where the state's is not, so the state comes out of such a
    step whatever the input step's shape is.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> h, x = C.placeholder(name="h"), C.placeholder(name="x")
        >>> reshaped_states([C.reshape(h, (2, 3)) + C.reshape(x, (6,))], [h])
        [(2, 3)]
    """
    from ._deferred_reads import parts_of
    found: list = []
    for part in parts_of(*outs):
        fn, args = part._fn, part._args
        if getattr(fn, "__name__", "") != "reshape" or \
                not getattr(fn, "__module__", "").endswith("._ops_shape") or len(args) != 2 or \
                any(v is not None for k, v in part._kwargs.items() if k != "name") or \
                all(args[0] is not s for s in states):
            continue
        shape = (args[1],) if isinstance(args[1], int) else tuple(args[1])
        if all(isinstance(d, int) and d > 0 for d in shape) and shape not in found:
            found.append(shape)
    return found


def state_reshapes(fn: Any) -> list:
    """:func:`reshaped_states` of the step ``fn`` of one state called on placeholders (a step
    applying a layer too: its call waits, nothing is built); none where it cannot be called
    so."""
    from ._variables import placeholder
    fn = getattr(fn, "_fn", fn)
    state, x = placeholder(name="state"), placeholder(name="x")
    try:
        with auto_seeds_kept():
            out = fn(state, x)
    except Exception:       # (a step the call cannot run: no shapes from it)
        return []
    return reshaped_states(list(out) if isinstance(out, (tuple, list)) else [out], [state])
