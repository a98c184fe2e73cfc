"""What ``Trainer.fit`` offers a loop of its own (the BrainScript runner is one): a minibatch
size per epoch, extra outputs per minibatch, a start epoch, leaving a NaN to the callbacks, and
(test_fit_data_parallel.py) partitioned reads.  Counted with callbacks against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
import stadyn.solvers as S
from stadyn._errors import StadynError
from stadyn.io import MinibatchSourceFromData
from stadyn.train import NonFiniteLossError, Trainer, TrainingCallback

pytestmark = pytest.mark.usefixtures("fresh_parameters")


class Record(TrainingCallback):
    """Every minibatch record and every epoch begun."""

    def __init__(self):
        self.steps, self.epochs = [], []

    def on_epoch_begin(self, trainer, epoch):
        self.epochs.append(epoch)

    def on_minibatch_end(self, trainer, record):
        self.steps.append(dict(record))

    def sizes(self, epoch):
        return [r["samples"] for r in self.steps if r["epoch"] == epoch]


def _data(n=10, nan_at=None):
    rng = np.random.RandomState(0)
    x = rng.randn(n, 3).astype(np.float32)
    if nan_at is not None:
        x[nan_at, 1] = np.nan
    return {"x": x, "y": np.eye(2, dtype=np.float32)[rng.randint(0, 2, n)]}


def _trainer(lr=0.1):
    sd.seed(0)
    x, y = sd.Variable((1, 3)), sd.Variable((1, 2))
    z = L.Dense(2)(x)
    solver = S.Sgd(lr=lr)
    solver.set_parameters(sd.get_parameters())
    return x, y, Trainer(z, (F.cross_entropy_with_softmax(z, y), F.classification_error(z, y)),
                         [solver])


def _fit(data, **kwargs):
    x, y, trainer = _trainer(kwargs.pop("lr", 0.1))
    source = MinibatchSourceFromData(data, randomize=False)
    record = Record()
    history = trainer.fit(source, {x: source.streams.x, y: source.streams.y},
                          callbacks=[record], progress_bar=False, **kwargs)
    return trainer, record, history, x


def test_minibatch_size_per_epoch_list_last_entry_repeats():
    # 10 samples an epoch: minibatches of 4 in epoch 0, of 3 from epoch 1 on; each epoch's last
    # minibatch is cut at the epoch's end
    _, record, history, _ = _fit(_data(), epochs=3, epoch_size=10, minibatch_size=[4, 3])
    assert record.sizes(0) == [4, 4, 2]
    assert record.sizes(1) == record.sizes(2) == [3, 3, 3, 1]
    assert [h["samples"] for h in history] == [10, 10, 10]


def test_minibatch_size_as_a_function_of_the_epoch():
    _, record, _, _ = _fit(_data(), epochs=2, epoch_size=10,
                           minibatch_size=lambda epoch: 5 * (epoch + 1))
    assert record.sizes(0) == [5, 5]
    assert record.sizes(1) == [10]


@pytest.mark.parametrize("size, message", [([4, 0], r"minibatch_size\[1\] must be"),
                                           ([], "per-epoch list is empty"),
                                           (2.5, "minibatch_size must be")])
def test_a_bad_minibatch_size_is_one_clear_error_before_training(size, message):
    x, y, trainer = _trainer()
    source = MinibatchSourceFromData(_data(), randomize=False)
    with pytest.raises(StadynError, match=message):
        trainer.fit(source, {x: source.streams.x, y: source.streams.y}, minibatch_size=size,
                    progress_bar=False)
    assert trainer.total_number_of_samples_seen == 0


def test_outputs_reach_every_minibatch_record():
    data = _data()
    x, y, trainer = _trainer()
    source = MinibatchSourceFromData(data, randomize=False)
    record = Record()
    total = F.sum(x)          # the minibatch's input values summed: NumPy knows it
    trainer.fit(source, {x: source.streams.x, y: source.streams.y}, epochs=1, minibatch_size=4,
                outputs=[total], callbacks=[record], progress_bar=False)
    expected = [data["x"][0:4].sum(), data["x"][4:8].sum(), data["x"][8:10].sum()]
    np.testing.assert_allclose([r["outputs"][0] for r in record.steps], expected, rtol=1e-5)


def test_initial_epoch_starts_there_and_keeps_the_schedule_of_that_epoch():
    _, record, history, _ = _fit(_data(), epochs=4, epoch_size=10, initial_epoch=2,
                                 minibatch_size=[4, 4, 5, 10])
    assert record.epochs == [2, 3]
    assert [h["epoch"] for h in history] == [2, 3]
    assert record.sizes(2) == [5, 5] and record.sizes(3) == [10]


def test_initial_epoch_at_the_end_trains_nothing():
    trainer, record, history, _ = _fit(_data(), epochs=2, initial_epoch=2)
    assert history == [] and record.steps == [] and trainer.total_number_of_samples_seen == 0


def test_a_nan_left_to_the_callbacks_is_applied_and_a_callback_error_stops_fit():
    """``stop_on_nonfinite=False``: the minibatch with the NaN is trained (its update applied,
    as CNTK did before its check) and a callback that raises ends ``fit`` with its error."""

    class StopOnNaN(Record):
        def on_minibatch_end(self, trainer, record):
            super().on_minibatch_end(trainer, record)
            if not np.isfinite(record["loss_sum"]):
                raise RuntimeError(f"NaN in minibatch {record['minibatch']}")

    x, y, trainer = _trainer()
    source = MinibatchSourceFromData(_data(nan_at=5), randomize=False)
    stop = StopOnNaN()
    with pytest.raises(RuntimeError, match="NaN in minibatch 2"):
        trainer.fit(source, {x: source.streams.x, y: source.streams.y}, minibatch_size=4,
                    stop_on_nonfinite=False, callbacks=[stop], progress_bar=False)
    assert trainer.total_number_of_samples_seen == 8          # minibatch 2 was counted ...
    weights = [p.d for p in trainer.parameters]
    assert not all(np.isfinite(w).all() for w in weights)     # ... and applied


def test_by_default_the_nan_stops_before_the_update():
    # the contrast to the test above: the same data, fit's default
    x, y, trainer = _trainer()
    source = MinibatchSourceFromData(_data(nan_at=5), randomize=False)
    with pytest.raises(NonFiniteLossError):
        trainer.fit(source, {x: source.streams.x, y: source.streams.y}, minibatch_size=4,
                    progress_bar=False)
    assert all(np.isfinite(p.d).all() for p in trainer.parameters)


@pytest.mark.parametrize("compile", ["program", pytest.param(True, marks=pytest.mark.slow)])
def test_outputs_with_a_compiled_step_equal_the_uncompiled_runs(compile):
    """``fit(outputs=...)`` with a compiled step: the step's program also computes the
    outputs, so every minibatch record holds the values the uncompiled Trainer computes (and
    the parameters end equal).  The outputs read the parameters before each update: a sum of
    the model's output and of an input."""
    data = _data()
    runs = []
    for mode in (False, compile):
        sd.seed(0)
        with sd.parameter_registry(sd.ParameterRegistry()):
            x, y = sd.Variable((1, 3)), sd.Variable((1, 2))
            z = L.Dense(2)(x)
            solver = S.Sgd(lr=0.1)
            solver.set_parameters(sd.get_parameters())
            trainer = Trainer(z, F.cross_entropy_with_softmax(z, y), [solver], compile=mode)
            source = MinibatchSourceFromData(data, randomize=False)
            record = Record()
            trainer.fit(source, {x: source.streams.x, y: source.streams.y}, epochs=2,
                        minibatch_size=4, outputs=[F.sum(z), F.sum(x)], callbacks=[record],
                        progress_bar=False)
            runs.append(([r["outputs"] for r in record.steps],
                         [p.d.copy() for p in trainer.parameters]))
    (outputs, params), (compiled_outputs, compiled_params) = runs
    assert len(outputs) == 6          # 4 + 4 + 2 samples, two epochs
    np.testing.assert_allclose(compiled_outputs, outputs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(outputs)[:3, 1], [data["x"][0:4].sum(),
                               data["x"][4:8].sum(), data["x"][8:10].sum()], rtol=1e-5)
    for a, b in zip(compiled_params, params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
