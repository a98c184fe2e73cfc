"""A recurrence over the sequence axis: one step program applied step after step.

``recurrence`` is the op behind CNTK's ``Recurrence``, ``RecurrenceFrom`` and ``Fold``: its
``step`` attribute is a :class:`StepFunction`, a small graph of catalog ops recorded once from
placeholders (the previous states and one step of each input sequence) and run by
:func:`stadyn.graph.interpret` at every step -- eagerly in dynamic mode, traced into the
lowered program in static mode.  Parameters the step reads are inputs of the node, so both
modes differentiate them.  Padded steps never reach a state: going backwards, a step past a
sequence's end leaves the initial state in place.
"""

from __future__ import annotations

from typing import Sequence

import torch

from ..graph import Subgraph, Variable, graph_structure, interpret
from ._registry import op
from ._sequence import step_mask

class StepFunction:
    """One step of a recurrence: ``(states..., inputs..., captured...) -> new states``.

    ``states`` and ``inputs`` are the placeholder Variables the step graph was recorded on
    (batch axis first, no sequence axis); ``outputs`` the new states, one per state;
    ``captured`` the other leaves the step reads (parameters, constants), which become inputs
    of the ``recurrence`` node.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> h, x = sd.Variable((1, 2)), sd.Variable((1, 2))
        >>> step = StepFunction([h], [x], [F.tanh(h + x)])
        >>> step.state_shapes, len(step.captured)
        ([(2,)], 0)
    """

    def __init__(self, states: Sequence[Variable], inputs: Sequence[Variable],
                 outputs: Sequence[Variable]):
        self.states, self.inputs, self.outputs = list(states), list(inputs), list(outputs)
        if len(self.outputs) != len(self.states):
            raise ValueError(f"a recurrence step has {len(self.states)} states but returns "
                             f"{len(self.outputs)} values")
        sub = Subgraph(self.outputs)
        own = {id(v) for v in self.states + self.inputs}
        self.nodes = sub.nodes
        self.captured = [v for v in sub.leaves if id(v) not in own]
        self.leaves = self.states + self.inputs + self.captured
        self.state_shapes = [tuple(v.shape[1:]) for v in self.outputs]

    def structure_key(self) -> tuple | None:
        """The step's graph by structure (:func:`stadyn.graph.graph_structure`: its ops,
        attributes and inputs by position, nested steps too), its count of states and inputs
        and the states' shapes; None when some op cannot be keyed by value.  A static plan
        built for a graph holding this step serves a graph holding an equal one.

        Example:
            >>> import stadyn as sd, stadyn.functions as F
            >>> def running_sum():
            ...     h, x = sd.Variable((1, 2)), sd.Variable((1, 2))
            ...     return StepFunction([h], [x], [h + x])
            >>> running_sum().structure_key() == running_sum().structure_key()
            True
        """
        graph = graph_structure(self.leaves, self.nodes, self.outputs)
        if graph is None:
            return None
        return graph, len(self.states), len(self.inputs), tuple(self.state_shapes)

    def __call__(self, tensors: Sequence[torch.Tensor]) -> list:
        return interpret(self.nodes, self.leaves, tensors, self.outputs)

    def __repr__(self) -> str:
        return f"<StepFunction of {len(self.nodes)} ops, states {self.state_shapes}>"


def _zero_padding(y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``y`` ``(B, T, ...)`` with its padded steps 0 (``mask``: ``step_mask``'s ``(B, T)``)."""
    if y.ndim > 2:
        mask = mask.reshape(mask.shape + (1,) * (y.ndim - 2))
    return torch.where(mask, y, y.new_zeros(()))


def _parts(x, step, n_sequences):
    """``(lengths, sequences, initial states, captured values)`` of the op's inputs."""
    n_states = len(step.states)
    rest = x[1:]
    return (x[0], rest[:n_sequences], rest[n_sequences:n_sequences + n_states],
            list(rest[n_sequences + n_states:]))


def _starts(seqs, inits, step) -> list:
    """The initial states at the batch's size (a scalar or one step's value broadcast)."""
    batch = seqs[0].shape[0]
    dtype = seqs[0].dtype if seqs[0].is_floating_point() else torch.float32
    return [init.to(dtype).expand((batch,) + shape) if init.ndim <= len(shape) + 1
            else init for init, shape in zip(inits, step.state_shapes)]


def _recurrence_shape(*x, step=None, n_sequences=1, go_backwards=False):
    """The outputs' shapes and dtypes from one step (not every step: a static graph infers a
    recurrence's shapes when it is built, and a loop of many steps, or loops nested in its
    step, would otherwise run them all on meta tensors)."""
    _, seqs, inits, captured = _parts(x, step, n_sequences)
    batch, steps = seqs[0].shape[:2]
    new = step(_starts(seqs, inits, step) + [s[:, 0] for s in seqs] + captured)
    result = tuple(n.new_empty((batch, steps) + tuple(n.shape[1:])) for n in new)
    return result[0] if len(result) == 1 else result


@op(category="sequence", sequence="lengths:0", shape=_recurrence_shape)
def recurrence(*x, step=None, n_sequences=1, go_backwards=False):
    """Run ``step`` (a :class:`StepFunction`) along the sequence axis; returns every state's
    sequence ``(B, T, *state)``.

    The inputs are the sequences' lengths, ``n_sequences`` input sequences ``(B, T, ...)``,
    one initial value per state (a scalar, one step's shape or one per sequence), then the
    step's captured values.  Going forwards state ``t`` is ``step(state t-1, inputs t)``;
    with ``go_backwards`` it is ``step(state t+1, inputs t)`` from each sequence's last step.
    Padded steps of the outputs are 0.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> h, u = sd.Variable((1, 1)), sd.Variable((1, 1))
        >>> step = StepFunction([h], [u], [h + u])           # a running sum
        >>> with sd.auto_forward():
        ...     xs = sd.Variable.from_numpy_array(np.array([[[1.0], [2.0], [3.0]]]))
        ...     n = sd.Variable.from_numpy_array(np.array([3]))
        ...     h0 = sd.Variable.from_numpy_array(np.float32(0))
        ...     y = F.recurrence(n, xs, h0, step=step)
        >>> y.d.ravel().tolist()
        [1.0, 3.0, 6.0]
    """
    lengths, seqs, inits, captured = _parts(x, step, n_sequences)
    steps = seqs[0].shape[1]
    starts = _starts(seqs, inits, step)
    states = list(starts)
    outs: list[list] = [[] for _ in states]
    valid = step_mask(lengths, steps)          # (one mask for every state: a traced plan
    mask = valid if go_backwards else None     # holds each op of each recurrence)
    for t in (range(steps - 1, -1, -1) if go_backwards else range(steps)):
        new = step(states + [s[:, t] for s in seqs] + captured)
        if mask is not None:      # a step past the end keeps the initial state
            m = mask[:, t]
            new = [torch.where(m.reshape(m.shape + (1,) * (n.ndim - 1)), n, s0)
                   for n, s0 in zip(new, starts)]
        states = list(new)
        for k, s in enumerate(states):
            outs[k].append(s)
    if go_backwards:
        outs = [o[::-1] for o in outs]
    result = tuple(_zero_padding(torch.stack(o, 1), valid) for o in outs)
    return result[0] if len(result) == 1 else result
