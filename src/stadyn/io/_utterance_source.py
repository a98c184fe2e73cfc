"""CNTK's legacy ``HTKMLFReader`` in utterance mode (``frameMode = false``), reproduced: the
same utterances in the same minibatches as cntk.exe.

That reader did not fill minibatches up to a sample count.  It kept ``parallel`` (its
``nbruttsineachrecurrentiter``) buffers, one per parallel sequence, and made each minibatch so:

1. every buffer's sequence is placed in its own parallel sequence, from time 0; the minibatch is
   as long as the longest; each buffer is refilled with the next sequence;
2. then, buffer after buffer, a refilled sequence that fits strictly in front of the end of a
   parallel sequence (first fit) is packed behind it and its buffer refilled again (and tried
   again); the first that fits nowhere stays for the next minibatch; the rest are gaps.

A *sequence* here is what its utterance iterator gave for one request of the minibatch size:
an utterance, followed by the next ones while the total stays below the minibatch size (cntk.exe
ran its recurrence across them as one sequence; with a minibatch size shorter than every
utterance, as the speech configs have, one utterance).  The iterator walks the utterances of
an endless sequence of sweeps, each in the order of :func:`utterance_order`, laid end to end
on a timeline of frames: epoch ``e`` of ``epoch_size`` frames takes the utterances that start
in ``[e * epoch_size, (e + 1) * epoch_size)``, so its sample count is near, not equal to,
the epoch size.  An epoch ends when the first buffer is empty once the iterator is; the other
buffers are then no longer refilled and keep their last sequence, which cntk.exe placed again
(it counted those frames twice; so does this source), and a sequence still waiting in one of
them when the first runs empty is not read at all (with 32 buffers, a sweep of the AN4 test
data reads 920 of its 948 utterances, 13 of them twice).
"""

from __future__ import annotations

from typing import Any, Hashable, Mapping, Sequence

import numpy as np

from .._mt19937 import MT19937_64
from ._deserializer import Deserializer, pad_sequences
from ._minibatch_data import Minibatch, MinibatchData
from ._source import MinibatchSource

__all__ = ["UtteranceSource", "utterance_order", "AUTO_RANDOMIZATION_RANGE"]

#: cntk.exe's ``randomize = "auto"``: a window (in frames) that holds every chunk
AUTO_RANDOMIZATION_RANGE = ((1 << 64) - 1) >> 2
_CHUNK_FRAMES = 15 * 60 * 100        # the reader's chunks: 15 minutes of 10 ms frames
_CHUNK_UTTERANCES = (1 << 16) - 1
_STATE_VERSION = "utterance-1"


def _chunks(lengths: Sequence[int]) -> list[list[int]]:
    """Utterances counted off into chunks: a chunk is closed once it holds more than 15 minutes
    (so chunks run a little over)."""
    chunks: list[list[int]] = []
    frames = 0
    for i, n in enumerate(lengths):
        if not chunks or frames > _CHUNK_FRAMES or len(chunks[-1]) >= _CHUNK_UTTERANCES:
            chunks.append([])
            frames = 0
        chunks[-1].append(i)
        frames += int(n)
    return chunks


def utterance_order(lengths: Sequence[int], sweep: int,
                    randomization_range: int = AUTO_RANDOMIZATION_RANGE) -> np.ndarray:
    """The utterances (indices into ``lengths``, the frames of each) of sweep ``sweep`` in the
    order cntk.exe's legacy reader gave them with ``useMersenneTwisterRand = true``.

    The utterances are counted off into chunks of 15 minutes; a ``std::mt19937_64`` seeded
    with the sweep shuffles the chunks (each place swapped with any place), and a second one,
    seeded the same, swaps each utterance position with a random one whose utterance and own
    chunk stay within ``randomization_range / 2`` frames of each other's chunk (the window;
    ``randomize = "auto"`` takes every chunk).
    """
    chunks = _chunks(lengths)
    rng = MT19937_64(sweep)
    refs = list(range(len(chunks)))
    for i in range(len(refs)):
        j = rng() % len(refs)
        refs[i], refs[j] = refs[j], refs[i]
    frames = np.array([sum(int(lengths[u]) for u in chunks[c]) for c in refs], np.int64)
    count = np.array([len(chunks[c]) for c in refs], np.int64)
    ts = np.concatenate([[0], np.cumsum(frames)])
    first = np.concatenate([[0], np.cumsum(count)])
    half = randomization_range // 2
    windows, begin, end = [], 0, 1
    for k in range(len(refs)):
        while ts[k] - ts[begin] > half:
            begin += 1
        while end < len(refs) and ts[end + 1] - ts[k] < half:
            end += 1
        windows.append((begin, end))
    defining = np.repeat(np.arange(len(refs)), count)           # position -> its chunk
    home = defining.copy()                                      # position -> its utterance's chunk
    utterances = np.array([u for c in refs for u in chunks[c]], np.int64)
    rng = MT19937_64(sweep)
    for i in range(len(utterances)):
        wb, we = windows[defining[i]]
        low, span = int(first[wb]), int(first[we] - first[wb])
        while True:
            j = low + rng() % span
            if j == i:
                break
            jb, je = windows[defining[j]]
            if not (wb <= home[j] < we and jb <= home[i] < je):
                continue
            utterances[[i, j]] = utterances[[j, i]]
            home[[i, j]] = home[[j, i]]
            break
    return utterances


class _Iterator:
    """cntk.exe's minibatch iterator over the timeline of sweeps, for one epoch: each step a
    sequence of whole utterances (see the module's docstring)."""

    def __init__(self, source: "UtteranceSource", epoch: int, epoch_size: int, request: int):
        self.source, self.request = source, request
        self.start, self.end = epoch * epoch_size, (epoch + 1) * epoch_size
        total = source.sweep_size
        self.sweep = self.start // total
        starts = source.sweep_starts(self.sweep)
        self.pos = int(np.searchsorted(starts, self.start - self.sweep * total))
        if self.pos == len(starts):            # the epoch starts in the sweep's last utterance
            self.sweep, self.pos = self.sweep + 1, 0
        self.current = self._fetch()

    def _fetch(self) -> tuple[list[int], int, bool] | None:
        """(utterances, sweep, ends the sweep) of the step at the current place, or None."""
        src, total = self.source, self.source.sweep_size
        order, starts = src.sweep_order(self.sweep), src.sweep_starts(self.sweep)
        at = self.sweep * total + int(starts[self.pos])
        if at >= self.end:
            return None
        wanted = min(self.request, self.end - at)
        take, frames = [int(order[self.pos])], int(src.lengths[order[self.pos]])
        stop = self.pos + 1
        while src._join_short and stop < len(order) and \
                frames + int(src.lengths[order[stop]]) < wanted:
            frames += int(src.lengths[order[stop]])
            take.append(int(order[stop]))
            stop += 1
        self.next_pos = stop
        return take, self.sweep, stop == len(order)

    def advance(self) -> None:
        self.pos = self.next_pos
        if self.pos == len(self.source.sweep_order(self.sweep)):
            self.sweep, self.pos = self.sweep + 1, 0
        self.current = self._fetch()


def sequences_minibatch(source: MinibatchSource, input_map: Mapping[Hashable, Any] | None,
                        rows: Any, end_of_sweep: bool) -> Minibatch:
    """A minibatch of one sequence a row, for the sources that place sequences themselves
    (this one, the truncated and the language-model sentence sources): ``rows(name)`` gives
    the rows' steps of stream ``name``, padded here."""
    result = Minibatch()
    for key, info in source._resolve_input_map(input_map):
        parts = rows(info.name)
        padded = pad_sequences(parts, parts[0].shape[1:], parts[0].dtype)
        result[key] = MinibatchData(padded.data, padded.num_samples, padded.rows,
                                    bool(end_of_sweep), padded.lengths, info.is_sparse)
    return result


class UtteranceSource(MinibatchSource):
    """Minibatches of whole utterances as cntk.exe's legacy ``HTKMLFReader`` made them with
    ``frameMode = false``: ``parallel`` buffers, the utterances of a sweep in
    :func:`utterance_order`, epochs cut on its timeline of frames (module docstring).

    The minibatch size a caller asks for is only the iterator's request (utterances shorter
    together than it are given as one sequence, as cntk.exe did); an epoch ends when this
    source says so (``{}``).  :meth:`start_epoch` starts epoch ``epoch`` of ``epoch_size``
    samples (``Trainer.fit`` calls it: cntk.exe's ``StartMinibatchLoop``); reading without it
    reads one sweep (epoch 0 of one sweep), then starts over.

    Args:
        deserializers: joined by key as in :class:`MinibatchSource`; every stream is a sequence.
        parallel: buffers (parallel sequences) a minibatch has.
        randomize: the order of :func:`utterance_order` (else the file order).
        randomization_range: cntk.exe's ``randomize`` window in frames.
        max_utterance_length: longer utterances are left out (cntk.exe's
            ``maxUtteranceLength``, 10000 frames by default).
        join_short: give utterances shorter together than the request as one sequence, as
            cntk.exe's utterance mode did (the default); False: one utterance a sequence
            (a truncated reader's utterances read whole, whose state cntk.exe restarted).
    """

    def __init__(self, deserializers: Deserializer | Sequence[Deserializer], parallel: int,
                 randomize: bool = True,
                 randomization_range: int = AUTO_RANDOMIZATION_RANGE,
                 max_utterance_length: int = 10000, join_short: bool = True):
        super().__init__(deserializers, randomize=False)
        if self._lengths is None or not all(s.is_sequence for s in self._streams.values()):
            raise ValueError("UtteranceSource: every stream must be a sequence stream")
        if int(parallel) < 1:
            raise ValueError(f"UtteranceSource: parallel must be >= 1, got {parallel}")
        self.parallel = int(parallel)
        self.lengths = np.asarray(self._lengths, np.int64)
        self._kept = np.flatnonzero(self.lengths <= int(max_utterance_length))
        self._sweep_frames = int(self.lengths[self._kept].sum())
        if not len(self._kept):
            raise ValueError(f"UtteranceSource: every utterance is longer than "
                             f"max_utterance_length = {max_utterance_length} frames")
        self._shuffle = bool(randomize)
        self._join_short = bool(join_short)
        self._range = int(randomization_range)
        self._sweeps: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._iter: _Iterator | None = None
        self._buffers: list[tuple[list[int], int, bool] | None] = []
        self._no_data = True
        self._unplaced: dict[int, int] = {}     # id of a buffered sequence -> its sweep
        self._sweep_ends: set[int] = set()      # sweeps whose last sequence is placed

    # -- the order of a sweep

    @property
    def sweep_size(self) -> int:
        """Frames in one sweep (of the utterances kept)."""
        return self._sweep_frames

    def sweep_order(self, sweep: int) -> np.ndarray:
        return self._sweep(sweep)[0]

    def sweep_starts(self, sweep: int) -> np.ndarray:
        """Each position's first frame within its sweep."""
        return self._sweep(sweep)[1]

    def _sweep(self, sweep: int) -> tuple[np.ndarray, np.ndarray]:
        if sweep not in self._sweeps:
            kept = self._kept
            order = (kept[utterance_order(self.lengths[kept], sweep, self._range)]
                     if self._shuffle else kept)
            starts = np.concatenate([[0], np.cumsum(self.lengths[order])[:-1]])
            self._sweeps = {k: v for k, v in self._sweeps.items() if k >= sweep - 1}
            self._sweeps[sweep] = (order, starts)
        return self._sweeps[sweep]

    # -- epochs and buffers

    def start_epoch(self, epoch: int, epoch_size: int, minibatch_size: int) -> None:
        """Start epoch ``epoch`` (from 0) of ``epoch_size`` samples, read with iterator
        requests of ``minibatch_size`` (cntk.exe's ``StartMinibatchLoop``)."""
        self._iter = _Iterator(self, int(epoch), int(epoch_size), int(minibatch_size))
        self._no_data = self._iter.current is None
        self._unplaced, self._sweep_ends = {}, set()
        self._buffers = [None] * self.parallel
        for slot in range(self.parallel):
            self._renew(slot)

    def _renew(self, slot: int) -> bool:
        if self._no_data:
            if slot == 0:
                self._buffers[0] = None          # (cntk.exe cleared only the first buffer)
            return False
        self._buffers[slot] = self._iter.current
        self._unplaced[id(self._iter.current)] = self._iter.current[1]
        self._iter.advance()
        self._no_data = self._iter.current is None
        return True

    def _frames(self, slot: int) -> int:
        unit = self._buffers[slot]
        return 0 if unit is None else int(self.lengths[unit[0]].sum())

    def _pack(self) -> list[tuple[list[int], int, bool]] | None:
        """The sequences of the next minibatch, in the order cntk.exe placed them."""
        if self._no_data and self._buffers[0] is None:
            return None
        n = self.parallel
        filled = [self._frames(s) for s in range(n)]
        steps = max(filled)
        placed = []
        for slot in range(n):
            if filled[slot]:
                placed.append(self._buffers[slot])
            self._renew(slot)
        src = 0
        while src < n:
            frames = self._frames(src)
            target = next((d for d in range(n) if frames and frames + filled[d] < steps), None)
            if target is None:
                src += 1
                continue
            placed.append(self._buffers[src])
            filled[target] += frames
            self._renew(src)
        for unit in placed:
            self._unplaced.pop(id(unit), None)
            if unit[2]:
                self._sweep_ends.add(unit[1])
        return placed

    def _ends_sweep(self) -> bool:
        """Whether the minibatch just packed completes a sweep: its last sequence is placed and
        no earlier one of that sweep waits in a buffer (once the iterator is done, the epoch's
        last minibatch: the repeated sequences before it are of the sweep too)."""
        if self._no_data and self._buffers[0] is not None:
            return False
        if self._no_data:
            # the epoch's last minibatch: a sequence still waiting in a buffer is never read
            # (cntk.exe's quirk above), so a sweep whose end it held ends here too
            for unit in self._buffers:
                if unit is not None and id(unit) in self._unplaced and unit[2]:
                    self._sweep_ends.add(unit[1])
            self._unplaced = {}
        done = {s for s in self._sweep_ends if all(w > s for w in self._unplaced.values())}
        self._sweep_ends -= done
        return bool(done)

    # -- reading

    def next_minibatch(self, minibatch_size_in_samples: int,
                       input_map: Mapping[Hashable, Any] | None = None, device: Any = None,
                       num_data_partitions: int | None = None,
                       partition_index: int | None = None) -> dict:
        """The next minibatch of the epoch (``{}`` at its end); see the class docstring."""
        if (num_data_partitions or 1) > 1:
            raise ValueError("UtteranceSource: reading in data partitions is not supported")
        if self._iter is None:
            self.start_epoch(0, self.sweep_size, int(minibatch_size_in_samples))
        placed = self._pack()
        if placed is None:
            self._iter = None
            return {}
        ids = np.array([u for unit, _, _ in placed for u in unit], np.int64)
        sweeps = np.array([s for unit, s, _ in placed for _ in unit], np.int64)
        batch = self._composite.materialize(ids, sweeps, np.zeros_like(ids), self._seed)
        bounds = np.cumsum([0] + [len(unit) for unit, _, _ in placed])
        def rows(name: str) -> list[np.ndarray]:
            b = batch[name]
            return [np.concatenate([b.data[k, :int(b.lengths[k])] for k in range(lo, hi)])
                    for lo, hi in zip(bounds[:-1], bounds[1:])]
        return sequences_minibatch(self, input_map, rows, self._ends_sweep())

    # -- checkpoints: an epoch starts afresh (start_epoch), so there is no position to keep

    def get_checkpoint_state(self) -> dict:
        return {"version": _STATE_VERSION, "parallel": self.parallel,
                "sweep_length": self._sweep_length}

    def restore_from_checkpoint(self, state: Mapping[str, Any]) -> None:
        if state.get("version") != _STATE_VERSION or \
                state.get("sweep_length") != self._sweep_length:
            raise ValueError("the checkpoint was not taken on this utterance-mode reader")
        self._iter = None
