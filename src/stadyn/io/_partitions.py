"""Which sequences a data partition reads: CNTK 2.7's rule for ``num_data_partitions > 1``.

CNTK 2.7's sequence packer gives partition r of W the local minibatch size
``M // W`` (one more when ``r < M % W``, at least 1) and no global limit
(``SequencePacker::SetConfiguration``, Source/Readers/ReaderLib/SequencePacker.cpp:86-100).
Its randomizer then walks the global sequence stream from the partition's own cursor
(``NoRandomizer::GetNextSequenceDescriptions``, NoRandomizer.cpp:106-146;
``BlockRandomizer::GetNextSequenceDescriptions``, BlockRandomizer.cpp:245-320):

- a sequence is the partition's when its sequence position ``p % W == r`` (no
  randomization), ``p`` counted from the first sequence of the sweep where the reader was
  last set (its first read, a change of minibatch size or partition, a restore:
  ``CompositeMinibatchSource::GetNextMinibatch`` sets its position again and
  ``NoRandomizer::SetState`` counts from that sweep's start) and then on across sweeps, so
  after a sweep of odd length the partitions' turns swap until the reader is set again;
  or (randomization) when the shuffled position of its chunk ``% W == r``: whole chunks go
  to a partition, so a file of one chunk is all partition 0's;
- other partitions' sequences are stepped over;
- the partition's sequences are taken until its local size is reached; a sequence that would
  go past it stays for the next minibatch, except the first one, which is always taken;
- without randomization the walk stops as soon as the local size is reached; with it, the walk
  goes on over other partitions' sequences up to the partition's next sequence or the end of
  the sweep (so the minibatch that ends a partition's part of a sweep says ``end_of_sweep``);
- the walk stops where the data ends (``max_sweeps``, ``max_samples`` counted over the global
  stream).

Data CNTK 2.7 has no reader of (``NumpyDeserializer``: arrays, no chunks of their own) is
read the way CNTK reads unrandomized data, every W-th sequence of the (randomized) order, so
that its partitions share it rather than partition 0 reading it all.

So a partition's minibatch is never empty while the data lasts (unless no chunk is its own:
then the reader walks to the end of the data, ``max_samples`` or ``max_sweeps`` or, repeated
for ever, :data:`END_OF_ENDLESS` samples, and the source is done), and the partitions'
cursors move on independently.
"""

from __future__ import annotations

import functools

import numpy as np

from ._cntk_order import block_chunk_positions

__all__ = ["local_minibatch_size", "partition_of", "partition_walk", "END_OF_ENDLESS"]

_UNSET = (1 << 64) - 1      # an unset max_samples / max_sweeps (the source's INFINITELY_REPEAT)
#: where CNTK 2.7's reader of data repeated for ever stands once a partition with no chunk of
#: its own has walked to its end (INT64_MAX samples): nothing more is read, by any partition
END_OF_ENDLESS = (1 << 63) - 1


def local_minibatch_size(n: int, count: int, index: int) -> int:
    """Partition ``index``'s part of a minibatch of ``n`` samples over ``count`` partitions.

    Example:
        >>> [local_minibatch_size(5, 2, r) for r in (0, 1)], local_minibatch_size(1, 4, 3)
        ([3, 2], 1)
    """
    return max(1, n // count + (1 if n % count > index else 0))


@functools.lru_cache(maxsize=4)
def _chunk_positions(num_chunks: int, seed: int) -> np.ndarray:
    positions = block_chunk_positions(num_chunks, seed)   # one shuffle per sweep, not per read
    positions.flags.writeable = False
    return positions


def _by_chunks(source) -> bool:
    return bool(source._randomize) and source._composite.chunked


def partition_of(source, positions: np.ndarray, ids: np.ndarray, count: int,
                 index: int) -> np.ndarray:
    """Whether each of ``positions`` (its sample ``ids``) is partition ``index``'s of
    ``count``: ``(position - base) % count == index``, ``base`` the first position of the
    sweep the reader was last set at (``MinibatchSource._reconfigure``), or (randomized, a
    chunked source) its chunk's shuffled place in its sweep ``% count == index``."""
    if not _by_chunks(source):
        return (positions - source._partition_base) % count == index
    starts = np.cumsum(source._chunks)
    chunk = np.searchsorted(starts, ids, side="right")
    sweeps = positions // source._sweep_length
    local = np.empty(len(positions), dtype=bool)
    for sweep in np.unique(sweeps).tolist():
        sel = sweeps == sweep
        shuffled = _chunk_positions(len(source._chunks), source._seed + sweep)
        local[sel] = shuffled[chunk[sel]] % count == index
    return local


def _nothing_to_read(source) -> tuple[np.ndarray, int, int]:
    """A partition none of whose chunks is in a sweep (randomized): CNTK 2.7's reader walks
    on to the end of the data, so the source's position is there and the source has nothing
    more to give, to any partition: ``max_samples``, else ``max_sweeps`` sweeps, else -- data
    repeated for ever -- :data:`END_OF_ENDLESS` samples (measured: ``minibatchSourcePosition``
    9223372036854775807)."""
    none = np.zeros(0, np.int64)
    if source._max_samples != _UNSET:
        ends = [source._max_samples]
        if source._max_sweeps != _UNSET:
            ends.append(source._max_sweeps * source.sweep_size)
        return none, source._position, max(0, min(ends) - source._samples)
    if source._max_sweeps == _UNSET:
        return none, source._position, max(0, END_OF_ENDLESS - source._samples)
    end = source._max_sweeps * source._sweep_length
    return none, end, source._max_sweeps * source.sweep_size - source._samples


def partition_walk(source, n: int, count: int, index: int) -> tuple[np.ndarray, int, int]:
    """(this partition's positions, end position, global samples stepped) of the next
    minibatch of ``n`` samples, starting at the source's position."""
    limit = local_minibatch_size(n, count, index)
    if source._counted is not None and source._randomize:
        return _counted_walk(source, limit, count, index)
    position, samples = source._position, source._samples
    sweep = max(source._sweep_length, 1)
    randomized = _by_chunks(source)
    mine: list[int] = []
    taken = walked = 0
    while True:
        block = np.arange(position, position + max(count * limit, 16), dtype=np.int64)
        ids = source._sample_ids(block)
        # (samples as CNTK counts them: a base64 sequence of several lines counts each,
        # source._counted, and its sweep then ends by samples: source._exhausted)
        counts = source._lengths if source._counted is None else source._counted
        lengths = (np.ones(len(block), np.int64) if counts is None
                   else counts[ids].astype(np.int64))
        local = partition_of(source, block, ids, count, index)
        for p, length, own in zip(block.tolist(), lengths.tolist(), local.tolist()):
            if source._exhausted(p, samples + walked):
                return np.array(mine, np.int64), p, walked
            if randomized and taken >= limit and p % sweep == 0:
                return np.array(mine, np.int64), p, walked
            if own and mine and taken + length > limit:
                return np.array(mine, np.int64), p, walked
            if own:
                mine.append(p)
                taken += length
            walked += length
            if taken >= limit and not randomized:
                return np.array(mine, np.int64), p + 1, walked
            if not mine and p + 1 - source._position >= 2 * sweep:
                # a whole sweep without one of this partition's chunks: nothing to read
                return _nothing_to_read(source)
        position = block[-1] + 1


def _counted_walk(source, limit: int, count: int, index: int) -> tuple[np.ndarray, int, int]:
    """``partition_walk`` of randomized sequences that count other samples than they deliver
    (``source._counted``: a base64 sequence of several lines), as CNTK 2.7's block
    randomizer walks them (BlockRandomizer.cpp:124-156, 245-333): a sweep ends where the
    samples counted reach its own, its last sequences not read, and a walk within it takes no
    sequence past that, except the partition's first; at a sweep's end the walk goes on at
    the next sweep's first sequence while the partition wants more, with sequences that fit,
    ending where none does (``SourcePlan._plan_counted`` as one partition)."""
    position, samples = source._position, source._samples
    sweep, counted = source._sweep_length, source._counted
    mine: list[int] = []
    taken = walked = 0
    first = True
    while not source._exhausted(position, samples + walked):
        at = samples + walked
        position = max(position, at // sweep * sweep)   # (a new sweep: its first sequence)
        cap, got = sweep - at % sweep, 0
        while position < (at // sweep + 1) * sweep and \
                not source._exhausted(position, at + got):
            p = np.array([position], np.int64)
            ids = source._sample_ids(p)
            length = int(counted[ids[0]])
            own = bool(partition_of(source, p, ids, count, index)[0])
            if not first and (got + length > cap or own and taken + length > limit):
                break
            if own:
                mine.append(position)
                taken, first = taken + length, False
            got, position = got + length, position + 1
            if not mine and position - source._position >= 2 * sweep:
                # a whole sweep without one of this partition's chunks: nothing to read
                return _nothing_to_read(source)
        walked += got
        if not got or taken >= limit or at % sweep + got < sweep:
            break
        first = False
    return np.array(mine, np.int64), position, walked
