"""CNTK 2.7's readers (session 44): which malformed CTF inputs a randomized source counts
against ``maxErrors``, in which order.

CNTK 2.7's text reader counts malformed inputs as it parses a chunk, and it parses a chunk
whole when the block randomizer loads it: ``BlockRandomizer::LoadDataChunks``
(BlockRandomizer.cpp:345-420) loads a window's chunks in their shuffled order, so the inputs
are warned about ("WARNING: ... at offset N in the input file") in that order and the one past
``maxErrors`` is the one whose warning comes last before the "Reached the maximum number of
allowed errors" RuntimeError (TextParser.cpp:293-302).  Every case writes its files in its own
working folder.
"""

import functools
import re

from compat_harness import cntk_case
from compat_cases.cntk_fidelity_13 import _stderr_of
from compat_outcomes import as_raised, as_returned, outcome

_result = functools.partial(outcome, convert=as_returned,
                            raised=functools.partial(as_raised, first_line=True))


def max_errors_file(name="w.ctf"):
    """40 sequences of 2 lines 'i |x v |y w'; x is not a number on the second line of
    sequences 3, 14 and 30 (lines 8, 30 and 62).  The text, also for tests/io."""
    lines = []
    for i in range(40):
        lines.append("%d |x %d |y 1\n%d |x %s |y 2\n"
                     % (i, i, i, "a" if i in (3, 14, 30) else str(i)))
    text = "".join(lines)
    with open(name, "w") as f:
        f.write(text)
    return text


# (the randomized reads of io44__ctf_max_errors_randomized: tag, maxErrors, source arguments)
MAX_ERRORS_RUNS = [("seed0", 1, dict(randomization_seed=0)),
                   ("seed1", 1, dict(randomization_seed=1)),
                   ("seed0_all", 3, dict(randomization_seed=0)),
                   ("window1_seed3", 1, dict(randomization_window_in_chunks=1,
                                             randomization_seed=3)),
                   ("window1_seed3_all", 3, dict(randomization_window_in_chunks=1,
                                                 randomization_seed=3))]


def lines_named(text, written):
    """The file lines (from 1) that the lines a read wrote (its warnings, then its error's
    message) name, in order:
    CNTK 2.7 names an input's byte offset ('at offset N'; its 5 tries of a chunk repeat the
    last one: kept once; its error names none), Stadyn its line ('w.ctf:N:')."""
    named = []
    for line in written:
        found = re.search(r"at offset (\d+) in the input file", line)
        if found:
            at = text.count("\n", 0, int(found.group(1))) + 1
        else:
            found = re.search(r"w\.ctf:(\d+):", line)
            if not found:
                continue
            at = int(found.group(1))
        if not named or named[-1] != at:
            named.append(at)
    return named


@cntk_case(name="io44__ctf_max_errors_randomized",
           names=["cntk.io.MinibatchSource", "cntk.io.MinibatchSource.next_minibatch",
                  "cntk.io.CTFDeserializer", "cntk.io.StreamDefs", "cntk.io.StreamDef"],
           note="40 sequences of 2 lines '|x v |y w', x not a number on lines 8, 30 and 62, "
                "chunks of 200 bytes; read randomized (seeds 0 and 1 with the default "
                "window, seed 3 with a window of 1 chunk) in minibatches of 8 with maxErrors "
                "1 (the second malformed input raises) or 3 (all skipped): the samples of "
                "each minibatch, the built-in type raised, and the file lines the warnings "
                "and the error name, in order (CNTK names byte offsets, Stadyn lines)")
def io44_ctf_max_errors_randomized(C, r):
    import warnings
    text = max_errors_file()
    res = {}
    for tag, max_errors, kw in MAX_ERRORS_RUNS:
        d = C.io.CTFDeserializer("w.ctf", C.io.StreamDefs(
            x=C.io.StreamDef(field="x", shape=1), y=C.io.StreamDef(field="y", shape=1)))
        d["maxErrors"] = max_errors
        d["chunkSizeInBytes"] = 200
        src = C.io.MinibatchSource(d, max_sweeps=1, randomize=True, **kw)
        read, errors, raised = [], [], []

        def run():
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always")
                for _ in range(12):
                    got = _result(lambda: src.next_minibatch(8))
                    if "raises" in got:     # (Stadyn names the line in its error)
                        read.append(got["raises"])
                        raised.append(got["first line"])
                        break
                    if not got["returns"]:
                        break
                    read.append(int(got["returns"][src.streams.x].num_samples))
                    del got
            errors.extend([str(w.message) for w in warned] + raised)
        written = _stderr_of(run) + errors   # (C++ first: CNTK warns there only)
        res[tag] = {"samples": read, "lines": lines_named(text, written)}
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res
