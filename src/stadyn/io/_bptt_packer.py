"""CNTK 2.7's truncated back-propagation through time for a :class:`~stadyn.io.MinibatchSource`
(``cntk.io.MinibatchSource(..., truncation_length=N)``; CNTK's ``TruncatedBPTTPacker``,
Source/Readers/ReaderLib/TruncatedBpttPacker.cpp).

A minibatch asked for ``M`` samples has ``P = max(1, M // N)`` parallel slots (rows of CNTK's
layout), each ``N`` steps long.  Before each minibatch every slot, in order, takes the source's
next sequences (in the source's order, one at a time) until it holds more than ``N`` steps not
given out yet (or the data ends).  Each slot then gives its next ``N`` steps (fewer at the
data's end): the rest of the sequence it is in, and as much of the following ones as fits, so
one slot's row can hold pieces of several sequences.  Each piece is one sequence of the
minibatch (CNTK's ``num_sequences`` counts them; ``num_samples`` their steps);
:attr:`TruncatedPacker.layout` says each piece's slot, whether it begins its sequence (else it
goes on from the slot's previous minibatch: a recurrence carries its state over) and whether
its sequence goes on in the next minibatch.  A minibatch ends a sweep where a sequence that
ends one is given out to its end; the data ends when every slot is empty.

With sequences of 7, 3, 9, 5, 4 and 6 steps, ``N = 4`` and ``M = 8`` (two slots) the
minibatches hold 3, 3, 2, 2 and 1 sequences of 8, 8, 8, 8 and 2 steps (CNTK 2.7's counts).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Hashable, Mapping

import numpy as np

from ._source import MinibatchSource
from ._truncated_source import TruncatedLayout
from ._utterance_source import sequences_minibatch

__all__ = ["TruncatedPacker"]


class _Slot:
    """One row of the minibatches: its sequences (``[{stream: steps}, length, ends a
    sweep]``) and the steps of the first given out."""

    def __init__(self) -> None:
        self.sequences: deque = deque()
        self.cursor = 0

    def available(self) -> int:
        return sum(s[1] for s in self.sequences) - self.cursor


class TruncatedPacker:
    """Minibatches of ``truncation_length`` steps in parallel slots from the sequences
    ``source`` gives (see the module docstring), as CNTK 2.7's ``MinibatchSource`` with
    ``truncation_length`` made them.  Every stream must be a sequence stream, of one length in
    each sequence (CNTK's rule).

    Example:
        >>> import os, tempfile
        >>> from stadyn.io import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
        >>> path = os.path.join(tempfile.mkdtemp(), 'seq.ctf')   # sequences of 5 and 3 steps
        >>> with open(path, 'w') as f:
        ...     for s, n in enumerate((5, 3)):
        ...         _ = [print(s, '|x', t, file=f) for t in range(n)]
        >>> src = MinibatchSource(CTFDeserializer(path, StreamDefs(x=StreamDef('x', shape=1))),
        ...                       randomize=False, max_sweeps=1)
        >>> packer = TruncatedPacker(src, 2)
        >>> d = packer.next_minibatch(4)['x']
        >>> d.num_sequences, d.num_samples, packer.layout.begins, packer.layout.goes_on
        (2, 4, [True, True], [True, True])
    """

    def __init__(self, source: MinibatchSource, truncation_length: int):
        if int(truncation_length) < 1:
            raise ValueError(f"truncation_length must be >= 1, got {truncation_length}")
        self.source = source
        self.truncation_length = int(truncation_length)
        self.layout: TruncatedLayout | None = None
        self._slots: list[_Slot] = []
        self._ended = False

    def _read(self) -> list | None:
        """The source's next sequence, ``[{stream: steps}, length, ends a sweep, the source's
        state before it]`` (None at the data's end)."""
        names = list(self.source.streams)
        before = MinibatchSource.get_checkpoint_state(self.source)
        batch = MinibatchSource.next_minibatch(self.source, 1, {n: n for n in names})
        if not batch:
            return None
        steps = {}
        for name, d in batch.items():
            if d.lengths is None:
                raise ValueError(f"truncation_length={self.truncation_length}: stream "
                                 f"{name!r} is not a sequence stream (truncated "
                                 "back-propagation through time packs sequences)")
            steps[name] = np.asarray(d.data)[0, :int(d.lengths[0])]
        lengths = {n: a.shape[0] for n, a in steps.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"truncation_length={self.truncation_length}: a sequence whose "
                             f"streams differ in length ({lengths}); truncated "
                             "back-propagation through time needs one length in every stream "
                             "(CNTK 2.7: For BPTT sequences between different input stream "
                             "should have the same length)")
        ends = any(d.end_of_sweep for d in batch.values())
        return [steps, next(iter(lengths.values())), ends, before]

    def get_state(self) -> dict:
        """What the slots hold (JSON-able): each sequence as the source's state before it was
        read, and how far each slot's first sequence is given out."""
        return {"truncation_length": self.truncation_length, "ended": self._ended,
                "slots": [[seq[3] for seq in slot.sequences] for slot in self._slots],
                "cursors": [slot.cursor for slot in self._slots]}

    def restore(self, state: Mapping[str, Any] | None, source_state: Mapping[str, Any]) -> None:
        """Fill the slots as :meth:`get_state` found them (reading their sequences again), and
        leave the source at ``source_state``; ``state`` None empties them."""
        self._slots, self._ended = [], False
        if state is not None:
            for states, cursor in zip(state["slots"], state["cursors"]):
                slot = _Slot()
                for before in states:
                    MinibatchSource.restore_from_checkpoint(self.source, before)
                    slot.sequences.append(self._read())
                slot.cursor = int(cursor)
                self._slots.append(slot)
            self._ended = bool(state["ended"])
        MinibatchSource.restore_from_checkpoint(self.source, source_state)
        self.layout = None

    def next_minibatch(self, minibatch_size_in_samples: int,
                       input_map: Mapping[Hashable, Any] | None = None) -> dict:
        """The next minibatch (``{}`` once the data is given out): ``max(1, M //
        truncation_length)`` slots of ``truncation_length`` steps; ``input_map`` as
        :meth:`MinibatchSource.next_minibatch`'s."""
        n = self.truncation_length
        parallel = max(1, int(minibatch_size_in_samples) // n)
        if parallel < len(self._slots) and any(s.sequences for s in self._slots[parallel:]):
            raise ValueError(f"truncation_length={n}: a minibatch of {minibatch_size_in_samples} "
                             f"samples has {parallel} slots, fewer than the previous "
                             f"minibatch's {len(self._slots)}, whose sequences go on; keep the "
                             "minibatch size")
        self._slots = (self._slots + [_Slot() for _ in range(parallel)])[:parallel]
        for slot in self._slots:
            while not self._ended and n >= slot.available():
                sequence = self._read()
                if sequence is None:
                    self._ended = True
                    break
                slot.sequences.append(sequence)
        if all(not s.sequences for s in self._slots):
            self.layout = None
            return {}
        rows: list = []          # (slot, steps, first, end, begins, goes on)
        ends_sweep = False
        for index, slot in enumerate(self._slots):
            wanted = min(n, slot.available())
            while wanted:
                steps, length, ends, _ = slot.sequences[0]
                first = slot.cursor
                end = min(length, first + wanted)
                rows.append((index, steps, first, end, first == 0, end < length))
                wanted -= end - first
                slot.cursor = end
                if end == length:
                    slot.sequences.popleft()
                    slot.cursor = 0
                    ends_sweep |= ends
        self.layout = TruncatedLayout(parallel, [r[0] for r in rows], [r[4] for r in rows],
                                      [r[5] for r in rows])
        return sequences_minibatch(
            self.source, input_map,
            lambda name: [steps[name][a:b] for _, steps, a, b, _, _ in rows], ends_sweep)
