"""``nnabla.utils.data_source`` on Stadyn (:mod:`stadyn.io`'s data sources); NNabla's module
also holds ``progress`` and ``single_or_rankzero`` (``progress.py``,
``communicator_util.py``)."""

from ....io import (DataSource, DataSourceWithFileCache, DataSourceWithFileCacheError,
                    DataSourceWithMemoryCache, FileReader, SlicedDataSource)
from .communicator_util import single_or_rankzero
from .progress import progress

__all__ = ["DataSource", "DataSourceWithFileCache", "DataSourceWithFileCacheError",
           "DataSourceWithMemoryCache", "FileReader", "SlicedDataSource", "progress",
           "single_or_rankzero"]
