"""When CNTK 2.7's readers raise for bad input, and what they give before (session 39): every
step of building a source and reading it -- the deserializer, the ``MinibatchSource`` over it,
then minibatches of 2 sequences -- gives the samples of each minibatch or the built-in type it
raised, so a minibatch given before the error (or one with sequences left out) is compared
too.  Over a CTF file (missing, empty, a bad value on line 1 or 3, a line without ``|``),
a CBF file (empty, cut short), HTK features (a header cut short, a frame range past the
file's end), an MLF (a missing MLF), an image map (an image that does not exist on line 3,
one that is not an image on line 4) and base64 images (lines that are not base64 or not an
image, with ``max_errors`` 0, 1 and 2).  Every case writes its files in its own working
folder.  Not here: an MLF label missing from the state list, on which CNTK 2.7 ends the
process ("frame range state 'zz' is not found in the statelist", then ``terminate``, at
the first ``next_minibatch``; Stadyn raises its ReaderError naming the MLF line)."""

import base64
import functools
import struct
import zlib

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_result = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _write(name, data):
    with open(name, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("ascii"))
    return name


def _samples(mb):
    """A minibatch as its streams' sample counts (sorted), or ``"empty"``."""
    if not mb:
        return "empty"
    return sorted(int(d.num_samples) for d in mb.values())


def _steps(C, make, reads=4, size=2, **source):
    """What each step gives: ``"made"`` for the deserializer and the source, then per
    minibatch of ``size`` its sample counts; the first step that raises ends the list with
    its built-in type."""
    out = []
    got = _result(make)
    if "raises" in got:
        return out + [got["raises"]]
    out.append("made")
    kw = dict(randomize=False, max_sweeps=1)
    kw.update(source)
    got = _result(lambda: C.io.MinibatchSource(got["returns"], **kw))
    if "raises" in got:
        return out + [got["raises"]]
    out.append("made")
    src = got["returns"]
    for _ in range(reads):
        got = _result(lambda: _samples(src.next_minibatch(size)))
        if "raises" in got:
            return out + [got["raises"]]
        out.append(got["returns"])
    return out


# -- CTF ------------------------------------------------------------------------------------

def _ctf(C, path):
    return lambda: C.io.CTFDeserializer(path, C.io.StreamDefs(
        x=C.io.StreamDef(field="x", shape=1)))


@cntk_case(name="ioerr39__ctf",
           names=["cntk.io.CTFDeserializer", "cntk.io.MinibatchSource",
                  "cntk.io.MinibatchSource.next_minibatch", "cntk.io.StreamDefs"],
           known={"no_bar_l4": "Stadyn refuses a line without '|' when it indexes the file "
                               "(io/_ctf.py _Index: the MinibatchSource constructor through "
                               "stadyn.compat.cntk); CNTK 2.7 when it parses the chunk, at the "
                               "first next_minibatch"},
           note="a missing and an empty CTF file, a value that is not a number on line 1 and "
                "on line 3 of 6, a line of text without '|' on line 4 and too many values on "
                "line 5: CNTK 2.7's TextParser raises a RuntimeError")
def ioerr39_ctf(C, r):
    good = ["|x %d\n" % i for i in range(6)]

    def lines(k, text):
        return "".join(good[:k] + [text] + good[k + 1:])
    files = {"missing": "missing.ctf", "empty": _write("empty.ctf", ""),
             "bad_l1": _write("bad_l1.ctf", lines(0, "|x a\n")),
             "bad_l3": _write("bad_l3.ctf", lines(2, "|x a\n")),
             "no_bar_l4": _write("no_bar_l4.ctf", lines(3, "hello\n")),
             "too_many_l5": _write("too_many_l5.ctf", lines(4, "|x 1 2\n"))}
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return {tag: _steps(C, _ctf(C, path)) for tag, path in sorted(files.items())}


# -- CBF ------------------------------------------------------------------------------------

def _cbf_bytes(values):
    """A CBF version 1 file (ctf2bin.py's layout) of one dense input ``x`` of dimension 1, one
    sample a sequence, one chunk."""
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


@cntk_case(name="ioerr39__cbf",
           names=["cntk.io.CBFDeserializer"],
           note="an empty CBF file, one cut short by 4 bytes (its header offset cut) and one "
                "whose chunk data is cut (the header moved up): CNTK 2.7's "
                "BinaryChunkDeserializer raises a RuntimeError")
def ioerr39_cbf(C, r):
    whole = _cbf_bytes([float(i) for i in range(6)])
    streams = C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1))
    files = {"empty": _write("empty.cbf", b""), "cut": _write("cut.cbf", whole[:-4]),
             "good": _write("good.cbf", whole)}
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return {tag: _steps(C, functools.partial(C.io.CBFDeserializer, path, streams))
            for tag, path in sorted(files.items())}


# -- HTK and MLF ----------------------------------------------------------------------------

def _htk(frames):
    """An HTK feature file (big-endian, USER kind) of ``frames`` frames of dimension 2."""
    head = struct.pack(">iihh", frames, 100000, 8, 9)
    return head + struct.pack(">%df" % (2 * frames), *[float(i) for i in range(2 * frames)])


@cntk_case(name="ioerr39__htk",
           names=["cntk.io.HTKFeatureDeserializer", "cntk.io.HTKMLFDeserializer"],
           note="an HTK file whose header is cut short (6 bytes), a frame range past the "
                "file's end, a label missing from the state list, a missing MLF file: "
                "CNTK 2.7's HTKDeserializer / MLFDeserializer raise a RuntimeError")
def ioerr39_htk(C, r):
    _write("good.htk", _htk(3))
    _write("short.htk", _htk(3)[:6])
    scps = {"short_header": _write("short.scp", "u0.mfc=short.htk[0,2]\n"),
            "past_end": _write("past.scp", "u0.mfc=good.htk[0,2]\nu1.mfc=good.htk[0,7]\n"),
            "good": _write("good.scp", "u0.mfc=good.htk[0,2]\nu1.mfc=good.htk[1,2]\n")}
    _write("states.list", "s0\ns1\n")
    mlfs = {"missing_mlf": "missing.mlf"}

    def feats(path):
        return C.io.HTKFeatureDeserializer(C.io.StreamDefs(
            features=C.io.StreamDef(shape=2, scp=path)))

    def labels(path):
        return C.io.HTKMLFDeserializer("states.list", C.io.StreamDefs(
            labels=C.io.StreamDef(shape=2, mlf=path)))
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    res = {}
    for tag, path in sorted(scps.items()):
        res[tag] = _steps(C, functools.partial(feats, path))
    for tag, path in sorted(mlfs.items()):
        res[tag] = _steps(C, lambda: [feats(scps["good"]), labels(path)])
    return res


# -- images ---------------------------------------------------------------------------------

def _png(h, w, value):
    """A PNG of an (h, w) RGB image of one value (filter 0 rows, one IDAT chunk)."""
    raw = b"".join(b"\0" + bytes([value]) * (3 * w) for _ in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _b64_images(n):
    """Lines of ``n`` base64 images (image i: one value 10 i, label i % 2)."""
    return ["%d\t%s\n" % (i % 2, base64.b64encode(_png(2, 2, 10 * i)).decode("ascii"))
            for i in range(n)]


#: a base64 line that is base64 but not an image
_JUNK = "0\t%s\n" % base64.b64encode(b"not an image at all").decode("ascii")


def _first_pixels(src, mb):
    """The first pixel of each image of minibatch ``mb`` of ``src``."""
    return [float(v) for v in np.asarray(
        mb[src.streams.features].asarray()).reshape(-1, 12)[:, 0]]


def _image_streams(C):
    return C.io.StreamDefs(
        features=C.io.StreamDef(field="image", transforms=[
            C.io.transforms.scale(width=2, height=2, channels=3)]),
        labels=C.io.StreamDef(field="label", shape=2))


@cntk_case(name="ioerr39__image_map",
           names=["cntk.io.ImageDeserializer"],
           note="a map file of 6 images whose third does not exist, and one whose fourth is "
                "not an image: CNTK 2.7's ImageDataDeserializer raises a RuntimeError")
def ioerr39_image_map(C, r):
    for i in range(6):
        _write("im%d.png" % i, _png(2, 2, 10 * i))
    _write("junk.png", b"not an image at all\n")
    lines = ["im%d.png\t%d\n" % (i, i % 2) for i in range(6)]
    maps = {"absent_l3": _write("absent.txt", "".join(lines[:2] + ["absent.png\t0\n"]
                                                      + lines[3:])),
            "junk_l4": _write("junk.txt", "".join(lines[:3] + ["junk.png\t1\n"] + lines[4:]))}
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return {tag: _steps(C, functools.partial(C.io.ImageDeserializer, path, _image_streams(C)))
            for tag, path in sorted(maps.items())}


@cntk_case(name="ioerr39__base64",
           names=["cntk.io.Base64ImageDeserializer"],
           known={"sizes": "CNTK 2.7's reader shim prefetches the next minibatch at the last "
                           "size (4: lines 5-8, line 6 left out and counted); the call of 3 "
                           "sets the reader back and reads lines 5-7 again, counting line 6 "
                           "twice (2 > max_errors 1: RuntimeError); with sizes 4, 4, 4 it "
                           "reads 4, 3, 4 (by hand).  Stadyn reads no minibatch ahead in this "
                           "way and counts the line once (io/_source.py _deliver)"},
           note="6 base64 images of which line 3 is not base64 and line 4 not an image, "
                "max_errors 0, 1 and 2, and one of which lines 3 and 4 are not images "
                "(one whole minibatch); minibatches of 4, 3, 2, 5, 4 over 12 images of which "
                "line 6 is not an image: CNTK 2.7 warns, leaves the sequence out, and raises a "
                "RuntimeError once more than max_errors were left out (ReaderUtil.h's "
                "SequenceCleaner)")
def ioerr39_base64(C, r):
    good, junk = _b64_images(6), _JUNK
    files = {"mixed": _write("mixed.txt", "".join(good[:2] + ["1\t@@not base64@@\n", junk]
                                                  + good[4:])),
             "pair": _write("pair.txt", "".join(good[:2] + [junk, junk] + good[4:])),
             "single": _write("single.txt", "".join(good[:2] + [junk] + good[3:]))}
    # minibatches of changing sizes over 12 images, line 6 undecodable: the first pixel of
    # each image given
    twelve = _b64_images(12)
    _write("twelve.txt", "".join(twelve[:5] + [junk] + twelve[6:]))
    src = C.io.MinibatchSource(C.io.Base64ImageDeserializer("twelve.txt", _image_streams(C)),
                               randomize=False, max_sweeps=1, max_errors=1)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    res = {"sizes": []}

    def first_pixels(size):
        mb = src.next_minibatch(size)
        return _first_pixels(src, mb) if mb else "end"
    for size in (4, 3, 2, 5, 4):
        got = _result(functools.partial(first_pixels, size))
        res["sizes"].append(got.get("returns", got.get("raises")))
        if "raises" in got:
            break
    for tag, path in sorted(files.items()):
        for errors in (0, 1, 2):
            res["%s_%d" % (tag, errors)] = _steps(
                C, functools.partial(C.io.Base64ImageDeserializer, path, _image_streams(C)),
                max_errors=errors)
    return res


# -- what the streams declare against what the files hold -----------------------------------

_READ_TIME = ("CNTK 2.7 finds this when it reads the chunk, at the first next_minibatch; "
              "Stadyn when it indexes the file (through stadyn.compat.cntk: at MinibatchSource)")


@cntk_case(name="ioerr39__declared",
           names=["cntk.io.CBFDeserializer", "cntk.io.CTFDeserializer",
                  "cntk.io.ImageDeserializer", "cntk.io.Base64ImageDeserializer"],
           known={"ctf_noname": _READ_TIME + " (a stream whose input no line has; "
                                "io/_ctf.py _finish_init reads the first sequence)"},
           note="a map label and a base64 label past the label stream's shape, a CTF and a "
                "CBF stream naming an input the file does not have, a CBF stream declaring "
                "another dimension than the file's")
def ioerr39_declared(C, r):
    for i in range(3):
        _write("im%d.png" % i, _png(2, 2, 10 * i))
    _write("lab.txt", "im0.png\t0\nim1.png\t5\nim2.png\t1\n")
    _write("b64lab.txt", "".join("%d\t%s\n" % (label, base64.b64encode(_png(2, 2, 9))
                                               .decode("ascii")) for label in (0, 7, 1)))
    _write("good.cbf", _cbf_bytes([1.0, 2.0, 3.0]))
    _write("ok.ctf", "|x 1\n|x 2\n")

    def streams(field, shape):
        return C.io.StreamDefs(s=C.io.StreamDef(field=field, shape=shape))
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return {
        "map_label": _steps(C, functools.partial(C.io.ImageDeserializer, "lab.txt",
                                                 _image_streams(C))),
        "b64_label": _steps(C, functools.partial(C.io.Base64ImageDeserializer, "b64lab.txt",
                                                 _image_streams(C))),
        "cbf_noname": _steps(C, lambda: C.io.CBFDeserializer("good.cbf", streams("y", 1))),
        "cbf_dim": _steps(C, lambda: C.io.CBFDeserializer("good.cbf", streams("x", 3))),
        "ctf_noname": _steps(C, lambda: C.io.CTFDeserializer("ok.ctf", streams("y", 1)))}


@cntk_case(name="ioerr39__base64_order",
           names=["cntk.io.Base64ImageDeserializer", "cntk.io.MinibatchSource.next_minibatch"],
           note="8 base64 images read randomized (seeds 0 and 3, minibatches of 3), all "
                "decodable and with lines 3 and 6 not images (max_errors 2): the first pixel "
                "of each image given.  CNTK 2.7 indexes the file as text, lines in chunks of "
                "32 MiB (here one chunk), and randomizes within it")
def ioerr39_base64_order(C, r):
    good, junk = _b64_images(8), _JUNK
    _write("all.txt", "".join(good))
    _write("holes.txt", "".join(good[:2] + [junk] + good[3:5] + [junk] + good[6:]))
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    res = {}
    for name in ("all", "holes"):
        for seed in (0, 3):
            src = C.io.MinibatchSource(C.io.Base64ImageDeserializer(name + ".txt",
                                                                    _image_streams(C)),
                                       randomize=True, max_sweeps=1, max_errors=2,
                                       randomization_seed=seed)
            got = []
            while True:
                mb = src.next_minibatch(3)
                if not mb:
                    break
                got.append(_first_pixels(src, mb))
            res["%s_seed%d" % (name, seed)] = got
    return res
