"""CNTK 2.7's randomized order, sample for sample: ``MinibatchSource(randomize=True)`` over a
text-format file (one chunk, and cut into 40-byte chunks), a binary (CBF) file, a map file of
images (a chunk per image: the randomization window matters), sequences and a Python
``UserDeserializer`` (CNTK's local-timeline randomizer), with seeds and windows in chunks and
in samples.  Each case returns the ids of the samples in the order they came, over two or
three sweeps."""

import os

import numpy as np

from compat_cases.cntk_io import _write_png
from compat_cases.cntk_io_formats import _write_cbf
from compat_harness import cntk_case


def _ids(C, src, stream, size, width=1):
    """Every sample's first value until the source ends, and the minibatch sizes."""
    ids, sizes = [], []
    while True:
        mb = src.next_minibatch(size)
        if not mb:
            break
        d = mb[src.streams[stream]]
        values = [np.asarray(s, np.float32).reshape(-1, width)[:, 0] for s in d.as_sequences()]
        ids.extend(int(v) for s in values for v in s)
        sizes.append(int(d.num_samples))
        del d, mb
    return {"ids": ids, "sizes": sizes}


def _each(C, res, settings, make, stream, size, width=1):
    """For each ``(tag, keyword arguments)`` of ``settings``: the ids and minibatch sizes of
    the source ``make(C, **kw)`` gives, stored in ``res`` as ``<tag>_ids``, ``<tag>_sizes``."""
    for tag, kw in settings:
        for key, value in _ids(C, make(C, **kw), stream, size, width).items():
            res["%s_%s" % (tag, key)] = value


def _text(path, chunk_bytes=None):
    """A source maker over a text-format file (``chunk_bytes``: the chunk size, set each
    framework's way: Stadyn's attribute, CNTK's config entry ``chunkSizeInBytes``)."""
    def make(C, **kw):
        d = C.io.CTFDeserializer(path, C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1)))
        if chunk_bytes is not None and hasattr(d, "chunk_bytes"):
            d.chunk_bytes = chunk_bytes
        elif chunk_bytes is not None:     # CNTK's deserializer is its config dictionary
            d["chunkSizeInBytes"] = chunk_bytes
        return C.io.MinibatchSource(d, **kw)
    return make


def _counting_ctf(folder, lengths=None, n=12, padded=False):
    """Sample k holds the value k (``padded``: written with (7k mod 10) zeros after the point,
    so the lines' lengths vary); with ``lengths`` sequence s has lengths[s] steps."""
    path = os.path.join(folder, "count.ctf")
    with open(path, "w") as f:
        if lengths is None:
            f.write("".join("|x %d.%s\n" % (k, "0" * (7 * k % 10 if padded else 0))
                            for k in range(n)))
        else:
            k = 0
            for s, steps in enumerate(lengths):
                for _ in range(steps):
                    f.write("%d |x %d\n" % (s, k))
                    k += 1
    return path


@cntk_case(names=["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer"],
           note="a text-format file of 12 samples (one chunk), three sweeps in minibatches of "
                "5 with seeds 0 and 7; sequences of 1 to 4 steps in minibatches of 6 "
                "samples, and a window of 4 samples; 60 samples cut into 40-byte chunks "
                "(20 chunks) with windows of 3 chunks and of 10 samples")
def randomized_order_text_format(C, r):
    res = {}
    with r.tempdir() as folder:
        _each(C, res, [("seed%d" % seed, dict(randomization_seed=seed, max_sweeps=3))
                       for seed in (0, 7)], _text(_counting_ctf(folder)), "x", 5)
        seq_path = _counting_ctf(folder, lengths=[3, 1, 4, 2, 2, 1, 3, 4])
        _each(C, res, [("sequences", dict(max_sweeps=2)),
                       ("window4", dict(randomization_window_in_samples=4,
                                        randomization_window_in_chunks=0, max_sweeps=2))],
              _text(seq_path), "x", 6)
        padded = _counting_ctf(folder, n=60, padded=True)
        _each(C, res, [("chunks40", dict(randomization_window_in_chunks=3, max_sweeps=2)),
                       ("chunks40_samples10", dict(randomization_window_in_chunks=0,
                                                   randomization_window_in_samples=10,
                                                   max_sweeps=2))],
              _text(padded, chunk_bytes=40), "x", 7)
    return res


@cntk_case(names=["cntk.io.MinibatchSource", "cntk.io.ImageDeserializer"],
           note="a map file of 40 one-pixel images (a chunk each), two sweeps in minibatches "
                "of 16: the default window of 128 chunks, windows of 6 chunks and of 9 "
                "samples, seed 3")
def randomized_order_images(C, r):
    res = {}
    with r.tempdir() as folder:
        map_path = os.path.join(folder, "map.txt")
        with open(map_path, "w") as f:
            for k in range(40):
                image = os.path.join(folder, "%d.png" % k)
                _write_png(image, np.full((1, 1, 3), k, np.uint8))
                f.write("%s\t%d\n" % (image, k % 3))

        def make(C, **kw):
            d = C.io.ImageDeserializer(map_path, C.io.StreamDefs(
                image=C.io.StreamDef(field="image", transforms=[]),
                label=C.io.StreamDef(field="label", shape=3)))
            return C.io.MinibatchSource(d, max_sweeps=2, **kw)
        _each(C, res, [("default", {}), ("window6", dict(randomization_window_in_chunks=6)),
                       ("samples9", dict(randomization_window_in_samples=9,
                                         randomization_window_in_chunks=0)),
                       ("seed3", dict(randomization_seed=3, randomization_window_in_chunks=6))],
              make, "image", 16, width=3)
    return res


def _user_deserializer(C, sizes):
    info = [C.io.StreamInformation("x", 0, "dense", np.float32, (1,))]
    starts = [int(s) for s in np.cumsum([0] + list(sizes))]

    class Counting(C.io.UserDeserializer):
        def __init__(self):
            super(Counting, self).__init__()

        def stream_infos(self):
            return info

        def num_chunks(self):
            return len(sizes)

        def get_chunk(self, chunk_id):
            a, b = starts[chunk_id], starts[chunk_id + 1]
            return {"x": np.arange(a, b, dtype=np.float32).reshape(-1, 1)}
    return Counting()


@cntk_case(names=["cntk.io.UserDeserializer", "cntk.io.MinibatchSource"],
           note="CNTK reads a Python deserializer with another randomizer (windows of chunks "
                "tumbling over the sweeps): 8 chunks of 2 and 5 chunks of 1 to 4 samples, "
                "three sweeps in minibatches of 5, default window, windows of 2 and 3 chunks, "
                "seed 3")
def randomized_order_user_deserializer(C, r):
    r.touch("cntk.io.UserDeserializer.stream_infos", "cntk.io.UserDeserializer.num_chunks",
            "cntk.io.UserDeserializer.get_chunk")
    res = {}
    def make(C, sizes, **kw):
        return C.io.MinibatchSource(_user_deserializer(C, sizes), max_sweeps=3, **kw)
    _each(C, res, [("default", dict(sizes=[2] * 8)),
                   ("window2", dict(sizes=[2] * 8, randomization_window_in_chunks=2)),
                   ("uneven", dict(sizes=[3, 1, 4, 2, 1], randomization_window_in_chunks=3)),
                   ("seed3", dict(sizes=[3, 1, 4, 2, 1], randomization_seed=3,
                                  randomization_window_in_chunks=2))], make, "x", 5)
    return res


@cntk_case(names=["cntk.io.MinibatchSource", "cntk.io.CBFDeserializer"],
           note="a binary (CBF) file of 30 one-step sequences stored 3 a chunk (its chunks are "
                "the randomizer's), two sweeps in minibatches of 8: windows of 4 chunks and of "
                "7 samples")
def randomized_order_binary_format(C, r):
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "count.cbf")
        _write_cbf(path, [("x", False, [np.full((1, 1), k, np.float32) for k in range(30)])],
                   per_chunk=3)
        _each(C, res, [("window4", dict(randomization_window_in_chunks=4)),
                       ("samples7", dict(randomization_window_in_chunks=0,
                                         randomization_window_in_samples=7))],
              lambda C, **kw: C.io.MinibatchSource(C.io.CBFDeserializer(path), max_sweeps=2,
                                                   **kw), "x", 8)
    return res
