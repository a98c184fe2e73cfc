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
