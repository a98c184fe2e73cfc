"""What CNTK 2.7's training reads and may be asked, in one process: each worker's slice of
``MinibatchSourceFromData`` for ``number_of_workers``/``worker_rank`` (its Python
``next_minibatch``, cntk/io/__init__.py) and of a Python ``UserDeserializer``, a truncated
minibatch's refused reads, a Trainer's averages before a minibatch of samples, and how far a
training session's test config reads."""

import os

import numpy as np

from compat_harness import cntk_case


def _error(e):
    """The error's type and message, without Stadyn's explanation in parentheses."""
    return "%s: %s" % (type(e).__name__, str(e).splitlines()[0].split(" (")[0])


def _from_data_parts(C, W, M, calls, n=None, lengths=None, **kw):
    """Per worker: [samples, sequences, values, end of sweep] of each minibatch, 'empty', or
    the error of the call (the reading stops there)."""
    parts = []
    for rank in range(W):
        if lengths is None:
            data = dict(x=np.arange(n, dtype=np.float32).reshape(n, 1))
        else:
            xs = [10 * i + np.arange(k, dtype=np.float32)[:, None] for i, k in enumerate(lengths)]
            data = dict(x=(xs, C.layers.typing.Sequence[C.layers.typing.tensor]))
        src = C.io.MinibatchSourceFromData(data, **kw)
        got = []
        for _ in range(calls):
            try:
                mb = src.next_minibatch(M, number_of_workers=W, worker_rank=rank)
            except ValueError as e:
                got.append(_error(e))
                break
            if not mb:
                got.append("empty")
                continue
            d = mb[src.streams.x]
            if lengths is None:
                values = [float(v) for v in np.asarray(d.asarray()).ravel()]
            else:
                values = [[float(v) for v in np.asarray(s).ravel()] for s in d.as_sequences()]
            got.append([int(d.num_samples), int(d.num_sequences), values, bool(d.end_of_sweep)])
        parts.append(got)
    return parts


@cntk_case(names=["cntk.io.MinibatchSourceFromData"],
           note="Stadyn dealt the rows of the whole stream (position % W == rank), each "
                "worker's counts its own, and took no number_of_workers/worker_rank")
def from_data_worker_slices(C, r):
    """Each worker plans the minibatch as one would (``begin`` to ``end``) and reads the rows
    ``begin + rank :: W`` before ``end + rank`` (the next minibatch's first row may be read
    twice, a worker may read none), the counts and sweep end the whole minibatch's; also
    positionally, with ``max_samples`` (whose last minibatch ends the sweep) and over
    sequences (a worker left no sequence: Value.create's ValueError)."""
    res = {}
    for N, W, M in ((5, 2, 3), (7, 3, 4), (6, 2, 4), (4, 3, 2), (9, 4, 5)):
        res["n%d_w%d_m%d" % (N, W, M)] = _from_data_parts(C, W, M, 5, n=N)
    res["max7_n5_w2_m3"] = _from_data_parts(C, 2, 3, 5, n=5, max_samples=7)
    res["seq_w2_m4"] = _from_data_parts(C, 2, 4, 5, lengths=[3, 1, 2, 4, 2, 1, 3])
    res["seq_w3_m5"] = _from_data_parts(C, 3, 5, 4, lengths=[3, 1, 2, 4, 2, 1, 3])
    src = C.io.MinibatchSourceFromData(dict(x=np.arange(5, dtype=np.float32).reshape(5, 1)))
    res["positional"] = [np.asarray(src.next_minibatch(3, 2, 1)[src.streams.x].asarray())
                         for _ in range(3)]
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch"],
           note="Stadyn refused training with its own StadynError and tested to a "
                "ZeroDivisionError (on several workers it trained on the others' samples)")
def from_data_empty_slice_refused(C, r):
    """Worker 1 of 2's slice of the last minibatch of 3 rows in minibatches of 2 (rows
    ``begin + 1 :: 2`` before ``end + 1``: none), and arrays of no rows: a Trainer's
    ``train_minibatch`` and ``test_minibatch`` of them are CNTK 2.7's RuntimeError; nothing
    was counted."""
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch")
    x, y = C.input_variable(2), C.input_variable(3)
    z = C.times(x, C.parameter((2, 3), init=r.param_value("w", (2, 3))))
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    src = C.io.MinibatchSourceFromData(dict(x=r.randn(3, 2), y=r.onehot(3, 3)))
    src.next_minibatch(2, number_of_workers=2, worker_rank=1)
    mb = src.next_minibatch(2, number_of_workers=2, worker_rank=1)
    res = {"slice": [int(mb[src.streams.x].num_samples),
                     list(np.asarray(mb[src.streams.x].asarray()).shape)]}
    for name, args in (("slice", {x: mb[src.streams.x], y: mb[src.streams.y]}),
                       ("arrays", {x: np.zeros((0, 2), np.float32),
                                   y: np.zeros((0, 3), np.float32)})):
        for run in ("train_minibatch", "test_minibatch"):
            try:
                res["%s %s" % (name, run)] = float(getattr(trainer, run)(args))
            except RuntimeError as e:      # (CNTK's node uid is not Stadyn's)
                res["%s %s" % (name, run)] = "RuntimeError: " + str(e).splitlines()[0].split(
                    "operation): ")[-1].split(" (")[0]
    res["seen"] = trainer.total_number_of_samples_seen
    return res


def _truncated_source(C, folder):
    path = os.path.join(folder, "seq.ctf")
    with open(path, "w") as f:
        for s, n in enumerate([7, 3, 9, 5, 4, 6, 8, 2]):
            for t in range(n):
                f.write("%d |x %d %d\n" % (s, s, t))
    streams = C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=2))
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, streams), randomize=False,
                                truncation_length=4, max_sweeps=1)


@cntk_case(names=["cntk.io.MinibatchData.as_sequences", "cntk.io.MinibatchData.data",
                  "cntk.Value.as_sequences", "cntk.Value.asarray"],
           note="Stadyn refused asarray() only; as_sequences() and the data Value's reads "
                "gave the pieces")
def truncated_refused_reads(C, r):
    """Minibatches of 8 samples truncated at 4 steps: where CNTK 2.7 cannot unpack one (a
    sequence goes on and the sequences are not one per slot) ``asarray()``,
    ``as_sequences()`` (with and without the variable), ``.data.asarray()`` and
    ``.data.as_sequences()`` all raise its RuntimeError; the shapes are still given."""
    r.touch("cntk.io.MinibatchData.as_sequences", "cntk.io.MinibatchData.data",
            "cntk.Value.as_sequences", "cntk.Value.asarray")
    x = C.sequence.input_variable(2)
    res = {}
    with r.tempdir() as folder:
        src = _truncated_source(C, folder)
        k = 0
        while True:
            mb = src.next_minibatch(8)
            if not mb:
                break
            d = mb[src.streams.x]
            for name, read in (("asarray", lambda: d.asarray()),
                               ("as_sequences", lambda: d.as_sequences()),
                               ("as_sequences_var", lambda: d.as_sequences(x)),
                               ("data.asarray", lambda: d.data.asarray()),
                               ("data.as_sequences", lambda: d.data.as_sequences())):
                try:
                    got = read()
                    res["%d_%s" % (k, name)] = [np.asarray(a) for a in got]
                except RuntimeError as e:
                    res["%d_%s" % (k, name)] = _error(e)
            res["%d_shape" % k] = [list(d.shape), list(d.data.shape)]
            k += 1
    return res


@cntk_case(names=["cntk.Trainer.previous_minibatch_loss_average",
                  "cntk.Trainer.previous_minibatch_evaluation_average"],
           note="Stadyn gave NaN and None before a minibatch (and after one of no samples: "
                "the end of a distributed training session)")
def trainer_averages_before_training(C, r):
    """Before any minibatch, a Trainer's loss and metric averages are CNTK 2.7's RuntimeError
    (its message); after one, the averages."""
    r.touch("cntk.Trainer.previous_minibatch_loss_average",
            "cntk.Trainer.previous_minibatch_evaluation_average")
    x = C.input_variable(2)
    y = C.input_variable(1)
    z = C.layers.Dense(1, init=C.glorot_uniform(seed=1))(x)
    trainer = C.Trainer(z, (C.squared_error(z, y), C.squared_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    res = {}

    def read(key):
        for name in ("previous_minibatch_loss_average",
                     "previous_minibatch_evaluation_average"):
            try:
                res[key + name] = float(getattr(trainer, name))
            except RuntimeError as e:
                res[key + name] = _error(e)
    read("before_")
    trainer.train_minibatch({x: np.ones((3, 2), np.float32), y: np.zeros((3, 1), np.float32)})
    read("after_")
    res["count"] = trainer.previous_minibatch_sample_count
    return res


def _seven_samples(C, folder):
    """A CTF file of 7 samples (``x`` of 2 values, ``y`` of 1) in ``folder``, and a function
    making a reader of it (not randomized) over ``sweeps`` sweeps."""
    path = os.path.join(folder, "d.ctf")
    with open(path, "w") as f:
        for i in range(7):
            f.write("|x %d 1 |y %d\n" % (i, i % 2))

    def ctf(sweeps):
        streams = C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=2),
                                  y=C.io.StreamDef(field="y", shape=1))
        return C.io.MinibatchSource(C.io.CTFDeserializer(path, streams), randomize=False,
                                    max_sweeps=sweeps)
    return ctf


def _test_counts(C, folder, make_test):
    """A training session (7 samples) with a test config over ``make_test()``: the test
    updates and summary its progress writer got, or the session's error."""
    ctf = _seven_samples(C, folder)

    x = C.input_variable(2)
    y = C.input_variable(1)
    z = C.times(x, C.parameter((2, 1), init=np.full((2, 1), 0.1, np.float32)))
    writer = _TestRecorder(C)
    trainer = C.Trainer(z, (C.squared_error(z, y), C.squared_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.01))], [writer])
    train, test = ctf(1), make_test(ctf)
    try:
        C.training_session(trainer=trainer, mb_source=train, mb_size=4,
                           model_inputs_to_streams={x: train.streams.x, y: train.streams.y},
                           max_samples=7,
                           test_config=C.TestConfig(test, mb_size=3, model_inputs_to_streams={
                               x: test.streams.x, y: test.streams.y})).train()
    except ValueError as e:
        return [_error(e), trainer.total_number_of_samples_seen]
    return writer.tests


def _TestRecorder(C):
    base = C.logging.ProgressWriter if hasattr(C.logging, "ProgressWriter") \
        else C.cntk_py.ProgressWriter       # (CNTK 2.7 exports it from cntk_py only)

    class Recorder(base):
        def __init__(self):
            super(Recorder, self).__init__(1, 0, 1, 0, 1, 0)
            self.tests = []

        def on_write_test_update(self, samples, updates, aggregate_metric):
            self.tests.append([list(samples), list(updates), list(aggregate_metric)])

        def on_write_test_summary(self, samples, updates, summaries, aggregate_metric,
                                  elapsed_milliseconds):
            self.tests.append(["summary", samples, updates, summaries, aggregate_metric])

        def on_write_training_update(self, *args):
            pass

        def on_write_training_summary(self, *args):
            pass
    return Recorder()


@cntk_case(names=["cntk.train.training_session", "cntk.TestConfig"],
           note="Stadyn's test stopped at the source's first sweep end and tested an endless "
                "source for a sweep", rtol=1e-5)
def test_config_reads_to_the_end(C, r):
    """A training session's test config reads its source until it ends: two sweeps of a
    text file (7 samples in minibatches of 3, across the sweep's end), arrays of 5 rows with
    ``max_samples=12``; an endless source is refused after training with CNTK 2.7's
    ValueError."""
    r.touch("cntk.train.training_session", "cntk.TestConfig")
    with r.tempdir() as folder:
        arrays = dict(x=np.arange(10, dtype=np.float32).reshape(5, 2),
                      y=np.ones((5, 1), np.float32))
        return {"two_sweeps": _test_counts(C, folder, lambda ctf: ctf(2)),
                "from_data_12": _test_counts(
                    C, folder, lambda ctf: C.io.MinibatchSourceFromData(arrays, max_samples=12)),
                "endless": _test_counts(C, folder, lambda ctf: ctf(C.io.INFINITELY_REPEAT))}


def _user_source(C, sizes, sequences, **kw):
    """A ``UserDeserializer`` of chunks of ``sizes`` sequences numbered on from 0 (with
    ``sequences``: sequence i has 1 + i % 3 steps of value i)."""
    chunks, k = [], 0
    for n in sizes:
        if sequences:
            chunks.append({"x": [np.full((1 + i % 3, 1), i, np.float32)
                                 for i in range(k, k + n)]})
        else:
            chunks.append({"x": np.arange(k, k + n, dtype=np.float32)[:, None]})
        k += n

    class Chunks(C.io.UserDeserializer):
        def __init__(self):
            super(Chunks, self).__init__()

        def stream_infos(self):
            return [C.io.StreamInformation("x", 0, "dense", np.float32, (1,))]

        def num_chunks(self):
            return len(chunks)

        def get_chunk(self, chunk_id):
            return chunks[chunk_id]
    return C.io.MinibatchSource(Chunks(), randomize=False, **kw)


@cntk_case(names=["cntk.io.UserDeserializer", "cntk.io.MinibatchSource"],
           note="Stadyn shared out each global minibatch (positions p % W == r of the stream)")
def user_deserializer_partitions(C, r):
    """``next_minibatch(M, num_data_partitions=W, partition_index=r)`` over a Python
    deserializer, not randomized (CNTK 2.7's local-timeline reader): per partition, the
    samples, sequences, first value of each sequence and sweep end of each minibatch; chunks
    of 3, 4, 2 and 4, 4 sequences and one of 5, two sweeps; sequences of 1-3 steps;
    ``max_samples=11`` (each partition its own share)."""
    res = {}
    for sizes, W, M, sequences, kw in (
            ([3, 4, 2], 2, 4, False, dict(max_sweeps=2)),
            ([3, 4, 2], 3, 3, False, dict(max_sweeps=2)),
            ([3, 4, 2], 2, 3, False, dict(max_sweeps=2)),
            ([5], 2, 4, False, dict(max_sweeps=2)),
            ([4, 4], 3, 7, False, dict(max_sweeps=2)),
            ([3, 4], 2, 5, True, dict(max_sweeps=2)),
            ([3, 4, 2], 2, 4, False, dict(max_samples=11))):
        parts = []
        for rank in range(W):
            src = _user_source(C, sizes, sequences, **kw)
            got = []
            for _ in range(7):
                mb = src.next_minibatch(M, num_data_partitions=W, partition_index=rank)
                if not mb:
                    got.append("empty")
                    continue
                d = mb[src.streams.x]
                firsts = [int(np.asarray(s).ravel()[0]) for s in d.as_sequences()]
                got.append([int(d.num_samples), int(d.num_sequences), firsts,
                            bool(d.end_of_sweep)])
                # CNTK 2.7's packer sometimes fails to reuse its buffer while the previous
                # minibatch's sequences are still held ('Resize: Cannot resize the matrix
                # because it is a view', 2 in 12 runs of the sequence source): let them go
                del d, mb
            parts.append(got)
        key = "%s_w%d_m%d%s%s" % ("-".join(map(str, sizes)), W, M,
                                  "_seq" if sequences else "", "_max" if "max_samples" in kw
                                  else "")
        res[key] = parts
    return res


@cntk_case(names=["cntk.io.MinibatchSource"],
           note="Stadyn's truncated packer dealt every W-th sequence of the randomized order to "
                "a partition (CNTK deals whole chunks: this file is one, all partition 0's)")
def truncated_partitions_randomized(C, r):
    """A randomized text file of sequences (one chunk) read with ``truncation_length=4`` in 2
    and 3 partitions, one and two sweeps: per partition, the samples, pieces and sweep end of
    each minibatch (partition 0 reads everything, the others nothing)."""
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "seq.ctf")
        with open(path, "w") as f:
            for s, n in enumerate([7, 3, 9, 5, 4, 6, 8, 2]):
                for t in range(n):
                    f.write("%d |x %d %d\n" % (s, s, t))
        streams = C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=2))
        for W, M, sweeps in ((2, 8, 1), (2, 16, 2), (3, 12, 1)):
            parts = []
            for rank in range(W):
                src = C.io.MinibatchSource(C.io.CTFDeserializer(path, streams), randomize=True,
                                           truncation_length=4, max_sweeps=sweeps)
                got = []
                for _ in range(12):
                    mb = src.next_minibatch(M, num_data_partitions=W, partition_index=rank)
                    if not mb:
                        got.append("empty")
                        continue
                    d = mb[src.streams.x]
                    got.append([int(d.num_samples), int(d.num_sequences), bool(d.end_of_sweep)])
                parts.append(got)
            res["w%d_m%d_sweeps%d" % (W, M, sweeps)] = parts
    return res


@cntk_case(names=["cntk.train.training_session", "cntk.CrossValidationConfig"],
           note="Stadyn's cross-validation stopped at the source's first sweep end (9 of 14 "
                "and of 21 samples)", rtol=1e-5)
def cross_validation_reads_to_the_end(C, r):
    """Cross-validation every 7 samples of a 14-sample session reads its source until it ends:
    two and three sweeps of a 7-sample text file in minibatches of 3 (across the sweeps'
    ends), and 10 samples of an endless one with ``max_samples=10``: the callback's
    arguments; an endless source without ``max_samples`` is CNTK 2.7's ValueError."""
    r.touch("cntk.train.training_session", "cntk.CrossValidationConfig")
    res = {}
    with r.tempdir() as folder:
        ctf = _seven_samples(C, folder)
        for name, sweeps, limit in (("two_sweeps", 2, None), ("three_sweeps", 3, None),
                                    ("endless_10", C.io.INFINITELY_REPEAT, 10),
                                    ("endless", C.io.INFINITELY_REPEAT, None)):
            x = C.input_variable(2)
            y = C.input_variable(1)
            z = C.times(x, C.parameter((2, 1), init=np.full((2, 1), 0.1, np.float32)))
            trainer = C.Trainer(z, (C.squared_error(z, y), C.squared_error(z, y)),
                                [C.sgd(z.parameters, C.learning_parameter_schedule(0.01))])
            calls = []

            def callback(index, average_error, samples, minibatches):
                calls.append([index, average_error, samples, minibatches])
                return True
            train = ctf(3)
            try:
                C.training_session(
                    trainer=trainer, mb_source=train, mb_size=4,
                    model_inputs_to_streams={x: train.streams.x, y: train.streams.y},
                    max_samples=14,
                    cv_config=C.CrossValidationConfig(ctf(sweeps), mb_size=3, frequency=7,
                                                      callback=callback,
                                                      max_samples=limit)).train()
                res[name] = calls
            except ValueError as e:
                res[name] = [_error(e), calls]
    return res


def _lengths_source(C, lengths):
    """A ``UserDeserializer`` of one chunk: sequence i has ``lengths[i]`` steps of value i."""
    chunk = {"x": [np.full((n, 1), i, np.float32) for i, n in enumerate(lengths)]}

    class Chunk(C.io.UserDeserializer):
        def __init__(self):
            super(Chunk, self).__init__()

        def stream_infos(self):
            return [C.io.StreamInformation("x", 0, "dense", np.float32, (1,))]

        def num_chunks(self):
            return 1

        def get_chunk(self, chunk_id):
            return chunk
    return C.io.MinibatchSource(Chunk(), randomize=False)


def _partition_reads(src, M, W, rank, n):
    """[samples, first value of each sequence, end of sweep] of ``n`` minibatches, or
    'empty'."""
    got = []
    for _ in range(n):
        mb = src.next_minibatch(M, num_data_partitions=W, partition_index=rank)
        if not mb:
            got.append("empty")
            continue
        d = mb[src.streams.x]
        got.append([int(d.num_samples), [int(np.asarray(s).ravel()[0]) for s in d.as_sequences()],
                    bool(d.end_of_sweep)])
        del d, mb                    # (see user_deserializer_partitions)
    return got


@cntk_case(names=["cntk.io.MinibatchSource.get_checkpoint_state",
                  "cntk.io.MinibatchSource.restore_from_checkpoint"],
           note="Stadyn did not report a sweep end met again after going back before it, and "
                "reported twice one met just before the state was taken")
def user_deserializer_restored_sweep_end(C, r):
    """A partition of a Python deserializer (CNTK 2.7's local-timeline reader) restored from
    its checkpoint state: going back (same source) before a sweep end read since reports the
    sweep end again; a state taken right after a minibatch that met a sweep end and stopped at
    the next sweep's start, restored into a new source, does not report it a second time.
    Per case: the minibatches before the state, read on from it, and read after the restore."""
    r.touch("cntk.io.MinibatchSource.get_checkpoint_state",
            "cntk.io.MinibatchSource.restore_from_checkpoint")
    res = {}
    for lengths, W, M, rank, before, fresh in (
            ([1, 2, 3, 1, 2, 3, 1], 2, 5, 0, 1, False), ([1, 2, 3, 1, 2, 3, 1], 2, 5, 1, 2, False),
            ([1] * 9, 3, 3, 2, 2, False),
            ([2, 2, 4, 2, 1], 3, 8, 0, 2, True), ([3, 4, 3, 2], 2, 7, 0, 2, True)):
        src = _lengths_source(C, lengths)
        first = _partition_reads(src, M, W, rank, before)
        state = src.get_checkpoint_state()
        on = _partition_reads(src, M, W, rank, 4)
        if fresh:
            src = _lengths_source(C, lengths)
        src.restore_from_checkpoint(state)
        key = "%s_w%d_m%d_r%d%s" % ("-".join(map(str, lengths)), W, M, rank,
                                    "_fresh" if fresh else "")
        res[key] = [first, on, _partition_reads(src, M, W, rank, 4)]
    return res
