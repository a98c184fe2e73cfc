"""CNTK 2.7's checkpointed reading over randomized, chunked text files (session 39).

A restore sets CNTK's block randomizer to the checkpoint's position, after the start of the
epoch (position 0) when the source next reads.  Where its sequence window has already left
the sweep's first chunks behind, that seek starts the sweep over with the seed ``sweep``
alone (``SequenceRandomizer::Seek`` calls ``Reset(sweep)``, BlockRandomizer's own start
``Reset(randomization_seed + sweep)``), so the rest of the sweep comes in another order than
reading on would have given.  The cases take checkpoints mid-chunk, at chunk and window edges
and in later sweeps, restore them in a fresh source and in the source itself, and change the
minibatch size (which seeks too).  Every case writes its files in its own working folder.
"""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_result = functools.partial(outcome, convert=as_returned, raised=as_raised)

_NAMES = ["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer",
          "cntk.io.MinibatchSource.next_minibatch",
          "cntk.io.MinibatchSource.get_checkpoint_state",
          "cntk.io.MinibatchSource.restore_from_checkpoint"]


def _firsts(src, size, most):
    """The first value of every sequence of each minibatch, its samples and sweep end."""
    out = []
    for _ in range(most):
        got = _result(lambda: src.next_minibatch(size))
        if "raises" in got:
            out.append(got)
            break
        mb = got["returns"]
        if not mb:
            break
        d = mb[src.streams.x]
        out.append([[int(round(float(np.asarray(s).reshape(-1)[0]))) for s in d.as_sequences()],
                    int(d.num_samples), bool(d.end_of_sweep)])
        del d, mb
    return out


def _maker(C, path, chunk_bytes, **kw):
    def make():
        d = C.io.CTFDeserializer(path, C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1)))
        if hasattr(d, "chunk_bytes"):
            d.chunk_bytes = chunk_bytes
        else:
            d["chunkSizeInBytes"] = chunk_bytes
        return C.io.MinibatchSource(d, **kw)
    return make


def _checkpointed(make, size, before, size_after=None, most=3):
    """Read ``before`` minibatches, take a checkpoint, read on (``size_after``: another
    minibatch size), then restore it in a fresh source and in the first one and read again."""
    src = make()
    res = {"before": _firsts(src, size, before)}
    state = src.get_checkpoint_state()
    res["after"] = _firsts(src, size_after or size, most)
    fresh = make()
    fresh.restore_from_checkpoint(state)
    res["fresh"] = _firsts(fresh, size, most)
    src.restore_from_checkpoint(state)
    res["same"] = _firsts(src, size, most)
    return res


def _touch(r):
    r.touch("cntk.io.MinibatchSource.next_minibatch",
            "cntk.io.MinibatchSource.get_checkpoint_state",
            "cntk.io.MinibatchSource.restore_from_checkpoint")


def _samples_file(name, n):
    with open(name, "w") as f:
        f.write("".join("|x %d.%s\n" % (k, "0" * (7 * k % 10)) for k in range(n)))
    return name


@cntk_case(name="restore__block_window_in_chunks", names=_NAMES,
           note="12 one-sample lines of 7 to 16 bytes in 30-byte chunks (chunks of 2 and 3 "
                "samples), windows of 1, 2 and 3 chunks, seeds 3 and 0 (0: no new order), "
                "minibatches of 2 and 5: a checkpoint after 1, 2, 3, 5 and 7 minibatches "
                "(mid-chunk, at a chunk's end, in sweeps 0 to 2), restored in a fresh source "
                "and in the source itself; reading on with minibatches of 3")
def restore_block_window_in_chunks(C, r):
    path = _samples_file("c.ctf", 12)
    res = {}
    for window in (1, 2, 3):
        for seed in (3, 0):
            make = _maker(C, path, 30, randomization_window_in_chunks=window,
                          randomization_seed=seed)
            for size in (2, 5):
                for before in (1, 2, 3, 5, 7):
                    res["w%d_s%d_mb%d_at%d" % (window, seed, size, before)] = \
                        _checkpointed(make, size, before, size_after=3)
    _touch(r)
    return res


@cntk_case(name="restore__block_window_in_samples", names=_NAMES,
           note="25 one-sample lines in 64-byte chunks, windows of 4, 8 and 12 samples, "
                "seed 3, minibatches of 2 and 5: a checkpoint after 1, 2, 3, 5 and 7 "
                "minibatches, restored in a fresh source and in the source itself")
def restore_block_window_in_samples(C, r):
    path = _samples_file("s.ctf", 25)
    res = {}
    for window in (4, 8, 12):
        make = _maker(C, path, 64, randomization_window_in_samples=window,
                      randomization_window_in_chunks=0, randomization_seed=3)
        for size in (2, 5):
            for before in (1, 2, 3, 5, 7):
                res["w%d_mb%d_at%d" % (window, size, before)] = _checkpointed(make, size, before)
    _touch(r)
    return res


@cntk_case(name="restore__block_sequences", names=_NAMES,
           note="12 sequences of 1 to 3 steps (24 lines) in 24-, 40- and 70-byte chunks, "
                "windows of 1 and 2 chunks, seed 5, minibatches of 3 and 4 samples: a "
                "checkpoint after 1, 2, 4 and 6 minibatches (the new order's sequences "
                "start at other samples: CNTK seeks the first sequence at or after the "
                "checkpoint's sample), restored in a fresh source and in the source itself")
def restore_block_sequences(C, r):
    lengths = [2, 1, 3, 1, 2, 3, 1, 1, 2, 3, 2, 1]
    lines, value = [], 0
    for k, n in enumerate(lengths):
        for _ in range(n):
            lines.append("%d |x %d\n" % (k, value))
            value += 1
    with open("q.ctf", "w") as f:
        f.write("".join(lines))
    res = {}
    for chunk in (24, 40, 70):
        for window in (1, 2):
            make = _maker(C, "q.ctf", chunk, randomization_window_in_chunks=window,
                          randomization_seed=5)
            for size in (3, 4):
                for before in (1, 2, 4, 6):
                    res["c%d_w%d_mb%d_at%d" % (chunk, window, size, before)] = \
                        _checkpointed(make, size, before)
    _touch(r)
    return res


@cntk_case(name="restore__block_twice", names=_NAMES,
           note="12 one-sample lines in 40-byte chunks, window 2 chunks, seed 3, minibatches "
                "of 2: a checkpoint after 2 minibatches restored, read 2, restored again and "
                "read 4; a checkpoint taken right after a restore; restoring the state a "
                "fresh source gives before it reads")
def restore_block_twice(C, r):
    path = _samples_file("t.ctf", 12)
    make = _maker(C, path, 40, randomization_window_in_chunks=2, randomization_seed=3)
    src = make()
    start = src.get_checkpoint_state()
    _firsts(src, 2, 2)
    state = src.get_checkpoint_state()
    _firsts(src, 2, 3)
    src.restore_from_checkpoint(state)
    res = {"first": _firsts(src, 2, 2)}
    again = src.get_checkpoint_state()
    src.restore_from_checkpoint(state)
    res["second"] = _firsts(src, 2, 4)
    src.restore_from_checkpoint(again)
    res["taken_after_restore"] = _firsts(src, 2, 4)
    src.restore_from_checkpoint(start)
    res["start"] = _firsts(src, 2, 7)
    _touch(r)
    return res
