"""``nnabla.utils.data_source_implements``: the module NNabla 1.39 defines its data sources in
(``from nnabla.utils.data_source_implements import SimpleDataSource`` / ``CsvDataSource``, as
nnabla-examples' data-cleansing and ImageNet cache scripts write it); the same classes as
``nnabla.utils.data_iterator``'s; NNabla's prefetching cache readers ``CachePrefetcher`` and
``CacheReaderWithPrefetch``; and the ``current_communicator`` and ``load`` (the reader of a file
extension) it imports.

Example:
    >>> import numpy as np
    >>> from stadyn.compat.nnabla.utils.data_source_implements import SimpleDataSource
    >>> source = SimpleDataSource(lambda i: (np.float32(i),), 4, shuffle=False)
    >>> source.size, source.variables
    (4, ['x0'])
"""

from ....io import CacheDataSource, ConcatDataSource, CsvDataSource, DataSource, SimpleDataSource
from .communicator_util import current_communicator
from ._cache_prefetch import CachePrefetcher, CacheReaderWithPrefetch
from .data_source_loader import FileReader, load

__all__ = ["CacheDataSource", "CachePrefetcher", "CacheReaderWithPrefetch", "ConcatDataSource",
           "CsvDataSource", "DataSource", "FileReader", "SimpleDataSource",
           "current_communicator", "load"]
