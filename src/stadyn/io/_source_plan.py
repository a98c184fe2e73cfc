"""Where a :class:`~stadyn.io.MinibatchSource` reads: each sweep's order of sequences
(CNTK 2.7's randomized order, ``_cntk_order.py``, or the file order), the sequence at a global
position, and the plan of a minibatch -- the positions it takes and the samples they count,
where the data ends (``max_sweeps``, ``max_samples``, an epoch's end).  Sequences that count
other samples than they deliver (``Deserializer.counted_lengths``) fill minibatches and end
sweeps by their counts.  A mix-in of ``MinibatchSource`` (``_source.py``), whose state it
reads: the composite, the sweep length, the lengths, the randomization, the limits."""

from __future__ import annotations

import numpy as np

from ._cntk_order import block_layout, block_order, tumbling_order
from ._partitions import END_OF_ENDLESS

__all__ = ["SourcePlan", "INFINITELY_REPEAT"]

#: ``max_samples`` / ``max_sweeps`` value meaning "never stop" (CNTK's SIZE_MAX).
INFINITELY_REPEAT = (1 << 64) - 1


class SourcePlan:
    """The orders and minibatch plans of ``MinibatchSource`` (see the module docstring)."""

    def _order(self, sweep: int) -> np.ndarray:
        return self._sweep_order(
            sweep, None if self._cursor is None else self._cursor.sequence_seed_of(sweep))

    def _sweep_order(self, sweep: int, sequence_seed: int | None) -> np.ndarray:
        """Sweep ``sweep``'s order with its sequences swapped with ``sequence_seed`` (``None``:
        CNTK's own), kept for the last three asked (the reader's and ``BlockCursor``'s)."""
        key = (sweep, sequence_seed)
        order = self._orders.get(key)
        if order is None:
            order = self._cntk_order(*key)
            self._orders[key] = order
            while len(self._orders) > 3:
                self._orders.popitem(last=False)
        return order

    def _cntk_order(self, sweep: int, sequence_seed: int | None = None) -> np.ndarray:
        window, in_samples = self._window
        if self._composite.randomizer == "tumbling":
            if in_samples:   # CNTK grows such a window chunk by chunk: here, its mean in chunks
                per_chunk = self.sweep_size / max(len(self._chunks), 1)
                window = max(1, round(window / max(per_chunk, 1)))
            return tumbling_order(self._chunks, self._seed, sweep, window)
        return block_order(self._chunks, self._seed + sweep, window, **self._block_window(),
                           sequence_seed=sequence_seed)

    def _block_window(self) -> dict:
        samples = None
        if self._window[1] and self._lengths is not None:
            bounds = np.concatenate([[0], np.cumsum(self._chunks)]).astype(np.int64)
            total = np.concatenate([[0], np.cumsum(self._lengths)]).astype(np.int64)
            samples = np.diff(total[bounds])
        return {"window_in_samples": self._window[1], "chunk_samples": samples}

    def _block_layout(self, sweep: int):
        return block_layout(self._chunks, self._seed + sweep, self._window[0],
                            **self._block_window())

    def _sample_ids(self, positions: np.ndarray) -> np.ndarray:
        n = self._sweep_length
        within = positions % n
        if not self._randomize:
            return within
        ids = np.empty_like(positions)
        sweeps = positions // n
        for sweep in np.unique(sweeps).tolist():
            sel = sweeps == sweep
            ids[sel] = self._order(sweep)[within[sel]]
        return ids

    def _exhausted(self, position: int, samples: int) -> bool:
        if self._sweep_length == 0 or samples >= min(END_OF_ENDLESS, self._epoch_end):
            return True     # (no data; a partition at the end of endless data; the epoch's end)
        # (with counted lengths CNTK's sweeps end where the samples counted reach theirs)
        swept = position if self._counted is None else samples
        if self._max_sweeps != INFINITELY_REPEAT and \
                swept >= self._max_sweeps * self._sweep_length:
            return True
        return self._max_samples != INFINITELY_REPEAT and samples >= self._max_samples

    def _plan(self, position: int, samples: int, n: int) -> tuple[int, int]:
        """(end position, samples taken) of a minibatch of n samples starting at ``position``."""
        if self._exhausted(position, samples):
            return position, 0
        if self._counted is not None:
            return self._plan_counted(position, samples, n)
        if self._lengths is None:
            take = n
            if self._max_sweeps != INFINITELY_REPEAT:
                take = min(take, self._max_sweeps * self._sweep_length - position)
            if self._max_samples != INFINITELY_REPEAT:
                take = min(take, self._max_samples - samples)
            if self._epoch_end != INFINITELY_REPEAT:   # plain samples: cntk.exe's reader
                take = min(take, self._epoch_end - samples)     # stops at the epoch end exactly
                # (sequences are whole: _exhausted stops after the one that crosses it)
            return position + take, take
        return self._fill(position, samples, n, self._lengths)

    def _fill(self, position: int, samples: int, n: int,
              lengths: np.ndarray) -> tuple[int, int]:
        """(end position, samples taken) of whole sequences of ``lengths`` from ``position``
        until n samples are taken (a sequence crossing n is taken only as the first) or the
        source is exhausted."""
        end, taken = position, 0
        while not self._exhausted(end, samples + taken):
            length = int(lengths[self._sample_ids(np.array([end]))[0]])
            if taken and taken + length > n:
                break
            taken += length
            end += 1
            if taken >= n:
                break
        return end, taken

    def _plan_counted(self, position: int, samples: int, n: int) -> tuple[int, int]:
        """``_plan`` where sequences count other samples than they deliver (``_counted``): a
        minibatch fills by the counts.  In file order the cursor goes on to the next sequence
        at a sweep's end (NoRandomizer.cpp:69-83).  Randomized, as CNTK 2.7's
        ``BlockRandomizer::GetNextSequences`` (BlockRandomizer.cpp:124-156, 245-333): a sweep
        ends where the samples counted reach the sweep's (one a sequence), its last sequences
        not read; a walk within a sweep takes no more than the sweep's samples left, except a
        minibatch's first sequence; a minibatch that reaches a sweep's end goes on at the next
        sweep's first sequence (:meth:`_counted_start`) with sequences that fit in what it
        still wants, ending where none does.  The positions such a minibatch reads are
        :meth:`_plan_positions`'s."""
        if not self._randomize:
            return self._fill(position, samples, n, self._counted)
        sweep, counted = self._sweep_length, self._counted
        end, taken, first = position, 0, True
        while not self._exhausted(end, samples + taken):
            at = samples + taken
            end = max(end, at // sweep * sweep)         # (a new sweep: its first sequence)
            cap, got = min(n - taken, sweep - at % sweep), 0
            while end < (at // sweep + 1) * sweep and not self._exhausted(end, at + got):
                length = int(counted[self._sample_ids(np.array([end]))[0]])
                if not first and got + length > cap:
                    break
                got, end, first = got + length, end + 1, False
            taken += got
            if not got or taken >= n or at % sweep + got < sweep:
                break       # (not at the sweep's end, or nothing more fits: the minibatch ends)
        return end, taken

    def _plan_positions(self, start: int, samples: int, end: int) -> np.ndarray:
        """The global positions a minibatch planned from ``start`` (``samples`` counted
        before it) to ``end`` reads: all of them, except where a randomized sweep of counted
        sequences ended early -- its last sequences, up to the next sweep's first, are not
        read (:meth:`_plan_counted`)."""
        if self._counted is None or not self._randomize:
            return np.arange(start, end, dtype=np.int64)
        positions, p = [], self._counted_start(start, samples)  # (a seek can stop past
        while p < end:                                  # its sweep: CNTK reads the next's)
            positions.append(p)
            samples += int(self._counted[self._sample_ids(np.array([p]))[0]])
            p = self._counted_start(p + 1, samples)
        return np.array(positions, dtype=np.int64)

    def _counted_start(self, position: int, samples: int) -> int:
        """Where a randomized source with counted lengths reads next: the first position of
        the sweep its counted ``samples`` are in, where the sweep before ended early."""
        if self._counted is None or not self._randomize:
            return position
        return max(position, samples // self._sweep_length * self._sweep_length)

    def _seek_counted(self, samples: int) -> tuple[int, int]:
        """(position, samples) where CNTK 2.7's ``NoRandomizer::SetState`` sets a reader of
        counted sequences for ``samples`` (a new minibatch size, a restore): the sweep's chunk
        holding that sample (a sample a sequence), then its sequences walked by their counts
        until they reach it; the samples move on to the end of the sequence reached
        (NoRandomizer.cpp:252-290)."""
        sweep = self._sweep_length
        base, within = divmod(int(samples), sweep)
        bounds = np.concatenate([[0], np.cumsum(self._composite.chunk_sizes())])
        first = int(bounds[np.searchsorted(bounds, within, side="right") - 1])
        got, k = 0, first
        while got < within - first:
            got += int(self._counted[k % sweep])
            k += 1
        return base * sweep + k, int(samples) - (within - first) + got
