"""The Trainer's numbers against an independent NumPy computation on the same data.

A softmax classifier ``z = x W + b`` (a ``Dense`` layer) trained with plain SGD is simple enough
to run in NumPy alongside: per-sample cross entropy ``logsumexp(z) - z[label]``, classification
error ``argmax(z) != label``, gradient of the summed loss ``x^T (softmax(z) - y)``.  Every figure
the Trainer reports -- ``train_minibatch``'s averages, ``test_minibatch``'s error, ``fit``'s
records with ``validation``, and the ProgressPrinter's and CSV writer's lines -- is compared with
that reference, so a figure computed from the wrong quantity (the accuracy for the error, the
loss after the update, a mean over minibatches instead of samples) fails here.
"""

from __future__ import annotations

import csv
import re

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
import stadyn.learners as CL
import stadyn.solvers as S
from stadyn.io import MinibatchSourceFromData
from stadyn.train import Trainer
from stadyn.train.progress import CSVProgressWriter, ProgressPrinter

FEATURES, CLASSES = 4, 3


@pytest.fixture(autouse=True)
def fresh_parameters():
    with sd.parameter_registry(sd.ParameterRegistry()):
        yield


class FakeClock:
    def __init__(self):
        self.now = 10.0

    def __call__(self):
        return self.now


# ---------------------------------------------------------------------------------------------
# The NumPy reference
# ---------------------------------------------------------------------------------------------
def np_forward(x, w, b, y):
    """Per-sample cross entropy and classification error of ``softmax(x w + b)`` against the
    one-hot ``y``; and the gradients of the summed loss w.r.t. ``w`` and ``b``."""
    z = x.astype(np.float64) @ w + b
    zmax = z.max(1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(1))
    loss = lse - (z * y).sum(1)
    error = (z.argmax(1) != y.argmax(1)).astype(np.float64)
    p = np.exp(z - lse[:, None])
    return loss, error, x.T @ (p - y), (p - y).sum(0)


def data(n, seed):
    """Features with some signal, so that the error is neither 0 nor 1 and moves in training."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, CLASSES, n)
    x = rng.randn(n, FEATURES).astype(np.float32)
    x[:, :CLASSES] += 0.8 * np.eye(CLASSES)[labels]
    return x, np.eye(CLASSES, dtype=np.float32)[labels]


def initial_parameters():
    rng = np.random.RandomState(7)
    return rng.randn(FEATURES, CLASSES) * 0.5, rng.randn(CLASSES) * 0.1


def make_trainer(learner="sgd", lr=0.05, dropout=False, writers=()):
    """The classifier with the reference's initial parameters, its Trainer and its inputs."""
    x, y = sd.Variable((1, FEATURES)), sd.Variable((1, CLASSES))
    h = L.Dropout(0.5)(x) if dropout else x
    dense = L.Dense(CLASSES)
    z = dense(h)
    w, b = dense.parameters
    w0, b0 = initial_parameters()
    w.d, b.d = w0, b0
    if learner == "sgd":
        opt = S.Sgd(lr=lr)
        opt.set_parameters(sd.get_parameters())
    else:   # CNTK's sgd with a per-sample rate: the same step on the summed gradient
        opt = CL.sgd([w, b], CL.learning_rate_schedule(lr, CL.UnitType.sample))
    trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y), F.classification_error(z, y)),
                      [opt], list(writers))
    return x, y, trainer, (w, b)


# ---------------------------------------------------------------------------------------------
# train_minibatch and test_minibatch
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("learner", ["sgd", "cntk_sgd"])
def test_train_minibatch_reports_the_figures_before_its_update_and_takes_the_sgd_step(learner):
    x, y, trainer, (w, b) = make_trainer(learner, lr=0.05)
    wr, br = initial_parameters()
    seen = 0
    for k, n in enumerate((8, 5, 8, 3)):
        xb, yb = data(n, seed=k)
        loss, error, gw, gb = np_forward(xb, wr, br, yb)
        assert trainer.train_minibatch({x: xb, y: yb}) is True
        # figures of the minibatch as it was fed: the parameters before this step's update
        assert trainer.previous_minibatch_sample_count == n
        assert trainer.previous_minibatch_loss_average == pytest.approx(loss.mean(), rel=1e-5)
        assert trainer.previous_minibatch_evaluation_average == pytest.approx(error.mean(),
                                                                              abs=1e-7)
        seen += n
        assert trainer.total_number_of_samples_seen == seen
        assert trainer.minibatches_seen == k + 1
        wr, br = wr - 0.05 * gw, br - 0.05 * gb          # SGD on the summed gradient
        np.testing.assert_allclose(w.d, wr, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b.d, br, rtol=1e-5, atol=1e-6)


def check_sgd_steps(trainer, x, y, w, b, lr_w, lr_b):
    """Three minibatches: the Trainer's figures and SGD steps (rates ``lr_w``, ``lr_b`` per
    sample, on the summed gradient) are the NumPy reference's."""
    wr, br = initial_parameters()
    for k, n in enumerate((8, 5, 8)):
        xb, yb = data(n, seed=k)
        loss, error, gw, gb = np_forward(xb, wr, br, yb)
        trainer.train_minibatch({x: xb, y: yb})
        assert trainer.previous_minibatch_loss_average == pytest.approx(loss.mean(), rel=1e-5)
        assert trainer.previous_minibatch_evaluation_average == pytest.approx(error.mean())
        wr, br = wr - lr_w * gw, br - lr_b * gb
        np.testing.assert_allclose(w.d, wr, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b.d, br, rtol=1e-5, atol=1e-6)


def test_two_learners_take_the_numpy_steps_and_a_compiled_step_refuses_them():
    """One learner per parameter, each with its own rate, takes the reference's SGD steps; a
    compiled step needs exactly one learner, so ``compile="program"`` with two is refused."""
    x, y = sd.Variable((1, FEATURES)), sd.Variable((1, CLASSES))
    dense = L.Dense(CLASSES)
    z = dense(x)
    w, b = dense.parameters
    w.d, b.d = initial_parameters()
    learners = [CL.sgd([w], CL.learning_rate_schedule(0.05, CL.UnitType.sample)),
                CL.sgd([b], CL.learning_rate_schedule(0.1, CL.UnitType.sample))]
    criterion = (F.cross_entropy_with_softmax(z, y), F.classification_error(z, y))
    with pytest.raises(sd.StadynError, match="needs exactly one learner"):
        Trainer(z, criterion, learners, compile="program")
    check_sgd_steps(Trainer(z, criterion, learners), x, y, w, b, 0.05, 0.1)  # a rate each


def test_the_compiled_program_takes_the_numpy_steps():
    x, y = sd.Variable((1, FEATURES)), sd.Variable((1, CLASSES))
    dense = L.Dense(CLASSES)
    z = dense(x)
    w, b = dense.parameters
    w.d, b.d = initial_parameters()
    opt = S.Sgd(lr=0.05)
    opt.set_parameters(sd.get_parameters())
    trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y), F.classification_error(z, y)),
                      [opt], compile="program")
    check_sgd_steps(trainer, x, y, w, b, 0.05, 0.05)


def test_an_empty_minibatch_is_no_step():
    """``train_minibatch`` with no data returns False and changes nothing."""
    x, y, trainer, (w, b) = make_trainer()
    xb, yb = data(4, seed=1)
    trainer.train_minibatch({x: xb, y: yb})
    before = (w.d.copy(), b.d.copy(), trainer.total_number_of_samples_seen,
              trainer.minibatches_seen, trainer.previous_minibatch_loss_average)
    for empty in ({}, [], None):
        assert trainer.train_minibatch(empty) is False
    np.testing.assert_array_equal(w.d, before[0])
    np.testing.assert_array_equal(b.d, before[1])
    assert (trainer.total_number_of_samples_seen, trainer.minibatches_seen,
            trainer.previous_minibatch_loss_average) == before[2:]


def test_inputs_of_different_sample_counts_are_refused_and_writers_are_copied():
    x, y, trainer, _ = make_trainer()
    writer = ProgressPrinter(freq=1)
    writers = [writer]
    other = Trainer(trainer.model, (trainer.loss_function, trainer.evaluation_function),
                   trainer.parameter_learners, writers)
    writers.clear()                                  # the Trainer keeps its own list
    assert other.progress_writers == [writer]
    xb, yb = data(4, seed=1)
    with pytest.raises(sd.StadynError, match=r"different sample counts \[3, 4\]"):
        trainer.train_minibatch({x: xb, y: yb[:3]})


def test_arguments_may_be_a_list_in_the_order_of_trainer_arguments():
    x, y, trainer, (w, b) = make_trainer()
    assert sorted(map(id, trainer.arguments)) == sorted([id(x), id(y)])
    xb, yb = data(6, seed=4)
    by_input = {id(x): xb, id(y): yb}
    as_list = [by_input[id(v)] for v in trainer.arguments]
    loss, error, gw, gb = np_forward(xb, *initial_parameters(), yb)
    trainer.train_minibatch(as_list)
    assert trainer.previous_minibatch_loss_average == pytest.approx(loss.mean(), rel=1e-5)
    assert trainer.previous_minibatch_evaluation_average == pytest.approx(error.mean(), abs=1e-7)
    np.testing.assert_allclose(w.d, initial_parameters()[0] - 0.05 * gw, rtol=1e-5, atol=1e-6)
    _, error_after, _, _ = np_forward(xb, w.d.astype(np.float64), b.d.astype(np.float64), yb)
    assert trainer.test_minibatch(tuple(as_list)) == pytest.approx(error_after.mean(), abs=1e-7)


def test_test_minibatch_returns_the_mean_error_and_changes_nothing():
    x, y, trainer, (w, b) = make_trainer()
    w0, b0 = initial_parameters()
    xb, yb = data(40, seed=16)
    _, error, _, _ = np_forward(xb, w0, b0, yb)
    assert abs(error.mean() - 0.5) > 0.1                 # error and accuracy differ here
    got = trainer.test_minibatch({x: xb, y: yb})
    assert got == pytest.approx(error.mean(), abs=1e-7)
    assert got != pytest.approx(1 - error.mean())
    np.testing.assert_array_equal(w.d, w0.astype(np.float32))
    np.testing.assert_array_equal(b.d, b0.astype(np.float32))
    assert trainer.total_number_of_samples_seen == 0 and trainer.minibatches_seen == 0


def test_test_minibatch_runs_the_inference_phase():
    """With dropout before the classifier, training is random but evaluation is the plain
    model: test_minibatch equals the reference without dropout, every time."""
    x, y, trainer, _ = make_trainer(dropout=True)
    w0, b0 = initial_parameters()
    xb, yb = data(64, seed=12)
    _, error, _, _ = np_forward(xb, w0, b0, yb)
    assert [trainer.test_minibatch({x: xb, y: yb}) for _ in range(3)] == \
        [pytest.approx(error.mean(), abs=1e-7)] * 3


# ---------------------------------------------------------------------------------------------
# fit(validation=...) and the progress writers
# ---------------------------------------------------------------------------------------------
def np_fit(train, valid, epochs, minibatch_size, valid_minibatch_size, lr):
    """What fit() should report, computed in NumPy: per epoch the minibatches' figures, the
    epoch's sample-weighted means and the validation error after the epoch."""
    (xt, yt), (xv, yv) = train, valid
    w, b = initial_parameters()
    epochs_out = []
    for _ in range(epochs):
        batches = []
        for start in range(0, len(xt), minibatch_size):
            xb, yb = xt[start:start + minibatch_size], yt[start:start + minibatch_size]
            loss, error, gw, gb = np_forward(xb, w, b, yb)
            batches.append((len(xb), loss.sum(), error.sum()))
            w, b = w - lr * gw, b - lr * gb
        valid_batches = []
        for start in range(0, len(xv), valid_minibatch_size):
            _, error, _, _ = np_forward(xv[start:start + valid_minibatch_size], w, b,
                                        yv[start:start + valid_minibatch_size])
            valid_batches.append((len(error), error.sum()))
        n = sum(m for m, _, _ in batches)
        epochs_out.append({"batches": batches, "samples": n,
                           "loss": sum(s for _, s, _ in batches) / n,
                           "metric": sum(e for _, _, e in batches) / n,
                           "validation": sum(e for _, e in valid_batches) / len(xv),
                           "validation_batches": len(valid_batches)})
    return epochs_out


def test_fit_with_validation_reports_what_numpy_computes(capsys, tmp_path):
    train, valid = data(26, seed=1), data(22, seed=2)
    clock = FakeClock()
    printer = ProgressPrinter(freq=1, tag="Training", clock=clock)
    csv_path = tmp_path / "progress.csv"
    log = CSVProgressWriter(csv_path, freq=1, clock=clock)
    x, y, trainer, _ = make_trainer(lr=0.05, writers=[printer, log])
    source = MinibatchSourceFromData({"f": train[0], "l": train[1]})
    vsource = MinibatchSourceFromData({"f": valid[0], "l": valid[1]})
    history = trainer.fit(source, {x: source.streams.f, y: source.streams.l}, epochs=3,
                          minibatch_size=8, validation=vsource,
                          validation_input_map={x: vsource.streams.f, y: vsource.streams.l},
                          validation_minibatch_size=5)
    log.close()
    expected = np_fit(train, valid, 3, 8, 5, lr=0.05)
    assert [r["epoch"] for r in history] == [0, 1, 2]
    for got, want in zip(history, expected):
        assert got["samples"] == want["samples"] == 26
        assert got["loss"] == pytest.approx(want["loss"], rel=1e-5)
        assert got["metric"] == pytest.approx(want["metric"], abs=1e-7)
        assert got["validation_metric"] == pytest.approx(want["validation"], abs=1e-7)
    # the run changes the figures: a record repeated from the first epoch would not do
    assert len({round(r["loss"], 6) for r in history}) == 3

    # ProgressPrinter: one line per minibatch, the epoch line, the evaluation summary
    out = capsys.readouterr().out.splitlines()
    minibatch = re.compile(r"^ Minibatch\[ *(\d+)- *(\d+)\]: loss = ([0-9.]+) \* (\d+), "
                           r"metric = ([0-9.]+)% \* (\d+);$")
    epoch = re.compile(r"^Finished Epoch\[(\d+)\]: \[Training\] loss = ([0-9.]+) \* (\d+), "
                       r"metric = ([0-9.]+)% \* (\d+) ")
    evaluation = re.compile(r"^Finished Evaluation \[(\d+)\]: Minibatch\[1-(\d+)\]: "
                            r"metric = ([0-9.]+)% \* (\d+);$")
    lines = iter(out)
    for k, want in enumerate(expected, 1):
        for j, (n, loss_sum, error_sum) in enumerate(want["batches"], 1):
            m = minibatch.match(next(lines))
            assert m, out
            assert (int(m[1]), int(m[2]), int(m[4]), int(m[6])) == (j, j, n, n)
            assert float(m[3]) == pytest.approx(loss_sum / n, abs=1e-6)
            assert float(m[5]) == pytest.approx(100 * error_sum / n, abs=0.005)
        m = epoch.match(next(lines))
        assert m and int(m[1]) == k and int(m[3]) == int(m[5]) == 26, out
        assert float(m[2]) == pytest.approx(want["loss"], abs=1e-6)
        assert float(m[4]) == pytest.approx(100 * want["metric"], abs=0.005)
        m = evaluation.match(next(lines))
        assert m, out
        assert (int(m[1]), int(m[2]), int(m[4])) == (k, want["validation_batches"], 22)
        assert float(m[3]) == pytest.approx(100 * want["validation"], abs=0.005)
    assert next(lines, None) is None

    # CSV rows: the same figures, metrics as fractions
    rows = list(csv.DictReader(open(csv_path)))
    epochs = [r for r in rows if r["kind"] == "epoch"]
    tests = [r for r in rows if r["kind"] == "test"]
    mbs = [r for r in rows if r["kind"] == "minibatch"]
    assert len(mbs) == sum(len(w["batches"]) for w in expected)
    for row, want in zip(epochs, expected, strict=True):
        assert float(row["loss"]) == pytest.approx(want["loss"], rel=1e-5)
        assert float(row["metric"]) == pytest.approx(want["metric"], abs=1e-7)
        assert int(row["samples"]) == 26
    for row, want in zip(tests, expected, strict=True):
        assert float(row["metric"]) == pytest.approx(want["validation"], abs=1e-7)
        assert int(row["samples"]) == 22
    flat = [b for w in expected for b in w["batches"]]
    for row, (n, loss_sum, error_sum) in zip(mbs, flat, strict=True):
        assert int(row["samples"]) == n
        assert float(row["loss"]) == pytest.approx(loss_sum / n, rel=1e-5)
        assert float(row["metric"]) == pytest.approx(error_sum / n, abs=1e-7)


def test_evaluate_is_the_sample_weighted_error_of_one_sweep():
    x, y, trainer, _ = make_trainer()
    w0, b0 = initial_parameters()
    xv, yv = data(23, seed=5)
    source = MinibatchSourceFromData({"f": xv, "l": yv})
    _, error, _, _ = np_forward(xv, w0, b0, yv)
    # minibatches of 10, 10 and 3: a mean of the three minibatch means would differ
    got = trainer.evaluate(source, {x: source.streams.f, y: source.streams.l}, minibatch_size=10)
    assert got == pytest.approx(error.mean(), abs=1e-7)
    means = [error[s:s + 10].mean() for s in (0, 10, 20)]
    assert abs(np.mean(means) - error.mean()) > 1e-3           # the data tells the two apart


def test_fit_counts_an_epoch_of_a_given_size_across_sweeps():
    """``epoch_size`` larger than the data: the epoch reads on into the next sweep, and the
    record's figures cover exactly those samples."""
    x, y, trainer, _ = make_trainer(lr=0.0)                  # no update: figures stay put
    xt, yt = data(10, seed=3)
    source = MinibatchSourceFromData({"f": xt, "l": yt})
    history = trainer.fit(source, {x: source.streams.f, y: source.streams.l}, epochs=1,
                          epoch_size=25, minibatch_size=4)
    w0, b0 = initial_parameters()
    loss, error, _, _ = np_forward(np.concatenate([xt, xt, xt])[:25], w0, b0,
                                   np.concatenate([yt, yt, yt])[:25])
    assert history[0]["samples"] == 25 and trainer.total_number_of_samples_seen == 25
    assert history[0]["loss"] == pytest.approx(loss.mean(), rel=1e-5)
    assert history[0]["metric"] == pytest.approx(error.mean(), abs=1e-7)
    assert history[0]["validation_metric"] is None
