"""``nnabla.utils.data_source`` on Stadyn (:mod:`stadyn.io`'s data sources)."""

from ....io import (DataSource, DataSourceWithFileCache, DataSourceWithFileCacheError,
                    DataSourceWithMemoryCache, FileReader, SlicedDataSource)

__all__ = ["DataSource", "DataSourceWithFileCache", "DataSourceWithFileCacheError",
           "DataSourceWithMemoryCache", "FileReader", "SlicedDataSource"]
