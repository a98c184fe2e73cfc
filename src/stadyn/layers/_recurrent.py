"""CNTK's recurrent layers: step functions (``LSTM``, ``GRU``, ``RNNStep``) and the layers that
run a step along the sequence axis (``Recurrence``, ``RecurrenceFrom``, ``Fold``).

A step is a layer called as ``step(*previous_states, x)`` on one step of the input (batch axis
first) that returns the new state (or tuple of states); its ``state_shapes`` says the states'
shapes.  The weight layouts are CNTK 2.7's, so weights CNTK initialised give CNTK's numbers:
``W`` ``(input, k*H)``, ``H`` ``(H, k*H)``, ``b`` ``(k*H,)`` with the gates stacked in CNTK's
order.  ``Recurrence`` records the step once (``sd.sequence.recurrence``) and the
``recurrence`` op runs it at every step, in both modes.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import functions as F
from .. import sequence as S
from .._errors import StadynError
from ..graph import set_sequence_axis
from ._init import glorot_uniform
from ._layers import Layer, _tuple
from ._options import default_override_or, resolve

__all__ = ["LSTM", "GRU", "RNNStep", "Recurrence", "RecurrenceFrom", "Fold"]


def _kernel_activation(activation) -> str | None:
    """The fused ops' name for a step's activation (``"tanh"``, ``"relu"``), None for others."""
    return {F.tanh: "tanh", F.relu: "relu"}.get(activation)


def _gates(proj, k: int, size: int) -> list:
    """``proj`` ``(B, k*size)`` split into its ``k`` gates ``(B, size)``."""
    return list(F.split(F.reshape(proj, (-1, k, size)), axis=1))


class _Step(Layer):
    """A recurrent step with ``W`` (input x stacked gates), ``H`` and ``b``."""

    n_gates = 1
    default_activation: Callable = staticmethod(F.tanh)

    def __init__(self, shape, cell_shape=None, activation=default_override_or(None),
                 init=default_override_or(glorot_uniform()),
                 init_bias=default_override_or(0.0),
                 enable_self_stabilization=default_override_or(False), name: str = ""):
        super().__init__(name)
        self.shape = _tuple(shape, 1)
        kind = type(self).__name__
        if len(self.shape) != 1:
            raise StadynError(f"{kind}: a state of shape {self.shape}; only vectors are "
                              "supported")
        if cell_shape is not None or resolve(kind, "enable_self_stabilization",
                                             enable_self_stabilization):
            raise StadynError(f"{kind}: cell_shape and enable_self_stabilization are not "
                              "supported yet")
        self.activation = resolve(kind, "activation", activation) or self.default_activation
        self.init = resolve(kind, "init", init)
        self.init_bias = resolve(kind, "init_bias", init_bias)

    @property
    def state_shapes(self) -> list[tuple[int, ...]]:
        return [self.shape] * self.n_states

    n_states = 1

    def _weights(self, x, hidden_cols: int):
        size, n_in = self.shape[0], int(np.prod(x.shape[1:]))
        cols = self.n_gates * size
        w = self.parameter("W", (n_in, cols), self.init, n_in, cols)
        h = self.parameter("H", (size, hidden_cols), self.init, size, hidden_cols)
        b = self.parameter("b", (cols,), self.init_bias)
        return w, h, b


class LSTM(_Step):
    """CNTK's LSTM step: ``(h, c), x -> (h, c)`` with gates stacked as input, cell candidate,
    forget, output in ``W`` ``(input, 4H)``, ``H`` ``(H, 4H)``, ``b`` ``(4H,)``;
    ``use_peepholes`` adds ``Ci``, ``Cf``, ``Co``.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.layers as L
        >>> x = sd.sequence.input_variable(3)
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = L.Recurrence(L.LSTM(5))(x)
        >>> x.d = [np.ones((2, 3)), np.ones((4, 3))]
        >>> y.forward()
        >>> y.shape, y.sequence_lengths.d.tolist()
        ((2, 4, 5), [2, 4])
    """

    n_gates = 4
    n_states = 2

    def __init__(self, shape, cell_shape=None, activation=default_override_or(F.tanh),
                 use_peepholes=default_override_or(False),
                 init=default_override_or(glorot_uniform()),
                 init_bias=default_override_or(0.0),
                 enable_self_stabilization=default_override_or(False), name: str = ""):
        super().__init__(shape, cell_shape, activation, init, init_bias,
                         enable_self_stabilization, name)
        self.use_peepholes = resolve("LSTM", "use_peepholes", use_peepholes)

    @property
    def fusable(self) -> bool:
        """Whether a recurrence over this step may run as torch's fused LSTM kernel (no
        peepholes, tanh)."""
        return not self.use_peepholes and self.activation is F.tanh

    def apply(self, h, c, x, go_backwards: bool = False):
        size = self.shape[0]
        if x.sequence_lengths is not None:        # a whole sequence: the fused kernel
            w, hw, b = self._weights(F.sequence_first(x, x.sequence_lengths), 4 * size)
            return set_sequence_axis(
                F.cntk_lstm_sequence(x, x.sequence_lengths, S.state_value(h),
                                     S.state_value(c), w, hw, b, go_backwards=go_backwards),
                x.sequence_lengths)
        w, hw, b = self._weights(x, 4 * size)
        proj = F.affine(x, w, b) + F.affine(h, hw)
        i_proj, c_proj, f_proj, o_proj = _gates(proj, 4, size)
        if self.use_peepholes:
            peep = [self.parameter(n, (size,), self.init, size, size) for n in ("Ci", "Cf", "Co")]
            i_proj = i_proj + peep[0] * c
            f_proj = f_proj + peep[1] * c
        c_new = F.sigmoid(f_proj) * c + F.sigmoid(i_proj) * self.activation(c_proj)
        if self.use_peepholes:
            o_proj = o_proj + peep[2] * c_new
        return F.sigmoid(o_proj) * self.activation(c_new), c_new


class GRU(_Step):
    """CNTK's GRU step: ``h, x -> h`` with ``W`` ``(input, 3H)`` (update, reset, candidate),
    ``H`` ``(H, 2H)`` (update, reset), ``H1`` ``(H, H)`` for the reset state:
    ``h' = (1 - z) * act(x Wc + bc + (r * h) H1) + z * h``.

    Example:
        >>> import stadyn as sd, stadyn.layers as L
        >>> x = sd.sequence.input_variable(3)
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = L.Recurrence(L.GRU(2))(x)
        >>> y.shape
        (1, 1, 2)
    """

    n_gates = 3

    @property
    def fusable(self) -> bool:
        """Whether a recurrence over this step may run as one ``cntk_gru_sequence`` op (tanh or
        ReLU)."""
        return _kernel_activation(self.activation) is not None

    def apply(self, h, x, go_backwards: bool = False):
        size = self.shape[0]
        if x.sequence_lengths is not None:        # a whole sequence at once
            w, hw, b = self._weights(F.sequence_first(x, x.sequence_lengths), 2 * size)
            h1 = self.parameter("H1", (size, size), self.init, size, size)
            return set_sequence_axis(
                F.cntk_gru_sequence(x, x.sequence_lengths, S.state_value(h), w, hw, h1, b,
                                    activation=_kernel_activation(self.activation),
                                    go_backwards=go_backwards),
                x.sequence_lengths)
        w, hw, b = self._weights(x, 2 * size)
        h1 = self.parameter("H1", (size, size), self.init, size, size)
        zx, rx, cx = _gates(F.affine(x, w, b), 3, size)
        zh, rh = _gates(F.affine(h, hw), 2, size)
        z, r = F.sigmoid(zx + zh), F.sigmoid(rx + rh)
        candidate = self.activation(cx + F.affine(r * h, h1))
        return (1.0 - z) * candidate + z * h


class RNNStep(_Step):
    """CNTK's plain recurrent step: ``h, x -> act(x W + h H + b)`` (sigmoid by default).

    Example:
        >>> import stadyn as sd, stadyn.layers as L
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = L.Recurrence(L.RNNStep(4))(sd.sequence.input_variable(2))
        >>> y.shape
        (1, 1, 4)
    """

    default_activation = staticmethod(F.sigmoid)

    @property
    def fusable(self) -> bool:
        """Whether a recurrence over this step may run as torch's fused Elman kernel (tanh or
        ReLU; CNTK's default sigmoid has none)."""
        return _kernel_activation(self.activation) is not None

    def apply(self, h, x, go_backwards: bool = False):
        if x.sequence_lengths is not None:        # a whole sequence: the fused kernel
            w, hw, b = self._weights(F.sequence_first(x, x.sequence_lengths), self.shape[0])
            return set_sequence_axis(
                F.cntk_rnn_sequence(x, x.sequence_lengths, S.state_value(h), w, hw, b,
                                    activation=_kernel_activation(self.activation),
                                    go_backwards=go_backwards),
                x.sequence_lengths)
        w, hw, b = self._weights(x, self.shape[0])
        return self.activation(F.affine(x, w, b) + F.affine(h, hw))


def _state_shapes(step: Any, x) -> list[tuple[int, ...]]:
    shapes = getattr(step, "state_shapes", None)
    if shapes is not None:
        return [tuple(s) for s in shapes]
    return [tuple(x.shape[2:])]          # a plain function: a state shaped like one step


class Recurrence(Layer):
    """Run ``step`` along the sequence axis: state ``t = step(state t-1, x t)`` from
    ``initial_state`` (a number, array or Variable; per state with a tuple), backwards with
    ``go_backwards``; returns the first state's sequence (every state's with
    ``return_full_state``).  Example: ``L.Recurrence(L.LSTM(64))(embedded)``; see
    :class:`LSTM`.
    """

    def __init__(self, step_function, go_backwards=default_override_or(False),
                 initial_state=default_override_or(0.0), return_full_state: bool = False,
                 name: str = ""):
        super().__init__(name)
        self.step = step_function
        self.go_backwards = resolve("Recurrence", "go_backwards", go_backwards)
        self.initial_state = resolve("Recurrence", "initial_state", initial_state)
        self.return_full_state = return_full_state

    def _run(self, initial: Sequence[Any], x):
        shapes = _state_shapes(self.step, x)
        if len(initial) == 1 and len(shapes) > 1:
            initial = list(initial) * len(shapes)
        if getattr(self.step, "fusable", False) and not self.return_full_state and \
                len(x.shape) == 3:
            return self.step(*initial, x, self.go_backwards)     # the whole sequence at once
        states = S.recurrence(self.step, [x], initial, shapes, go_backwards=self.go_backwards)
        return states if self.return_full_state and len(states) > 1 else states[0]

    def apply(self, x):
        init = self.initial_state
        return self._run(list(init) if isinstance(init, tuple) else [init], x)

    @property
    def parameters(self):
        return list(getattr(self.step, "parameters", []) or [])


class RecurrenceFrom(Recurrence):
    """:class:`Recurrence` whose initial states are given with the input:
    ``RecurrenceFrom(step)(h0, [c0,] x)``.  Example:
    ``L.RecurrenceFrom(L.GRU(8))(encoded, target)``."""

    def __init__(self, step_function, go_backwards=default_override_or(False),
                 return_full_state: bool = False, name: str = ""):
        super().__init__(step_function, go_backwards, 0.0, return_full_state, name)

    def apply(self, *args):
        *initial, x = args
        return self._run(initial, x)


class Fold(Recurrence):
    """:class:`Recurrence` keeping only the final state (each sequence's last step; its first
    going backwards).  Example: ``L.Fold(L.GRU(8))(x)`` is one vector per sequence."""

    def apply(self, x):
        states = super().apply(x)
        end = S.first if self.go_backwards else S.last
        if isinstance(states, tuple):
            return tuple(end(s) for s in states)
        return end(states)
