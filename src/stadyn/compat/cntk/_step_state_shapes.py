"""The shapes of a recurrence step's states where the step applies no recurrent cell, found
as CNTK 2.7 infers them through the loop (:func:`fixed_point_shapes`): the step called on
placeholders without a shape (:func:`trial`), then replayed pass by pass as CNTK's
``Function::ValidateOrUpdateOutputs`` validates the loop (Function.cpp:395-448).

CNTK's rule (PrimitiveFunction.cpp:240-290, PrimitiveFunction.h:484-496): the state is the
``PastValue`` of the step's output and its initial state, an elementwise op, so of their
broadcast shape; in the first pass the step's output is not known yet and neither is the
state; an elementwise op (``+``, ``*``, ``-``, ``/``, comparisons, ``clip``, ``select``,
``past_value``) with an operand of unknown shape takes its other operands' (where one of them
has dynamic axes), any other op's output stays unknown; each later pass takes the state as
the broadcast of the output the previous pass gave (the initial state's shape while it was
unknown) and the initial state's, until the output no longer changes (128 passes at most).
A layer's weight takes its input axes in the first of the later passes that applies the layer
and keeps them: a later pass giving the layer another input shape is refused (ValueError,
CNTK's Times message: ``splice(d(h), x)`` with ``d = Dense(3)``), as CNTK 2.7 refuses it.

Example:
    >>> import stadyn.compat.cntk as C
    >>> fixed_point_shapes(lambda h, c, x: (C.tanh(h + x), c + h * 0.5), (3,), 2)
    [(3,), (3,)]
    >>> fixed_point_shapes(lambda h, x: h + C.reduce_sum(x), (2,))     # h: (1,) from 0's
    [(1,)]
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from ..._random import auto_seeds_kept
from ._variable_text import layout_text

__all__ = ["fixed_point_shapes", "trial", "reshaped_states", "state_reshapes",
           "MAX_PASSES"]

MAX_PASSES = 128        # CNTK's maxNumValidationPassesAllowed (Function.cpp:399)


def fixed_point_shapes(fn: Any, step_shape: tuple, n_states: int = 1, tried: Any = None,
                       initial_shapes: Any = None, dry: Any = None) -> Any:
    """The shapes of the ``n_states`` states of the step ``fn`` (no recurrent cell inside) over
    input steps of ``step_shape``, as CNTK 2.7 infers them through the loop (the module's
    rule), each state's initial value of the shape in ``initial_shapes`` (default ``(1,)``,
    the Constant a recurrence's ``initial_state=0`` makes; None for one of unknown shape).
    None where the step refuses the shapes a pass gives it (or, without ``dry``, applies a
    layer, which the trial would build).  A state the step keeps changing (``splice(h, x)``)
    and an output the initial state does not broadcast with are refused with CNTK 2.7's
    RuntimeErrors.  ``tried``: :func:`trial`'s result for the step where the caller has it
    already.  ``dry``: a context (``_dry_layers.dry_layers``) each pass runs in, in which a
    layer the step applies is applied as a copy built anew (CNTK 2.7's layer of an inferred
    input axis takes the shape the pass gives it: ``h + reduce_sum(d(x))`` with ``d =
    Dense(2)`` is ``(1,)``, the sum's, as in a step without the layer), the copies' parameters
    compared pass to pass (:func:`_weights_kept`); in the first pass a layer applied to a value
    of unknown shape gives one of unknown shape, as any op but an elementwise one, but for a
    Dense with a bias (``_deferred_loops._through``)."""
    from ._deferred_loops import _stand_in as input_variable    # (a sequence's: a step's
    if tried is None:                                           # delays read its steps)
        tried = trial(fn, n_states, layers=dry is not None)
    if tried is None:
        return None
    dry = dry if dry is not None else contextlib.nullcontext
    states, x, outs = tried
    inits = list(initial_shapes) if initial_shapes is not None else [(1,)] * n_states
    inits = [None if s is None else tuple(s) for s in inits]
    with dry():
        built = _first_pass(states, x, outs, step_shape)
    weights: dict = {}      # a layer's parameters' shapes, from the first pass that built them
    for _ in range(MAX_PASSES - 1):
        shapes = [_past_value_shape(out, init, fn) for out, init in zip(built, inits)]
        if any(s is None for s in shapes):
            shapes = [tuple(step_shape) if s is None else s for s in shapes]
        bound = {id(s.variable): input_variable(shape) for s, shape in zip(states, shapes)}
        bound[id(x.variable)] = input_variable(tuple(step_shape))
        memo: dict = {}
        try:
            with auto_seeds_kept(), dry() as copies:
                now = [tuple(o._replay(bound, memo).shape) for o in outs]
        except Exception:       # (not these shapes: an op of the step refuses them)
            return None
        _weights_kept(weights, copies or {})
        if now == built:
            return now
        built = now
    raise RuntimeError(
        f"Function 'recurrence step {_where(fn, quoted=False)}' ReplacePlaceholders: A "
        "recurrent node output shape change "
        f"happened in max allowed ({MAX_PASSES}) successive validation passes indicating a "
        "potential infinite inference loop.")


def _weights_kept(weights: dict, copies: dict) -> None:
    """Refuse, as CNTK 2.7 does, a layer of the step (a dry copy in ``copies``, ``{id(layer):
    (layer, copy)}``) given in this pass an input of other shape than in the first pass that
    built it (``weights``: its parameters' shapes then, by the layer's id, added to here):
    CNTK infers a weight's input axes once, in that pass, and its ``Times`` refuses the
    state's later shape (``splice(d(h), x)`` with ``d = Dense(3)``: ``d``'s weight takes
    the initial state's ``(1,)`` in the second pass, the state is ``(7,)`` in the third)."""
    for key, (layer, copy) in copies.items():
        now = [(getattr(p, "name", "").rsplit("/", 1)[-1], tuple(p.shape)) for p in copy.parameters]
        first = weights.setdefault(key, now)
        if first == now:
            continue
        name, was = next((a for a, b in zip(first, now) if a != b), first[0])
        new = dict(now).get(name, was)
        # (a Dense's W, an Embedding's E: read by a Times, whose words CNTK 2.7 refuses in)
        out_rank = len(getattr(layer, "shape", None) or ()) if name in ("W", "E") else 0
        if out_rank and len(was) > out_rank:
            was_in, new_in = was[:len(was) - out_rank], new[:len(new) - out_rank]
            raise ValueError(
                f"Times: The {len(was_in)} leading dimensions of the right operand with shape "
                f"'{layout_text(was_in)}' do not match the left operand's trailing dimensions "
                f"with shape '{layout_text(new_in)}' (the recurrence's weight {name!r} took its "
                "input axes in an earlier validation pass over the loop, before the state's shape "
                "settled).")
        raise ValueError(
            f"{type(layer).__name__}: its parameter {name!r} of shape '{layout_text(was)}', "
            "inferred in an earlier validation pass over the recurrence's loop, does not "
            f"match the shape '{layout_text(new)}' the state's later shape gives it.")


def _first_pass(states: list, x: Any, outs: list, step_shape: tuple) -> list:
    """The step's outputs' shapes in CNTK's first pass over the loop: its states unknown (the
    module's rule); None for one left unknown."""
    from ._deferred_loops import STRICT, UNKNOWN, _GUESSES, _PROBE, has_unknown
    from ._deferred_loops import _stand_in as input_variable
    bound: dict = {id(s.variable): UNKNOWN for s in states}
    bound[id(x.variable)] = input_variable(tuple(step_shape))
    memo: dict = {_PROBE: True, _GUESSES: {}, STRICT: True}
    found = []
    for o in outs:
        try:
            with auto_seeds_kept():
                value = o._replay(bound, memo)
        except Exception:       # (an op refusing what it was given: left to the next pass)
            value = UNKNOWN
        shape = None if has_unknown([value], {}) else getattr(value, "shape", None)
        found.append(None if shape is None or -2 in tuple(shape) else tuple(shape))
    return found


def _past_value_shape(out: Any, init: Any, fn: Any) -> Any:
    """The shape of CNTK's ``PastValue`` of a step's output of shape ``out`` (None: unknown)
    and an initial state of shape ``init`` (None: unknown): their broadcast, as any
    elementwise op's (PrimitiveFunction.h:484-530); CNTK's RuntimeError where they do not
    broadcast."""
    if out is None or init is None:
        return init if out is None else out
    try:
        return tuple(np.broadcast_shapes(out, init))
    except ValueError:
        raise RuntimeError(
            "Binary elementwise operation PastValue: Left operand 'the output of step "
            f"{_where(fn, quoted=False)}' shape '{layout_text(out)}' is not compatible with "
            f"right operand 'its initial state' shape '{layout_text(init)}'.") from None


def _where(fn: Any, quoted: bool = True) -> str:
    """``'step' (model.py:12)``: the step named as its messages name it (``quoted``: its name
    in quotes)."""
    fn = getattr(fn, "_fn", fn)
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    return (repr(name) if quoted else name) + \
        (f" ({code.co_filename}:{code.co_firstlineno})" if code else "")


def trial(fn: Any, n_states: int, layers: bool = False) -> Any:
    """``(state placeholders, input placeholder, new states)`` of the step ``fn`` called on
    placeholders without a shape, each new state waiting (a ``Deferred``); None where the step
    cannot be called so, gives other than ``n_states`` states, or (unless ``layers``: the
    caller replays it with its layers applied dry) applies a layer, which a replay would
    build."""
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
    if len(outs) != n_states or not all(isinstance(o, Deferred) and
                                        (layers or not _applies_a_layer(o)) for o in outs):
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
