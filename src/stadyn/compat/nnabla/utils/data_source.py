"""``nnabla.utils.data_source`` on Stadyn (:mod:`stadyn.io`'s data sources; its
``DataSourceWithFileCache`` writes with ``nnabla_config``'s cache settings,
``_cache_settings.py``); NNabla's module also holds ``progress`` and ``single_or_rankzero``
(``progress.py``, ``communicator_util.py``)."""

from ....io import (DataSource, DataSourceWithFileCacheError, DataSourceWithMemoryCache,
                    FileReader, SlicedDataSource)
from ._cache_settings import DataSourceWithFileCache
from .communicator_util import single_or_rankzero
from .progress import progress

__all__ = ["DataSource", "DataSourceWithFileCache", "DataSourceWithFileCacheError",
           "DataSourceWithMemoryCache", "FileReader", "SlicedDataSource", "progress",
           "single_or_rankzero"]
