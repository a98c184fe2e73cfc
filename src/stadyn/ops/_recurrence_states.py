"""Where a recurrence node of the graph keeps its states: which inputs are its lengths, the
sequences it steps along and its initial states, and each state's shape.

Four ops run a recurrence along the sequence axis: ``recurrence`` (a step graph; inputs
``lengths, *sequences, *initial states, *parameters``) and the whole-sequence kernels
``cntk_lstm_sequence`` (``x, lengths, h0, c0, W, H, b``: two states, ``h`` its output, the
cell ``c`` no output), ``cntk_gru_sequence`` (``x, lengths, h0, W, H, H1, b``) and
``cntk_rnn_sequence`` (``x, lengths, h0, W, H, b``).  What carries a recurrence's state
elsewhere -- truncated back-propagation through time (``brainscript._state_carry``), CNTK's
sequence-begin flags (``compat.cntk._sequence_begin``), a recurrence stepped inside another
loop (``compat.cntk._nested``) -- reads this layout from :func:`recurrence_states`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["RECURRENCES", "RecurrenceStates", "recurrence_states"]

#: The ops whose states :func:`recurrence_states` lays out.
RECURRENCES = ("recurrence", "cntk_lstm_sequence", "cntk_gru_sequence", "cntk_rnn_sequence")

# a kernel's position of its first initial state, its count of states, and the position of
# its recurrent weight H (whose rows are the state's size)
_KERNELS = {"cntk_lstm_sequence": (2, 2, 5), "cntk_gru_sequence": (2, 1, 4),
            "cntk_rnn_sequence": (2, 1, 4)}


@dataclass(frozen=True)
class RecurrenceStates:
    """One recurrence node's layout (see the module docstring); positions count the node's
    inputs in its declaration's order (``inputs``, as ``OpSpec.split_arguments`` gives them).

    ``kind`` is the op's name, ``lengths`` its lengths input, ``sequences`` the positions of
    the inputs it steps along, ``positions`` those of its initial states (state ``k`` at
    ``positions[k]``), ``shapes`` each state's shape for one sequence, ``go_backwards``
    whether it runs from each sequence's end."""

    kind: str
    inputs: tuple
    attrs: dict
    sequences: tuple
    positions: tuple
    shapes: tuple
    go_backwards: bool

    @property
    def lengths(self) -> Any:
        """The lengths input."""
        return self.inputs[self.lengths_position]

    @property
    def lengths_position(self) -> int:
        """The position of the lengths among the inputs."""
        return 0 if self.kind == "recurrence" else 1

    @property
    def initial(self) -> list:
        """The initial states' inputs, in state order."""
        return [self.inputs[k] for k in self.positions]


def recurrence_states(node: Any) -> RecurrenceStates:
    """The layout of the states of ``node``, a ``FunctionNode`` of one of :data:`RECURRENCES`.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> from stadyn.ops import recurrence_states
        >>> v = lambda *s: sd.Variable.from_numpy_array(np.zeros(s, np.float32))
        >>> n = sd.Variable.from_numpy_array(np.array([2]))
        >>> h = F.cntk_lstm_sequence(v(1, 2, 3), n, v(4), v(4), v(3, 16), v(4, 16), v(16))
        >>> states = recurrence_states(h.parent)
        >>> states.positions, states.shapes, states.lengths is n
        ((2, 3), ((4,), (4,)), True)
    """
    kind = node.spec.name
    inputs, attrs = node.spec.split_arguments(node.args, node.kwargs)
    if kind == "recurrence":
        step, n_seq = attrs["step"], int(attrs.get("n_sequences", 1))
        sequences = tuple(range(1, 1 + n_seq))
        positions = tuple(range(1 + n_seq, 1 + n_seq + len(step.states)))
        shapes = tuple(tuple(s) for s in step.state_shapes)
    elif kind in _KERNELS:
        first, count, weight = _KERNELS[kind]
        sequences, positions = (0,), tuple(range(first, first + count))
        shapes = ((int(inputs[weight].shape[0]),),) * count
    else:
        raise ValueError(f"recurrence_states: {kind} is no recurrence (one of {RECURRENCES})")
    return RecurrenceStates(kind, tuple(inputs), attrs, sequences, positions, shapes,
                            bool(attrs.get("go_backwards", False)))
