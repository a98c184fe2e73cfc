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
_LR = ("CNTK's ProgressPrinter prints 'Learning rate per 1 samples: 0.1' when training starts "
       "(and when the rate changes); Stadyn's (stadyn.train.progress, native) prints no such "
       "line")


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
                  "cntk.logging.log_number_of_parameters"],
           known={"console lr": _LR, "log lr": _LR})
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
    console, console_lr = _lines(out.getvalue(), folder)
    logged = [ln for ln in logged.splitlines() if not ln.startswith("CNTKCommand")]
    logged, logged_lr = _lines("\n".join(logged), folder)
    return {"console": console, "console lr": console_lr, "log": logged, "log lr": logged_lr,
            "counts": counts, "test": float(test),
            "seen": trainer.total_number_of_samples_seen, "w": z.parameters[0].value}


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


_CNTK_TAGS = ("minibatch/avg_loss", "minibatch/avg_metric", "summary/avg_loss",
              "summary/avg_metric", "minibatch/test_avg_metric", "summary/test_avg_metric")


@cntk_case(names=["cntk.logging.TensorBoardProgressWriter"],
           note="the scalars in the event files: tags, steps and values",
           known={"other tags": "Stadyn's TensorBoardProgressWriter (stadyn.train.progress, "
                                "native) also writes minibatch/learning_rate and others"})
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
    return {"scalars": [s for s in scalars if s[0] in _CNTK_TAGS],
            "other tags": sorted(set(s[0] for s in scalars if s[0] not in _CNTK_TAGS))}


@cntk_case(names=["cntk.logging.ProgressWriter"],
           substitutes={"cntk.logging.ProgressWriter": "cntk.cntk_py.ProgressWriter"},
           xfail="a CNTK progress writer subclasses cntk_py.ProgressWriter and gets "
                 "on_write_training_update(samples, updates, aggregate_loss, aggregate_metric) "
                 "and on_write_training_summary(...); Stadyn's ProgressWriter (stadyn.train."
                 "progress, native; re-exported as cntk.logging.ProgressWriter) calls "
                 "on_training_update(record) hooks with another signature")
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

    writer = Writer()
    trainer = C.Trainer(z, (loss, metric),
                        [C.learners.sgd(z.parameters, C.learning_parameter_schedule(0.5))],
                        [writer])
    for data, target in _batches(r, (4, 5)):
        trainer.train_minibatch({x: data, y: target})
    trainer.summarize_training_progress()
    return {"calls": calls}
