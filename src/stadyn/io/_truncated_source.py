"""CNTK's legacy ``HTKMLFReader`` with ``truncated = true``: minibatches for truncated
back-propagation through time, as cntk.exe made them.

The reader keeps ``parallel`` streams (its ``nbruttsineachrecurrentiter``), each working
through one utterance (a step of :func:`~stadyn.io.utterance_order`'s iterator, see
:class:`~stadyn.io.UtteranceSource`) at a time.  A minibatch is ``steps`` frames of every
stream (the minibatch size cntk.exe's SGD asked for: the truncation length; up to
``parallel * steps`` samples).  In stream ``i``:

* while its utterance goes on past the minibatch, the next ``steps`` frames of it;
* where the utterance ends inside the minibatch, its last frames, then the stream takes the next
  utterance and, if there is room, its first frames fill the rest (one utterance only: if it
  ends before the minibatch does, the rest is a gap and the stream takes the next utterance
  for the next minibatch, as cntk.exe's reader did);
* once the epoch's utterances are all given out, a stream that has finished stays empty; the
  epoch ends when every stream has finished.

Each piece is one sequence (row) of the minibatch; :attr:`TruncatedUtteranceSource.layout`
says, for the minibatch just read, each row's stream, whether the row begins its utterance
(else it goes on from the stream's last frame of the previous minibatch: a recurrence carries
its state over) and whether the utterance goes on in the next minibatch.  The epochs (the
utterances that start in them on the sweep's timeline), the utterance order and the sample
counts are cntk.exe's (Tests/EndToEndTests/Speech/LSTM/Truncated: 20498, 20514, 20598 and
20376 frames in epochs of 20480).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Mapping

import numpy as np

from ._utterance_source import UtteranceSource, _Iterator, sequences_minibatch

__all__ = ["TruncatedUtteranceSource", "TruncatedLayout"]


@dataclass
class TruncatedLayout:
    """Which stream each row of a truncated minibatch belongs to (``streams``), whether it
    begins its utterance (``begins``; False: it goes on from the stream's previous minibatch)
    and whether its utterance goes on in the next minibatch (``goes_on``)."""

    parallel: int
    streams: list[int]
    begins: list[bool]
    goes_on: list[bool]


class _Stream:
    """One parallel stream: its utterance (the iterator's step), read once, and the cursor."""

    def __init__(self) -> None:
        self.unit: tuple[list[int], int, bool] | None = None
        self.frames = 0              # frames of the current utterance
        self.done = 0                # frames of it given out
        self.data: dict[str, np.ndarray] = {}


class TruncatedUtteranceSource(UtteranceSource):
    """Minibatches of ``steps`` frames of ``parallel`` streams of utterances, as cntk.exe's
    ``HTKMLFReader`` made them with ``truncated = true`` (module docstring).  The arguments are
    :class:`~stadyn.io.UtteranceSource`'s; the minibatch size a caller asks for is the
    truncation length (frames of each stream).  With utterances of 5, 3 and 4 frames, two
    streams and minibatches of 2 frames, the rows are ``[2, 2]``, ``[2, 1, 1]`` (the second
    stream ends its utterance and begins the third), ``[1, 2]``, ``[1]``.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.layout: TruncatedLayout | None = None
        self._steps = 1
        self._lanes: list[_Stream] = []

    def start_epoch(self, epoch: int, epoch_size: int, minibatch_size: int) -> None:
        """Start epoch ``epoch`` (from 0) of ``epoch_size`` samples in minibatches of
        ``minibatch_size`` frames a stream (cntk.exe's ``StartMinibatchLoop``)."""
        if int(minibatch_size) < 1:
            raise ValueError(f"TruncatedUtteranceSource: the minibatch size (frames a stream) "
                             f"must be >= 1, got {minibatch_size}")
        self._steps = int(minibatch_size)
        self._iter = _Iterator(self, int(epoch), int(epoch_size), self._steps)
        self._no_data = self._iter.current is None
        self._lanes = [_Stream() for _ in range(self.parallel)]
        self._open: dict[int, int] = {}          # sweep -> its utterances not finished yet
        self._ended: set[int] = set()            # sweeps whose last utterance was taken
        for lane in self._lanes:
            self._renew(lane)
        self.layout = None

    def _renew(self, lane: _Stream) -> bool:
        """The stream's next utterance (False once the epoch's are given out: the stream keeps
        its finished one, as cntk.exe's reader did in this mode)."""
        if self._no_data:
            return False
        unit = self._iter.current
        ids = np.asarray(unit[0], np.int64)
        batch = self._composite.materialize(ids, np.full_like(ids, unit[1]), np.zeros_like(ids),
                                            self._seed)
        lane.unit, lane.done = unit, 0
        lane.frames = int(self.lengths[ids].sum())
        lane.data = {name: np.concatenate([b.data[k, :int(b.lengths[k])]
                                           for k in range(len(ids))])
                     for name, b in batch.items()}
        self._open[unit[1]] = self._open.get(unit[1], 0) + 1
        if unit[2]:
            self._ended.add(unit[1])
        self._iter.advance()
        self._no_data = self._iter.current is None
        return True

    def _take(self, lane: _Stream, slot: int, count: int, rows: list) -> None:
        """Give out the next ``count`` frames of the stream's utterance as one row."""
        start = lane.done
        lane.done += count
        rows.append((slot, lane.data, start, lane.done, start == 0, lane.done < lane.frames))
        if lane.done == lane.frames:
            self._open[lane.unit[1]] -= 1

    def _pieces(self) -> list | None:
        """The rows of the next minibatch: ``(stream, its utterance's data, first frame, end,
        begins, goes_on)``."""
        lanes, steps = self._lanes, self._steps
        if self._no_data and all(lane.done == lane.frames for lane in lanes):
            return None
        rows: list = []
        for slot, lane in enumerate(lanes):
            if lane.done + steps < lane.frames:
                self._take(lane, slot, steps, rows)
                continue
            room = steps - (lane.frames - lane.done)
            if lane.frames > lane.done:
                self._take(lane, slot, lane.frames - lane.done, rows)
            if self._renew(lane) and room > 0:
                self._take(lane, slot, min(room, lane.frames), rows)
                if lane.frames < room:       # a gap to the minibatch's end
                    self._renew(lane)
        return rows

    def next_minibatch(self, minibatch_size_in_samples: int,
                       input_map: Mapping[Hashable, Any] | None = None, device: Any = None,
                       num_data_partitions: int | None = None,
                       partition_index: int | None = None) -> dict:
        """The next minibatch of the epoch (``{}`` at its end): ``minibatch_size_in_samples``
        frames of each stream (the truncation length; the epoch's first call fixes it)."""
        if (num_data_partitions or 1) > 1:
            raise ValueError("TruncatedUtteranceSource: reading in data partitions is not "
                             "supported")
        if self._iter is None:
            self.start_epoch(0, self.sweep_size, int(minibatch_size_in_samples))
        rows = self._pieces()
        if rows is None:
            self._iter, self.layout = None, None
            return {}
        done = {s for s in self._ended if self._open.get(s, 0) == 0}
        self._ended -= done
        self.layout = TruncatedLayout(self.parallel, [r[0] for r in rows],
                                      [r[4] for r in rows], [r[5] for r in rows])
        return sequences_minibatch(
            self, input_map, lambda name: [data[name][a:b] for _, data, a, b, _, _ in rows],
            bool(done))
