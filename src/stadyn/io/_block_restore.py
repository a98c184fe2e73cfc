"""Where CNTK 2.7's block randomizer stands, as far as a restored position depends on it.

CNTK's ``BlockRandomizer`` randomizes a sweep's sequences as its cursor moves on and forgets
the chunks its window has left behind (``SequenceRandomizer::ReleaseChunks``). Setting it to a
position (``BlockRandomizer::SetState``: a restore, the start of an epoch, a new minibatch
size) first starts the sweep over if the position is in another sweep (seed
``randomization_seed + sweep``), then seeks (``SequenceRandomizer::Seek``): a position before
the first chunk it still holds starts the sweep over with the seed ``sweep`` alone (CNTK 2.7
passes the sweep's number where its own start passes ``randomization_seed + sweep``), so the
rest of that sweep is randomized anew, its chunks in the same order
(Source/Readers/ReaderLib/BlockRandomizer.cpp SetState, SequenceRandomizer.cpp Seek and
ReleaseChunks). :class:`BlockCursor` follows the sweep, the seed its sequences were swapped
with and the furthest chunk its cursor reached, which is all that decides it.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["BlockCursor"]


class BlockCursor:
    """CNTK 2.7's block randomizer's sweep, sequence seed and furthest chunk.

    Args:
        seed: the source's ``randomization_seed``.
        sweep_length: sequences per sweep.
        layout: sweep -> (first sequence position of each shuffled chunk and the sweep's
            length, the chunks' windows' begins, their ends), ``_cntk_order.block_layout``.
        order: (sweep, sequence seed or ``None`` for CNTK's own) -> the sweep's sequence ids.
        lengths: samples per sequence id (``None``: one each).

    Example:
        >>> from stadyn.io._cntk_order import block_layout, block_order
        >>> chunks = [4, 3, 3, 2]
        >>> c = BlockCursor(3, 12, lambda s: block_layout(chunks, 3 + s, 2),
        ...                 lambda s, q: block_order(chunks, 3 + s, 2, sequence_seed=q), None)
        >>> c.set_state(0)                  # the first read starts sweep 0
        (0, 0)
        >>> c.read_to(12)                   # the cursor at the sweep's end
        >>> c.set_state(10), c.sequence_seed_of(0)   # a restore: chunk 2 on is still held
        ((10, 0), None)
        >>> c.set_state(0), c.sequence_seed_of(0)    # then the epoch's start: sweep 0 anew
        ((0, 0), 0)
    """

    def __init__(self, seed: int, sweep_length: int,
                 layout: Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]],
                 order: Callable[[int, int | None], np.ndarray], lengths: np.ndarray | None):
        self._seed = int(seed)
        self._length = int(sweep_length)
        self._layout = layout
        self._order = order
        self._lengths = lengths
        self.sweep: int | None = None
        self._seeds: dict[int, int] = {}    # sweep -> another seed its sequences were swapped
        # with (kept once the cursor has read on: the minibatch it prefetched is read later)
        self._furthest = 0                          # the furthest chunk the cursor reached
        self._last_layout: tuple | None = None      # (sweep, its layout): read every minibatch

    def sequence_seed_of(self, sweep: int) -> int | None:
        """The seed sweep ``sweep``'s sequences are swapped with, ``None`` for CNTK's own."""
        return self._seeds.get(sweep)

    def seeds(self) -> tuple[tuple[int, int], ...]:
        """Each (sweep, seed) whose sequences were swapped with another seed than CNTK's own.

        Example:
            >>> BlockCursor(3, 12, None, None, None).seeds()
            ()
        """
        return tuple(sorted(self._seeds.items()))

    def _reset(self, sweep: int, sequence_seed: int | None = None) -> None:
        self.sweep = sweep
        if sequence_seed is None or sequence_seed == self._seed + sweep:
            self._seeds.pop(sweep, None)
        else:
            self._seeds[sweep] = sequence_seed
        self._furthest = 0

    def _layout_of(self, sweep: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._last_layout is None or self._last_layout[0] != sweep:
            self._last_layout = (sweep, self._layout(sweep))
        return self._last_layout[1]

    def _chunk_of(self, starts: np.ndarray, p: int) -> int:
        return int(np.searchsorted(starts, p, side="right")) - 1

    def sample_starts(self, sweep: int) -> np.ndarray:
        """Each position's first sample in sweep ``sweep`` (and the sweep's samples last)."""
        ids = self._order(sweep, self.sequence_seed_of(sweep))
        lengths = np.ones(len(ids), np.int64) if self._lengths is None \
            else np.asarray(self._lengths, np.int64)[ids]
        return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)

    def read_to(self, position: int) -> None:
        """The reader has read up to global position ``position`` (its prefetch included)."""
        sweep = max(position - 1, 0) // self._length
        if sweep != self.sweep:         # (PrepareNewSweepIfNeeded as it reads on)
            self._reset(sweep)
        starts = self._layout_of(sweep)[0]
        self._furthest = max(self._furthest, self._chunk_of(starts, position - sweep *
                                                            self._length))

    def set_state(self, position: int, offset: int | None = None) -> tuple[int, int]:
        """``BlockRandomizer::SetState`` to global position ``position`` (``offset``: its first
        sample within its sweep, as CNTK's state holds it; default: as this sweep's order
        has it): (the position it reaches, the samples it moved past ``offset``)."""
        sweep, p = divmod(int(position), self._length)
        if sweep != self.sweep:
            self._reset(sweep)
        starts, begin, end = self._layout_of(sweep)
        samples = self.sample_starts(sweep)
        if offset is None:
            offset = int(samples[p])
        last = min(self._furthest, len(begin) - 1)
        held = min(int(begin[last]), int(np.searchsorted(end, self._furthest, side="right")))
        if offset < samples[starts[held]]:     # (Seek: before the chunks held, Reset(sweep))
            self._reset(sweep, sweep)
            samples = self.sample_starts(sweep)
        reached = int(np.searchsorted(samples, offset, side="left"))
        self._furthest = max(self._furthest, self._chunk_of(starts, reached))
        return sweep * self._length + reached, int(samples[reached]) - int(offset)
