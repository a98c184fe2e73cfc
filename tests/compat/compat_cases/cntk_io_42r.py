"""CNTK 2.7's Bundler over a base64 image file with sequence ids joined by key with a CTF file
(review of session 42): a base64 sequence of several lines delivers one image but counts its
lines; the Bundler takes the largest count any joined deserializer gives a sequence and sums
those into its chunks' samples (Bundler.cpp:94-125), so minibatches fill by the counts and a
sweep ends after its last sequence, whichever deserializer comes first.  Every case writes its
files in its own working folder."""

import functools

from compat_harness import cntk_case
from compat_cases.cntk_io_42 import _png_base64
from compat_outcomes import as_raised, as_returned, outcome

_result = functools.partial(outcome, convert=as_returned, raised=as_raised)


@cntk_case(name="io42r__base64_joined_counts",
           names=["cntk.io.MinibatchSource", "cntk.io.MinibatchSource.next_minibatch",
                  "cntk.io.StreamDefs", "cntk.io.StreamDef", "cntk.io.CTFDeserializer",
                  "cntk.io.Base64ImageDeserializer"],
           note="base64 lines 'id<TAB>label<TAB>png' with ids 0,0,1,2,3 (labels the line "
                "numbers: sequence 0 counts 2 lines) joined with CTF lines 'id |x v' ids "
                "0,1,2,3, base64 first and CTF first; in file order, randomized (seed 3) and in "
                "frame mode, "
                "minibatches of 1, 2 and 3, two sweeps: [x values, label classes, x samples, "
                "end_of_sweep] per minibatch")
def io42r_base64_joined_counts(C, r):
    png = _png_base64()
    with open("b.txt", "w") as f:
        for i, k in enumerate("0,0,1,2,3".split(",")):
            f.write("%s\t%d\t%s\n" % (k, i, png))
    with open("c.ctf", "w") as f:
        for i in range(4):
            f.write("%d |x %d\n" % (i, i))
    res = {}
    for order in ("base64_first", "ctf_first"):
        for randomize, frame_mode in ((False, False), (True, False), (False, True)):
            for size in (1, 2, 3):
                b = C.io.Base64ImageDeserializer("b.txt", C.io.StreamDefs(
                    f=C.io.StreamDef(field="image", transforms=[]),
                    l=C.io.StreamDef(field="label", shape=10)))
                c = C.io.CTFDeserializer("c.ctf", C.io.StreamDefs(
                    x=C.io.StreamDef(field="x", shape=1)))
                src = C.io.MinibatchSource([b, c] if order == "base64_first" else [c, b],
                                           max_sweeps=2, randomize=randomize,
                                           randomization_seed=3, frame_mode=frame_mode)
                out = []
                for _ in range(12):
                    got = _result(lambda: src.next_minibatch(size))
                    if "raises" in got:
                        out.append(got["raises"])
                        break
                    mb = got["returns"]
                    if not mb:
                        break
                    x, lab = mb[src.streams.x], mb[src.streams.l]
                    out.append([[int(v) for v in x.asarray().ravel()],
                                [int(v) for v in lab.asarray().reshape(-1, 10).argmax(1)],
                                int(x.num_samples), bool(x.end_of_sweep)])
                    del x, lab, mb, got     # (CNTK 2.7 reuses its matrices: hold no view)
                res["%s_%s_mb%d" % (order, "frames" if frame_mode else "rand" if randomize
                                    else "file", size)] = out
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="io42r__join_repeated_key",
           names=["cntk.io.MinibatchSource", "cntk.io.MinibatchSource.next_minibatch",
                  "cntk.io.StreamDefs", "cntk.io.StreamDef", "cntk.io.CTFDeserializer",
                  "cntk.io.Base64ImageDeserializer"],
           note="CTF lines 'id |x v' ids 0,1,2 first, joined with base64 lines "
                "'id<TAB>label<TAB>png' (labels the line numbers) whose ids repeat after "
                "another: 0,1,0,2 and 0,1,1,0,2 (CNTK joins a key's first sequence); in file "
                "order, minibatches of 2, one sweep: [x values, label classes] per minibatch")
def io42r_join_repeated_key(C, r):
    png = _png_base64()
    with open("c.ctf", "w") as f:
        for i in range(3):
            f.write("%d |x %d\n" % (i, i))
    res = {}
    for ids in ("0,1,0,2", "0,1,1,0,2"):
        with open("b.txt", "w") as f:
            for i, k in enumerate(ids.split(",")):
                f.write("%s\t%d\t%s\n" % (k, i, png))
        c = C.io.CTFDeserializer("c.ctf", C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1)))
        b = C.io.Base64ImageDeserializer("b.txt", C.io.StreamDefs(
            f=C.io.StreamDef(field="image", transforms=[]),
            l=C.io.StreamDef(field="label", shape=10)))
        src = C.io.MinibatchSource([c, b], max_sweeps=1, randomize=False)
        out = []
        for _ in range(6):
            mb = src.next_minibatch(2)
            if not mb:
                break
            x, lab = mb[src.streams.x], mb[src.streams.l]
            out.append([[int(v) for v in x.asarray().ravel()],
                        [int(v) for v in lab.asarray().reshape(-1, 10).argmax(1)]])
            del x, lab, mb
        res["ids_" + ids.replace(",", "")] = out
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res
