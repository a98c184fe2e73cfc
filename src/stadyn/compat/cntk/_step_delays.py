"""A ``past_value`` / ``future_value`` / ``delay`` inside a Python recurrence step, of a value
the step computes from its input alone (``Recurrence(lambda h, v: h + C.sequence.past_value(v))``).

CNTK 2.7 builds the step into the recurrence's graph over the whole sequence, so such a delay
is the value one step earlier (later) in the sequence, outside the loop.  Stadyn records the
step on one step of each input; the delays the step applies are found by calling it on
placeholders (:func:`step_delays`), computed over the input sequence before the loop
(:func:`delayed_sequences`: one more input of the recurrence each), and given back, one step of
each, to the step's calls of ``past_value`` (``sequence.py``'s ops ask :func:`in_step`), in
the order the step made them.  A delay of a value that reads the states (``past_value(h)``)
is refused with a NotImplementedError naming the step.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.sequence.input_variable(1)
    >>> z = C.layers.Recurrence(lambda h, v: h + C.sequence.past_value(v))(x)
    >>> z.eval({x: [np.array([[1.0], [2.0], [3.0]], np.float32)]})[0].ravel().tolist()
    [0.0, 1.0, 3.0]
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from ._adapt import unwrap, wrap

__all__ = ["step_delays", "delayed_sequences", "in_step", "given"]

_DELAYS = ("past_value", "future_value", "delay")
# the delayed steps given to the step being called, per thread: [iterator over them] (one
# per level of steps being recorded: a step inside another's); a thread recording its own
# step, or none, takes nothing of another's
_LOCAL = threading.local()


def _given() -> list:
    """This thread's stack of the delays given to the steps being called."""
    stack = getattr(_LOCAL, "given", None)
    if stack is None:
        stack = _LOCAL.given = []
    return stack


def step_delays(fn: Any, n_states: int, where: str) -> "tuple[Any, list]":
    """``(the input's placeholder, the delays)`` the step ``fn`` of ``n_states`` states applies
    (waiting parts, in the order met), called on placeholders; ``(None, [])`` where it applies
    none or cannot be called so.  One reading a state: a NotImplementedError naming the step
    (``where``)."""
    from ._deferred_reads import parts_of, reads
    from ._step_checks import called_on_placeholders
    calls = called_on_placeholders(fn, n_states)
    if calls is None:       # (a step the call cannot run: no delays found)
        return None, []
    states, x, out = calls
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    try:
        parts = parts_of(*outs)
    except Exception:       # (results that are no waiting Functions: none)
        return None, []
    found = [p for p in parts if getattr(p._fn, "__name__", "") in _DELAYS and
             getattr(p._fn, "__module__", "").endswith("compat.cntk.sequence")]
    for part in found:
        operand = part._args[0] if part._args else part._kwargs.get("x")
        if any(getattr(operand, "variable", None) is s.variable or reads(operand, s)
               for s in states):
            raise NotImplementedError(
                f"the recurrence step {where} applies {part._fn.__name__} to a value that "
                "reads its state: CNTK 2.7 delays it inside the loop; Stadyn computes a "
                "step's delays over the input sequence before the loop, so only one of "
                "values computed from the step's input is supported")
    return (x, found) if found else (None, [])


def delayed_sequences(x_placeholder: Any, delays: list, x: Any) -> list:
    """The ``delays`` (:func:`step_delays`) computed over the input sequence ``x`` (a
    Variable), each a sequence of ``x``'s steps."""
    bound = {id(x_placeholder.variable): wrap(x)}
    memo: dict = {}
    return [unwrap(part._replay(bound, memo)) for part in delays]


@contextlib.contextmanager
def given(steps: list):
    """While a step is called: its delays, one step of each sequence
    :func:`delayed_sequences` made, given out in turn by :func:`in_step`."""
    stack = _given()
    stack.append(iter(list(steps)))
    try:
        yield
    finally:
        stack.pop()


def in_step(x: Any, op: str) -> Any:
    """The step of its delay the step being called gets for its call ``op`` (``past_value``
    ...) on ``x``, a value of one step (no sequence axis); None where no step is being called
    with delays, or ``x`` has a sequence axis (a delay over a whole sequence)."""
    stack = _given()
    if not stack or getattr(unwrap(x), "sequence_lengths", None) is not None:
        return None
    step = next(stack[-1], None)
    if step is None:
        raise RuntimeError(f"{op} inside a recurrence step: the step applies more delays "
                           "than it did called on placeholders")
    return wrap(step)
