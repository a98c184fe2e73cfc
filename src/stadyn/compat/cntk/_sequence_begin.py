"""CNTK's sequence-begin flags: ``trainer.train_minibatch((arguments, [True]))`` and then
``[False]``: a sequence whose flag is False goes on from where the same sequence of the previous
minibatch ended (truncated back-propagation through time, as char_rnn.py trains).  A Trainer's
``train_minibatch`` and ``test_minibatch`` share the states (a test minibatch with a False flag
goes on from the previous minibatch, trained or tested, and the next goes on from it); a
Function's runs (``eval``, ``forward``) have states of their own.

CNTK 2.7 gives every recurrence of the graph, as its initial state for that sequence, a value
the recurrence computed in the previous minibatch (no gradient flows back into it), whether
that minibatch came with flags or not: which value, :meth:`_Carry._carried_states` says (the
previous minibatch's sequences sit in slots, and with as many sequences as slots each goes on
from its slot's last step).  Here each recurrence node of the graph (the fused LSTM, GRU and
plain recurrent kernels, and the ``recurrence`` op) reads, once a flag False first comes, in
place of each initial state ``s0``, ``s0 * begin + carried * (1 - begin)``: two leaves this
module sets before each step (``begin`` 1 for a sequence that starts, 0 for one that goes on;
``carried`` the states taken from the previous step) and puts back to "start afresh" after it,
so the graph computes as before everywhere else.  The states along each sequence are read
from a step's values, kept from each run (a Trainer's or a Function's, from its first on) as
the tensors it computed (a run makes new ones: only leaves' values are copied) and read into
NumPy only when a flag False asks for them: a kernel's outputs, and for the fused LSTM the
cells, computed again from the step's input, outputs and weights (CNTK's LSTM equations).
"""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from typing import Sequence

import numpy as np
import torch

from ... import functions as F
from ... import io as _io
from ...graph import FunctionNode, Subgraph, Variable
from ...ops import RECURRENCES, RecurrenceStates, lstm_cells, recurrence_states
from . import _graph as G

__all__ = ["SequenceBeginError", "SequenceBegins", "carrying", "reads_across",
           "refuse_going_on", "refuse_unpacking", "split_flags", "truncated_layout"]

class SequenceBeginError(RuntimeError, ValueError):
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
    flags, flagged = None, None     # flagged: the inputs the flags hold for (None: all)
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
                count = value.shape[0] if hasattr(value, "shape") else len(value)
                if len(current) != count:       # (CNTK 2.7's sanitize_batch, its words)
                    raise ValueError(f"you have {count} sequences, but only {len(current)} "
                                     "sequence begin markers")
                given[key] = current
            elif given:
                given[key] = current
            plain[key] = value
        _check_layouts(plain, given)
        arguments, flags, flagged = plain, current, set(map(id, given))
    if flags and isinstance(arguments, dict):
        # with begin flags, an array's first axis holds the sequences (CNTK 2.7's
        # Value.create: ``list(np.atleast_1d(data))``), each of one step where it is a
        # step's shape; without, an array is one sequence
        arguments = {key: list(np.atleast_1d(value)) if isinstance(value, np.ndarray) and (
            flagged is None or id(key) in flagged) else value for key, value in arguments.items()}
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


def truncated_layout(arguments):
    """The slots of a minibatch a ``MinibatchSource`` with ``truncation_length`` packed (its
    :class:`stadyn.io.TruncatedLayout`), found on the reader's data among ``arguments`` (a
    dict of inputs' data, or one input's), or None."""
    values = arguments.values() if isinstance(arguments, dict) else (arguments,)
    for value in values:
        layout = getattr(value, "_truncated", None) if isinstance(value, _io.MinibatchData) \
            else None
        if layout is not None:
            return layout
    return None


def refuse_unpacking(layout) -> None:
    """CNTK 2.7's refusal to unpack data laid out as a truncated minibatch (``layout``), into
    arrays (``MinibatchData.asarray()``, a Function's outputs on its sequences): where a
    sequence goes on from the previous minibatch and the minibatch does not hold one sequence
    per slot (Utils.cpp, ``GetValueObjectFromCNTKImplMatrixAndMBLayout``)."""
    if layout is None or all(layout.begins) or len(layout.begins) == layout.parallel:
        return
    raise RuntimeError(
        "Cannot create an unpacked Value object from packed data where one or more sequences "
        f"are truncated (CNTK 2.7: a minibatch of {len(layout.begins)} sequences in "
        f"{layout.parallel} slots, where {sum(not b for b in layout.begins)} go on from the "
        "previous minibatch, cannot be read as arrays; train on it, or read it with one "
        "sequence per slot)")


def _flagged(value) -> bool:
    """Whether an input's data is CNTK's ``(data, sequence-begin flags)`` pair."""
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], list)


class _Splice:
    """The leaves spliced into one recurrence node's initial states at the first flag False
    (``s0 * begin + carried * (1 - begin)`` for each ``s0``; ``begin`` 1: the graph computes
    what it did).  One per node, shared by every Trainer and Function whose runs carry its
    states: each sets the leaves for its run from its own previous run, and puts them back
    after it.  Those hold it; the node's entry in ``_SPLICES`` is a weak reference (a run's
    roots lead to its plan and every node of it, so a registry holding the splice would keep
    the graph alive for ever), and once they are gone the node reads ``s0`` through it."""

    def __init__(self, carry: "_Carry"):
        dtype = carry.dtype
        self.begin = Variable.from_numpy_array(np.ones((), dtype), dtype=dtype)
        self.carried = [Variable.from_numpy_array(np.zeros(s, dtype), dtype=dtype)
                        for s in carry.layout.shapes]
        self.initial = []       # what the node reads in place of each initial state
        for position, original, carried in zip(carry.layout.positions, carry.initial,
                                               self.carried):
            chosen = original * self.begin + carried * (1.0 - self.begin)
            G.mark_spliced(chosen, original, (self.begin, carried))   # (CNTK's graph is as it was)
            carry.node.set_input(position, chosen)
            self.initial.append(chosen)
        self.fresh = True       # whether the node reads its own initial states


_SPLICES: "weakref.WeakKeyDictionary[FunctionNode, weakref.ref]" = weakref.WeakKeyDictionary()


def _splice_of(node: FunctionNode) -> _Splice | None:
    """The splice a Trainer's or Function's runs of ``node`` made and still hold, if any."""
    ref = _SPLICES.get(node)
    return None if ref is None else ref()


class _Carry:
    """One recurrence node as one Trainer or Function runs it: where its initial states are
    and the values its states along each sequence are computed from, kept from the last
    minibatch it ran."""

    def __init__(self, node):
        self.node = node
        layout = self.layout = recurrence_states(node)    # (kind, lengths, states' shapes...)
        name = layout.kind
        # the states' sequences: a kernel's output is h only (the LSTM's cells are computed)
        self.sequences = list(node.outputs) if name == "recurrence" else [node.outputs[0]]
        self.unsupported = None     # why its states cannot be carried, if so
        if any(o is None for o in self.sequences):
            self.unsupported = (
                f"a recurrence ({node.scope or 'unnamed'}) returns states nobody kept "
                "(an LSTM step run op by op); Stadyn carries the states of the fused "
                "recurrences and of recurrences whose states are all outputs")
        alive = next((o for o in node.outputs if o is not None), layout.initial[0])
        self.dtype = np.dtype(alive.dtype)       # the recurrence's (float64 models)
        # the values the states are computed from, kept as outputs of the step (the weights
        # as copies: an identity of a parameter may share its memory, which the update then
        # overwrites)
        inputs = layout.inputs
        self.step_inputs = [F.identity(inputs[0])] + [v * 1.0 for v in inputs[4:7]] \
            if name == "cntk_lstm_sequence" and self.unsupported is None else []
        self.last: dict | None = None       # the last minibatch's values (see keep)
        self.splice: _Splice | None = None      # the node's, once a flag False came

    @property
    def initial(self) -> list[Variable]:
        """What the node reads as its initial states (spliced, once a flag False came)."""
        splice = self.splice or _splice_of(self.node)
        return self.layout.initial if splice is None else splice.initial

    def wanted(self) -> list[Variable]:
        if self.unsupported is not None:
            return []
        return self.sequences + self.initial + self.step_inputs + [self.layout.lengths]

    def set(self, flags: list[bool] | None, what: str = "train_minibatch",
            layout=None) -> None:
        """Begin every sequence afresh (``flags`` None) or as ``flags`` say (``what``: the
        call, for errors; ``layout``: a truncated minibatch's slots, see
        :meth:`_slot_states`)."""
        if flags is None or all(flags):
            splice = self.splice or _splice_of(self.node)
            if splice is not None and not splice.fresh:
                _assign(splice.begin, np.ones(()))
                for v, shape in zip(splice.carried, self.layout.shapes):
                    _assign(v, np.zeros(shape))
                splice.fresh = True
            return
        if self.unsupported is not None:
            raise ValueError(f"{what} with sequence-begin flags: {self.unsupported}")
        if self.layout.go_backwards:
            raise ValueError(f"{what}: a sequence-begin flag False continues a "
                             "recurrence from the previous minibatch, which a recurrence that "
                             "goes backwards cannot")
        if self.last is None:
            raise SequenceBeginError(
                f"{what}: sequence-begin flags {flags} continue {len(flags)} sequences from the "
                "previous minibatch, which had no minibatch (CNTK 2.7: No matching sequence "
                "found in the saved previous MBLayout)")
        states = self._slot_states(flags, layout, what) if layout is not None else \
            self._carried_states(flags, what)
        splice = self.splice = self.splice or _splice_of(self.node) or _Splice(self)
        _SPLICES[self.node] = weakref.ref(splice)
        _assign(splice.begin, np.asarray(flags, np.float64).reshape(
            (-1,) + (1,) * len(self.layout.shapes[0])))
        for v, state in zip(splice.carried, states):
            _assign(v, state)
        splice.fresh = False

    def _carried_states(self, flags: list[bool], what: str) -> list[np.ndarray]:
        """Each state's value, one row per sequence of a minibatch with ``flags``: zeros
        where a sequence begins, and where it goes on what CNTK 2.7 carries into it.

        CNTK 2.7 (``DelayedValueNode``) keeps the previous minibatch's values as a matrix of
        ``T`` steps by ``S`` slots (its sequences packed into slots, see :func:`_slots`), and
        reads the values sequence ``i`` of this minibatch (of ``n`` sequences, each in its own
        slot) goes on from at column ``(T - 1) * n + i`` of it: slot ``i``'s last step when
        ``n == S``, another slot and step when not."""
        lengths, packed = self._value(self.layout.lengths).reshape(-1).tolist(), self.last["packed"]
        steps, slots, n = max(lengths), _slots(lengths, packed), len(flags)
        flagged = f"{what}: sequence-begin flags {flags}"
        for i, flag in enumerate(flags):
            if not flag and i >= len(slots):
                raise SequenceBeginError(
                    f"{flagged} continue sequence {i} from slot {i} of the previous minibatch, "
                    f"which put its {len(lengths)} sequences (lengths {lengths}) into "
                    f"{len(slots)} slots (CNTK 2.7: No matching sequence found in the saved "
                    "previous MBLayout)")
        trajectories = self._trajectories()
        rows = [np.zeros((n,) + tuple(s), self.dtype) for s in self.layout.shapes]
        for i, flag in enumerate(flags):
            if flag:
                continue
            step, slot = divmod((steps - 1) * n + i, len(slots))
            if step >= steps:
                raise ValueError(
                    f"{flagged} continue sequence {i} of {n} from a previous minibatch of "
                    f"{len(slots)} slots of {steps} steps: CNTK 2.7 reads its state past the "
                    "values the previous minibatch kept (column (T - 1) * n + i of its T "
                    "steps by S slots), which Stadyn cannot imitate; continue as many "
                    "sequences as the previous minibatch had, or fewer")
            j, t = [(j, step - t0) for j, t0 in slots[slot] if t0 <= step][-1]
            if t >= lengths[j] and not self.gaps_computed():
                raise ValueError(
                    f"{flagged} continue sequence {i} from step {step} of slot {slot} of the "
                    f"previous minibatch (sequences of lengths {lengths}), where that slot's "
                    "sequences had ended: CNTK 2.7 carries the value its recurrence computed "
                    "on the padding there, which Stadyn does not compute; give the previous "
                    "minibatch sequences of one length, or begin this one afresh")
            for row, trajectory in zip(rows, trajectories):
                row[i] = trajectory[j, t]
        return rows

    def gaps_computed(self) -> bool:
        """Whether the padding of the states' sequences holds what CNTK 2.7 computes on the
        gap after a slot's last sequence: never for a recurrence (CNTK runs it on over the
        gap, Stadyn's kernels stop at each sequence's end)."""
        return False

    def _slot_states(self, flags: list[bool], layout, what: str) -> list[np.ndarray]:
        """The states carried into a minibatch a ``MinibatchSource`` with
        ``truncation_length`` packed (``layout``, a :class:`stadyn.io.TruncatedLayout`): a
        sequence that goes on starts from the last step of its slot's last sequence in the
        previous minibatch, as CNTK's ``DelayedValueNode`` reads the previous minibatch's last
        column of the slot (whichever sequence is there: a Function's run on a minibatch it
        ran before goes on from its own end)."""
        before = self.last.get("layout")
        if before is None:
            raise SequenceBeginError(
                f"{what}: a truncated minibatch goes on with sequences of the previous "
                "minibatch, which was not read with truncation_length")
        lengths = self._value(self.layout.lengths).reshape(-1).astype(np.int64)
        trajectories = self._trajectories()
        rows = [np.zeros((len(flags),) + tuple(s), self.dtype) for s in self.layout.shapes]
        for i, flag in enumerate(flags):
            if flag:
                continue
            slot = layout.streams[i]
            # the slot's last piece (one that goes on, but for a minibatch run again)
            found = [j for j, s in enumerate(before.streams) if s == slot]
            if not found:
                raise SequenceBeginError(
                    f"{what}: sequence {i} of a truncated minibatch goes on in slot {slot}, "
                    "where the previous minibatch had no sequence")
            j = found[-1]
            for row, trajectory in zip(rows, trajectories):
                row[i] = trajectory[j, int(lengths[j]) - 1]
        return rows

    def _trajectories(self) -> list[np.ndarray]:
        """The states along every sequence of the last minibatch, ``(batch, steps, *shape)``
        each (the LSTM's cells computed from its inputs)."""
        if self.layout.kind == "cntk_lstm_sequence":
            h = self._value(self.sequences[0])
            x, w, hw, b = (self._value(v) for v in self.step_inputs)
            h0, c0 = (self._value(v) for v in self.last["initial"])
            return [h, lstm_cells(x, h, h0, c0, w, hw, b).numpy().astype(h.dtype)]
        return [self._value(s) for s in self.sequences]

    def _value(self, v: Variable) -> np.ndarray:
        """The value ``v`` had in the last minibatch, as a NumPy array."""
        t = self.last["values"][id(v)].cpu()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()

    def keep(self, packed: bool, layout=None) -> None:
        """Keep what the states along each sequence of the minibatch just run are computed
        from (``packed``: whether it held whole sequences only, which CNTK packs into slots):
        the tensors the run made, and copies of the leaves' (and of the input's, which may
        be a leaf's), which a feed or an update may overwrite before a flag False reads
        them."""
        if self.unsupported is not None:
            return
        shared = self.step_inputs[:1]
        self.last = {"values": {id(v): v.data.detach().clone() if v.parent is None or any(
            v is s for s in shared) else v.data.detach() for v in self.wanted()},
            "packed": packed, "initial": self.initial,      # (spliced later, maybe)
            "layout": layout}


class _DelayCarry(_Carry):
    """A ``past_value`` outside a recurrence loop: a sequence that goes on from the previous
    minibatch (a sequence-begin flag False, or a piece of a ``MinibatchSource`` with
    ``truncation_length`` that goes on) reads, at its first step, the input's value CNTK's
    ``DelayedValueNode`` kept from the previous minibatch (the same slot's last step, as a
    recurrence's state: :meth:`_Carry._carried_states`, :meth:`_Carry._slot_states`),
    spliced in place of the initial state.  Only a delay of one step carries (a longer one
    is refused when a sequence goes on)."""

    def __init__(self, node):
        self.node = node
        inputs, attrs = node.spec.split_arguments(node.args, node.kwargs)
        x = inputs[0]
        self.layout = RecurrenceStates("past_value", tuple(inputs), attrs, (0,), (2,),
                                       (tuple(x.shape[2:]),), False)
        self.sequences = [x]
        self.unsupported = None
        if int(attrs.get("time_step", 1)) != 1:
            self.unsupported = (f"a past_value of {attrs.get('time_step')} steps "
                                f"({node.scope or 'unnamed'}) cannot carry its values from one "
                                "minibatch to the next in Stadyn (one step can)")
        self.dtype = np.dtype(x.dtype)
        self.step_inputs = []
        self.last = None
        self.splice = None

    def gaps_computed(self) -> bool:
        """CNTK 2.7 computes each op on a gap of the minibatch as on a step, its inputs 0
        there (a ``past_value`` of ``exp(x)`` carries 1 from a gap, of ``x + 1`` 1), as
        Stadyn computes its padding, where the delayed value is computed step by step: no op
        of it reads across steps (a sequence op, a recurrence), nor draws random numbers."""
        return not any(n.spec.category in _ACROSS_STEPS or n.spec.name in _ACROSS_OPS
                       for n in Subgraph(list(self.sequences)).nodes)


class _FutureCarry(_DelayCarry):
    """A ``future_value`` outside a recurrence loop in a minibatch of a ``MinibatchSource``
    with ``truncation_length``: where a piece's sequence goes on in the next minibatch, the
    steps past the piece's end read 0, not the initial state (CNTK 2.7's values: the
    future is not in the minibatch); elsewhere the initial state, as without truncation."""

    def __init__(self, node):
        super().__init__(node)
        self.unsupported = None
        self.layout = dataclasses.replace(self.layout, kind="future_value")
        self.ran = False        # whether a minibatch ran (CNTK's saved previous MBLayout)

    def wanted(self) -> list[Variable]:
        return []

    def keep(self, packed: bool, layout=None) -> None:
        self.last = None
        self.ran = True

    def set(self, flags, what="train_minibatch", layout=None) -> None:
        if layout is None:
            # (CNTK 2.7 looks the sequence up in the previous minibatch's layout, even for
            # the future; after one, a False flag computes as a True one)
            refuse_going_on(what, flags, self.ran, [], ["sequence.future_value"])
        if layout is None or not any(layout.goes_on):
            _Carry.set(self, None, what)
            return
        splice = self.splice = self.splice or _splice_of(self.node) or _Splice(self)
        _SPLICES[self.node] = weakref.ref(splice)
        shape = self.layout.shapes[0]
        _assign(splice.begin, np.asarray([not on for on in layout.goes_on], np.float64)
                .reshape((-1,) + (1,) * len(shape)))
        _assign(splice.carried[0], np.zeros((len(layout.goes_on),) + shape))
        splice.fresh = False


def _slots(lengths: list[int], packed: bool) -> list[list[tuple[int, int]]]:
    """How CNTK 2.7 lays a minibatch's sequences (of ``lengths``) into parallel slots: one
    slot each, in order, where some continue a sequence (``packed`` False), where there is
    one sequence, or one step; else first fit (``MBLayout::InitAsPackedSequences``): each
    sequence, in order, after the sequences of the first slot it fits into (slots as long as
    the longest sequence), or in a new slot.  Per slot, ``(sequence, first step)`` pairs."""
    if not packed or len(lengths) == 1 or max(lengths) == 1:
        return [[(j, 0)] for j in range(len(lengths))]
    width, slots, used = max(lengths), [], []
    for j, n in enumerate(lengths):
        s = next((s for s, u in enumerate(used) if u + n <= width), len(used))
        if s == len(used):
            slots.append([])
            used.append(0)
        slots[s].append((j, used[s]))
        used[s] += n
    return slots


def _assign(v: Variable, array: np.ndarray) -> None:
    """Give the leaf ``v`` the value ``array``, of its own shape (a batch of its own) and of
    its type (a float64 model's states are kept as float64)."""
    v.data = torch.from_numpy(np.ascontiguousarray(array, np.dtype(v.dtype)))


#: the ops' categories (and ops) whose values on a sequence's padding are not CNTK 2.7's on
#: its gaps: those reading across steps, those drawing random numbers, those running Python
_ACROSS_STEPS = ("sequence", "recurrent", "random")
_ACROSS_OPS = ("python_function", "cntk_user_function")

_DELAYS = {"past_value": _DelayCarry, "future_value": _FutureCarry}

#: how CNTK 2.7 takes a sequence that goes on from the previous minibatch (a False
#: sequence-begin flag) in the ops that read across a sequence's steps other than the delays
#: and recurrences (whose states are carried, :class:`_Carry`), by Stadyn's op: "whole", a
#: RuntimeError for every such run (the op needs whole sequences: sequence.first, last and
#: slice through DelayedValueNode's GetColumnIndex, Sequences.h:524, as gather, where and
#: scatter; the sequence reductions, ReshapingNodes.cpp:115, SequenceReshapeNodes.h:323;
#: unpack and sequence.softmax through UnpackSequenceNode); "looked up", a RuntimeError where
#: no minibatch ran before (the sequence is looked up in the saved previous MBLayout: a
#: convolution over the sequence axis, as future_value), else computed as a begun sequence
_ACROSS = {"sequence_first": "whole", "sequence_last": "whole",
           "sequence_reduce_sum": "whole", "sequence_reduce_max": "whole",
           "sequence_gather": "whole", "sequence_where": "whole", "sequence_scatter": "whole",
           "sequence_unpack": "whole", "sequence_softmax": "whole", "sequence_slice": "whole"}
#: the CNTK names of the ops refused, for the error
_CNTK_NAMES = {"sequence_first": "sequence.first", "sequence_last": "sequence.last",
               "sequence_reduce_sum": "sequence.reduce_sum",
               "sequence_reduce_max": "sequence.reduce_max", "sequence_gather": "sequence.gather",
               "sequence_where": "sequence.where", "sequence_scatter": "sequence.scatter",
               "sequence_unpack": "sequence.unpack", "sequence_softmax": "sequence.softmax",
               "sequence_slice": "sequence.slice"}
# the nodes whose op does not read across steps as CNTK's does (None: not at all, a node
# made for its shape; "looked up": a convolution over the sequence axis), set by the
# compat ops that build them (:func:`reads_across`)
_MARKED: "weakref.WeakKeyDictionary[FunctionNode, tuple]" = weakref.WeakKeyDictionary()


def reads_across(v: Variable, rule: str | None, shown: str = "") -> Variable:
    """Mark the node computing ``v`` as reading across steps by ``rule`` (see ``_ACROSS``:
    "whole", "looked up", or None for a node that reads no step as CNTK's op does, such as
    ``sequence.broadcast_as``'s ``first`` of the sequence taken for its shape), shown as
    ``shown`` (CNTK's op) in the error; returns ``v``.

    Example:
        >>> import stadyn.sequence as S
        >>> x = S.input_variable((3,))
        >>> first = reads_across(S.first(x), None)      # (read for its shape only)
        >>> _reading_across([first.parent])
        {'whole': [], 'looked up': []}
    """
    if v.parent is not None:
        _MARKED[v.parent] = (rule, shown)
    return v


def _reading_across(nodes) -> dict[str, list[str]]:
    """The CNTK ops among ``nodes`` that read across steps, by rule ("whole", "looked up")."""
    found: dict[str, set] = {"whole": set(), "looked up": set()}
    for n in nodes:
        rule, shown = _MARKED.get(n, (_ACROSS.get(n.spec.name), ""))
        if rule is not None:
            found[rule].add(shown or _CNTK_NAMES.get(n.spec.name, n.spec.name))
    return {rule: sorted(names) for rule, names in found.items()}


def refuse_going_on(what: str, flags, ran: bool, whole, looked_up) -> None:
    """The one rule for the ops that read across a sequence's steps: CNTK 2.7's RuntimeError
    for a run whose sequence-begin ``flags`` continue a sequence (a False flag) where the
    graph holds ops that need whole sequences (``whole``: their names) or, on a first run
    (``ran`` False), ops that look the sequence up in the previous minibatch's layout
    (``looked_up``: a convolution over the sequence axis, ``future_value``)."""
    if flags is None or all(flags):
        return
    if whole:
        raise RuntimeError(
            f"{what}: sequence-begin flags {flags} continue sequences from the previous "
            f"minibatch, which {', '.join(whole)} cannot read: they need whole sequences "
            "(CNTK 2.7: cannot perform sequence axis reduction for truncated sequence / "
            "attempted to access a time step that is accessing a portion of a sequence that "
            "is not included in current minibatch)")
    if looked_up and not ran:
        raise RuntimeError(
            f"{what}: sequence-begin flags {flags} continue {len(flags)} sequences from the "
            f"previous minibatch, which had no minibatch ({', '.join(looked_up)}; CNTK 2.7: No "
            "matching sequence found in the saved previous MBLayout)")


class SequenceBegins:
    """The recurrences of a graph made to take CNTK's sequence-begin flags (see the module
    docstring): a Trainer's, made at its first minibatch; a Function's, at its first run
    with flags."""

    def __init__(self, roots: Sequence[Variable], whole_sequences: bool = False):
        every = Subgraph(list(roots)).nodes
        nodes = [n for n in every if n.spec.name in RECURRENCES or n.spec.name in _DELAYS]
        self.carries = [_Carry(n) if n.spec.name in RECURRENCES else _DELAYS[n.spec.name](n)
                        for n in nodes]
        # (with ``whole_sequences``, a Function's graph: the ops reading across steps, by
        # CNTK 2.7's names, refused on a False flag by ``refuse_going_on``; a Trainer's graph
        # holds Stadyn's own sums of the loss over the sequences, which CNTK has not, so its
        # runs go on)
        across = _reading_across(every) if whole_sequences else {}
        self.whole = across.get("whole", [])
        self.looked_up = across.get("looked up", [])
        self.ran = False        # whether a minibatch ran (CNTK's saved previous MBLayout)
        self.packed = True      # whether this minibatch holds whole sequences only
        self.layout = None      # a truncated minibatch's slots (stadyn.io.TruncatedLayout)

    def wanted(self) -> list[Variable]:
        """What a step must also compute for :meth:`keep` (not the leaves it reads, whose
        values are there without computing)."""
        return [v for c in self.carries for v in c.wanted() if v.parent is not None]

    def begin(self, flags: list[bool] | None, what: str = "train_minibatch",
              layout=None) -> None:
        """Set the recurrences' initial states for a minibatch with ``flags`` (None: every
        sequence starts; ``what``: the call, for errors; ``layout``: a truncated minibatch's
        slots, whose sequences go on from their slot's)."""
        self.layout = layout
        # (a truncated minibatch's pieces go on as the reader laid them out)
        refuse_going_on(what, flags, self.ran or layout is not None, self.whole,
                        self.looked_up)
        try:
            for c in self.carries:
                c.set(flags, what, layout)
        except BaseException:
            for c in self.carries:      # refused: the graph computes as without flags
                c.set(None)
            raise
        self.packed = flags is None or all(flags)

    def within(self, roots: Sequence[Variable]) -> "SequenceBegins":
        """The part of these recurrences that computing ``roots`` runs, sharing their states
        (``Trainer.test_minibatch`` runs the metric's: CNTK carries one state per recurrence
        through training and testing alike)."""
        nodes = {id(n) for n in Subgraph(list(roots)).nodes}
        part = SequenceBegins.__new__(SequenceBegins)
        part.carries = [c for c in self.carries if id(c.node) in nodes]
        part.whole, part.looked_up, part.ran = [], [], True
        part.packed = True
        part.layout = None
        return part

    def keep(self) -> None:
        """Keep what the states the step just run went through are computed from (after a
        run of :meth:`wanted`), and put the recurrences back to starting afresh."""
        self.ran = True
        for c in self.carries:
            c.keep(self.packed, self.layout)
            c.set(None)


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
    begins.keep()
