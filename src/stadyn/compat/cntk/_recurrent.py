"""``cntk.layers``' recurrent layers on Stadyn's (``stadyn.layers``: ``Recurrence``,
``RecurrenceFrom``, ``Fold``, ``LSTM``, ``GRU``, ``RNNStep``).

A step may be a CNTK layer or any Python function over CNTK Functions
(``Recurrence(lambda h, x: C.tanh(h + x))``): the function is called on Functions wrapping the
step's placeholders.
"""

from __future__ import annotations

from typing import Any

from ... import layers as _L
from ._adapt import unwrap, wrap
from ._function import combine_outputs
from ._layers import LayerFunction, _layer, _native

__all__ = ["Recurrence", "RecurrenceFrom", "Fold", "LSTM", "GRU", "RNNStep", "StatesLayer"]

LSTM = _layer(_L.LSTM, "LSTM")
GRU = _layer(_L.GRU, "GRU")
RNNStep = _layer(_L.RNNStep, "RNNStep")


class StatesLayer(LayerFunction):
    """A layer whose Stadyn layer returns several values (a recurrence's states with
    ``return_full_state``): as in CNTK, one Function with an output each.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.sequence.input_variable(2)
        >>> h_c = C.layers.Recurrence(C.layers.LSTM(3), return_full_state=True)(x)
        >>> [o.shape for o in h_c.outputs]
        [(3,), (3,)]
    """

    def __call__(self, *args):
        out = super().__call__(*args)
        return combine_outputs(list(out)) if isinstance(out, tuple) else out


def _step(step_function: Any):
    """A step as the native layers call it (on Variables)."""
    if isinstance(step_function, LayerFunction):
        return step_function.layer

    def step(*variables):
        return unwrap(step_function(*[wrap(v) for v in variables]))
    return step


def _initial(initial_state: Any) -> Any:
    if isinstance(initial_state, tuple):
        return tuple(_initial(s) for s in initial_state)
    return unwrap(_native(initial_state))


def Recurrence(step_function, go_backwards=_L.default_override_or(False),
               initial_state=_L.default_override_or(0), return_full_state: bool = False,
               name: str = "") -> LayerFunction:
    """``cntk.layers.Recurrence``: ``step_function`` (``(state..., x) -> state``) along the
    sequence axis.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.sequence.input_variable(2)
        >>> h = C.layers.Recurrence(C.layers.LSTM(3))(x)
        >>> [a.shape for a in h.eval({x: [np.ones((2, 2), np.float32)]})]
        [(2, 3)]
    """
    return StatesLayer(_L.Recurrence(_step(step_function), go_backwards,
                                       _initial(initial_state), return_full_state, name),
                         "Recurrence", name)


def RecurrenceFrom(step_function, go_backwards=_L.default_override_or(False),
                   return_full_state: bool = False, name: str = "") -> LayerFunction:
    """``cntk.layers.RecurrenceFrom``: called as ``(initial states..., x)``.  Example:
    ``C.layers.RecurrenceFrom(C.layers.GRU(4))(h0, x)``."""
    return StatesLayer(_L.RecurrenceFrom(_step(step_function), go_backwards,
                                           return_full_state, name), "RecurrenceFrom", name)


def Fold(folder_function, go_backwards=_L.default_override_or(False),
         initial_state=_L.default_override_or(0), return_full_state: bool = False,
         name: str = "") -> LayerFunction:
    """``cntk.layers.Fold``: the final state of a recurrence.  Example:
    ``C.layers.Fold(C.layers.GRU(4))(x)``."""
    return StatesLayer(_L.Fold(_step(folder_function), go_backwards,
                                 _initial(initial_state), return_full_state, name), "Fold", name)
