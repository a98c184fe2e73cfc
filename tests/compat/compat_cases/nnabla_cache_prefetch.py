"""``nnabla.utils.data_source_implements``' prefetching cache readers (``CachePrefetcher``,
``CacheReaderWithPrefetch``) over a file cache written by a file-cached data iterator, and the
``current_communicator`` and ``load`` the module imports.
"""

import csv
import os

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import outcome

M = "nnabla.utils.data_source_implements."
P = M + "CachePrefetcher."
R = M + "CacheReaderWithPrefetch."


def _load(i):
    return np.array([i, 10 * i], np.float32), np.array([i % 3], np.int32)


def _cache(r, folder):
    """A file cache of 205 samples (three files of 100, 100 and 5): the files' full names, as
    CacheDataSource lists them, and the variables."""
    DI = r.module("nnabla.utils.data_iterator")
    it = DI.data_iterator_simple(_load, 205, 50, with_memory_cache=False,
                                 with_file_cache=True, cache_dir=folder)
    it.close()
    with open(os.path.join(folder, "cache_index.csv")) as f:
        names = [os.path.join(folder, row[0]) for row in csv.reader(f)]
    with open(os.path.join(folder, "cache_info.csv")) as f:
        variables = [row[0] for row in csv.reader(f)]
    return names, variables


def _put(res, key, data):
    """``data``'s arrays under ``key`` (their dtypes are compared too), or None."""
    if data is None:
        res[key] = None
        return
    res[key] = sorted(data)
    for k in data:
        res["%s %s" % (key, k)] = data[k]


@nnabla_case(names=[M + "CacheReaderWithPrefetch", R + "open_and_prefetch_cache", R + "close"],
             note="a prefetching reader with two threads over a cache's three files: the "
                  "arrays each call returns, reading ahead, backwards (a file dropped) and "
                  "again; with no prefetch list")
def cache_reader_with_prefetch(nn, r):
    M_ = r.module("nnabla.utils.data_source_implements")
    res = {}
    with r.tempdir() as folder:
        names, variables = _cache(r, folder)
        res["files"] = [os.path.basename(n) for n in names]
        res["variables"] = variables
        reader = M_.CacheReaderWithPrefetch(folder, 2, variables)
        for step, (i, ahead) in enumerate([(0, [1, 2]), (1, [2]), (2, []), (0, [2, 1]),
                                           (2, [1]), (1, [0, 1, 2]), (0, [])]):
            got = reader.open_and_prefetch_cache(names[i], [names[j] for j in ahead])
            _put(res, "step %d" % step, got)
        reader.close()
        reader.close()
        r.touch(R + "open_and_prefetch_cache", R + "close")
        one = M_.CacheReaderWithPrefetch(folder, 1, variables)
        for i, name in enumerate([names[1], names[2], names[2]]):
            _put(res, "one thread %d" % i, one.open_and_prefetch_cache(name, [names[2]]))
        one.close()
    return res


@nnabla_case(names=[M + "CachePrefetcher", P + "read_cache", P + "request", P + "check_if_hit",
                    P + "read", P + "close"])
def cache_prefetcher(nn, r):
    M_ = r.module("nnabla.utils.data_source_implements")
    res = {}
    with r.tempdir() as folder:
        names, variables = _cache(r, folder)
        p = M_.CachePrefetcher(folder, variables)
        _put(res, "read before a request", p.read())
        p.request(names[1])
        res["file_name"] = os.path.basename(p.file_name)
        res["hits"] = [p.check_if_hit(names[0]), p.check_if_hit(names[1]),
                       p.check_if_hit(names[1])]
        res["file_name after the hit"] = p.file_name
        _put(res, "read", p.read())
        _put(res, "read again", p.read())
        p.request(names[2])
        _put(res, "read without a check", p.read())
        _put(res, "read_cache", p.read_cache(names[2], variables))
        _put(res, "read_cache, first variable", p.read_cache(names[0], variables[:1]))
        p.close()
        p.close()
        r.touch(P + "read_cache", P + "request", P + "check_if_hit", P + "read", P + "close")
    return res


@nnabla_case(names=[M + "load", M + "current_communicator"])
def data_source_implements_imports(nn, r):
    M_ = r.module("nnabla.utils.data_source_implements")
    res = {"load " + ext: M_.load(ext).__name__
           for ext in (".png", ".jpg", ".bmp", ".tiff", ".csv", ".npy")}
    res["load .xyz"] = outcome(lambda: M_.load(".xyz"))
    res["current_communicator"] = M_.current_communicator()
    with r.tempdir() as folder:
        path = os.path.join(folder, "a.csv")
        with open(path, "w") as f:
            f.write("1,2\n3,4\n")
        with open(path, "rb") as f:
            res["load('.csv') reads"] = M_.load(".csv")(f)
    return res
