"""CNTK's view of a minibatch from a deserializer: every sample is a sequence of one step, so
``MinibatchData.asarray()`` (and ``shape``) is ``(N, 1, *sample_shape)`` for non-sequence
streams, as CNTK 2.7 gives it.  ``MinibatchSourceFromData`` keeps ``(N, *sample_shape)``, as
CNTK's does."""

from __future__ import annotations

import numpy as np

from .... import io as _io

__all__ = ["MinibatchData", "MinibatchSource"]


class MinibatchData(_io.MinibatchData):
    """The data of one stream in one minibatch (CNTK's ``MinibatchData``): ``data`` is
    ``(N, *shape)``; ``asarray()`` and ``shape`` show each sample as a sequence of one step.

    Example:
        >>> import numpy as np
        >>> d = MinibatchData(np.zeros((4, 3), np.float32), 4, 4, False)
        >>> d.asarray().shape, d.shape, d.num_samples
        ((4, 1, 3), (4, 1, 3), 4)
    """

    __slots__ = ()

    def asarray(self) -> np.ndarray:
        """The data, ``(N, 1, *shape)`` for non-sequence streams (``(N, T, *shape)`` for
        sequences)."""
        return self.data if self.lengths is not None else self.data[:, None]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.asarray().shape)

    @classmethod
    def _of(cls, data: _io.MinibatchData) -> "MinibatchData":
        """A native minibatch's data seen as CNTK's."""
        return cls(data.data, data.num_samples, data.num_sequences, data.end_of_sweep,
                   data.lengths, data.is_sparse)


class MinibatchSource(_io.MinibatchSource):
    """Stadyn's :class:`stadyn.io.MinibatchSource` giving CNTK's :class:`MinibatchData`."""

    def next_minibatch(self, minibatch_size_in_samples, input_map=None, device=None,
                       num_data_partitions=None, partition_index=None) -> dict:
        batch = super().next_minibatch(minibatch_size_in_samples, input_map, device,
                                       num_data_partitions, partition_index)
        for key in list(batch):
            batch[key] = MinibatchData._of(batch[key])
        return batch
