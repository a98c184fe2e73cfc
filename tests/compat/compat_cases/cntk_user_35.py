"""A CNTK 2.7 user's own programs (round 35): each combines several features the way a user's
script does (a slot tagger over a three-stream CTF file tested by an Evaluator, a language
model over sparse CTF input with ``sequence.where``/``gather``, a trainer checkpoint carrying
its reader's position, highway blocks made by ``BlockFunction`` and ``as_block``, a combine of
several sequence outputs evaluated on sequences of different lengths, a model saved, loaded by
``Function.load`` and fine-tuned, a softmax over axis 0 with an epoch-sized schedule, a
two-input user function inside a sequence model, TensorBoard and log files of a trainer and
an Evaluator) and is run unchanged on CNTK 2.7 and on ``stadyn.compat.cntk``."""

import contextlib
import io
import os
import re

import numpy as np

from compat_harness import cntk_case, event_scalars
from compat_outcomes import outcome

_TIMING = re.compile(r"\d+\.\d+s \( *\d+\.\d+ samples/s\)")
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


def _printed(text):
    """Printed lines, timings masked, their decimals apart (compared to the harness's
    tolerance: the last printed digit may round either way)."""
    lines = [_TIMING.sub("<time>", ln) for ln in text.splitlines() if ln.strip()]
    return [[_NUMBER.sub("#", ln), [float(v) for v in _NUMBER.findall(ln)]] for ln in lines]


def _ctf_sequences(path, sequences):
    """``sequences``: per sequence, a list of ``{field: text}`` rows (one per time step)."""
    with open(path, "w") as f:
        for s, rows in enumerate(sequences):
            for fields in rows:
                f.write("%d %s\n" % (s, " ".join("|%s %s" % (k, fields[k])
                                                 for k in sorted(fields))))


def _set_in_order(r, params):
    """Seeded values by position as well as name (layers that share names and sizes): the
    listing, in the framework's order, is compared too."""
    listing = []
    for i, p in enumerate(params):
        p.value = r.param_value("%s#%d" % (p.name, i), p.shape)
        listing.append([p.name, list(p.shape)])
    return listing


# -- 1. a slot tagger over a three-stream CTF file, tested by an Evaluator ----------------------

def _tagger_data(r, count, V, K):
    seqs = []
    for s in range(count):
        n = 2 + (s * 3) % 4
        words = r.randint(0, V, (n,))
        rows = []
        for t in range(n):
            row = {"S0": "%d:1" % words[t], "S2": "%d:1" % ((words[t] + t) % K)}
            if t == 0:
                row["S1"] = "%d:1" % (s % 2)
            rows.append(row)
        seqs.append(rows)
    return seqs


@cntk_case(names=["cntk.io.CTFDeserializer", "cntk.io.StreamDefs", "cntk.layers.Embedding",
                  "cntk.layers.Recurrence", "cntk.layers.LSTM", "cntk.eval.Evaluator",
                  "cntk.Evaluator.test_minibatch", "cntk.Evaluator.summarize_test_progress",
                  "cntk.io.MinibatchSource.next_minibatch"],
           note="CNTK 202's slot tagger: a CTF file with a sparse query, a sparse intent on the "
                "first line only (not read) and a sparse slot label per word; Embedding, a "
                "forward and a backward LSTM Recurrence spliced, Dense per word; adam "
                "refused by CNTK 2.7's CPU build (no AdamUpdate for the Embedding's sparse "
                "gradient, Matrix.cpp:1859), sgd over a sweep; a test file read to its end "
                "(max_sweeps=1) by an Evaluator with a ProgressPrinter; per-minibatch errors, the "
                "printed summary",
           known={"adam on sparse": "CNTK 2.7's CPU build (the reference) refuses adam on the "
                  "Embedding's row-sparse gradient; its GPU build runs it (_adam4BlockSparseCol, "
                  "the dense rule) and so does Stadyn (tests/learners/test_row_sparse.py, "
                  "docs/learners.md)"})
def user35_slot_tagger_ctf(C, r):
    r.touch("cntk.Evaluator.test_minibatch", "cntk.Evaluator.summarize_test_progress",
            "cntk.io.MinibatchSource.next_minibatch")
    V, K = 7, 4
    res = {}
    with r.tempdir() as folder:
        train, test = os.path.join(folder, "train.ctf"), os.path.join(folder, "test.ctf")
        _ctf_sequences(train, _tagger_data(r, 8, V, K))
        _ctf_sequences(test, _tagger_data(r, 5, V, K))

        def reader(path, sweeps):
            return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
                query=C.io.StreamDef(field="S0", shape=V, is_sparse=True),
                intent=C.io.StreamDef(field="S1", shape=2, is_sparse=True),
                slots=C.io.StreamDef(field="S2", shape=K, is_sparse=True))),
                randomize=False, max_sweeps=sweeps)
        x = C.sequence.input_variable(V, is_sparse=True, name="query")
        y = C.sequence.input_variable(K, is_sparse=True, name="slots")
        emb = C.layers.Embedding(3, name="emb")(x)
        fwd = C.layers.Recurrence(C.layers.LSTM(3), name="fwd")(emb)
        bwd = C.layers.Recurrence(C.layers.LSTM(2), go_backwards=True, name="bwd")(emb)
        z = C.layers.Dense(K, name="tag")(C.splice(fwd, bwd))
        res["parameters"] = r.set_params(z.parameters)
        loss = C.cross_entropy_with_softmax(z, y)
        err = C.classification_error(z, y)
        trainer = C.Trainer(z, (loss, err), [C.adam(z.parameters, C.learning_parameter_schedule(
            0.02), C.momentum_schedule(0.9))])
        src = reader(train, 1)
        feed = {x: src.streams.query, y: src.streams.slots}
        res["adam on sparse"] = outcome(lambda: trainer.train_minibatch(
            src.next_minibatch(10, input_map=feed)))
        r.set_params(z.parameters)
        trainer = C.Trainer(z, (loss, err), [C.sgd(z.parameters, C.learning_parameter_schedule(
            0.1))])
        src = reader(train, 1)
        steps = []
        while True:
            mb = src.next_minibatch(10, input_map={x: src.streams.query, y: src.streams.slots})
            if not mb:
                break
            trainer.train_minibatch(mb)
            steps.append([trainer.previous_minibatch_loss_average,
                          trainer.previous_minibatch_sample_count])
        res["train"] = steps
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            ev = C.Evaluator(err, [C.logging.ProgressPrinter(tag="Evaluation")])
            tsrc = reader(test, 1)
            errors = []
            while True:
                mb = tsrc.next_minibatch(8, input_map={x: tsrc.streams.query,
                                                       y: tsrc.streams.slots})
                if not mb:
                    break
                errors.append([ev.test_minibatch(mb), mb[y].num_samples,
                               mb[y].num_sequences])
            ev.summarize_test_progress()
        res["test"] = errors
        res["printed"] = _printed(out.getvalue())
    return res


# -- 2. a language model over sparse CTF input, positions found by sequence.where ---------------

@cntk_case(names=["cntk.sequence.where", "cntk.sequence.gather", "cntk.sequence.reduce_sum",
                  "cntk.layers.GRU", "cntk.ops.log_softmax",
                  "cntk.ops.argmax", "cntk.ops.times", "cntk.learners.adagrad"],
           note="a next-word model (Embedding, GRU Recurrence, Dense) over a CTF file of "
                "sparse words and sparse next words, trained by adagrad; the log-likelihood "
                "per sequence by sequence.reduce_sum of the negated per-word cross entropy (an "
                "element_times of log_softmax and the sparse label is refused by CNTK 2.7: "
                "'Tensor operations are currently not supported for sparse matrices'); the "
                "positions of word 2 by sequence.where of the input times a one-hot column (CNTK "
                "2.7 "
                "refuses argmax of the sparse input) and the predictions there by "
                "sequence.gather, for three sequences of different lengths")
def user35_language_model_where_gather(C, r):
    V = 5
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "lm.ctf")
        seqs = []
        for s in range(6):
            words = list(r.randint(0, V, (3 + s % 3,)))
            seqs.append([{"W": "%d:1" % words[t], "N": "%d:1" % words[t + 1]}
                         for t in range(len(words) - 1)])
        _ctf_sequences(path, seqs)
        src = C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
            words=C.io.StreamDef(field="W", shape=V, is_sparse=True),
            nexts=C.io.StreamDef(field="N", shape=V, is_sparse=True))), randomize=False)
        x = C.sequence.input_variable(V, is_sparse=True, name="w")
        y = C.sequence.input_variable(V, is_sparse=True, name="n")
        z = C.layers.Sequential([C.layers.Embedding(4, name="emb"),
                                 C.layers.Recurrence(C.layers.GRU(4), name="gru"),
                                 C.layers.Dense(V, name="out")])(x)
        res["parameters"] = r.set_params(z.parameters)
        trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y),
                                C.classification_error(z, y)),
                            [C.adagrad(z.parameters, C.learning_parameter_schedule(0.05))])
        losses = []
        for _ in range(4):
            mb = src.next_minibatch(7, input_map={x: src.streams.words, y: src.streams.nexts})
            trainer.train_minibatch(mb)
            losses.append([trainer.previous_minibatch_loss_average,
                           trainer.previous_minibatch_sample_count])
        res["losses"] = losses
    res["log_softmax times sparse"] = outcome(
        lambda: (C.log_softmax(z) * y).eval({x: C.Value.one_hot([[1, 2]], V),
                                             y: C.Value.one_hot([[2, 0]], V)}))
    loglik = C.sequence.reduce_sum(-C.cross_entropy_with_softmax(z, y))
    res["argmax of sparse"] = outcome(lambda: C.argmax(x).eval({x: C.Value.one_hot([[1, 2]], V)}))
    is_two = C.times(x, C.constant(np.eye(V, dtype=np.float32)[:, 2:3]))
    where = C.sequence.where(is_two)
    picked = C.sequence.gather(C.argmax(z), is_two)
    res["where of none"] = outcome(lambda: where.eval({x: C.Value.one_hot([[2], [3, 1]], V)}))
    words = [[0, 2, 1, 2], [2], [2, 4, 4]]
    nexts = [[2, 1, 2, 0], [1], [4, 4, 3]]
    feed = {x: C.Value.one_hot(words, V), y: C.Value.one_hot(nexts, V)}
    res["loglik"] = loglik.eval(feed)
    res["where"] = [np.asarray(v).tolist() for v in where.eval({x: C.Value.one_hot(words, V)})]
    res["picked"] = [np.asarray(v).tolist() for v in picked.eval({x: C.Value.one_hot(words, V)})]
    return res


# -- 3. a trainer checkpoint that carries its reader's position --------------------------------

def _ckpt_model(C, r):
    x = C.input_variable(3, name="x")
    y = C.input_variable(2, name="y")
    z = C.layers.Dense(2, name="out")(C.layers.Dense(4, activation=C.tanh, name="h")(x))
    r.set_params(z.parameters)
    lr = C.learning_parameter_schedule([0.2, 0.1, 0.05], epoch_size=8)
    learner = C.momentum_sgd(z.parameters, lr, C.momentum_schedule([0.5, 0.9], epoch_size=12))
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [learner])
    return x, y, z, trainer, learner


@cntk_case(names=["cntk.Trainer.save_checkpoint", "cntk.Trainer.restore_from_checkpoint",
                  "cntk.io.MinibatchSource.get_checkpoint_state",
                  "cntk.io.MinibatchSource.restore_from_checkpoint",
                  "cntk.learners.learning_parameter_schedule",
                  "cntk.learners.momentum_schedule", "cntk.learners.Learner.learning_rate"],
           note="a loop over a CTF file (minibatches of 5, schedules over epochs of 8 and 12 "
                "samples) that saves the trainer's checkpoint with the reader's state as "
                "external_state after 3 minibatches; a new trainer and a new reader restored "
                "from it go on for 3 more: losses, learning rates, sample counts and "
                "parameters equal one unbroken run of 6")
def user35_checkpoint_with_reader_state(C, r):
    r.touch("cntk.Trainer.save_checkpoint", "cntk.Trainer.restore_from_checkpoint",
            "cntk.io.MinibatchSource.get_checkpoint_state",
            "cntk.io.MinibatchSource.restore_from_checkpoint",
            "cntk.learners.Learner.learning_rate")
    X, Y = r.randn(20, 3), r.onehot(20, 2)
    res = {}
    with r.tempdir() as folder:
        ctf = os.path.join(folder, "data.ctf")
        _ctf_sequences(ctf, [[{"x": " ".join("%g" % v for v in X[i]),
                               "y": " ".join("%g" % v for v in Y[i])}] for i in range(20)])

        def reader():
            return C.io.MinibatchSource(C.io.CTFDeserializer(ctf, C.io.StreamDefs(
                f=C.io.StreamDef(field="x", shape=3), l=C.io.StreamDef(field="y", shape=2))),
                randomize=False)

        def run(trainer, learner, src, x, y, n, log):
            for _ in range(n):
                mb = src.next_minibatch(5, input_map={x: src.streams.f, y: src.streams.l})
                trainer.train_minibatch(mb)
                log.append([trainer.previous_minibatch_loss_average, learner.learning_rate(),
                            trainer.total_number_of_samples_seen])
        unbroken = []
        x, y, z, trainer, learner = _ckpt_model(C, r)
        run(trainer, learner, reader(), x, y, 6, unbroken)
        res["unbroken"] = unbroken
        res["unbroken params"] = r.param_values(z.parameters)
        resumed = []
        x, y, z, trainer, learner = _ckpt_model(C, r)
        src = reader()
        run(trainer, learner, src, x, y, 3, resumed)
        path = os.path.join(folder, "model.ckp")
        trainer.save_checkpoint(path, {"reader": src.get_checkpoint_state(), "epoch": 3})
        x, y, z, trainer, learner = _ckpt_model(C, r)
        state = trainer.restore_from_checkpoint(path)
        res["external keys"] = sorted(state)
        res["epoch"] = state["epoch"]
        src = reader()
        src.restore_from_checkpoint(state["reader"])
        res["restored"] = [trainer.total_number_of_samples_seen, learner.learning_rate()]
        run(trainer, learner, src, x, y, 3, resumed)
        res["resumed"] = resumed
        res["resumed params"] = r.param_values(z.parameters)
    return res


# -- 4. highway blocks made by BlockFunction and as_block --------------------------------------

@cntk_case(names=["cntk.ops.functions.BlockFunction", "cntk.ops.as_block",
                  "cntk.ops.placeholder", "cntk.Function.block_root",
                  "cntk.Function.block_arguments_mapping", "cntk.Function.is_block",
                  "cntk.layers.Stabilizer", "cntk.layers.For"],
           note="two highway layers, each a BlockFunction('Highway', name) of a transform gate "
                "(sigmoid Dense) and a relu Dense, after a Stabilizer; the classifier wrapped "
                "by hand with as_block over a placeholder; the blocks found by name (op name, "
                "block root's op, the argument mapping's count); trained by sgd; saved and "
                "loaded: the blocks and the outputs survive")
def user35_highway_blocks(C, r):
    r.touch("cntk.Function.block_root", "cntk.Function.block_arguments_mapping",
            "cntk.Function.is_block")

    def highway(i):
        gate = C.layers.Dense(4, activation=C.sigmoid, name="gate%d" % i)
        body = C.layers.Dense(4, activation=C.relu, name="body%d" % i)

        @C.BlockFunction("Highway", "hw%d" % i)
        def layer(v):
            t = gate(v)
            return t * body(v) + (1 - t) * v
        return layer
    x = C.input_variable(4, name="x")
    h = C.layers.Sequential([C.layers.Stabilizer(name="stab"), C.layers.For(range(2), highway)])(x)
    p = C.placeholder(shape=(4,), name="p")
    inner = C.layers.Dense(3, name="cls")(p)
    z = C.as_block(inner, [(p, h)], "Classifier", "classifier")
    res = {"parameters": _set_in_order(r, z.parameters)}
    found = []
    for name in ("hw0", "hw1", "classifier"):
        b = z.find_by_name(name)
        found.append([b.name, b.op_name, b.is_block, b.block_root.op_name,
                      len(b.block_arguments_mapping), len(b.parameters)])
    res["found"] = found
    X, Y = r.randn(6, 4), r.onehot(6, 3)
    res["before"] = z.eval({x: X})
    y = C.input_variable(3, name="y")
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.3))])
    for i in range(0, 6, 2):
        trainer.train_minibatch({x: X[i:i + 2], y: Y[i:i + 2]})
    res["after"] = z.eval({x: X})
    with r.tempdir() as folder:
        path = os.path.join(folder, "hw.model")
        z.save(path)
        m = C.load_model(path)
        res["loaded"] = m.eval({m.arguments[0]: X})
        res["loaded blocks"] = sorted([f.name, f.op_name] for f in
                                      C.logging.graph.depth_first_search(
                                          m, lambda f: getattr(f, "is_block", False)))
    return res


# -- 5. a combine of several sequence outputs, evaluated on sequences of different lengths -----

@cntk_case(names=["cntk.ops.combine", "cntk.sequence.last", "cntk.sequence.first",
                  "cntk.sequence.reduce_max", "cntk.Function.find_by_name",
                  "cntk.Function.eval", "cntk.Function.outputs", "cntk.layers.RNNStep"],
           note="a sequence encoder (RNNStep Recurrence) whose per-step states, last state, "
                "first state and maximum over time are combined into one Function; eval on a "
                "dict of three sequences of lengths 3, 1 and 4 returns a dict by output; eval "
                "of a chosen subset of outputs; the Recurrence found by name (a block inside "
                "the graph) refuses an eval fed with the model's input; "
                "the outputs' names, shapes and dynamic axes")
def user35_combine_outputs_sequences(C, r):
    r.touch("cntk.Function.find_by_name", "cntk.Function.eval", "cntk.Function.outputs")
    x = C.sequence.input_variable(3, name="x")
    states = C.layers.Recurrence(C.layers.RNNStep(4, activation=C.tanh), name="rnn")(x)
    proj = C.layers.Dense(2, name="proj")(states)
    last = C.sequence.last(proj, name="last")
    first = C.sequence.first(states, name="first")
    peak = C.sequence.reduce_max(proj, name="peak")
    both = C.combine([proj, last, first, peak], name="all")
    res = {"parameters": r.set_params(both.parameters)}
    res["outputs"] = [[o.name, list(o.shape), len(o.dynamic_axes)] for o in both.outputs]
    seqs = [r.randn(3, 3), r.randn(1, 3), r.randn(4, 3)]
    out = both.eval({x: seqs})
    res["by output"] = [[o.name, [np.asarray(v) for v in out[o]] if o.name == "" or
                         len(o.dynamic_axes) > 1 else np.asarray(out[o])]
                        for o in both.outputs]
    pair = both.eval({x: seqs}, outputs=[last.output, peak.output])
    res["subset"] = [np.asarray(pair[last.output]), np.asarray(pair[peak.output])]
    found = both.find_by_name("rnn")
    res["found"] = [found.name, found.is_block, len(found.arguments)]
    res["found eval"] = outcome(lambda: [np.asarray(v) for v in found.eval({x: seqs[:2]})])
    return res


# -- 6. a model saved, loaded by Function.load and fine-tuned ----------------------------------

@cntk_case(names=["cntk.Function.load", "cntk.Function.save",
                  "cntk.Function.find_all_with_name", "cntk.learners.adam",
                  "cntk.Function.clone", "cntk.CloneMethod"],
           note="a classifier trained by sgd and saved; Function.load (the static method) "
                "reads it; its own parameters, found by find_all_with_name, are fine-tuned by "
                "adam on new data while a CloneMethod.clone copy of the loaded model keeps the "
                "loaded values; the original model is untouched by the fine-tuning")
def user35_load_and_fine_tune(C, r):
    r.touch("cntk.Function.load", "cntk.Function.save", "cntk.Function.find_all_with_name",
            "cntk.Function.clone")
    x = C.input_variable(3, name="features")
    z = C.layers.Sequential([C.layers.Dense(5, activation=C.relu, name="h"),
                             C.layers.Dense(2, name="o")])(x)
    res = {"parameters": r.set_params(z.parameters)}
    y = C.input_variable(2, name="labels")
    X, Y = r.randn(8, 3), r.onehot(8, 2)
    t = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                  [C.sgd(z.parameters, C.learning_parameter_schedule(0.2))])
    t.train_minibatch({x: X, y: Y})
    with r.tempdir() as folder:
        path = os.path.join(folder, "base.model")
        z.save(path)
        m = C.ops.functions.Function.load(path)
    res["loaded args"] = [[a.name, list(a.shape)] for a in m.arguments]
    res["loaded params"] = sorted([p.name, list(p.shape)] for p in m.parameters)
    copy = m.clone(C.CloneMethod.clone)
    lx = m.arguments[0]
    ly = C.input_variable(2, name="new_labels")
    tuned = [p for p in m.parameters if p in m.find_all_with_name("W")]
    res["tuned"] = sorted([p.name, list(p.shape)] for p in tuned)
    t2 = C.Trainer(m, (C.cross_entropy_with_softmax(m, ly), C.classification_error(m, ly)),
                   [C.adam(tuned, C.learning_parameter_schedule(0.05),
                           C.momentum_schedule(0.9))])
    X2, Y2 = r.randn(6, 3), r.onehot(6, 2)
    losses = []
    for i in range(0, 6, 3):
        t2.train_minibatch({lx: X2[i:i + 3], ly: Y2[i:i + 3]})
        losses.append([t2.previous_minibatch_loss_average,
                       t2.previous_minibatch_evaluation_average])
    res["losses"] = losses
    res["fine-tuned"] = m.eval({lx: X2})
    res["copy"] = copy.eval({copy.arguments[0]: X2})
    res["original"] = z.eval({x: X2})
    return res


# -- 7. a softmax over axis 0 with an epoch-sized schedule -------------------------------------

@cntk_case(names=["cntk.losses.cross_entropy_with_softmax", "cntk.metrics.classification_error",
                  "cntk.learners.learning_parameter_schedule", "cntk.learners.sgd",
                  "cntk.ops.reshape"],
           note="a model giving 3 class scores for each of 4 positions (shape (3, 4)): "
                "cross_entropy_with_softmax and classification_error over axis 0 against "
                "one-hot columns; sgd with learning_parameter_schedule([0.5, 0.25], "
                "minibatch_size=2, epoch_size=6) over minibatches of 2, 3, 4 and 5 samples: "
                "losses, errors, learning rates")
def user35_softmax_over_axis(C, r):
    x = C.input_variable(4, name="x")
    y = C.input_variable((3, 4), name="y")
    z = C.reshape(C.layers.Dense(12, name="scores")(x), (3, 4))
    res = {"parameters": r.set_params(z.parameters)}
    loss = C.cross_entropy_with_softmax(z, y, axis=0)
    err = C.classification_error(z, y, axis=0)
    res["shapes"] = [list(loss.shape), list(err.shape)]
    learner = C.sgd(z.parameters, C.learning_parameter_schedule([0.5, 0.25], minibatch_size=2,
                                                                epoch_size=6))
    trainer = C.Trainer(z, (loss, err), [learner])
    steps = []
    for n in (2, 3, 4, 5):
        X = r.randn(n, 4)
        labels = r.randint(0, 3, (n, 4))
        Y = np.zeros((n, 3, 4), np.float32)
        for i in range(n):
            Y[i, labels[i], np.arange(4)] = 1
        trainer.train_minibatch({x: X, y: Y})
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average, learner.learning_rate()])
    res["steps"] = steps
    X, labels = r.randn(2, 4), r.randint(0, 3, (2, 4))
    Y = np.zeros((2, 3, 4), np.float32)
    for i in range(2):
        Y[i, labels[i], np.arange(4)] = 1
    res["loss eval"] = loss.eval({x: X, y: Y})
    res["err eval"] = err.eval({x: X, y: Y})
    return res


# -- 8. a two-input user function inside a sequence model --------------------------------------

def _gate_class(C):
    class Gate(C.ops.functions.UserFunction):
        """a * sigmoid(b), both operands sequences."""

        def __init__(self, a, b, name="Gate"):
            super(Gate, self).__init__([a, b], name=name)

        def forward(self, arguments, outputs=None, keep_for_backward=None, device=None,
                    as_numpy=True):
            a, b = arguments        # (lists of arrays: sequences of different lengths)
            s = [1.0 / (1.0 + np.exp(-v)) for v in b]
            return (a, s), [u * v for u, v in zip(a, s)]

        def backward(self, state, root_gradients, variables):
            a, s = state
            for v in variables:
                if v == self.inputs[0]:
                    variables[v] = [g * t for g, t in zip(root_gradients, s)]
                else:
                    variables[v] = [g * u * t * (1 - t)
                                    for g, u, t in zip(root_gradients, a, s)]

        def infer_outputs(self):
            a = self.inputs[0]
            return [C.output_variable(a.shape, a.dtype, a.dynamic_axes)]
    return Gate


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.user_function",
                  "cntk.ops.output_variable", "cntk.sequence.reduce_sum", "cntk.layers.Dense"],
           note="a UserFunction of two sequence operands (a * sigmoid(b) on the lists of arrays "
                "CNTK hands a UserFunction for sequences of different lengths, gradients to "
                "both written into the variables dict as lists) over two Dense projections of "
                "a sequence, pooled by sequence.reduce_sum into a classifier trained by "
                "momentum_sgd on "
                "minibatches of sequences of different lengths; the losses, the parameters, "
                "the gated values of two sequences")
def user35_two_input_user_function(C, r):
    x = C.sequence.input_variable(3, name="x")
    y = C.input_variable(2, name="y")
    a = C.layers.Dense(4, name="a")(x)
    b = C.layers.Dense(4, name="b")(x)
    gated = C.user_function(_gate_class(C)(a, b, name="gate"))
    z = C.layers.Dense(2, name="cls")(C.sequence.reduce_sum(gated))
    res = {"parameters": _set_in_order(r, z.parameters)}
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.1),
                                        C.momentum_schedule(0.5))])
    losses = []
    for step in range(3):
        seqs = [r.randn(1 + (step + k) % 3, 3) for k in range(3)]
        trainer.train_minibatch({x: seqs, y: r.onehot(3, 2)})
        losses.append(trainer.previous_minibatch_loss_average)
    res["losses"] = losses
    res["after"] = r.param_values(z.parameters)
    res["gated"] = [np.asarray(v) for v in gated.eval({x: [r.randn(2, 3), r.randn(3, 3)]})]
    return res


# -- 9. TensorBoard and log files of a trainer and an Evaluator --------------------------------

@cntk_case(names=["cntk.logging.TensorBoardProgressWriter", "cntk.logging.ProgressPrinter",
                  "cntk.eval.Evaluator", "cntk.Trainer.summarize_training_progress",
                  "cntk.logging.TensorBoardProgressWriter.write_value",
                  "cntk.logging.TensorBoardProgressWriter.close",
                  "cntk.logging.TensorBoardProgressWriter.write"],
           note="a trainer with a ProgressPrinter (freq=2, log_to_file) and a "
                "TensorBoardProgressWriter (freq=1) over two epochs of 3 minibatches, "
                "summarize_training_progress after each; an Evaluator over both writers "
                "with summarize_test_progress; the user's own write_value (written, whatever "
                "its name) and write (nothing: CNTK's native Write is empty, "
                "CNTKLibrary.h:6161, so no 'Learning rate per minibatch' either); the event "
                "file's scalars and the log file's lines (Stadyn dropped the user's scalars "
                "and wrote the trainer's learning rate)")
def user35_tensorboard_and_log(C, r):
    r.touch("cntk.Trainer.summarize_training_progress",
            "cntk.logging.TensorBoardProgressWriter.write_value",
            "cntk.logging.TensorBoardProgressWriter.close",
            "cntk.logging.TensorBoardProgressWriter.write")
    x = C.input_variable(3, name="x")
    y = C.input_variable(2, name="y")
    z = C.layers.Dense(2, name="o")(C.layers.Dense(3, activation=C.relu, name="h")(x))
    res = {"parameters": r.set_params(z.parameters)}
    with r.tempdir() as folder:
        log = os.path.join(folder, "train.log")
        printer = C.logging.ProgressPrinter(freq=2, tag="Training", log_to_file=log,
                                            num_epochs=2)
        board = C.logging.TensorBoardProgressWriter(freq=1, log_dir=os.path.join(folder, "tb"))
        trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y),
                                C.classification_error(z, y)),
                            [C.sgd(z.parameters, C.learning_parameter_schedule(0.3))],
                            [printer, board])
        for epoch in range(2):
            for step in range(3):
                n = 2 + step
                trainer.train_minibatch({x: r.randn(n, 3), y: r.onehot(n, 2)})
            trainer.summarize_training_progress()
            board.write_value("custom/epoch", float(epoch) * 1.5, epoch)
            board.write("custom/written", 2.0)
        ev = C.eval.Evaluator(C.classification_error(z, y), [printer, board])
        res["test"] = [ev.test_minibatch({x: r.randn(4, 3), y: r.onehot(4, 2)}),
                       ev.test_minibatch({x: r.randn(3, 3), y: r.onehot(3, 2)})]
        ev.summarize_test_progress()
        board.close()
        with open(log) as f:
            res["log"] = _printed(f.read().replace(folder, "<folder>"))
        res["scalars"] = event_scalars(os.path.join(folder, "tb"))
    return res


# -- 10. a sequence tagger's outputs read back through Value objects and their masks ------------

@cntk_case(names=["cntk.Value.mask", "cntk.Value.create", "cntk.Value.one_hot",
                  "cntk.Value.as_sequences", "cntk.Value.asarray", "cntk.Function.eval",
                  "cntk.Function.forward", "cntk.sequence.past_value"],
           note="a per-step scorer (Dense over a step and its past_value) evaluated with "
                "as_numpy=False on sequences of lengths 3, 1 and 2: a Value, padded (asarray), "
                "as_sequences and its mask (2 a sequence's first step, 1 a step, 0 padding), "
                "with which the user averages the scores of the real steps; the masks of "
                "Value.create (with seq_starts) and Value.one_hot; no mask (AttributeError) "
                "where every sequence is full (Stadyn's eval gave a list and its Values had "
                "no mask)")
def user35_values_and_masks(C, r):
    r.touch("cntk.Value.mask", "cntk.Value.create", "cntk.Value.one_hot",
            "cntk.Value.as_sequences", "cntk.Value.asarray", "cntk.Function.eval",
            "cntk.Function.forward")
    x = C.sequence.input_variable(2, name="x")
    z = C.layers.Dense(3, name="score")(C.splice(x, C.sequence.past_value(x)))
    res = {"parameters": r.set_params(z.parameters)}
    seqs = [r.randn(3, 2), r.randn(1, 2), r.randn(2, 2)]
    v = z.eval({x: seqs}, as_numpy=False)
    res["shape"] = list(v.shape)
    res["padded"] = v.asarray()
    res["sequences"] = v.as_sequences(z.output)
    mask = v.mask
    res["mask"] = [str(mask.dtype), mask.tolist()]
    padded = v.asarray()
    res["masked mean"] = (padded * (mask > 0)[..., None]).sum(axis=1) / \
        (mask > 0).sum(axis=1, keepdims=True)
    _, outs = z.forward({x: seqs}, as_numpy=False)
    res["forward mask"] = outs[z.output].mask.tolist()
    made = C.Value.create(x, seqs, seq_starts=[True, False, True])
    res["create"] = [list(made.shape), made.mask.tolist()]
    res["one_hot"] = C.Value.one_hot([[0, 2], [1, 1, 2], [2]], 3).mask.tolist()
    full = z.eval({x: [r.randn(2, 2), r.randn(2, 2)]}, as_numpy=False)
    res["full"] = [list(full.shape), outcome(lambda: full.mask.tolist())]
    res["created full"] = outcome(lambda: C.Value.create(x, seqs[:1]).mask.tolist())
    return res


# -- 11. sequences read from a CTF file by hand, their lengths from the minibatch's mask --------

@cntk_case(names=["cntk.io.MinibatchData.mask", "cntk.io.MinibatchData.as_sequences",
                  "cntk.io.MinibatchData.num_sequences", "cntk.io.MinibatchData.end_of_sweep",
                  "cntk.io.MinibatchData.data", "cntk.sequence.reduce_max",
                  "cntk.layers.Embedding"],
           note="a CTF file of weighted sparse words (3:0.5, two words on a line), a label on "
                "a sequence's first line and a |# comment; minibatches of 4 samples over two "
                "sweeps: counts, end_of_sweep, the words' mask (int8: 2 a first step, 1 a "
                "step, 0 padding; the labels' and full minibatches' have none: "
                "AttributeError), lengths counted from it; a max-pooled Embedding classifier "
                "trained on them by sgd (Stadyn's MinibatchData.mask was a bool array, None "
                "for the labels)")
def user35_ctf_masks_by_hand(C, r):
    r.touch("cntk.io.MinibatchData.mask", "cntk.io.MinibatchData.as_sequences",
            "cntk.io.MinibatchData.num_sequences", "cntk.io.MinibatchData.end_of_sweep",
            "cntk.io.MinibatchData.data")
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "words.ctf")
        with open(path, "w") as f:
            f.write("0 |w 1:1 |l 0 1 |# first sequence\n0 |w 3:0.5\n0 |w 2:1\n"
                    "1 |w 0:1 |l 1 0\n2 |w 4:1 3:2 |l 1 0\n2 |w 1:1\n")
        src = C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
            words=C.io.StreamDef(field="w", shape=5, is_sparse=True),
            label=C.io.StreamDef(field="l", shape=2))), randomize=False, max_sweeps=2)
        x = C.sequence.input_variable(5, is_sparse=True, name="w")
        y = C.input_variable(2, name="l")
        z = C.layers.Dense(2, name="cls")(C.sequence.reduce_max(
            C.layers.Embedding(3, name="emb")(x)))
        res["parameters"] = r.set_params(z.parameters)
        trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y),
                                C.classification_error(z, y)),
                            [C.sgd(z.parameters, C.learning_parameter_schedule(0.5))])
        batches = []
        while True:
            mb = src.next_minibatch(4, input_map={x: src.streams.words, y: src.streams.label})
            if not mb:
                break
            words, label = mb[x], mb[y]
            mask = outcome(lambda: words.mask.tolist())
            lengths = outcome(lambda: (words.mask > 0).sum(axis=1).tolist())
            batches.append([words.num_samples, words.num_sequences, words.end_of_sweep, mask,
                            lengths, outcome(lambda: label.mask.tolist()),
                            [np.asarray(s.todense() if hasattr(s, "todense") else s).tolist()
                             for s in words.as_sequences(x)]])
            trainer.train_minibatch(mb)
            batches[-1].append(trainer.previous_minibatch_loss_average)
        res["batches"] = batches
        res["after"] = r.param_values(z.parameters)
    return res


# -- 12. a GAN's discriminator shared by clone, a frozen target network -------------------------

@cntk_case(names=["cntk.Function.clone", "cntk.CloneMethod", "cntk.ops.stop_gradient",
                  "cntk.learners.adam", "cntk.learners.learning_rate_schedule",
                  "cntk.learners.UnitType", "cntk.Function.__getattr__"],
           note="CNTK 206's GAN: a discriminator cloned with method='share' onto the "
                "generator's output, the two trained in turn by adam, each on its own loss "
                "(a Trainer of a loss and no metric); CNTK 203's frozen target network "
                "(CloneMethod.freeze) giving the targets of a Q-learning loss, synced by "
                "setting its constants from the trained parameters; the deprecated "
                "learning_rate_schedule(UnitType.sample); layers reached as attributes "
                "(model.hidden.W)")
def user35_gan_and_target_network(C, r):
    r.touch("cntk.Function.clone", "cntk.Function.__getattr__")
    z = C.input_variable(2, name="z")
    xr = C.input_variable(3, name="xr")
    G = C.layers.Sequential([C.layers.Dense(4, activation=C.relu, name="g1"),
                             C.layers.Dense(3, activation=C.tanh, name="g2")])(z)
    Dr = C.layers.Sequential([C.layers.Dense(5, activation=C.relu, name="d1"),
                              C.layers.Dense(1, activation=C.sigmoid, name="d2")])(xr)
    Df = Dr.clone(method="share", substitutions={xr: G.output})
    res = {"parameters": r.set_params(list(G.parameters) + list(Dr.parameters))}
    res["shared"] = [len(Df.parameters), sorted(a.name for a in Df.arguments),
                     list(Dr.d1.W.shape), list(G.g2.b.shape)]
    g_loss = 1.0 - C.log(Df)
    d_loss = -(C.log(Dr) + C.log(1.0 - Df))
    g_tr = C.Trainer(G, (g_loss, None), C.adam(G.parameters, C.learning_parameter_schedule(
        0.02), C.momentum_schedule(0.5)))
    d_tr = C.Trainer(Dr, (d_loss, None), C.adam(Dr.parameters, C.learning_parameter_schedule(
        0.02), C.momentum_schedule(0.5)))
    losses = []
    for _ in range(3):
        Z, X = r.randn(4, 2), r.randn(4, 3)
        d_tr.train_minibatch({xr: X, z: Z})
        g_tr.train_minibatch({z: Z})
        losses.append([d_tr.previous_minibatch_loss_average,
                       g_tr.previous_minibatch_loss_average])
    res["gan losses"] = losses
    res["generated"] = G.eval({z: r.randn(2, 2)})
    s = C.input_variable(4, name="s")
    a = C.input_variable(2, name="a")
    t = C.input_variable(1, name="t")
    q = C.layers.Sequential([C.layers.Dense(6, activation=C.relu, name="hidden"),
                             C.layers.Dense(2, name="q")])(s)
    res["q parameters"] = r.set_params(q.parameters)
    target = q.clone(C.CloneMethod.freeze)
    loss = C.squared_error(C.reduce_sum(q * a, axis=0), C.stop_gradient(t))
    lr = C.learning_rate_schedule(0.01, C.UnitType.sample)
    tr = C.Trainer(q, loss, C.sgd(q.parameters, lr))
    S, A = r.randn(6, 4), r.onehot(6, 2)
    steps = []
    for _ in range(3):
        nxt = target.eval({target.arguments[0]: S})
        T = (0.5 + 0.9 * nxt.max(axis=1, keepdims=True)).astype(np.float32)
        tr.train_minibatch({s: S, a: A, t: T})
        steps.append(tr.previous_minibatch_loss_average)
    res["q losses"] = steps
    res["target"] = target.eval({target.arguments[0]: S[:2]})
    for p, c in zip(q.parameters, target.constants):
        c.value = p.value
    res["synced"] = [target.eval({target.arguments[0]: S[:2]}), q.eval({s: S[:2]})]
    res["attribute"] = [q.hidden.W.name, list(q.hidden.W.shape), list(q.q.b.shape)]
    return res
