"""``nnabla.utils.data_iterator``, ``data_source`` and ``data_source_loader``: the samples,
their order over several epochs (with NNabla's generators: the orders themselves are
compared), the caches' files and what the loaders read.
"""

import csv
import os

import numpy as np

from compat_harness import nnabla_case

D = "nnabla.utils.data_iterator."
DS = "nnabla.utils.data_source."
L = "nnabla.utils.data_source_loader."


def _load(i):
    return np.array([i, 10 * i], np.float32), np.array([i % 3], np.int32)


def _run(it, n, positions=True):
    """``n`` batches: the first variable's first column, and epoch/position after each.

    Through a cache, NNabla's ``position`` is the cache's own reading position (a file
    cache's steps by whole files, a memory cache's can stand at ``size``): ``positions=False``
    leaves it out there; the samples and epochs are compared.
    """
    batches, where = [], []
    for _ in range(n):
        batches.append(it.next()[0][:, 0].astype(int).tolist())
        where.append([it.epoch, it.position] if positions else it.epoch)
    return {"batches": batches, "where": where}


@nnabla_case(names=[D + "data_iterator_simple"])
def iterator_shuffled_orders(nn, r):
    """Shuffled epochs, with and without the memory cache: the exact orders (a memory cache
    replays its source's first order, then draws its own)."""
    DI = r.module("nnabla.utils.data_iterator")
    res = {}
    for cache in (False, True):
        it = DI.data_iterator_simple(_load, 7, 3, shuffle=True, rng=np.random.RandomState(1),
                                     with_memory_cache=cache, with_file_cache=False)
        res["cache %s" % cache] = _run(it, 10, positions=not cache)
        it.close()
    return res


@nnabla_case(names=[D + "data_iterator_simple"])
def iterator_callbacks(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    events = []
    it = DI.data_iterator_simple(_load, 5, 2, with_memory_cache=False, use_thread=False,
                                 epoch_begin_callbacks=[lambda e: events.append(["begin", e])],
                                 epoch_end_callbacks=[lambda e: events.append(["end", e])])
    it.register_epoch_end_callback(lambda e: events.append(["end2", e]))
    run = _run(it, 6)
    run["events"] = events
    return run


@nnabla_case(names=[D + "data_iterator_simple"],
             note="stop_exhausted: whole batches of one epoch, then StopIteration, and again "
                  "without the thread (with it, NNabla 1.39's next() after StopIteration waits "
                  "forever for its queue; Stadyn raises StopIteration again: "
                  "tests/io/test_data_iterator.py)")
def iterator_stop_exhausted_again(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    res = {}
    for threaded in (False, True):
        it = DI.data_iterator_simple(_load, 8, 4, with_memory_cache=False,
                                     use_thread=threaded, stop_exhausted=True)
        seen = []
        for _ in range(3 if threaded else 4):
            try:
                seen.append(it.next()[0][:, 0].astype(int).tolist() + [it.position])
            except StopIteration:
                seen.append("StopIteration")
        res["threaded %s" % threaded] = seen
        res["epoch %s" % threaded] = it.epoch
    return res


@nnabla_case(names=[D + "data_iterator_simple"])
def iterator_slices(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    res = {}
    for drop_last in (False, True):
        it = DI.data_iterator_simple(_load, 10, 2, with_memory_cache=False)
        for pos in range(3):
            part = it.slice(rng=None, num_of_slices=3, slice_pos=pos, drop_last=drop_last)
            res["%s %d" % (drop_last, pos)] = [part.size] + _run(part, 3)["batches"]
    it = DI.data_iterator_simple(_load, 10, 3, with_memory_cache=False)
    part = it.slice(rng=None, slice_start=2, slice_end=7)
    res["range"] = [part.size] + _run(part, 3)["batches"]
    return res


def _read_csv(path):
    with open(path) as f:
        return [row for row in csv.reader(f)]


@nnabla_case(names=[D + "data_iterator_simple", D + "DataSourceWithFileCache",
                    D + "data_iterator_cache", D + "CacheDataSource",
                    DS + "DataSourceWithFileCache"])
def file_cache(nn, r):
    """A file cache's files (NNabla's .npy format, index and info), reading it back, and
    a cache folder read as a data set."""
    DI = r.module("nnabla.utils.data_iterator")
    res = {}
    with r.tempdir() as folder:
        it = DI.data_iterator_simple(_load, 205, 50, with_memory_cache=False,
                                     with_file_cache=True, cache_dir=folder)
        res["first"] = _run(it, 6, positions=False)
        res["files"] = sorted(os.listdir(folder))
        res["index"] = _read_csv(os.path.join(folder, "cache_index.csv"))
        res["info"] = _read_csv(os.path.join(folder, "cache_info.csv"))
        with open(os.path.join(folder, "cache_00000200_00000204.npy"), "rb") as f:
            res["last file x"], res["last file y"] = np.load(f), np.load(f)
        it.close()
        cached = DI.data_iterator_cache(folder, 4, shuffle=False)
        x, y = cached.next()
        res["cache x"], res["cache y"], res["cache size"] = x, y, cached.size
        res["cache variables"] = list(cached.variables)
        cached.close()
        source = DI.CacheDataSource(folder, shuffle=True, rng=np.random.RandomState(3))
        res["cache shuffled"] = [int(source.next()[0][0]) for _ in range(6)]
        source.close()      # (its prefetching threads would wait for files until the exit)
        os.makedirs(os.path.join(folder, "d"))        # NNabla does not make the folder
        direct = DI.DataSourceWithFileCache(DI.SimpleDataSource(_load, 5),
                                            cache_dir=os.path.join(folder, "d"),
                                            cache_file_name_prefix="part")
        res["prefix files"] = sorted(os.listdir(os.path.join(folder, "d")))
        res["direct size"] = direct.size
    return res


@nnabla_case(names=[D + "data_iterator_simple"],
             note="a shuffled file cache: the order of its files and of the samples within "
                  "them, drawn from the iterator's rng")
def file_cache_shuffled(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    with r.tempdir() as folder:
        it = DI.data_iterator_simple(_load, 230, 40, shuffle=True,
                                     rng=np.random.RandomState(5), with_memory_cache=False,
                                     with_file_cache=True, cache_dir=folder)
        res = _run(it, 8, positions=False)
        it.close()
    return res


def _write_dataset(folder, IU_):
    IU_.imsave(os.path.join(folder, "a.png"), np.arange(12, dtype=np.uint8).reshape(2, 2, 3))
    IU_.imsave(os.path.join(folder, "b.png"), np.full((2, 2, 3), 200, np.uint8))
    np.save(os.path.join(folder, "v.npy"), np.arange(6, dtype=np.float32).reshape(2, 3))
    with open(os.path.join(folder, "m.csv"), "w") as f:
        f.write("1,2,3\n4,5,6\n")
    path = os.path.join(folder, "train.csv")
    with open(path, "w") as f:
        f.write("x:image,v,w__0,w__1,#comment,y:label\n"
                "a.png,v.npy,0.5,1.5,ignored,1\n"
                "b.png,m.csv,2.5,3.5,ignored,0\n"
                "a.png,v.npy,4.5,5.5,ignored,2\n")
    return path


@nnabla_case(names=[D + "data_iterator_csv_dataset", D + "CsvDataSource"])
def csv_dataset(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    IU_ = r.module("nnabla.utils.image_utils")
    res = {}
    with r.tempdir() as folder:
        path = _write_dataset(folder, IU_)
        for normalize in (True, False):
            it = DI.data_iterator_csv_dataset(path, 2, shuffle=False, normalize=normalize,
                                              with_memory_cache=False, with_file_cache=False)
            res["variables"] = list(it.variables)
            for k in range(2):
                for name, value in zip(it.variables, it.next()):
                    res["%s %d %s" % (normalize, k, name)] = value
            it.close()
        source = DI.CsvDataSource(path, shuffle=True, rng=np.random.RandomState(2))
        res["shuffled w"] = [list(map(float, source.next()[2])) for _ in range(3)]
        os.makedirs(os.path.join(folder, "cache"))
        cached = DI.data_iterator_csv_dataset(path, 3, shuffle=False,
                                              cache_dir=os.path.join(folder, "cache"))
        res["cached"] = list(cached.next())
        res["cache files"] = sorted(os.listdir(os.path.join(folder, "cache")))
        res["order"] = _read_csv(os.path.join(folder, "cache", "order.csv"))
        cached.close()
    return res


@nnabla_case(names=[D + "data_iterator_concat_datasets", D + "ConcatDataSource"])
def concat_datasets(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    a = DI.SimpleDataSource(_load, 3)
    b = DI.SimpleDataSource(lambda i: _load(100 + i), 2)
    it = DI.data_iterator_concat_datasets([a, b], 2, shuffle=False, with_memory_cache=False)
    res = _run(it, 4, positions=False)     # NNabla's varies from run to run at an epoch's end
    shuffled = DI.ConcatDataSource([DI.SimpleDataSource(_load, 3),
                                    DI.SimpleDataSource(lambda i: _load(100 + i), 2)],
                                   rng=np.random.RandomState(4))
    res["shuffled"] = [int(shuffled.next()[0][0]) for _ in range(5)]
    res["size"] = shuffled.size
    return res


@nnabla_case(names=[D + "DataSourceWithMemoryCache", DS + "DataSourceWithMemoryCache",
                    D + "SlicedDataSource", DS + "SlicedDataSource", DS + "DataSource"],
             note="the sources read directly: reset() starts an epoch, next() reads a sample")
def data_sources(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    DSm = r.module("nnabla.utils.data_source")
    res = {}
    cached = DSm.DataSourceWithMemoryCache(DI.SimpleDataSource(_load, 4), shuffle=True,
                                           rng=np.random.RandomState(6))
    epochs = []
    for _ in range(4):
        cached.reset()
        epochs.append([int(cached.next()[0][0]) for _ in range(4)])
    res["memory epochs"] = epochs
    res["memory is source"] = isinstance(cached, DSm.DataSource)
    part = DSm.SlicedDataSource(DI.SimpleDataSource(_load, 10), slice_start=3, slice_end=7)
    part.reset()
    res["sliced"] = [int(part.next()[0][0]) for _ in range(4)]
    res["sliced size"] = part.size
    return res


@nnabla_case(names=[DS + "DataSourceWithFileCacheError"])
def file_cache_error(nn, r):
    DSm = r.module("nnabla.utils.data_source")
    return {"is exception": issubclass(DSm.DataSourceWithFileCacheError, Exception)}


@nnabla_case(names=[DS + "FileReader", L + "FileReader"])
def file_reader(nn, r):
    DSm = r.module("nnabla.utils.data_source")
    with r.tempdir() as folder:
        base = os.path.join(folder, "set.csv")
        with open(base, "w") as f:
            f.write("x\n1\n")
        os.makedirs(os.path.join(folder, "sub"))
        with open(os.path.join(folder, "sub", "n.csv"), "w") as f:
            f.write("5,6\n")
        reader = DSm.FileReader(base)
        with reader.open(textmode=True) as f:
            text = f.read()
        with reader.open("sub/n.csv") as f:
            relative = f.read()
    return {"text": text, "relative": relative.decode("ascii")}


@nnabla_case(names=[L + "load_image", L + "load_csv", L + "load_npy", L + "get_file_extension"])
def loaders(nn, r):
    Lm = r.module("nnabla.utils.data_source_loader")
    IU_ = r.module("nnabla.utils.image_utils")
    res = {}
    with r.tempdir() as folder:
        img = (r.rand(4, 6, 3) * 255).astype(np.uint8)
        png = os.path.join(folder, "i.png")
        IU_.imsave(png, img)
        grey = os.path.join(folder, "g.png")
        IU_.imsave(grey, img[..., 0])
        res["image"] = Lm.load_image(png)
        res["image normalized"] = Lm.load_image(png, normalize=True)
        res["grey"] = Lm.load_image(grey)
        res["grey square"] = Lm.load_image(grey, shape=(1, 5, 5))
        res["grey 3x5"] = Lm.load_image(grey, shape=(1, 3, 5))
        with open(os.path.join(folder, "a.csv"), "w") as f:
            f.write("1,2,3\n4,5,6\n")
        with open(os.path.join(folder, "a.csv"), "rb") as f:
            res["csv"] = Lm.load_csv(f)
        with open(os.path.join(folder, "a.csv"), "rb") as f:
            res["csv shaped"] = Lm.load_csv(f, shape=(3, 2))
        np.save(os.path.join(folder, "a.npy"), r.randn(2, 3))
        res["npy"] = Lm.load_npy(os.path.join(folder, "a.npy"))
        res["extensions"] = [Lm.get_file_extension("x/Y.PNG"),
                             Lm.get_file_extension("z.tar.gz")]
        with open(png, "rb") as f:
            res["extension of file"] = Lm.get_file_extension(f)
    return res


@nnabla_case(names=[L + "download", L + "get_data_home"],
             note="a file already in place is not fetched again: download returns it (Stadyn "
                  "never fetches; a missing one is a DownloadError: tests/io/test_nnabla_data.py)")
def download_in_place(nn, r):
    Lm = r.module("nnabla.utils.data_source_loader")
    with r.tempdir() as folder:
        target = os.path.join(folder, "train.csv")
        with open(target, "w") as f:
            f.write("x\n1\n")
        f = Lm.download("https://example.invalid/data/train.csv", target)
        content = f.read()
        f.close()
        closed = Lm.download("https://example.invalid/data/train.csv", target,
                             open_file=False)
    return {"content": content.decode("ascii"), "not opened": closed is None,
            "home": os.path.basename(Lm.get_data_home())}


@nnabla_case(names=[D + "data_iterator_simple", D + "data_iterator_csv_dataset",
                    D + "DataSourceWithFileCache", D + "data_iterator_cache",
                    "nnabla.utils.data_source_implements.CacheDataSource",
                    "nnabla.utils.create_cache.CreateCache"],
             note="a cache folder that does not exist: NNabla 1.39 does not make it, "
                  "FileNotFoundError naming the first cache file (writing) or the folder "
                  "(reading); Stadyn made it")
def file_cache__missing_folder(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    DSI = r.module("nnabla.utils.data_source_implements")
    CC = r.module("nnabla.utils.create_cache")
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "a.csv")
        with open(path, "w") as f:
            f.write("x__0,x__1,y\n1,2,0\n3,4,1\n5,6,0\n")
        calls = {
            "simple": lambda out: DI.data_iterator_simple(
                _load, 5, 2, with_memory_cache=False, with_file_cache=True, cache_dir=out),
            "csv_dataset": lambda out: DI.data_iterator_csv_dataset(path, 2, cache_dir=out),
            "DataSourceWithFileCache": lambda out: DI.DataSourceWithFileCache(
                DI.SimpleDataSource(_load, 5), cache_dir=out, cache_file_name_prefix="part"),
            "CreateCache.create": lambda out: CC.CreateCache(path).create(out),
            "data_iterator_cache": lambda out: DI.data_iterator_cache(out, 2),
            "CacheDataSource": lambda out: DSI.CacheDataSource(out)}
        for key, call in calls.items():
            out = os.path.join(folder, "missing_" + key.replace(".", "_"), "cache")
            try:
                made = call(out)
                res[key] = ["made", sorted(os.listdir(out))]
                getattr(made, "close", lambda: None)()
            except FileNotFoundError as e:
                res[key] = ["FileNotFoundError", e.errno, os.path.relpath(e.filename, folder),
                            os.path.isdir(out)]
    return res
