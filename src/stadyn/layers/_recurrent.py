"""CNTK's recurrent layers: step functions (``LSTM``, ``GRU``, ``RNNStep``) and the layers that
run a step along the sequence axis (``Recurrence``, ``RecurrenceFrom``, ``Fold``).

A step is a layer called as ``step(*previous_states, x)`` on one step of the input (batch axis
first) that returns the new state (or tuple of states); its ``state_shapes`` says the states'
shapes (a step whose ``state_shapes`` is None and that has ``state_shapes_for(step_shape,
initial)`` is asked with the input step's shape and the initial states; otherwise the one
state is shaped like an input step; a step with ``sequence_inputs(x)`` is given those
sequences' steps after ``x``'s).
The weight layouts are CNTK 2.7's, so weights CNTK initialised give CNTK's numbers:
``W`` ``(input, k*C)``, ``H`` ``(H, k*C)``, ``b`` ``(k*C,)`` with the gates stacked in CNTK's
order, where ``H`` is the step's ``shape`` and ``C`` its ``cell_shape`` (``H`` unless given).
``Recurrence`` records the step once (``sd.sequence.recurrence``) and the ``recurrence`` op runs
it at every step, in both modes.

As in CNTK 2.7, ``cell_shape`` computes the step at ``C`` and projects its output to ``H`` with
``P`` ``(C, H)``: ``h = ht P``.  ``enable_self_stabilization`` puts a :class:`Stabilizer` (a
learned scalar ``softplus(alpha)``, 1 at the start) on the previous output before the step uses
it (``dh_stabilizer``), on the LSTM's cell values in its peepholes (``dc_stabilizer`` for the
previous cell, ``c_stabilizer`` for the new one) and on the value a projection projects
(``P_stabilizer``); the input is not stabilised (put a ``Stabilizer`` before the recurrence).
A stabilised or projected step runs op by op, not as a fused kernel.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import functions as F
from .. import sequence as S
from .._errors import StadynError
from ._init import glorot_uniform
from ._layers import Layer, _tuple
from ._normalization import Stabilizer
from ._options import default_override_or, resolve

__all__ = ["LSTM", "GRU", "RNNStep", "Recurrence", "RecurrenceFrom", "Fold"]


def _kernel_activation(activation) -> str | None:
    """The fused ops' name for a step's activation (``"tanh"``, ``"relu"``), None for others."""
    return {F.tanh: "tanh", F.relu: "relu"}.get(activation)


def _gates(proj, k: int, size: int) -> list:
    """``proj`` ``(B, k*size)`` (or ``(B, T, k*size)``) split into its ``k`` gates
    ``(B, size)`` (``(B, T, size)``); one op per gate (a loop closed by CNTK's
    ``replace_placeholders`` replays single-output ops)."""
    return [F.slice(proj, start=(g * size,), stop=((g + 1) * size,)) for g in range(k)]


def _lead(v) -> int:
    """The axes of ``v`` before a step's: the batch axis, and the sequence axis if it has one."""
    return 1 if getattr(v, "sequence_lengths", None) is None else 2


def _whole_sequence(h, x) -> bool:
    """Whether a step applied to ``x`` runs over its whole sequence (the fused kernels, as
    ``Recurrence`` calls it: ``x`` a sequence, the state its initial value).  A state that is
    itself a sequence (CNTK 599A's ``LSTM(dh, dc, x)`` on placeholders of ``x``'s axes, the loop
    closed later by ``replace_placeholders``) makes it a step at every position."""
    return x.sequence_lengths is not None and getattr(h, "sequence_lengths", None) is None


def _times(v, w, b=None):
    """``v W (+ b)`` over the last axis of ``v``, its other axes mapped (CNTK's ``times`` with
    ``W`` of rank 2: an ``LSTM`` on steps of ``(1, 1, 40)`` gives ``(1, 1, H)``)."""
    return F.affine(v, w, b, max(len(v.shape) - 1, _lead(v)))


class _Step(Layer):
    """A recurrent step with ``W`` (input x stacked gates), ``H`` and ``b``; its stabilisers
    (``enable_self_stabilization``) and output projection ``P`` (``cell_shape``)."""

    n_gates = 1
    hidden_gates = 1                       # the gates ``H`` projects the previous output to
    default_activation: Callable = staticmethod(F.tanh)

    def __init__(self, shape, cell_shape=None, activation=default_override_or(None),
                 init=default_override_or(glorot_uniform()),
                 init_bias=default_override_or(0.0),
                 enable_self_stabilization=default_override_or(False), name: str = ""):
        super().__init__(name)
        kind = type(self).__name__
        self.shape = _tuple(shape, 1)
        self.projected = cell_shape is not None
        self.cell_shape = _tuple(cell_shape, 1) if self.projected else self.shape
        if len(self.shape) != 1 or len(self.cell_shape) != 1:
            raise StadynError(f"{kind}: shape {self.shape} and cell_shape {self.cell_shape} "
                              "must be vectors (rank-1), as in CNTK")
        self.stabilize = bool(resolve(kind, "enable_self_stabilization",
                                      enable_self_stabilization))
        self.activation = resolve(kind, "activation", activation) or self.default_activation
        self.init = resolve(kind, "init", init)
        self.init_bias = resolve(kind, "init_bias", init_bias)
        self._stabilizers: dict[str, Stabilizer] = {}
        self._take_seeds(self.init, self._seeded())

    def _seeded(self) -> list[str]:
        """The parameters drawn from ``init``, in the order CNTK makes (and seeds) them."""
        return ["W", "H"] + ["P"] * self.projected

    @property
    def state_shapes(self) -> list[tuple[int, ...]]:
        return [self.shape] * self.n_states

    n_states = 1

    @property
    def op_by_op(self) -> bool:
        """Whether the step must run op by op (stabilised or projected: no fused kernel)."""
        return self.stabilize or self.projected

    @property
    def parameters(self) -> list:
        """The step's parameters, then its stabilisers' ``alpha`` (after its first call)."""
        return list(self._params.values()) + [p for s in self._stabilizers.values()
                                              for p in s.parameters]

    def _stabilized(self, name: str, v):
        """``v`` through the stabiliser ``name`` (``dh_stabilizer``, ...; created on first use)
        when self-stabilisation is on, else ``v``."""
        if not self.stabilize:
            return v
        layer = self._stabilizers.get(name)
        if layer is None:
            layer = self._stabilizers[name] = Stabilizer(enable_self_stabilization=True,
                                                         name=name)
        return layer(v)

    def _weights(self, x, step_axes: int | None = None):
        """``W``, ``H``, ``b`` for steps of ``x`` (one step ``(B, *s)``; a whole sequence
        ``(B, T, *s)`` with ``step_axes=2``: only its shape is read)."""
        cell, size = self.cell_shape[0], self.shape[0]
        # CNTK's W is (InferredDimension, k*C): inferred from the input's last axis (the axes
        # before it are mapped); a whole sequence's step is a vector
        n_in = int(x.shape[-1]) if step_axes is None else \
            int(np.prod(x.shape[step_axes:]))
        cols, hidden_cols = self.n_gates * cell, self.hidden_gates * cell
        w = self.parameter("W", (n_in, cols), self.init, n_in, cols)
        h = self.parameter("H", (size, hidden_cols), self.init, size, hidden_cols)
        b = self.parameter("b", (cols,), self.init_bias)
        return w, h, b

    def _output(self, ht):
        """The step's output: ``ht``, or with ``cell_shape`` its (stabilised) projection
        ``ht P``."""
        if not self.projected:
            return ht
        cell, size = self.cell_shape[0], self.shape[0]
        p = self.parameter("P", (cell, size), self.init, cell, size)
        return _times(self._stabilized("P_stabilizer", ht), p)


class LSTM(_Step):
    """CNTK's LSTM step: ``(h, c), x -> (h, c)`` with gates stacked as input, cell candidate,
    forget, output in ``W`` ``(input, 4C)``, ``H`` ``(H, 4C)``, ``b`` ``(4C,)``;
    ``use_peepholes`` adds ``Ci``, ``Cf``, ``Co`` ``(C,)``; ``cell_shape=C`` keeps the cell at
    ``C`` and projects the output to ``H`` with ``P`` ``(C, H)``;
    ``enable_self_stabilization`` stabilises the previous ``h`` (and, in the peepholes, the cell
    values; see the module's docstring).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.layers as L
        >>> x = sd.sequence.input_variable(3)
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = L.Recurrence(L.LSTM(5))(x)
        ...     step = L.LSTM(2, cell_shape=6, enable_self_stabilization=True)
        ...     z = L.Recurrence(step)(x)
        >>> x.d = [np.ones((2, 3)), np.ones((4, 3))]
        >>> y.forward()
        >>> y.shape, y.sequence_lengths.d.tolist()
        ((2, 4, 5), [2, 4])
        >>> z.shape, step.state_shapes, [tuple(p.shape) for p in step.parameters]
        ((1, 1, 2), [(2,), (6,)], [(3, 24), (2, 24), (24,), (6, 2), (), ()])
    """

    n_gates = 4
    hidden_gates = 4
    n_states = 2

    def __init__(self, shape, cell_shape=None, activation=default_override_or(F.tanh),
                 use_peepholes=default_override_or(False),
                 init=default_override_or(glorot_uniform()),
                 init_bias=default_override_or(0.0),
                 enable_self_stabilization=default_override_or(False), name: str = ""):
        self.use_peepholes = resolve("LSTM", "use_peepholes", use_peepholes)
        super().__init__(shape, cell_shape, activation, init, init_bias,
                         enable_self_stabilization, name)

    def _seeded(self) -> list[str]:
        return ["W", "H"] + ["Ci", "Cf", "Co"] * bool(self.use_peepholes) + \
            ["P"] * self.projected

    @property
    def state_shapes(self) -> list[tuple[int, ...]]:
        return [self.shape, self.cell_shape]

    @property
    def fusable(self) -> bool:
        """Whether a recurrence over this step may run as torch's fused LSTM kernel (no
        peepholes, stabilisers or projection; tanh)."""
        return not (self.use_peepholes or self.op_by_op) and self.activation is F.tanh

    def apply(self, h, c, x, go_backwards: bool = False):
        if _whole_sequence(h, x):                 # a whole sequence: the fused kernel
            w, hw, b = self._weights(x, step_axes=2)
            return F.cntk_lstm_sequence(x, x.sequence_lengths, S.state_value(h),
                                        S.state_value(c), w, hw, b, go_backwards=go_backwards)
        cell = self.cell_shape[0]
        w, hw, b = self._weights(x)
        proj = _times(x, w, b) + _times(self._stabilized("dh_stabilizer", h), hw)
        i_proj, c_proj, f_proj, o_proj = _gates(proj, 4, cell)
        if self.use_peepholes:
            # a vector parameter's fans are CNTK's: in 1, out its length
            peep = [self.parameter(n, (cell,), self.init, 1, cell) for n in ("Ci", "Cf", "Co")]
            cs = self._stabilized("dc_stabilizer", c)
            i_proj = i_proj + peep[0] * cs
            f_proj = f_proj + peep[1] * cs
        c_new = F.sigmoid(f_proj) * c + F.sigmoid(i_proj) * self.activation(c_proj)
        if self.use_peepholes:
            o_proj = o_proj + peep[2] * self._stabilized("c_stabilizer", c_new)
        return self._output(F.sigmoid(o_proj) * self.activation(c_new)), c_new


class GRU(_Step):
    """CNTK's GRU step: ``h, x -> h`` with ``W`` ``(input, 3H)`` (update, reset, candidate),
    ``H`` ``(H, 2H)`` (update, reset), ``H1`` ``(H, H)`` for the reset state:
    ``h' = (1 - z) * act(x Wc + bc + (r * h) H1) + z * h``.  ``enable_self_stabilization``
    stabilises ``h`` wherever the step reads it; ``cell_shape`` must equal ``shape`` (CNTK's
    GRU multiplies the previous output by the cell-sized reset gate) and adds the projection
    ``P`` ``(H, H)``.

    Example:
        >>> import stadyn as sd, stadyn.layers as L
        >>> x = sd.sequence.input_variable(3)
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = L.Recurrence(L.GRU(2))(x)
        ...     step = L.GRU(2, enable_self_stabilization=True)
        ...     z = L.Recurrence(step)(x)
        >>> y.shape, step.fusable, [tuple(p.shape) for p in step.parameters]
        ((1, 1, 2), False, [(3, 6), (2, 4), (6,), (2, 2), ()])
    """

    n_gates = 3
    hidden_gates = 2

    def __init__(self, shape, cell_shape=None, activation=default_override_or(F.tanh),
                 init=default_override_or(glorot_uniform()),
                 init_bias=default_override_or(0.0),
                 enable_self_stabilization=default_override_or(False), name: str = ""):
        super().__init__(shape, cell_shape, activation, init, init_bias,
                         enable_self_stabilization, name)
        if self.cell_shape != self.shape:
            raise StadynError(f"GRU: cell_shape {self.cell_shape} differs from shape "
                              f"{self.shape}; CNTK's GRU multiplies the previous output by the "
                              "cell-sized reset gate, so they must be equal")

    def _seeded(self) -> list[str]:
        return ["W", "H", "H1"]

    @property
    def fusable(self) -> bool:
        """Whether a recurrence over this step may run as one ``cntk_gru_sequence`` op (tanh or
        ReLU; no stabiliser or projection)."""
        return not self.op_by_op and _kernel_activation(self.activation) is not None

    def apply(self, h, x, go_backwards: bool = False):
        size = self.shape[0]
        if _whole_sequence(h, x):                 # a whole sequence at once
            w, hw, b = self._weights(x, step_axes=2)
            h1 = self.parameter("H1", (size, size), self.init, size, size)
            return F.cntk_gru_sequence(x, x.sequence_lengths, S.state_value(h), w, hw, h1, b,
                                       activation=_kernel_activation(self.activation),
                                       go_backwards=go_backwards)
        w, hw, b = self._weights(x)
        h1 = self.parameter("H1", (size, size), self.init, size, size)
        hs = self._stabilized("dh_stabilizer", h)
        zx, rx, cx = _gates(_times(x, w, b), 3, size)
        zh, rh = _gates(_times(hs, hw), 2, size)
        z, r = F.sigmoid(zx + zh), F.sigmoid(rx + rh)
        candidate = self.activation(cx + _times(hs * r, h1))    # (CNTK's dhs * rt)
        return self._output((1.0 - z) * candidate + z * hs)


class RNNStep(_Step):
    """CNTK's plain recurrent step: ``h, x -> act(x W + h H + b)`` (sigmoid by default), with
    ``enable_self_stabilization`` a stabilised ``h``; ``cell_shape=C`` computes the step at
    ``C`` (``W`` ``(input, C)``, ``H`` ``(H, C)``) and projects it with ``P`` ``(C, H)``.

    Example:
        >>> import stadyn as sd, stadyn.layers as L
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     step = L.RNNStep(4, cell_shape=6, enable_self_stabilization=True)
        ...     y = L.Recurrence(step)(sd.sequence.input_variable(2))
        >>> y.shape, [tuple(p.shape) for p in step.parameters]
        ((1, 1, 4), [(2, 6), (4, 6), (6,), (6, 4), (), ()])
    """

    default_activation = staticmethod(F.sigmoid)

    @property
    def fusable(self) -> bool:
        """Whether a recurrence over this step may run as torch's fused Elman kernel (tanh or
        ReLU, no stabiliser or projection; CNTK's default sigmoid has none)."""
        return not self.op_by_op and _kernel_activation(self.activation) is not None

    def apply(self, h, x, go_backwards: bool = False):
        if _whole_sequence(h, x):                 # a whole sequence: the fused kernel
            w, hw, b = self._weights(x, step_axes=2)
            return F.cntk_rnn_sequence(x, x.sequence_lengths, S.state_value(h), w, hw, b,
                                       activation=_kernel_activation(self.activation),
                                       go_backwards=go_backwards)
        w, hw, b = self._weights(x)
        hs = self._stabilized("dh_stabilizer", h)
        return self._output(self.activation(_times(x, w, b) + _times(hs, hw)))


def _state_shapes(step: Any, x, initial: Sequence[Any]) -> list[tuple[int, ...]]:
    shapes = getattr(step, "state_shapes", None)
    if shapes is None and hasattr(step, "state_shapes_for"):   # (found from the input's and
        shapes = step.state_shapes_for(tuple(x.shape[2:]), list(initial))   # the initial's)
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
        shapes = _state_shapes(self.step, x, initial)
        if len(initial) == 1 and len(shapes) > 1:
            initial = list(initial) * len(shapes)
        if getattr(self.step, "fusable", False) and not self.return_full_state and \
                len(x.shape) == 3:
            return self.step(*initial, x, self.go_backwards)     # the whole sequence at once
        # (more inputs a step asks for: a compat step's delays of its input, _step_delays)
        extra = list(getattr(self.step, "sequence_inputs", lambda x: [])(x))
        states = S.recurrence(self.step, [x] + extra, initial, shapes,
                              go_backwards=self.go_backwards)
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
        # an initial state that is a sequence (on any axis) gives its last step, its first
        # going backwards, as CNTK 2.7's delay with a sequence ``initial_state`` takes it
        end = S.first if self.go_backwards else S.last
        initial = [end(h) if getattr(h, "sequence_lengths", None) is not None else h
                   for h in initial]
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
