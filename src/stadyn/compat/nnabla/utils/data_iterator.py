"""``nnabla.utils.data_iterator`` on Stadyn (:mod:`stadyn.io`'s iterators and sources)."""

from ....io import (CacheDataSource, ConcatDataSource, CsvDataSource, DataIterator, DataSource,
                    DataSourceWithFileCache, DataSourceWithMemoryCache, SimpleDataSource,
                    SlicedDataSource, data_iterator, data_iterator_cache,
                    data_iterator_concat_datasets, data_iterator_csv_dataset,
                    data_iterator_simple)

__all__ = ["DataIterator", "DataSource", "SimpleDataSource", "CsvDataSource", "CacheDataSource",
           "ConcatDataSource", "SlicedDataSource", "DataSourceWithMemoryCache",
           "DataSourceWithFileCache", "data_iterator", "data_iterator_simple",
           "data_iterator_csv_dataset", "data_iterator_cache", "data_iterator_concat_datasets"]
