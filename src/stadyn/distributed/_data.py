"""Sharding NNabla-style data iterators by rank.

:class:`ShardedDataIterator` gives each worker its share of *global* minibatches.  Every worker
walks the same endless stream of sample indices — the sweeps' orders drawn one after another from
one seeded generator, exactly as a :class:`stadyn.io.DataIterator` with the global batch size
would draw them — and worker ``r`` of ``W`` takes the positions ``p`` with ``p % W == r`` of each
global minibatch of ``W * batch_size`` positions (the rule of
``MinibatchSource.next_minibatch(num_data_partitions=W, partition_index=r)``).  So

* every sample is seen exactly once per sweep across the workers;
* the global minibatches are those of one process with ``batch_size * W`` and the same seed, so
  a data-parallel run can be checked against a single-process run;
* a worker loads only its own samples;
* the position (and the generator's state) is a small JSON-able dict for checkpoints.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ._env import DistributedError, rank, size

__all__ = ["ShardedDataIterator", "slice_data_iterator"]

_STATE_VERSION = 1


class ShardedDataIterator:
    """Worker ``slice_pos``'s share of global minibatches (see the module docstring).

    Args:
        data_source: a :class:`stadyn.io._data_iterator.DataSource` (``size``, ``get_batch``).
        batch_size: samples per worker per minibatch; the global minibatch is
            ``batch_size * num_of_slices``.
        rng: a ``numpy.random.RandomState`` or an int seed (default 313, NNabla's); every worker
            must use the same.
        shuffle: a new permutation per sweep (else the source's order).
        num_of_slices, slice_pos: workers and this worker's index (default: the process
            group's size and rank).
        epoch_end_callbacks, epoch_begin_callbacks: called with the epoch number as a sweep
            ends or begins (in the ``next()`` that crossed it, as NNabla's DataIterator).

    Example:
        >>> import numpy as np
        >>> from stadyn.io._data_iterator import SimpleDataSource
        >>> src = SimpleDataSource(lambda i: (np.array([i]),), 6)
        >>> a = ShardedDataIterator(src, 2, num_of_slices=2, slice_pos=0)
        >>> b = ShardedDataIterator(src, 2, num_of_slices=2, slice_pos=1)
        >>> [a.next()[0].ravel().tolist() for _ in range(2)], a.epoch
        ([[0, 2], [4, 0]], 1)
        >>> [b.next()[0].ravel().tolist() for _ in range(2)]
        [[1, 3], [5, 1]]
    """

    def __init__(self, data_source, batch_size: int,
                 rng: np.random.RandomState | int | None = None, shuffle: bool = False,
                 num_of_slices: int | None = None, slice_pos: int | None = None,
                 epoch_end_callbacks: Sequence[Callable] = (),
                 epoch_begin_callbacks: Sequence[Callable] = ()):
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self._slices = size() if num_of_slices is None else int(num_of_slices)
        self._pos = rank() if slice_pos is None else int(slice_pos)
        if self._slices < 1 or not 0 <= self._pos < self._slices:
            raise DistributedError(f"slice_pos must be in 0..num_of_slices-1, got {self._pos} "
                                   f"of {self._slices}")
        self._source = data_source
        self._n = int(data_source.size)
        if self._n < 1:
            raise ValueError("the data source is empty")
        self._batch = int(batch_size)
        self._shuffle = bool(shuffle)
        if rng is None or isinstance(rng, (int, np.integer)):
            rng = np.random.RandomState(313 if rng is None else int(rng))
        self._rng = rng
        self._end = list(epoch_end_callbacks)
        self._begin = list(epoch_begin_callbacks)
        self._consumed = 0            # global positions consumed
        self._orders: dict[int, np.ndarray] = {}
        self._drawn = -1              # the last sweep whose order was drawn
        self._state_before: dict[int, Any] = {}
        self._draw(0)

    # -- NNabla's DataIterator surface -----------------------------------------------------------
    @property
    def size(self) -> int:
        """Samples in one sweep of the whole data set (all workers together)."""
        return self._n

    @property
    def batch_size(self) -> int:
        return self._batch

    @property
    def global_batch_size(self) -> int:
        return self._batch * self._slices

    @property
    def epoch(self) -> int:
        return self._consumed // self._n

    @property
    def position(self) -> int:
        """Global positions consumed in the current sweep."""
        return self._consumed % self._n

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(getattr(self._source, "variables", ()))

    def register_epoch_end_callback(self, callback: Callable[[int], Any]) -> None:
        self._end.append(callback)

    def register_epoch_begin_callback(self, callback: Callable[[int], Any]) -> None:
        self._begin.append(callback)

    def _draw(self, sweep: int) -> np.ndarray:
        while self._drawn < sweep:
            self._drawn += 1
            self._state_before[self._drawn] = self._rng.get_state()
            self._orders[self._drawn] = (self._rng.permutation(self._n) if self._shuffle
                                         else np.arange(self._n))
        for old in [k for k in self._orders if k < sweep - 1]:
            del self._orders[old]
            self._state_before.pop(old, None)
        return self._orders[sweep]

    def indices(self, start: int, stop: int) -> np.ndarray:
        """Sample indices at global positions ``start..stop-1``."""
        positions = np.arange(start, stop, dtype=np.int64)
        sweeps = positions // self._n
        out = np.empty_like(positions)
        for sweep in np.unique(sweeps).tolist():
            sel = sweeps == sweep
            out[sel] = self._draw(int(sweep))[positions[sel] % self._n]
        return out

    def next(self) -> tuple[np.ndarray, ...]:
        """This worker's part of the next global minibatch (a tuple of stacked arrays)."""
        start = self._consumed
        stop = start + self.global_batch_size
        mine = self.indices(start, stop)[self._pos::self._slices]
        batch = self._source.get_batch(mine)
        before, after = start // self._n, stop // self._n
        self._consumed = stop
        for epoch in range(before, after):
            for cb in self._end:
                cb(epoch)
            for cb in self._begin:
                cb(epoch + 1)
        return batch

    __next__ = next

    def __iter__(self):
        return self

    # -- checkpoints -----------------------------------------------------------------------------
    def get_checkpoint_state(self) -> dict:
        """The position and generator state (JSON-able; the same on every worker)."""
        sweep = self._consumed // self._n
        self._draw(sweep)
        name, keys, pos, has_gauss, cached = self._state_before[sweep]
        return {"version": _STATE_VERSION, "consumed": self._consumed, "size": self._n,
                "shuffle": self._shuffle, "global_batch_size": self.global_batch_size,
                "rng": [name, np.asarray(keys).tolist(), int(pos), int(has_gauss),
                        float(cached)]}

    def restore_from_checkpoint(self, state: Mapping[str, Any]) -> None:
        """Continue where :meth:`get_checkpoint_state` was taken (the batches that follow equal
        an uninterrupted run's)."""
        if state.get("version") != _STATE_VERSION:
            raise ValueError(f"unknown data iterator state version {state.get('version')!r}")
        if state["size"] != self._n or state["shuffle"] != self._shuffle:
            raise ValueError(f"the checkpoint was taken on {state['size']} samples "
                             f"(shuffle={state['shuffle']}); this iterator has {self._n} "
                             f"(shuffle={self._shuffle})")
        name, keys, pos, has_gauss, cached = state["rng"]
        self._rng.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
        self._consumed = int(state["consumed"])
        sweep = self._consumed // self._n
        self._orders.clear()
        self._state_before.clear()
        self._drawn = sweep - 1
        self._draw(sweep)


def slice_data_iterator(data_iterator, rng: np.random.RandomState | int | None = None,
                        num_of_slices: int | None = None, slice_pos: int | None = None
                        ) -> ShardedDataIterator:
    """This worker's shard of ``data_iterator`` (NNabla's ``DataIterator.slice``): a
    :class:`ShardedDataIterator` over the same source, with the same per-worker batch size and
    shuffle flag, drawing its order from ``rng`` (the same seed on every worker).

    Unlike NNabla, which gives each worker a fixed contiguous part of the data set shuffled on
    its own, the workers share one order per sweep, so together they see exactly the global
    minibatches of a single process (see :class:`ShardedDataIterator`).
    """
    source = getattr(data_iterator, "_source", None)
    if source is None:
        raise TypeError(f"slice_data_iterator needs a stadyn DataIterator, got "
                        f"{type(data_iterator).__name__}")
    return ShardedDataIterator(source, data_iterator.batch_size, rng,
                               bool(getattr(data_iterator, "_shuffle", False)),
                               num_of_slices, slice_pos)
