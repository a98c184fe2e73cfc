"""CNTK's view of a minibatch from a deserializer: every sample is a sequence of one step, so
``MinibatchData.asarray()`` (and ``shape``) is ``(N, 1, *sample_shape)`` for non-sequence
streams, as CNTK 2.7 gives it.  ``MinibatchSourceFromData`` keeps ``(N, *sample_shape)``, as
CNTK's does."""

from __future__ import annotations

import warnings

import numpy as np

from .... import io as _io

__all__ = ["MinibatchData", "MinibatchSource"]


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

    __slots__ = ("_as_given",)

    def __init__(self, value, num_sequences: int, num_samples: int, sweep_end: bool,
                 lengths=None, is_sparse: bool = False):
        data = value.asarray() if hasattr(value, "asarray") else np.asarray(value)
        if lengths is None and getattr(value, "lengths", None) is not None:
            lengths = np.asarray(value.lengths)     # Value.one_hot's padded sequences' lengths
        super().__init__(data, num_samples, num_sequences, sweep_end, lengths, is_sparse)
        self._as_given = True

    def asarray(self) -> np.ndarray:
        """The data: ``(N, 1, *shape)`` for a deserializer's non-sequence streams
        (``(N, T, *shape)`` for sequences); a user source's as it gave it."""
        if self._as_given or self.lengths is not None:
            return self.data
        return self.data[:, None]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.asarray().shape)

    def as_sequences(self, variable=None) -> list[np.ndarray]:
        """One array per sequence; ``variable`` (which CNTK needs for sparse data) is accepted
        and unused: sparse streams are delivered dense."""
        return super().as_sequences()

    @classmethod
    def _of(cls, data: _io.MinibatchData) -> "MinibatchData":
        """A native minibatch's data seen as CNTK's."""
        out = cls(data.data, data.num_sequences, data.num_samples, data.end_of_sweep,
                  data.lengths, data.is_sparse)
        out._as_given = False
        return out


class MinibatchSource(_io.MinibatchSource):
    """Stadyn's :class:`stadyn.io.MinibatchSource` giving CNTK's :class:`MinibatchData`, made
    with CNTK 2.7's arguments in CNTK's order.

    ``trace_level`` and ``multithreaded_deserializer`` tune CNTK's engine and change nothing
    here; ``frame_mode`` makes every frame a sample.  ``truncation_length`` (truncated BPTT
    packing) is not supported: a non-zero value is a ValueError.  With ``max_errors`` CNTK
    skips up to that many malformed sequences; Stadyn stops at the first with an error naming
    the file and line (a warning says so when ``max_errors`` is given).  Stadyn's own keywords
    (``num_workers``, ...) follow.

    Example:
        >>> import numpy as np
        >>> from stadyn.io import NumpyDeserializer
        >>> src = MinibatchSource(NumpyDeserializer({'x': np.arange(4.0)[:, None]}),
        ...                       trace_level=0, randomize=False)
        >>> src.next_minibatch(2)['x'].asarray().tolist()
        [[[0.0]], [[1.0]]]
    """

    def __init__(self, deserializers, max_samples=_io.INFINITELY_REPEAT,
                 max_sweeps=_io.INFINITELY_REPEAT, randomization_window_in_chunks=None,
                 randomization_window_in_samples=None, randomization_seed=0, trace_level=None,
                 multithreaded_deserializer=None, frame_mode=False, truncation_length=0,
                 randomize=True, max_errors=0, **kwargs):
        if truncation_length:
            raise ValueError(f"truncation_length={truncation_length}: truncated BPTT packing is "
                             f"not supported by Stadyn's MinibatchSource")
        if max_errors:
            warnings.warn(f"max_errors={max_errors}: Stadyn stops at the first malformed "
                          f"sequence (an error naming the file and line) instead of skipping "
                          f"it", stacklevel=2)
        super().__init__(deserializers, max_samples, max_sweeps, randomization_window_in_chunks,
                         randomization_window_in_samples, randomization_seed, randomize,
                         frame_mode=frame_mode, **kwargs)

    def next_minibatch(self, minibatch_size_in_samples, input_map=None, device=None,
                       num_data_partitions=None, partition_index=None) -> dict:
        batch = super().next_minibatch(minibatch_size_in_samples, input_map, device,
                                       num_data_partitions, partition_index)
        for key in list(batch):
            batch[key] = MinibatchData._of(batch[key])
        return batch
