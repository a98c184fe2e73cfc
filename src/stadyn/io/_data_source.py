"""NNabla's data sources: what a :class:`~stadyn.io.DataIterator` reads, sample by sample.

A data source holds ``size`` samples, each a tuple with one value per name in ``variables``.
It is read by *position* within the current epoch: ``next()`` returns the sample at
``position`` and advances it; the iterator calls ``reset()`` when an epoch's last sample has
been read (the position goes back to 0) and ``apply_order()`` once the batch that crossed the
epoch's end is complete.  Where a source shuffles, the order of positions is its own, drawn
from its ``rng`` (a NumPy ``RandomState``; NNabla's default seed is 313), and *when* it draws
a new order is part of what it returns -- every source here draws exactly when NNabla 1.39's
does, so a program sees the same samples in the same order:

* :class:`SimpleDataSource` draws an order per *generation* in ``apply_order()``, after the
  batch that crossed the epoch's end: the rest of that batch is read in the old order.
* :class:`DataSourceWithMemoryCache` keeps every sample it has read; the first two epochs are
  its source's order, and from the third on it draws a new permutation at each ``reset()``.
* :class:`ConcatDataSource` (and the CSV and cache sources) draw at each ``reset()``.

Sources also give samples by *index*, regardless of the order (``get``, ``get_batch``), for
the iterators that choose the indices themselves (``DataIterator(shuffle=True)``, the
distributed ``ShardedDataIterator``).
"""

from __future__ import annotations

import collections
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["DataSource", "SimpleDataSource", "DataSourceWithMemoryCache", "SlicedDataSource",
           "ConcatDataSource", "MEMORY_CACHE_MAX_BYTES"]

# NNabla's ``data_source_buffer_max_size``: a memory cache holds every sample only when they
# take less than this together; otherwise it reads through to its source.
MEMORY_CACHE_MAX_BYTES = 1 << 30


def _default_rng(rng: np.random.RandomState | None) -> np.random.RandomState:
    return np.random.RandomState(313) if rng is None else rng


class DataSource:
    """A source of ``size`` samples read by position (see the module docstring).

    Subclasses set ``_size`` and ``_variables`` and implement ``_get_data(position)`` (the
    sample at ``position`` of the current order) and, when they shuffle, ``reset()``.

    Args:
        shuffle: whether the source reorders its samples each epoch.
        rng: the ``numpy.random.RandomState`` the orders are drawn from (default: seed 313).

    Example:
        >>> import numpy as np
        >>> class Squares(DataSource):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self._size, self._variables = 3, ("x",)
        ...     def _get_data(self, position):
        ...         return (np.array(position ** 2),)
        >>> s = Squares()
        >>> [int(s.next()[0]) for _ in range(3)], s.position
        ([0, 1, 4], 3)
    """

    def __init__(self, shuffle: bool = False, rng: np.random.RandomState | None = None):
        self._rng = _default_rng(rng)
        self._shuffle = bool(shuffle)
        self._variables: tuple[str, ...] | list[str] | None = None
        self._generation = -1
        self._position = 0
        self._size = 0
        self._order: Any = None
        self._original_order: Any = None
        self._original_source_uri: str | None = None
        self._closed = False

    # -- the protocol the iterators drive -------------------------------------------------------
    def _get_data(self, position: int) -> Sequence[Any]:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} does not implement _get_data")

    def _get_data_of_generation(self, position: int, generation: int) -> Sequence[Any]:
        """The sample at ``position`` of the order of ``generation`` (sliced sources read
        their parent through this)."""
        return self._get_data(position)

    def _generate_order(self, generation: int) -> None:
        """Draw the order of ``generation`` if the source keeps orders by generation."""

    def next(self) -> Sequence[Any]:
        """The sample at :attr:`position`; the position advances by one."""
        data = self._get_data(self._position)
        self._position += 1
        return data

    __next__ = next

    def reset(self) -> None:
        """Start a new epoch at position 0."""
        self._position = 0

    def apply_order(self) -> None:
        """Called once the batch that crossed an epoch's end is complete."""

    # -- properties -----------------------------------------------------------------------------
    @property
    def position(self) -> int:
        """Samples of the current epoch read so far."""
        return self._position

    @property
    def size(self) -> int:
        return self._size

    @property
    def variables(self):
        """The names of a sample's values."""
        return self._variables

    @property
    def order(self):
        return self._order

    @property
    def shuffle(self) -> bool:
        return self._shuffle

    @shuffle.setter
    def shuffle(self, value: bool) -> None:
        self._shuffle = bool(value)

    # -- by index -------------------------------------------------------------------------------
    def get(self, index: int) -> tuple[np.ndarray, ...]:
        """Sample ``index`` in the source's own order (for an unshuffled source, its
        ``index``-th sample), without moving :attr:`position`."""
        return tuple(np.asarray(v) for v in self._get_data(int(index)))

    def get_batch(self, indices: Sequence[int]) -> tuple[np.ndarray, ...]:
        """Samples ``indices`` stacked: one array per variable."""
        samples = [self.get(int(i)) for i in indices]
        return tuple(np.stack([s[k] for s in samples]) for k in range(len(samples[0])))

    # -- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Snapshot(collections.namedtuple("_Snapshot", "generation order")):
    """One generation's order of a :class:`SimpleDataSource`."""


class SimpleDataSource(DataSource):
    """Samples from ``load_func(index)``, a tuple (or list) of values per index.

    The variables are named ``x0``, ``x1``, ... after the values ``load_func(0)`` returns (it
    is called once here to count them; pass ``variables`` to name them yourself).  With
    ``shuffle``, each generation's order is a permutation drawn from ``rng``; the sliced
    sources of :meth:`DataIterator.slice <stadyn.io.DataIterator.slice>` share them.

    Example:
        >>> import numpy as np
        >>> s = SimpleDataSource(lambda i: (np.array([i]), np.array(i % 2)), 4)
        >>> s.variables, s.size, [int(s.next()[0][0]) for _ in range(2)]
        (['x0', 'x1'], 4, [0, 1])
    """

    def __init__(self, load_func: Callable[[int], Sequence[Any]], num_examples: int,
                 shuffle: bool = False, rng: np.random.RandomState | None = None, *,
                 variables: Sequence[str] | None = None):
        super().__init__(shuffle=shuffle, rng=rng)
        if int(num_examples) <= 0:
            raise ValueError(f"a data source needs at least one example, got {num_examples}")
        self._load_func = load_func
        self._size = int(num_examples)
        self._generation = 0
        self._variables = list(variables) if variables is not None else [
            f"x{i}" for i in range(len(load_func(0)))]
        self._orders: collections.deque[_Snapshot] = collections.deque(maxlen=15)
        self.reset()
        self._generate_order(0)

    def _generate_order(self, generation: int) -> None:
        if any(s.generation == generation for s in self._orders):
            return
        order = self._rng.permutation(self._size) if self._shuffle else np.arange(self._size)
        self._orders.append(_Snapshot(generation, order))

    def _get_data_of_generation(self, position: int, generation: int) -> Sequence[Any]:
        for snapshot in self._orders:
            if snapshot.generation == generation:
                return self._load_func(int(snapshot.order[position]))
        raise ValueError(f"no order of generation {generation} is kept (the sliced iterators "
                         f"of one source must be read in step)")

    def _get_data(self, position: int) -> Sequence[Any]:
        return self._get_data_of_generation(position, self._generation)

    def apply_order(self) -> None:
        self._generation += 1
        self._generate_order(self._generation)

    def get(self, index: int) -> tuple[np.ndarray, ...]:
        return tuple(np.asarray(v) for v in self._load_func(int(index)))


class DataSourceWithMemoryCache(DataSource):
    """Keeps every sample of ``data_source`` in memory once read (when they take less than
    :data:`MEMORY_CACHE_MAX_BYTES`, judged from the first sample; otherwise it reads through).

    The first epoch reads the source in its order; the second reads the cache in the same
    order; from the third on each epoch is a permutation of the cache drawn from ``rng``
    (NNabla 1.39's behaviour).

    Example:
        >>> import numpy as np
        >>> inner = SimpleDataSource(lambda i: (np.array(i),), 3)
        >>> cached = DataSourceWithMemoryCache(inner)
        >>> cached.reset(); [int(cached.next()[0]) for _ in range(3)]
        [0, 1, 2]
    """

    def __init__(self, data_source: DataSource, shuffle: bool = False,
                 rng: np.random.RandomState | None = None):
        super().__init__(shuffle=shuffle, rng=rng)
        self._data_source = data_source
        self._size = data_source._size
        self._variables = data_source.variables
        self._order = list(range(self._size))
        self._cache: list[Sequence[Any]] = []
        sample_bytes = sum(np.asarray(v, np.float32 if isinstance(v, list) else None).nbytes
                           for v in data_source._get_data(0))
        self._on_memory = sample_bytes * self._size < MEMORY_CACHE_MAX_BYTES
        self._generation = -1

    def _get_data(self, position: int) -> Sequence[Any]:
        if self._on_memory:
            index = self._order[position]
            if index < len(self._cache):
                data = self._cache[index]
            else:
                data = self._data_source._get_data(position)
                self._cache.append(data)
        else:
            data = self._data_source._get_data(position)
        self._position = position
        return data

    def reset(self) -> None:
        if self._on_memory:
            self._generation += 1
            if self._shuffle and self._generation > 0:
                self._order = list(self._rng.permutation(self._size))
            else:
                self._order = list(range(self._size))
            if self._position == 0:
                self._generation = -1
            else:
                self._data_source._position = self._position
                self._data_source.reset()
        else:
            self._data_source.reset()
            self._generation = self._data_source._generation
            self._position = self._data_source._position
        super().reset()

    def get(self, index: int) -> tuple[np.ndarray, ...]:
        return self._data_source.get(index)

    def close(self) -> None:
        if not self._closed:
            self._data_source.close()
        super().close()


class SlicedDataSource(DataSource):
    """Positions ``slice_start`` to ``slice_end`` of ``data_source`` (what
    :meth:`DataIterator.slice <stadyn.io.DataIterator.slice>` reads): its orders are the
    parent's, by generation, so the slices of one shuffled source together cover each epoch.

    Example:
        >>> import numpy as np
        >>> part = SlicedDataSource(SimpleDataSource(lambda i: (np.array(i),), 10),
        ...                         slice_start=4, slice_end=7)
        >>> part.size, [int(part.next()[0]) for _ in range(3)]
        (3, [4, 5, 6])
    """

    def __init__(self, data_source: DataSource, shuffle: bool = False,
                 rng: np.random.RandomState | None = None, slice_start: int | None = None,
                 slice_end: int | None = None):
        super().__init__(shuffle=shuffle, rng=rng)
        if slice_start is None or slice_end is None or not \
                0 <= int(slice_start) < int(slice_end) <= data_source.size:
            raise ValueError(f"a slice needs 0 <= slice_start < slice_end <= "
                             f"{data_source.size}, got {slice_start}..{slice_end}")
        self._data_source = data_source
        self._variables = list(data_source.variables)
        self._slice_start = int(slice_start)
        self._slice_end = int(slice_end)
        self._size = self._slice_end - self._slice_start
        self._generation = 0

    def apply_order(self) -> None:
        self._generation += 1
        self._data_source._generate_order(self._generation)

    def reset(self) -> None:
        self._data_source.reset()
        self._data_source._position = self._slice_start
        self._position = 0

    def _get_data(self, position: int) -> Sequence[Any]:
        self._position = position
        return self._data_source._get_data_of_generation(self._slice_start + position,
                                                         self._generation)

    def get(self, index: int) -> tuple[np.ndarray, ...]:
        return self._data_source.get(self._slice_start + int(index))


class ConcatDataSource(DataSource):
    """The samples of several sources one after another (their variables are the first's);
    with ``shuffle`` (the default, as in NNabla) each epoch is a permutation of all of them.

    Example:
        >>> import numpy as np
        >>> a = SimpleDataSource(lambda i: (np.array(i),), 2)
        >>> b = SimpleDataSource(lambda i: (np.array(10 + i),), 2)
        >>> both = ConcatDataSource([a, b], shuffle=False)
        >>> both.size, [int(both.next()[0]) for _ in range(4)]
        (4, [0, 1, 10, 11])
    """

    def __init__(self, data_source_list: Sequence[DataSource], shuffle: bool = True,
                 rng: np.random.RandomState | None = None):
        super().__init__(shuffle=shuffle, rng=rng)
        if not data_source_list:
            raise ValueError("ConcatDataSource needs at least one data source")
        self._data_sources = list(data_source_list)
        self._bounds = np.cumsum([s.size for s in self._data_sources]).tolist()
        self._size = self._bounds[-1]
        self._variables = self._data_sources[0].variables
        self._indexes = np.arange(self._size)
        self.reset()

    def _locate(self, index: int) -> tuple[DataSource, int]:
        for i, bound in enumerate(self._bounds):
            if index < bound:
                return self._data_sources[i], index - (self._bounds[i - 1] if i else 0)
        raise IndexError(f"sample {index} of {self._size}")

    def _get_data(self, position: int) -> Sequence[Any]:
        source, local = self._locate(int(self._indexes[position]))
        return source._get_data(local)

    def reset(self) -> None:
        self._indexes = (self._rng.permutation(self._size) if self._shuffle
                         else np.arange(self._size))
        super().reset()

    def get(self, index: int) -> tuple[np.ndarray, ...]:
        source, local = self._locate(int(index))
        return source.get(local)

    def close(self) -> None:
        if not self._closed:
            for s in self._data_sources:
                s.close()
        super().close()
