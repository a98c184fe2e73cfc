"""``nnabla.utils.data_iterator`` on Stadyn (:mod:`stadyn.io`'s iterators and sources); the
iterator makers and ``DataSourceWithFileCache`` write their file caches with ``nnabla_config``'s
``DATA_ITERATOR`` settings, as NNabla 1.39's (``_cache_settings.py``)."""

from ....io import (CacheDataSource, ConcatDataSource, CsvDataSource, DataIterator, DataSource,
                    DataSourceWithMemoryCache, SimpleDataSource, SlicedDataSource)
from .... import io as _io
from ._cache_settings import DataSourceWithFileCache, with_nnabla_cache_settings

__all__ = ["DataIterator", "DataSource", "SimpleDataSource", "CsvDataSource", "CacheDataSource",
           "ConcatDataSource", "SlicedDataSource", "DataSourceWithMemoryCache",
           "DataSourceWithFileCache", "data_iterator", "data_iterator_simple",
           "data_iterator_csv_dataset", "data_iterator_cache", "data_iterator_concat_datasets"]

data_iterator = with_nnabla_cache_settings(_io.data_iterator)
data_iterator_simple = with_nnabla_cache_settings(_io.data_iterator_simple)
data_iterator_csv_dataset = with_nnabla_cache_settings(_io.data_iterator_csv_dataset)
data_iterator_cache = with_nnabla_cache_settings(_io.data_iterator_cache)
data_iterator_concat_datasets = with_nnabla_cache_settings(_io.data_iterator_concat_datasets)
