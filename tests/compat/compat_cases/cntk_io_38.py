"""CNTK 2.7's readers as its users drove them (session 38): frame mode over a text file's
sequences (CNTK's frame packer refuses a sequence of several samples: FramePacker.cpp:20-25),
``truncation_length`` over a file of one-line sequences, a SciPy matrix's stored zero through
``MinibatchSourceFromData``, and reading loops: randomization windows, ``max_samples`` /
``max_sweeps`` ends, checkpoints taken mid-sweep, data partitions, ``StreamDef`` edges and
sources over several deserializers.  Every case writes its files in its own working folder.
"""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, minibatch_firsts, outcome

_result = functools.partial(outcome, convert=as_returned, raised=as_raised)

_ONE_LINE = "0 |x 1\n1 |x 2\n2 |x 3\n"
_TWO_LINES = "0 |x 1\n0 |x 2\n1 |x 3\n"
_LATE = "0 |x 1\n1 |x 2\n1 |x 3\n2 |x 4\n"


def _write(name, text):
    with open(name, "w") as f:
        f.write(text)
    return name


def _ctf_source(C, path, fields=(("x", 1),), **kw):
    streams = C.io.StreamDefs(**dict((name, C.io.StreamDef(field=name, shape=dim))
                                     for name, dim in fields))
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, streams), **kw)


def _values(data):
    """A MinibatchData's sequences as lists of their values (rounded: CNTK pads with what
    its buffers held)."""
    return [np.asarray(s, np.float32).reshape(len(s), -1).round(4).tolist()
            for s in data.as_sequences()]


def _read(C, src, size, stream="x", most=20):
    """What each ``next_minibatch(size)`` gives until the source ends (or what it raises):
    the values, samples, sequences and sweep ends."""
    out = []
    for _ in range(most):
        got = _result(lambda: src.next_minibatch(size))
        if "raises" in got:
            out.append(got)
            break
        mb = got["returns"]
        if not mb:
            break
        d = mb[src.streams[stream]]
        out.append({"values": _values(d), "samples": int(d.num_samples),
                    "sequences": int(d.num_sequences), "sweep_end": bool(d.end_of_sweep)})
        del d, mb
    return out


@cntk_case(name="frame_mode__ctf_sequences",
           names=["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer",
                  "cntk.io.MinibatchSource.next_minibatch"],
           note="frame_mode=True over a text file: a file of one-line sequences reads as "
                "before; a sequence of two lines is CNTK's RuntimeError ('Detected a non-frame "
                "sequence of size 2 in frame mode.', FramePacker.cpp:20-25) when the minibatch "
                "holding it is read, after the minibatches before it")
def frame_mode_ctf_sequences(C, r):
    res = {}
    for tag, text, size in (("one_line", _ONE_LINE, 2), ("two_lines", _TWO_LINES, 2),
                            ("late", _LATE, 1)):
        path = _write(tag + ".ctf", text)
        res[tag] = _read(C, _ctf_source(C, path, randomize=False, frame_mode=True,
                                        max_sweeps=1), size)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="frame_mode__refused_then_on",
           names=["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer",
                  "cntk.io.MinibatchSource.next_minibatch"],
           note="frame_mode=True over a text file with one sequence of two lines among "
                "one-line ones: a minibatch counts that sequence as its 2 samples (so with "
                "minibatches of 2 the first holds only the sequence before it), the refused "
                "minibatch is taken and the next next_minibatch reads on after it; minibatches "
                "of 1, 2, 3 and 4, two sweeps, max_samples, randomized")
def frame_mode_refused_then_on(C, r):
    path = _write("r.ctf", "0 |x 1\n1 |x 2\n1 |x 3\n2 |x 4\n3 |x 5\n")
    res = {}
    for size in (1, 2, 3, 4):
        res["size%d" % size] = _read_on(C, _ctf_source(C, path, randomize=False,
                                                        frame_mode=True, max_sweeps=2), size)
    res["max_samples"] = _read_on(C, _ctf_source(C, path, randomize=False, frame_mode=True,
                                                 max_samples=4), 1)
    res["randomized"] = _read_on(C, _ctf_source(C, path, frame_mode=True, max_sweeps=1,
                                                randomization_seed=1), 1)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="frame_mode__refused_then_other_size",
           known={"sizes_1122": "after a minibatch of 1 is given, CNTK 2.7's reader shim "
                                "prefetches the next of 1 (the sequence of 2 lines); the call "
                                "of 2 that follows raises that prefetch's error and the next "
                                "call of 2 reads it again (RuntimeError twice); Stadyn reads no "
                                "minibatch ahead in this way: RuntimeError, then [6]"},
           names=["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer",
                  "cntk.io.MinibatchSource.next_minibatch",
                  "cntk.io.MinibatchSource.get_checkpoint_state",
                  "cntk.io.MinibatchSource.restore_from_checkpoint"],
           note="frame_mode=True over sequences of 3, 1, 2 and 1 lines: after a refused "
                "minibatch, a call of another size reads again from the last minibatch given "
                "(CNTK's reader shim sets its reader back), one of the same size reads on; "
                "a checkpoint taken after a refusal is the last minibatch given's position")
def frame_mode_refused_then_other_size(C, r):
    path = _write("o.ctf", "0 |x 0\n0 |x 1\n0 |x 2\n1 |x 3\n2 |x 4\n2 |x 5\n3 |x 6\n")
    res = {}
    for sizes in ((3, 3, 1, 1), (3, 1, 1, 1), (1, 2, 2, 2), (1, 1, 2, 2), (3, 1, 3, 3, 1)):
        src = _ctf_source(C, path, randomize=False, frame_mode=True, max_sweeps=1)
        out = []
        for size in sizes:
            got = _read_on(C, src, size, most=1)
            out.append(got[0] if got else {})
        res["sizes_" + "".join(map(str, sizes))] = out
    path = _write("k.ctf", "0 |x 0\n1 |x 1\n1 |x 2\n2 |x 3\n3 |x 4\n")
    src = _ctf_source(C, path, randomize=False, frame_mode=True, max_sweeps=1)
    first = _read_on(C, src, 1, most=2)
    state = src.get_checkpoint_state()
    fresh = _ctf_source(C, path, randomize=False, frame_mode=True, max_sweeps=1)
    fresh.restore_from_checkpoint(state)
    res["checkpoint"] = [first, _read_on(C, src, 1, most=1), _read_on(C, fresh, 1, most=2)]
    r.touch("cntk.io.MinibatchSource.next_minibatch",
            "cntk.io.MinibatchSource.get_checkpoint_state",
            "cntk.io.MinibatchSource.restore_from_checkpoint")
    return res


def _read_on(C, src, size, most=12):
    """Each ``next_minibatch(size)`` until the source ends, going on after what it raises."""
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
        out.append({"values": _values(d), "samples": int(d.num_samples),
                    "sweep_end": bool(d.end_of_sweep)})
        del d, mb
    return out


@cntk_case(name="frame_mode__user_deserializer",
           names=["cntk.io.UserDeserializer", "cntk.io.StreamInformation",
                  "cntk.io.MinibatchSource"],
           note="a UserDeserializer giving sequences of 2 and 3 steps, read with "
                "frame_mode=True: CNTK 2.7 does not cut them into frames, its frame packer "
                "refuses them (RuntimeError); one-row sequences read as samples; the next "
                "next_minibatch refuses the same sequences again")
def frame_mode_user_deserializer(C, r):
    info = [C.io.StreamInformation("x", 0, "dense", np.float32, (1,))]

    def make(chunk):
        class Chunks(C.io.UserDeserializer):
            def __init__(self):
                super(Chunks, self).__init__()

            def stream_infos(self):
                return info

            def num_chunks(self):
                return 1

            def get_chunk(self, chunk_id):
                return chunk
        return Chunks()
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    r.touch("cntk.io.UserDeserializer.stream_infos", "cntk.io.UserDeserializer.num_chunks",
            "cntk.io.UserDeserializer.get_chunk")
    res = {}
    for tag, chunk in (("sequences", {"x": [np.float32([[0], [1]]), np.float32([[2], [3], [4]])]}),
                       ("one_row", {"x": [np.float32([[0]]), np.float32([[1]])]})):
        src = C.io.MinibatchSource(make(chunk), randomize=False, max_sweeps=1, frame_mode=True)
        res[tag] = _read(C, src, 4)
    # after a refusal the next next_minibatch reads on (as over a text file,
    # frame_mode__refused_then_on) ...
    for randomize in (False, True):
        for size in (1, 4):
            src = C.io.MinibatchSource(make({"x": [np.float32([[0], [1]]), np.float32([[2]])]}),
                                       randomize=randomize, max_sweeps=1, frame_mode=True)
            res["read_on_%s_%d" % (randomize, size)] = _read_on(C, src, size, most=3)
    # ... over two chunks too
    chunks = [{"x": [np.float32([[0], [1]]), np.float32([[2], [3], [4]])]},
              {"x": [np.float32([[5]])]}]

    class TwoChunks(C.io.UserDeserializer):
        def __init__(self):
            super(TwoChunks, self).__init__()

        def stream_infos(self):
            return info

        def num_chunks(self):
            return 2

        def get_chunk(self, chunk_id):
            return chunks[chunk_id]
    src = C.io.MinibatchSource(TwoChunks(), randomize=False, max_sweeps=1, frame_mode=True)
    res["two_chunks"] = _read_on(C, src, 1, most=4)
    return res


@cntk_case(name="truncation__one_line_sequences",
           names=["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer"],
           note="truncation_length=2 over a text file whose sequences are all one line (with "
                "and without sequence ids): CNTK 2.7 packs each line as a sequence of one step "
                "(minibatches of 2 samples: one slot of 2 steps holding two sequences)")
def truncation_one_line_sequences(C, r):
    res = {}
    for tag, text in (("ids", _ONE_LINE), ("no_ids", "|x 1\n|x 2\n|x 3\n|x 4\n|x 5\n")):
        path = _write(tag + ".ctf", text)
        for size in (2, 4):
            res["%s_%d" % (tag, size)] = _read(C, _ctf_source(
                C, path, randomize=False, truncation_length=2, max_sweeps=1), size)
    return res


def _embedding_steps(C, feeds, learner):
    """``E`` of ``times(x, E)`` after a step on each minibatch of ``feeds`` (a source's
    sparse ``x`` and dense ``y``)."""
    x = C.input_variable(5, is_sparse=True)
    y = C.input_variable(2)
    E = C.parameter((5, 2), init=(np.arange(10, dtype=np.float32).reshape(5, 2) / 10))
    z = C.times(x, E)
    lr = C.learning_parameter_schedule(0.1)
    learners = {"momentum": lambda: C.momentum_sgd([E], lr, C.momentum_schedule(0.9)),
                "adagrad": lambda: C.adagrad([E], lr)}
    trainer = C.Trainer(z, (C.reduce_sum(z * y), None), [learners[learner]()])
    src = C.io.MinibatchSourceFromData(feeds, max_samples=2)
    out = []
    for _ in range(2):
        mb = src.next_minibatch(1)
        trainer.train_minibatch({x: mb[src.streams.x], y: mb[src.streams.y]})
        out.append(E.value)
    return out


@cntk_case(name="from_data__csr_stored_zero",
           names=["cntk.io.MinibatchSourceFromData", "cntk.Trainer",
                  "cntk.learners.momentum_sgd", "cntk.learners.adagrad"],
           note="MinibatchSourceFromData over a csr_matrix storing a zero (row 3 of the second "
                "sample): CNTK 2.7 keeps it, so the row-sparse gradient of E has a block for "
                "row 3, which momentum and AdaGrad update; the matrix without it differs")
def from_data_csr_stored_zero(C, r):
    import scipy.sparse as sp
    res = {}
    targets = np.float32([[1, 2], [3, 1]])
    for tag, values in (("stored", [1.0, 1.0, 0.0]), ("without", None)):
        if values is None:
            m = sp.csr_matrix((np.float32([1, 1]), [3, 1], [0, 1, 2]), shape=(2, 5))
        else:
            m = sp.csr_matrix((np.float32(values), [3, 1, 3], [0, 1, 3]), shape=(2, 5))
        for learner in ("momentum", "adagrad"):
            for step, value in enumerate(_embedding_steps(C, {"x": m, "y": targets}, learner)):
                res["%s_%s_%d" % (tag, learner, step)] = value
    r.touch("cntk.io.MinibatchSource.next_minibatch", "cntk.Parameter.value")
    return res


# -- reading loops as CNTK users wrote them -----------------------------------------------------

def _counting(name, lengths):
    """A text file of sequences ``lengths`` (ids 0, 1, ...), step k of the file holding k."""
    lines, k = [], 0
    for s, steps in enumerate(lengths):
        for _ in range(steps):
            lines.append("%d |x %d\n" % (s, k))
            k += 1
    return _write(name, "".join(lines))




@cntk_case(name="loops__randomization_windows",
           names=["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer",
                  "cntk.io.MinibatchSource.next_minibatch"],
           note="a text file of 10 sequences (1 to 4 steps), two sweeps in minibatches of 6 "
                "samples: the default window, randomization_window_in_samples 5 (chunks 0), "
                "randomization_window_in_chunks 1, seeds 0 and 11; both windows given is "
                "refused (a window in samples beside the default one in chunks too, not "
                "when randomize=False), as are a negative window and frame mode with "
                "truncation (MinibatchSource.cpp:514-527)")
def loops_randomization_windows(C, r):
    path = _counting("w.ctf", [3, 1, 4, 2, 2, 1, 3, 4, 1, 2])
    res = {}
    for tag, kw in (("default", {}), ("samples5", dict(randomization_window_in_samples=5,
                                                       randomization_window_in_chunks=0)),
                    ("chunks1", dict(randomization_window_in_chunks=1)),
                    ("seed11", dict(randomization_seed=11, randomization_window_in_samples=5,
                                    randomization_window_in_chunks=0))):
        res[tag] = minibatch_firsts(_ctf_source(C, path, max_sweeps=2, **kw), 6)
    res["both"] = _result(lambda: _ctf_source(
        C, path, randomization_window_in_samples=5, randomization_window_in_chunks=2) and None)
    res["negative"] = _result(lambda: _ctf_source(
        C, path, randomization_window_in_samples=-1, randomization_window_in_chunks=0)
        .next_minibatch(2) and None)
    # a window in samples beside the default window in chunks (4): CNTK refuses both
    res["samples_alone"] = _result(lambda: _ctf_source(
        C, path, randomization_window_in_samples=5) and None)
    # not randomized: CNTK sets both windows to 0 before it checks them
    res["unrandomized_both"] = _result(lambda: minibatch_firsts(_ctf_source(
        C, path, randomize=False, max_sweeps=1, randomization_window_in_samples=5,
        randomization_window_in_chunks=2), 6))
    res["frame_and_truncation"] = _result(lambda: _ctf_source(
        C, path, frame_mode=True, truncation_length=2) and None)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="loops__sample_and_sweep_ends",
           names=["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer",
                  "cntk.io.FULL_DATA_SWEEP", "cntk.io.INFINITELY_REPEAT",
                  "cntk.io.MinibatchSource.next_minibatch"],
           note="sequences of 3, 1, 4 and 2 steps, not randomized, minibatches of 4 and 5 "
                "samples: max_samples 7 (the last sequence crossing it), max_sweeps 2, "
                "FULL_DATA_SWEEP, max_samples 0, both limits, a negative max_samples")
def loops_sample_and_sweep_ends(C, r):
    path = _counting("e.ctf", [3, 1, 4, 2])
    res = {}
    for tag, kw in (("samples7", dict(max_samples=7)), ("sweeps2", dict(max_sweeps=2)),
                    ("full", dict(max_samples=C.io.FULL_DATA_SWEEP)),
                    ("zero", dict(max_samples=0)),
                    ("both", dict(max_samples=13, max_sweeps=2)),
                    ("repeat", dict(max_samples=C.io.INFINITELY_REPEAT, max_sweeps=1))):
        for size in (4, 5):
            res["%s_%d" % (tag, size)] = _result(lambda: minibatch_firsts(
                _ctf_source(C, path, randomize=False, **kw), size))
    res["negative"] = _result(lambda: _ctf_source(C, path, max_samples=-5).next_minibatch(2)
                              and None)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="loops__checkpoint_mid_sweep",
           names=["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer",
                  "cntk.io.MinibatchSource.next_minibatch",
                  "cntk.io.MinibatchSource.get_checkpoint_state",
                  "cntk.io.MinibatchSource.restore_from_checkpoint"],
           note="a randomized text file of 12 samples cut into 4 chunks (40-byte chunks), "
                "window 2 chunks: a checkpoint after 2 minibatches of 5 (mid-sweep), the "
                "next 4 minibatches; then a fresh source restored from it, and the first "
                "source restored from it, read the same; a state taken at the start")
def loops_checkpoint_mid_sweep(C, r):
    path = _write("c.ctf", "".join("|x %d.%s\n" % (k, "0" * (7 * k % 10)) for k in range(12)))

    def make():
        d = C.io.CTFDeserializer(path, C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1)))
        if hasattr(d, "chunk_bytes"):
            d.chunk_bytes = 40
        else:
            d["chunkSizeInBytes"] = 40
        return C.io.MinibatchSource(d, randomization_window_in_chunks=2, randomization_seed=3)
    src = make()
    start = src.get_checkpoint_state()
    res = {"before": minibatch_firsts(src, 5, most=2)}
    state = src.get_checkpoint_state()
    res["after"] = minibatch_firsts(src, 5, most=4)
    fresh = make()
    fresh.restore_from_checkpoint(state)
    res["fresh"] = minibatch_firsts(fresh, 5, most=4)
    src.restore_from_checkpoint(state)
    res["same"] = minibatch_firsts(src, 5, most=4)
    src.restore_from_checkpoint(start)
    res["start"] = minibatch_firsts(src, 5, most=3)
    r.touch("cntk.io.MinibatchSource.next_minibatch",
            "cntk.io.MinibatchSource.get_checkpoint_state",
            "cntk.io.MinibatchSource.restore_from_checkpoint")
    return res


@cntk_case(name="loops__data_partitions",
           known={"out_of_range": "partition_index=2 of 2: CNTK 2.7 reads nothing (an empty "
                                  "minibatch, BlockRandomizer::SetState's worker rank past "
                                  "the chunks) and {} for every later call of that "
                                  "source, whatever its partition; Stadyn refuses it "
                                  "(ValueError, io/_source.py _check_partition) rather than "
                                  "end a reading loop silently (docs/readers.md, Sharding)"},
           names=["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer",
                  "cntk.io.MinibatchSource.next_minibatch"],
           note="two workers' sources over one text file of 9 sequences (1 to 3 steps), "
                "each next_minibatch(6, num_data_partitions=2, partition_index=i), not "
                "randomized and randomized, one sweep; a partition index out of range")
def loops_data_partitions(C, r):
    path = _counting("p.ctf", [2, 1, 3, 1, 2, 2, 1, 3, 1])
    res = {}
    for randomize in (False, True):
        for index in (0, 1):
            res["%s_%d" % (randomize, index)] = minibatch_firsts(
                _ctf_source(C, path, randomize=randomize, max_sweeps=1), 6,
                num_data_partitions=2, partition_index=index)
    res["out_of_range"] = _result(lambda: _ctf_source(C, path).next_minibatch(
        4, num_data_partitions=2, partition_index=2) and None)
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


def _streamdef_read(C, text, *streams):
    """Each stream ``(name, field, dim, sparse)``'s values read from ``text`` (through
    ``times`` by the identity, as a model reads them)."""
    path = _write("s.ctf", text)
    defs = dict((name, C.io.StreamDef(field=field, shape=dim, is_sparse=sparse))
                for name, field, dim, sparse in streams)
    src = C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(**defs)),
                               randomize=False, max_sweeps=1)
    mb = src.next_minibatch(10)
    out = {}
    for name, _, dim, sparse in streams:
        x = C.input_variable(dim, is_sparse=sparse)
        values = C.times(x, C.constant(np.eye(dim, dtype=np.float32))).eval(
            {x: mb[src.streams[name]]})
        out[name] = np.asarray(values, np.float32).tolist()
    return out


@cntk_case(name="loops__streamdef_edges",
           names=["cntk.io.StreamDef", "cntk.io.StreamDefs", "cntk.io.CTFDeserializer",
                  "cntk.io.MinibatchSource"],
           note="StreamDef over a text file: a stream named apart from its field (alias), "
                "sparse entries read into a sparse stream; dense values into a stream "
                "declared sparse, sparse entries into a dense one, too few and too many "
                "values, an index past the dimension, a field the file lacks")
def loops_streamdef_edges(C, r):
    res = {}
    res["alias"] = _result(lambda: _streamdef_read(
        C, "|a 1 2 |b 0:1\n|a 3 4 |b 2:1\n", ("feats", "a", 2, False),
        ("labels", "b", 3, True)))
    for tag, text, sparse in (("dense_into_sparse", "|x 1 0 2\n", True),
                              ("sparse_into_dense", "|x 0:1 2:2\n", False),
                              ("too_few", "|x 1 2\n", False),
                              ("too_many", "|x 1 2 3 4\n", False),
                              ("index_past", "|x 0:1 3:2\n", True),
                              ("missing_field", "|y 1 2 3\n", False)):
        res[tag] = _result(lambda: _streamdef_read(C, text, ("x", "x", 3, sparse)))
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res


@cntk_case(name="loops__several_deserializers",
           names=["cntk.io.MinibatchSource", "cntk.io.CTFDeserializer",
                  "cntk.io.MinibatchSource.next_minibatch"],
           note="features and labels in two text files joined by sequence id (same ids in "
                "another order; the second file lacking one id), randomized and not, "
                "minibatches of 4 samples; two deserializers naming the same stream")
def loops_several_deserializers(C, r):
    feats = _write("f.ctf", "0 |x 1\n0 |x 2\n1 |x 3\n2 |x 4\n2 |x 5\n2 |x 6\n3 |x 7\n")
    labels = _write("l.ctf", "2 |y 30\n0 |y 10\n3 |y 40\n1 |y 20\n")
    short = _write("m.ctf", "0 |y 10\n2 |y 30\n3 |y 40\n")

    def read(label_path, **kw):
        src = C.io.MinibatchSource(
            [C.io.CTFDeserializer(feats, C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=1))),
             C.io.CTFDeserializer(label_path, C.io.StreamDefs(
                 y=C.io.StreamDef(field="y", shape=1)))], max_sweeps=1, **kw)
        out = []
        for _ in range(10):
            mb = src.next_minibatch(4)
            if not mb:
                break
            out.append([_values(mb[src.streams.x]), _values(mb[src.streams.y])])
            del mb
        return out
    res = {"ordered": _result(lambda: read(labels, randomize=False)),
           "randomized": _result(lambda: read(labels, randomization_seed=5)),
           "lacking": _result(lambda: read(short, randomize=False)),
           "same_name": _result(lambda: C.io.MinibatchSource(
               [C.io.CTFDeserializer(feats, C.io.StreamDefs(x=C.io.StreamDef(field="x",
                                                                             shape=1))),
                C.io.CTFDeserializer(labels, C.io.StreamDefs(x=C.io.StreamDef(field="y",
                                                                              shape=1)))])
               and None)}
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    return res
