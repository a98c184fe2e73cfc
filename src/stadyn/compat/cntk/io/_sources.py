"""CNTK's view of a minibatch from a deserializer: every sample is a sequence of one step, so
``MinibatchData.asarray()`` (and ``shape``) is ``(N, 1, *sample_shape)`` for non-sequence
streams, as CNTK 2.7 gives it.  ``MinibatchSourceFromData`` keeps ``(N, *sample_shape)``, as
CNTK's does."""

from __future__ import annotations

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
    """Stadyn's :class:`stadyn.io.MinibatchSource` giving CNTK's :class:`MinibatchData`."""

    def next_minibatch(self, minibatch_size_in_samples, input_map=None, device=None,
                       num_data_partitions=None, partition_index=None) -> dict:
        batch = super().next_minibatch(minibatch_size_in_samples, input_map, device,
                                       num_data_partitions, partition_index)
        for key in list(batch):
            batch[key] = MinibatchData._of(batch[key])
        return batch
