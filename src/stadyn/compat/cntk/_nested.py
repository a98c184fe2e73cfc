"""Recurrences inside a loop closed by ``replace_placeholders`` (or ``UnfoldFrom``): each one
stepped along with the loop.

By the time a greedy decoder closes its loop (CNTK 599A's ``clone(share, {hook:
hardmax(model)})``, 204's ``UnfoldFrom`` of ``s2smodel(history, input) >> hardmax``), each of
the decoder's own recurrences is one op over the whole sequence (``recurrence``,
``cntk_lstm_sequence``, ``cntk_gru_sequence``, ``cntk_rnn_sequence``).  The loop runs its body
one step at a time, so such an op becomes part of the loop's state: at every step of the loop
it takes one step from the states it reached at the previous one.  One step of a recurrence op
is the op itself over a sequence of length 1 whose initial states are the previous step's
(``cntk_lstm_sequence`` returns ``h`` only, so its step is CNTK's LSTM step written out, its
cell carried as one more state).  CNTK does the same: a loop holding recurrences is one loop
of all their nodes.
"""

from __future__ import annotations

from ... import functions as F
from ...graph import Variable, apply, name_scope, set_sequence_axis
from ...ops import recurrence_states

__all__ = ["NestedRecurrence", "as_step"]


class NestedRecurrence:
    """A whole-sequence recurrence ``node`` inside a loop's body: the states it carries from
    step to step (its outputs, then any state it does not output), their initial values, and
    one step.

    Example (a greedy decoder: the clone's loop steps the ``Recurrence(GRU)``):
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.sequence.input_variable(2)
        >>> hook = C.alias(x)
        >>> rec = C.layers.Recurrence(C.layers.GRU(3))
        >>> model = C.layers.Dense(2)(rec(C.sequence.past_value(hook) + x))
        >>> greedy = model.clone(C.CloneMethod.share, {hook.output: C.hardmax(model).output})
        >>> [s.shape for s in greedy.eval({greedy.arguments[0]: [np.ones((3, 2), np.float32)]})]
        [(3, 2)]
    """

    def __init__(self, node):
        self.node = node
        self.layout = recurrence_states(node)   # (its states' shapes: the LSTM's h, c)
        self.outputs = list(node.outputs)       # state k's sequence (None: nobody holds it)

    def reads(self) -> set:
        """The ids of the inputs it reads step by step (its sequences)."""
        return {id(self.layout.inputs[k]) for k in self.layout.sequences}

    def step(self, states: list, value) -> list:
        """The carried states one step on (``(B, *s)`` each) from ``states`` (the previous
        step's); ``value(v)`` is the step's value of an input ``v`` (a length-1 sequence for
        the loop's values, ``v`` itself for one from outside)."""
        ins = [value(v) if isinstance(v, Variable) else v for v in self.layout.inputs]
        lengths = next(ins[k].sequence_lengths for k in self.layout.sequences
                       if isinstance(ins[k], Variable) and ins[k].sequence_lengths is not None)
        if self.node.spec.name == "cntk_lstm_sequence":
            return _lstm_step(ins[0], states[0], states[1], *ins[4:7])
        ins[self.layout.lengths_position] = lengths
        for position, state in zip(self.layout.positions, states):
            ins[position] = state
        with name_scope(self.node.scope, absolute=True):
            out = apply(self.node.spec, tuple(ins), dict(self.layout.attrs))
        outs = list(out) if isinstance(out, tuple) else [out]
        return [F.reshape(o, (-1,) + tuple(o.shape[2:])) for o in outs]


def _lstm_step(x: Variable, h: Variable, c: Variable, w: Variable, hw: Variable,
               b: Variable) -> list:
    """CNTK's LSTM step (gates input, cell candidate, forget, output) on one step ``x``
    ``(B, 1, in)``: ``[h, c]`` ``(B, H)`` each (``cntk_lstm_sequence``'s own equations)."""
    x = F.reshape(x, (-1,) + tuple(x.shape[2:]))
    proj = F.affine(x, w, b, 1) + F.affine(h, hw, None, 1)
    size = int(hw.shape[0])
    i, cc, f, o = (F.slice(proj, start=(k * size,), stop=((k + 1) * size,)) for k in range(4))
    c_new = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(cc)
    return [F.sigmoid(o) * F.tanh(c_new), c_new]


def as_step(v: Variable) -> Variable:
    """A carried state ``(B, *s)`` as the step's value ``(B, 1, *s)`` (a sequence of 1)."""
    y = F.reshape(v, (-1, 1) + tuple(v.shape[1:]))
    return set_sequence_axis(y, F.sequence_full_lengths(y))

