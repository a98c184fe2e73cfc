"""CNTK's ``LMSequenceReader`` with ``nbruttsineachrecurrentiter = N`` (N >= 1): minibatches of
up to N sentences of one length, cut into pieces of the truncation length (truncated
back-propagation through time).

cntk.exe's rule (Source/Readers/LMSequenceReader/SequenceReader.cpp, ``BatchSequenceReader``):

* each epoch starts over with the sentences shuffled (``StartMinibatchLoop`` resets the
  reader; ``GetMinibatchData`` shuffles what it parsed);
* ``DetermineSequencesToProcess``: the first sentence not yet processed, in that order, and the
  next ones of the same length, up to N of them, form a group (the rows of the minibatches
  until they end); with N = 0 the group ends instead before the first sentence of the same
  length that would bring its words (``sLen``, the sentence's words with its end mark) to
  the minibatch size or more, and the group's sentences are given whole, one minibatch;
* ``GetMinibatchData``: a minibatch is the next ``minibatchSize`` steps of every sentence of
  the group (fewer at the sentences' end: the minibatch size is the truncation length, frames
  a row); the group's sentences begin and end together, so a minibatch's rows all begin their
  sentence or all go on from the previous minibatch (``mSentenceEnd`` marks the group done);
* an epoch ends when the sentences are all processed, or, checked before each minibatch, once
  the samples given out exceed the epoch size (``m_epochSamplesReturned > m_epochSize``);
* the file is read in blocks (``Parse(m_cacheBlockSize, ...)``): lines are read while the
  words read so far in the block are fewer than ``cacheBlockSize`` (50000 by default), each
  block's sentences are shuffled by ``std::shuffle(..., std::mt19937(++m_randomSeed))`` with
  ``m_randomSeed`` set to the epoch (from 0) when it starts, and groups are formed within a
  block; every epoch reads the file from its start.

The shuffle is cntk.exe's (``stadyn._mt19937.std_shuffle``: GCC 5's ``std::shuffle``, which
CNTK 2.7's Linux build used), so the groups, and the sample count of an epoch cut by
``epochSize``, are a cntk.exe log's.  :attr:`LMSentenceSource.layout` says for the minibatch
just read each row's stream,
whether it begins its sentence and whether the sentence goes on in the next minibatch (the
train command carries the recurrent state over, as for HTKMLFReader's ``truncated = true``).
"""

from __future__ import annotations

from typing import Any, Hashable, Mapping

import numpy as np

from .._mt19937 import std_shuffle
from ._deserializer import Deserializer
from ._source import MinibatchSource
from ._truncated_source import TruncatedLayout
from ._utterance_source import sequences_minibatch

__all__ = ["LMSentenceSource"]


class LMSentenceSource(MinibatchSource):
    """Minibatches of ``parallel`` sentences of one length, ``minibatch_size`` steps of each at
    a time (cntk.exe's ``LMSequenceReader`` with ``nbruttsineachrecurrentiter = parallel``;
    module docstring).

    Args:
        deserializer: the sentences (an :class:`~stadyn.io.LMSequenceDeserializer`; any
            deserializer of sequence streams is read the same way).
        parallel: the most sentences a minibatch has (cntk.exe's ``nbruttsineachrecurrentiter``);
            0: whole sentences of one length, fewer words together than the minibatch size.
        randomize: shuffle the sentences each epoch (cntk.exe always did), else the file order.
        block_words: cntk.exe's ``cacheBlockSize``: the sentences are read, shuffled and
            grouped in blocks of lines, a block ending once it holds this many words or more
            (``None``: the whole file is one block).

    Example: sentences of 3, 2, 3 and 3 steps in file order, two streams, minibatches of 2
    steps: the first group is sentences 0 and 2 (the next of length 3), read as rows
    ``[2, 2]`` then ``[1, 1]``; then sentence 1, ``[2]``; then sentence 3, ``[2]``, ``[1]``.
    """

    def __init__(self, deserializer: Deserializer, parallel: int,
                 randomize: bool = True, block_words: int | None = None):
        super().__init__([deserializer], randomize=False)
        if int(parallel) < 0:
            raise ValueError(f"LMSentenceSource: parallel must be >= 0, got {parallel}")
        if block_words is not None and int(block_words) < 1:
            raise ValueError(f"LMSentenceSource: block_words must be >= 1, got {block_words}")
        self.parallel = int(parallel)
        self.lengths = np.asarray(self._lengths, np.int64)
        self._shuffle = bool(randomize)
        words = getattr(deserializer, "word_counts", None)
        self._words = np.asarray(words() if words is not None else self.lengths + 1, np.int64)
        self._blocks = _blocks(self._words, None if block_words is None else int(block_words))
        self.layout: TruncatedLayout | None = None
        self._order: np.ndarray | None = None

    @property
    def sweep_size(self) -> int:
        """Steps (samples) in one pass over the sentences."""
        return int(self.lengths.sum())

    def start_epoch(self, epoch: int, epoch_size: int, minibatch_size: int) -> None:
        """Start epoch ``epoch`` (from 0) of ``epoch_size`` samples (0: one pass) in
        minibatches of ``minibatch_size`` steps a sentence (cntk.exe's ``StartMinibatchLoop``)."""
        if int(minibatch_size) < 1:
            raise ValueError(f"LMSentenceSource: the minibatch size (steps a sentence) must be "
                             f">= 1, got {minibatch_size}")
        self._steps = int(minibatch_size)
        self._limit = int(epoch_size) if int(epoch_size) > 0 else None
        self._random_seed = int(epoch)          # cntk.exe's m_randomSeed
        self._block = -1
        self._order = np.zeros(0, np.int64)     # the current block's sentences, shuffled
        self._done = np.zeros(len(self.lengths), bool)
        self._first = 0                       # no sentence before it in the order is left
        self._group: list[int] = []
        self._position = 0                    # steps of the group's sentences given out
        self._returned = 0
        self.layout = None

    def _next_block(self) -> bool:
        if self._block + 1 == len(self._blocks):
            return False
        self._block += 1
        block = self._blocks[self._block]
        self._random_seed += 1
        self._order = (block[std_shuffle(len(block), self._random_seed)] if self._shuffle
                       else block)
        self._first = 0
        return True

    def _next_group(self) -> bool:
        done, lengths = self._done, self.lengths
        while True:
            order = self._order
            while self._first < len(order) and done[order[self._first]]:
                self._first += 1
            if self._first < len(order):
                break
            if not self._next_block():
                return False
        head = int(order[self._first])
        group = [head]
        tokens = int(self._words[head])                 # cntk.exe's sLen: the sentence's words
        for k in order[self._first + 1:]:
            if len(group) == self.parallel:
                break
            if not done[k] and lengths[k] == lengths[head]:
                # parallel 0: whole sentences up to the minibatch size in words
                # (DetermineSequencesToProcess: numTokens + sLen >= maxTokens ends the group)
                if self.parallel == 0 and tokens + int(self._words[k]) >= self._steps:
                    break
                group.append(int(k))
                tokens += int(self._words[k])
        self._group, self._position = group, 0
        return True

    def next_minibatch(self, minibatch_size_in_samples: int,
                       input_map: Mapping[Hashable, Any] | None = None, device: Any = None,
                       num_data_partitions: int | None = None,
                       partition_index: int | None = None) -> dict:
        """The next minibatch of the epoch (``{}`` at its end): the next steps of each sentence
        of the group, as many as :meth:`start_epoch` was told.  Read without it (an evaluation
        or a write action), the source gives one pass of whole sentences, N of one length a
        minibatch in the file's or a shuffled order: the values cntk.exe computed over the
        pieces with the state carried (its evaluation carried it too)."""
        if (num_data_partitions or 1) > 1:
            raise ValueError("LMSentenceSource: reading in data partitions is not supported")
        if self._order is None:     # parallel 0: the minibatch size is the words a minibatch
            self.start_epoch(0, 0, int(minibatch_size_in_samples) if self.parallel == 0
                             else max(1, int(self.lengths.max(initial=1))))
        if (self._limit is not None and self._returned > self._limit) or \
                (not self._group and not self._next_group()):
            self._order, self.layout = None, None
            return {}
        group, start = self._group, self._position
        length = int(self.lengths[group[0]])
        end = length if self.parallel == 0 else min(start + self._steps, length)
        self._position, self._returned = end, self._returned + (end - start) * len(group)
        goes_on = end < length
        if not goes_on:
            self._done[group] = True
            self._group = []
        rows = len(group)
        self.layout = TruncatedLayout(self.parallel or rows, list(range(rows)), [start == 0] * rows,
                                      [goes_on] * rows)
        ids = np.asarray(group, np.int64)
        batch = self._composite.materialize(ids, np.zeros_like(ids), np.zeros_like(ids),
                                            self._seed)
        last = not goes_on and bool(self._done.all())
        return sequences_minibatch(
            self, input_map, lambda name: [batch[name].data[k, start:end] for k in range(rows)],
            last)

    # -- checkpoints: an epoch starts afresh (start_epoch), so there is no position to keep

    def get_checkpoint_state(self) -> dict:
        return {"lm_sentences": [self.parallel, self._sweep_length]}

    def restore_from_checkpoint(self, state: Mapping[str, Any]) -> None:
        if list(state.get("lm_sentences", ())) != [self.parallel, self._sweep_length]:
            raise ValueError("the checkpoint was not taken on this LMSequenceReader source")
        self._order = None


def _blocks(words: np.ndarray, block_words: int | None) -> list[np.ndarray]:
    """The sentences (file order) of each block cntk.exe's parser reads: lines are read while
    the block's words are fewer than ``block_words``."""
    count = len(words)
    if block_words is None:
        return [np.arange(count, dtype=np.int64)]
    blocks, start, read = [], 0, 0
    for k, n in enumerate(np.asarray(words).tolist()):
        if read >= block_words:
            blocks.append(np.arange(start, k, dtype=np.int64))
            start, read = k, 0
        read += n
    blocks.append(np.arange(start, count, dtype=np.int64))
    return blocks
