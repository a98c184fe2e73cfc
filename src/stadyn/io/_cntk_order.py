"""CNTK 2.7's randomized sample order, reproduced: the same sequences in the same order.

CNTK shuffles with a 64-bit Mersenne Twister (``std::mt19937_64``) and its own distribution
(``begin + rng() % (end - begin)``), so its order is a pure function of the chunks, the
window and the seed, and can be computed here to the sample. Two randomizers, both seeded with
``randomization_seed + sweep``:

- :func:`block_order` (CNTK's ``BlockRandomizer``, the reader of the built-in deserializers: text
  format, images, binary format, HTK): the chunks of a sweep are shuffled, then each sequence
  is swapped with a random one from the randomization window around its chunk (a number of
  chunks, or of samples), so the order stays within a bounded number of chunks.
- :func:`tumbling_order` (CNTK's ``LTTumblingWindowRandomizer``, the reader of a Python
  ``UserDeserializer``): the chunks of a sweep are shuffled, then read in windows of
  ``window`` chunks (a window runs on into the next sweep), the sequences of each window's
  part within one sweep shuffled.

A deserializer says how its sweep is cut into chunks (:meth:`Deserializer.chunk_sizes`, CNTK's
chunking: one chunk per image, 32 MB of text, the chunks a binary file stores) and which
randomizer CNTK reads it with (:attr:`Deserializer.randomizer`).
"""

from __future__ import annotations

import numpy as np

from .._mt19937 import MT19937_64

__all__ = ["block_order", "block_layout", "block_chunk_positions", "block_window_chunks",
           "tumbling_order", "chunk_window_default"]

#: CNTK 2.7's ``DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS`` (4 GB of 32 MB chunks)
chunk_window_default = 128

def _shuffle_whole(values: list, rng: MT19937_64) -> None:
    """CNTK's ``RandomShuffleMT(v, rng)``: each place swapped with any place."""
    n = len(values)
    for i in range(n):
        j = rng() % n
        values[i], values[j] = values[j], values[i]


def _shuffle_range(values: list, begin: int, end: int, rng: MT19937_64) -> None:
    """CNTK's ``RandomShuffleMT(v, begin, end, rng)``: each place swapped with one after it."""
    for i in range(begin, end):
        j = i + rng() % (end - i)
        values[i], values[j] = values[j], values[i]


def _starts(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def block_chunk_positions(num_chunks: int, seed: int) -> np.ndarray:
    """Where each chunk (in file order) lands in CNTK 2.7's shuffled chunk order of a sweep
    (``seed`` is ``randomization_seed + sweep``, as for :func:`block_order`). CNTK's block
    randomizer deals a sequence to data partition ``position % num_data_partitions`` of its
    chunk's shuffled position.

    Example:
        >>> block_chunk_positions(1, seed=0).tolist()
        [0]
    """
    order = list(range(int(num_chunks)))
    _shuffle_whole(order, MT19937_64(seed))
    positions = np.empty(len(order), dtype=np.int64)
    positions[np.array(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int64)
    return positions


def block_order(chunk_sequences, seed: int, window: int = chunk_window_default, *,
                window_in_samples: bool = False, chunk_samples=None,
                sequence_seed: int | None = None) -> np.ndarray:
    """The sequences of one sweep in the order CNTK 2.7's block randomizer delivers them.

    Args:
        chunk_sequences: sequences per chunk, in file order (sequence ids number the chunks'
            sequences one after the other).
        seed: ``randomization_seed + sweep``.
        window: the randomization window, in chunks (or samples with ``window_in_samples``).
        chunk_samples: samples per chunk (for a window in samples; default: the sequences).
        sequence_seed: the seed of the sequences' swaps when it is not ``seed`` (CNTK 2.7's
            ``SequenceRandomizer::Seek`` starts a sweep over with the sweep's number alone:
            ``_block_restore.py``); the chunks are shuffled with ``seed`` all the same.

    Example:
        >>> block_order([10], seed=0).tolist()     # CNTK 2.7: one chunk of ten, seed 0
        [4, 7, 3, 9, 1, 2, 8, 6, 5, 0]
    """
    sizes = np.asarray(chunk_sequences, dtype=np.int64)
    n = len(sizes)
    samples = sizes if chunk_samples is None else np.asarray(chunk_samples, dtype=np.int64)
    original = _starts(sizes)
    order = list(range(n))
    _shuffle_whole(order, MT19937_64(seed))
    by_position = np.array(order, dtype=np.int64)
    seq_start = _starts(sizes[by_position])          # sequence positions of the shuffled chunks
    sample_start = _starts(samples[by_position])
    begin, end = _windows(n, window, window_in_samples, sample_start)
    seqs = np.concatenate([np.arange(original[c], original[c + 1]) for c in order]) \
        if n else np.zeros(0, np.int64)
    seq_ids = seqs.tolist()                          # the sequences in shuffled-chunk order
    rng = MT19937_64(seed if sequence_seed is None else sequence_seed)
    if n and bool((begin == 0).all() and (end == n).all()):
        # one window holds every chunk (one chunk, or fewer than the window): no draw is
        # refused, so the draws are known in advance
        total = len(seq_ids)
        targets = (rng.take(total) % np.uint64(total)).tolist()
        for t, j in enumerate(targets):
            seq_ids[t], seq_ids[j] = seq_ids[j], seq_ids[t]
        return np.array(seq_ids, dtype=np.int64)
    chunk_at = np.repeat(np.arange(n), sizes[by_position]).tolist()
    home = list(chunk_at)                            # the shuffled chunk a sequence came from
    pos_begin = seq_start[begin].tolist()
    pos_end = seq_start[end].tolist()
    wb, we = begin.tolist(), end.tolist()
    done, cursor = 0, 0
    while done < n:                                  # CNTK randomizes as its cursor moves on
        nxt = we[done]
        while nxt < n and wb[nxt] <= done:
            nxt += 1
        first = 0 if cursor == 0 else int(seq_start[cursor])
        last = int(seq_start[nxt])
        for t in range(first, last):
            ct = chunk_at[t]
            lo, span = pos_begin[ct], pos_end[ct] - pos_begin[ct]
            b, e = wb[ct], we[ct]
            while True:
                j = lo + rng() % span
                cj = chunk_at[j]
                if b <= home[j] < e and wb[cj] <= home[t] < we[cj]:
                    break
            seq_ids[t], seq_ids[j] = seq_ids[j], seq_ids[t]
            home[t], home[j] = home[j], home[t]
        done += 1
        cursor = nxt
    return np.array(seq_ids, dtype=np.int64)


def block_layout(chunk_sequences, seed: int, window: int = chunk_window_default, *,
                 window_in_samples: bool = False, chunk_samples=None):
    """(first sequence position of each shuffled chunk, then the sweep's length; each shuffled
    chunk's randomization window [begin, end) in shuffled chunks) of the sweep
    :func:`block_order` randomizes with the same arguments.

    Example:
        >>> starts, begin, end = block_layout([2, 3], seed=0, window=1)
        >>> starts.tolist(), begin.tolist(), end.tolist()
        ([0, 2, 5], [0, 1], [1, 2])
    """
    sizes = np.asarray(chunk_sequences, dtype=np.int64)
    samples = sizes if chunk_samples is None else np.asarray(chunk_samples, dtype=np.int64)
    order = list(range(len(sizes)))
    _shuffle_whole(order, MT19937_64(seed))
    by_position = np.array(order, dtype=np.int64)
    begin, end = _windows(len(sizes), window, window_in_samples,
                          _starts(samples[by_position]))
    return _starts(sizes[by_position]), begin, end


def block_window_chunks(chunk_sequences, seed: int, window: int = chunk_window_default, *,
                        window_in_samples: bool = False, chunk_samples=None):
    """A function of sweep positions giving the chunks (their numbers in the file) CNTK
    2.7's block randomizer holds in memory to deliver them, in the order it loads them: the
    union of the randomization windows of the shuffled chunks they fall in, every chunk of
    it loaded before the minibatch is (``SequenceRandomizer::GetNextSequenceDescriptions``
    widens the required range by each chunk's window; ``BlockRandomizer::LoadDataChunks``
    loads it in shuffled order, BlockRandomizer.cpp:390-419, so a text chunk's malformed
    inputs are counted in that order).  Arguments as for :func:`block_layout`.

    Example:
        >>> chunks = block_window_chunks([2, 3, 2], seed=0, window=1)
        >>> chunks([0]).tolist(), sorted(chunks([0, 6]).tolist())
        ([0], [0, 1, 2])
    """
    sizes = np.asarray(chunk_sequences, dtype=np.int64)
    samples = sizes if chunk_samples is None else np.asarray(chunk_samples, dtype=np.int64)
    order = list(range(len(sizes)))
    _shuffle_whole(order, MT19937_64(seed))
    by_position = np.array(order, dtype=np.int64)
    starts = _starts(sizes[by_position])
    begin, end = _windows(len(sizes), window, window_in_samples,
                          _starts(samples[by_position]))

    def chunks(positions, count: int = 1, index: int = 0) -> np.ndarray:
        at = np.searchsorted(starts, np.asarray(positions, dtype=np.int64), side="right") - 1
        if not len(at):
            return np.zeros(0, np.int64)
        shuffled = np.arange(int(begin[at].min()), int(end[at].max()))
        # (read as partition index of count, only the shuffled chunks that are its own)
        return by_position[shuffled[shuffled % count == index]]
    return chunks


def _windows(n: int, window: int, in_samples: bool, sample_start: np.ndarray):
    """Each shuffled chunk's randomization window [begin, end) in chunks (CNTK's rules)."""
    begin = np.zeros(n, np.int64)
    end = np.zeros(n, np.int64)
    half = window // 2
    if in_samples:
        b, e = 0, 1
        for i in range(n):
            while sample_start[i] - sample_start[b] > half:
                b += 1
            b, e = min(b, i), max(e, i + 1)
            while e < n and sample_start[e + 1] - sample_start[i] < half:
                e += 1
            begin[i], end[i] = b, e
        return begin, end
    size = 1 if window == 0 else window
    for i in range(n):
        b = i - half if i > half else 0
        e = b + size
        if e > n:
            e, b = n, (n - size if n > size else 0)
        begin[i], end[i] = b, e
    return begin, end


def tumbling_order(chunk_sequences, seed: int, sweep: int,
                   window: int = chunk_window_default) -> np.ndarray:
    """The sequences of sweep ``sweep`` in the order CNTK 2.7 reads a ``UserDeserializer``
    (its local-timeline randomizer; one worker; ``seed`` is ``randomization_seed``).

    Example:
        >>> tumbling_order([10], seed=0, sweep=0).tolist()    # CNTK 2.7: one chunk of ten
        [4, 6, 3, 9, 8, 0, 2, 7, 5, 1]
    """
    sizes = np.asarray(chunk_sequences, dtype=np.int64)
    n = len(sizes)
    original = _starts(sizes)
    order = list(range(n))
    _shuffle_whole(order, MT19937_64(seed + sweep))
    window = max(int(window), 1)
    out: list[int] = []
    # windows tile the chunk timeline from its start; a part is a window's chunks in this sweep
    first_global = sweep * n
    cuts = sorted({0, n} | {g - first_global for g in range(
        (first_global + window - 1) // window * window, first_global + n, window)})
    for a, b in zip(cuts, cuts[1:]):
        part = [s for c in order[a:b] for s in range(original[c], original[c + 1])]
        _shuffle_range(part, 0, len(part), MT19937_64(a + sweep + seed))
        out += part
    return np.array(out, dtype=np.int64)
