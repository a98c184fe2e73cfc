"""CNTK 2.7's readers (session 41): where a bad text line or HTK frame range raises when the
data is read in data partitions or in frame mode.

CNTK 2.7 parses a text chunk, and reads an HTK chunk's utterances, when it loads the chunk:
not randomized (``NoRandomizer``), the chunks of the sequences a partition delivers
(NoRandomizer.cpp:200-210); randomized (``BlockRandomizer::LoadDataChunks``), the chunks of
the randomization windows of every sequence the minibatch walked over, of a partition only the
chunks whose shuffled place is its own (BlockRandomizer.cpp:366-372).  Frame mode loads the
same chunks (their frames).  Every case writes its files in its own working folder.
"""

import functools
import os

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_result = functools.partial(outcome, convert=as_returned, raised=as_raised)

_NAMES = ["cntk.io.MinibatchSource", "cntk.io.MinibatchSource.next_minibatch"]


def _write(name, data):
    with open(name, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("ascii"))
    return name


def _write_htk(name, data):
    """An HTK feature file of the frames ``data`` (frames x dim, written as big-endian
    float32): the 12-byte header (frames, a period of 100,000 x 100 ns, bytes a frame, kind 9
    USER), then the frames."""
    import struct
    import numpy as np
    data = np.asarray(data, ">f4")
    return _write(name, struct.pack(">iihh", data.shape[0], 100000, 4 * data.shape[1], 9)
                  + data.tobytes())


def _read(src, sizes, mode, first):
    """For each minibatch size in ``sizes`` (the last repeated) until the data ends or a
    read raises: ``first(minibatch data)`` and the samples read; ``"empty"`` or the built-in
    type raised ends the list.  ``mode``: "one" (one partition), "p0"/"p1" (partition 0 or
    1 of 2)."""
    out = []
    for k in range(12):
        size = sizes[min(k, len(sizes) - 1)]
        if mode == "one":
            got = _result(lambda: src.next_minibatch(size))
        else:
            got = _result(lambda: src.next_minibatch(size, num_data_partitions=2,
                                                     partition_index=int(mode[1])))
        if "raises" in got:
            return out + [got["raises"]]
        mb = got["returns"]
        if not mb:
            return out + ["empty"]
        data = mb[src.streams.x]
        out.append([first(data.asarray()), int(data.num_samples)])
        del data, mb, got   # (CNTK 2.7's next read reuses its matrices: hold no view)
    return out


_CTF_RUNS = [("file_order", dict(randomize=False)), ("randomized", dict(randomize=True)),
             ("window1_seed3", dict(randomize=True, randomization_window_in_chunks=1,
                                    randomization_seed=3))]


@cntk_case(name="io41__ctf_chunk_errors_partitions_frames",
           names=_NAMES + ["cntk.io.CTFDeserializer", "cntk.io.StreamDefs",
                           "cntk.io.StreamDef"],
           note="12 one-line sequences '|x i' cut into chunks of 30 bytes (lines 1-6, 7-11, "
                "12: d['chunkSizeInBytes'] = 30), a value 'a' on line 3, 8 or 12 or none; read "
                "in minibatches of 2 as partition 0 or 1 of 2 and in frame mode (one "
                "partition and partition 1), in file order, randomized (the default window: "
                "all chunks) and randomized with a window of 1 chunk, seed 3")
def io41_ctf_chunk_errors_partitions_frames(C, r):
    good = ["|x %d\n" % i for i in range(12)]
    res = {}
    for bad in (None, 2, 7, 11):
        lines = list(good)
        if bad is not None:
            lines[bad] = "|x a\n"
        path = _write("b%s.ctf" % bad, "".join(lines))
        for tag, kw in _CTF_RUNS:
            for mode, frames in (("p0", False), ("p1", False), ("one", True), ("p1", True)):
                d = C.io.CTFDeserializer(path, C.io.StreamDefs(
                    x=C.io.StreamDef(field="x", shape=1)))
                d["chunkSizeInBytes"] = 30
                src = C.io.MinibatchSource(d, max_sweeps=1, frame_mode=frames, **kw)
                res["bad%s_%s_%s%s" % (bad, tag, mode, "_frames" if frames else "")] = _read(
                    src, [2], mode, lambda x: [float(v) for v in x.ravel()])
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="io41__htk_chunk_errors_partitions_frames",
           names=_NAMES + ["cntk.io.HTKFeatureDeserializer", "cntk.io.StreamDefs",
                           "cntk.io.StreamDef"],
           note="one HTK file of 93,001 frames (frame t: [t, 1]); utterance 0 its first 90,001 "
                "frames (CNTK 2.7's chunk 0: a chunk closes past 90,000 frames), utterances "
                "1-3 1,000 frames each (chunk 1), or utterance 2 instead a range ending past "
                "the file's end.  The first frame and samples of each minibatch: utterances "
                "as partition 0 or 1 of 2 (minibatches of 2 samples: one utterance each) in "
                "file order, randomized (default window), randomized with a window of 1 chunk "
                "(seeds 0 and 1); frame mode in file order (minibatches of 60,000 frames, one "
                "partition and partition 1) and randomized (one partition)")
def io41_htk_chunk_errors_partitions_frames(C, r):
    import numpy as np
    frames = 93001
    data = np.zeros((frames, 2), ">f4")
    data[:, 0] = np.arange(frames)
    data[:, 1] = 1
    _write_htk("f.htk", data)

    def first(x):
        return float((x[0] if isinstance(x, list) else x).reshape(-1, 2)[0, 0])
    runs = [("file_order", dict(randomize=False), ("p0", "p1", "one_frames", "p1_frames")),
            ("randomized", dict(randomize=True), ("p0", "p1", "one_frames")),
            ("window1_seed0", dict(randomize=True, randomization_window_in_chunks=1,
                                   randomization_seed=0), ("p0", "p1")),
            ("window1_seed1", dict(randomize=True, randomization_window_in_chunks=1,
                                   randomization_seed=1), ("p0", "p1"))]
    res = {}
    for bad in (None, 2):
        ranges = [(0, 90000)] + [(89001 + 1000 * u, 89000 + 1000 * (u + 1))
                                 for u in range(1, 4)]
        if bad is not None:
            ranges[bad] = (frames - 500, frames + 10)
        scp = _write("s%s.scp" % bad, "".join("u%d.mfc=f.htk[%d,%d]\n" % (u, a, b)
                                              for u, (a, b) in enumerate(ranges)))
        for tag, kw, modes in runs:
            for mode in modes:
                frame_mode = mode.endswith("_frames")
                d = C.io.HTKFeatureDeserializer(C.io.StreamDefs(
                    x=C.io.StreamDef(shape=2, scp=scp)))
                src = C.io.MinibatchSource(d, max_sweeps=1, frame_mode=frame_mode, **kw)
                res["bad%s_%s_%s" % (bad, tag, mode)] = _read(
                    src, [60000] if frame_mode else [2], mode.split("_")[0], first)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="io41__settings_after_source",
           names=_NAMES + ["cntk.io.CTFDeserializer", "cntk.io.HTKFeatureDeserializer",
                           "cntk.io.StreamDefs", "cntk.io.StreamDef"],
           note="keys set on a deserializer after the MinibatchSource over it was made (CNTK "
                "2.7 makes its reader from the deserializers' configuration then): "
                "chunkSizeInBytes 30 on 12 lines '|x i' read randomized with a window of 1 "
                "chunk, and on the same lines with line 8 bad read in file order (one chunk of "
                "the default 32 MiB when the source was made: the first minibatch loads it); "
                "maxSequenceSize 2 on an HTK script of utterances of 1, 3 and 2 frames; each "
                "beside the key set before the source is made")
def io41_settings_after_source(C, r):
    import numpy as np
    lines = ["|x %d\n" % i for i in range(12)]
    _write("g.ctf", "".join(lines))
    lines[7] = "|x a\n"
    _write("b.ctf", "".join(lines))
    frames = 6
    data = np.zeros((frames, 1), ">f4")
    data[:, 0] = np.arange(frames)
    _write_htk("f.htk", data)
    _write("u.scp", "u0.mfc=f.htk[0,0]\nu1.mfc=f.htk[1,3]\nu2.mfc=f.htk[4,5]\n")

    def ctf(path):
        return C.io.CTFDeserializer(path, C.io.StreamDefs(x=C.io.StreamDef(field="x",
                                                                           shape=1)))

    def htk():
        return C.io.HTKFeatureDeserializer(C.io.StreamDefs(x=C.io.StreamDef(shape=1,
                                                                           scp="u.scp")))

    def values(x):
        return [float(v) for v in (x[0] if isinstance(x, list) else x).ravel()]
    reads = [("ctf_window1", lambda: ctf("g.ctf"), "chunkSizeInBytes", 30,
              dict(randomize=True, randomization_window_in_chunks=1), 3),
             ("ctf_bad_line", lambda: ctf("b.ctf"), "chunkSizeInBytes", 30,
              dict(randomize=False), 2),
             ("htk_max_size", htk, "maxSequenceSize", 2, dict(randomize=False), 1)]
    res = {}
    for tag, make, key, value, kw, size in reads:
        for when in ("before", "after"):
            d = make()
            if when == "before":
                d[key] = value
            src = C.io.MinibatchSource(d, max_sweeps=1, **kw)
            if when == "after":
                d[key] = value
            res["%s_%s" % (tag, when)] = _read(src, [size], "one", values)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="io41__base64_chunks_32mib",
           names=_NAMES + ["cntk.io.Base64ImageDeserializer", "cntk.io.StreamDefs",
                           "cntk.io.StreamDef"],
           note="40 base64 lines of 1 MiB - 1 byte each ('[100+i<TAB>]i<TAB>' and a 2x2 PNG "
                "padded with zeros), label i of 40: CNTK 2.7's text index cuts chunks of "
                "32 MiB (lines 0-31, 32-39); after line 30 nothing, or a line of 1 MiB of "
                "spaces; without and with sequence ids.  The labels of a sweep randomized "
                "with a window of 1 chunk, seed 1 (the chunks' lines stay together), in "
                "minibatches of 8.  The files (about 41 MiB each) are written by the case")
def io41_base64_chunks_32mib(C, r):
    import base64
    import struct
    import zlib
    mib = 1 << 20

    def part(kind, data):
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    png = (b"\x89PNG\r\n\x1a\n" + part(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
           + part(b"IDAT", zlib.compress((b"\0" + b"\x10\x20\x30" * 2) * 2)) + part(b"IEND", b""))
    res = {}
    for ids in (False, True):
        lines = []
        for i in range(40):
            head = ("%d\t%d\t" % (100 + i, i)) if ids else ("%d\t" % i)
            size = (mib - len(head) - 1) // 4 * 4
            body = base64.b64encode(png + b"\0" * (size * 3 // 4)).decode()[:size]
            lines.append(head + body + "\n")
        for blank in (False, True):
            tag = "%s_%s" % ("ids" if ids else "noids", "blank" if blank else "none")
            with open(tag + ".txt", "w") as f:
                f.write("".join(lines[:31]) + (" " * mib + "\n" if blank else "")
                        + "".join(lines[31:]))
            d = C.io.Base64ImageDeserializer(tag + ".txt", C.io.StreamDefs(
                f=C.io.StreamDef(field="image", transforms=[]),
                l=C.io.StreamDef(field="label", shape=40)))
            src = C.io.MinibatchSource(d, max_sweeps=1, randomize=True,
                                       randomization_window_in_chunks=1, randomization_seed=1)
            order = []
            for _ in range(8):
                got = _result(lambda: src.next_minibatch(8))
                if "raises" in got:
                    order.append(got["raises"])
                    break
                mb = got["returns"]
                if not mb:
                    break
                order += [int(v) for v in mb[src.streams.l].asarray().reshape(-1, 40).argmax(1)]
                del mb, got
            res[tag] = order
            if tag == "ids_blank":
                res[tag + "_first_39"] = order[:39]
            os.remove(tag + ".txt")
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="io41__base64_blank_lines",
           names=_NAMES + ["cntk.io.Base64ImageDeserializer", "cntk.io.StreamDefs",
                           "cntk.io.StreamDef"],
           note="Small base64 files (a 2x2 PNG per line, label i, '[100+i<TAB>]i<TAB>png') "
                "with blank lines ('' or three spaces), read in file order in minibatches of "
                "2: without sequence ids every line after the first image line is a sequence "
                "(IndexBuilder.cpp PopulateFromLines) and a blank one reads the next line of "
                "its chunk (strtoull skips white space), the last line of a chunk raises "
                "RuntimeError 'Cannot parse label value'; blank lines before the first image "
                "line are skipped.  With ids a blank line counts into the sequence before it")
def io41_base64_blank_lines(C, r):
    import base64
    import struct
    import zlib

    def part(kind, data):
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    png = base64.b64encode(
        b"\x89PNG\r\n\x1a\n" + part(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
        + part(b"IDAT", zlib.compress((b"\0" + b"\x10\x20\x30" * 2) * 2))
        + part(b"IEND", b"")).decode()
    files = [("noids_empty", False, "0,E,1,2,3"), ("noids_spaces_empty", False, "0,S,E,1,2,3"),
             ("noids_last_spaces", False, "0,1,2,S"), ("noids_last_empty", False, "0,1,2,E"),
             ("noids_first_empty", False, "E,0,1,2"), ("ids_last_spaces", True, "0,1,2,S"),
             ("ids_middle", True, "0,E,1,S,2,3")]
    res = {}
    for tag, ids, spec in files:
        text = ""
        for t in spec.split(","):
            if t in ("E", "S"):
                text += "   \n" if t == "S" else "\n"
            else:
                text += ("%d\t%s\t" % (100 + int(t), t) if ids else t + "\t") + png + "\n"
        d = C.io.Base64ImageDeserializer(_write(tag + ".txt", text), C.io.StreamDefs(
            f=C.io.StreamDef(field="image", transforms=[]),
            l=C.io.StreamDef(field="label", shape=4)))
        src = C.io.MinibatchSource(d, max_sweeps=1, randomize=False)
        out = []
        for _ in range(6):
            got = _result(lambda: src.next_minibatch(2))
            if "raises" in got:
                out.append(got["raises"])
                break
            mb = got["returns"]
            if not mb:
                break
            labels = mb[src.streams.l]
            out.append([[int(v) for v in labels.asarray().reshape(-1, 4).argmax(1)],
                        int(labels.num_samples)])
            del labels, mb, got
        res[tag] = out
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res
