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
from compat_outcomes import as_raised, as_returned, minibatch_firsts, outcome

_result = functools.partial(outcome, convert=as_returned, raised=as_raised)

_NAMES = ["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer",
          "cntk.io.MinibatchSource.next_minibatch",
          "cntk.io.MinibatchSource.get_checkpoint_state",
          "cntk.io.MinibatchSource.restore_from_checkpoint"]


def _maker(C, path, chunk_bytes, **kw):
    def make():
        d = C.io.CTFDeserializer(path, C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1)))
        if hasattr(d, "chunk_bytes"):
            d.chunk_bytes = chunk_bytes
        else:
            d["chunkSizeInBytes"] = chunk_bytes
        return C.io.MinibatchSource(d, **kw)
    return make


def _checkpointed(make, size, before, size_after=None, most=3, one=False, **part):
    """Read ``before`` minibatches, take a checkpoint, read on (``size_after``: another
    minibatch size), then restore it in a fresh source and in the first one and read again
    (``part``: every read as that partition; ``one``: then the source restored once more and
    read as one partition, as a new configuration seeks too)."""
    src = make()
    res = {"before": minibatch_firsts(src, size, before, **part)}
    state = src.get_checkpoint_state()
    res["after"] = minibatch_firsts(src, size_after or size, most, **part)
    fresh = make()
    fresh.restore_from_checkpoint(state)
    res["fresh"] = minibatch_firsts(fresh, size, most, **part)
    src.restore_from_checkpoint(state)
    res["same"] = minibatch_firsts(src, size, most, **part)
    if one:
        res["one"] = minibatch_firsts(src, size, 2)
    return res


def _partitioned(make, size, before, count, index):
    """``_checkpointed`` with every read as partition ``index`` of ``count``, then the source
    read as one partition."""
    return _checkpointed(make, size, before, one=True, num_data_partitions=count,
                         partition_index=index)


def _touch(r):
    r.touch("cntk.io.MinibatchSource.next_minibatch",
            "cntk.io.MinibatchSource.get_checkpoint_state",
            "cntk.io.MinibatchSource.restore_from_checkpoint")


def _samples_file(name, n):
    with open(name, "w") as f:
        f.write("".join("|x %d.%s\n" % (k, "0" * (7 * k % 10)) for k in range(n)))
    return name


def _sequences_file(name):
    """12 sequences of 1 to 3 steps (24 lines), step k of the file holding k."""
    lines, value = [], 0
    for k, n in enumerate([2, 1, 3, 1, 2, 3, 1, 1, 2, 3, 2, 1]):
        for _ in range(n):
            lines.append("%d |x %d\n" % (k, value))
            value += 1
    with open(name, "w") as f:
        f.write("".join(lines))
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
    _sequences_file("q.ctf")
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
    minibatch_firsts(src, 2, 2)
    state = src.get_checkpoint_state()
    minibatch_firsts(src, 2, 3)
    src.restore_from_checkpoint(state)
    res = {"first": minibatch_firsts(src, 2, 2)}
    again = src.get_checkpoint_state()
    src.restore_from_checkpoint(state)
    res["second"] = minibatch_firsts(src, 2, 4)
    src.restore_from_checkpoint(again)
    res["taken_after_restore"] = minibatch_firsts(src, 2, 4)
    src.restore_from_checkpoint(start)
    res["start"] = minibatch_firsts(src, 2, 7)
    _touch(r)
    return res


@cntk_case(name="restore__block_partitions", names=_NAMES,
           note="the restore__block_* files read in partitions (0 and 1 of 2, 2 of 3): 12 "
                "one-sample lines in 30-byte chunks, windows of 1 and 2 chunks, seed 3, "
                "minibatches of 2 and 4; 12 sequences of 1 to 3 steps in 40- and 24-byte "
                "chunks, windows of 1 and 2, seed 5; 25 lines in 64-byte chunks, a window "
                "of 4 samples: a checkpoint after 1 to 5 minibatches, restored in a fresh "
                "source and in the source itself, which then reads as one partition")
def restore_block_partitions(C, r):
    _samples_file("c.ctf", 12)
    _samples_file("s.ctf", 25)
    _sequences_file("q.ctf")
    res = {}
    for window in (1, 2):
        make = _maker(C, "c.ctf", 30, randomization_window_in_chunks=window,
                      randomization_seed=3)
        for count, index in ((2, 0), (2, 1), (3, 2)):
            for size in (2, 4):
                for before in (1, 2, 3, 5):
                    res["c_w%d_p%d_%d_mb%d_at%d" % (window, index, count, size, before)] = \
                        _partitioned(make, size, before, count, index)
    for tag, path, chunk, kw in (
            ("q40w1", "q.ctf", 40, dict(randomization_window_in_chunks=1, randomization_seed=5)),
            ("q24w2", "q.ctf", 24, dict(randomization_window_in_chunks=2, randomization_seed=5)),
            ("s64ws4", "s.ctf", 64, dict(randomization_window_in_samples=4,
                                         randomization_window_in_chunks=0,
                                         randomization_seed=3))):
        make = _maker(C, path, chunk, **kw)
        for index in (0, 1):
            for size in (3, 5):
                for before in (1, 2, 4):
                    res["%s_p%d_mb%d_at%d" % (tag, index, size, before)] = \
                        _partitioned(make, size, before, 2, index)
    _touch(r)
    return res


def _user_source(C, spec, **kw):
    """A MinibatchSource over a UserDeserializer whose chunks hold sequences (first value,
    steps) of ``spec`` (a list of chunks)."""
    info = [C.io.StreamInformation("x", 0, "dense", np.float32, (1,))]
    chunks = [{"x": [np.arange(a, a + n, dtype=np.float32)[:, None] for a, n in chunk]}
              for chunk in spec]

    class Chunks(C.io.UserDeserializer):
        def __init__(self):
            super(Chunks, self).__init__()

        def stream_infos(self):
            return info

        def num_chunks(self):
            return len(chunks)

        def get_chunk(self, chunk_id):
            return chunks[chunk_id]
    return C.io.MinibatchSource(Chunks(), **kw)


def _read_on(src, size, most=10):
    """Each ``next_minibatch(size)``'s first values and sweep end, going on after what it
    raises, until the source ends."""
    out = []
    for _ in range(most):
        got = _result(lambda: src.next_minibatch(size))
        if "raises" in got:
            out.append(got)
            continue
        mb = got["returns"]
        if not mb:
            break
        d = mb[src.streams["x"]]
        out.append([[int(round(float(np.asarray(s).reshape(-1)[0]))) for s in d.as_sequences()],
                    bool(d.end_of_sweep)])
        del d, mb, got    # (CNTK 2.7's prefetch reuses the matrices: hold no view)
    return out


_USER_NAMES = ["cntk.io.MinibatchSource", "cntk.io.UserDeserializer",
               "cntk.io.StreamInformation", "cntk.io.MinibatchSource.next_minibatch",
               "cntk.io.MinibatchSource.get_checkpoint_state",
               "cntk.io.MinibatchSource.restore_from_checkpoint"]


def _touch_user(r):
    _touch(r)
    r.touch("cntk.io.UserDeserializer.stream_infos", "cntk.io.UserDeserializer.num_chunks",
            "cntk.io.UserDeserializer.get_chunk")


@cntk_case(name="sweep_ends__user_deserializer_one_partition", names=_USER_NAMES,
           note="a UserDeserializer read as one partition (CNTK's local-timeline randomizer "
                "puts a sweep-end marker after each sweep's last sequence, met only when a "
                "minibatch reads on past it): one chunk of 3 one-step sequences and chunks "
                "of 2 and 1, minibatches of 1 to 4, 1 and 2 sweeps, randomized or not; "
                "max_samples 4; frame mode refusing a sequence of 2 steps; checkpoints "
                "after a minibatch ending at the sweep's end, with its marker met or not")
def sweep_ends_user_deserializer_one_partition(C, r):
    res = {}
    one = [[(0, 1), (10, 1), (20, 1)]]
    two = [[(0, 1), (10, 1)], [(20, 1)]]
    for tag, spec in (("one", one), ("two", two)):
        for randomize in (False, True):
            for sweeps in (1, 2):
                for size in (1, 2, 3, 4):
                    src = _user_source(C, spec, randomize=randomize, max_sweeps=sweeps)
                    res["%s_%s_%d_%d" % (tag, randomize, sweeps, size)] = _read_on(src, size)
    for size in (1, 2, 3):
        res["max_samples_%d" % size] = _read_on(_user_source(C, one, randomize=False,
                                                             max_samples=4), size)
    refusing = [[(0, 1), (10, 2), (20, 1)]]
    for sweeps in (1, 2):
        for size in (1, 2):
            src = _user_source(C, refusing, randomize=False, max_sweeps=sweeps, frame_mode=True)
            res["refused_%d_%d" % (sweeps, size)] = _read_on(src, size)
    for size, before in ((1, 3), (2, 2), (3, 1)):
        src = _user_source(C, one, randomize=False, max_sweeps=3)
        first = _read_on(src, size, most=before)
        state = src.get_checkpoint_state()
        fresh = _user_source(C, one, randomize=False, max_sweeps=3)
        fresh.restore_from_checkpoint(state)
        res["checkpoint_%d_%d" % (size, before)] = [first, _read_on(src, size, most=2),
                                                     _read_on(fresh, size, most=2)]
    _touch_user(r)
    return res


@cntk_case(name="frame_mode__user_deserializer_partitions", names=_USER_NAMES,
           note="frame_mode=True over a UserDeserializer, not randomized, read as partition "
                "0 or 1 of 2: a minibatch holding a sequence of 2 steps is refused "
                "(RuntimeError) and the next one follows it (CNTK 2.7's packer took it), "
                "1 and 2 sweeps, minibatches of 1, 2 and 4")
def frame_mode_user_deserializer_partitions(C, r):
    res = {}
    specs = {"first": [[(0, 2), (10, 1)]], "middle": [[(0, 1), (10, 1), (20, 2), (30, 1)]],
             "second": [[(0, 1), (10, 2), (20, 1), (30, 1)]]}
    for tag, spec in sorted(specs.items()):
        for sweeps in (1, 2):
            for size in (1, 2, 4):
                for rank in (0, 1):
                    src = _user_source(C, spec, randomize=False, max_sweeps=sweeps,
                                       frame_mode=True)
                    out = []
                    for _ in range(8):
                        got = _result(lambda: src.next_minibatch(
                            size, num_data_partitions=2, partition_index=rank))
                        if "raises" in got:
                            out.append(got)
                            continue
                        mb = got["returns"]
                        if not mb:
                            break
                        d = mb[src.streams["x"]]
                        out.append([[int(round(float(np.asarray(s).reshape(-1)[0])))
                                     for s in d.as_sequences()], bool(d.end_of_sweep)])
                        del d, mb, got
                    res["%s_%d_%d_r%d" % (tag, sweeps, size, rank)] = out
    _touch_user(r)
    return res


@cntk_case(name="restore__user_deserializer_one_partition", names=_USER_NAMES,
           note="a UserDeserializer read as one partition (CNTK's local-timeline "
                "randomizer), chunks of 2, 3, 1 and 2 one-step sequences and of sequences of "
                "1 to 3 steps, not randomized and randomized (seeds 0 and 4), max_sweeps 2 "
                "or max_samples 13, minibatches of 1 and 3: a checkpoint after 1, 3 and 5 "
                "minibatches restored in the source itself and in a fresh one (which reads "
                "one minibatch first when randomized: CNTK 2.7 dies of SIGFPE restoring a "
                "randomized one that has not read), then read with 2 more samples; every source "
                "is kept to the end of the case (CNTK 2.7's reader threads of a source let go "
                "mid-case called get_chunk with ids out of range and corrupted its heap)")
def restore_user_deserializer_one_partition(C, r):
    specs = {"ones": [[(0, 1), (10, 1)], [(20, 1), (30, 1), (40, 1)], [(50, 1)],
                      [(60, 1), (70, 1)]],
             "steps": [[(0, 2), (10, 1)], [(20, 3)], [(30, 1), (40, 2), (50, 1)]]}
    res, kept = {}, []
    for tag, spec in sorted(specs.items()):
        for randomize, seed in ((False, 0), (True, 0), (True, 4)):
            for ends in ("sweeps", "samples"):
                kw = dict(randomize=randomize, randomization_seed=seed)
                kw.update(max_sweeps=2) if ends == "sweeps" else kw.update(max_samples=13)
                for size in (1, 3):
                    for before in (1, 3, 5):
                        src = _user_source(C, spec, **kw)
                        out = {"before": _read_on(src, size, most=before)}
                        state = src.get_checkpoint_state()
                        out["after"] = _read_on(src, size, most=4)
                        fresh = _user_source(C, spec, **kw)
                        if randomize:
                            out["fresh_first"] = _read_on(fresh, size, most=1)
                        fresh.restore_from_checkpoint(state)
                        out["fresh"] = _read_on(fresh, size, most=4)
                        src.restore_from_checkpoint(state)
                        out["same"] = _read_on(src, size, most=4)
                        out["bigger"] = _read_on(src, size + 2, most=2)
                        res["%s_%s%d_%s_mb%d_at%d" % (tag, randomize, seed, ends, size,
                                                      before)] = out
                        kept += [src, fresh]
    _touch_user(r)
    return res
