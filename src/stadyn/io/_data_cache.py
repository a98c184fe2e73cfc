"""NNabla's file cache of a data set: samples written to ``.npy`` files, and read back.

:class:`DataSourceWithFileCache` reads every sample of its source once and writes them, 100 to
a file, into a cache folder in NNabla 1.39's format:

* ``cache_00000000_00000099.npy`` ... (``{prefix}_{first:08d}_{last:08d}.npy``): for each
  variable in turn, ``numpy.save`` of the file's samples stacked; or, with the file format
  ``.h5``, ``cache_00000000_00000099.h5``, one HDF5 dataset per variable;
* ``cache_index.csv``: one row per cache file, ``name,number of samples``;
* ``cache_info.csv`` (``.npy`` files only): the variables' names, one per row;
* ``original.csv`` (a copy of the CSV data set the samples came from) and ``order.csv``
  (``original index,index read``) when the source has them.

:class:`CacheDataSource` reads such a folder (NNabla's ``.h5`` caches too).  With ``shuffle``,
both shuffle per epoch the order of the files and the order within each file, drawing from
their ``rng`` exactly as NNabla's do.  A cache in a temporary folder (no ``cache_dir``) is
removed on ``close()``.

The samples per file (``cache_size``, NNabla's ``data_source_file_cache_size``), the file format
(``cache_file_format``) and the folder a temporary cache is made in (NNabla's
``data_source_file_cache_location``) are the constructor's arguments or, left ``None``, the
current :class:`FileCacheSettings` (:func:`file_cache_settings`; compat.nnabla sets them from
``nnabla_config``).  The samples per file also decide a shuffled order.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import csv
import dataclasses
import io
import os
import shutil
import tempfile
import threading
from typing import Any, Sequence

import numpy as np

from .._errors import DataError, StadynError
from .._fileutil import atomic_write
from .._logging import logger
from ._data_loader import FileReader
from ._data_source import DataSource

__all__ = ["DataSourceWithFileCache", "DataSourceWithFileCacheError", "CacheDataSource",
           "FILE_CACHE_SIZE", "CACHE_FILE_FORMATS", "FileCacheSettings", "file_cache_settings",
           "current_file_cache_settings"]

# NNabla's ``data_source_file_cache_size``: samples per cache file, by default.
FILE_CACHE_SIZE = 100
#: The file formats a cache is written in (NNabla 1.39 reads back these two only).
CACHE_FILE_FORMATS = (".npy", ".h5")


@dataclasses.dataclass(frozen=True)
class FileCacheSettings:
    """How file caches are written when their constructor does not say: ``size`` samples per
    file, ``file_format`` (``".npy"`` or ``".h5"``), and ``location``, the folder a cache
    without ``cache_dir`` makes its temporary folder in (``None``: the system's); ``origin``
    says where they were set, for the error a bad value gets when a cache is made;
    ``make_folder``: a missing ``cache_dir`` is made (``False``: it is NNabla 1.39's
    ``FileNotFoundError`` naming the first cache file, as compat.nnabla's caches).

    Example:
        >>> FileCacheSettings()
        FileCacheSettings(size=100, file_format='.npy', location=None, origin='', make_folder=True)
    """

    size: int = FILE_CACHE_SIZE
    file_format: str = ".npy"
    location: str | None = None
    origin: str = ""
    make_folder: bool = True


_SETTINGS: contextvars.ContextVar[FileCacheSettings] = contextvars.ContextVar(
    "stadyn_file_cache_settings", default=FileCacheSettings())


def current_file_cache_settings() -> FileCacheSettings:
    """The :class:`FileCacheSettings` file caches made now take."""
    return _SETTINGS.get()


@contextlib.contextmanager
def file_cache_settings(settings: FileCacheSettings):
    """File caches made inside the block take ``settings`` (in this thread or task).

    Example:
        >>> import numpy as np, os, tempfile
        >>> from stadyn.io import SimpleDataSource
        >>> folder = tempfile.mkdtemp()
        >>> with file_cache_settings(FileCacheSettings(size=2, file_format=".h5")):
        ...     _ = DataSourceWithFileCache(SimpleDataSource(lambda i: (np.array([i]),), 3),
        ...                                 cache_dir=folder)
        >>> sorted(os.listdir(folder))
        ['cache_00000000_00000001.h5', 'cache_00000002_00000002.h5', 'cache_index.csv']
    """
    token = _SETTINGS.set(settings)
    try:
        yield settings
    finally:
        _SETTINGS.reset(token)


class DataSourceWithFileCacheError(StadynError, RuntimeError):
    """A file cache could not be made or read."""


class _RaggedSamplesError(DataSourceWithFileCacheError, ValueError):
    """A variable's samples differ in shape: also the ``ValueError`` NNabla 1.39 raises there
    (NumPy's, from stacking them: ``data_source.py``'s ``_save_cache_to_file``)."""


def _stack(values: list[Any], name: str, path: str) -> np.ndarray:
    try:
        return np.asarray(values)
    except ValueError:
        shapes = sorted({np.shape(v) for v in values})
        raise _RaggedSamplesError(
            f"cannot cache variable {name!r} in {path}: its samples have different shapes "
            f"{shapes}") from None


class DataSourceWithFileCache(DataSource):
    """``data_source`` read once into cache files (see the module docstring), then read from
    them.

    Example:
        >>> import numpy as np, os, tempfile
        >>> from stadyn.io import SimpleDataSource
        >>> folder = tempfile.mkdtemp()
        >>> cached = DataSourceWithFileCache(SimpleDataSource(lambda i: (np.array([i]),), 3),
        ...                                  cache_dir=folder)
        >>> sorted(os.listdir(folder))
        ['cache_00000000_00000002.npy', 'cache_index.csv', 'cache_info.csv']
        >>> cached.reset(); [int(cached.next()[0][0]) for _ in range(3)]
        [0, 1, 2]
    """

    def __init__(self, data_source: DataSource, cache_dir: str | None = None,
                 cache_file_name_prefix: str = "cache", shuffle: bool = False,
                 rng: np.random.RandomState | None = None, cache_size: int | None = None,
                 cache_file_format: str | None = None):
        settings = current_file_cache_settings()
        size = settings.size if cache_size is None else cache_size
        fmt = settings.file_format if cache_file_format is None else cache_file_format
        where = f" (set by {settings.origin})" if settings.origin else ""
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            where_size = where if cache_size is None else ""
            raise ValueError(f"DataSourceWithFileCache: the cache size{where_size} must be a "
                             f"whole number >= 1 (samples per cache file), got {size!r}")
        if fmt not in CACHE_FILE_FORMATS:
            where_fmt = where if cache_file_format is None else ""
            raise ValueError(f"DataSourceWithFileCache: the cache file format{where_fmt} must "
                             f"be one of {CACHE_FILE_FORMATS}, got {fmt!r}")
        super().__init__(shuffle=shuffle, rng=rng)
        self._cache_size = int(size)
        self._format = fmt
        self._data_source = data_source
        self._size = data_source._size
        self._variables = data_source.variables
        self._prefix = cache_file_name_prefix
        self._lock = threading.Lock()
        self._temporary = cache_dir is None
        self._cache_dir = tempfile.mkdtemp(dir=settings.location or None) if cache_dir is None \
            else os.fspath(cache_dir)
        if not settings.make_folder and not os.path.isdir(self._cache_dir):
            last = max(min(self._size, self._cache_size), 1) - 1
            first_file = os.path.join(self._cache_dir, self._file_name(0, last))
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), first_file)
        os.makedirs(self._cache_dir, exist_ok=True)
        self._original_order = list(range(self._size))
        self._order = list(range(self._size))
        self._files: list[str] = []
        self._file_order: list[int] = []
        self._data_orders: list[list[int]] = []
        self._table: list[tuple[int, int]] = []
        self._current: tuple[int, dict[str, np.ndarray]] | None = None
        try:
            self._create_cache()
        except BaseException:
            self.close()
            raise
        self._make_table()

    # -- writing --------------------------------------------------------------------------------
    def _create_cache(self) -> None:
        source = self._data_source
        for first in range(0, self._size, self._cache_size):
            last = min(first + self._cache_size, self._size) - 1
            samples = [source._get_data(p) for p in range(first, last + 1)]
            self._write_file(first, last, samples)
        self._position = self._size
        self._write_index()

    def _file_name(self, first: int, last: int) -> str:
        """The name of the cache file of positions ``first`` to ``last`` (NNabla's)."""
        return f"{self._prefix}_{first:08d}_{last:08d}{self._format}"

    def _write_file(self, first: int, last: int, samples: Sequence[Sequence[Any]]) -> None:
        path = os.path.join(self._cache_dir, self._file_name(first, last))
        columns = []
        for k, variable in enumerate(self._variables):
            values = [s[k] if isinstance(s[k], np.ndarray)
                      else np.array(s[k]).astype(np.float32) for s in samples]
            columns.append(_stack(values, variable, path))

        def write(tmp: str) -> None:
            if self._format == ".h5":
                import h5py
                with h5py.File(tmp, "w") as h5:
                    for variable, column in zip(self._variables, columns):
                        h5.create_dataset(variable, data=column)
                return
            with open(tmp, "wb") as f:
                for column in columns:
                    np.save(f, column)
        logger.debug("creating cache file %s", path)
        atomic_write(path, write)
        self._files.append(path)
        self._file_order.append(len(self._file_order))
        self._data_orders.append(list(range(len(samples))))

    def _write_index(self) -> None:
        def write_rows(name: str, rows) -> None:
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows(rows)
            text = buf.getvalue()

            def write(tmp: str) -> None:
                with open(tmp, "w") as f:
                    f.write(text)
            atomic_write(os.path.join(self._cache_dir, name), write)
        write_rows("cache_index.csv", [(os.path.basename(f), len(o))
                                       for f, o in zip(self._files, self._data_orders)])
        if self._format == ".npy":        # NNabla writes no info for HDF5 files
            write_rows("cache_info.csv", [(v,) for v in self._variables])
        source = self._data_source
        if source._original_source_uri is not None:
            original = source._original_source_uri
            atomic_write(os.path.join(self._cache_dir, "original.csv"),
                         lambda tmp: shutil.copyfile(original, tmp))
        if source._order is not None and source._original_order is not None:
            write_rows("order.csv", [list(pair) for pair in zip(source._original_order,
                                                                source._order)])

    # -- reading --------------------------------------------------------------------------------
    def _make_table(self) -> None:
        self._table = [(f, j) for f in self._file_order for j in self._data_orders[f]]
        self._order = [f * self._cache_size + j for f, j in self._table]

    def _load(self, index: int) -> dict[str, np.ndarray]:
        if self._current is None or self._current[0] != index:
            path = self._files[index]
            try:
                if self._format == ".h5":
                    import h5py
                    with h5py.File(path, "r") as h5:
                        data = {v: h5[v][()] for v in self._variables}
                else:
                    with open(path, "rb") as f:
                        data = {v: np.load(f, allow_pickle=False) for v in self._variables}
            except (OSError, ValueError, KeyError) as exc:
                raise DataSourceWithFileCacheError(f"cannot read the cache file {path}: "
                                                   f"{exc}") from None
            self._current = (index, data)
        return self._current[1]

    def _get_data(self, position: int) -> list[np.ndarray]:
        with self._lock:
            self._position = position
            index, row = self._table[position]
            data = self._load(index)
            return [data[v][row] for v in self._variables]

    def reset(self) -> None:
        with self._lock:
            if self._shuffle:
                self._file_order = list(self._rng.permutation(self._file_order))
                self._data_orders = [list(self._rng.permutation(o)) for o in self._data_orders]
            self._make_table()
            self._data_source.reset()
            self._position = 0
            self._generation += 1

    def get(self, index: int) -> tuple[np.ndarray, ...]:
        data = self._load(int(index) // self._cache_size)
        return tuple(np.asarray(data[v][int(index) % self._cache_size]) for v in self._variables)

    def close(self) -> None:
        if not self._closed:
            if self._temporary:
                shutil.rmtree(self._cache_dir, ignore_errors=True)
            self._data_source.close()
        super().close()


class CacheDataSource(DataSource):
    """The samples of a cache folder (written by :class:`DataSourceWithFileCache`, or NNabla's
    ``.h5`` caches); with ``normalize``, uint8 values become float32 in ``[0, 1]`` (uint16:
    divided by 65535).

    Example:
        >>> import numpy as np, tempfile
        >>> from stadyn.io import SimpleDataSource
        >>> folder = tempfile.mkdtemp()
        >>> _ = DataSourceWithFileCache(SimpleDataSource(lambda i: (np.array([i]),), 3),
        ...                             cache_dir=folder)
        >>> source = CacheDataSource(folder)
        >>> source.variables, source.size, int(source.next()[0][0])
        (['x0'], 3, 0)
    """

    def __init__(self, cachedir: str, shuffle: bool = False,
                 rng: np.random.RandomState | None = None, normalize: bool = False):
        super().__init__(shuffle=shuffle, rng=rng)
        self._cachedir = os.fspath(cachedir)
        if not os.path.isdir(self._cachedir):
            raise FileNotFoundError(errno.ENOENT, "no cache folder", self._cachedir)
        self._normalize = bool(normalize)
        self._reader = FileReader(self._cachedir)
        self._variables = None
        self._cache_type = ".h5"
        info = os.path.join(self._cachedir, "cache_info.csv")
        if os.path.isfile(info):
            with open(info, newline="") as f:
                self._variables = [row[0] for row in csv.reader(f) if row]
            self._cache_type = ".npy"
        self._cache_files: list[tuple[str, int]] = []
        self._read_index()
        if not self._cache_files:
            raise DataError("no cache files (cache_index.csv or *.h5)", self._cachedir)
        self._current: tuple[str, dict[str, np.ndarray]] | None = None
        self._original_order = [(f, j) for f, n in self._cache_files for j in range(n)]
        self.reset()

    def _read_index(self) -> None:
        index = os.path.join(self._cachedir, "cache_index.csv")
        if os.path.isfile(index):
            with open(index, newline="") as f:
                for line, row in enumerate(csv.reader(f), 1):
                    if not row:
                        continue
                    try:
                        self._cache_files.append((os.path.join(self._cachedir, row[0]),
                                                  int(row[1])))
                    except (IndexError, ValueError):
                        raise DataError(f"expected 'file name,number of samples', got {row}",
                                        index, line) from None
            if self._variables is None and self._cache_files:
                with self._reader.open_cache(self._cache_files[0][0]) as h5:
                    self._variables = list(h5.keys())
            return
        for name in self._reader.listdir():
            with self._reader.open_cache(name) as h5:
                if self._variables is None:
                    self._variables = list(h5.keys())
                lengths = {len(v) for v in h5.values()}
            if len(lengths) != 1:
                raise DataError(f"the variables have different lengths {sorted(lengths)}",
                                os.path.join(self._cachedir, name))
            self._cache_files.append((os.path.join(self._cachedir, name), lengths.pop()))

    def _load(self, filename: str) -> dict[str, np.ndarray]:
        if self._current is None or self._current[0] != filename:
            if self._cache_type == ".npy":
                with open(filename, "rb") as f:
                    data = {v: np.load(f, allow_pickle=False) for v in self._variables}
            else:
                with self._reader.open_cache(filename) as h5:
                    data = {k: v[()] for k, v in h5.items()}
            self._current = (filename, data)
        return self._current[1]

    def _get_data(self, position: int) -> list[np.ndarray]:
        self._position = position
        filename, row = self._order[position]
        data = self._load(filename)
        values = [data[v][row] for v in self._variables]
        if self._normalize:
            values = [v.astype(np.float32) * (1.0 / 255.0) if v.dtype == np.uint8 else
                      v.astype(np.float32) * (1.0 / 65535.0) if v.dtype == np.uint16 else v
                      for v in values]
        return values

    def reset(self) -> None:
        super().reset()
        if self._shuffle:
            self._order = [(self._cache_files[i][0], j)
                           for i in self._rng.permutation(list(range(len(self._cache_files))))
                           for j in self._rng.permutation(list(range(self._cache_files[i][1])))]
        else:
            self._order = list(self._original_order)
        self._current = None
        self._size = len(self._order)
        self._generation += 1

    def get(self, index: int) -> tuple[np.ndarray, ...]:
        filename, row = self._original_order[int(index)]
        data = self._load(filename)
        return tuple(np.asarray(data[v][row]) for v in self._variables)
