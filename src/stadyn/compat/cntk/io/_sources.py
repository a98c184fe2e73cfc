"""CNTK's view of a minibatch from a deserializer: every sample is a sequence of one step, so
``MinibatchData.asarray()`` (and ``shape``) is ``(N, 1, *sample_shape)`` for non-sequence
streams, as CNTK 2.7 gives it.  ``MinibatchSourceFromData`` keeps ``(N, *sample_shape)``, as
CNTK's does."""

from __future__ import annotations

import functools
import numbers
import warnings

import numpy as np

from .... import io as _io
from ._configs import opened
from .._sequence_begin import refuse_unpacking
from .._sparse_sequences import sparse_sequences
from .._values import Value

__all__ = ["MinibatchData", "MinibatchSource", "MinibatchSourceFromData"]


class MinibatchData(_io.MinibatchData):
    """The data of one stream in one minibatch (CNTK's ``MinibatchData``, made as CNTK's:
    ``MinibatchData(value, num_sequences, num_samples, sweep_end)``, ``value`` a ``Value``,
    an ``NDArrayView`` or an array of ``(N, *shape)``).  From a deserializer, ``asarray()``
    and ``shape`` show each sample as a sequence of one step, ``(N, 1, *shape)``, as CNTK 2.7
    does; data a user source made is shown as it was given.

    Example:
        >>> import numpy as np
        >>> d = MinibatchData(np.zeros((4, 3), np.float32), 4, 4, False)
        >>> d.asarray().shape, d.num_samples, d.end_of_sweep
        ((4, 3), 4, False)
    """

    __slots__ = ("_as_given", "_truncated", "_no_data")

    def __init__(self, value, num_sequences: int, num_samples: int, sweep_end: bool,
                 lengths=None, is_sparse: bool = False):
        data = value.asarray() if hasattr(value, "asarray") else np.asarray(value)
        if lengths is None and getattr(value, "lengths", None) is not None:
            lengths = np.asarray(value.lengths)     # Value.one_hot's padded sequences' lengths
        super().__init__(data, num_samples, num_sequences, sweep_end, lengths, is_sparse)
        self._as_given = True
        self._truncated = None     # a truncated minibatch's TruncatedLayout (its source's)
        # a source's minibatch without sequences (all left out as invalid): CNTK 2.7's data
        # is None (MinibatchSource.cpp:278-283), and what reads it raises AttributeError
        self._no_data = False

    @property
    def data(self) -> Value:
        """The data as CNTK 2.7 gives it: a :class:`~stadyn.compat.cntk.Value` of
        :meth:`asarray`'s array (its ``asarray()``, ``shape``, ``is_sparse``,
        ``as_sequences()``); ``np.asarray(d)`` is the array Stadyn read, ``(N, *shape)``.

        Example:
            >>> d = MinibatchData(np.zeros((2, 3), np.float32), 2, 2, False)
            >>> d.data.shape, d.data.asarray().shape, np.asarray(d).shape
            ((2, 3), (2, 3), (2, 3))
        """
        if self._no_data:
            return None
        value = Value(batch=self._read())     # (CNTK's Value is unpacked when read)
        if self.lengths is not None:
            value.lengths = [int(n) for n in self.lengths]
        if self._truncated is not None:      # (its reads refused as this minibatch's)
            value._check_unpackable = self._check_unpackable
        value._sparse = self.is_sparse
        return value

    @data.setter
    def data(self, array) -> None:
        _READ.__set__(self, array)

    @property
    def number_of_samples(self) -> int:
        """CNTK 2.7's other name of ``num_samples`` (its Manual's declarative-API notebook
        counts ``data[label].number_of_samples``)."""
        return self.num_samples

    @property
    def number_of_sequences(self) -> int:
        """CNTK 2.7's other name of ``num_sequences``."""
        return self.num_sequences

    def asarray(self) -> np.ndarray:
        """The data: ``(N, 1, *shape)`` for a deserializer's non-sequence streams
        (``(N, T, *shape)`` for sequences); a user source's as it gave it.  A minibatch of a
        source with ``truncation_length`` where a sequence goes on from the previous minibatch
        and the sequences are not one per slot cannot be read so (CNTK 2.7's RuntimeError)."""
        self._refuse_no_data("is_sparse")
        self._check_unpackable()
        return self._read()

    def _refuse_no_data(self, name: str, on: str = "NoneType") -> None:
        """CNTK 2.7's AttributeError reading ``name`` of a minibatch without data."""
        if self._no_data:
            raise AttributeError(f"'{on}' object has no attribute '{name}'")

    def _read(self) -> np.ndarray:
        read = _READ.__get__(self)
        if self._as_given or self.lengths is not None:
            return read
        return read[:, None]

    @property
    def is_sparse(self) -> bool:
        """Whether the stream is sparse; AttributeError on a minibatch without data, as
        CNTK 2.7's (its ``is_sparse`` reads the data).

        Example:
            >>> MinibatchData(np.zeros((2, 3), np.float32), 2, 2, False).is_sparse
            False
        """
        self._refuse_no_data("is_sparse", "MinibatchData")
        return _SPARSE.__get__(self)

    @is_sparse.setter
    def is_sparse(self, value: bool) -> None:
        _SPARSE.__set__(self, value)

    @property
    def shape(self) -> tuple[int, ...]:
        self._refuse_no_data("shape", "MinibatchData")
        return tuple(self._read().shape)

    def _check_unpackable(self) -> None:
        refuse_unpacking(self._truncated)

    @property
    def mask(self) -> np.ndarray:
        """``data.mask``, as CNTK 2.7's (its io/__init__.py): int8 ``(sequences, longest)``, 2
        a sequence's first step, 1 a step, 0 padding; AttributeError where there is nothing
        to mask (a non-sequence stream, sequences all as long as the longest).  Stadyn's
        native reader's boolean mask is ``stadyn.io.MinibatchData.mask``.

        Example:
            >>> d = MinibatchData(np.zeros((2, 3, 1), np.float32), 2, 4, False, lengths=[3, 1])
            >>> d.mask.tolist()
            [[2, 1, 1], [2, 0, 0]]
        """
        self._refuse_no_data("mask", "MinibatchData")
        return self.data.mask

    def as_sequences(self, variable=None) -> list[np.ndarray]:
        """One array per sequence (each sample of a non-sequence stream: ``(*shape)`` from
        ``MinibatchSourceFromData``, ``(1, *shape)`` from a deserializer, as CNTK 2.7 gives
        them); of a sparse stream, as CNTK 2.7 gives them, a SciPy CSR matrix per sequence,
        refused without the ``variable`` (:mod:`.._sparse_sequences`).  A truncated
        minibatch :meth:`asarray` refuses is refused here too, as CNTK 2.7 does."""
        self._refuse_no_data("as_sequences")
        self._check_unpackable()
        if self.lengths is None:
            out = list(self.asarray())
        else:
            out = [row[:int(n)] for row, n in zip(_READ.__get__(self), self.lengths)]
        return sparse_sequences(out, variable) if self.is_sparse else out

    def __array__(self, dtype=None, copy=None):
        read = _READ.__get__(self)
        return read if dtype is None else read.astype(dtype)

    @classmethod
    def _of(cls, data: _io.MinibatchData, as_given: bool = False) -> "MinibatchData":
        """A native minibatch's data seen as CNTK's (``as_given``: as the user's arrays
        were shaped, ``MinibatchSourceFromData``'s)."""
        out = cls(np.asarray(data), data.num_sequences, data.num_samples, data.end_of_sweep,
                  data.lengths, data.is_sparse)
        out.stored = data.stored
        out._as_given = as_given
        out._no_data = not as_given and data.num_sequences == 0
        return out


# the array a minibatch's data holds, as Stadyn's reader gave it (MinibatchData.data is CNTK's
# Value of it)
_READ = _io.MinibatchData.data
_SPARSE = _io.MinibatchData.is_sparse     # (its slot: MinibatchData.is_sparse refuses no data)

#: the key of CNTK 2.7's minibatch source state: the samples read or stepped over from the start
CNTK_POSITION = "minibatchSourcePosition"


def MinibatchSourceFromData(data_streams, max_samples=_io.INFINITELY_REPEAT, **kwargs):
    """A source over arrays in memory, in order (CNTK's ``MinibatchSourceFromData``; Stadyn's
    :func:`stadyn.io.MinibatchSourceFromData`): its minibatches hold CNTK's
    :class:`MinibatchData`, each array as given, ``(N, *shape)``.  Its ``next_minibatch``
    also takes CNTK's ``(num_samples, number_of_workers, worker_rank)``; worker ``r`` of
    ``W`` (or partition ``r`` of ``num_data_partitions=W``) gets CNTK 2.7's slice of each
    minibatch: the rows ``r, r + W, ...`` counted from the minibatch's first, before its end
    plus ``r`` (so the next minibatch's first row may be read twice), the counts and the
    sweep end being the whole minibatch's.

    Example:
        >>> src = MinibatchSourceFromData(dict(x=np.arange(6, dtype=np.float32).reshape(3, 2)))
        >>> d = src.next_minibatch(2)['x']
        >>> d.data.asarray().tolist(), d.num_samples, d.end_of_sweep
        ([[0.0, 1.0], [2.0, 3.0]], 2, False)
        >>> src = MinibatchSourceFromData(dict(x=np.arange(5, dtype=np.float32).reshape(5, 1)))
        >>> d = src.next_minibatch(3, number_of_workers=2, worker_rank=1)['x']
        >>> d.asarray().ravel().tolist(), d.num_samples
        ([1.0, 3.0], 3)

    Its ``get_checkpoint_state()`` has CNTK 2.7's ``cursor`` (the row the next minibatch
    starts at) and ``total_num_samples`` (rows read, every worker's), and
    ``restore_from_checkpoint`` takes CNTK's state:

        >>> src.get_checkpoint_state()['cursor'], src.get_checkpoint_state()['total_num_samples']
        (3, 3)
        >>> src.restore_from_checkpoint({'cursor': 1, 'total_num_samples': 6})
        >>> src.next_minibatch(2)['x'].asarray().ravel().tolist()
        [1.0, 2.0]
    """
    source = _io.MinibatchSourceFromData(data_streams, max_samples=max_samples, **kwargs)
    source._cntk_worker_slices = True
    native = source.next_minibatch

    @functools.wraps(native)
    def next_minibatch(minibatch_size_in_samples, *args, number_of_workers=None,
                       worker_rank=None, **kw):
        if args and isinstance(args[0], numbers.Integral):
            # CNTK's own signature: (num_samples, number_of_workers, worker_rank, device)
            number_of_workers, *args = args
            if args:
                worker_rank, *args = args
            kw.setdefault("device", args[0] if args else None)
            args = ()
        if number_of_workers is not None:
            kw["num_data_partitions"] = number_of_workers
        if worker_rank is not None:
            kw["partition_index"] = worker_rank
        batch = native(minibatch_size_in_samples, *args, **kw)
        for key in list(batch):
            batch[key] = MinibatchData._of(batch[key], as_given=True)
        return batch
    source.next_minibatch = next_minibatch
    native_state, native_restore = source.get_checkpoint_state, source.restore_from_checkpoint

    def get_checkpoint_state():
        state = native_state()
        sweep = state["sweep_length"]
        # CNTK 2.7's keys: the row the next minibatch starts at, and the rows read in all
        state.update(cursor=int(state["position"] % sweep if sweep else state["position"]),
                     total_num_samples=int(state["samples"]))
        return state

    def restore_from_checkpoint(state):
        if isinstance(state, dict) and "version" not in state and \
                {"cursor", "total_num_samples"} <= set(state):
            total = int(state["total_num_samples"])      # (CNTK 2.7's form)
            state = dict(native_state(), position=total, samples=total)
            state.pop("sweep_end_reported", None)
        native_restore(state)
    source.get_checkpoint_state = get_checkpoint_state
    source.restore_from_checkpoint = restore_from_checkpoint
    return source


def _validate_config(max_samples, max_sweeps, window_in_chunks, window_in_samples,
                     randomize: bool, frame_mode: bool, truncation_length,
                     max_errors=0) -> None:
    """CNTK 2.7's refusals of a ``MinibatchSource``'s settings, in its order: a negative
    count is SWIG's OverflowError setting the config's ``size_t``, then ``Validate``'s
    RuntimeErrors (MinibatchSource.cpp:514-527): both ``max_samples`` (``FULL_DATA_SWEEP``
    too) and ``max_sweeps`` given, both windows non-zero (the window in chunks defaults to
    128, so a window in samples needs ``randomization_window_in_chunks=0``; ``randomize=False``
    sets both to 0 first), frame mode with truncation."""
    for name, value in (("max_samples", max_samples), ("max_sweeps", max_sweeps),
                        ("randomization_window_in_chunks", window_in_chunks),
                        ("randomization_window_in_samples", window_in_samples),
                        ("max_errors", max_errors)):
        if not isinstance(value, numbers.Integral):     # (None too: CNTK has no default then)
            raise TypeError(f"in method 'MinibatchSourceConfig_{name}_set', argument 2 of "
                            f"type 'size_t' ({name}={value!r}: CNTK 2.7 takes a count)")
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value < 0:
            raise OverflowError(f"in method 'MinibatchSourceConfig_{name}_set', argument 2 of "
                                f"type 'size_t' ({name}={value}: CNTK 2.7 takes counts >= 0)")
    if max_samples != _io.INFINITELY_REPEAT and max_sweeps != _io.INFINITELY_REPEAT:
        raise RuntimeError("MinibatchSourceConfig: max samples and max sweeps are mutually "
                           f"exclusive options and cannot have non-default values at the same "
                           f"time (max_samples={max_samples}, max_sweeps={max_sweeps}).")
    chunks = _io.DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS if window_in_chunks is None \
        else window_in_chunks
    if randomize and chunks and window_in_samples:
        raise RuntimeError("MinibatchSourceConfig: randomization window in chunks and "
                           "randomization window in samples are mutually exclusive options and "
                           f"cannot have non-zero values at the same time (chunks {chunks}, "
                           f"the default when not given; samples {window_in_samples}: give "
                           "randomization_window_in_chunks=0 with a window in samples).")
    if frame_mode and truncation_length:
        raise RuntimeError("MinibatchSourceConfig: truncation and frame mode are mutually "
                           "exclusive options.")


class MinibatchSource(_io.MinibatchSource):
    """Stadyn's :class:`stadyn.io.MinibatchSource` giving CNTK's :class:`MinibatchData`, made
    with CNTK 2.7's arguments in CNTK's order.

    ``trace_level`` and ``multithreaded_deserializer`` tune CNTK's engine and change nothing
    here; ``frame_mode`` makes every frame a sample.  ``truncation_length`` N > 0 packs
    for truncated back-propagation through time, as CNTK's: a minibatch of M samples has
    ``max(1, M // N)`` slots of N steps each, each going on with its sequences where the
    previous minibatch left them (:class:`stadyn.io.TruncatedPacker`; read in data partitions,
    each partition has its share of the slots and every ``num_data_partitions``-th sequence),
    and a Trainer carries the recurrences' states from one minibatch to the next in each
    slot.  With ``max_errors`` CNTK
    skips up to that many invalid sequences.  Stadyn does so for base64 images it cannot
    decode, as CNTK: each is left out of its minibatch with a warning naming the file and
    line, and a minibatch with a sequence left raises a RuntimeError once more than
    ``max_errors`` were left out; for other malformed input Stadyn stops at the first with
    an error naming the file and line (a warning says so when ``max_errors`` is given).  The
    files of CNTK's deserializers are opened here, and a bad one raises here, as in CNTK
    2.7 (``_configs.py``).  Stadyn's own keywords (``num_workers``, ...) follow.

    Example:
        >>> import numpy as np
        >>> from stadyn.io import NumpyDeserializer
        >>> src = MinibatchSource(NumpyDeserializer({'x': np.arange(4.0)[:, None]}),
        ...                       trace_level=0, randomize=False)
        >>> src.next_minibatch(2)['x'].asarray().tolist()
        [[[0.0]], [[1.0]]]
    """

    def __init__(self, deserializers, max_samples=_io.INFINITELY_REPEAT,
                 max_sweeps=_io.INFINITELY_REPEAT,
                 randomization_window_in_chunks=_io.DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS,
                 randomization_window_in_samples=0, randomization_seed=0, trace_level=None,
                 multithreaded_deserializer=None, frame_mode=False, truncation_length=0,
                 randomize=True, max_errors=0, **kwargs):
        _validate_config(max_samples, max_sweeps, randomization_window_in_chunks,
                         randomization_window_in_samples, randomize, frame_mode,
                         truncation_length, max_errors)
        if not randomize:       # (CNTK sets both windows to 0, whatever was given)
            randomization_window_in_chunks = randomization_window_in_samples = None
        # (CNTK 2.7 opens the deserializers' files here: a bad one raises now)
        deserializers = opened(deserializers)
        base64 = [d for d in (deserializers if isinstance(deserializers, (list, tuple))
                              else [deserializers])
                  if isinstance(d, _io.Base64ImageDeserializer)]
        if max_errors and not base64:
            warnings.warn(f"max_errors={max_errors}: Stadyn stops at the first malformed "
                          f"sequence (an error naming the file and line) instead of skipping "
                          f"it", stacklevel=2)
        # (CNTK 2.7 leaves out an image it cannot decode and counts it against max_errors)
        super().__init__(deserializers, max_samples, max_sweeps, randomization_window_in_chunks,
                         randomization_window_in_samples, randomization_seed, randomize,
                         frame_mode=frame_mode, max_invalid_sequences=int(max_errors),
                         # a restore randomizes anew as CNTK 2.7's block randomizer (not
                         # followed under the truncated packer, which reads on its own)
                         cntk_seeks=not truncation_length,
                         # sweep ends where CNTK's local timeline meets them
                         cntk_sweep_markers=True, **kwargs)
        # truncated back-propagation through time (CNTK's TruncatedBPTTPacker)
        self._packer = _io.TruncatedPacker(self, truncation_length) if truncation_length \
            else None

    def get_checkpoint_state(self) -> dict:
        """The reading position: Stadyn's state, with CNTK 2.7's ``minibatchSourcePosition``
        (the samples of the stream read or stepped over, every partition's, from the start;
        with ``truncation_length``, past the sequences the slots hold).

        Example:
            >>> import numpy as np
            >>> from stadyn.io import NumpyDeserializer
            >>> src = MinibatchSource(NumpyDeserializer({'x': np.arange(9.0)[:, None]}),
            ...                       randomize=False)
            >>> mb = src.next_minibatch(4, num_data_partitions=2, partition_index=1)
            >>> mb['x'].asarray().ravel().tolist(), src.get_checkpoint_state()[
            ...     'minibatchSourcePosition']
            ([1.0, 3.0], 4)
        """
        state = super().get_checkpoint_state()
        state[CNTK_POSITION] = int(state["samples"])
        return state

    def restore_from_checkpoint(self, state) -> None:
        """Go on from ``state``: this source's, or CNTK 2.7's ``{'minibatchSourcePosition':
        samples}`` (a sequence source goes on from the first sequence that starts there or
        after, as CNTK's); with ``truncation_length`` the slots start empty, as CNTK
        2.7's: the steps they held when the state was taken are not given out (with
        sequences of 7, 3, 9, 5, 4, 6, 8 and 2 steps, truncation length 4 and minibatches of
        8, a state taken after two minibatches restores to minibatches of 8, 8 and 4
        samples, where reading on gives 8, 8, 8 and 4).

        Example:
            >>> import numpy as np
            >>> from stadyn.io import NumpyDeserializer
            >>> src = MinibatchSource(NumpyDeserializer({'x': np.arange(9.0)[:, None]}),
            ...                       randomize=False)
            >>> src.restore_from_checkpoint({'minibatchSourcePosition': 12})
            >>> src.next_minibatch(2)['x'].asarray().ravel().tolist()
            [3.0, 4.0]
        """
        if isinstance(state, dict) and "version" not in state and CNTK_POSITION in state:
            state = self._state_at_samples(int(state[CNTK_POSITION]))
        super().restore_from_checkpoint(state)
        if self._packer is not None:
            self._packer.restore(None, state)

    def _state_at_samples(self, samples: int) -> dict:
        """This source's state at CNTK 2.7's position ``samples`` (samples from the start):
        the first sequence that starts there or after (``NoRandomizer::SetState``)."""
        return _io.state_at_samples(self, samples)

    def next_minibatch(self, minibatch_size_in_samples, input_map=None, device=None,
                       num_data_partitions=None, partition_index=None) -> dict:
        if self._max_samples == 0:      # (ReaderBase.cpp:25, when the reader starts an epoch)
            raise RuntimeError("Epoch size cannot be 0. (max_samples=0: CNTK 2.7 reads no "
                               "minibatch of such a source)")
        for name, value in (("num_data_partitions", num_data_partitions),
                            ("partition_index", partition_index)):
            if isinstance(value, numbers.Integral) and value < 0:   # (a size_t to SWIG)
                raise NotImplementedError(
                    f"Wrong number or type of arguments for overloaded function "
                    f"'MinibatchSource_get_next_minibatch'. ({name}={value}: CNTK 2.7 takes "
                    f"an unsigned count)")
        if self._packer is not None:
            batch = self._packer.next_minibatch(minibatch_size_in_samples, input_map,
                                                num_data_partitions, partition_index)
        else:
            batch = super().next_minibatch(minibatch_size_in_samples, input_map, device,
                                           num_data_partitions, partition_index)
        for key in list(batch):
            batch[key] = MinibatchData._of(batch[key])
            batch[key]._truncated = None if self._packer is None else self._packer.layout
        return batch
