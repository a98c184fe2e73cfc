"""``nnabla.utils.data_iterator`` on Stadyn."""

from ....io import (DataIterator, DataSource, SimpleDataSource, data_iterator,
                   data_iterator_simple)

__all__ = ["DataIterator", "DataSource", "SimpleDataSource", "data_iterator",
           "data_iterator_simple"]
