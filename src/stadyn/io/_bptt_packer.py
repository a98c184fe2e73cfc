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

Read in ``W`` data partitions (one per worker), the ``max(1, M // N)`` slots are shared out:
partition ``r`` has ``P // W`` of them, one more when ``r < P % W`` (CNTK refuses ``W > P``),
and takes the sequences whose position in the source's order (counted over sweeps) is ``r``
modulo ``W``, as CNTK's ``NoRandomizer`` deals them; randomized, those of the chunks whose
place in the sweep's shuffled chunk order is ``r`` modulo ``W``, as its block randomizer deals
them (a one-chunk file is all partition 0's).  A sweep's end that falls on another
partition's sequence marks the partition's next sequence (none, at the data's end).  A minibatch
asked for another size, or for another partition, starts with empty slots, as CNTK 2.7's
packer does when it is configured again: the steps left in the slots are not given out.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Hashable, Mapping

import numpy as np

from ._partitions import partition_of
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
    ``truncation_length`` made them.  A sequence's streams must have one length (CNTK's rule);
    a stream without sequences gives sequences of one step, as in CNTK 2.7.

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
        self._config: tuple[int, int, int] | None = None   # (M, W, r) of the last minibatch
        self._parallel = 0      # the slots (this partition's)
        self._sweep_ended = False   # a sweep ended on a sequence another partition took

    def _read(self, partitions: tuple[int, int] = (1, 0)) -> list | None:
        """The source's next sequence of partition ``(W, r)`` (the next whose position is
        ``r`` modulo ``W``), ``[{stream: steps}, length, ends a sweep, the source's state
        before it]`` (None at the data's end); a sweep's end among the sequences passed over
        marks it."""
        names = list(self.source.streams)
        count, index = partitions
        passed = 0
        while True:
            before = MinibatchSource.get_checkpoint_state(self.source)
            if count > 1 and passed > 2 * self.source._sweep_length:
                self._sweep_ended = False       # a sweep and more without one of its own
                return None
            batch = MinibatchSource.next_minibatch(self.source, 1, {n: n for n in names})
            if not batch:
                self._sweep_ended = False
                return None
            if count == 1 or self._own(before["position"], count, index):
                break
            passed += 1
            self._sweep_ended |= any(d.end_of_sweep for d in batch.values())
        steps = {}
        for name, d in batch.items():
            # a stream without sequences (a CTF file whose sequences are all one line) is
            # one step a sequence: CNTK 2.7's packer takes every sample as a sequence of one
            steps[name] = (np.asarray(d.data)[:1] if d.lengths is None
                           else np.asarray(d.data)[0, :int(d.lengths[0])])
        lengths = {n: a.shape[0] for n, a in steps.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"truncation_length={self.truncation_length}: a sequence whose "
                             f"streams differ in length ({lengths}); truncated "
                             "back-propagation through time needs one length in every stream "
                             "(CNTK 2.7: For BPTT sequences between different input stream "
                             "should have the same length)")
        ends = any(d.end_of_sweep for d in batch.values()) or self._sweep_ended
        self._sweep_ended = False
        return [steps, next(iter(lengths.values())), ends, before]

    def _own(self, position: int, count: int, index: int) -> bool:
        """Whether the sequence at ``position`` is partition ``index``'s: ``position % count``,
        or randomized, its chunk's place in the sweep's shuffled chunk order (whole chunks
        go to a partition, as CNTK 2.7's block randomizer deals them: ``_partitions.py``)."""
        positions = np.array([position], np.int64)
        return bool(partition_of(self.source, positions, self.source._sample_ids(positions),
                                 count, index)[0])

    def get_state(self) -> dict:
        """What the slots hold (JSON-able): each sequence as the source's state before it was
        read (and whether it ends a sweep), how far each slot's first sequence is given out,
        and the minibatch size and partition they were packed for."""
        return {"truncation_length": self.truncation_length, "ended": self._ended,
                "slots": [[seq[3] for seq in slot.sequences] for slot in self._slots],
                "ends": [[bool(seq[2]) for seq in slot.sequences] for slot in self._slots],
                "cursors": [slot.cursor for slot in self._slots],
                "config": None if self._config is None else list(self._config),
                "parallel": self._parallel, "sweep_ended": self._sweep_ended}

    def restore(self, state: Mapping[str, Any] | None, source_state: Mapping[str, Any]) -> None:
        """Fill the slots as :meth:`get_state` found them (reading their sequences again), and
        leave the source at ``source_state``; ``state`` None empties them (CNTK 2.7's restore:
        the steps its slots held are not given out)."""
        self._slots, self._ended, self._sweep_ended = [], False, False
        self._config, self._parallel = None, 0
        if state is not None:
            ends = state.get("ends") or [[None] * len(s) for s in state["slots"]]
            for states, flags, cursor in zip(state["slots"], ends, state["cursors"]):
                slot = _Slot()
                for before, flag in zip(states, flags):
                    MinibatchSource.restore_from_checkpoint(self.source, before)
                    sequence = self._read()
                    if flag is not None:
                        sequence[2] = flag
                    slot.sequences.append(sequence)
                slot.cursor = int(cursor)
                self._slots.append(slot)
            self._ended = bool(state["ended"])
            config = state.get("config")
            self._config = None if config is None else tuple(config)
            self._parallel = int(state.get("parallel", len(self._slots)))
            self._sweep_ended = bool(state.get("sweep_ended", False))
        MinibatchSource.restore_from_checkpoint(self.source, source_state)
        self.layout = None

    def _configure(self, size: int, count: int, index: int) -> None:
        """Set the slots for minibatches of ``size`` samples in partition ``index`` of
        ``count``, as CNTK 2.7's packer is configured at the first minibatch and again when
        the size or the partition changes: the slots are emptied then, and their number is
        computed again only when the size changes (TruncatedBpttPacker.cpp,
        ``SetConfiguration``)."""
        config = (size, count, index)
        if config == self._config:
            return
        if self._config is None or self._config[0] != size:
            total = max(1, size // self.truncation_length)
            if count > total:
                raise ValueError(
                    f"truncation_length={self.truncation_length}: a minibatch of {size} samples "
                    f"has {total} slots, fewer than the {count} data partitions (CNTK 2.7: Too "
                    "many workers for minibatch size; please increase minibatch size or "
                    "decrease number of workers.)")
            self._parallel = total // count + (1 if index < total % count else 0)
        self._config = config
        self._slots = [_Slot() for _ in range(self._parallel)]
        # (and CNTK's reader is set again where it is: a partition's turn counts from there)
        self.source._reconfigure(None)

    def next_minibatch(self, minibatch_size_in_samples: int,
                       input_map: Mapping[Hashable, Any] | None = None,
                       num_data_partitions: int | None = None,
                       partition_index: int | None = None) -> dict:
        """The next minibatch (``{}`` once the data is given out): ``max(1, M //
        truncation_length)`` slots of ``truncation_length`` steps (shared out among
        ``num_data_partitions``, see the module docstring); ``input_map`` as
        :meth:`MinibatchSource.next_minibatch`'s."""
        n = self.truncation_length
        count = 1 if num_data_partitions is None else int(num_data_partitions)
        index = 0 if partition_index is None else int(partition_index)
        if count < 1 or not 0 <= index < count:
            raise ValueError(f"partition_index must be in 0..num_data_partitions-1, got "
                             f"{index} of {count}")
        self._configure(int(minibatch_size_in_samples), count, index)
        for slot in self._slots:
            while not self._ended and n >= slot.available():
                sequence = self._read((count, index))
                if sequence is None:
                    self._ended = True
                    break
                slot.sequences.append(sequence)
        if all(not s.sequences for s in self._slots):
            self.layout = None
            return {}
        rows: list = []          # (slot, steps, first, end, begins, goes on)
        ends_sweep = False
        for row, slot in enumerate(self._slots):
            wanted = min(n, slot.available())
            while wanted:
                steps, length, ends, _ = slot.sequences[0]
                first = slot.cursor
                end = min(length, first + wanted)
                rows.append((row, steps, first, end, first == 0, end < length))
                wanted -= end - first
                slot.cursor = end
                if end == length:
                    slot.sequences.popleft()
                    slot.cursor = 0
                    ends_sweep |= ends
        self.layout = TruncatedLayout(self._parallel, [r[0] for r in rows], [r[4] for r in rows],
                                      [r[5] for r in rows])
        return sequences_minibatch(
            self.source, input_map,
            lambda name: [steps[name][a:b] for _, steps, a, b, _, _ in rows], ends_sweep)
