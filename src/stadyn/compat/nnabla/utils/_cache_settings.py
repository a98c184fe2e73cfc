"""The ``DATA_ITERATOR`` settings of ``nnabla_config`` that change what NNabla 1.39's file
caches write, applied to Stadyn's (:class:`stadyn.io.FileCacheSettings`).

NNabla 1.39 reads, when a ``DataSourceWithFileCache`` is made (``data_iterator*(...,
with_file_cache=True)``, a slice with ``use_cache``): ``data_source_file_cache_size`` (samples per
file: the files' names, ``cache_index.csv``, and a shuffled order, which shuffles the files and
the samples within each), ``cache_file_format`` (``.npy`` or ``.h5``; an ``.h5`` cache has no
``cache_info.csv``) and ``data_source_file_cache_location`` (the folder a cache without
``cache_dir`` makes its temporary folder in; empty: the system's); ``CreateCache`` reads the
size when it is made and the format when ``create`` runs.  Its thread counts and
``data_source_buffer_max_size`` (how much ``DataSourceWithMemoryCache`` keeps in memory) change
no value or file, and Stadyn does not read them.  A value NNabla 1.39 cannot use (a format it
cannot read back: it writes ``.npy`` data under any other suffix, then reads it as HDF5) is an
error naming the setting when a cache is made.  A ``cache_dir`` that does not exist is not made,
as NNabla 1.39 does not: its ``FileNotFoundError`` naming the first cache file, from
``DataSourceWithFileCache``, the iterator makers' ``cache_dir`` and ``CreateCache.create``.

Example:
    >>> nnabla_file_cache_settings().file_format
    '.npy'
"""

from __future__ import annotations

import functools

from .... import io as _io
from ....io import FileCacheSettings, file_cache_settings
from ..config import nnabla_config

__all__ = ["nnabla_file_cache_settings", "with_nnabla_cache_settings",
           "DataSourceWithFileCache"]

_ORIGIN = "nnabla_config [DATA_ITERATOR] data_source_file_cache_size / cache_file_format"


def nnabla_file_cache_settings() -> FileCacheSettings:
    """``nnabla_config``'s ``DATA_ITERATOR`` cache settings now (checked when a cache is
    made)."""
    def get(name: str) -> str:
        return nnabla_config.get("DATA_ITERATOR", name)
    raw = get("data_source_file_cache_size")
    try:
        size: object = int(raw)
    except ValueError:
        size = raw
    return FileCacheSettings(size=size, file_format=get("cache_file_format"),  # type: ignore
                             location=get("data_source_file_cache_location") or None,
                             origin=_ORIGIN, make_folder=False)


def with_nnabla_cache_settings(fn):
    """``fn`` (a Stadyn data iterator maker) run with ``nnabla_config``'s cache settings
    (:func:`nnabla_file_cache_settings`), read at each call as NNabla reads them.

    Example:
        >>> with_nnabla_cache_settings(_io.data_iterator).__name__
        'data_iterator'
    """
    @functools.wraps(fn)
    def call(*args, **kwargs):
        with file_cache_settings(nnabla_file_cache_settings()):
            return fn(*args, **kwargs)
    return call


class DataSourceWithFileCache(_io.DataSourceWithFileCache):
    """NNabla's ``DataSourceWithFileCache``: :class:`stadyn.io.DataSourceWithFileCache` written
    with ``nnabla_config``'s cache settings (see the module docstring).

    Example:
        >>> import numpy as np, os, tempfile
        >>> from stadyn.io import SimpleDataSource
        >>> folder = tempfile.mkdtemp()
        >>> _ = DataSourceWithFileCache(SimpleDataSource(lambda i: (np.array([i]),), 3),
        ...                             cache_dir=folder)
        >>> sorted(os.listdir(folder))
        ['cache_00000000_00000002.npy', 'cache_index.csv', 'cache_info.csv']
    """

    def __init__(self, *args, **kwargs):
        with file_cache_settings(nnabla_file_cache_settings()):
            super().__init__(*args, **kwargs)
