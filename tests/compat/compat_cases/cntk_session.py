"""``cntk.train``'s training session (progress, checkpoints, cross-validation and testing at
their frequencies), ``Evaluator``, ``minibatch_size_schedule`` and
``TrainingSummaryProgressCallback``: the printed progress, the callbacks' arguments and the
parameters after training."""

import contextlib
import io
import os
import re


from compat_harness import cntk_case

_TIMING = re.compile(r"\d+\.\d+s \( *\d+\.\d+ samples/s\)")


def _model(C, r):
    x = C.input_variable(4, name="x")
    y = C.input_variable(3, name="y")
    w = C.parameter((4, 3), init=r.param_value("w", (4, 3)), name="w")
    b = C.parameter((3,), init=0.1, name="b")
    z = C.times(x, w) + b
    return x, y, z, C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)


def _data(r, n):
    return r.randn(n, 4) * 2.0, r.onehot(n, 3)


def _lines(text):
    return [_TIMING.sub("<time>", ln) for ln in text.splitlines()
            if ln.strip() and not ln.startswith("Learning rate per")]


@cntk_case(names=["cntk.training_session", "cntk.train.training_session",
                  "cntk.train.training_session.training_session", "cntk.TrainingSession",
                  "cntk.train.TrainingSession", "cntk.train.training_session.TrainingSession",
                  "cntk.TrainingSession.train", "cntk.TrainingSession.on_cross_validation_end",
                  "cntk.CrossValidationConfig", "cntk.train.CrossValidationConfig",
                  "cntk.train.training_session.CrossValidationConfig", "cntk.TestConfig",
                  "cntk.train.TestConfig", "cntk.train.training_session.TestConfig",
                  "cntk.io.MinibatchSourceFromData"],
           note="numpy data in place of a source; progress every 8 samples, cross-validation "
                "every 10 (its callback sees each), a test at the end")
def training_session_progress(C, r):
    x, y, z, loss, metric = _model(C, r)
    train = _data(r, 12)
    cv_src = C.io.MinibatchSourceFromData(dict(x=_data(r, 5)[0], y=_data(r, 5)[1]),
                                          max_samples=5)
    test_src = C.io.MinibatchSourceFromData(dict(x=_data(r, 6)[0], y=_data(r, 6)[1]),
                                            max_samples=6)
    calls = []

    def on_cv(index, average_error, samples, minibatches):
        calls.append([index, average_error, samples, minibatches])
        return True

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        printer = C.logging.ProgressPrinter(tag="Training")
        learner = C.sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.05))
        trainer = C.Trainer(z, (loss, metric), [learner], [printer])
        r.touch("cntk.TrainingSession.train", "cntk.TrainingSession.on_cross_validation_end")
        session = C.training_session(
            trainer, (train[0], train[1]), 4, None, progress_frequency=8, max_samples=24,
            cv_config=C.CrossValidationConfig(cv_src, frequency=10, minibatch_size=2,
                                              callback=on_cv,
                                              model_inputs_to_streams={x: cv_src.streams.x,
                                                                       y: cv_src.streams.y}),
            test_config=C.train.TestConfig(test_src, minibatch_size=4, model_inputs_to_streams={
                x: test_src.streams.x, y: test_src.streams.y}))
        session.train()
    TS = r.module("cntk.train.training_session")
    names = [C.train.training_session is C.training_session,
             TS.training_session is C.training_session,
             C.train.TrainingSession is C.TrainingSession,
             TS.TrainingSession is C.TrainingSession,
             C.train.CrossValidationConfig is C.CrossValidationConfig,
             TS.CrossValidationConfig is C.CrossValidationConfig,
             TS.TestConfig is C.TestConfig]
    return {"printed": _lines(out.getvalue()), "cv calls": calls,
            "seen": trainer.total_number_of_samples_seen, "w": z.parameters[0].value,
            "same objects": names,
            "is session": isinstance(session, C.TrainingSession)}


@cntk_case(names=["cntk.CheckpointConfig", "cntk.train.CheckpointConfig",
                  "cntk.train.training_session.CheckpointConfig", "cntk.DataUnit",
                  "cntk.DataUnit.minibatch", "cntk.DataUnit.sample", "cntk.DataUnit.sweep",
                  "cntk.train.DataUnit", "cntk.train.training_session.DataUnit"],
           note="checkpoints every 3 minibatches; a second session restores from the last one "
                "and trains to the end: the same parameters as one session straight through")
def training_session_checkpoint(C, r):
    x, y, z, loss, metric = _model(C, r)
    data = _data(r, 16)
    start = [p.value for p in z.parameters]
    r.touch("cntk.Parameter.value", "cntk.Function.parameters")

    def session(path, max_samples, checkpoint=True):
        for p, v in zip(z.parameters, start):
            p.value = v
        learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.1),
                                 C.momentum_schedule(0.9))
        trainer = C.Trainer(z, (loss, metric), [learner])
        src = C.io.MinibatchSourceFromData(dict(x=data[0], y=data[1]))
        config = C.CheckpointConfig(path, frequency=(3, C.DataUnit.minibatch), restore=True) \
            if checkpoint else None
        C.training_session(trainer, src, 4, {x: src.streams.x, y: src.streams.y},
                           max_samples=max_samples, checkpoint_config=config).train()
        return trainer

    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "ckpt")
        session(path, 12)
        trainer = session(path, 32)
        res["resumed"] = z.parameters[0].value
        res["resumed seen"] = trainer.total_number_of_samples_seen
        trainer = session(None, 32, checkpoint=False)
        res["straight"] = z.parameters[0].value
        res["straight seen"] = trainer.total_number_of_samples_seen
    r.touch("cntk.DataUnit.minibatch", "cntk.DataUnit.sample", "cntk.DataUnit.sweep")
    res["units"] = [int(C.DataUnit.sample), int(C.DataUnit.minibatch), int(C.DataUnit.sweep)]
    TS = r.module("cntk.train.training_session")
    res["same"] = [C.train.CheckpointConfig is C.CheckpointConfig,
                   TS.CheckpointConfig is C.CheckpointConfig,
                   C.train.DataUnit is C.DataUnit, TS.DataUnit is C.DataUnit]
    return res


@cntk_case(names=["cntk.minibatch_size_schedule", "cntk.train.minibatch_size_schedule",
                  "cntk.train.training_session.minibatch_size_schedule"])
def minibatch_size_schedule(C, r):
    s1 = C.minibatch_size_schedule(32)
    s2 = C.train.minibatch_size_schedule([32, 64], 1000)
    TS = r.module("cntk.train.training_session")
    s3 = TS.minibatch_size_schedule([(12, 32), (15, 64), (1, 128)], 100)
    return {"fixed": [s1[0], s1[10000]], "list": [s2[0], s2[999], s2[1000], s2[5000]],
            "pairs": [s3[0], s3[1199], s3[1200], s3[2699], s3[2700], s3[5000]]}


@cntk_case(names=["cntk.Evaluator", "cntk.Evaluator.evaluation_function"],
           note="the test summaries an Evaluator prints, and its averages")
def evaluator(C, r):
    x, y, z, loss, metric = _model(C, r)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ev = C.Evaluator(metric, [C.logging.ProgressPrinter(tag="Eval")])
        averages = []
        for n in (4, 6):
            data, labels = _data(r, n)
            averages.append(ev.test_minibatch({x: data, y: labels}))
        ev.summarize_test_progress()
    r.touch("cntk.Evaluator.evaluation_function", "cntk.Function.shape")
    return {"averages": averages, "printed": _lines(out.getvalue()),
            "function shape": list(ev.evaluation_function.shape)}


@cntk_case(names=["cntk.logging.TrainingSummaryProgressCallback",
                  "cntk.logging.TrainingSummaryProgressCallback.on_write_training_summary"])
def training_summary_callback(C, r):
    x, y, z, loss, metric = _model(C, r)
    calls = []
    cb = C.logging.TrainingSummaryProgressCallback(
        8, lambda epoch, loss_, metric_, samples: calls.append([epoch, loss_, metric_, samples]))
    learner = C.sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.05))
    trainer = C.Trainer(z, (loss, metric), [learner], [cb])
    r.touch("cntk.logging.TrainingSummaryProgressCallback.on_write_training_summary")
    for _ in range(2):
        for n in (3, 5):
            data, labels = _data(r, n)
            trainer.train_minibatch({x: data, y: labels})
        trainer.summarize_training_progress()
    return {"calls": calls}
