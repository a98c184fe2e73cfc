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
minibatch with).  They are spliced in at the first step and stay in while the Trainer trains:
their values are inputs of the step's plan, so one plan serves every minibatch (splicing them
in and out around each step rewired the graph, and the runner dropped the graph's plans every
minibatch).  Between steps they hold ``begin`` 1 and ``carried`` 0 of one row, so the graph
computes as built (``s0 * 1 + 0 * 0`` is ``s0``) whatever runs it, and
:meth:`StateCarry.release` takes them out when the training steps stop (the Trainer calls it
as an epoch ends, before validation and model files; a step that fails takes them out too), so
model files hold the graph as built.  The states along each row
are outputs of the recurrence, computed with the step; the last valid step of each row whose
utterance goes on is kept for its stream.  A state that carries over is exactly the state the
whole utterance would have there, so the forward values equal those of the whole utterance run
at once; a row that begins reads ``s0 * 1 + 0 * 0``, ``s0`` itself.

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
from ..ops import RECURRENCES, lstm_cells, recurrence_states

__all__ = ["StateCarry", "whole_sequences_instead"]

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
        layout = recurrence_states(node)
        self.backwards = layout.go_backwards
        self.lengths, self.positions = layout.lengths, layout.positions
        self.shapes, self.original = layout.shapes, layout.initial
        self.step_inputs: list[Variable] = []
        if kind == "cntk_lstm_sequence":
            # the kernel returns h only: the cells are computed again from its input, h and
            # its weights (copies: the update overwrites a parameter's own memory)
            with auto_forward(False):
                self.step_inputs = [F.identity(layout.inputs[0])] + \
                    [v * 1.0 for v in layout.inputs[4:7]]
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
        on, the node's own initial state where it begins (the leaves' values; they are
        spliced into the node at the first call and stay until :meth:`unsplice`)."""
        rows = len(layout.begins)
        for k, (begin, carried, shape) in enumerate(zip(self.begin, self.carried,
                                                         self.shapes)):
            b = np.ones((rows,) + (1,) * len(shape), begin.dtype)
            c = np.zeros((rows,) + shape, carried.dtype)
            for r, begins in enumerate(layout.begins):
                if begins:
                    continue
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

    def afresh(self) -> None:
        """Give the leaves the values with which the spliced node reads its own initial
        states, ``s0 * 1 + 0 * 0``, whatever the batch (between steps)."""
        for begin, carried, shape in zip(self.begin, self.carried, self.shapes):
            device = begin.data.device
            begin.data = torch.ones((1,) + (1,) * len(shape), dtype=begin.data.dtype,
                                    device=device)
            carried.data = torch.zeros((1,) + shape, dtype=carried.data.dtype, device=device)

    def unsplice(self) -> None:
        if self.spliced:
            for position, s0 in zip(self.positions, self.original):
                self.node.set_input(position, s0)
            self.spliced = False

    def wanted(self) -> list[Variable]:
        return self.sequences + self.step_inputs + \
            (self.chosen if self.kind == "cntk_lstm_sequence" else [])

    def keep(self, layout: Any) -> None:
        """The states each stream whose utterance goes on ended the minibatch with."""
        self.kept = {}
        if not any(layout.goes_on):
            return
        lengths = np.asarray(self.lengths.d).reshape(-1).astype(np.int64)
        values = [np.asarray(s.d) for s in self.sequences]
        if self.kind == "cntk_lstm_sequence":
            values.append(self._cells(values[0]))
        for r, (stream, on) in enumerate(zip(layout.streams, layout.goes_on)):
            if on:
                last = int(lengths[r]) - 1
                self.kept[stream] = [v[r, last].copy() for v in values]

    def _cells(self, h: np.ndarray) -> np.ndarray:
        """The fused LSTM's cell states along each row, from the row's initial states (the
        node's own where the row began its utterance, the carried ones where it went on: the
        values spliced in)."""
        x, w, hw, b, h0, c0 = (np.asarray(v.d) for v in self.step_inputs + self.chosen)
        return lstm_cells(x, h, h0, c0, w, hw, b).numpy().astype(h.dtype)


def _every_output_kept(node: Any) -> tuple[Any, list[Variable]]:
    """``node`` and its outputs, or where some state's sequence is held by nobody (a loop's cell
    state in a network loaded from a model file: no node reads it) the same op applied again, its
    outputs in place of the old ones (``rewire_as``)."""
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


def whole_sequences_instead(roots: Sequence[Variable]) -> bool:
    """Whether an evaluation of ``roots`` (a test, eval or cv command, a cvReader) over a
    truncated reader reads whole sequences instead of truncated pieces: where it needs a state
    Stadyn cannot carry (a PastValue outside a loop, OptimizedRNNStack) and cntk.exe carries,
    the whole sequences give cntk.exe's values (in other minibatches); a FutureValue outside a
    loop stays cntk.exe's error (its future is in the next minibatch)."""
    names = {n.spec.name for n in Subgraph(list(roots)).nodes}
    return "future_value" not in names and bool(names & {"past_value", "optimized_rnnstack"})


class StateCarry:
    """The recurrences computing ``roots`` with their state carried between the minibatches
    ``source`` reads (its ``layout`` after each read; see the module docstring).

    A train command's Trainer calls :meth:`before` ahead of each step and :meth:`after` once
    it has run, computing :meth:`wanted` with it (the leaves spliced in hold their values:
    they are no inputs the Trainer feeds), and :meth:`release` when its steps stop for a while
    (an epoch's end: the graph is then as built again)."""

    def __init__(self, roots: Sequence[Variable], source: Any):
        self.source = source
        nodes = Subgraph(list(roots)).nodes
        self.refused = sorted({_REFUSED[n.spec.name] for n in nodes if n.spec.name in _REFUSED})
        self.carries = [_Carry(n) for n in nodes if n.spec.name in RECURRENCES]
        self._layout = None

    def wanted(self) -> list[Variable]:
        """The recurrences' state sequences (computed with the step for :meth:`after`; the
        same whatever the minibatch, so that its step's plan is too)."""
        if getattr(self.source, "layout", None) is None:
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
        """Keep the states (``ran``: the step ran) and give the spliced leaves the values that
        make the graph compute as built (:meth:`_Carry.afresh`) until the next step; a step
        that did not run takes them out (:meth:`release`)."""
        layout, self._layout = self._layout, None
        if not ran:
            self.release()
            return
        for c in self.carries:
            if layout is not None:
                c.keep(layout)
            c.afresh()

    def release(self) -> None:
        """Take the spliced leaves out of the graph (until the next :meth:`before`): the
        graph is as built for what runs it between the training steps (validation, model
        files, a rollback).  The states kept for the streams stay."""
        for c in self.carries:
            c.unsplice()
