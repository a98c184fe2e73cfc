"""NNabla's prefetching cache readers on bad input: a missing or short cache file is one error
naming the file, raised where the arrays are asked for (NNabla 1.39 retries for five seconds
and then kills its own process, so there is no reference to compare)."""

import os

import numpy as np
import pytest

from stadyn import DataError
from stadyn.compat.nnabla.utils.data_source_implements import (CachePrefetcher,
                                                               CacheReaderWithPrefetch)


def test_missing_cache_file_names_it(tmp_path):
    missing = str(tmp_path / "cache_00000000_00000009.npy")
    reader = CacheReaderWithPrefetch(str(tmp_path), 1, ["x0"])
    with pytest.raises(FileNotFoundError) as e:
        reader.open_and_prefetch_cache(missing, [])
    assert e.value.filename == missing
    p = CachePrefetcher(str(tmp_path), ["x0"])
    p.request(missing)               # read in the background: the error comes with read()
    assert p.check_if_hit(missing)
    with pytest.raises(FileNotFoundError):
        p.read()
    assert p.read() is None          # reported once
    p.close()
    reader.close()


def test_short_cache_file_names_it_and_the_variable(tmp_path):
    name = str(tmp_path / "cache_00000000_00000001.npy")
    np.save(name, np.zeros((2, 1), np.float32))
    p = CachePrefetcher(str(tmp_path), ["x0", "y"])
    with pytest.raises(DataError, match=r"cache_00000000_00000001\.npy: .*'y'"):
        p.read_cache(name, ["x0", "y"])
    p.close()


def test_prefetched_file_not_wanted_any_more_is_dropped_quietly(tmp_path):
    """A file prefetched but no longer wanted is dropped, even when it could not be read."""
    good = str(tmp_path / "a.npy")
    np.save(good, np.ones(2))
    reader = CacheReaderWithPrefetch(str(tmp_path), 1, ["x0"])
    reader.open_and_prefetch_cache(good, [str(tmp_path / "gone.npy")])
    got = reader.open_and_prefetch_cache(good, [])
    assert got["x0"].tolist() == [1.0, 1.0] and os.path.exists(good)
    reader.close()
