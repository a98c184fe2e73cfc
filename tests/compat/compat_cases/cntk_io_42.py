"""CNTK 2.7's text indexes (session 42): how the CTF and base64 image readers group lines
into sequences by their ids, and how a base64 sequence of several lines is counted.

``IndexBuilder.cpp`` ``PopulateImpl``: in a file with ids a sequence runs from a line starting
with an id to the next line starting with another one (``nextId != prevId``), each line a
sample; the same id later, after another, starts a sequence of its own.  The CTF reader reads
a file as one with ids when its first text is not a ``|``; the base64 image reader when its
literal first line has three tab-separated fields (``HasSequenceKeys``).  A base64 sequence
delivers its first line's image, but its randomizers count its lines as its samples while a
sweep holds one sample a sequence (``Base64ImageDeserializer.cpp`` ``ChunkInfos``): a sweep
ends early.  Every case writes its files in its own working folder.
"""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_result = functools.partial(outcome, convert=as_returned, raised=as_raised)

_NAMES = ["cntk.io.MinibatchSource", "cntk.io.MinibatchSource.next_minibatch",
          "cntk.io.StreamDefs", "cntk.io.StreamDef"]


def _png_base64():
    """A 2x2 PNG, base64-encoded."""
    import base64
    import struct
    import zlib

    def part(kind, data):
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return base64.b64encode(
        b"\x89PNG\r\n\x1a\n" + part(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
        + part(b"IDAT", zlib.compress((b"\0" + b"\x10\x20\x30" * 2) * 2))
        + part(b"IEND", b"")).decode()


def _reads(src, stream, size, width, count=12):
    """``[values, num_samples, num_sequences, end_of_sweep]`` of each minibatch of ``size``
    until the data ends (or ``count`` minibatches), the built-in type raised ending it."""
    out = []
    for _ in range(count):
        got = _result(lambda: src.next_minibatch(size))
        if "raises" in got:
            return out + [got["raises"]]
        mb = got["returns"]
        if not mb:
            return out
        data = mb[stream]
        values = data.asarray()
        rows = [[float(v) for v in s.ravel()] for s in values] if width == 1 \
            else [int(v) for v in values.reshape(-1, width).argmax(1)]
        out.append([rows, int(data.num_samples), int(data.num_sequences),
                    bool(data.end_of_sweep)])
        del data, values, mb, got   # (CNTK 2.7's next read reuses its matrices: hold no view)
    return out


@cntk_case(name="io42__ctf_sequence_ids",
           names=_NAMES + ["cntk.io.CTFDeserializer"],
           note="CTF lines '[id ]|x v' (v the line's number): ids 0,0,1,1,1,2 (consecutive "
                "lines with one id are one sequence), 0,1,0 (an id again after another: a "
                "sequence of its own), a first line without an id and later lines with ids "
                "(every line a sequence), a first line with an id and later lines without "
                "(each continues the sequence before it); read in file order in minibatches "
                "of 3 and 1, one sweep")
def io42_ctf_sequence_ids(C, r):
    files = [("ids_001112", "0,0,1,1,1,2"), ("ids_010", "0,1,0"),
             ("first_without_id", "-,1,1,2"), ("first_with_id", "0,-,1,-")]
    res = {}
    for tag, ids in files:
        text = "".join(("" if k == "-" else k + " ") + "|x %d\n" % i
                       for i, k in enumerate(ids.split(",")))
        with open(tag + ".ctf", "w") as f:
            f.write(text)
        for size in (3, 1):
            d = C.io.CTFDeserializer(tag + ".ctf", C.io.StreamDefs(
                x=C.io.StreamDef(field="x", shape=1)))
            src = C.io.MinibatchSource(d, max_sweeps=1, randomize=False)
            res["%s_mb%d" % (tag, size)] = _reads(src, src.streams.x, size, 1)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="io42__base64_sequence_ids",
           names=_NAMES + ["cntk.io.Base64ImageDeserializer"],
           note="Base64 image lines ('[id<TAB>]label<TAB>png', label the line's number, 'E' a "
                "blank line, 'S' three spaces): ids 0,0,1,1,1,2 (a sequence of 2 lines and one "
                "of 3: CNTK delivers their first lines' images, labels 0 and 2, and the sweep "
                "of 3 counted samples ends before sequence 2), ids 0,1,0, the first line "
                "without an id and later ones with (the file has no ids: a line of three "
                "fields has its label first and no image CNTK decodes), the first line with an "
                "id and later ones without (a line 'label<TAB>png' starts a sequence keyed by "
                "its label that cannot be read: 'Cannot parse label value'); in file order in "
                "minibatches of 2 and 1 (without ids 2 only), one sweep.  A first line "
                "'k1<TAB>2<TAB>png' (CNTK reads numeric ids only), a line of four fields in "
                "a file without ids (minibatches of 2), a label 'x' with and without ids "
                "(refused when read; minibatches of 1)")
def io42_base64_sequence_ids(C, r):
    png = _png_base64()
    files = [("ids_001112", "0,0,1,1,1,2"), ("ids_010", "0,1,0"),
             ("first_without_id", "-,1,1,2"), ("first_with_id", "0,-,1,-"),
             ("first_with_id_b", "0,7,1,8")]
    res = {}
    for tag, ids in files:
        text = ""
        for i, k in enumerate(ids.split(",")):
            if k == "-":
                text += "%d\t%s\n" % (i, png)
            elif tag == "first_with_id_b" and i % 2:
                text += "%s\t%s\n" % (k, png)
            else:
                text += "%s\t%d\t%s\n" % (k, i, png)
        with open(tag + ".txt", "w") as f:
            f.write(text)
        # (minibatches of 1 without ids: CNTK 2.7 gives the one of a line it left out with
        # no data, which its asarray cannot read)
        for size in (2,) if tag == "first_without_id" else (2, 1):
            d = C.io.Base64ImageDeserializer(tag + ".txt", C.io.StreamDefs(
                f=C.io.StreamDef(field="image", transforms=[]),
                l=C.io.StreamDef(field="label", shape=10)))
            src = C.io.MinibatchSource(d, max_sweeps=1, randomize=False)
            res["%s_mb%d" % (tag, size)] = _reads(src, src.streams.l, size, 10, 1 + size)
    # a first line of three fields whose first is not digits (CNTK 2.7 reads numeric ids
    # only: RuntimeError when the source is made), and a line of four fields in a file
    # without ids (its image, all after the first tab, is not base64: left out and counted)
    for tag, size, text in (
            ("symbolic_id", 2, "k1\t2\t%s\n1\t%s\n" % (png, png)),
            ("four_fields", 2, "0\t%s\n1\t2\t3\t4\n" % png),
            ("word_label_ids", 1, "0\t0\t%s\n1\tx\t%s\n2\t2\t%s\n" % (png, png, png)),
            ("word_label", 1, "0\t%s\nx\t%s\n2\t%s\n" % (png, png, png))):
        with open(tag + ".txt", "w") as f:
            f.write(text)

        def source(name=tag + ".txt"):
            d = C.io.Base64ImageDeserializer(name, C.io.StreamDefs(
                f=C.io.StreamDef(field="image", transforms=[]),
                l=C.io.StreamDef(field="label", shape=10)))
            return C.io.MinibatchSource(d, max_sweeps=1, randomize=False)
        got = _result(source)
        res[tag] = [got["raises"]] if "raises" in got else \
            _reads(got["returns"], got["returns"].streams.l, size, 10)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="io42__base64_counted_sweeps",
           names=_NAMES + ["cntk.io.Base64ImageDeserializer",
                           "cntk.io.MinibatchSource.get_checkpoint_state",
                           "cntk.io.MinibatchSource.restore_from_checkpoint"],
           note="Base64 image lines with ids 'i<TAB>i<TAB>png' for i in 0..5, a blank line "
                "(three spaces) after line 1 and two after line 4: sequences 1 and 4 count 2 "
                "and 3 samples, a sweep 6 (one a sequence).  Labels, samples and sweep ends of "
                "minibatches of 1 and 2: in file order over 3 sweeps (CNTK's cursor goes on "
                "to the next sequence at a sweep's end) and randomized, seeds 0 and 3, window "
                "of 1 chunk, 1 sweep, and seed 0 over 3 sweeps (minibatches of 2 and 3); the "
                "labels of minibatches of 2 in frame mode and as "
                "data partitions 0 and 1 of 2, in file order and randomized (seed 0), 1 sweep; "
                "minibatch sizes 2, 3, 1, 2, 4, 1, ... over 2 sweeps and again after a restore "
                "to the 5th minibatch, in file order and randomized")
def io42_base64_counted_sweeps(C, r):
    png = _png_base64()
    text = ""
    for i in range(6):
        text += "%d\t%d\t%s\n" % (i, i, png)
        text += "   \n" * {1: 1, 4: 2}.get(i, 0)
    with open("s.txt", "w") as f:
        f.write(text)
    runs = [("file_order_3_sweeps", dict(randomize=False, max_sweeps=3)),
            ("randomized_seed0", dict(randomize=True, max_sweeps=1, randomization_seed=0)),
            ("randomized_seed3_window1", dict(randomize=True, max_sweeps=1,
                                              randomization_seed=3,
                                              randomization_window_in_chunks=1)),
            ("randomized_3_sweeps", dict(randomize=True, max_sweeps=3))]
    res = {}
    for tag, kw in runs:
        for size in (2, 3) if tag == "randomized_3_sweeps" else (1, 2):
            d = C.io.Base64ImageDeserializer("s.txt", C.io.StreamDefs(
                f=C.io.StreamDef(field="image", transforms=[]),
                l=C.io.StreamDef(field="label", shape=6)))
            src = C.io.MinibatchSource(d, **kw)
            res["%s_mb%d" % (tag, size)] = _reads(src, src.streams.l, size, 6, 20)
    # frame mode (the sequences are their own frames) and data partitions 0 and 1 of 2
    for tag, kw in (("frames", dict(randomize=False, frame_mode=True)),
                    ("frames_randomized", dict(randomize=True, frame_mode=True)),
                    ("partitions", dict(randomize=False)),
                    ("partitions_randomized", dict(randomize=True))):
        for part in (0, 1) if tag.startswith("partitions") else (0,):
            d = C.io.Base64ImageDeserializer("s.txt", C.io.StreamDefs(
                f=C.io.StreamDef(field="image", transforms=[]),
                l=C.io.StreamDef(field="label", shape=6)))
            src = C.io.MinibatchSource(d, max_sweeps=1, **kw)
            out = []
            for _ in range(8):
                mb = src.next_minibatch(2, num_data_partitions=2, partition_index=part) \
                    if tag.startswith("partitions") else src.next_minibatch(2)
                if not mb:
                    break
                out.append([int(v) for v in mb[src.streams.l].asarray().reshape(-1, 6).argmax(1)])
                del mb
            res["%s_%d" % (tag, part)] = out
    # minibatch sizes changing (CNTK's reader is set to its sample position again: its
    # cursor goes to the sequence that sample falls in), and a restore to the 5th minibatch
    sizes = [2, 3, 1, 2, 4, 1, 3, 2, 2, 2, 2, 2]
    for tag, randomize in (("size_changes", False), ("size_changes_randomized", True)):
        d = C.io.Base64ImageDeserializer("s.txt", C.io.StreamDefs(
            f=C.io.StreamDef(field="image", transforms=[]),
            l=C.io.StreamDef(field="label", shape=6)))
        src = C.io.MinibatchSource(d, max_sweeps=2, randomize=randomize)
        state = None
        for part, reads in (("", sizes), ("_restored", sizes[4:])):
            if state is not None:
                src.restore_from_checkpoint(state)
            out = []
            for k, size in enumerate(reads):
                if k == 4 and not part:
                    state = src.get_checkpoint_state()
                mb = src.next_minibatch(size)
                if not mb:
                    break
                out.append([int(v) for v in mb[src.streams.l].asarray().reshape(-1, 6).argmax(1)])
                del mb
            res[tag + part] = out
    r.touch("cntk.io.MinibatchSource.get_checkpoint_state")
    r.touch("cntk.io.MinibatchSource.restore_from_checkpoint")
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="io42__ctf_max_errors_per_source",
           names=_NAMES + ["cntk.io.CTFDeserializer",
                           "cntk.io.MinibatchSource.get_checkpoint_state",
                           "cntk.io.MinibatchSource.restore_from_checkpoint"],
           note="40 sequences of 2 lines '|x v |y w', x not a number on the second line of "
                "sequences 3 and 30, maxErrors 1, chunks of 200 bytes: a source reads 4 "
                "minibatches of 8 samples (one malformed input, sequence 3), a second source "
                "over the same deserializer restored to its position reads on (sequence 30's): "
                "each CNTK 2.7 reader counts its own errors, so the second one reads to the end")
def io42_ctf_max_errors_per_source(C, r):
    import warnings
    lines = []
    for i in range(40):
        lines.append("%d |x %d |y 1\n%d |x %s |y 2\n"
                     % (i, i, i, "a" if i in (3, 30) else str(i)))
    with open("w.ctf", "w") as f:
        f.write("".join(lines))
    d = C.io.CTFDeserializer("w.ctf", C.io.StreamDefs(
        x=C.io.StreamDef(field="x", shape=1), y=C.io.StreamDef(field="y", shape=1)))
    d["maxErrors"] = 1
    d["chunkSizeInBytes"] = 200
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = C.io.MinibatchSource(d, max_sweeps=1, randomize=False)
        read = [int(first.next_minibatch(8)[first.streams.x].num_samples) for _ in range(4)]
        second = C.io.MinibatchSource(d, max_sweeps=1, randomize=False)
        second.restore_from_checkpoint(first.get_checkpoint_state())
        for _ in range(10):
            got = _result(lambda: second.next_minibatch(8))
            if "raises" in got:
                read.append(got["raises"])
                break
            if not got["returns"]:
                break
            read.append(int(got["returns"][second.streams.x].num_samples))
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    r.touch("cntk.io.MinibatchSource.get_checkpoint_state")
    r.touch("cntk.io.MinibatchSource.restore_from_checkpoint")
    return {"samples": read}
