"""``cntk.io.MinibatchSource``'s reading position on several data partitions and in its
checkpoint state (CNTK 2.7): a partition's turn is counted from the sweep where the reader was
last set (its first read, a new minibatch size or partition, a restore), so after a sweep of
odd length the partitions' turns swap until the size changes; ``get_checkpoint_state()`` is
``{'minibatchSourcePosition': samples}`` and a source restores from that form."""

import os

import numpy as np

from compat_harness import cntk_case

LENGTHS = [3, 1, 2, 4, 1, 1, 2, 3, 5, 1, 2]
SIZES = {"even": [8] * 9 + [4] * 3, "changed": [8] * 3 + [5] * 4 + [8] * 5,
         "odd": [7] * 10 + [3, 3, 6, 6]}


def _files(folder):
    """45 samples ``|x i``, and sequences of LENGTHS steps numbered on through the file."""
    samples = os.path.join(folder, "s45.ctf")
    with open(samples, "w") as f:
        for i in range(45):
            f.write("|x %d\n" % i)
    sequences = os.path.join(folder, "seq.ctf")
    with open(sequences, "w") as f:
        k = 0
        for s, n in enumerate(LENGTHS):
            for _ in range(n):
                f.write("%d |x %d\n" % (s, k))
                k += 1
    return {"samples": samples, "sequences": sequences}


def _source(C, path, randomize):
    streams = C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1))
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, streams), randomize=randomize,
                                max_sweeps=4)


def _read(src, n, W, r):
    """[values, samples, end of sweep] of the next minibatch, 'empty' for none."""
    mb = src.next_minibatch(n, num_data_partitions=W, partition_index=r)
    if not mb:
        return "empty"
    d = mb[src.streams.x]
    a = np.array(d.asarray(), copy=True)   # (a copy: CNTK 2.7's prefetch reuses its matrices)
    out = [[int(v) for v in a.ravel()], int(d.num_samples), bool(d.end_of_sweep)]
    del mb, d, a
    return out


@cntk_case(names=["cntk.io.MinibatchSource"],
           note="Stadyn counted a partition's turn on from the first sweep for ever")
def positions_reconfigured_partitions(C, r):
    """45 samples, or sequences of 1-5 steps, not randomized, 2 or 3 partitions, one source
    per partition: minibatches of sizes that change (``even``: 8 x 9 then 4; ``changed``;
    ``odd``: 7 x 10 then 3 and 6), each minibatch's values and the source's position after
    the sixth and the last."""
    with r.tempdir() as folder:
        files = _files(folder)
        res = {}
        for kind, path in sorted(files.items()):
            for name, sizes in sorted(SIZES.items()):
                for W in (2, 3):
                    for rank in range(W):
                        src = _source(C, path, False)
                        got, at = [], []
                        for i, n in enumerate(sizes):
                            got.append(_read(src, n, W, rank))
                            if i in (5, len(sizes) - 1):
                                at.append(src.get_checkpoint_state()["minibatchSourcePosition"])
                        res["%s_%s_w%d_r%d" % (kind, name, W, rank)] = [got, at]
        return res


@cntk_case(names=["cntk.io.MinibatchSource"],
           note="Stadyn refused CNTK's {'minibatchSourcePosition': samples}")
def positions_restored_from_cntk_form(C, r):
    """A new source restored from ``{'minibatchSourcePosition': p}`` (within a sequence too:
    the next sequence that starts there) reads on: alone and as partition r of 2, randomized
    or not."""
    with r.tempdir() as folder:
        files = _files(folder)
        res = {}
        for kind, path in sorted(files.items()):
            for randomize in (False, True):
                for p in (0, 4, 13, 26, 44, 71, 90):
                    for W, rank in ((1, 0), (2, 0), (2, 1)):
                        src = _source(C, path, randomize)
                        src.restore_from_checkpoint({"minibatchSourcePosition": p})
                        got = [_read(src, n, W, rank) for n in (6, 6, 4)]
                        got.append(src.get_checkpoint_state()["minibatchSourcePosition"])
                        res["%s_%s_p%d_w%d_r%d" % (kind, randomize, p, W, rank)] = got
        return res


@cntk_case(names=["cntk.io.MinibatchSource"],
           note="Stadyn gave its own state only")
def positions_checkpoint_state(C, r):
    """``get_checkpoint_state()`` after reads of 8 x 9 and 4 on partition r of 2 (the
    samples of the stream read or stepped over), then restored into a new source with
    minibatches of 4."""
    with r.tempdir() as folder:
        files = _files(folder)
        res = {}
        for kind, path in sorted(files.items()):
            for rank in (0, 1):
                src = _source(C, path, False)
                for n in [8] * 9 + [4]:
                    _read(src, n, 2, rank)
                state = src.get_checkpoint_state()
                again = _source(C, path, False)
                again.restore_from_checkpoint(state)
                res["%s_r%d" % (kind, rank)] = [
                    state["minibatchSourcePosition"], [_read(again, 4, 2, rank)
                                                       for _ in range(3)]]
        return res


def _image_map(folder, n=7):
    """n 2x2 images of value 10 i, label i (an odd sweep)."""
    import struct
    lines = []
    for i in range(n):
        path = os.path.join(folder, "img%d.bmp" % i)
        row = (2 * 3 + 3) // 4 * 4
        pixels = (bytes([10 * i] * 6) + b"\0" * (row - 6)) * 2
        header = struct.pack("<2sIHHI", b"BM", 54 + len(pixels), 0, 0, 54)
        info = struct.pack("<IiiHHIIiiII", 40, 2, 2, 1, 24, 0, len(pixels), 2835, 2835, 0, 0)
        with open(path, "wb") as f:
            f.write(header + info + pixels)
        lines.append("%s\t%d\n" % (path, i))
    map_file = os.path.join(folder, "map.txt")
    with open(map_file, "w") as f:
        f.writelines(lines)
    return map_file


@cntk_case(names=["cntk.io.MinibatchSource", "cntk.io.ImageDeserializer"],
           note="Stadyn counted a partition's turn on from the first sweep for ever")
def positions_image_partitions(C, r):
    """Seven images (an odd sweep), partition r of 2, minibatches of 4 x 3 then 2 (and then
    4 again), randomized or not: each minibatch's labels and the position after it."""
    T = C.io.transforms
    with r.tempdir() as folder:
        map_file = _image_map(folder)
        res = {}
        for randomize in (False, True):
            for rank in (0, 1):
                streams = C.io.StreamDefs(
                    image=C.io.StreamDef(field="image",
                                         transforms=[T.scale(width=2, height=2, channels=3)]),
                    x=C.io.StreamDef(field="label", shape=7))
                src = C.io.MinibatchSource(C.io.ImageDeserializer(map_file, streams),
                                           max_sweeps=4, randomize=randomize)
                got = []
                for n in [4] * 3 + [2] * 4 + [4] * 3:
                    mb = src.next_minibatch(n, num_data_partitions=2, partition_index=rank)
                    if not mb:
                        got.append("empty")
                        continue
                    labels = np.array(mb[src.streams.x].asarray(), copy=True)
                    got.append([[int(v) for v in labels.reshape(-1, 7).argmax(axis=1)],
                                src.get_checkpoint_state()["minibatchSourcePosition"]])
                    del mb, labels
                res["%s_r%d" % (randomize, rank)] = got
        return res


@cntk_case(names=["cntk.io.MinibatchSourceFromData"],
           note="Stadyn's state had not CNTK's keys, nor was CNTK's read")
def positions_data_source_workers(C, r):
    """``MinibatchSourceFromData`` of 45 rows on worker r of 2: minibatches of 8 x 9 then 4
    (an odd sweep: CNTK 2.7 slices each global minibatch), the rows and the state after, and
    a new source restored from that state (CNTK's keys only) reading on."""
    res = {}
    for rank in (0, 1):
        src = C.io.MinibatchSourceFromData(dict(x=np.arange(45, dtype=np.float32)[:, None]))
        got = []
        for n in [8] * 9 + [4] * 2:
            mb = src.next_minibatch(n, number_of_workers=2, worker_rank=rank)
            got.append([int(v) for v in np.asarray(mb[src.streams.x].asarray()).ravel()])
        state = src.get_checkpoint_state()
        again = C.io.MinibatchSourceFromData(dict(x=np.arange(45, dtype=np.float32)[:, None]))
        again.restore_from_checkpoint({"cursor": int(state["cursor"]),
                                       "total_num_samples": int(state["total_num_samples"])})
        more = [[int(v) for v in np.asarray(again.next_minibatch(
            6, number_of_workers=2, worker_rank=rank)[again.streams.x].asarray()).ravel()]
            for _ in range(2)]
        res["r%d" % rank] = [got, int(state["cursor"]), int(state["total_num_samples"]), more]
    return res


@cntk_case(names=["cntk.io.MinibatchSource"],
           note="Stadyn counted a partition's turn on from the first sweep for ever")
def positions_truncated_partitions(C, r):
    """``truncation_length=2`` over 11 sequences of 1-5 steps (an odd sweep), partition r of
    2, minibatches of 8 then 4, or 6 then 9 (the packer's slots emptied and the reader set
    again where the size changes): each minibatch's samples, sequences and sweep end, and
    the position at the end."""
    with r.tempdir() as folder:
        path = _files(folder)["sequences"]
        res = {}
        for sizes in ([8] * 6 + [4] * 5, [6] * 7 + [9] * 4):
            for rank in (0, 1):
                src = C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
                    x=C.io.StreamDef(field="x", shape=1))), randomize=False,
                    truncation_length=2, max_sweeps=3)
                got = []
                for n in sizes:
                    mb = src.next_minibatch(n, num_data_partitions=2, partition_index=rank)
                    if not mb:
                        got.append("empty")
                        continue
                    d = mb[src.streams.x]
                    got.append([int(d.num_samples), int(d.num_sequences),
                                bool(d.end_of_sweep)])
                    del mb, d
                got.append(src.get_checkpoint_state()["minibatchSourcePosition"])
                res["%d_%d_r%d" % (sizes[0], sizes[-1], rank)] = got
        return res


@cntk_case(names=["cntk.io.MinibatchSource"],
           note="Stadyn shuffled with randomize=True and no window (CNTK 2.7 reads in order)")
def positions_no_randomization_window(C, r):
    """``randomize=True`` with ``randomization_window_in_chunks=0`` (and no window in
    samples): CNTK 2.7 makes no randomizer and reads in file order, over sweeps too; reads
    of 4, 4, 4, 5, 5 and the position, then a new source restored at 13 reading 5, 5, 5."""
    with r.tempdir() as folder:
        res = {}
        for kind, path in sorted(_files(folder).items()):
            def source():
                streams = C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1))
                return C.io.MinibatchSource(C.io.CTFDeserializer(path, streams),
                                            randomize=True, max_sweeps=4,
                                            randomization_window_in_chunks=0)
            src = source()
            got = [_read(src, n, 1, 0) for n in (4, 4, 4)]
            got.append(src.get_checkpoint_state()["minibatchSourcePosition"])
            got += [_read(src, n, 1, 0) for n in (5, 5)]
            again = source()
            again.restore_from_checkpoint({"minibatchSourcePosition": 13})
            got += [_read(again, n, 1, 0) for n in (5, 5, 5)]
            res[kind] = got
        return res
