"""A source's reading position given as CNTK gives one: samples from the start of the data.

CNTK 2.7's readers keep their position as ``minibatchSourcePosition``, the samples read or
stepped over since the start (every partition's), and set themselves to such a position by
going to the first sequence that starts there or after (``NoRandomizer::SetState``,
``BlockRandomizer::SetState``): a restore of a CNTK checkpoint, and cntk.exe's start of every
epoch at ``epoch x epochSize`` (``StartEpoch``, Source/Readers/ReaderLib).
"""

from __future__ import annotations

import numpy as np

from ._source import INFINITELY_REPEAT

__all__ = ["state_at_samples", "start_epoch_at"]


def state_at_samples(source, samples: int) -> dict:
    """The checkpoint state (``source.get_checkpoint_state()``'s form) of the
    :class:`~stadyn.io.MinibatchSource` ``source`` standing at the first sequence that starts
    ``samples`` samples from the start of its data or after, sweeps repeated (in the
    randomized order where it randomizes); ``source.restore_from_checkpoint`` of it goes
    there, as CNTK's reader does.

    Example:
        >>> import numpy as np
        >>> from stadyn.io import MinibatchSource, NumpyDeserializer, state_at_samples
        >>> src = MinibatchSource(NumpyDeserializer({"x": np.arange(5.0)[:, None]}),
        ...                       randomize=False)
        >>> src.restore_from_checkpoint(state_at_samples(src, 12))   # sweep 3, sample 2
        >>> src.next_minibatch(2)["x"].asarray().ravel().tolist()
        [2.0, 3.0]
    """
    state = source.get_checkpoint_state()
    state.pop("sweep_end_reported", None)
    sweep_samples = source.sweep_size
    if not sweep_samples:
        return state
    sweep, within = divmod(int(samples), sweep_samples)
    length = source._sweep_length
    positions = np.arange(sweep * length, (sweep + 1) * length)
    lengths = np.ones(len(positions), np.int64) if source._lengths is None else \
        source._lengths[source._sample_ids(positions)].astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    index = int(np.searchsorted(starts, within, side="left"))
    state.update(position=int(positions[0] + index),
                 samples=int(sweep * sweep_samples + starts[index]))
    return state


def start_epoch_at(source, epoch: int, epoch_size: int, minibatch_size=None) -> None:
    """Start epoch ``epoch`` (from 0) of ``epoch_size`` samples of the
    :class:`~stadyn.io.MinibatchSource` ``source`` as cntk.exe's reader starts it
    (``StartEpoch``): at ``epoch x epoch_size`` samples from the start of the data
    (:func:`state_at_samples`), the epoch ending where the stream reaches ``(epoch + 1) x
    epoch_size`` samples -- every partition's reads stop there, so the workers of a
    data-parallel job each read their share of the same samples, whatever their own cursors
    did in the epoch before.  The form of ``Trainer.fit``'s reader that ends its own epochs
    (``minibatch_size`` is not read).

    Example:
        >>> import numpy as np
        >>> from stadyn.io import MinibatchSource, NumpyDeserializer, start_epoch_at
        >>> src = MinibatchSource(NumpyDeserializer({"x": np.arange(30.0)[:, None]}),
        ...                       randomize=False)
        >>> start_epoch_at(src, 1, 12)
        >>> [src.next_minibatch(5, num_data_partitions=2, partition_index=1)["x"].asarray()
        ...  .ravel().tolist() for _ in range(3)]
        [[13.0, 15.0], [17.0, 19.0], [21.0, 23.0]]
        >>> src.next_minibatch(5, num_data_partitions=2, partition_index=1)
        {}
    """
    source._epoch_end = INFINITELY_REPEAT
    source._single_seek = True      # (cntk.exe's StartEpoch: its reader set there once)
    try:
        source.restore_from_checkpoint(state_at_samples(source, epoch * epoch_size))
    finally:
        source._single_seek = False
    source._epoch_end = (epoch + 1) * epoch_size
