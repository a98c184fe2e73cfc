"""``Trainer.fit`` moves a schedule given per data sweep (``epoch_size=None``) once per sweep
of its source, at the minibatch that ends the sweep, as CNTK's Trainer moves it on a reader's
``sweep_end``; not by samples of a sweep's size, which the trainer may count in other units
than the reader (one label per sequence) or from another start (minibatches trained before).
The expected rates are written out by hand from the sweeps' ends.  (CNTK 2.7 on the first
test's CTF file: a Trainer fed minibatches of 8 steps moves learning_parameter_schedule([0.5,
0.05, 0.005]) after each minibatch that ends a sweep, 5 labels a sweep.)"""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
import stadyn.learners as LR
import stadyn.solvers as S
from stadyn import io
from stadyn.io import MinibatchSourceFromData
from stadyn.schedules import Schedule, ScheduledSolver
from stadyn.train import Trainer, TrainingCallback

pytestmark = pytest.mark.usefixtures("fresh_parameters")

RATES = [0.5, 0.05, 0.005]          # one per sweep, the last for ever


def _next_rate(trainer) -> float:
    """The rate the next minibatch trains at (a ScheduledSolver sets its solver's rate when it
    steps: ``apply`` sets it now)."""
    learner = trainer.parameter_learners[0]
    if isinstance(learner, ScheduledSolver):
        learner.apply()
    return learner.learning_rate()


class Rates(TrainingCallback):
    """The rate each epoch begins with, and after each minibatch the rate for the next one."""

    def __init__(self):
        self.begins, self.after = [], []

    def on_epoch_begin(self, trainer, epoch):
        self.begins.append(_next_rate(trainer))

    def on_minibatch_end(self, trainer, record):
        self.after.append((record["epoch"], record["samples"], _next_rate(trainer)))


def _learner(kind, params):
    if kind == "learner":
        return LR.sgd(list(params.values()), Schedule(RATES))
    solver = ScheduledSolver(S.Sgd(), lr=Schedule(RATES))
    solver.set_parameters(params)
    return solver


@pytest.mark.parametrize("kind", ["learner", "scheduled solver"])
def test_a_sequence_classifier_moves_the_rate_once_per_sweep(tmp_path, kind):
    """Five sequences of 15 steps: the reader (and the minibatch size) counts steps, the
    trainer 5 labels a sweep.  A schedule resolved to 15 samples a sweep moved after three
    sweeps' labels."""
    rng = np.random.RandomState(0)
    lines = []
    for s, n in enumerate((3, 1, 4, 2, 5)):
        for k in range(n):
            x = " ".join("%.3f" % v for v in rng.randn(3))
            lines.append(f"{s} |x {x}" + (f" |y {s % 2}:1" if k == 0 else ""))
    path = tmp_path / "seq.ctf"
    path.write_text("\n".join(lines) + "\n")
    source = io.MinibatchSource(io.CTFDeserializer(str(path), io.StreamDefs(
        x=io.StreamDef(field="x", shape=3), y=io.StreamDef(field="y", shape=2, is_sparse=True))),
        randomize=False)
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.sequence.input_variable(3)
        label = sd.Variable((1, 2))
        z = sd.sequence.last(L.Dense(2)(x))
        learner = _learner(kind, sd.get_parameters())
        trainer = Trainer(z, (F.cross_entropy_with_softmax(z, label),), [learner])
    rates = Rates()
    history = trainer.fit(source, {x: source.streams.x, label: source.streams.y}, epochs=3,
                          minibatch_size=8, callbacks=[rates], progress_bar=False)
    assert [h["samples"] for h in history] == [5, 5, 5]       # labels: sequences
    assert rates.begins == RATES
    # each epoch's minibatches train at its sweep's rate; the last one ends the sweep, after
    # which the next sweep's rate holds
    for epoch in range(3):
        after = [rate for e, _, rate in rates.after if e == epoch]
        assert len(after) >= 2
        assert after == [RATES[epoch]] * (len(after) - 1) + [RATES[min(epoch + 1, 2)]]


@pytest.mark.parametrize("kind", ["learner", "scheduled solver"])
def test_minibatches_trained_before_fit_do_not_move_the_sweeps(kind):
    """Three samples trained by hand before fit (no sweep ended), then sweeps of 10 samples
    in minibatches of 4: the rate moves at the end of each sweep, not at sample 10."""
    rng = np.random.RandomState(1)
    data = {"x": rng.randn(10, 3).astype(np.float32),
            "y": np.eye(2, dtype=np.float32)[rng.randint(0, 2, 10)]}
    with sd.parameter_registry(sd.ParameterRegistry()):
        x, y = sd.Variable((1, 3)), sd.Variable((1, 2))
        z = L.Dense(2)(x)
        learner = _learner(kind, sd.get_parameters())
        trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y),), [learner])
    trainer.train_minibatch({x: data["x"][:3], y: data["y"][:3]})
    source = MinibatchSourceFromData(data, randomize=False)
    rates = Rates()
    trainer.fit(source, {x: source.streams.x, y: source.streams.y}, epochs=2,
                minibatch_size=4, callbacks=[rates], progress_bar=False)
    assert rates.begins == RATES[:2]
    assert rates.after == [(0, 4, 0.5), (0, 4, 0.5), (0, 2, 0.05),
                           (1, 4, 0.05), (1, 4, 0.05), (1, 2, 0.005)]
