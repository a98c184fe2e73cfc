"""``cntk.Trainer`` over sequences: what the Trainer counts as a minibatch's samples (the loss's
samples, as CNTK 2.7 counts them: sequences for a loss per sequence, steps for a loss per
step, whatever else the inputs are), the averages it reports and prints
(``ProgressPrinter``, ``TrainingSummaryProgressCallback``), and the parameters its learners
reach with that count (a per-minibatch rate divides the summed gradient by it, a rate for a
reference ``minibatch_size`` scales with it, a per-sample momentum is raised to its power).

Each model is an LSTM over ragged sequences (minibatches of 3, 2 and 4 sequences of 1 to 5
steps): a classifier (``sequence.last``, a label per sequence), a tagger (a label per step), a
tagger whose loss is ``sequence.reduce_sum`` of the per-step losses (a loss per sequence over
sequence labels), one whose metric is over each sequence's last step, a label per sequence
broadcast to every step (a loss per step beside a plain input), a tagger that also reads a
plain vector per sequence, and a loss per sequence over the one sequence input (no label).
Then minibatches of sequences from a CTF reader (``minibatch_size_in_samples``)."""

import contextlib
import io
import os
import re


from compat_harness import cntk_case

_TIMING = re.compile(r"\d+\.\d+s \( *\d+\.\d+ samples/s\)")
_BATCHES = ((3, 1, 4), (2, 5), (1, 2, 3, 1))
KINDS = ("classifier", "tagger", "reduce_sum", "last_metric", "broadcast_label", "conditioned",
         "unlabelled")
_PER_SEQUENCE_LABEL = ("classifier", "broadcast_label")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _printed(text):
    """Printed lines with the timings masked, each as ``[text with numbers as #, numbers]`` (the
    numbers compared with the case's tolerance: the last printed digit may round apart)."""
    return [[_NUMBER.sub("#", ln), [float(v) for v in _NUMBER.findall(ln)]]
            for ln in (_TIMING.sub("<time>", ln) for ln in text.splitlines()) if ln.strip()]


def _model(C, r, kind):
    """``(inputs, z, loss, metric)`` for one of ``KINDS`` (``inputs``: the sequence input
    ``x``, then the label and the conditioning vector where the model has them); parameters
    from their names."""
    L = C.layers
    x = C.sequence.input_variable(2)
    inputs = [x]
    h = L.Recurrence(L.LSTM(4))(x)
    if kind == "unlabelled":
        z = L.Dense(2)(h)
        loss = C.sequence.reduce_sum(C.squared_error(z, x))
        r.set_params(z.parameters)
        return inputs, z, loss, C.squared_error(z, x)
    label = C.input_variable(3) if kind in _PER_SEQUENCE_LABEL else \
        C.sequence.input_variable(3)
    inputs.append(label)
    if kind == "classifier":
        h = C.sequence.last(h)
    elif kind == "conditioned":
        cond = C.input_variable(2)
        inputs.append(cond)
        h = h + C.sequence.broadcast_as(L.Dense(4)(cond), h)
    z = L.Dense(3)(h)
    target = C.sequence.broadcast_as(label, z) if kind == "broadcast_label" else label
    loss = C.cross_entropy_with_softmax(z, target)
    metric = C.classification_error(z, target)
    if kind == "reduce_sum":
        loss = C.sequence.reduce_sum(loss)
    elif kind == "last_metric":
        metric = C.classification_error(C.sequence.last(z), C.sequence.last(label))
    r.set_params(z.parameters)
    return inputs, z, loss, metric


def _data(r, kind, inputs, lengths):
    """A minibatch for ``inputs`` of sequences of ``lengths``."""
    feed = {inputs[0]: [r.randn(n, 2) for n in lengths]}
    if len(inputs) > 1:
        feed[inputs[1]] = r.onehot(len(lengths), 3) if kind in _PER_SEQUENCE_LABEL else \
            [r.onehot(n, 3) for n in lengths]
    if len(inputs) > 2:
        feed[inputs[2]] = r.randn(len(lengths), 2)
    return feed


_LEARNERS = {
    "sgd per sample": lambda C, p: C.learners.sgd(
        p, C.learning_parameter_schedule_per_sample(0.1)),
    "sgd per minibatch": lambda C, p: C.learners.sgd(p, C.learning_parameter_schedule(0.5)),
    "sgd minibatch_size 4": lambda C, p: C.learners.sgd(
        p, C.learning_parameter_schedule(0.4, minibatch_size=4)),
    "momentum_sgd per minibatch": lambda C, p: C.learners.momentum_sgd(
        p, C.learning_parameter_schedule(0.3), C.momentum_schedule(0.9)),
    "momentum_sgd per sample": lambda C, p: C.learners.momentum_sgd(
        p, C.learning_parameter_schedule_per_sample(0.05), C.momentum_schedule_per_sample(0.95)),
    "adam per sample": lambda C, p: C.learners.adam(
        p, C.learning_parameter_schedule_per_sample(0.02), C.momentum_schedule(0.9)),
    "adam per minibatch": lambda C, p: C.learners.adam(
        p, C.learning_parameter_schedule(0.05), C.momentum_schedule(0.9)),
}


def _train(C, r, kind):
    """For every learner: the Trainer's figures after each of three minibatches, the samples
    seen and the parameters after them; and the lines a ProgressPrinter prints and the calls
    a TrainingSummaryProgressCallback gets over two epochs (sgd per sample)."""
    res = {}
    for name in sorted(_LEARNERS):
        inputs, z, loss, metric = _model(C, r, kind)
        trainer = C.Trainer(z, (loss, metric), [_LEARNERS[name](C, z.parameters)])
        figures = []
        for lengths in _BATCHES:
            trainer.train_minibatch(_data(r, kind, inputs, lengths))
            figures.append([trainer.previous_minibatch_sample_count,
                            trainer.previous_minibatch_loss_average,
                            trainer.previous_minibatch_evaluation_average])
        res[name] = {"figures": figures, "seen": trainer.total_number_of_samples_seen}
        for key, value in r.param_values(z.parameters).items():
            res[name + " " + key] = value
    inputs, z, loss, metric = _model(C, r, kind)
    calls = []
    callback = C.logging.TrainingSummaryProgressCallback(
        8, lambda epoch, loss_, metric_, samples: calls.append([epoch, loss_, metric_, samples]))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        printer = C.logging.ProgressPrinter(freq=1, tag="Training", num_epochs=2)
        trainer = C.Trainer(z, (loss, metric), [_LEARNERS["sgd per sample"](C, z.parameters)],
                            [printer, callback])
        for _ in range(2):
            for lengths in _BATCHES:
                trainer.train_minibatch(_data(r, kind, inputs, lengths))
            trainer.summarize_training_progress()
    res["printed"] = _printed(out.getvalue())
    res["summary callback"] = calls
    r.touch("cntk.Trainer.train_minibatch", "cntk.Function.parameters",
            "cntk.Trainer.previous_minibatch_sample_count",
            "cntk.Trainer.previous_minibatch_loss_average",
            "cntk.Trainer.previous_minibatch_evaluation_average",
            "cntk.Trainer.total_number_of_samples_seen")
    return res


_NAMES = ["cntk.Trainer", "cntk.Trainer.train_minibatch", "cntk.learners.sgd",
          "cntk.learners.momentum_sgd", "cntk.learners.adam", "cntk.layers.Recurrence",
          "cntk.layers.LSTM", "cntk.logging.ProgressPrinter",
          "cntk.logging.TrainingSummaryProgressCallback",
          "cntk.Trainer.previous_minibatch_sample_count",
          "cntk.Trainer.previous_minibatch_loss_average",
          "cntk.Trainer.previous_minibatch_evaluation_average",
          "cntk.Trainer.total_number_of_samples_seen"]


def _register(kind, names, **kw):
    def fn(C, r):
        return _train(C, r, kind)
    name = "train_sequence." + kind
    fn.__name__ = name
    cntk_case(name=name, names=_NAMES + names, **kw)(fn)


_register("classifier", ["cntk.sequence.last"],
          note="a loss per sequence: the minibatch's samples are its sequences")
_register("tagger", [], note="a loss per step: the minibatch's samples are its steps")
_register("reduce_sum", ["cntk.sequence.reduce_sum"],
          note="a loss per sequence (the sum of its steps' losses) over sequence labels, the "
               "metric per step")
_register("last_metric", ["cntk.sequence.last"],
          note="a loss per step, the metric on each sequence's last step")
_register("broadcast_label", ["cntk.sequence.broadcast_as"],
          note="a label per sequence (a plain input) broadcast to every step: a loss per step, "
               "the samples are the steps")
_register("conditioned", ["cntk.sequence.broadcast_as"],
          note="a tagger whose steps also read a plain input (a vector per sequence): the "
               "samples are the loss's steps")
_register("unlabelled", ["cntk.sequence.reduce_sum", "cntk.ops.squared_error"],
          # Sums of squares near 900 printed to 2 decimals: CNTK 2.7 itself prints 916.12 on an
          # AVX2 EPYC and 916.11 on an AVX-512 Xeon; one unit of the last printed digit.
          tols={"printed": (1e-5, 0.0101)},
          note="one sequence input and a loss per sequence (the sum of the squared errors of "
               "reconstructing it): the samples are the sequences")


# -- a reader's minibatches of sequences --------------------------------------------------------
_READER_LENGTHS = (3, 1, 4, 2, 5, 2, 1, 3)


def _ctf(r, path):
    """Sequences of 2-value features ``x`` with a class ``t`` per step and ``y`` per sequence."""
    lines = []
    for s, length in enumerate(_READER_LENGTHS):
        feats, tags = r.randn(length, 2), r.randint(0, 3, (length,))
        for step in range(length):
            line = "%d |x %s |t %d:1" % (s, " ".join("%.3f" % v for v in feats[step]), tags[step])
            if step == 0:
                line += " |y %d:1" % ((s * 2) % 3)
            lines.append(line)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


@cntk_case(names=["cntk.Trainer", "cntk.Trainer.train_minibatch", "cntk.learners.sgd",
                  "cntk.layers.Recurrence", "cntk.layers.LSTM", "cntk.io.MinibatchSource",
                  "cntk.io.CTFDeserializer", "cntk.io.MinibatchSource.next_minibatch",
                  "cntk.sequence.last", "cntk.sequence.reduce_sum", "cntk.sequence.broadcast_as",
                  "cntk.Trainer.previous_minibatch_sample_count",
                  "cntk.Trainer.previous_minibatch_loss_average",
                  "cntk.Trainer.previous_minibatch_evaluation_average",
                  "cntk.Trainer.total_number_of_samples_seen"])
def train_sequence_reader(C, r):
    """Minibatches of ``minibatch_size_in_samples=7`` from a CTF reader of sequences (how
    many sequences each holds: CNTK counts the steps of a sequence's longest stream), for a
    classifier and a broadcast label (the per-sequence label), a tagger and a reduce_sum
    tagger: the streams' counts, the Trainer's figures and the parameters after one sweep (sgd
    at a per-minibatch rate: the count divides the summed gradient)."""
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "seq.ctf")
        _ctf(r, path)
        for kind in ("classifier", "tagger", "reduce_sum", "broadcast_label"):
            inputs, z, loss, metric = _model(C, r, kind)
            x, label = inputs
            trainer = C.Trainer(z, (loss, metric), [_LEARNERS["sgd per minibatch"](
                C, z.parameters)])
            src = C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
                x=C.io.StreamDef(field="x", shape=2),
                y=C.io.StreamDef(field="y", shape=3, is_sparse=True),
                t=C.io.StreamDef(field="t", shape=3, is_sparse=True))),
                randomize=False, max_sweeps=1)
            stream = src.streams.y if kind in _PER_SEQUENCE_LABEL else src.streams.t
            counts, figures = [], []
            while True:
                mb = src.next_minibatch(7, input_map={x: src.streams.x, label: stream})
                if not mb:
                    break
                counts.append([mb[x].num_sequences, mb[x].num_samples, mb[label].num_samples])
                trainer.train_minibatch(mb)
                figures.append([trainer.previous_minibatch_sample_count,
                                trainer.previous_minibatch_loss_average,
                                trainer.previous_minibatch_evaluation_average])
            res[kind] = {"stream counts": counts, "figures": figures,
                         "seen": trainer.total_number_of_samples_seen}
            for key, value in r.param_values(z.parameters).items():
                res[kind + " " + key] = value
    r.touch("cntk.Trainer.train_minibatch", "cntk.Function.parameters",
            "cntk.io.MinibatchSource.next_minibatch",
            "cntk.Trainer.previous_minibatch_sample_count",
            "cntk.Trainer.previous_minibatch_loss_average",
            "cntk.Trainer.previous_minibatch_evaluation_average",
            "cntk.Trainer.total_number_of_samples_seen")
    return res


@cntk_case(names=["cntk.train.training_session", "cntk.train.TrainingSession.train",
                  "cntk.logging.ProgressPrinter", "cntk.io.MinibatchSource",
                  "cntk.io.CTFDeserializer", "cntk.Trainer.test_minibatch",
                  "cntk.Trainer.total_number_of_samples_seen"])
def train_sequence_session(C, r):
    """``training_session`` over a CTF reader of sequences, ``max_samples=30`` and
    ``progress_frequency=12`` counted in the trainer's samples (a classifier's sequences, a
    tagger's steps): the samples seen, the lines printed (every 2nd minibatch, the summaries),
    a test minibatch and the parameters after it."""
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "seq.ctf")
        _ctf(r, path)
        for kind in ("classifier", "tagger", "reduce_sum", "broadcast_label"):
            inputs, z, loss, metric = _model(C, r, kind)
            x, label = inputs

            def source():
                return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
                    x=C.io.StreamDef(field="x", shape=2),
                    y=C.io.StreamDef(field="y", shape=3, is_sparse=True),
                    t=C.io.StreamDef(field="t", shape=3, is_sparse=True))),
                    randomize=False, max_sweeps=3)
            src = source()
            name = "y" if kind in _PER_SEQUENCE_LABEL else "t"
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                printer = C.logging.ProgressPrinter(freq=2, tag="Training")
                trainer = C.Trainer(z, (loss, metric), [_LEARNERS["sgd per minibatch"](
                    C, z.parameters)], [printer])
                C.train.training_session(
                    trainer=trainer, mb_source=src, mb_size=7,
                    model_inputs_to_streams={x: src.streams.x, label: src.streams[name]},
                    max_samples=30, progress_frequency=12).train()
            src = source()
            mb = src.next_minibatch(9, input_map={x: src.streams.x, label: src.streams[name]})
            res[kind] = {"seen": trainer.total_number_of_samples_seen,
                         "test": trainer.test_minibatch(mb)}
            res[kind + " printed"] = _printed(out.getvalue())
            for key, value in r.param_values(z.parameters).items():
                res[kind + " " + key] = value
    r.touch("cntk.train.TrainingSession.train", "cntk.Trainer.test_minibatch",
            "cntk.Trainer.total_number_of_samples_seen")
    return res
