"""CNTK 2.7's readers (session 43): randomized base64 sequences of several lines read over
several sweeps.

A base64 image sequence of several lines (lines with one id) delivers one image but counts its
lines as its samples, while a sweep holds one sample a sequence (``Base64ImageDeserializer.cpp``
``ChunkInfos``), so a randomized sweep ends before its last sequences.  CNTK 2.7's
``BlockRandomizer::GetNextSequences`` (BlockRandomizer.cpp:124-156) then goes on filling the
minibatch from the next sweep's first sequence, with sequences that fit in the samples it still
wants; within a sweep it takes no sequence past the sweep's samples left, except a minibatch's
first (BlockRandomizer.cpp:245-333).  Every case writes its files in its own working folder.
"""

import functools

from compat_harness import cntk_case
from compat_cases.cntk_io_42 import _png_base64

_NAMES = ["cntk.io.MinibatchSource", "cntk.io.MinibatchSource.next_minibatch",
          "cntk.io.StreamDefs", "cntk.io.StreamDef", "cntk.io.Base64ImageDeserializer"]


def _labels(src, sizes, width, part=None):
    """[labels..., '|' at a sweep's end] of each minibatch of ``sizes`` until the data ends."""
    out = []
    for size in sizes:
        mb = src.next_minibatch(size) if part is None else \
            src.next_minibatch(size, num_data_partitions=2, partition_index=part)
        if not mb:
            break
        data = mb[src.streams.l]
        out.append([int(v) for v in data.asarray().reshape(-1, width).argmax(1)]
                   + (["|"] if data.end_of_sweep else []))
        del data, mb    # (CNTK 2.7's next read reuses its matrices: hold no view)
    return out


@cntk_case(name="io43__base64_counted_cross_sweeps",
           names=_NAMES + ["cntk.io.MinibatchSource.get_checkpoint_state",
                           "cntk.io.MinibatchSource.restore_from_checkpoint"],
           note="Base64 image lines 'i<TAB>i<TAB>png', sequence i of 'counts' lines (labels "
                "the sequence numbers, 8 and 7 sequences), read randomized: seeds 0 and 2, "
                "minibatches of 2 and 3 over 3 sweeps; max_samples 13; in frame mode (2 "
                "sweeps); as data partitions 0 and 1 of 2 (3 sweeps); minibatch sizes "
                "2, 3, 1, 2, 4, ... over 3 sweeps, restored to the 5th minibatch on a second "
                "source.  Labels per minibatch, '|' where it says end_of_sweep")
def io43_base64_counted_cross_sweeps(C, r):
    png = _png_base64()
    res = {}
    sizes = [2, 3, 1, 2, 4, 1, 3, 2, 2, 3, 1, 2, 2, 2]
    for tag, counts in (("a", [1, 1, 2, 1, 1, 1, 1, 1]), ("b", [2, 1, 3, 1, 1, 2, 1])):
        with open(tag + ".txt", "w") as f:
            for i, c in enumerate(counts):
                f.write("%d\t%d\t%s\n" % (i, i, png) * c)
        width = len(counts)

        def source(seed, **kw):
            d = C.io.Base64ImageDeserializer(tag + ".txt", C.io.StreamDefs(
                f=C.io.StreamDef(field="image", transforms=[]),
                l=C.io.StreamDef(field="label", shape=width)))
            return C.io.MinibatchSource(d, randomize=True, randomization_seed=seed, **kw)
        for seed in (0, 2):
            for size in (2, 3):
                key = "%s_seed%d_mb%d" % (tag, seed, size)
                res[key] = _labels(source(seed, max_sweeps=3), [size] * 14, width)
                res[key + "_max_samples"] = _labels(source(seed, max_samples=13), [size] * 14,
                                                    width)
                res[key + "_frames"] = _labels(source(seed, max_sweeps=2, frame_mode=True),
                                               [size] * 14, width)
                res[key + "_partitions"] = [
                    _labels(source(seed, max_sweeps=3), [size] * 14, width, part)
                    for part in (0, 1)]
            src = source(seed, max_sweeps=3)
            before = _labels(src, sizes[:5], width)
            again = source(seed, max_sweeps=3)
            again.restore_from_checkpoint(src.get_checkpoint_state())
            res["%s_seed%d_restored" % (tag, seed)] = [before, _labels(again, sizes[5:], width)]
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    r.touch("cntk.io.MinibatchSource.get_checkpoint_state")
    r.touch("cntk.io.MinibatchSource.restore_from_checkpoint")
    return res


def _png(value):
    """A 2x2 RGB PNG of one value."""
    import struct
    import zlib

    def part(kind, data):
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = (b"\0" + bytes([value] * 3) * 2) * 2
    return (b"\x89PNG\r\n\x1a\n" + part(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
            + part(b"IDAT", zlib.compress(raw)) + part(b"IEND", b""))


def _attribute(read):
    """What reading an attribute gives: its shape, or the AttributeError's text."""
    try:
        got = read()
    except AttributeError as e:
        return "AttributeError: %s" % e
    return list(getattr(got, "shape", (len(got),)))


@cntk_case(name="io43__all_invalid_minibatch",
           names=_NAMES + ["cntk.io.MinibatchData.asarray", "cntk.io.MinibatchData.data",
                           "cntk.io.MinibatchData.as_sequences", "cntk.io.MinibatchData.mask",
                           "cntk.io.MinibatchData.is_sparse",
                           "cntk.io.transforms.scale"],
           note="Base64 image files (label i % 2, image i of value 10 i) where 'J' lines are "
                "base64 but not images, read in file order with max_errors 10 in minibatches "
                "of 2 (JJgggg: the first minibatch all left out; ggJJgg: a later one; ggJJ: "
                "the last one, one sweep and two; gggJJJgg in minibatches of 3), streams "
                "'features' (scale 2x2x3, or none) and 'labels' (dim 2), also named 'z' and "
                "'a'.  Per minibatch: per stream by name, num_samples, num_sequences, "
                "end_of_sweep, data is None, asarray's shape or AttributeError, as_sequences' "
                "length or AttributeError (features), mask's and is_sparse's AttributeError "
                "where no data; "
                "a RuntimeError's first line")
def io43_all_invalid_minibatch(C, r):
    import base64
    good = ["%d\t%s\n" % (i % 2, base64.b64encode(_png(10 * i)).decode("ascii"))
            for i in range(8)]
    junk = "0\t%s\n" % base64.b64encode(b"not an image at all").decode("ascii")

    def lines(pattern):
        out, k = [], 0
        for c in pattern:
            out.append(junk if c == "J" else good[k])
            k += c != "J"
        return "".join(out)
    runs = [("first", "JJgggg", True, ("features", "labels"), 2, 1),
            ("first_unscaled", "JJgggg", False, ("features", "labels"), 2, 1),
            ("first_za", "JJgggg", True, ("z", "a"), 2, 1),
            ("later", "ggJJgg", True, ("features", "labels"), 2, 1),
            ("last", "ggJJ", True, ("features", "labels"), 2, 1),
            ("last_2_sweeps", "ggJJ", True, ("features", "labels"), 2, 2),
            ("middle_of_3", "gggJJJgg", True, ("features", "labels"), 3, 1)]
    res = {}
    for tag, pattern, scale, names, size, sweeps in runs:
        with open(tag + ".txt", "w") as f:
            f.write(lines(pattern))
        transforms = [C.io.transforms.scale(width=2, height=2, channels=3)] if scale else []
        streams = C.io.StreamDefs(**{
            names[0]: C.io.StreamDef(field="image", transforms=transforms),
            names[1]: C.io.StreamDef(field="label", shape=2)})
        src = C.io.MinibatchSource(C.io.Base64ImageDeserializer(tag + ".txt", streams),
                                   randomize=False, max_sweeps=sweeps, max_errors=10)
        out = []
        for _ in range(6):
            try:
                mb = src.next_minibatch(size)
            except RuntimeError as e:
                out.append("RuntimeError: " + str(e).split("\n")[0].split(" (")[0])
                continue
            if not mb:
                out.append("empty")
                break
            step = []
            for name in sorted(names):
                d = mb[getattr(src.streams, name)]
                entry = [int(d.num_samples), int(d.num_sequences), bool(d.end_of_sweep),
                         d.data is None, _attribute(d.asarray)]
                if name == names[0]:
                    entry.append(_attribute(d.as_sequences))
                if d.data is None:
                    entry.append(_attribute(functools.partial(getattr, d, "mask")))
                    entry.append(_attribute(functools.partial(lambda m: [m.is_sparse], d)))
                step.append(entry)
                del d
            out.append(step)
            del mb
        res[tag] = out
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    r.touch("cntk.io.MinibatchData.asarray")
    r.touch("cntk.io.MinibatchData.data")
    r.touch("cntk.io.MinibatchData.as_sequences")
    r.touch("cntk.io.MinibatchData.mask")
    r.touch("cntk.io.MinibatchData.is_sparse")
    return res


@cntk_case(name="io43__base64_broadcast_join",
           names=_NAMES + ["cntk.io.HTKFeatureDeserializer"],
           note="Base64 image lines 'i<TAB>i<TAB>png', sequence i of 1, 3, 1, 2 lines, first, "
                "joined by key with an HTK feature stream of one frame per key "
                "(broadcast=True, frame i = [2i+1, 2i+2]); in file order and randomized "
                "(seed 1), frame mode or not, minibatches of 1 to 4, 2 sweeps: [labels, "
                "broadcast steps per sequence, their first values, samples of both, "
                "end_of_sweep] per minibatch.  CNTK 2.7 repeats the frame over the steps the "
                "base64 sequence delivers (one), not the lines it counts")
def io43_base64_broadcast_join(C, r):
    import struct
    png = _png_base64()
    counts = [1, 3, 1, 2]
    with open("b.txt", "w") as f:
        for i, c in enumerate(counts):
            f.write("%d\t%d\t%s\n" % (i, i, png) * c)
    frames = [[2.0 * i + 1, 2.0 * i + 2] for i in range(len(counts))]
    with open("iv.htk", "wb") as f:
        f.write(struct.pack(">iihh", len(frames), 100000, 8, 9)
                + b"".join(struct.pack(">ff", *v) for v in frames))
    with open("iv.scp", "w") as f:
        for i in range(len(counts)):
            f.write("%d=iv.htk[%d,%d]\n" % (i, i, i))
    res = {}
    for randomize in (False, True):
        for frame_mode in (False, True):
            for size in (1, 2, 3, 4):
                b = C.io.Base64ImageDeserializer("b.txt", C.io.StreamDefs(
                    f=C.io.StreamDef(field="image", transforms=[]),
                    l=C.io.StreamDef(field="label", shape=4)))
                h = C.io.HTKFeatureDeserializer(C.io.StreamDefs(
                    iv=C.io.StreamDef(shape=2, scp="iv.scp", broadcast=True)))
                src = C.io.MinibatchSource([b, h], randomize=randomize, max_sweeps=2,
                                           frame_mode=frame_mode, randomization_seed=1)
                out = []
                for _ in range(10):
                    mb = src.next_minibatch(size)
                    if not mb:
                        break
                    lab, iv = mb[src.streams.l], mb[src.streams.iv]
                    seqs = iv.as_sequences()
                    out.append([[int(v) for v in lab.asarray().reshape(-1, 4).argmax(1)],
                                [int(s.shape[0]) for s in seqs],
                                [float(s[0][0]) for s in seqs], int(lab.num_samples),
                                int(iv.num_samples), bool(lab.end_of_sweep)])
                    del lab, iv, mb, seqs
                res["%s_%s_mb%d" % ("rand" if randomize else "file",
                                    "frames" if frame_mode else "seqs", size)] = out
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="io43__max_samples_crossing_sequence",
           names=_NAMES[:-1] + ["cntk.io.CTFDeserializer"],
           note="CTF sequences of 2, 3, 1, 2, 3, 2 lines (values the sequence numbers), "
                "max_samples 3, 5 and 7, minibatches of 2, 4 and 6, in file order and "
                "randomized (seed 2): CNTK 2.7 takes a sequence that fits the minibatch while "
                "the samples before it are below max_samples, though it ends past it "
                "(BlockRandomizer.cpp:285-305).  Per minibatch: its sequences' values, its "
                "samples")
def io43_max_samples_crossing_sequence(C, r):
    with open("s.ctf", "w") as f:
        for i, n in enumerate([2, 3, 1, 2, 3, 2]):
            f.write("%d |x %d\n" % (i, i) * n)
    res = {}
    for randomize in (False, True):
        for max_samples in (3, 5, 7):
            for size in (2, 4, 6):
                d = C.io.CTFDeserializer("s.ctf", C.io.StreamDefs(
                    x=C.io.StreamDef(field="x", shape=1)))
                src = C.io.MinibatchSource(d, randomize=randomize, max_samples=max_samples,
                                           randomization_seed=2)
                out = []
                for _ in range(8):
                    mb = src.next_minibatch(size)
                    if not mb:
                        break
                    x = mb[src.streams.x]
                    out.append([int(s[0][0]) for s in x.as_sequences()] + [int(x.num_samples)])
                    del x, mb
                res["%s_max%d_mb%d" % ("rand" if randomize else "file", max_samples,
                                       size)] = out
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="io43__base64_counted_seek_past_sweep",
           names=_NAMES + ["cntk.io.MinibatchSource.get_checkpoint_state",
                           "cntk.io.MinibatchSource.restore_from_checkpoint"],
           note="Base64 image sequences of 1, 1, 1 and 5 lines (labels the sequence numbers), "
                "randomized (seed 5, 3 sweeps of 4 samples): minibatch sizes 2, 5, 1, 3, 2 on "
                "one source, and the same restored on a second source after the 1st and the "
                "2nd minibatch.  The change of size (and a restore) sets CNTK 2.7's reader to "
                "the sample position, whose seek walks sequences by their counts and can stop "
                "in the next sweep (BlockRandomizer.cpp SetState, SequenceRandomizer.cpp "
                "Seek): the next minibatch starts at that sweep's first sequence.  Labels per "
                "minibatch, '|' where it says end_of_sweep")
def io43_base64_counted_seek_past_sweep(C, r):
    png = _png_base64()
    counts = [1, 1, 1, 5]
    with open("e.txt", "w") as f:
        for i, c in enumerate(counts):
            f.write("%d\t%d\t%s\n" % (i, i, png) * c)

    def source():
        d = C.io.Base64ImageDeserializer("e.txt", C.io.StreamDefs(
            f=C.io.StreamDef(field="image", transforms=[]),
            l=C.io.StreamDef(field="label", shape=len(counts))))
        return C.io.MinibatchSource(d, randomize=True, randomization_seed=5, max_sweeps=3)
    sizes = [2, 5, 1, 3, 2]
    res = {"one_source": _labels(source(), sizes, len(counts))}
    for k in (1, 2):
        src = source()
        before = _labels(src, sizes[:k], len(counts))
        again = source()
        again.restore_from_checkpoint(src.get_checkpoint_state())
        res["restored_after_%d" % k] = [before, _labels(again, sizes[k:], len(counts))]
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    r.touch("cntk.io.MinibatchSource.get_checkpoint_state")
    r.touch("cntk.io.MinibatchSource.restore_from_checkpoint")
    return res
