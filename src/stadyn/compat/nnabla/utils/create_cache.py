"""``nnabla.utils.create_cache`` on Stadyn: :class:`CreateCache` turns a data set CSV file into
a cache folder in NNabla 1.39's format (what ``data_iterator_cache`` reads; NNabla's console
tool and its examples make their caches this way), through :mod:`stadyn.io`'s CSV source and
file cache: ``cache_<first>_<last>.npy`` files of 100 samples, ``cache_index.csv``,
``cache_info.csv``, ``original.csv`` and ``order.csv``.  As NNabla's, it takes the samples per
file from ``nnabla_config``'s ``data_source_file_cache_size`` when it is made and the file
format (``.npy`` or ``.h5``, which has no ``cache_info.csv``) from ``cache_file_format`` when
:meth:`CreateCache.create` runs.

With ``shuffle`` the samples are written in one permutation drawn from ``rng`` (default
``RandomState(313)``) when the object is made, as NNabla's.  The output folder must exist:
a missing one is NNabla 1.39's ``FileNotFoundError`` naming the first cache file (Stadyn's own
caches make it).  Progress goes to
:func:`~stadyn.compat.nnabla.utils.progress.progress` at the start and the end (NNabla also
reports every twentieth of the files).

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "train.csv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("x__0,x__1,y\\n1,2,0\\n3,4,1\\n")
    >>> CreateCache(path).create(folder)
    >>> sorted(os.listdir(folder))[:3]
    ['cache_00000000_00000001.npy', 'cache_index.csv', 'cache_info.csv']
"""

from __future__ import annotations

import os

import numpy as np

from ....io import CsvDataSource, DataSourceWithFileCache, file_cache_settings
from ._cache_settings import nnabla_file_cache_settings
from .communicator_util import single_or_rankzero
from .progress import progress

__all__ = ["CreateCache"]


class CreateCache:
    """A data set CSV file to be written as a cache folder (see the module docstring).

    Args:
        input_csv_filename: the CSV file (NNabla's data set layout: ``x__0,x__1,y`` or file
            names of images and arrays).
        rng: the ``numpy.random.RandomState`` a shuffled order is drawn from.
        shuffle: write the samples in a random order (``order.csv`` records it).
        num_of_threads: accepted for NNabla's signature (Stadyn writes the files in turn).

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "a.csv")
        >>> with open(path, "w") as f:
        ...     _ = f.write("x,y\\n1,0\\n2,1\\n3,0\\n")
        >>> CreateCache(path, shuffle=True).variables
        ('x', 'y')
    """

    def __init__(self, input_csv_filename: str, rng: np.random.RandomState | None = None,
                 shuffle: bool = False, num_of_threads: int | None = None):
        self._filename = os.fspath(input_csv_filename)
        self._shuffle = bool(shuffle)
        self._rng = rng if rng is not None else np.random.RandomState(313)
        self._rng_state = self._rng.get_state()
        # reads and checks the file now; a shuffled order is drawn now (the caller's rng
        # moves on as with NNabla's), and drawn again from the same state when writing
        source = CsvDataSource(self._filename, shuffle=self._shuffle, rng=self._rng)
        self.variables = source.variables
        self.size = source.size
        self.num_of_threads = num_of_threads
        self._cache_size = nnabla_file_cache_settings().size     # NNabla reads it here

    def create(self, output_cache_dirname: str, normalize: bool = True,
               cache_file_name_prefix: str = "cache") -> None:
        """Write the cache folder ``output_cache_dirname`` (images scaled to ``[0, 1]`` with
        ``normalize``; files named ``<prefix>_<first>_<last>.npy``).

        Example:
            >>> import os, tempfile
            >>> folder = tempfile.mkdtemp()
            >>> path = os.path.join(folder, "a.csv")
            >>> with open(path, "w") as f:
            ...     _ = f.write("x,y\\n1,0\\n")
            >>> CreateCache(path).create(folder, cache_file_name_prefix="part")
            >>> "part_00000000_00000000.npy" in os.listdir(folder)
            True
        """
        rng = np.random.RandomState()
        rng.set_state(self._rng_state)
        source = CsvDataSource(self._filename, shuffle=self._shuffle, rng=rng,
                               normalize=normalize)
        progress(None)
        if single_or_rankzero():
            progress("Create cache", 0)
        with file_cache_settings(nnabla_file_cache_settings()):    # the format: read now
            cached = DataSourceWithFileCache(source, cache_dir=output_cache_dirname,
                                             cache_file_name_prefix=cache_file_name_prefix,
                                             cache_size=self._cache_size)
        cached.close()
        if single_or_rankzero():
            progress("Create cache", 1.0)
