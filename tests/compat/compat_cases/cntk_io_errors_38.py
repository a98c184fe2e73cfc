"""The error CNTK 2.7's readers raise for bad input, and when (session 38): a CBF file that
is missing or not CBF, an image map file that is missing or holds a bad line or names an image
that cannot be opened, an HTK script (SCP) file that is missing or lists a feature file that
is missing.  CNTK raises a RuntimeError for each; compared: the built-in type and the step
that raised it (the deserializer, the ``MinibatchSource`` over it, or ``next_minibatch``).
Every case writes its files in its own working folder."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_result = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _write(name, data):
    with open(name, "wb") as f:
        f.write(data)
    return name


def _first_error(C, res, tag, make):
    """Where building a source over ``make()`` and reading it first fails: ``res[tag]`` the
    built-in type raised (or ``"reads"``), ``res[tag + "_at"]`` the step that raised it."""
    steps = [("deserializer", make),
             ("MinibatchSource", lambda d: C.io.MinibatchSource(d, randomize=False,
                                                                max_sweeps=1)),
             ("next_minibatch", lambda src: src.next_minibatch(4))]
    value = None
    for step, fn in steps:
        got = _result(fn if value is None else functools.partial(fn, value))
        if "raises" in got:
            res[tag], res[tag + "_at"] = got["raises"], step
            return res
        value = got["returns"]
    res[tag], res[tag + "_at"] = "reads", None
    return res


@cntk_case(name="io_errors__cbf",
           names=["cntk.io.CBFDeserializer", "cntk.io.MinibatchSource.next_minibatch"],
           note="a missing CBF file and a text file given as CBF: CNTK's RuntimeError "
                "(BinaryChunkDeserializer.cpp's header checks)")
def io_errors_cbf(C, r):
    streams = C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1))
    text = _write("text.cbf", b"0 |x 1\n1 |x 2\n")
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    res = {}
    _first_error(C, res, "missing", lambda: C.io.CBFDeserializer("missing.cbf", streams))
    _first_error(C, res, "not_cbf", lambda: C.io.CBFDeserializer(text, streams))
    return res


def _image_streams(C):
    return C.io.StreamDefs(
        features=C.io.StreamDef(field="image", transforms=[
            C.io.transforms.scale(width=2, height=2, channels=3)]),
        labels=C.io.StreamDef(field="label", shape=2))


@cntk_case(name="io_errors__image_map",
           names=["cntk.io.ImageDeserializer", "cntk.io.MinibatchSource",
                  "cntk.io.MinibatchSource.next_minibatch", "cntk.io.transforms.scale"],
           note="a missing map file, a line without a tab, an image that does not exist and "
                "one that is not an image: CNTK's RuntimeError (ImageDeserializerBase / "
                "ImageDataDeserializer)")
def io_errors_image_map(C, r):
    _write("junk.jpg", b"not an image at all\n")
    maps = {"bad_line": _write("bad_line.txt", b"junk.jpg\n"),
            "no_image": _write("no_image.txt", b"absent.jpg\t0\n"),
            "not_image": _write("not_image.txt", b"junk.jpg\t1\n")}
    res = {}
    _first_error(C, res, "missing",
                 lambda: C.io.ImageDeserializer("missing.txt", _image_streams(C)))
    for tag, path in sorted(maps.items()):
        _first_error(C, res, tag, functools.partial(C.io.ImageDeserializer, path,
                                                    _image_streams(C)))
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="io_errors__htk",
           names=["cntk.io.HTKFeatureDeserializer", "cntk.io.StreamDef",
                  "cntk.io.MinibatchSource.next_minibatch"],
           note="a missing script (SCP) file, one listing a feature file that does not exist, "
                "and a line without a frame range: CNTK's RuntimeError (HTKDeserializer)")
def io_errors_htk(C, r):
    scp = _write("absent_htk.scp", b"utt0.mfc=absent.htk[0,2]\n")
    plain = _write("absent_plain.scp", b"absent0.htk\n")

    def feats(path):
        return lambda: C.io.HTKFeatureDeserializer(C.io.StreamDefs(
            features=C.io.StreamDef(shape=2, scp=path)))
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    res = {}
    _first_error(C, res, "missing_scp", feats("missing.scp"))
    _first_error(C, res, "missing_htk", feats(scp))
    _first_error(C, res, "plain_scp_line", feats(plain))
    return res
