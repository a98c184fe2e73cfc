"""CNTK 2.7's reader at its edges (session 38): frame mode read in data partitions (a refused
minibatch is taken, the partition's next one follows it), a negative partition count or index
(SWIG refuses it), and the errors of the Base64 image and MLF readers.  Every case writes its
files in its own working folder."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_result = functools.partial(outcome, convert=as_returned, raised=as_raised)

# sequence 1 (ids 1) and 4 (id 4) are two samples long; the others one
_CTF = (b"0 |x 1\n1 |x 2\n1 |x 3\n2 |x 4\n3 |x 5\n4 |x 6\n4 |x 7\n5 |x 8\n6 |x 9\n"
        b"7 |x 10\n")


def _write(name, data):
    with open(name, "wb") as f:
        f.write(data)
    return name


def _frame_source(C, path):
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
        x=C.io.StreamDef(field="x", shape=1))), randomize=False, frame_mode=True, max_sweeps=1)


def _reads(src, count, **kw):
    got = []
    for _ in range(count):
        r = _result(lambda: src.next_minibatch(2, **kw))
        if "raises" in r:
            got.append(r["raises"])
        else:
            mb = r["returns"]
            got.append([v.asarray().ravel().tolist() for v in mb.values()] if mb else {})
    return got


@cntk_case(name="io_edges__frame_mode_partitions",
           names=["cntk.io.MinibatchSource.next_minibatch"],
           note="frame mode over CTF sequences of 1 and 2 samples read in 2 data partitions: "
                "each partition's minibatch holding a 2-sample sequence is refused "
                "(FramePacker.cpp:20-25) and its next minibatch follows it")
def io_edges_frame_mode_partitions(C, r):
    path = _write("frames.ctf", _CTF)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return {f"partition{index}": _reads(_frame_source(C, path), 5, num_data_partitions=2,
                                        partition_index=index)
            for index in (0, 1)}


@cntk_case(name="io_edges__negative_partition",
           names=["cntk.io.MinibatchSource.next_minibatch"],
           note="a negative num_data_partitions or partition_index: CNTK 2.7's SWIG wrapper "
                "takes size_t and raises NotImplementedError")
def io_edges_negative_partition(C, r):
    path = _write("frames.ctf", _CTF)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    res = {}
    for tag, kw in (("index", dict(num_data_partitions=2, partition_index=-1)),
                    ("count", dict(num_data_partitions=-1, partition_index=0))):
        src = C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
            x=C.io.StreamDef(field="x", shape=1))), randomize=False, max_sweeps=1)
        res[tag] = _result(lambda: len(src.next_minibatch(2, **kw)))
    return res


@cntk_case(name="io_edges__base64_missing",
           names=["cntk.io.Base64ImageDeserializer"],
           note="a missing Base64 image file: CNTK 2.7's RuntimeError (\"Could not open ... for "
                "reading.\")")
def io_edges_base64_missing(C, r):
    res = {}
    steps = [("deserializer", lambda _: C.io.Base64ImageDeserializer(
                 "missing_b64.txt", C.io.StreamDefs(
                     im=C.io.StreamDef(field="image", transforms=[]),
                     lab=C.io.StreamDef(field="label", shape=2)))),
             ("MinibatchSource", lambda d: C.io.MinibatchSource(d, randomize=False,
                                                                max_sweeps=1))]
    value = None
    for step, fn in steps:
        got = _result(functools.partial(fn, value))
        if "raises" in got:
            res["missing"], res["missing_at"] = got["raises"], step
            return res
        value = got["returns"]
    res["missing"], res["missing_at"] = "reads", None
    return res
