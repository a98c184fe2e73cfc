"""CNTK 2.7's sparse data (session 37): what a minibatch's sparse data stores, as its learners
see it, and the forms of sparse data a Trainer takes.

* A zero a CTF file stores (``3:0``) is an entry of CNTK's sparse data (TextParser.cpp:860-861
  append every ``index:value``), as a SciPy matrix's stored zero is: the row-sparse gradient
  of the weight it multiplies has a block for its row, and the learners update it (momentum
  carried on, AdaGrad's average multiplier over it).
"""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_first = functools.partial(outcome, convert=as_returned,
                           raised=functools.partial(as_raised, first_line=True))

# (stored entries, target) of each minibatch of one sample: step 1 stores a zero at row 3
_STEPS = ([(3, 1.0)], [1.0, 2.0]), ([(1, 1.0), (3, 0.0)], [3.0, 1.0])
_LEARNERS = ("sgd", "momentum_sgd", "nesterov", "adagrad", "adadelta")


def _learner(C, name, params):
    lr = C.learning_parameter_schedule(0.1)
    if name in ("momentum_sgd", "nesterov"):
        return getattr(C, name)(params, lr, C.momentum_schedule(0.9))
    return getattr(C, name)(params, lr)


def _embedding_trained(C, np, name, feed):
    """``E`` of ``times(x, E)`` after each of the minibatches ``_STEPS`` (from a CTF file,
    SciPy matrices, or SciPy matrices without the stored zero)."""
    import scipy.sparse as sp
    x = C.input_variable(5, is_sparse=True)
    y = C.input_variable(2)
    E = C.parameter((5, 2), init=(np.arange(10, dtype=np.float32).reshape(5, 2) / 10))
    z = C.times(x, E)
    trainer = C.Trainer(z, (C.reduce_sum(z * y), None), [_learner(C, name, [E])])
    out = []
    if feed == "ctf":
        with open("stored.ctf", "w") as f:
            for k, (entries, target) in enumerate(_STEPS):
                f.write("%d |x %s |y %s\n" % (k, " ".join("%d:%g" % e for e in entries),
                                             " ".join("%g" % v for v in target)))
        source = C.io.MinibatchSource(C.io.CTFDeserializer("stored.ctf", C.io.StreamDefs(
            x=C.io.StreamDef(field="x", shape=5, is_sparse=True),
            y=C.io.StreamDef(field="y", shape=2))), randomize=False, max_sweeps=1)
        for _ in _STEPS:
            mb = source.next_minibatch(1)
            trainer.train_minibatch({x: mb[source.streams.x], y: mb[source.streams.y]})
            out.append(E.value)
        return out
    for entries, target in _STEPS:
        if feed == "csr_without_zero":
            entries = [e for e in entries if e[1] != 0]
        m = sp.csr_matrix((np.float32([v for _, v in entries]), [k for k, _ in entries],
                           [0, len(entries)]), shape=(1, 5))
        trainer.train_minibatch({x: m, y: np.float32([target])})
        out.append(E.value)
    return out


@cntk_case(name="sparse_37__ctf_stored_zero",
           names=["cntk.io.CTFDeserializer", "cntk.Trainer",
                  "cntk.learners.momentum_sgd", "cntk.learners.nesterov",
                  "cntk.learners.adagrad", "cntk.learners.adadelta", "cntk.learners.sgd"],
           note="a CTF file's stored zero (3:0) touches its row of the row-sparse gradient, "
                "as a SciPy matrix's: momentum, Nesterov and AdaGrad differ from the data "
                "without it")
def ctf_stored_zero(C, r, np):
    res = {}
    for name in _LEARNERS:
        for feed in ("ctf", "csr", "csr_without_zero"):
            for step, value in enumerate(_embedding_trained(C, np, name, feed)):
                res["%s_%s_%d" % (name, feed, step)] = value
    r.touch("cntk.io.MinibatchSource.next_minibatch", "cntk.Parameter.value")
    return res


# the forms of sparse data a Trainer is given for a sparse input (a sequence one or not, of
# one axis or two), as CNTK 2.7's Value.create lays them out (cntk/core.py: one matrix is one
# array, a list's matrices are sequences): (name, input shape, sequence input, data)
def _feeds(C, np):
    import scipy.sparse as sp
    eye = np.eye(5, dtype=np.float32)

    def csr(*rows):
        return sp.csr_matrix(eye[list(rows)])
    return [
        ("seq_list", 5, True, lambda: [csr(0, 1), csr(3)]),
        ("seq_one_matrix", 5, True, lambda: csr(0, 3)),
        ("seq_value_batch", 5, True, lambda: C.Value(batch=csr(0, 3))),
        ("seq_one_hot", 5, True, lambda: C.Value.one_hot([[0, 1], [3]], 5)),
        ("seq_rank2_list", (3, 5), True, lambda: [csr(0, 1, 2), csr(3, 4, 0)]),
        ("seq_rank2_list_ragged", (3, 5), True, lambda: [csr(0, 1, 2), csr(3, 3, 4, 0, 0, 1)]),
        ("seq_rank2_value_batch", (3, 5), True, lambda: C.Value(batch=csr(0, 3, 4))),
        ("rows_list", 5, False, lambda: [csr(0), csr(3)]),
        ("rows_list_of_two_rows", 5, False, lambda: [csr(0, 1), csr(3)]),
        ("rows_value_create", 5, False, lambda: None),
        ("rank2_list", (3, 5), False, lambda: [csr(0, 1, 2), csr(3, 4, 0)]),
        ("rank2_list_short", (3, 5), False, lambda: [csr(0, 1), csr(3, 4, 0)]),
        ("rank2_one_matrix", (3, 5), False, lambda: csr(0, 3, 4)),
        ("rank2_one_matrix_six_rows", (3, 5), False, lambda: csr(0, 1, 2, 3, 4, 0)),
        ("rank2_value_batch", (3, 5), False, lambda: C.Value(batch=csr(0, 3, 4))),
        ("rank2_one_hot", (3, 5), False, lambda: C.Value.one_hot([[0, 1, 2], [3, 4, 0]], 5)),
    ]


_PADDED = ("Trainer.train_minibatch(outputs=[z]) gives a sequence output as one array of the "
           "sequences padded to the longest (compat/cntk/_trainer.py), CNTK 2.7 a list of "
           "each sequence's steps: dense sequence inputs alike, not a matter of sparse data")


@cntk_case(name="sparse_37__trainer_sparse_feeds",
           names=["cntk.Trainer", "cntk.sequence.input_variable", "cntk.input_variable",
                  "cntk.Value", "cntk.Value.one_hot", "cntk.Value.create"],
           note="a list of SciPy matrices, one matrix, Value(batch=csr) and one-hot Values for "
                "sparse inputs of one axis or two, with a sequence axis or not: the weight "
                "after one momentum step (the samples counted set its per-minibatch rate) "
                "and the outputs, or the refusal",
           known={k + "_outputs": _PADDED for k in ("seq_list", "seq_one_hot")})
def trainer_sparse_feeds(C, r, np):
    import scipy.sparse as sp
    res = {}
    for name, shape, seq, data in _feeds(C, np):
        x = (C.sequence.input_variable if seq else C.input_variable)(shape, is_sparse=True,
                                                                     name="x")
        E = C.parameter((5, 2), init=np.arange(10, dtype=np.float32).reshape(5, 2) / 10)
        z = C.times(x, E)
        loss = C.sequence.reduce_sum(C.reduce_sum(z)) if seq else C.reduce_sum(z)
        trainer = C.Trainer(z, (loss, None), [C.momentum_sgd(
            [E], C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9))])
        fed = data()
        if fed is None:         # (Value.create of one-row matrices, one a sample)
            fed = C.Value.create(x, [sp.csr_matrix(np.eye(5, dtype=np.float32)[[k]])
                                     for k in (0, 3)], device=C.cpu())
        got = _first(lambda: trainer.train_minibatch({x: fed}, outputs=[z]))
        if "returns" in got:
            out = got["returns"][1][z]
            res[name + "_outputs"] = [np.asarray(o) for o in out]     # (one per sequence)
            got = {"returns": bool(got["returns"][0])}
        res[name] = got
        res[name + "_E"] = E.value
    r.touch("cntk.Parameter.value", "cntk.train.Trainer.train_minibatch",
            "cntk.Value.one_hot", "cntk.Value.create")
    return res


@cntk_case(name="sparse_37__one_hot_sparse_output",
           names=["cntk.ops.one_hot", "cntk.layers.Embedding", "cntk.Trainer",
                  "cntk.learners.momentum_sgd", "cntk.learners.adagrad"],
           note="one_hot(x, n, sparse_output=True) computes sparse data: a product with it "
                "gives its weight a row-sparse gradient (the rows of the classes seen), tensor "
                "ops on it are refused at the run (TensorOp; a reshape of its last axis: "
                "Feature Not Implemented), while its is_sparse is False, it prints as the dense "
                "one and eval gives a dense array")
def one_hot_sparse_output(C, r, np):
    res = {}
    x = C.input_variable(1, name="x")
    oh = C.one_hot(x, 5, sparse_output=True)
    data = np.float32([[1], [3]])
    res["is_sparse"] = [oh.is_sparse, oh.output.is_sparse]
    res["shown"] = [str(oh.output.shape), type(oh.eval({x: data})).__name__]
    res["eval"] = oh.eval({x: data})
    for name, make in (("plus", lambda: oh + 1), ("relu", lambda: C.relu(oh)),
                       ("reduce_sum", lambda: C.reduce_sum(oh)),
                       ("argmax", lambda: C.argmax(oh)),
                       ("reshape_last_axis", lambda: C.reshape(oh, (5, 1))),
                       ("alias", lambda: C.alias(oh)),
                       ("times_transpose", lambda: C.times_transpose(
                           C.parameter((2, 5), init=1.0), oh))):
        res[name] = outcome(lambda: make().eval({x: data}), convert=as_returned,
                            raised=functools.partial(as_raised))
    init = np.arange(10, dtype=np.float32).reshape(5, 2) / 10

    def mom(p):
        return C.momentum_sgd([p], C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9))

    def ada(p):
        return C.adagrad([p], C.learning_parameter_schedule(0.1))
    for label, sparse, learner, seq in (("momentum", True, mom, False),
                                        ("momentum_dense", False, mom, False),
                                        ("adagrad", True, ada, False),
                                        ("adagrad_dense", False, ada, False),
                                        ("momentum_sequences", True, mom, True)):
        xi = (C.sequence.input_variable if seq else C.input_variable)(1)
        E = C.parameter((5, 2), init=init)
        z = C.times(C.one_hot(xi, 5, sparse_output=sparse), E)
        loss = C.reduce_sum(z * np.float32([1, 2]))
        trainer = C.Trainer(z, (C.sequence.reduce_sum(loss) if seq else loss, None),
                            [learner(E)])
        for step in ([1, 3], [0, 1]):
            fed = np.float32(step).reshape(-1, 1)
            trainer.train_minibatch({xi: [fed] if seq else fed})
            res["%s_%d" % (label, len(res))] = E.value
    # sequences of different lengths: CNTK's one-hot of the gap (its padding, 0) is class 0,
    # an entry: row 0's momentum from step 1 is carried on in step 2
    xs = C.sequence.input_variable(1)
    E = C.parameter((5, 2), init=init)
    z = C.times(C.one_hot(xs, 5, sparse_output=True), E)
    trainer = C.Trainer(z, (C.sequence.reduce_sum(C.reduce_sum(z * np.float32([1, 2]))), None),
                        [mom(E)])
    for step in ([[0], [2]], [[1, 3], [2]]):
        trainer.train_minibatch({xs: [np.float32(q).reshape(-1, 1) for q in step]})
        res["momentum_ragged_%d" % len(res)] = E.value
    xe = C.input_variable(1)
    emb = C.layers.Embedding(2, init=init)
    z = emb(C.one_hot(xe, 5, sparse_output=True))
    trainer = C.Trainer(z, (C.reduce_sum(z), None), [mom(emb.E)])
    for step in ([1, 3], [0, 1]):
        trainer.train_minibatch({xe: np.float32(step).reshape(-1, 1)})
    res["embedding"] = emb.E.value
    r.touch("cntk.Function.eval", "cntk.Parameter.value", "cntk.Variable.is_sparse")
    return res


def _csr_shown(items):
    """SciPy matrices (or arrays) as (type, shape, dense values, nnz)."""
    return [[type(s).__name__, list(s.shape),
             (s.toarray() if hasattr(s, "toarray") else s).tolist(),
             int(getattr(s, "nnz", -1))] for s in items]


@cntk_case(name="sparse_37__reader_sparse_streams",
           names=["cntk.io.CTFDeserializer", "cntk.io.MinibatchSource"],
           note="a CTF reader's sparse streams (sequences of 2, 1 and 3 steps, a stored zero; "
                "and samples): counts, is_sparse, shapes, the mask, and as_sequences: refused "
                "without the variable, else one SciPy CSR matrix per sequence (made from the "
                "dense steps: the stored zero is not an entry), as CNTK 2.7's")
def reader_sparse_streams(C, r, np):
    import warnings
    with open("sparse.ctf", "w") as f:
        f.write("0 |x 1:1\n0 |x 3:1 4:2\n1 |x 2:1\n2 |x 0:1\n2 |x 1:0\n2 |x 4:1\n")
    with open("samples.ctf", "w") as f:
        f.write("|y 1:1\n|y 0:1 2:0\n|y 2:3\n")
    seq = C.io.MinibatchSource(C.io.CTFDeserializer("sparse.ctf", C.io.StreamDefs(
        x=C.io.StreamDef(field="x", shape=5, is_sparse=True))), randomize=False,
        max_sweeps=1)
    flat = C.io.MinibatchSource(C.io.CTFDeserializer("samples.ctf", C.io.StreamDefs(
        y=C.io.StreamDef(field="y", shape=3, is_sparse=True))), randomize=False,
        max_sweeps=1)
    x = C.sequence.input_variable(5, is_sparse=True)
    y = C.input_variable(3, is_sparse=True)
    res = {}
    for label, source, var in (("seq", seq, x), ("flat", flat, y)):
        d = source.next_minibatch(100)[source.streams[label == "seq" and "x" or "y"]]
        res[label + "_counts"] = [d.num_samples, d.num_sequences, d.is_sparse,
                                  d.data.is_sparse, list(d.data.shape), list(d.shape)]
        res[label + "_unvaried"] = outcome(lambda: d.as_sequences(), convert=as_returned,
                                           raised=functools.partial(as_raised, first_line=True))
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            res[label + "_sequences"] = _csr_shown(d.as_sequences(var))
            res[label + "_value_sequences"] = _csr_shown(d.data.as_sequences(var))
        res[label + "_warned"] = sorted(set(str(w.message) for w in said
                                            if "CSR" in str(w.message)))
    one_hot = C.Value.one_hot([[1, 2], [0]], 3)
    res["one_hot_unvaried"] = outcome(lambda: one_hot.as_sequences(), convert=as_returned,
                                      raised=functools.partial(as_raised, first_line=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res["one_hot_sequences"] = _csr_shown(one_hot.as_sequences(
            C.sequence.input_variable(3, is_sparse=True)))
    r.touch("cntk.io.MinibatchSource.next_minibatch", "cntk.io.MinibatchData.as_sequences",
            "cntk.io.MinibatchData.data", "cntk.Value.as_sequences")
    return res


# dense data as CNTK 2.7's Value.create lays it out (core.py:413-440: one array is one
# NDArrayView whose leading axes are the dynamic ones, a list's entries are sequences):
# (name, input shape, sequence input, data)
def _dense_feeds(np):
    def ones(*shape):
        return np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 10
    return [
        ("seq_steps", 5, True, lambda: ones(2, 5)),
        ("seq_one_step", 5, True, lambda: ones(5)),
        ("seq_batch", 5, True, lambda: ones(3, 2, 5)),
        ("seq_list", 5, True, lambda: [ones(2, 5), ones(1, 5)]),
        ("seq_value_batch", 5, True, lambda: "value"),
        ("seq_rank2_one_step", (3, 5), True, lambda: ones(3, 5)),
        ("seq_rank2_steps", (3, 5), True, lambda: ones(2, 3, 5)),
        ("rows_one_sample", 5, False, lambda: ones(5)),
        ("rows_list_of_one_rows", 5, False, lambda: [ones(1, 5), ones(1, 5)]),
        ("rows_list_of_two_rows", 5, False, lambda: [ones(2, 5)]),
        ("rank2_one_sample", (3, 5), False, lambda: ones(3, 5)),
        ("rank2_batch", (3, 5), False, lambda: ones(2, 3, 5)),
    ]


@cntk_case(name="sparse_37__trainer_dense_layouts",
           names=["cntk.Trainer", "cntk.sequence.input_variable", "cntk.input_variable",
                  "cntk.Value", "cntk.ops.sequence.past_value"],
           note="one dense array (of the sample's shape; of (steps, *sample) for a sequence "
                "input: one sequence, not a sequence a row), a list of (1, *sample) arrays, "
                "Value(batch=array): the weight after one step at a per-sample rate (the "
                "samples counted scale it), the samples counted, test_minibatch and eval of a "
                "recurrence (which tells the sequences apart)")
def trainer_dense_layouts(C, r, np):
    res = {}
    for name, shape, seq, data in _dense_feeds(np):
        x = (C.sequence.input_variable if seq else C.input_variable)(shape, name="x")
        W = C.parameter((5, 1), init=np.arange(5, dtype=np.float32).reshape(5, 1) / 10)
        h = C.reduce_sum(C.times(x, W))
        s = h + 2 * C.sequence.past_value(h) if seq else h
        trainer = C.Trainer(s, (s, s), [C.sgd(
            [W], C.learning_parameter_schedule(0.1, minibatch_size=1))])
        fed = data()
        if isinstance(fed, str):
            fed = C.Value(batch=np.arange(15, dtype=np.float32).reshape(3, 5) / 10)
        res[name + "_eval"] = _first(lambda: s.eval({x: fed}))
        res[name + "_test"] = _first(lambda: trainer.test_minibatch({x: fed}))
        res[name] = _first(lambda: trainer.train_minibatch({x: fed}))
        res[name + "_samples"] = trainer.previous_minibatch_sample_count
        res[name + "_W"] = W.value
    r.touch("cntk.Parameter.value", "cntk.train.Trainer.train_minibatch",
            "cntk.train.Trainer.test_minibatch", "cntk.Function.eval",
            "cntk.train.Trainer.previous_minibatch_sample_count")
    return res


# c.ctf ("0 |x 1:1 |y 1", "1 |x 1:0 3:1 |y 1", "2 |x 0:1 |y 1") as CNTK 2.7's own
# Scripts/ctf2bin.py writes it (header "x x sparse 5" / "y y dense 1", --chunk_size 100000):
# its sparse stream keeps the stored zero 1:0
_CBF = ("bmliX2t0bmMBAAAAAQAAAAEAAAABAAAAAQAAAAEAAAAAAIA/AQAAAAEAAAABAAAAAgAAAAAAAAAAAIA/AQAAAAMA"
        "AAACAAAAAQAAAAEAAAAAAIA/AAAAAAEAAAABAAAAAACAPwEAAAAAAIA/AQAAAAAAgD9uaWJfa3RuYwEAAAACAAAA"
        "AQEAAAB4AAUAAAAAAQAAAHkAAQAAAAwAAAAAAAAAAwAAAAMAAAB0AAAAAAAAAA==")
# sequences of two steps, step 1 of the second storing a zero at row 1 (after row 1 moved)
_STEPS_CTF = "0 |x 1:1 |y 1\n0 |x 2:1 |y 1\n1 |x 1:0 3:1 |y 1\n1 |x 2:1 |y 1\n"


@cntk_case(name="sparse_37__stored_zero_readers",
           names=["cntk.io.CBFDeserializer", "cntk.io.CTFDeserializer", "cntk.io.MinibatchSource",
                  "cntk.Trainer", "cntk.learners.momentum_sgd"],
           note="a stored zero of a CBF file (as CNTK's ctf2bin.py writes one) touches its row "
                "of the row-sparse gradient (momentum carried on), as a CTF file's; a "
                "truncated (BPTT) minibatch source drops it, as CNTK 2.7's packer delivers "
                "sparse streams dense (TruncatedBpttPacker.cpp:133-137, 332-338)")
def stored_zero_readers(C, r, np):
    import base64
    with open("c.cbf", "wb") as f:
        f.write(base64.b64decode(_CBF))
    with open("steps.ctf", "w") as f:
        f.write(_STEPS_CTF)
    res = {}
    for kind in ("cbf", "ctf_truncated", "ctf_sequences"):
        seq = kind != "cbf"
        x = (C.sequence.input_variable if seq else C.input_variable)(5, is_sparse=True)
        y = (C.sequence.input_variable if seq else C.input_variable)(1)
        E = C.parameter((5, 1), init=np.arange(5, dtype=np.float32).reshape(5, 1) / 10)
        z = C.times(x, E)
        trainer = C.Trainer(z, (C.reduce_sum(z * y), None), [C.momentum_sgd(
            [E], C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9))])
        streams = C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=5, is_sparse=True),
                                  y=C.io.StreamDef(field="y", shape=1))
        if kind == "cbf":
            source = C.io.MinibatchSource(C.io.CBFDeserializer("c.cbf", streams),
                                          randomize=False, max_sweeps=1)
        else:
            source = C.io.MinibatchSource(
                C.io.CTFDeserializer("steps.ctf", streams), randomize=False, max_sweeps=1,
                **({"truncation_length": 1} if kind == "ctf_truncated" else {}))
        for step in range(4):
            mb = source.next_minibatch(1)
            if not mb:
                break
            trainer.train_minibatch({x: mb[source.streams.x], y: mb[source.streams.y]})
            res["%s_%d" % (kind, step)] = E.value
    r.touch("cntk.io.MinibatchSource.next_minibatch", "cntk.Parameter.value")
    return res
