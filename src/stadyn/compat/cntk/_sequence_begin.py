"""CNTK's sequence-begin flags: ``trainer.train_minibatch((arguments, [True]))`` and then
``[False]``: a sequence whose flag is False goes on from where the same sequence of the previous
minibatch ended (truncated back-propagation through time, as char_rnn.py trains).  A Trainer's
``train_minibatch`` and ``test_minibatch`` share the states (a test minibatch with a False flag
goes on from the previous minibatch, trained or tested, and the next goes on from it); a
Function's runs (``eval``, ``forward``) have states of their own.

CNTK 2.7 gives every recurrence of the graph, as its initial state for that sequence, the state
it reached at the previous minibatch's last step, as a value: no gradient flows back into the
previous minibatch.  Here each recurrence node of the Trainer's graph (the fused LSTM, GRU and
plain recurrent kernels, and the ``recurrence`` op) reads, in place of each initial state
``s0``, ``s0 * begin + carried * (1 - begin)``: two leaves this module sets before each step
(``begin`` 1 for a sequence that starts, 0 for one that goes on; ``carried`` the states kept
from the previous step) and puts back to "start afresh" after it, so the graph computes as
before everywhere else (a run without flags).  The states a step ends in are read from
its values: a kernel's output at each sequence's last step, and for the fused LSTM the cell,
computed again from the step's input, output and weights (CNTK's LSTM equations).
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Sequence

import numpy as np
import torch

from ... import functions as F
from ...graph import Subgraph, Variable

__all__ = ["SequenceBeginError", "SequenceBegins", "carrying", "function_begins",
           "split_flags"]

_KERNELS = ("cntk_lstm_sequence", "cntk_gru_sequence", "cntk_rnn_sequence")


class SequenceBeginError(ValueError, RuntimeError):
    """A False sequence-begin flag with no previous minibatch to go on from: CNTK 2.7's
    RuntimeError ("No matching sequence found in the saved previous MBLayout")."""


def split_flags(arguments):
    """``(arguments, flags)`` for CNTK's ``(data, sequence-begin flags)`` pair (the flags a list
    of bools, one per sequence) or for a dict with inputs' data given so
    (``{x: (data, flags)}``), else ``(arguments, None)``.

    As CNTK 2.7's ``sanitize_var_map``, flags given for the whole minibatch and for an input,
    or for two inputs, are refused, and an input's flags hold for it and for the inputs after
    it in the dict (those before it begin every sequence); inputs on the same dynamic axes
    whose flags then differ are CNTK's ValueError ("Different minibatch layouts")."""
    flags = None
    if (isinstance(arguments, tuple) and len(arguments) == 2 and isinstance(arguments[0], dict)
            and isinstance(arguments[1], (list, tuple, np.ndarray))):
        arguments, flags = arguments[0], [bool(f) for f in arguments[1]]
    if isinstance(arguments, dict) and any(_flagged(v) for v in arguments.values()):
        plain, given = {}, {}
        for key, value in arguments.items():
            if _flagged(value):
                if flags is not None or given:
                    raise ValueError("you cannot provide sequence start information globally "
                                     "and for individual batches at the same time")
                value, current = value[0], [bool(f) for f in value[1]]
                given[key] = current
            elif given:
                given[key] = current
            plain[key] = value
        _check_layouts(plain, given)
        arguments, flags = plain, current
    return arguments, flags


def _check_layouts(arguments: dict, given: dict) -> None:
    """CNTK's check that inputs on the same dynamic axes come with the same sequence-begin
    flags (``given``: an input's flags; an input missing begins every sequence)."""
    keys = list(arguments)
    for k, a in enumerate(keys):
        for b in keys[k + 1:]:
            axes = getattr(a, "dynamic_axes", None)
            if axes is None or axes != getattr(b, "dynamic_axes", None):
                continue
            fa, fb = given.get(a), given.get(b)
            if fa is None and fb is None or (fa if fa is not None else [True] * len(fb)) == \
                    (fb if fb is not None else [True] * len(fa)):
                continue
            raise ValueError("Different minibatch layouts detected (difference in sequence "
                             "lengths or count or start flags) in data specified for the "
                             f"Function's arguments {b!r} vs. {a!r}, though these arguments "
                             f"have the same dynamic axes (sequence-begin flags {fb} and {fa}: "
                             "flags given with an input's data hold for it and the inputs "
                             "after it in the dict)")


def _flagged(value) -> bool:
    """Whether an input's data is CNTK's ``(data, sequence-begin flags)`` pair."""
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], list)


class _Carry:
    """One recurrence node: where its initial states are, the leaves that replace them and
    the values a step's final states are computed from."""

    def __init__(self, node):
        self.node = node
        name = node.spec.name
        inputs, attrs = node.spec.split_arguments(node.args, node.kwargs)
        self.go_backwards = bool(attrs.get("go_backwards", False))
        self.lengths = inputs[0] if name == "recurrence" else inputs[1]
        if name == "recurrence":
            step, n_seq = attrs["step"], int(attrs.get("n_sequences", 1))
            positions = list(range(1 + n_seq, 1 + n_seq + len(step.states)))
            shapes = list(step.state_shapes)
            outputs = node.outputs
            if any(o is None for o in outputs):
                raise ValueError("train_minibatch with sequence-begin flags: a recurrence "
                                 f"({node.scope or 'unnamed'}) returns states nobody kept "
                                 "(an LSTM step run op by op); Stadyn carries the states of "
                                 "the fused recurrences and of recurrences whose states are "
                                 "all outputs")
            self.sequences = list(outputs)
        else:
            positions = [2, 3] if name == "cntk_lstm_sequence" else [2]
            size = int(inputs[5 if name == "cntk_lstm_sequence" else 4].shape[0])
            shapes = [(size,)] * len(positions)
            self.sequences = [node.outputs[0]]
        self.kind = name
        self.shapes = shapes
        dtype = np.dtype(node.outputs[0].dtype)       # the recurrence's (float64 models)
        self.begin = Variable.from_numpy_array(np.ones((), dtype), dtype=dtype)
        self.carried = [Variable.from_numpy_array(np.zeros(s, dtype), dtype=dtype)
                        for s in shapes]
        self.initial = []
        for k, carried in zip(positions, self.carried):
            original = inputs[k]
            chosen = original * self.begin + carried * (1.0 - self.begin)
            node.set_input(k, chosen)
            self.initial.append(chosen)
        # the values the final states are computed from, kept as outputs of the step (the
        # weights as copies: an identity of a parameter may share its memory, which the
        # update then overwrites)
        self.step_inputs = [F.identity(inputs[0])] + [v * 1.0 for v in inputs[4:7]] \
            if name == "cntk_lstm_sequence" else []
        self.kept: list[np.ndarray] | None = None
        self.kept_lengths: list[int] = []
        self.unflagged = False   # minibatches ran before these states were kept (see set)

    def wanted(self) -> list[Variable]:
        return self.sequences + self.initial + self.step_inputs + [self.lengths]

    def set(self, flags: list[bool] | None, lengths: Sequence[int] | None = None,
            what: str = "train_minibatch") -> None:
        """Begin every sequence afresh (``flags`` None) or as ``flags`` say (``lengths``: the
        minibatch's sequences' lengths; ``what``: the call, for errors)."""
        if flags is None or all(flags):
            _assign(self.begin, np.ones(()))
            for v, shape in zip(self.carried, self.shapes):
                _assign(v, np.zeros(shape))
            return
        if self.go_backwards:
            raise ValueError(f"{what}: a sequence-begin flag False continues a "
                             "recurrence from the previous minibatch, which a recurrence that "
                             "goes backwards cannot")
        if self.kept is None:
            raise SequenceBeginError(
                f"{what}: sequence-begin flags {flags} continue {len(flags)} sequences from the "
                "previous minibatch, which had no minibatch (CNTK 2.7: No matching sequence "
                "found in the saved previous MBLayout)" + (
                    "; Stadyn carries states from the minibatches after the first one given "
                    "flags only: give the first its flags ([True] * n)" if self.unflagged
                    else ""))
        if len(self.kept[0]) != len(flags):
            raise SequenceBeginError(
                f"{what}: sequence-begin flags {flags} continue {len(flags)} sequences from "
                f"the previous minibatch, which had {len(self.kept[0])} sequences")
        if len(set(self.kept_lengths)) > 1 or lengths is None or len(set(lengths)) > 1:
            # CNTK 2.7 then pairs the sequences by the slots it packs them into and carries
            # the value at each slot's last step, past a shorter sequence's end
            raise ValueError(f"{what}: sequence-begin flags False continue sequences "
                             "only where every sequence of this minibatch and of the previous "
                             "one has the same length (these: "
                             f"{list(lengths) if lengths is not None else 'unknown'}, the "
                             f"previous: {list(self.kept_lengths)})")
        _assign(self.begin, np.asarray(flags, np.float64).reshape(-1, 1))
        for v, state in zip(self.carried, self.kept):
            _assign(v, state)

    def keep(self, values: dict, batch_lengths: np.ndarray) -> None:
        """The states each sequence ended in (at its last step) in the step just run."""
        self.kept_lengths = [int(n) for n in batch_lengths]
        last = np.maximum(batch_lengths.astype(np.int64) - 1, 0)
        rows = np.arange(len(last))
        if self.kind == "cntk_lstm_sequence":
            h = values[id(self.sequences[0])]
            c = _lstm_cells(values, self, h, batch_lengths)
            self.kept = [h[rows, last], c[rows, last].astype(h.dtype)]
        else:
            self.kept = [values[id(s)][rows, last] for s in self.sequences]


def _lstm_cells(values: dict, carry: _Carry, h: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The cell states of CNTK's LSTM (gates ``i, c, f, o`` in ``W``'s columns) along each
    sequence, from the step's input ``x``, its outputs ``h`` and weights: every gate is
    known once the previous output is, so only the cell's own recurrence is run."""
    x, w, hw, b = (torch.from_numpy(np.asarray(values[id(v)], np.float64))
                   for v in carry.step_inputs)
    h = torch.from_numpy(np.asarray(h, np.float64))
    batch, steps = x.shape[:2]
    h0, c0 = (torch.from_numpy(np.broadcast_to(np.asarray(values[id(v)], np.float64),
                                               (batch, hw.shape[0])).copy())
              for v in carry.initial)
    previous = torch.cat([h0.unsqueeze(1), h[:, :-1]], 1)
    proj = x @ w + previous @ hw + b
    i, g, f, _ = proj.reshape(batch, steps, 4, -1).unbind(2)
    i, g, f = torch.sigmoid(i), torch.tanh(g), torch.sigmoid(f)
    c, cells = c0, []
    for t in range(steps):
        c = f[:, t] * c + i[:, t] * g[:, t]
        cells.append(c)
    return torch.stack(cells, 1).numpy()


def _assign(v: Variable, array: np.ndarray) -> None:
    """Give the leaf ``v`` the value ``array``, of its own shape (a batch of its own) and of
    its type (a float64 model's states are kept as float64)."""
    v.data = torch.from_numpy(np.ascontiguousarray(array, np.dtype(v.dtype)))


class SequenceBegins:
    """The recurrences of a Trainer's graph made to take CNTK's sequence-begin flags (see the
    module docstring); made the first time a minibatch comes with flags."""

    def __init__(self, roots: Sequence[Variable], unflagged: bool = False):
        """``unflagged``: minibatches without flags ran before (their states were not kept,
        which an error then says)."""
        nodes = [n for n in Subgraph(list(roots)).nodes
                 if n.spec.name in _KERNELS + ("recurrence",)]
        self.carries = [_Carry(n) for n in nodes]
        for c in self.carries:
            c.unflagged = unflagged

    def wanted(self) -> list[Variable]:
        """What a step must also compute for :meth:`keep`."""
        return [v for c in self.carries for v in c.wanted()]

    def begin(self, flags: list[bool] | None, lengths: Sequence[int] | None = None,
              what: str = "train_minibatch") -> None:
        """Set the recurrences' initial states for a minibatch with ``flags`` (None: every
        sequence starts) whose sequences have ``lengths`` (``what``: the call, for errors)."""
        for c in self.carries:
            c.set(flags, lengths, what)

    def within(self, roots: Sequence[Variable]) -> "SequenceBegins":
        """The part of these recurrences that computing ``roots`` runs, sharing their states
        (``Trainer.test_minibatch`` runs the metric's: CNTK carries one state per recurrence
        through training and testing alike)."""
        nodes = {id(n) for n in Subgraph(list(roots)).nodes}
        part = SequenceBegins.__new__(SequenceBegins)
        part.carries = [c for c in self.carries if id(c.node) in nodes]
        return part

    def keep(self, values: dict) -> None:
        """Keep the states the step just run ended in (``values``: ``{id(variable): array}``
        of :meth:`wanted`), and put the recurrences back to starting afresh."""
        for c in self.carries:
            c.keep(values, np.asarray(values[id(c.lengths)]))
            c.set(None)


# a Function's runs: one SequenceBegins per output (CNTK: per Function), made at the first run
# with flags
_FUNCTIONS: "weakref.WeakKeyDictionary[Variable, SequenceBegins]" = weakref.WeakKeyDictionary()


def function_begins(roots: Sequence[Variable], flags: list[bool] | None):
    """The :class:`SequenceBegins` of a Function's graph (its outputs ``roots``, fed already)
    set for a run with ``flags``; None for a Function never run with flags."""
    begins = _FUNCTIONS.get(roots[0])
    if begins is None:
        if flags is None:
            return None
        begins = _FUNCTIONS[roots[0]] = SequenceBegins(roots)
    fed = [c.lengths for c in begins.carries if c.lengths.parent is None]
    lengths = [int(n) for n in np.asarray(fed[0].d).reshape(-1)] if fed else None
    begins.begin(flags, lengths, "Function.eval")
    return begins


@contextlib.contextmanager
def carrying(begins: SequenceBegins | None):
    """Around a run of :meth:`SequenceBegins.wanted` (``begins`` None: nothing): afterwards
    keep the states it ended in; if it fails, start afresh next time."""
    if begins is None:
        yield
        return
    try:
        yield
    except BaseException:
        begins.begin(None)
        raise
    begins.keep({id(v): v.d for v in begins.wanted()})
