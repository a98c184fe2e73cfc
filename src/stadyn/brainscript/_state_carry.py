"""Recurrent state carried from minibatch to minibatch: truncated back-propagation through time
(HTKMLFReader's ``truncated = true``, read by :class:`stadyn.io.TruncatedUtteranceSource`).

Such a reader cuts each utterance into pieces of the minibatch's length and gives a piece in
each minibatch, in the same parallel stream; its ``layout`` says which rows begin their
utterance.  cntk.exe's ``PastValue`` (``DelayedValueNode``) read, at a row's first frames, the
frames its input had at the end of the previous minibatch in that stream, where the row goes on
with its utterance, and its initial value where it begins one; the previous minibatch's values
are numbers by then, so no gradient flows back into them (the gradient stops at the
minibatch's edge).

Here every recurrence of the network (the ``recurrence`` op a BrainScript loop runs, also one
loaded with ``BS.Network.Load``) reads, in place of each initial state ``s0``,
``s0 * begin + carried * (1 - begin)``: two leaves set before each step (``begin`` 0 for a row
that goes on, 1 for one that begins; ``carried`` the state the row's stream ended the previous
minibatch with) and taken out again after it, so the graph is as built for everything else
(model files, validation).  The states along each row are outputs of the recurrence, computed
with the step; the last valid step of each row whose utterance goes on is kept for its stream.
A state that carries over is exactly the state the whole utterance would have there, so the
forward values equal those of the whole utterance run at once.

What cannot carry is refused when a minibatch needs it: a ``FutureValue`` loop (its future is
in the next minibatch: cntk.exe's LogicError), a delay outside a loop (``past_value`` of a
whole sequence) and ``OptimizedRNNStack``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from .. import functions as F
from .._errors import ConfigError
from ..graph import Subgraph, Variable, apply, auto_forward, name_scope

__all__ = ["StateCarry"]

_CARRIED = ("recurrence", "cntk_lstm_sequence", "cntk_gru_sequence", "cntk_rnn_sequence")
_REFUSED = {"past_value": "a PastValue outside a recurrence loop",
            "future_value": "a FutureValue outside a recurrence loop",
            "optimized_rnnstack": "OptimizedRNNStack"}


class _Carry:
    """One recurrence node: where its initial states are, the leaves spliced in their place
    and the states each stream ended its last minibatch with."""

    def __init__(self, node: Any):
        kind = self.kind = node.spec.name
        if kind == "recurrence":
            node, self.sequences = _every_output_kept(node)     # (held from now on)
        else:                                                   # a fused kernel: h only
            self.sequences = [node.outputs[0]]
        self.node = node
        inputs, attrs = node.spec.split_arguments(node.args, node.kwargs)
        self.backwards = bool(attrs.get("go_backwards", False))
        self.step_inputs: list[Variable] = []
        if kind == "recurrence":
            step, n_seq = attrs["step"], int(attrs.get("n_sequences", 1))
            self.lengths = inputs[0]
            self.positions = list(range(1 + n_seq, 1 + n_seq + len(step.states)))
            self.shapes = [tuple(s) for s in step.state_shapes]
        else:
            self.lengths = inputs[1]
            self.positions = [2, 3] if kind == "cntk_lstm_sequence" else [2]
            hidden = (int(inputs[self.positions[-1] + 2].shape[0]),)
            self.shapes = [hidden] * len(self.positions)
        self.original = [inputs[k] for k in self.positions]
        if kind == "cntk_lstm_sequence":
            # the kernel returns h only: the cells are computed again from its input, h and
            # its weights (copies: the update overwrites a parameter's own memory)
            with auto_forward(False):
                self.step_inputs = [F.identity(inputs[0])] + [v * 1.0 for v in inputs[4:7]] \
                    + [s0 * 1.0 for s0 in self.original]
        self.where = node.scope or "a recurrence"
        dtype = np.dtype(self.sequences[0].dtype)
        with auto_forward(False):
            self.begin = [Variable.from_numpy_array(np.ones((1,) + (1,) * len(s), dtype))
                          for s in self.shapes]
            self.carried = [Variable.from_numpy_array(np.zeros((1,) + s, dtype))
                            for s in self.shapes]
            self.chosen = [s0 * b + c * (1.0 - b) for s0, b, c
                           in zip(self.original, self.begin, self.carried)]
        self.kept: dict[int, list[np.ndarray]] = {}     # stream -> its states
        self.kept_before: dict[int, list[np.ndarray]] = {}   # (those the minibatch began with)
        self.spliced = False

    def check(self, layout: Any) -> None:
        if self.backwards and any(layout.goes_on):
            raise ConfigError(f"truncated = true: a FutureValue loop ({self.where}) needs the "
                              "frames of the next minibatch, which truncated back-propagation "
                              "does not have (cntk.exe: \"The delay node tries to access future "
                              "values that are out of bound\"); use frameMode = false with "
                              "truncated = false")

    def splice(self, layout: Any) -> None:
        """The initial states of ``layout``'s rows: the stream's kept state where a row goes
        on, the node's own initial state where it begins."""
        on = [k for k, b in enumerate(layout.begins) if not b]
        if not on:
            self.unsplice()
            return
        rows = len(layout.begins)
        for k, (begin, carried, shape) in enumerate(zip(self.begin, self.carried,
                                                         self.shapes)):
            b = np.ones((rows,) + (1,) * len(shape), begin.dtype)
            c = np.zeros((rows,) + shape, carried.dtype)
            for r in on:
                state = self.kept.get(layout.streams[r])
                if state is None:
                    raise ConfigError(f"truncated = true: row {r} goes on with stream "
                                      f"{layout.streams[r]}, which has no state kept")
                b[r] = 0
                c[r] = state[k]
            device = begin.data.device           # (the network's: a GPU's with deviceId >= 0)
            begin.data, carried.data = torch.from_numpy(b).to(device), \
                torch.from_numpy(c).to(device)
        if not self.spliced:
            for position, chosen in zip(self.positions, self.chosen):
                self.node.set_input(position, chosen)
            self.spliced = True

    def unsplice(self) -> None:
        if self.spliced:
            for position, s0 in zip(self.positions, self.original):
                self.node.set_input(position, s0)
            self.spliced = False

    def wanted(self) -> list[Variable]:
        return self.sequences + self.step_inputs

    def keep(self, layout: Any) -> None:
        """The states each stream whose utterance goes on ended the minibatch with."""
        lengths = np.asarray(self.lengths.d).reshape(-1).astype(np.int64)
        self.kept_before, self.kept = self.kept, {}
        if not any(layout.goes_on):
            return
        values = [np.asarray(s.d) for s in self.sequences]
        if self.kind == "cntk_lstm_sequence":
            values.append(self._cells(values[0], layout))
        for r, (stream, on) in enumerate(zip(layout.streams, layout.goes_on)):
            if on:
                last = int(lengths[r]) - 1
                self.kept[stream] = [v[r, last].copy() for v in values]

    def _cells(self, h: np.ndarray, layout: Any) -> np.ndarray:
        """The fused LSTM's cell states along each row (CNTK's equations, gates ``i, c, f, o``
        in the weights' columns), from the row's initial states: the node's own where the row
        began its utterance, the carried ones where it went on."""
        x, w, hw, b, h0, c0 = (np.asarray(v.d, np.float64) for v in self.step_inputs)
        rows, steps, size = h.shape
        starts = []
        for s0, own in ((h0, 0), (c0, 1)):
            start = np.broadcast_to(s0, (rows, size)).copy() if s0.ndim < 2 or \
                s0.shape[0] != rows else s0.copy()
            for r, (stream, begins) in enumerate(zip(layout.streams, layout.begins)):
                if not begins:
                    start[r] = self.kept_before[stream][own]
            starts.append(start)
        previous = np.concatenate([starts[0][:, None], np.asarray(h[:, :-1], np.float64)], 1)
        i, g, f, _ = np.split(x @ w + previous @ hw + b, 4, axis=-1)
        sigmoid = lambda v: 1.0 / (1.0 + np.exp(-v))        # noqa: E731
        c, cells = starts[1], []
        for t in range(steps):
            c = sigmoid(f[:, t]) * c + sigmoid(i[:, t]) * np.tanh(g[:, t])
            cells.append(c)
        return np.stack(cells, 1).astype(h.dtype)


def _every_output_kept(node: Any) -> tuple[Any, list[Variable]]:
    """``node`` and its outputs, or where some state's sequence is held by nobody (a loop's cell state in a
    network loaded from a model file: no node reads it) the same op applied again, its outputs
    in place of the old ones (``rewire_as``)."""
    outputs = node.outputs
    if all(o is not None for o in outputs):
        return node, outputs
    with auto_forward(False), name_scope(node.scope, absolute=True):
        made = apply(node.spec, node.args, node.kwargs)
    kept = []
    for old, new in zip(outputs, made):
        if old is not None:
            old.rewire_as(new)
        kept.append(old if old is not None else new)
    return kept[0].parent, kept


class StateCarry:
    """The recurrences computing ``roots`` with their state carried between the minibatches
    ``source`` reads (its ``layout`` after each read; see the module docstring).

    A train command's Trainer calls :meth:`before` ahead of each step and :meth:`after` once
    it has run, computing :meth:`wanted` with it (the leaves spliced in hold their values:
    they are no inputs the Trainer feeds, and they are out of the graph again between steps)."""

    def __init__(self, roots: Sequence[Variable], source: Any):
        self.source = source
        nodes = Subgraph(list(roots)).nodes
        self.refused = sorted({_REFUSED[n.spec.name] for n in nodes if n.spec.name in _REFUSED})
        self.carries = [_Carry(n) for n in nodes if n.spec.name in _CARRIED]
        self._layout = None

    def wanted(self) -> list[Variable]:
        """The recurrences' state sequences (computed with the step for :meth:`after`)."""
        layout = getattr(self.source, "layout", None)
        if layout is None or not any(layout.goes_on):
            return []
        return [v for c in self.carries for v in c.wanted() if v.parent is not None]

    def before(self) -> None:
        layout = self._layout = getattr(self.source, "layout", None)
        if layout is None:
            return
        if self.refused and (not all(layout.begins) or any(layout.goes_on)):
            raise ConfigError(f"truncated = true: {', '.join(self.refused)} cannot carry its "
                              "state from one minibatch to the next in Stadyn; write the delay "
                              "inside a loop (h = f(PastValue(0, h))) or use truncated = false")
        for c in self.carries:
            c.check(layout)
        for c in self.carries:
            c.splice(layout)

    def after(self, ran: bool) -> None:
        """Keep the states (``ran``: the step ran) and take the spliced leaves out."""
        layout, self._layout = self._layout, None
        for c in self.carries:
            if ran and layout is not None:
                c.keep(layout)
            c.unsplice()
