"""MinibatchSource: CNTK's reader front end over one or more deserializers.

Positions: the source walks an endless stream of *global positions* 0, 1, 2, ...; position p is
sample ``order(sweep)[p % N]`` of sweep ``p // N`` (N samples per sweep). The order of a sweep
is CNTK 2.7's randomized order (``_cntk_order.py``; the file order with ``randomize=False``),
a function of the seed, the sweep, the chunks and the window; the augmentation of
position p draws from ``SampleRandom(seed, sweep, p % N)``. Which process decodes a sample
therefore changes nothing: batches are the same with any number of workers, and a checkpoint
only has to remember the position and the number of samples delivered.

A minibatch of n samples takes the next positions until n samples are reached (a sequence
counts its length; a minibatch holds at least one sequence). With ``num_data_partitions = W``
partition r walks the positions itself and reads only its own, as CNTK 2.7 (``_partitions.py``).
"""

from __future__ import annotations

import collections
import numbers
import weakref
from typing import Any, Hashable, Mapping, Sequence

import numpy as np

from ._composite import Composite
from .._errors import DataError
from ._deserializer import Deserializer, StreamBatch, drop_invalid
from ._frame_mode import FrameComposite, NonFrameSequenceError
from ._minibatch_data import Minibatch, MinibatchData
from ._local_timeline import local_timeline_walk, marker_met, restore_marker, single_sweep_end
from ._partitions import partition_walk
from ._block_restore import BlockCursor
from ._reader_errors import ReaderError
from ._cntk_order import chunk_window_default
from ._streams import Record, StreamInformation
from ._chunk_loads import ChunkLoads
from ._source_jobs import Job, WorkerJobs
from ._source_plan import INFINITELY_REPEAT, SourcePlan
from ._workers import WorkerPool

__all__ = ["MinibatchSource", "MinibatchData", "FULL_DATA_SWEEP",
           "INFINITELY_REPEAT", "INFINITE_SAMPLES", "DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS"]

_SIZE_MAX = INFINITELY_REPEAT     # (CNTK's SIZE_MAX: "never stop", _source_plan.py)
INFINITE_SAMPLES = _SIZE_MAX
#: ``max_samples`` value meaning "one sweep over the data" (CNTK's SIZE_MAX - 1).
FULL_DATA_SWEEP = _SIZE_MAX - 1
#: CNTK 2.7's default window, 128 chunks (what a source uses when given none)
DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS = chunk_window_default
_STATE_VERSION = 1


def _copy_for_source(d):
    return d.copy_for_source() if isinstance(d, Deserializer) else d


class MinibatchSource(SourcePlan, ChunkLoads, WorkerJobs):
    """Deliver minibatches from deserializers, as CNTK's ``cntk.io.MinibatchSource``.

    Args:
        deserializers: one deserializer or a list; several are joined by sequence key (the first
            one's order), each contributing its streams.
        max_samples: stop after this many samples (``INFINITELY_REPEAT`` by default;
            ``FULL_DATA_SWEEP`` is one sweep).
        max_sweeps: stop after this many sweeps over the data (infinite by default).
        randomize: shuffle every sweep, in CNTK 2.7's order: the same sequences in the same
            order as CNTK reading the same data with the same seed and window (its chunks
            shuffled, each sequence swapped within a window of chunks around it; see
            ``docs/readers.md``).
        randomization_seed: seed of the order (sweep k is shuffled with seed + k, as CNTK
            does) and of the augmentation.
        randomization_window_in_chunks: how far a sequence may move, in chunks (CNTK's
            default, 128); ``randomization_window_in_samples``: the window in samples instead.
            No window (0 chunks, no samples) reads in file order, ``randomize`` or not, as
            CNTK 2.7 does.
        num_workers: worker processes that decode and augment (0: in this process).
        prefetch: minibatches each worker prepares ahead.
        start_method: 'forkserver' (default on Linux), 'spawn' or 'fork' (unsafe once OpenCV's
            thread pool has run in this process).
        worker_timeout: seconds without an answer from the workers before giving up.
        num_data_partitions, partition_index: default sharding for :meth:`next_minibatch`.
        frame_mode: every step of every sequence is a sample of its own (CNTK's frame mode,
            for frame-level speech training): a deserializer's sequences are cut into their
            frames (the deserializers are joined by sequence key first).
        max_invalid_sequences: ``None`` (the default): a sequence a deserializer cannot read
            raises its error from the minibatch holding it.  A number: a base64 image that
            cannot be decoded is left out of its minibatch with a warning and counted, and a
            minibatch with a sequence left raises once more than that many were left out, as
            CNTK 2.7's ``max_errors`` (its ``SequenceCleaner``); the deserializers given are
            not changed (``Deserializer.leaving_out_invalid``).
        cntk_seeks: set back as CNTK 2.7's block randomizer is (cntk.exe's and ``cntk.io``'s
            readers; ``compat.cntk``'s source always is): a restore or an epoch start
            (:func:`start_epoch_at`) before the first chunk it still holds randomizes that
            sweep's sequences anew with the seed ``sweep`` alone (``_block_restore``).  The
            default, ``False``: it replays the order read before.
        cntk_sweep_markers: a reader read as one partition whose deserializer CNTK 2.7 reads
            with its local-timeline randomizer (``Deserializer.randomizer == "tumbling"``: a
            Python ``UserDeserializer``) says ``end_of_sweep`` where CNTK's sweep-end marker is
            met (``_local_timeline.single_sweep_end``: a minibatch ending with the sweep's last
            sequence does not say it, the next one does); ``compat.cntk``'s source always
            does.  The default, ``False``: the minibatch holding a sweep's last sample says it.

    Example:
        >>> import numpy as np
        >>> from stadyn.io import NumpyDeserializer
        >>> src = MinibatchSource(NumpyDeserializer({'x': np.arange(5.0)[:, None]}),
        ...                       randomize=False, max_sweeps=1)
        >>> mb = src.next_minibatch(3)
        >>> mb['x'].data[:, 0].tolist(), mb['x'].num_samples, mb['x'].end_of_sweep
        ([0.0, 1.0, 2.0], 3, False)
        >>> mb = src.next_minibatch(3)
        >>> mb[src.streams.x].data[:, 0].tolist(), mb['x'].end_of_sweep
        ([3.0, 4.0], True)
        >>> src.next_minibatch(3)
        {}
    """

    #: partitions read as CNTK 2.7's MinibatchSource reads them (``_partitions.py``)
    _cntk_partitions = True
    #: a restore randomizes anew as CNTK 2.7's (``_block_restore``; ``cntk_seeks``), a
    #: local-timeline reader says sweep ends where it meets them (``cntk_sweep_markers``)
    _cntk_restore = _cntk_markers = False

    def __init__(self, deserializers: Deserializer | Sequence[Deserializer],
                 max_samples: int = INFINITELY_REPEAT, max_sweeps: int = INFINITELY_REPEAT,
                 randomization_window_in_chunks: int | None = None,
                 randomization_window_in_samples: int | None = None,
                 randomization_seed: int = 0, randomize: bool = True, *,
                 num_workers: int = 0, prefetch: int = 2, start_method: str | None = None,
                 worker_timeout: float = 300.0, num_data_partitions: int = 1,
                 partition_index: int = 0, frame_mode: bool = False,
                 max_invalid_sequences: int | None = None, cntk_seeks: bool = False,
                 cntk_sweep_markers: bool = False):
        if cntk_seeks:
            self._cntk_restore = True
        if cntk_sweep_markers:
            self._cntk_markers = True
        # (CNTK 2.7 makes its reader from its deserializers' configuration now: a key set on
        # one later changes nothing under this source, case io41__settings_after_source)
        if isinstance(deserializers, (list, tuple)):
            deserializers = [_copy_for_source(d) for d in deserializers]
        else:
            deserializers = _copy_for_source(deserializers)
        self._composite = Composite(deserializers, max_invalid_sequences is not None)
        if frame_mode:
            self._composite = FrameComposite(self._composite)
        self._sweep_length = len(self._composite)
        self._lengths = self._composite.sample_counts if frame_mode else self._composite.lengths
        joined = (self._composite.inner if frame_mode else self._composite).joined_counts
        if joined is not None and self._lengths is None:
            # (a join CNTK 2.7 counts by its largest sequence infos: minibatches fill by them,
            # sweeps end after their last sequence, as for sequences of several samples; in
            # frame mode too, its sequences then being its frames)
            self._lengths = joined
        # samples CNTK 2.7 counts for sequences that deliver one (a base64 sequence of several
        # lines): minibatches fill, and sweeps of one sample a sequence end, by these
        # (in frame mode too: such data is not cut into frames, its sequences are its frames)
        self._counted = None if self._lengths is not None else \
            (self._composite.inner if frame_mode else self._composite).counted_lengths
        if max_samples == FULL_DATA_SWEEP:
            max_samples, max_sweeps = INFINITELY_REPEAT, min(max_sweeps, 1)
        if max_samples < 0 or max_sweeps < 0:
            raise ValueError("max_samples and max_sweeps must be >= 0")
        self._max_samples = int(max_samples)
        self._max_sweeps = int(max_sweeps)
        self._epoch_end = INFINITELY_REPEAT     # cntk.exe's epoch end (start_epoch_at)
        self._randomize = bool(randomize)
        self._seed = int(randomization_seed)
        if randomization_window_in_samples and randomization_window_in_chunks:
            raise ValueError("randomization_window_in_chunks and randomization_window_in_samples "
                             "are mutually exclusive: give the other one as 0")
        if randomization_window_in_samples:
            self._window = (int(randomization_window_in_samples), True)
        else:
            chunks = chunk_window_default if randomization_window_in_chunks is None \
                else randomization_window_in_chunks
            self._window = (int(chunks), False)
        if self._window[0] < 0:
            raise ValueError(f"the randomization window must be >= 0, got {self._window[0]}")
        if self._window[0] == 0:        # (CNTK 2.7 then makes no randomizer: file order)
            self._randomize = False
        self._chunks = self._composite.chunk_sizes() if self._randomize else None
        # CNTK 2.7's block randomizer's state, which decides how a restore randomizes anew
        self._cursor = BlockCursor(self._seed, self._sweep_length, self._block_layout,
                                   self._sweep_order,
                                   self._lengths if self._counted is None else self._counted) \
            if self._cntk_restore and self._randomize and self._sweep_length and \
            self._composite.randomizer != "tumbling" else None
        # the (position, offset) CNTK's next read sets its reader to after its StartEpoch: the
        # first read's (0, None), a restore's state; None once set
        self._restore_to: tuple[int, int | None] | None = (0, None)
        self._single_seek = False       # (start_epoch_at: cntk.exe's StartEpoch seeks once)
        self._shim_at: int | None = None    # the position CNTK's reader shim last reported
        self._walk_ahead: tuple | None = None   # (its key, a partition's next walk)
        self._partitions = self._check_partition(num_data_partitions, partition_index)
        self._position = 0
        self._samples = 0
        self._refused: tuple[int, int] | None = None    # the last given before a refusal
        # sequences a deserializer left out (an undecodable base64 image), counted against
        # max_invalid_sequences as CNTK 2.7's SequenceCleaner counts them (ReaderUtil.h)
        self._invalid = 0
        self._had_data = False      # (a minibatch with sequences was given: _no_data)
        self.max_invalid_sequences = int(max_invalid_sequences or 0)
        # CNTK 2.7's reader counts sequences from the start of the sweep it was last set at
        # (its first read, a change of minibatch size or partition, a restore): which
        # partition a sequence is given to counts from there (``_partitions.py``)
        self._reader_config: tuple[int, int, int] | None = None
        self._partition_base = 0
        self._orders: collections.OrderedDict[tuple, np.ndarray] = collections.OrderedDict()
        self._streams = Record()
        for stream_id, (name, spec) in enumerate(self._composite.specs.items()):
            self._streams[name] = StreamInformation(name, stream_id, spec.shape, spec.dtype,
                                                    spec.is_sparse, spec.is_sequence)
        if num_workers < 0:
            raise ValueError("num_workers must be >= 0")
        self.num_workers = int(num_workers)
        self._pool: WorkerPool | None = None
        self._pool_args = (prefetch, start_method, worker_timeout)
        self._jobs: collections.deque[Job] = collections.deque()
        self._plan_at: tuple[int, int] | None = None  # (position, samples) after the last job
        self._plan_key: tuple[int, int] | None = None
        self._next_job_id = 0
        self._finalizer: weakref.finalize | None = None

    # -- streams

    @property
    def streams(self) -> Record:
        """Stream name -> :class:`StreamInformation` (``source.streams.features``)."""
        return self._streams

    def stream_infos(self) -> list[StreamInformation]:
        return list(self._streams.values())

    def stream_info(self, name: str) -> StreamInformation:
        try:
            return self._streams[name]
        except KeyError:
            raise KeyError(f"no stream named {name!r}; the streams are {sorted(self._streams)}") \
                from None

    def __getitem__(self, name: str) -> StreamInformation:
        return self.stream_info(name)

    @property
    def sweep_size(self) -> int:
        """Samples in one sweep (sequences count their length)."""
        return self._sweep_length if self._lengths is None else int(self._lengths.sum())

    def is_infinite(self) -> bool:
        return self._max_samples == INFINITELY_REPEAT and self._max_sweeps == INFINITELY_REPEAT

    # -- positions and planning

    @staticmethod
    def _check_partition(count: int, index: int) -> tuple[int, int]:
        if count < 1 or not 0 <= index < count:
            raise ValueError(f"partition_index must be in 0..num_data_partitions-1, got "
                             f"{index} of {count}")
        return int(count), int(index)

    # -- the public reading API

    def next_minibatch(self, minibatch_size_in_samples: int,
                       input_map: Mapping[Hashable, StreamInformation | str] | None = None,
                       device: Any = None, num_data_partitions: int | None = None,
                       partition_index: int | None = None) -> dict:
        """The next minibatch: a dict of :class:`MinibatchData`, or ``{}`` when the data is done.

        Args:
            minibatch_size_in_samples: samples wanted, over all partitions.
            input_map: key -> stream (a ``StreamInformation`` of any source with the same stream
                names, or a stream name); the result is keyed by these keys. Without it the
                result is keyed by this source's StreamInformation objects (a stream name also
                works as a key).
            device: ignored (arrays are NumPy).
            num_data_partitions, partition_index: take this partition's share of the minibatch
                (default: the constructor's).
        """
        size = minibatch_size_in_samples
        if isinstance(size, bool) or not isinstance(size, numbers.Real) \
                or not float(size).is_integer():
            raise TypeError(f"minibatch_size_in_samples must be a positive int, got "
                            f"{minibatch_size_in_samples!r}")
        n = int(minibatch_size_in_samples)
        if n < 1:
            raise ValueError(f"minibatch_size_in_samples must be >= 1, got {n}")
        count, index = self._partitions
        if num_data_partitions is not None or partition_index is not None:
            count, index = self._check_partition(
                count if num_data_partitions is None else num_data_partitions,
                0 if partition_index is None else partition_index)
        targets = self._resolve_input_map(input_map)
        if self._reader_config != (n, count, index):
            self._reconfigure((n, count, index))
        if count > 1 and self._cntk_partitions and self._composite.randomizer != "tumbling":
            return self._partition_minibatch(n, count, index, targets)
        if count > 1 and self._cntk_partitions and not self._randomize:
            return self._local_timeline_minibatch(n, count, index, targets)
        start, (end, taken) = self._position, self._plan(self._position, self._samples, n)
        if end == start:    # (the data is done: no parse kept is delivered any more)
            self._composite.release_chunks()
            return {}
        markers = self._cntk_markers and count == 1 and self._composite.randomizer == "tumbling"
        try:
            if self.num_workers == 0:
                batch = self._read_here(end, count, index)
            else:
                try:
                    batch = self._gather_from_workers(end, n, count, index)
                except DataError:   # (a chunk a job's worker read whole may be a later
                    self._reset_jobs()  # minibatch's: CNTK 2.7 raises at the first one
                    try:                # that loads it; this one is read here to see)
                        batch = self._read_here(end, count, index)
                    finally:
                        self._composite.release_chunks()
        except NonFrameSequenceError:   # (CNTK 2.7's packer has taken the minibatch it refuses:
            self._reset_jobs()          # the next one follows it, FramePacker.cpp:20-25)
            self._refused = self._refused or (self._position, self._samples)
            self._position, self._samples = end, self._samples + taken
            if markers:                 # (the markers it met are not said by the next one)
                single_sweep_end(self, start, end, taken, n)
            raise
        result = self._deliver(batch, end, taken, targets)
        met = single_sweep_end(self, start, end, taken, n) if markers else None
        for data in result.values() if markers else ():
            data.end_of_sweep = met
        if self._follows_cntk():        # (CNTK's shim reads the next minibatch now)
            self._shim_at = self._position
            self._cursor.read_to(self._plan(self._position, self._samples, n)[0])
        return result

    def _reconfigure(self, config: tuple[int, int, int] | None) -> None:
        """A new (minibatch size, partitions, partition) or a restore: CNTK 2.7 sets its
        reader to its position again, and its count of sequences, which decides the partition
        of each unrandomized sequence, starts again from that sweep's first sequence."""
        if self._refused is not None:   # (after minibatches frame mode refused, CNTK's shim
            if config is not None:      # sets its reader back to the last minibatch it gave)
                self._position, self._samples = self._refused
                restore_marker(self, marker_met(self))     # (markers after it: met again)
            self._refused = None
        if config is not None and self._follows_cntk():
            if self._restore_to is not None:
                self._cntk_start()
            elif self._reader_config is not None:   # (a new minibatch size: SetConfiguration
                self._position, moved = self._set_state(self._position, self._samples)
                self._samples += moved          # (SetConfiguration seeks)
        elif self._counted is not None and not self._randomize and \
                (config is None or self._reader_config is not None):
            self._position, self._samples = self._seek_counted(self._samples)
        self._reader_config = config
        sweep = max(self._sweep_length, 1)
        self._partition_base = self._position // sweep * sweep

    def _follows_cntk(self) -> bool:
        """Whether CNTK 2.7's block randomizer's state is followed (``_block_restore.py``):
        randomized built-in deserializers, read as one partition or several."""
        return self._cursor is not None

    def _cntk_start(self) -> None:
        """A first read, or one after a restore: CNTK 2.7 sets its reader to 0 (StartEpoch),
        then to the state twice (GetNextMinibatch: SetState, SetConfiguration)."""
        cursor = self._cursor
        cursor.set_state(0)
        target, self._restore_to = self._restore_to, None
        if target[0] != 0:
            position, moved = cursor.set_state(*target)
            self._position, again = self._set_state(position, self._samples + moved)
            self._samples += moved + again

    def _set_state(self, position: int, samples: int) -> tuple[int, int]:
        """CNTK 2.7's ``BlockRandomizer::SetState`` at a global position, ``samples`` counted
        before it: (the position reached, the samples moved).  With counted sequences the
        sweep is the samples' (BlockRandomizer.cpp SetState: ``currentSamplePosition /
        m_sweepSizeInSamples``), which a seek before may have moved past the sweep of
        ``position``."""
        if self._counted is None:
            return self._cursor.set_state(position)
        return self._cursor.set_state(self._counted_start(position, samples),
                                      samples % self._sweep_length)

    def _deliver(self, batch: dict[str, StreamBatch], end: int, taken: int,
                 targets: list[tuple[Hashable, StreamInformation]]) -> dict:
        end_of_sweep = end // self._sweep_length > self._position // self._sweep_length \
            if self._counted is None else \
            (self._samples + taken) // self._sweep_length > self._samples // self._sweep_length
        if end_of_sweep:    # (the parses kept for a sweep's sequences are not kept past it)
            self._composite.release_chunks()
        self._position, self._samples = end, self._samples + taken
        self._position = self._counted_start(end, self._samples)
        self._refused = None
        batch, invalid = drop_invalid(batch)
        self._invalid += invalid
        rows = any(b.rows for b in batch.values())
        # (CNTK 2.7 checks the count at every minibatch that has a sequence left, those after
        # the one that left some out too: ReaderUtil.h's SequenceCleaner::Clean)
        if self._invalid > self.max_invalid_sequences and rows:
            raise ReaderError(
                f"Number of invalid sequences '{self._invalid}' in the input exceeded the "
                f"specified maximum number '{self.max_invalid_sequences}' (max_errors; the "
                f"warnings name each sequence left out)")
        if invalid and not rows:
            if self._no_data():
                return Minibatch()
            end_of_sweep = False
        self._had_data = self._had_data or rows
        result = Minibatch()
        for key, info in targets:
            b = batch[info.name]
            result[key] = MinibatchData(b.data, b.num_samples, b.rows, end_of_sweep, b.lengths,
                                        info.is_sparse, b.stored if info.is_sparse else None)
        return result

    def _no_data(self) -> bool:
        """A minibatch all of whose sequences were left out (``max_invalid_sequences``), as
        CNTK 2.7's reader shim gives it (ReaderShim.cpp:280-350, MinibatchSource.cpp:266-283):
        its streams' data are empty and say no sweep end; where it ends the data the source
        gives ``{}`` instead (returns True); before any minibatch with data, CNTK has no
        sample shape to give: a ReaderError naming the first stream, by name, whose shape is
        declared."""
        if self._exhausted(self._position, self._samples):
            return True
        known = sorted((name, info.shape) for name, info in self._streams.items()
                       if info.shape is not None)
        if not self._had_data and known:
            name, shape = known[0]
            raise ReaderError(
                f"Sample shape for '{name}' provided by the deserializer '18446744073709551614' "
                f"does not match the shape expected by the network "
                f"'{' x '.join(str(d) for d in reversed(shape))}'. (every sequence of the "
                f"first minibatch with sequences was left out as invalid, so CNTK 2.7's reader "
                f"has no sample shape yet)")
        return False

    def _partition_minibatch(self, n: int, count: int, index: int,
                             targets: list[tuple[Hashable, StreamInformation]]) -> dict:
        """Partition ``index`` of ``count``: its own sequences up to its part of ``n``, as
        CNTK 2.7 reads (``_partitions.py``); the position walks the global stream."""
        ahead, self._walk_ahead = self._walk_ahead, None
        positions, end, walked = ahead[1] \
            if ahead is not None and ahead[0] == self._walk_key(n, count, index) else \
            partition_walk(self, n, count, index)
        if not len(positions):   # (the data ends before another of its own: CNTK 2.7's
            self._position, self._samples = end, self._samples + walked   # reader is there)
            return {}
        # (CNTK 2.7 loads the chunks this partition reads from: NoRandomizer's, those of its
        # own sequences; the block randomizer's, its own chunks in the windows of all it
        # walked)
        walked_over = np.arange(self._position, end, dtype=np.int64) \
            if self._randomize else positions
        try:
            if self.num_workers == 0:
                self._load_windows(walked_over, count, index)
                batch = self._composite.materialize(*self._job(positions), self._seed)
            else:  # one job at a time: the next partition minibatch is not planned ahead
                self._reset_jobs()
                job_id = self._next_job_id
                self._next_job_id += 1
                pool = self._ensure_pool()
                chunks = self._chunks_to_send(walked_over, count, index)
                pool.submit(job_id, *self._job(positions), chunks)
                try:
                    batch = pool.wait(job_id)
                except DataError:   # (its chunks were not read: a later job reads them)
                    self.__dict__["_chunks_sent"].difference_update(
                        () if chunks is None else chunks.tolist())
                    raise
        except NonFrameSequenceError:   # (taken and refused, as next_minibatch's: the
            self._reset_jobs()          # partition's next minibatch follows it)
            self._refused = self._refused or (self._position, self._samples)
            self._position, self._samples = end, self._samples + walked
            raise
        result = self._deliver(batch, end, walked, targets)
        if self._follows_cntk():        # (CNTK's shim reads the partition's next one now:
            self._shim_at = self._position  # that walk is the next minibatch's, kept)
            key, walk = self._walk_key(n, count, index), partition_walk(self, n, count, index)
            self._cursor.read_to(walk[1])
            self._walk_ahead = (key, walk) if key == self._walk_key(n, count, index) else None
        return result

    def _walk_key(self, n: int, count: int, index: int) -> tuple:
        """What a partition's walk depends on (it is kept for the next minibatch)."""
        return (self._position, self._samples, n, count, index, self._epoch_end,
                self._partition_base, self._cursor.seeds())

    def _local_timeline_minibatch(self, n: int, count: int, index: int,
                                  targets: list[tuple[Hashable, StreamInformation]]) -> dict:
        """Partition ``index`` of ``count`` of a deserializer CNTK 2.7 reads with its
        local-timeline randomizer, not randomized (``_local_timeline.py``)."""
        positions, end, taken, crossed = local_timeline_walk(self, n, count, index,
                                                             INFINITELY_REPEAT)
        if not len(positions):
            self._position = end
            return {}
        self._reset_jobs()
        try:
            batch = self._composite.materialize(*self._job(positions), self._seed)
        except NonFrameSequenceError:   # (taken and refused: the next one follows it, as
            self._refused = self._refused or (self._position, self._samples)  # CNTK 2.7's)
            self._position, self._samples = end, self._samples + taken
            raise
        result = self._deliver(batch, end, taken, targets)
        for data in result.values():
            data.end_of_sweep = crossed
        return result

    def _resolve_input_map(self, input_map) -> list[tuple[Hashable, StreamInformation]]:
        if input_map is None:
            return [(info, info) for info in self._streams.values()]
        targets = []
        for key, stream in input_map.items():
            name = stream.name if isinstance(stream, StreamInformation) else stream
            if not isinstance(name, str) or name not in self._streams:
                raise KeyError(f"input_map maps {key!r} to {stream!r}, which is not a stream of "
                               f"this source ({', '.join(sorted(self._streams))})")
            targets.append((key, self._streams[name]))
        return targets

    # -- checkpoints

    def get_checkpoint_state(self) -> dict:
        """The reading position, a JSON-serialisable dict (see :meth:`restore_from_checkpoint`)."""
        position, samples = self._refused or (self._position, self._samples)
        state = {"version": _STATE_VERSION, "position": position,
                 "samples": samples, "sweep_length": self._sweep_length,
                 "randomization_seed": self._seed, "randomize": self._randomize}
        if marker_met(self):        # (a partition's reader stopped right after a sweep's end)
            state["sweep_end_reported"] = True
        return state

    def restore_from_checkpoint(self, state: Mapping[str, Any]) -> None:
        """Continue exactly where :meth:`get_checkpoint_state` was taken: the minibatches that
        follow equal those an uninterrupted source would have given."""
        if state.get("version") != _STATE_VERSION:
            raise ValueError(f"unknown minibatch source state version {state.get('version')!r}")
        if state["sweep_length"] != self._sweep_length:
            raise ValueError(f"the checkpoint was taken on {state['sweep_length']} samples per "
                             f"sweep, this source has {self._sweep_length}")
        if state.get("randomization_seed", self._seed) != self._seed or \
                state.get("randomize", self._randomize) != self._randomize:
            raise ValueError("the checkpoint was taken with another randomization_seed or "
                             "randomize setting")
        self._reset_jobs()
        self._position, self._samples = int(state["position"]), int(state["samples"])
        if self._follows_cntk():
            # CNTK's state is the samples read: their place in the sweep is where it seeks
            total = self._sweep_length if self._lengths is None else int(np.sum(self._lengths))
            offset = self._samples % total \
                if self._samples // total == self._position // self._sweep_length else None
            if self._single_seek:       # (cntk.exe's StartEpoch sets its reader there once)
                self._position, moved = self._cursor.set_state(self._position, offset)
                self._samples += moved
                self._shim_at, self._restore_to = self._position, None
            else:   # (CNTK 2.7 sets its reader there now, and again at the next read)
                if self._shim_at != self._position:
                    self._shim_at = self._cursor.set_state(self._position, offset)[0]
                self._restore_to = (self._position, offset)
        self._reconfigure(None)
        restore_marker(self, bool(state.get("sweep_end_reported", False)))

    @property
    def current_position(self) -> dict:
        return self.get_checkpoint_state()

    @current_position.setter
    def current_position(self, state: Mapping[str, Any]) -> None:
        self.restore_from_checkpoint(state)

    # -- lifetime

    def close(self) -> None:
        """Stop the worker processes (a later read starts them again)."""
        self._reset_jobs()
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._pool = None
        self._composite.release_chunks()
        self._composite.close()

    def __enter__(self) -> "MinibatchSource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
