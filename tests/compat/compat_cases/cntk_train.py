"""``cntk.Trainer`` and ``cntk.logging``: training and test minibatches, the Trainer's
counters, the text ProgressPrinter writes (to the console and to a log file, timings masked),
TensorBoard scalars, ``log_number_of_parameters``."""

import contextlib
import io
import os
import re

import numpy as np

import compat_harness as H
from compat_harness import cntk_case

_TIMING = re.compile(r"\d+\.\d+s \( *\d+\.\d+ samples/s\)")

def _lines(text, folder):
    """Printed lines with the timings and the temporary folder masked, split into (lines,
    learning-rate lines)."""
    lines = [_TIMING.sub("<time>", ln).replace(folder, "<dir>")
             for ln in text.splitlines() if ln.strip()]
    return ([ln for ln in lines if not ln.startswith("Learning rate per")],
            [ln for ln in lines if ln.startswith("Learning rate per")])


def _model(C, r):
    x = C.input_variable(4)
    y = C.input_variable(3)
    w = C.parameter((4, 3), init=r.param_value("w", (4, 3)), name="w")
    b = C.parameter((3,), init=0.1, name="b")
    z = C.times(x, w) + b
    return x, y, z, C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)


def _batches(r, sizes):
    return [(r.randn(n, 4) * 2.0, r.onehot(n, 3)) for n in sizes]


@cntk_case(names=["cntk.Trainer", "cntk.train.Trainer", "cntk.logging.ProgressPrinter",
                  "cntk.logging.log_number_of_parameters", "cntk.Trainer.train_minibatch",
                  "cntk.Trainer.test_minibatch"])
def trainer_progress(C, r):
    """Two epochs of three minibatches with two printers (every minibatch to the console;
    every 2nd to a log file, with a tag and num_epochs), then a test minibatch."""
    x, y, z, loss, metric = _model(C, r)
    with r.tempdir() as folder:
        log = os.path.join(folder, "log.txt")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            to_file = C.logging.ProgressPrinter(freq=2, tag="Training", num_epochs=2,
                                                log_to_file=log)
            to_console = C.logging.ProgressPrinter(freq=1)
            learner = C.learners.sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.1))
            trainer = C.Trainer(z, (loss, metric), [learner], [to_file, to_console])
            C.logging.log_number_of_parameters(z)
            counts = []
            for _ in range(2):
                for data, target in _batches(r, (4, 5, 6)):
                    trainer.train_minibatch({x: data, y: target})
                    counts.append([trainer.previous_minibatch_sample_count,
                                   trainer.previous_minibatch_loss_average,
                                   trainer.previous_minibatch_evaluation_average])
                trainer.summarize_training_progress()
            data, target = _batches(r, (6,))[0]
            test = trainer.test_minibatch({x: data, y: target})
            trainer.summarize_test_progress()
        with open(log) as f:
            logged = f.read()
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch")
    console, console_lr = _lines(out.getvalue(), folder)
    logged = [ln for ln in logged.splitlines() if not ln.startswith("CNTKCommand")]
    logged, logged_lr = _lines("\n".join(logged), folder)
    return {"console": console, "console lr": console_lr, "log": logged, "log lr": logged_lr,
            "counts": counts, "test": float(test),
            "seen": trainer.total_number_of_samples_seen, "w": z.parameters[0].value}


@cntk_case(names=["cntk.logging.ProgressPrinter", "cntk.logging.ProgressPrinter.update",
                  "cntk.logging.ProgressPrinter.epoch_summary"],
           note="ProgressPrinter(freq=None, first=N) prints the first N minibatches of every "
                "epoch (CNTK reads freq=None as sys.maxsize), through a Trainer and by hand; "
                "test_freq=None with test_first likewise; Stadyn's native writer printed no "
                "minibatch line for freq=None")
def progress_printer_first_without_freq(C, r):
    r.touch("cntk.logging.ProgressPrinter.update", "cntk.logging.ProgressPrinter.epoch_summary")
    x, y, z, loss, metric = _model(C, r)
    with r.tempdir() as folder:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            printer = C.logging.ProgressPrinter(freq=None, first=3, test_freq=None,
                                                test_first=2)
            trainer = C.Trainer(z, (loss, metric),
                                [C.learners.sgd(z.parameters,
                                                C.learning_parameter_schedule(0.1))], [printer])
            for sizes in ((4, 5, 6, 7, 3), (2, 5)):
                for data, target in _batches(r, sizes):
                    trainer.train_minibatch({x: data, y: target})
                trainer.summarize_training_progress()
                for data, target in _batches(r, (3, 4, 5)):
                    trainer.test_minibatch({x: data, y: target})
                trainer.summarize_test_progress()
            by_hand = C.logging.ProgressPrinter(freq=None, first=2, tag="Hand")
            for sizes in ((4, 5, 6), (7,)):
                for k, n in enumerate(sizes):
                    by_hand.update(1.0 + k, n, 0.125 * k)
                by_hand.epoch_summary(with_metric=True)
        lines, rates = _lines(out.getvalue(), folder)
    return {"lines": lines, "rates": rates}


@cntk_case(names=["cntk.Trainer", "cntk.Trainer.model", "cntk.Trainer.loss_function",
                  "cntk.Trainer.evaluation_function"])
def trainer_attributes(C, r):
    """What a Trainer exposes: its model, loss and evaluation functions, learners."""
    x, y, z, loss, metric = _model(C, r)
    learner = C.learners.sgd(z.parameters, C.learning_parameter_schedule(0.5))
    trainer = C.Trainer(z, (loss, metric), [learner])
    data, target = _batches(r, (4,))[0]
    trainer.train_minibatch({x: data, y: target})
    r.touch("cntk.Function.eval", "cntk.Function.shape", "cntk.Trainer.model",
            "cntk.Trainer.loss_function", "cntk.Trainer.evaluation_function")
    return {"model_shape": list(trainer.model.shape),
            "loss": trainer.loss_function.eval({x: data, y: target}),
            "metric": trainer.evaluation_function.eval({x: data, y: target}),
            "n_learners": len(trainer.parameter_learners),
            "seen": trainer.total_number_of_samples_seen}


@cntk_case(names=["cntk.Trainer"])
def trainer_loss_only(C, r):
    """A Trainer with a loss and no metric (``criterion`` a single Function)."""
    x, y, z, loss, _ = _model(C, r)
    learner = C.learners.sgd(z.parameters, C.learning_parameter_schedule(0.5))
    trainer = C.Trainer(z, loss, [learner])
    res = {}
    for i, (data, target) in enumerate(_batches(r, (3, 4))):
        trainer.train_minibatch({x: data, y: target})
        res["loss%d" % i] = np.float32(trainer.previous_minibatch_loss_average)
    res["w"] = z.parameters[0].value
    return res


@cntk_case(names=["cntk.Trainer"])
def trainer_tuple_valued_criterion(C, r):
    """A Trainer whose ``criterion`` is one Function with two outputs (``combine([loss,
    metric])``, as CNTK 204 builds it): the first is the loss, the second the metric."""
    x, y, z, loss, metric = _model(C, r)
    learner = C.learners.sgd(z.parameters, C.learning_parameter_schedule(0.5))
    trainer = C.Trainer(z, C.combine([loss, metric]), [learner])
    res = {"has_metric": np.float32(trainer.evaluation_function is not None)}
    for i, (data, target) in enumerate(_batches(r, (3, 4))):
        trainer.train_minibatch({x: data, y: target})
        res["loss%d" % i] = np.float32(trainer.previous_minibatch_loss_average)
        res["metric%d" % i] = np.float32(trainer.previous_minibatch_evaluation_average)
    res["w"] = z.parameters[0].value
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch"])
def trainer_train_minibatch_outputs(C, r):
    """``train_minibatch(data, outputs=[z])`` gives ``(True, {z: values})``: the outputs computed
    with the step, before the learner's update."""
    x, y, z, loss, metric = _model(C, r)
    learner = C.learners.sgd(z.parameters, C.learning_parameter_schedule(0.5))
    trainer = C.Trainer(z, (loss, metric), [learner])
    res = {}
    for i, (data, target) in enumerate(_batches(r, (3, 4))):
        result = trainer.train_minibatch({x: data, y: target}, outputs=[z.output])
        done, values = result
        res["done%d" % i] = np.float32(done)
        res["keys%d" % i] = np.float32(len(values))
        res["z%d" % i] = np.asarray(list(values.values())[0], np.float32)
    res["w"] = z.parameters[0].value
    r.touch("cntk.Trainer.train_minibatch")
    return res


_CNTK_TAGS = ("minibatch/avg_loss", "minibatch/avg_metric", "summary/avg_loss",
              "summary/avg_metric", "minibatch/test_avg_metric", "summary/test_avg_metric")


@cntk_case(names=["cntk.logging.TensorBoardProgressWriter",
                  "cntk.logging.TensorBoardProgressWriter.write_value"],
           note="the scalars in the event files: tags, steps and values")
def tensorboard(C, r):
    x, y, z, loss, metric = _model(C, r)
    with r.tempdir() as folder:
        writer = C.logging.TensorBoardProgressWriter(freq=1, log_dir=folder)
        learner = C.learners.sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.1))
        trainer = C.Trainer(z, (loss, metric), [learner], [writer])
        for data, target in _batches(r, (4, 5)):
            trainer.train_minibatch({x: data, y: target})
        trainer.summarize_training_progress()
        writer.close()
        scalars = H.event_scalars(folder)
    r.touch("cntk.logging.TensorBoardProgressWriter.write_value")
    return {"scalars": [s for s in scalars if s[0] in _CNTK_TAGS],
            "other tags": sorted(set(s[0] for s in scalars if s[0] not in _CNTK_TAGS))}


@cntk_case(names=["cntk.logging.ProgressWriter"] + ["cntk.logging.ProgressWriter." + m for m in (
    "on_write_training_update", "on_write_test_update", "on_write_training_summary",
    "on_write_test_summary", "on_training_update", "on_test_update", "on_training_summary",
    "on_test_summary")],
           substitutes={"cntk.logging.ProgressWriter": "cntk.cntk_py.ProgressWriter"},
           note="CNTK's writers subclass cntk_py.ProgressWriter; Stadyn's compat has it as "
                "cntk.logging.ProgressWriter")
def progress_writer_subclass(C, r):
    x, y, z, loss, metric = _model(C, r)
    calls = []

    class Writer(C.logging.ProgressWriter):
        def __init__(self):
            super(Writer, self).__init__(1, 0, 1, 0, 1, 0)

        def on_write_training_update(self, samples, updates, aggregate_loss, aggregate_metric):
            calls.append(["update", list(samples), list(updates), list(aggregate_loss),
                          list(aggregate_metric)])

        def on_write_training_summary(self, samples, updates, summaries, aggregate_loss,
                                      aggregate_metric, elapsed_milliseconds):
            calls.append(["summary", samples, updates, summaries, aggregate_loss,
                          aggregate_metric])

        def on_write_test_update(self, samples, updates, aggregate_metric):
            calls.append(["test update", list(samples), list(updates), list(aggregate_metric)])

        def on_write_test_summary(self, samples, updates, summaries, aggregate_metric,
                                  elapsed_milliseconds):
            calls.append(["test summary", samples, updates, summaries, aggregate_metric])

    writer = Writer()
    trainer = C.Trainer(z, (loss, metric),
                        [C.learners.sgd(z.parameters, C.learning_parameter_schedule(0.5))],
                        [writer])
    for data, target in _batches(r, (4, 5)):
        trainer.train_minibatch({x: data, y: target})
    trainer.summarize_training_progress()
    data, target = _batches(r, (3,))[0]
    trainer.test_minibatch({x: data, y: target})
    trainer.summarize_test_progress()
    r.touch(*["cntk.logging.ProgressWriter." + m for m in (
        "on_write_training_update", "on_write_test_update", "on_write_training_summary",
        "on_write_test_summary", "on_training_update", "on_test_update", "on_training_summary",
        "on_test_summary")])
    return {"calls": calls}


@cntk_case(names=["cntk.logging.ProgressWriter." + m for m in (
    "on_write_distributed_sync_update", "on_distributed_sync_update")],
           substitutes={"cntk.logging.ProgressWriter": "cntk.cntk_py.ProgressWriter"},
           note="one worker: never called (tests/compat/test_cntk_distributed_session.py has 2)")
def progress_writer_distributed_sync_one_worker(C, r):
    """A writer told of every distributed synchronisation (its constructor's fifth argument
    1), in a Trainer of a data-parallel learner on one worker: no step is shared, so it is
    never called, and the training updates are the plain learner's."""
    x, y, z, loss, metric = _model(C, r)
    calls = []

    class Writer(C.logging.ProgressWriter):
        def __init__(self):
            super(Writer, self).__init__(1, 0, 1, 0, 1, 0)

        def on_write_training_update(self, samples, updates, aggregate_loss, aggregate_metric):
            calls.append(["update", list(samples), list(updates)])

        def on_write_distributed_sync_update(self, samples, updates, aggregate_metric):
            calls.append(["sync", list(samples), list(updates)])

    learner = C.train.distributed.data_parallel_distributed_learner(
        C.learners.sgd(z.parameters, C.learning_parameter_schedule(0.5)))
    writer = Writer()              # (held here: CNTK's Trainer keeps only its C++ side)
    trainer = C.Trainer(z, (loss, metric), [learner], [writer])
    for data, target in _batches(r, (4, 5)):
        trainer.train_minibatch({x: data, y: target})
    r.touch(*["cntk.logging.ProgressWriter." + m for m in (
        "on_write_distributed_sync_update", "on_distributed_sync_update")])
    return {"calls": calls}


@cntk_case(names=["cntk.logging.ProgressWriter"],
           substitutes={"cntk.logging.ProgressWriter": "cntk.cntk_py.ProgressWriter"},
           note="the constructor's parameter names, and a writer given them as keywords")
def progress_writer_keywords(C, r):
    """CNTK's names of the writer's six constructor arguments, in order, and a subclass that
    passes them by name (training records every 2nd minibatch after the first, no sync
    records on one worker)."""
    import inspect
    x, y, z, loss, metric = _model(C, r)
    calls = []

    class Writer(C.logging.ProgressWriter):
        def __init__(self):
            super(Writer, self).__init__(
                trainingUpdateWriteFrequency=2, trainingFirstUpdatesToWrite=1,
                testUpdateWriteFrequency=1, testFirstUpdatesToWrite=0,
                distributedSyncUpdateWriteFrequency=1, distributedSyncFirstUpdatesToWrite=0)

        def on_write_training_update(self, samples, updates, aggregate_loss, aggregate_metric):
            calls.append(["update", list(samples), list(updates)])

        def on_write_distributed_sync_update(self, samples, updates, aggregate_metric):
            calls.append(["sync", list(samples), list(updates)])

    writer = Writer()
    trainer = C.Trainer(z, (loss, metric),
                        [C.learners.sgd(z.parameters, C.learning_parameter_schedule(0.5))],
                        [writer])
    for data, target in _batches(r, (4, 5, 3, 2, 4)):
        trainer.train_minibatch({x: data, y: target})
    names = list(inspect.signature(C.logging.ProgressWriter.__init__).parameters)[1:]
    return {"names": names, "calls": calls}


_SEQUENCE_LENGTHS = (3, 1, 4, 2, 5)


def _sequence_ctf(r, path):
    """A CTF file of five sequences: 3-value features ``x`` and a class ``t`` per step, a class
    ``y`` per sequence (on its first line)."""
    lines = []
    for s, length in enumerate(_SEQUENCE_LENGTHS):
        feats, tags = r.randn(length, 3), r.randint(0, 3, (length,))
        for step in range(length):
            line = "%d |x %s |t %d:1" % (s, " ".join("%.3f" % v for v in feats[step]), tags[step])
            if step == 0:
                line += " |y %d:1" % ((s * 2) % 3)
            lines.append(line)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _sequence_models(C, r):
    """Three criteria over one sequence input: a classifier (a label per sequence), a tagger (a
    label per step) and a last-step tagger (per-step labels, the metric on each sequence's
    last step: every input is a sequence, the metric counts sequences)."""
    models = {}
    w = r.param_value("w", (3, 3))
    for kind in ("classifier", "tagger", "last step"):
        x = C.sequence.input_variable(3)
        label = C.input_variable(3) if kind == "classifier" else C.sequence.input_variable(3)
        h = C.times(x, C.parameter((3, 3), init=w))
        if kind == "tagger":
            z, target = h, label
        else:
            z = C.sequence.last(h)
            target = label if kind == "classifier" else C.sequence.last(label)
        models[kind] = (x, label, z, C.cross_entropy_with_softmax(z, target),
                        C.classification_error(z, target))
    return models


@cntk_case(names=["cntk.Trainer.test_minibatch", "cntk.Trainer.summarize_test_progress",
                  "cntk.Function.test", "cntk.logging.ProgressWriter.on_write_test_update",
                  "cntk.logging.ProgressWriter.on_write_test_summary"],
           substitutes={"cntk.logging.ProgressWriter": "cntk.cntk_py.ProgressWriter"},
           note="CNTK's writers subclass cntk_py.ProgressWriter; Stadyn's compat has it as "
                "cntk.logging.ProgressWriter")
def test_minibatch_sequences(C, r):
    """``test_minibatch`` on sequences from a CTF reader and from NumPy sequence lists: the
    average is over the metric's samples (sequences for a classifier, steps for a tagger), and
    the test updates, summaries and ``Function.test``'s ``samples`` count the same samples,
    not the features' steps."""
    res = {}
    models = _sequence_models(C, r)
    with r.tempdir() as folder:
        path = os.path.join(folder, "seq.ctf")
        _sequence_ctf(r, path)

        def source():
            return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
                x=C.io.StreamDef(field="x", shape=3),
                y=C.io.StreamDef(field="y", shape=3, is_sparse=True),
                t=C.io.StreamDef(field="t", shape=3, is_sparse=True))),
                randomize=False, max_sweeps=1)

        for kind, (x, label, z, loss, metric) in sorted(models.items()):
            calls = []

            class Writer(C.logging.ProgressWriter):
                def __init__(self):
                    super(Writer, self).__init__(1, 0, 1, 0, 1, 0)

                def on_write_test_update(self, samples, updates, aggregate_metric):
                    calls.append(["update", list(samples), list(updates),
                                  list(aggregate_metric)])

                def on_write_test_summary(self, samples, updates, summaries, aggregate_metric,
                                          elapsed_milliseconds):
                    calls.append(["summary", samples, updates, summaries, aggregate_metric])

            writer = Writer()      # kept: CNTK calls it through a SWIG director
            trainer = C.Trainer(z, (loss, metric), [C.learners.sgd(
                z.parameters, C.learning_parameter_schedule(0.0))], [writer])
            src = source()
            stream = src.streams.y if kind == "classifier" else src.streams.t
            averages, counts = [], []
            while True:
                mb = src.next_minibatch(6, input_map={x: src.streams.x, label: stream})
                if not mb:
                    break
                averages.append(trainer.test_minibatch(mb))
                counts.append([mb[x].num_samples, mb[label].num_samples])
            trainer.summarize_test_progress()
            src = source()
            summary = metric.test(src, minibatch_size=6,
                                  model_inputs_to_streams={x: src.streams.x, label: stream})
            xs = [r.randn(n, 3) for n in _SEQUENCE_LENGTHS]
            if kind == "classifier":
                ys = r.onehot(len(xs), 3)
            else:
                ys = [r.onehot(n, 3) for n in _SEQUENCE_LENGTHS]
            res[kind] = {"averages": averages, "stream samples": counts, "writer": calls,
                         "test": [summary.metric, summary.samples],
                         "numpy": trainer.test_minibatch({x: xs, label: ys})}
    r.touch("cntk.Trainer.test_minibatch", "cntk.Trainer.summarize_test_progress",
            "cntk.Function.test", "cntk.logging.ProgressWriter.on_write_test_update",
            "cntk.logging.ProgressWriter.on_write_test_summary")
    return res
