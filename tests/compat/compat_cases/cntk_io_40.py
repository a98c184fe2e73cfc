"""CNTK 2.7's readers (session 40): when a bad line raises, which keys its deserializer dicts
take, and small behaviours of the deserializer configurations.

CNTK 2.7's text reader parses a chunk whole when it loads it (``TextParser::GetChunk``): not
randomized, at the first minibatch reading from the chunk; randomized, its block randomizer
loads every chunk of the randomization windows of the chunks a minibatch reads from
(``BlockRandomizer::LoadDataChunks``) before it delivers any, so a bad line anywhere in them
raises there.  Every case writes its files in its own working folder.
"""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_result = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _write(name, data):
    with open(name, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("ascii"))
    return name


def _values(src, reads, size):
    """The values of ``reads`` minibatches of ``size`` samples of stream ``x`` (as lists), an
    empty minibatch as ``"empty"``, the first that raises ending the list with its built-in
    type."""
    out = []
    for _ in range(reads):
        got = _result(lambda: src.next_minibatch(size))
        if "raises" in got:
            return out + [got["raises"]]
        mb = got["returns"]
        if not mb:
            return out + ["empty"]
        out.append([float(v) for v in mb[src.streams.x].asarray().ravel()])
    return out


# -- CTF: a bad line raises from the first minibatch that loads its chunk ---------------------

@cntk_case(name="io40__ctf_chunk_errors",
           names=["cntk.io.CTFDeserializer", "cntk.io.MinibatchSource",
                  "cntk.io.MinibatchSource.next_minibatch", "cntk.io.StreamDefs",
                  "cntk.io.StreamDef"],
           note="12 one-line sequences '|x i' cut into chunks of 30 bytes (lines 1-6, 7-11, "
                "12: d['chunkSizeInBytes'] = 30), a value 'a' on line 3, 8 or 12 or none; read "
                "in minibatches of 2 in file order, randomized (the default window, 128 "
                "chunks: all) and randomized with a window of 1 chunk (seeds 0 and 3)")
def io40_ctf_chunk_errors(C, r):
    good = ["|x %d\n" % i for i in range(12)]
    res = {}
    for bad in (None, 2, 7, 11):
        lines = list(good)
        if bad is not None:
            lines[bad] = "|x a\n"
        path = _write("b%s.ctf" % bad, "".join(lines))
        runs = [("file_order", dict(randomize=False)), ("randomized", dict(randomize=True)),
                ("window1_seed0", dict(randomize=True, randomization_window_in_chunks=1,
                                       randomization_seed=0)),
                ("window1_seed3", dict(randomize=True, randomization_window_in_chunks=1,
                                       randomization_seed=3))]
        for tag, kw in runs:
            d = C.io.CTFDeserializer(path, C.io.StreamDefs(
                x=C.io.StreamDef(field="x", shape=1)))
            d["chunkSizeInBytes"] = 30
            src = C.io.MinibatchSource(d, max_sweeps=1, **kw)
            res["bad%s_%s" % (bad, tag)] = _values(src, 7, 2)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


# -- MinibatchSource: None for a count --------------------------------------------------------

@cntk_case(name="io40__source_none_counts",
           names=["cntk.io.MinibatchSource"],
           note="None for each count of MinibatchSource (CNTK 2.7 sets it on its config's "
                "size_t, SWIG's TypeError; its defaults are 128 chunks and 0 samples, not None), "
                "randomized and not")
def io40_source_none_counts(C, r):
    _write("g.ctf", "|x 1\n|x 2\n")
    res = {}
    for name in ("max_samples", "max_sweeps", "randomization_window_in_chunks",
                 "randomization_window_in_samples", "max_errors"):
        for randomize in (True, False):
            d = C.io.CTFDeserializer("g.ctf", C.io.StreamDefs(
                x=C.io.StreamDef(field="x", shape=1)))
            kw = {name: None, "randomize": randomize}
            got = _result(lambda: C.io.MinibatchSource(d, **kw))
            res["%s_%s" % (name, randomize)] = got.get("raises", "made")
    return res


# -- deserializer dictionaries ----------------------------------------------------------------

def _png(h, w, bgr):
    """A PNG of an (h, w) RGB image of one colour given as (b, g, r)."""
    import struct
    import zlib
    raw = b"".join(b"\0" + bytes([bgr[2], bgr[1], bgr[0]]) * w for _ in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _cbf(values):
    """A CBF version 1 file of one dense input ``x`` of dimension 1, a sample a sequence."""
    import struct
    magic = 0x636E746B5F62696E
    out = bytearray(struct.pack("<QI", magic, 1))
    offset = len(out)
    out += struct.pack("<%dI" % len(values), *([1] * len(values)))
    for v in values:
        out += struct.pack("<If", 1, v)
    header = len(out)
    out += struct.pack("<QII", magic, 1, 1)
    out += struct.pack("<BI", 0, 1) + b"x" + struct.pack("<BI", 0, 1)
    out += struct.pack("<qII", offset, len(values), len(values))
    out += struct.pack("<q", header)
    return bytes(out)


def _htk(frames):
    import struct
    head = struct.pack(">iihh", frames, 100000, 8, 9)
    return head + struct.pack(">%df" % (2 * frames), *[float(i) for i in range(2 * frames)])


def _first(C, d, stream):
    """The first minibatch of one sequence of ``d``'s stream ``stream``: dtype, shape,
    values; or the built-in type raised."""
    def read():
        src = C.io.MinibatchSource(d, randomize=False, max_sweeps=1)
        x = src.next_minibatch(1)[src.streams[stream]].asarray()
        x = x[0] if isinstance(x, list) else x
        return [str(x.dtype), list(x.shape), [float(v) for v in x.ravel()]]
    got = _result(read)
    return got.get("raises", got.get("returns"))


def _write_every_kind():
    """One small file of each non-CTF deserializer's kind: an image map, base64 images, a CBF
    file, HTK features with their script, an MLF with its label list."""
    import base64
    _write("a.png", _png(2, 2, (200, 100, 10)))
    _write("map.txt", "a.png\t1\n")
    _write("b64.txt", "1\t%s\n" % base64.b64encode(_png(2, 2, (200, 100, 10))).decode())
    _write("x.cbf", _cbf([3.0, 4.0]))
    _write("f.htk", _htk(3))
    _write("f.scp", "u0.mfc=f.htk[0,2]\n")
    _write("s.list", "s0\ns1\n")
    _write("l.mlf", '#!MLF!#\n"u0.lab"\n0 200000 s0\n200000 300000 s1\n.\n')


@cntk_case(name="io40__dict_settings",
           names=["cntk.io.ImageDeserializer", "cntk.io.Base64ImageDeserializer",
                  "cntk.io.CBFDeserializer", "cntk.io.HTKFeatureDeserializer",
                  "cntk.io.HTKMLFDeserializer", "cntk.io.MinibatchSource"],
           note="d[key] = value on CNTK 2.7's image, base64 image, CBF, HTK feature and MLF "
                "deserializers (dictionaries), then the first minibatch: 'grayscale' makes "
                "the images one channel of luma (round(0.299 R + 0.587 G + 0.114 B)); "
                "'precision' 'double', 'verbosity', 'keepDataInMemory', 'traceLevel', "
                "'cacheIndex' and an unknown key change nothing; d['type'] and d['file'] "
                "(the path as given) read back")
def io40_dict_settings(C, r):
    _write_every_kind()

    def image(kind):
        sd = C.io.StreamDefs(x=C.io.StreamDef(field="image", transforms=[]),
                             y=C.io.StreamDef(field="label", shape=2))
        return C.io.ImageDeserializer("map.txt", sd) if kind == "image" else \
            C.io.Base64ImageDeserializer("b64.txt", sd)

    def cbf():
        return C.io.CBFDeserializer("x.cbf", C.io.StreamDefs(x=C.io.StreamDef(field="x",
                                                                            shape=1)))

    def htk():
        return C.io.HTKFeatureDeserializer(C.io.StreamDefs(x=C.io.StreamDef(shape=2,
                                                                             scp="f.scp")))

    def mlf():
        return [htk(), C.io.HTKMLFDeserializer("s.list", C.io.StreamDefs(
            y=C.io.StreamDef(shape=2, mlf="l.mlf")))]
    makers = {"image": lambda: image("image"), "b64": lambda: image("b64"), "cbf": cbf,
              "htk": htk, "mlf": mlf}
    settings = {"image": [("grayscale", True), ("precision", "double"), ("verbosity", 2),
                          ("some_key", 3)],
                "b64": [("grayscale", True), ("cacheIndex", True), ("some_key", 3)],
                "cbf": [("keepDataInMemory", True), ("traceLevel", 2), ("precision", "double"),
                        ("some_key", 3)],
                "htk": [("verbosity", 2), ("precision", "double"), ("some_key", 3)],
                "mlf": [("precision", "double"), ("some_key", 3)]}
    res = {}
    for kind, make in sorted(makers.items()):
        stream = "y" if kind == "mlf" else "x"
        res[kind] = _first(C, make(), stream)
        for key, value in settings[kind]:
            made = make()
            d = made[-1] if isinstance(made, list) else made
            d[key] = value
            res["%s_%s" % (kind, key)] = [_first(C, made, stream), d[key]]
        d = make()
        d = d[-1] if isinstance(d, list) else d
        res["%s_type" % kind] = d["type"]
        if kind in ("image", "b64", "cbf"):
            res["%s_file" % kind] = d["file"]
    _write("g.ctf", "|x 1\n")
    d = C.io.CTFDeserializer("g.ctf", C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1)))
    res["ctf_file"] = d["file"]
    return res


# -- HTK: chunks of 15 minutes, a bad utterance raises when its chunk is loaded ---------------

@cntk_case(name="io40__htk_chunks",
           names=["cntk.io.HTKFeatureDeserializer", "cntk.io.MinibatchSource",
                  "cntk.io.MinibatchSource.next_minibatch"],
           note="one HTK file of 300,000 frames (frame t: [t, 1]), six utterances of 50,000 "
                "frames (CNTK 2.7's chunks close past 90,000 frames: utterances 0-1, 2-3, 4-5); "
                "utterance 3 or 5 instead reads 30,011 frames ending past the file's end.  The "
                "first frame of each minibatch of 50,000 samples, in file order, randomized "
                "(default window) and randomized with a window of 1 chunk")
def io40_htk_chunks(C, r):
    import struct
    import numpy as np
    frames = 300000
    data = np.zeros((frames, 2), ">f4")
    data[:, 0] = np.arange(frames)
    data[:, 1] = 1
    _write("f.htk", struct.pack(">iihh", frames, 100000, 8, 9) + data.tobytes())
    res = {}
    for bad in (None, 3, 5):
        lines = []
        for u in range(6):
            a, b = u * 50000, u * 50000 + 49999
            if u == bad:
                a, b = frames - 30000, frames + 10
            lines.append("u%d.mfc=f.htk[%d,%d]\n" % (u, a, b))
        scp = _write("s%s.scp" % bad, "".join(lines))
        for tag, kw in (("file_order", dict(randomize=False)),
                        ("randomized", dict(randomize=True)),
                        ("window1", dict(randomize=True, randomization_window_in_chunks=1))):
            d = C.io.HTKFeatureDeserializer(C.io.StreamDefs(x=C.io.StreamDef(shape=2,
                                                                             scp=scp)))
            src = C.io.MinibatchSource(d, max_sweeps=1, **kw)
            out = []
            for _ in range(7):
                got = _result(lambda: src.next_minibatch(50000))
                if "raises" in got:
                    out.append(got["raises"])
                    break
                mb = got["returns"]
                if not mb:
                    out.append("empty")
                    break
                x = mb[src.streams.x].asarray()
                out.append(float((x[0] if isinstance(x, list) else x).reshape(-1, 2)[0, 0]))
            res["bad%s_%s" % (bad, tag)] = out
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


# -- HTK: which utterances are skipped, and the chunks of the rest (review of session 40) -----

def _htk_utterances(C, scps, extra=None, **kw):
    """``(index, frames)`` of each utterance a sweep of an HTK deserializer over ``scps``
    (stream name -> (script, StreamDef keywords)) delivers, one a minibatch (next_minibatch(1)
    gives one whole utterance); ``extra``: ``d[key] = value`` settings first."""
    d = C.io.HTKFeatureDeserializer(C.io.StreamDefs(**{
        name: C.io.StreamDef(shape=1, scp=scp, **skw) for name, (scp, skw) in scps.items()}))
    for key, value in (extra or {}).items():
        d[key] = value
    src = C.io.MinibatchSource(d, max_sweeps=1, **kw)
    out = []
    for _ in range(20):
        mb = src.next_minibatch(1)
        if not mb:
            break
        x = mb[src.streams.x].asarray()
        x = (x[0] if isinstance(x, list) else x).reshape(-1)
        out.append([float(x[0]), len(x)])
        del mb, x   # (CNTK 2.7's next read resizes its matrices: none may still view them)
    return out


@cntk_case(name="io40r__htk_long_utterances",
           names=["cntk.io.HTKFeatureDeserializer", "cntk.io.StreamDef",
                  "cntk.io.MinibatchSource", "cntk.io.MinibatchSource.next_minibatch"],
           note="eleven utterances of 60,000, 70,000, 10, 30,000, 10, 50,000, 50,000, 20, "
                "66,000, 40,000 and 30 frames (frame t of the file is [t]), one a minibatch, "
                "in file order and randomized (default window; a window of 1 chunk, seeds 1 "
                "and 3; 2 chunks, seed 5).  CNTK 2.7 delivers the ones longer than 65,535 "
                "frames whatever StreamDef's max_sequence_length (its Python passes it as the "
                "stream's 'maxSequenceLength', a key its HTK reader never reads); "
                "d['maxSequenceSize'] = 50000 skips those longer than 50,000 frames before "
                "chunking (chunks close past 90,000 frames).  A second stream whose script "
                "lacks utterances 0 and 5 drops them, but CNTK 2.7 chunks the first stream's "
                "script whole (the composite drops them), so the chunks are the one-stream "
                "ones")
def io40r_htk_long_utterances(C, r):
    import struct
    import numpy as np
    lengths = [60000, 70000, 10, 30000, 10, 50000, 50000, 20, 66000, 40000, 30]
    total = sum(lengths)
    _write("f.htk", struct.pack(">iihh", total, 100000, 4, 9) +
           np.arange(total, dtype=">f4").tobytes())
    lines, some, a = [], [], 0
    for u, n in enumerate(lengths):
        line = "u%d.mfc=f.htk[%d,%d]\n" % (u, a, a + n - 1)
        lines.append(line)
        if u not in (0, 5):
            some.append(line)
        a += n
    _write("s.scp", "".join(lines))
    _write("y.scp", "".join(some))
    runs = [("file_order", dict(randomize=False)), ("randomized", dict(randomize=True)),
            ("window1_seed1", dict(randomize=True, randomization_window_in_chunks=1,
                                   randomization_seed=1)),
            ("window1_seed3", dict(randomize=True, randomization_window_in_chunks=1,
                                   randomization_seed=3)),
            ("window2_seed5", dict(randomize=True, randomization_window_in_chunks=2,
                                   randomization_seed=5))]
    variants = [("default", {"x": ("s.scp", {})}, None),
                ("length5", {"x": ("s.scp", dict(max_sequence_length=5))}, None),
                ("size50000", {"x": ("s.scp", {})}, {"maxSequenceSize": 50000}),
                ("second_stream", {"x": ("s.scp", {}), "y": ("y.scp", {})}, None)]
    res = {}
    for tag, scps, extra in variants:
        for run, kw in runs:
            res["%s_%s" % (tag, run)] = _result(
                lambda: _htk_utterances(C, scps, extra, **kw)).get("returns", "raised")
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="io40r__dict_unset_keys",
           names=["cntk.io.CTFDeserializer", "cntk.io.HTKFeatureDeserializer",
                  "cntk.io.HTKMLFDeserializer", "cntk.io.ImageDeserializer",
                  "cntk.io.Base64ImageDeserializer", "cntk.io.CBFDeserializer"],
           note="d[key] of a key never set on CNTK 2.7's deserializer dictionaries is None "
                "(a plain dictionary's lookup: 'maxErrors' and 'chunkSizeInBytes' of a text "
                "format deserializer too, and any key of one whose file does not exist yet); "
                "'file' and 'type' as given")
def io40r_dict_unset_keys(C, r):
    _write("g.ctf", "|x 1\n")
    _write_every_kind()

    def x():
        return C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1))

    def image():
        return C.io.StreamDefs(x=C.io.StreamDef(field="image", transforms=[]),
                               y=C.io.StreamDef(field="label", shape=2))
    makers = [("ctf", lambda: C.io.CTFDeserializer("g.ctf", x())),
              ("ctf_absent", lambda: C.io.CTFDeserializer("absent.ctf", x())),
              ("htk", lambda: C.io.HTKFeatureDeserializer(C.io.StreamDefs(
                  x=C.io.StreamDef(shape=2, scp="f.scp")))),
              ("mlf", lambda: C.io.HTKMLFDeserializer("s.list", C.io.StreamDefs(
                  y=C.io.StreamDef(shape=2, mlf="l.mlf")))),
              ("image", lambda: C.io.ImageDeserializer("map.txt", image())),
              ("b64", lambda: C.io.Base64ImageDeserializer("b64.txt", image())),
              ("cbf", lambda: C.io.CBFDeserializer("x.cbf", x()))]
    res = {}
    for kind, make in makers:
        for key in ("nothere", "maxErrors", "chunkSizeInBytes", "grayscale", "verbosity",
                    "keepDataInMemory", "maxSequenceSize", "file", "type"):
            got = _result(lambda: make()[key])
            res["%s_%s" % (kind, key)] = got.get("raises", got.get("returns"))
    return res
