"""NNabla-style data iterators: endless minibatches that wrap across epochs.

A :class:`DataIterator` draws samples from a data source (``size`` samples, each a tuple of
arrays) in order or shuffled, and returns batches as tuples of stacked NumPy arrays.  A batch that
reaches the end of an epoch continues into the next one; the epoch counter increments (and the
end/begin callbacks run) inside the ``next()`` call that consumed the epoch's last sample — so
with 1,797 samples and batch 16 the epochs take 112, 111, 111, 112, ... calls, as in NNabla.

Batches are prepared one ahead in a background thread (``use_thread=True``); the order, shuffles
and callbacks are the same either way.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["DataSource", "SimpleDataSource", "DataIterator", "data_iterator",
           "data_iterator_simple"]


class DataSource:
    """What a :class:`DataIterator` reads: ``size`` samples, each a tuple of arrays.

    Subclasses implement :meth:`get` (one sample) and may override :meth:`get_batch`.
    """

    variables: tuple[str, ...] = ("x", "y")

    @property
    def size(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def get(self, index: int) -> tuple[np.ndarray, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def get_batch(self, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        samples = [self.get(int(i)) for i in indices]
        return tuple(np.stack([np.asarray(s[k]) for s in samples])
                     for k in range(len(samples[0])))


class SimpleDataSource(DataSource):
    """Samples from ``load_func(index) -> tuple of arrays``; with a memory cache every sample is
    loaded once, up front, into stacked arrays (batches are then one fancy-indexing each)."""

    def __init__(self, load_func: Callable[[int], Sequence[Any]], num_examples: int,
                 with_memory_cache: bool = True, variables: Sequence[str] | None = None):
        if num_examples <= 0:
            raise ValueError(f"a data source needs at least one example, got {num_examples}")
        self._load = load_func
        self._size = int(num_examples)
        self._cache: tuple[np.ndarray, ...] | None = None
        first = self._sample(0)
        self.variables = tuple(variables) if variables else tuple(
            f"x{i}" if len(first) > 1 else "x" for i in range(len(first)))
        if with_memory_cache:
            self._cache = DataSource.get_batch(self, np.arange(self._size))

    def _sample(self, index: int) -> tuple[np.ndarray, ...]:
        sample = self._load(index)
        if not isinstance(sample, (tuple, list)):
            sample = (sample,)
        return tuple(np.asarray(s) for s in sample)

    @property
    def size(self) -> int:
        return self._size

    def get(self, index: int) -> tuple[np.ndarray, ...]:
        if self._cache is not None:
            return tuple(c[index] for c in self._cache)
        return self._sample(index)

    def get_batch(self, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        if self._cache is not None:
            return tuple(c[indices] for c in self._cache)
        return DataSource.get_batch(self, indices)


class DataIterator:
    """Minibatches from a :class:`DataSource`, wrapping across epochs (NNabla semantics).

    Example:
        >>> import numpy as np
        >>> from stadyn.io import data_iterator_simple
        >>> it = data_iterator_simple(lambda i: (np.full(2, i), np.array([i % 2])), 5, 2,
        ...                           use_thread=False)
        >>> [it.next()[0][:, 0].tolist() for _ in range(3)], it.epoch
        ([[0, 1], [2, 3], [4, 0]], 1)
    """

    def __init__(self, data_source: DataSource, batch_size: int, rng: np.random.RandomState |
                 None = None, shuffle: bool = False, epoch_begin_callbacks: Sequence[Callable] = (),
                 epoch_end_callbacks: Sequence[Callable] = (), stop_exhausted: bool = False,
                 use_thread: bool = True):
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self._source = data_source
        self._batch_size = int(batch_size)
        self._shuffle = bool(shuffle)
        self._rng = rng if rng is not None else np.random.RandomState(313)
        self._begin = list(epoch_begin_callbacks)
        self._end = list(epoch_end_callbacks)
        self._stop_exhausted = bool(stop_exhausted)
        self._epoch = 0
        self._position = 0            # samples of the current epoch already returned
        self._plan_order = self._new_order()
        self._plan_position = 0       # where the planner (one batch ahead) stands
        self._plan_epoch_orders: list[np.ndarray] = []
        self._pool = (concurrent.futures.ThreadPoolExecutor(1, "stadyn-data")
                      if use_thread else None)
        self._pending: concurrent.futures.Future | None = None
        self._exhausted = False

    # -- properties -----------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self._source.size

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def position(self) -> int:
        return self._position

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(self._source.variables)

    def register_epoch_begin_callback(self, callback: Callable[[int], Any]) -> None:
        self._begin.append(callback)

    def register_epoch_end_callback(self, callback: Callable[[int], Any]) -> None:
        self._end.append(callback)

    # -- iteration ------------------------------------------------------------------------------
    def _new_order(self) -> np.ndarray:
        n = self._source.size
        return self._rng.permutation(n) if self._shuffle else np.arange(n)

    def _plan(self) -> tuple[np.ndarray, list[int]]:
        """Indices of the next batch and the offsets (within it) where epochs end."""
        n = self._source.size
        parts, ends = [], []
        need = self._batch_size
        while need:
            take = min(need, n - self._plan_position)
            parts.append(self._plan_order[self._plan_position:self._plan_position + take])
            self._plan_position += take
            need -= take
            if self._plan_position == n:
                ends.append(self._batch_size - need)
                self._plan_order = self._new_order()
                self._plan_position = 0
                if self._stop_exhausted:
                    break
        return np.concatenate(parts), ends

    def _prepare(self) -> tuple[tuple[np.ndarray, ...], list[int]]:
        indices, ends = self._plan()
        return self._source.get_batch(indices), ends

    def next(self) -> tuple[np.ndarray, ...]:
        """The next batch: a tuple with one stacked array per variable of the source."""
        if self._exhausted:
            self._exhausted = False
            raise StopIteration
        if self._pending is not None:
            batch, ends = self._pending.result()
        else:
            batch, ends = self._prepare()
        self._pending = self._pool.submit(self._prepare) if self._pool is not None else None
        taken = batch[0].shape[0]
        self._position += taken
        for _ in ends:
            for cb in self._end:
                cb(self._epoch)
            self._epoch += 1
            self._position = taken - ends[-1]
            for cb in self._begin:
                cb(self._epoch)
        if ends and self._stop_exhausted:
            self._exhausted = True
        return batch

    __next__ = next

    def __iter__(self):
        return self

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False)


def data_iterator(data_source: DataSource, batch_size: int, rng=None, shuffle: bool = False,
                  epoch_begin_callbacks=(), epoch_end_callbacks=(), stop_exhausted=False,
                  use_thread: bool = True, **_ignored) -> DataIterator:
    """A :class:`DataIterator` over ``data_source``."""
    return DataIterator(data_source, batch_size, rng, shuffle, epoch_begin_callbacks,
                        epoch_end_callbacks, stop_exhausted, use_thread)


def data_iterator_simple(load_func: Callable[[int], Sequence[Any]], num_examples: int,
                         batch_size: int, shuffle: bool = False, rng=None,
                         use_thread: bool = True, with_memory_cache: bool = True,
                         with_file_cache: bool = False, cache_dir: str | None = None,
                         epoch_begin_callbacks=(), epoch_end_callbacks=(),
                         stop_exhausted: bool = False) -> DataIterator:
    """NNabla's ``data_iterator_simple``: batches of ``load_func(i)`` for ``i < num_examples``.

    ``rng`` (a NumPy ``RandomState``) drives shuffling; by default a fixed seed (313) makes runs
    reproducible.  ``with_file_cache``/``cache_dir`` are accepted for compatibility and ignored
    (the memory cache covers what they did).

    Example:
        >>> import numpy as np
        >>> from stadyn.io import data_iterator_simple
        >>> it = data_iterator_simple(lambda i: (np.array([i]),), 10, 4, use_thread=False)
        >>> it.next()[0].ravel().tolist()
        [0, 1, 2, 3]
    """
    source = SimpleDataSource(load_func, num_examples, with_memory_cache)
    return DataIterator(source, batch_size, rng, shuffle, epoch_begin_callbacks,
                        epoch_end_callbacks, stop_exhausted, use_thread)
