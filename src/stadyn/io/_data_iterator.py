"""NNabla's data iterators: endless minibatches from a data source, as NNabla 1.39 gives them.

A :class:`DataIterator` reads ``batch_size`` samples from a :class:`~stadyn.io.DataSource` per
``next()`` and returns one stacked array per variable.  A batch that reaches the end of an
epoch resets the source and continues into the next epoch; the epoch counter increments (and
the end/begin callbacks run) inside the ``next()`` that returned the epoch's last sample -- so
with 1,797 samples and batch 16 the epochs take 112, 111, 111, 112, ... calls.  Which samples a
shuffled epoch holds is the source's business (see ``stadyn.io._data_source``).

With ``stop_exhausted=True`` an epoch ends instead: the batches that fit whole are returned and
then ``StopIteration`` (10 samples in batches of 4: two batches); the iterator stays exhausted.

With ``use_thread=True`` (the default) the next batch is read in a background thread as soon as
one is returned, as NNabla does; :attr:`DataIterator.position` then reports the source's
position after that prefetched batch -- one batch ahead of what ``next()`` returned, which is
what NNabla reports (it waits for the prefetch to finish, so the value does not depend on
timing).  The batches, their order and the callbacks are the same either way.

Stadyn adds ``shuffle=True`` on the iterator itself (keyword only): each epoch is then a fresh
permutation of the source's samples drawn from ``rng``, the batch that crosses an epoch's end
continuing in the new order -- the orders :class:`stadyn.distributed.ShardedDataIterator`
shares out between workers.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, Callable, Sequence

import numpy as np

from ._csv_data_source import CsvDataSource
from ._data_cache import (CacheDataSource, DataSourceWithFileCache, current_file_cache_settings,
                          file_cache_settings)
from ._data_source import (ConcatDataSource, DataSource, DataSourceWithMemoryCache,
                           SimpleDataSource, SlicedDataSource)

__all__ = ["DataIterator", "data_iterator", "data_iterator_simple", "data_iterator_csv_dataset",
           "data_iterator_cache", "data_iterator_concat_datasets"]


class _EpochShuffled(DataSource):
    """``DataIterator(shuffle=True)``: a new permutation of ``source``'s samples, drawn from
    ``rng`` at construction and whenever an epoch ends."""

    def __init__(self, source: DataSource, rng: np.random.RandomState):
        super().__init__(shuffle=True, rng=rng)
        if source.shuffle:
            raise ValueError("the data source shuffles already; shuffle either the source or "
                             "the iterator")
        self._source = source
        self._size = source.size
        self._variables = source.variables
        self._order = self._rng.permutation(self._size)

    def _get_data(self, position: int):
        return self._source.get(int(self._order[position]))

    def reset(self) -> None:
        if self._position:
            self._order = self._rng.permutation(self._size)
        super().reset()

    def get(self, index: int):
        return self._source.get(index)

    def close(self) -> None:
        self._source.close()
        super().close()


class DataIterator:
    """Minibatches from a :class:`~stadyn.io.DataSource`, wrapping across epochs (NNabla 1.39's
    semantics; see the module docstring).

    Args:
        data_source: the samples (a :class:`~stadyn.io.DataSource`).
        batch_size: samples per ``next()``.
        rng: the generator of ``shuffle=True`` (default: seed 313); NNabla's iterator keeps it
            unused -- its sources shuffle with their own.
        use_thread: read the next batch in a background thread while the program works.
        epoch_begin_callbacks, epoch_end_callbacks: functions of the epoch number, called as an
            epoch begins or ends (inside the ``next()`` that crossed it).
        stop_exhausted: end each epoch with ``StopIteration`` instead of wrapping around; a
            last batch that would not be whole is not returned.
        shuffle: (Stadyn) draw a new permutation of the source's samples for every epoch from
            ``rng``; the source must not shuffle itself.

    Example:
        >>> import numpy as np
        >>> from stadyn.io import data_iterator_simple
        >>> it = data_iterator_simple(lambda i: (np.full(2, i), np.array([i % 2])), 5, 2,
        ...                           use_thread=False)
        >>> [it.next()[0][:, 0].tolist() for _ in range(3)], it.epoch
        ([[0, 1], [2, 3], [4, 0]], 1)
    """

    def __init__(self, data_source: DataSource, batch_size: int,
                 rng: np.random.RandomState | None = None, use_thread: bool = True,
                 epoch_begin_callbacks: Sequence[Callable[[int], Any]] = (),
                 epoch_end_callbacks: Sequence[Callable[[int], Any]] = (),
                 stop_exhausted: bool = False, *, shuffle: bool = False):
        if int(batch_size) <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self._rng = np.random.RandomState(313) if rng is None else rng
        self._source = data_source
        self._shuffle = bool(shuffle) or bool(getattr(data_source, "shuffle", False))
        self._reader = _EpochShuffled(data_source, self._rng) if shuffle else data_source
        self._batch_size = int(batch_size)
        self._begin = list(epoch_begin_callbacks)
        self._end = list(epoch_end_callbacks)
        self._stop_exhausted = bool(stop_exhausted)
        self._cache_settings = current_file_cache_settings()   # for the caches of slice()
        self._size = data_source.size
        self._variables = data_source.variables       # NNabla shows the source's own
        self._epoch = 0
        self._exhausted = False
        self._reader.reset()
        self._pool = (concurrent.futures.ThreadPoolExecutor(1, "stadyn-data")
                      if use_thread else None)
        self._pending: concurrent.futures.Future | None = None
        self._prefetch()

    # -- properties -----------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """Samples in one epoch (the source's size)."""
        return self._size

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def epoch(self) -> int:
        """Epochs completed by the batches returned so far."""
        return self._epoch

    @property
    def position(self) -> int:
        """The source's position in the current epoch: after the last batch read, which with
        ``use_thread`` is the one prefetched after the batch ``next()`` returned."""
        if self._pending is not None:
            concurrent.futures.wait([self._pending])
        return self._reader.position

    @property
    def variables(self) -> Sequence[str]:
        """The source's variable names (its own object, as NNabla's: a CSV source's tuple,
        a cache source's list)."""
        return self._variables

    @property
    def _data_source(self) -> DataSource:
        """The source read, by NNabla's private name (nnabla-examples' VQ-VAE takes its images'
        variance from ``data_loader._data_source._images``)."""
        return self._source

    def _reset(self) -> None:
        """Reset the source (its ``reset()``: position 0, and a new order if it shuffles), by
        NNabla's private name (nnabla-examples' ENAS rewinds its validation data with
        ``vdata._reset()``).  As in NNabla 1.39, a batch already read ahead (``use_thread``)
        is not read again: the next ``next()`` still returns it, the one after starts from
        the reset source; the epoch count is unchanged."""
        if self._pending is not None:
            concurrent.futures.wait([self._pending])
        self._reader.reset()

    def register_epoch_begin_callback(self, callback: Callable[[int], Any]) -> None:
        self._begin.append(callback)

    def register_epoch_end_callback(self, callback: Callable[[int], Any]) -> None:
        self._end.append(callback)

    # -- reading --------------------------------------------------------------------------------
    def _read_batch(self) -> tuple[tuple[np.ndarray, ...], int] | None:
        """One batch and the number of epoch ends it crossed; None when ``stop_exhausted`` and
        the epoch has no whole batch left."""
        source = self._reader
        if self._stop_exhausted and source.position + self._batch_size > self._size:
            return None
        columns: list[list[Any]] = [[] for _ in self._variables]
        resets = 0
        for _ in range(self._batch_size):
            sample = source.next()
            if source.position >= self._size and not self._stop_exhausted:
                resets += 1
                source.reset()
            for column, value in zip(columns, sample):
                column.append(value)
        if resets:
            source.apply_order()
        return tuple(np.array(c) for c in columns), resets

    def _prefetch(self) -> None:
        if self._pool is not None:
            self._pending = self._pool.submit(self._read_batch)

    def next(self) -> tuple[np.ndarray, ...]:
        """The next batch: a tuple with one stacked array per variable of the source."""
        if self._exhausted:
            raise StopIteration
        if self._pending is not None:
            pending, self._pending = self._pending, None
            result = pending.result()
        else:
            result = self._read_batch()
        if result is None:
            self._exhausted = True
            raise StopIteration
        self._prefetch()
        batch, resets = result
        for _ in range(resets):
            for callback in self._end:
                callback(self._epoch)
            self._epoch += 1
            for callback in self._begin:
                callback(self._epoch)
        return batch

    __next__ = next

    def __iter__(self):
        return self

    # -- slicing --------------------------------------------------------------------------------
    def slice(self, rng: np.random.RandomState | None, num_of_slices: int | None = None,
              slice_pos: int | None = None, slice_start: int | None = None,
              slice_end: int | None = None, cache_dir: str | None = None,
              use_cache: bool = False, drop_last: bool = False) -> "DataIterator":
        """An iterator over part of this one's source: slice ``slice_pos`` of
        ``num_of_slices`` equal parts (without ``drop_last``, the last part is moved back to
        end at the last sample, so every part is as long), or positions
        ``slice_start..slice_end``.  With ``use_cache``, the part is read through a memory
        cache (and a file cache in ``cache_dir`` when given, written with the
        :class:`~stadyn.io.FileCacheSettings` this iterator was made with).

        Example:
            >>> import numpy as np
            >>> from stadyn.io import data_iterator_simple
            >>> it = data_iterator_simple(lambda i: (np.array(i),), 10, 2, use_thread=False)
            >>> part = it.slice(None, num_of_slices=3, slice_pos=2)
            >>> part.size, part.next()[0].tolist()
            (4, [6, 7])
        """
        by_position = num_of_slices is not None and slice_pos is not None
        by_range = slice_start is not None and slice_end is not None
        if by_position == by_range or (by_position and (slice_start is not None
                                                        or slice_end is not None)):
            raise ValueError("slice() takes either num_of_slices and slice_pos, or "
                             "slice_start and slice_end")
        if by_position:
            if not 0 <= int(slice_pos) < int(num_of_slices):
                raise ValueError(f"slice_pos must be in 0..{int(num_of_slices) - 1}, got "
                                 f"{slice_pos}")
            slice_start, slice_end = _slice_bounds(self._size, int(num_of_slices),
                                                   int(slice_pos), drop_last)
        source = self._source
        part: DataSource = SlicedDataSource(source, source.shuffle, slice_start=slice_start,
                                            slice_end=slice_end)
        if use_cache:
            if cache_dir is None:
                cache_dir = _cache_dir_of(source)
            if cache_dir is not None:
                with file_cache_settings(self._cache_settings):    # those it was made with
                    part = DataSourceWithFileCache(
                        part, cache_dir=cache_dir, shuffle=self._shuffle, rng=rng,
                        cache_file_name_prefix=f"cache_sliced_{slice_start:08d}_"
                                               f"{slice_end:08d}")
            part = DataSourceWithMemoryCache(part, shuffle=self._shuffle, rng=rng)
        return DataIterator(part, self._batch_size)

    # -- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the prefetching thread and close the source (a file cache in a temporary
        folder is removed)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False)


def _slice_bounds(size: int, slices: int, pos: int, drop_last: bool) -> tuple[int, int]:
    """NNabla's split of ``size`` positions into ``slices`` parts."""
    if drop_last:
        length = size // slices
        return length * pos, length * pos + length
    length = (size + slices - 1) // slices
    start = (length * pos) % size
    end = start + length
    if end > size:
        start, end = start - (end - size), size
    return start, end


def _cache_dir_of(source: DataSource) -> str | None:
    """The folder of the nearest file cache under ``source``, if any."""
    while source is not None:
        folder = getattr(source, "_cache_dir", None)
        if folder is not None:
            return folder
        source = getattr(source, "_data_source", None)
    return None


def data_iterator(data_source: DataSource, batch_size: int,
                  rng: np.random.RandomState | None = None, use_thread: bool = True,
                  with_memory_cache: bool = True, with_file_cache: bool = False,
                  cache_dir: str | None = None, epoch_begin_callbacks=(),
                  epoch_end_callbacks=(), stop_exhausted: bool = False) -> DataIterator:
    """A :class:`DataIterator` over ``data_source``, read through a memory cache (default)
    and/or a file cache in ``cache_dir`` (a temporary folder, removed on ``close()``, if
    None); ``rng`` draws the caches' orders.

    Example:
        >>> import numpy as np
        >>> from stadyn.io import SimpleDataSource, data_iterator
        >>> it = data_iterator(SimpleDataSource(lambda i: (np.array(i),), 5), 2,
        ...                    use_thread=False)
        >>> it.next()[0].tolist()
        [0, 1]
    """
    source = data_source
    if with_file_cache:
        source = DataSourceWithFileCache(source, cache_dir=cache_dir, shuffle=source.shuffle,
                                         rng=rng)
    if with_memory_cache:
        source = DataSourceWithMemoryCache(source, shuffle=source.shuffle, rng=rng)
    return DataIterator(source, batch_size, use_thread=use_thread,
                        epoch_begin_callbacks=epoch_begin_callbacks,
                        epoch_end_callbacks=epoch_end_callbacks, stop_exhausted=stop_exhausted)


def data_iterator_simple(load_func: Callable[[int], Sequence[Any]], num_examples: int,
                         batch_size: int, shuffle: bool = False,
                         rng: np.random.RandomState | None = None, use_thread: bool = True,
                         with_memory_cache: bool = False, with_file_cache: bool = False,
                         cache_dir: str | None = None, epoch_begin_callbacks=(),
                         epoch_end_callbacks=(), stop_exhausted: bool = False) -> DataIterator:
    """NNabla's ``data_iterator_simple``: batches of ``load_func(i)`` (a tuple of values) for
    ``i < num_examples``, through a :class:`~stadyn.io.SimpleDataSource`.

    ``rng`` (a NumPy ``RandomState``, default seed 313) draws the shuffles.

    Example:
        >>> import numpy as np
        >>> from stadyn.io import data_iterator_simple
        >>> it = data_iterator_simple(lambda i: (np.array([i]),), 10, 4, use_thread=False)
        >>> it.next()[0].ravel().tolist()
        [0, 1, 2, 3]
    """
    return data_iterator(SimpleDataSource(load_func, num_examples, shuffle=shuffle, rng=rng),
                         batch_size, use_thread=use_thread, with_memory_cache=with_memory_cache,
                         with_file_cache=with_file_cache, cache_dir=cache_dir,
                         epoch_begin_callbacks=epoch_begin_callbacks,
                         epoch_end_callbacks=epoch_end_callbacks, stop_exhausted=stop_exhausted)


def data_iterator_csv_dataset(uri: str, batch_size: int, shuffle: bool = False,
                              rng: np.random.RandomState | None = None, use_thread: bool = True,
                              normalize: bool = True, with_memory_cache: bool = True,
                              with_file_cache: bool = True, cache_dir: str | None = None,
                              epoch_begin_callbacks=(), epoch_end_callbacks=(),
                              stop_exhausted: bool = False) -> DataIterator:
    """Batches of a data set CSV file (a local path; see :class:`~stadyn.io.CsvDataSource`),
    through a file cache (in ``cache_dir``, or a temporary folder) and a memory cache, as
    NNabla's defaults have it; ``normalize`` scales images to ``[0, 1]``.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "train.csv")
        >>> with open(path, "w") as f:
        ...     _ = f.write("x,y\\n0.5,0\\n1.5,1\\n2.5,0\\n")
        >>> it = data_iterator_csv_dataset(path, 2, use_thread=False)
        >>> x, y = it.next(); x.ravel().tolist(), x.dtype
        ([0.5, 1.5], dtype('float32'))
    """
    return data_iterator(CsvDataSource(uri, shuffle=shuffle, rng=rng, normalize=normalize),
                         batch_size, use_thread=use_thread, with_memory_cache=with_memory_cache,
                         with_file_cache=with_file_cache, cache_dir=cache_dir,
                         epoch_begin_callbacks=epoch_begin_callbacks,
                         epoch_end_callbacks=epoch_end_callbacks, stop_exhausted=stop_exhausted)


def data_iterator_cache(uri: str, batch_size: int, shuffle: bool = False,
                        rng: np.random.RandomState | None = None, use_thread: bool = True,
                        normalize: bool = True, with_memory_cache: bool = True,
                        epoch_begin_callbacks=(), epoch_end_callbacks=(),
                        stop_exhausted: bool = False) -> DataIterator:
    """Batches of a cache folder written by a file cache (see
    :class:`~stadyn.io.CacheDataSource`).

    Example:
        >>> import numpy as np, tempfile
        >>> from stadyn.io import SimpleDataSource, DataSourceWithFileCache
        >>> folder = tempfile.mkdtemp()
        >>> _ = DataSourceWithFileCache(SimpleDataSource(lambda i: (np.array([i]),), 4),
        ...                             cache_dir=folder)
        >>> data_iterator_cache(folder, 3, use_thread=False).next()[0].ravel().tolist()
        [0, 1, 2]
    """
    return data_iterator(CacheDataSource(uri, shuffle=shuffle, rng=rng, normalize=normalize),
                         batch_size, use_thread=use_thread, with_memory_cache=with_memory_cache,
                         epoch_begin_callbacks=epoch_begin_callbacks,
                         epoch_end_callbacks=epoch_end_callbacks, stop_exhausted=stop_exhausted)


def data_iterator_concat_datasets(data_source_list, batch_size: int, shuffle: bool = False,
                                  rng: np.random.RandomState | None = None,
                                  use_thread: bool = True, with_memory_cache: bool = True,
                                  with_file_cache: bool = False, cache_dir: str | None = None,
                                  epoch_begin_callbacks=(), epoch_end_callbacks=(),
                                  stop_exhausted: bool = False) -> DataIterator:
    """Batches of several data sources one after another (a
    :class:`~stadyn.io.ConcatDataSource`); ``cache_dir`` is accepted and, as in NNabla, not
    passed on (a file cache goes to a temporary folder).

    Example:
        >>> import numpy as np
        >>> from stadyn.io import SimpleDataSource
        >>> a = SimpleDataSource(lambda i: (np.array(i),), 2)
        >>> b = SimpleDataSource(lambda i: (np.array(10 + i),), 2)
        >>> data_iterator_concat_datasets([a, b], 4, use_thread=False).next()[0].tolist()
        [0, 1, 10, 11]
    """
    return data_iterator(ConcatDataSource(data_source_list, shuffle=shuffle, rng=rng),
                         batch_size, use_thread=use_thread, with_memory_cache=with_memory_cache,
                         with_file_cache=with_file_cache,
                         epoch_begin_callbacks=epoch_begin_callbacks,
                         epoch_end_callbacks=epoch_end_callbacks, stop_exhausted=stop_exhausted)
