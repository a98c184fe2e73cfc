"""``cntk.io.MinibatchSource.next_minibatch(M, num_data_partitions=W, partition_index=r)``:
which sequences each data partition reads (CNTK 2.7: a partition walks its own every-W-th
sequences, or with ``randomize=True`` the sequences of every W-th shuffled chunk, up to its
part of the minibatch size), over CNTK-text-format files with and without sequences and an
image map file.  One source per partition, read in one process, as each worker does."""

import os
import struct

import numpy as np

from compat_harness import cntk_case

LENGTHS = [7, 3, 9, 5, 4, 6, 8, 2, 5, 7]


def _sequence_ctf(folder):
    """Sequence s has LENGTHS[s] steps ``|x s t``: the values name the sequence and step."""
    path = os.path.join(folder, "seq.ctf")
    with open(path, "w") as f:
        for s, n in enumerate(LENGTHS):
            for t in range(n):
                f.write("%d |x %d %d\n" % (s, s, t))
    return path


def _dense_ctf(folder, n=13):
    path = os.path.join(folder, "dense.ctf")
    with open(path, "w") as f:
        for s in range(n):
            f.write("|x %d 0\n" % s)
    return path


def _read(C, make, W, M, calls):
    """Per partition: [samples, sequences, first value of each sequence, end of sweep] of
    each minibatch ('empty' for an empty one)."""
    parts = []
    for rank in range(W):
        src = make()
        batches = []
        for _ in range(calls):
            mb = src.next_minibatch(M, num_data_partitions=W, partition_index=rank)
            if not mb:
                batches.append("empty")
                continue
            d = mb[src.streams.x]
            # a copy, and no view kept: CNTK 2.7's prefetch thread reuses the matrices
            a = np.array(d.asarray(), copy=True)
            firsts = a[:, 0, 0] if a.ndim == 3 else a.reshape(-1, 2)[:, 0]
            batches.append([int(d.num_samples), int(d.number_of_sequences),
                            [int(v) for v in firsts], bool(d.end_of_sweep)])
            del mb, d, a
        parts.append(batches)
    return parts


def _ctf_source(C, path, **kw):
    streams = C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=2, is_sparse=False))
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, streams), **kw)


@cntk_case(names=["cntk.io.MinibatchSource"])
def partitions_ctf_sequences(C, r):
    """Sequences of 2-9 steps, not randomized, two sweeps, 2 and 3 partitions."""
    with r.tempdir() as folder:
        path = _sequence_ctf(folder)
        res = {}
        for W, M in ((2, 12), (3, 12), (2, 5), (3, 20)):
            res["w%d_m%d" % (W, M)] = _read(
                C, lambda: _ctf_source(C, path, randomize=False, max_sweeps=2), W, M, 12)
        return res


@cntk_case(names=["cntk.io.MinibatchSource"])
def partitions_ctf_sequences_randomized(C, r):
    """The same, randomized: one chunk, so partition 0 reads everything."""
    with r.tempdir() as folder:
        path = _sequence_ctf(folder)
        res = {}
        for W, M, window in ((2, 12, 1), (2, 6, 128), (3, 12, 4)):
            res["w%d_m%d_win%d" % (W, M, window)] = _read(
                C, lambda: _ctf_source(C, path, randomize=True, max_sweeps=2,
                                       randomization_window_in_chunks=window), W, M, 10)
        return res


@cntk_case(names=["cntk.io.MinibatchSource"])
def partitions_ctf_dense(C, r):
    """13 samples without sequences: a sweep's end falls within a partition's minibatch."""
    with r.tempdir() as folder:
        path = _dense_ctf(folder)
        res = {}
        for W, M in ((2, 4), (3, 5), (2, 7)):
            for randomize in (False, True):
                res["w%d_m%d_%s" % (W, M, randomize)] = _read(
                    C, lambda: _ctf_source(C, path, randomize=randomize, max_sweeps=2), W, M, 9)
        return res


def _write_bmp(path, rgb):
    h, w, _ = rgb.shape
    row = (w * 3 + 3) // 4 * 4
    pixels = b"".join(rgb[y, :, ::-1].tobytes() + b"\0" * (row - w * 3)
                      for y in range(h - 1, -1, -1))
    header = struct.pack("<2sIHHI", b"BM", 54 + len(pixels), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(pixels), 2835, 2835, 0, 0)
    with open(path, "wb") as f:
        f.write(header + info + pixels)


def _image_map(folder, n=7):
    """n 2x2 images of value 10 i, label i (one chunk each)."""
    lines = []
    for i in range(n):
        path = os.path.join(folder, "img%d.bmp" % i)
        _write_bmp(path, np.full((2, 2, 3), 10 * i, dtype=np.uint8))
        lines.append("%s\t%d\n" % (path, i))
    map_file = os.path.join(folder, "map.txt")
    with open(map_file, "w") as f:
        f.writelines(lines)
    return map_file


def _image_parts(C, map_file, W, M, calls, n=7, **kw):
    """Per partition: [samples, labels, image values / 10, end of sweep] of each minibatch."""
    T = C.io.transforms
    parts = []
    for rank in range(W):
        streams = C.io.StreamDefs(
            image=C.io.StreamDef(field="image",
                                 transforms=[T.scale(width=2, height=2, channels=3)]),
            x=C.io.StreamDef(field="label", shape=n))
        src = C.io.MinibatchSource(C.io.ImageDeserializer(map_file, streams), max_sweeps=2,
                                   **kw)
        batches = []
        for _ in range(calls):
            mb = src.next_minibatch(M, num_data_partitions=W, partition_index=rank)
            if not mb:
                batches.append("empty")
                continue
            d = mb[src.streams.x]
            labels = np.array(d.asarray(), copy=True).reshape(-1, n)
            pixels = np.array(mb[src.streams.image].asarray(), copy=True).reshape(len(labels), -1)
            batches.append([int(d.num_samples), [int(v) for v in labels.argmax(1)],
                            [int(round(v / 10.0)) for v in pixels[:, 0]], bool(d.end_of_sweep)])
            del mb, d
        parts.append(batches)
    return parts


@cntk_case(names=["cntk.io.MinibatchSource", "cntk.io.ImageDeserializer"])
def partitions_images(C, r):
    """7 images (one chunk each), 2 and 3 partitions, in order and randomized (the chunks
    shuffled: partition r gets the images of the chunks at shuffled places r, r + W, ...): the
    label (the image's index) of each image every partition reads."""
    with r.tempdir() as folder:
        map_file = _image_map(folder)
        res = {}
        for W, M in ((2, 2), (3, 2), (2, 3)):
            for randomize in (False, True):
                res["w%d_m%d_%s" % (W, M, randomize)] = _image_parts(
                    C, map_file, W, M, 8, randomize=randomize)
        return res


@cntk_case(names=["cntk.io.MinibatchSource", "cntk.io.ImageDeserializer"])
def partitions_images_window(C, r):
    """12 images randomized in windows of 2 and 3 chunks (a sequence moves to a nearby chunk's
    place but stays its own chunk's partition's), seeds 0 and 5."""
    with r.tempdir() as folder:
        map_file = _image_map(folder, 12)
        res = {}
        for W, M, window, seed in ((2, 2, 2, 0), (3, 3, 3, 5), (2, 4, 2, 5)):
            res["w%d_m%d_win%d_seed%d" % (W, M, window, seed)] = _image_parts(
                C, map_file, W, M, 10, n=12, randomize=True,
                randomization_window_in_chunks=window, randomization_seed=seed)
        return res


@cntk_case(names=["cntk.io.MinibatchSource"])
def partitions_frame_mode(C, r):
    """``frame_mode=True`` over samples without sequences: every frame is a sequence of its
    own, dealt as above (CNTK 2.7 refuses frame mode on a text file of longer sequences)."""
    with r.tempdir() as folder:
        path = _dense_ctf(folder)
        res = {}
        for W, M, randomize in ((2, 4, False), (3, 5, True), (3, 4, False)):
            res["w%d_m%d_%s" % (W, M, randomize)] = _read(
                C, lambda: _ctf_source(C, path, randomize=randomize, frame_mode=True,
                                       max_sweeps=2), W, M, 10)
        return res


@cntk_case(names=["cntk.io.MinibatchSource"])
def partitions_max_samples(C, r):
    """``max_samples`` counts the samples of the whole stream (every partition's), so a
    partition stops where the stream reaches it, whatever it has read itself."""
    with r.tempdir() as folder:
        seq, dense = _sequence_ctf(folder), _dense_ctf(folder)
        res = {}
        for name, path, W, M, randomize, limit in (
                ("seq", seq, 2, 12, False, 40), ("seq3", seq, 3, 9, False, 75),
                ("dense", dense, 2, 4, False, 9), ("dense_r", dense, 2, 4, True, 9),
                ("dense3", dense, 3, 5, False, 20)):
            res[name] = _read(C, lambda: _ctf_source(C, path, randomize=randomize,
                                                     max_samples=limit), W, M, 8)
        return res
