"""NNabla 1.39's prefetching readers of ``.npy`` cache files (``nnabla.utils.
data_source_implements``' ``CachePrefetcher`` and ``CacheReaderWithPrefetch``): a cache file is
read in a background thread while the samples of the file before it are served.

A cache file (written by ``CreateCache`` or a file-cached data iterator) holds one ``.npy``
array per variable, one after the other, in the order of ``cache_info.csv``; a reader returns
``{variable: array}``.

Example:
    >>> import os, tempfile, numpy as np
    >>> folder = tempfile.mkdtemp()
    >>> name = os.path.join(folder, "cache_00000000_00000001.npy")
    >>> with open(name, "wb") as f:
    ...     np.save(f, np.array([[1.0], [2.0]])); np.save(f, np.array([[0], [1]]))
    >>> reader = CacheReaderWithPrefetch(folder, 2, ["x", "y"])
    >>> reader.open_and_prefetch_cache(name, [])["x"].ravel().tolist()
    [1.0, 2.0]
    >>> reader.close()
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
from typing import Any, Sequence

import numpy as np

from ...._errors import DataError

__all__ = ["CachePrefetcher", "CacheReaderWithPrefetch"]


def _read_cache_file(file_name: str, variables: Sequence[str]) -> dict[str, np.ndarray]:
    """One array per variable, read in order from the ``.npy`` cache file ``file_name``."""
    result = {}
    with open(file_name, "rb") as f:
        for v in variables:
            try:
                result[v] = np.load(f, allow_pickle=False)
            except (EOFError, ValueError, OSError) as e:
                raise DataError(f"the cache file holds no array for variable {v!r} "
                                f"(the {len(result) + 1}th of {list(variables)}): {e}",
                                file_name) from None
    return result


class CachePrefetcher:
    """Reads one cache file at a time in a background thread: :meth:`request` a file, later
    :meth:`check_if_hit` asks whether that file is the one requested and :meth:`read` waits for
    its arrays.

    ``cachedir`` is the cache's folder (file names are given in full, as
    ``CacheDataSource`` lists them), ``variables`` the names of the arrays in each file.

    Example:
        >>> import os, tempfile, numpy as np
        >>> name = os.path.join(tempfile.mkdtemp(), "cache_00000000_00000000.npy")
        >>> np.save(name, np.array([[7]]))
        >>> p = CachePrefetcher(os.path.dirname(name), ["x0"])
        >>> p.request(name)
        >>> p.check_if_hit("other.npy"), p.check_if_hit(name)
        (False, True)
        >>> p.read()["x0"].tolist(), p.read()
        ([[7]], None)
        >>> p.close()
    """

    def __init__(self, cachedir: str, variables: Sequence[str]):
        self._cachedir = os.fspath(cachedir)
        self._variables = variables
        self._lock = threading.Lock()
        self._requests: queue.Queue = queue.Queue()
        self.file_name: str | None = None
        self._current_data: Any = None
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._worker, daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def read_cache(self, file_name: str, variables: Sequence[str]) -> dict[str, np.ndarray]:
        """The arrays of ``file_name`` (one per name in ``variables``), read now in this
        thread.  A missing file is a ``FileNotFoundError``, one with fewer arrays a
        ``DataError``, both naming the file (NNabla 1.39 retries for five seconds and then
        kills its own process).

        Example:
            >>> import os, tempfile, numpy as np
            >>> name = os.path.join(tempfile.mkdtemp(), "c.npy")
            >>> np.save(name, np.arange(3))
            >>> CachePrefetcher(os.path.dirname(name), ["a"]).read_cache(name, ["a"])["a"]
            array([0, 1, 2])
        """
        return _read_cache_file(file_name, variables)

    def _worker(self) -> None:
        while True:
            file_name = self._requests.get()
            self._current_data = {}
            if file_name is None:
                self._requests.task_done()
                return
            try:
                self._current_data = self.read_cache(file_name, self._variables)
            except BaseException as e:   # handed to the thread that reads it
                self._error = e
            self._requests.task_done()

    def request(self, cache_file_name: str) -> None:
        """Start reading ``cache_file_name`` in the background.

        Example:
            >>> import os, tempfile, numpy as np
            >>> name = os.path.join(tempfile.mkdtemp(), "c.npy")
            >>> np.save(name, np.zeros(2))
            >>> p = CachePrefetcher(os.path.dirname(name), ["a"])
            >>> p.request(name); p.file_name == name
            True
        """
        self.file_name = cache_file_name
        self._requests.put(cache_file_name)

    def check_if_hit(self, fn: str) -> bool:
        """Whether ``fn`` is the file requested last (not yet read); a hit forgets the name,
        so a second check of the same file is a miss.

        Example:
            >>> p = CachePrefetcher(".", ["x0"])
            >>> p.check_if_hit("cache.npy")
            False
        """
        with self._lock:
            if fn == self.file_name:
                self.file_name = None
                return True
            return False

    def read(self) -> dict[str, np.ndarray] | None:
        """The arrays of the file requested, once read (None when nothing was requested since
        the last read); raises the reading's error here.

        Example:
            >>> CachePrefetcher(".", ["x0"]).read() is None
            True
        """
        self._requests.join()
        result, self._current_data, self.file_name = self._current_data, None, None
        error, self._error = self._error, None
        if error is not None:
            raise error
        return result

    def close(self) -> None:
        """Stop the background thread (after the reading in progress); closing twice is
        harmless.

        Example:
            >>> p = CachePrefetcher(".", ["x0"]); p.close(); p.close()
        """
        if not self._closed:
            self._requests.join()
            self._requests.put(None)
            self._requests.join()
            self._closed = True


class CacheReaderWithPrefetch:
    """Serves cache files and keeps ``num_threads`` :class:`CachePrefetcher` reading the next
    ones: :meth:`open_and_prefetch_cache` returns a file's arrays (waiting for a prefetcher
    that already reads it, else reading it now) and starts the files to read next.

    Example:
        >>> import os, tempfile, numpy as np
        >>> folder = tempfile.mkdtemp()
        >>> names = [os.path.join(folder, "c%d.npy" % i) for i in range(3)]
        >>> for i, name in enumerate(names):
        ...     np.save(name, np.full((2, 1), i))
        >>> reader = CacheReaderWithPrefetch(folder, 2, ["x0"])
        >>> [int(reader.open_and_prefetch_cache(n, names[i + 1:])["x0"][0, 0])
        ...  for i, n in enumerate(names)]
        [0, 1, 2]
        >>> reader.close()
    """

    def __init__(self, cachedir: str, num_threads: int, variables: Sequence[str]):
        self._cachedir = os.fspath(cachedir)
        self._variables = variables
        self._cache_prefetchers = [CachePrefetcher(cachedir, variables)
                                   for _ in range(int(num_threads))]
        self._closed = False
        atexit.register(self.close)

    def open_and_prefetch_cache(self, file_name: str,
                                file_names_to_prefetch: Sequence[str] | None
                                ) -> dict[str, np.ndarray]:
        """The arrays of ``file_name``; then a prefetched file not in
        ``file_names_to_prefetch`` is dropped, and idle prefetchers start on those names no
        prefetcher holds yet, in order (the names past the idle ones wait for a later call).
        With no prefetchers (``num_threads=0``) the file is read directly (NNabla 1.39 fails
        with an ``UnboundLocalError``); ``None`` prefetches nothing.

        Example:
            >>> import os, tempfile, numpy as np
            >>> name = os.path.join(tempfile.mkdtemp(), "c.npy")
            >>> np.save(name, np.ones(1))
            >>> reader = CacheReaderWithPrefetch(os.path.dirname(name), 0, ["x0"])
            >>> reader.open_and_prefetch_cache(name, None)["x0"]
            array([1.])
        """
        result = None
        for prefetcher in self._cache_prefetchers:
            if prefetcher.check_if_hit(file_name):
                result = prefetcher.read()
                break
        if not result:
            result = _read_cache_file(file_name, self._variables)
        wanted = list(file_names_to_prefetch or ())
        held = [p.file_name for p in self._cache_prefetchers]
        for prefetcher, name in zip(self._cache_prefetchers, held):
            if name and name not in wanted:
                try:
                    prefetcher.read()                       # drop what is not wanted now
                except (OSError, DataError):
                    pass                                    # nobody will read it
        for name in wanted:
            if name not in held and None in held:
                index = held.index(None)
                held[index] = name
                self._cache_prefetchers[index].request(name)
        return result

    def close(self) -> None:
        """Stop every prefetcher; closing twice is harmless.

        Example:
            >>> reader = CacheReaderWithPrefetch(".", 1, ["x0"]); reader.close(); reader.close()
        """
        if not self._closed:
            for prefetcher in self._cache_prefetchers:
                prefetcher.close()
            self._closed = True
