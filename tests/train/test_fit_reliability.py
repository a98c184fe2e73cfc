"""Trainer.fit and checkpoints: nothing silent, nothing lost.

A NaN loss stops training with the epoch and minibatch named and the last good checkpoint kept; a
resumed run with dropout draws the masks the uninterrupted run drew; a damaged checkpoint changes
nothing and names the file; an unwritable checkpoint folder fails before training; a finished
run says so.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import random
import tempfile

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
import stadyn.solvers as S
from stadyn.io import MinibatchSourceFromData
from stadyn.train import NonFiniteLossError, Trainer


pytestmark = pytest.mark.usefixtures("fresh_parameters")


def _data(n=96, seed=0, nan_at=None):
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 3, n)
    features = (np.eye(3)[labels] @ rng.randn(3, 6) + 0.3 * rng.randn(n, 6)).astype(np.float32)
    if nan_at is not None:
        features[nan_at, 2] = np.nan
    return {"features": features, "labels": np.eye(3, dtype=np.float32)[labels]}


def _trainer(dropout=0.0, seed=0, writers=()):
    sd.seed(seed)
    x, y = sd.Variable((1, 6)), sd.Variable((1, 3))
    layers = [L.Dense(16, activation=L.relu)]
    if dropout:
        layers.append(L.Dropout(dropout))
    z = L.Sequential(layers + [L.Dense(3)])(x)
    solver = S.Adam(alpha=0.01)
    solver.set_parameters(sd.get_parameters())
    trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y), F.classification_error(z, y)),
                      [solver], list(writers))
    return x, y, trainer


def _fit(trainer, x, y, data, **kwargs):
    source = MinibatchSourceFromData(data, randomize=kwargs.pop("randomize", False))
    kwargs.setdefault("minibatch_size", 16)
    return trainer.fit(source, {x: source.streams.features, y: source.streams.labels},
                       progress_bar=kwargs.pop("progress_bar", False), **kwargs)


def _parameters() -> dict[str, np.ndarray]:
    return {k: v.d.copy() for k, v in sd.get_parameters().items()}


# ---------------------------------------------------------------------------------------------
# A NaN loss stops training; the last good checkpoint stays
# ---------------------------------------------------------------------------------------------
def test_a_nan_sample_stops_fit_naming_epoch_and_minibatch_and_keeps_the_checkpoint(tmp_path):
    """It used to train on and overwrite the checkpoint with NaN weights every epoch."""
    path = tmp_path / "run.ckpt"
    saved = {}

    def keep(record):
        saved[record["epoch"]] = path.read_bytes()

    x, y, trainer = _trainer()
    # epochs of 48 samples: the NaN sample (index 70) is the 2nd epoch's minibatch 2
    with pytest.raises(NonFiniteLossError, match=r"loss is nan in epoch 2, minibatch 2 "
                                                 r"\(counted from 1\).*run\.ckpt keeps the "
                                                 r"state after epoch 1") as info:
        _fit(trainer, x, y, _data(nan_at=70), epochs=4, epoch_size=48, checkpoint=path,
             callbacks=[keep])
    assert (info.value.epoch, info.value.minibatch) == (2, 2)
    assert isinstance(info.value, FloatingPointError)
    assert list(saved) == [0] and path.read_bytes() == saved[0]
    # the failing minibatch was not applied: the weights in memory are finite too
    assert all(np.isfinite(v).all() for v in _parameters().values())
    assert trainer.total_number_of_samples_seen == 48 + 16
    # the checkpoint resumes: a run on clean data continues from epoch 2
    with sd.parameter_registry(sd.ParameterRegistry()):
        x2, y2, resumed = _trainer(seed=5)
        history = _fit(resumed, x2, y2, _data(), epochs=2, epoch_size=48, checkpoint=path)
    assert [r["epoch"] for r in history] == [1]


# ---------------------------------------------------------------------------------------------
# Resuming with dropout continues the same curve
# ---------------------------------------------------------------------------------------------
def _dropout_run(checkpoint, epochs=4, interrupt_after=None):
    with sd.parameter_registry(sd.ParameterRegistry()):
        x, y, trainer = _trainer(dropout=0.5)

        def interrupt(record):
            if record["epoch"] == interrupt_after:
                raise KeyboardInterrupt
        try:
            return _fit(trainer, x, y, _data(), epochs=epochs, checkpoint=checkpoint,
                        randomize=True, callbacks=[interrupt])
        except KeyboardInterrupt:
            return None


def test_a_resumed_run_with_dropout_gives_exactly_the_uninterrupted_curve(tmp_path):
    """The random generators were not in the checkpoint: 0.4238 against 0.4459 at epoch 2."""
    full = _dropout_run(tmp_path / "a.ckpt")
    assert _dropout_run(tmp_path / "b.ckpt", interrupt_after=1) is None
    # a fresh process would start its generators elsewhere
    torch.manual_seed(1234)
    np.random.seed(1234)
    random.seed(1234)
    resumed = _dropout_run(tmp_path / "b.ckpt")
    assert [r["epoch"] for r in resumed] == [2, 3]
    assert [(r["loss"], r["metric"]) for r in resumed] == \
        [(r["loss"], r["metric"]) for r in full[2:]]


def test_the_checkpoint_restores_every_generator_the_run_draws_from(tmp_path):
    from stadyn._random import prng
    x, y, trainer = _trainer()
    path = tmp_path / "g.ckpt"
    trainer.save_checkpoint(path)
    draws = [torch.rand(3), prng.rand(3), np.random.rand(3), random.random()]
    for _ in range(2):
        torch.rand(5), prng.rand(5), np.random.rand(5), random.random()
    trainer.restore_from_checkpoint(path)
    again = [torch.rand(3), prng.rand(3), np.random.rand(3), random.random()]
    assert torch.equal(draws[0], again[0])
    np.testing.assert_array_equal(draws[1], again[1])
    np.testing.assert_array_equal(draws[2], again[2])
    assert draws[3] == again[3]


def test_a_learners_own_noise_generator_is_in_the_checkpoint(tmp_path):
    from stadyn.learners import sgd
    x, y = sd.Variable((1, 6)), sd.Variable((1, 3))
    z = L.Dense(3)(x)
    learner = sgd(list(sd.get_parameters().values()), 0.01,
                  gaussian_noise_injection_std_dev=0.1)
    learner.generator = torch.Generator().manual_seed(3)
    trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y),), [learner])
    trainer.save_checkpoint(tmp_path / "n.ckpt")
    drawn = torch.randn(4, generator=learner.generator)
    trainer.restore_from_checkpoint(tmp_path / "n.ckpt")
    assert torch.equal(torch.randn(4, generator=learner.generator), drawn)


# ---------------------------------------------------------------------------------------------
# A damaged checkpoint changes nothing and names the file
# ---------------------------------------------------------------------------------------------
def _rewrite(path, edit) -> None:
    from safetensors import safe_open
    from safetensors.torch import save_file
    with safe_open(str(path), framework="pt") as f:
        meta = dict(f.metadata())
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    edit(meta, tensors)
    save_file(tensors, str(path), metadata=meta)


def _first_learner_tensor(tensors):
    return next(k for k in tensors if k.startswith("learner0/"))


_DAMAGE = {
    "no learner metadata": (lambda m, t: m.pop("learners"), "has no 'learners'"),
    "learner metadata not JSON": (lambda m, t: m.update(learners="[{"), "'learners' is not valid"),
    "trainer counters not JSON": (lambda m, t: m.update(trainer="{oops"), "'trainer' is not valid"),
    "a negative counter": (lambda m, t: m.update(trainer=json.dumps(
        {"total_number_of_samples_seen": -1, "minibatches_seen": 0})),
        "total_number_of_samples_seen"),
    "a missing parameter": (lambda m, t: t.pop(next(k for k in t if k.startswith("param/"))),
                            "has no parameter"),
    "a learner state of another shape": (lambda m, t: t.update(
        {_first_learner_tensor(t): torch.zeros(7)}), r"learner 0: .*shape \(7,\)"),
    "a NaN learning rate": (lambda m, t: m.update(learners=json.dumps(
        [dict(json.loads(m["learners"])[0], **{"hyper::alpha": float("nan")})])),
        "alpha must be finite"),
    "a damaged generator state": (lambda m, t: t.update(
        {"rng/torch": torch.zeros(3, dtype=torch.uint8)}), "generator's state is damaged"),
}


@pytest.mark.parametrize("damage", sorted(_DAMAGE))
def test_a_damaged_checkpoint_changes_nothing_and_names_the_file(damage, tmp_path):
    """Weights used to be copied before a raw KeyError: 'learners' (naming no file)."""
    edit, message = _DAMAGE[damage]
    data = _data()
    x, y, trainer = _trainer()
    path = tmp_path / "damaged.ckpt"
    _fit(trainer, x, y, data, epochs=1, checkpoint=path)
    _rewrite(path, edit)
    with sd.parameter_registry(sd.ParameterRegistry()):
        x2, y2, other = _trainer(seed=7)
        _fit(other, x2, y2, data, epochs=1, epoch_size=32)
        before = _parameters()
        solver_state = {k: ({n: v.data.clone() for n, v in s.pstate.items()}, s.t)
                        for k, s in other.parameter_learners[0].get_states().items()}
        counters = other.total_number_of_samples_seen, other.minibatches_seen
        with pytest.raises(sd.ModelFileError, match=rf"damaged\.ckpt: .*({message})"):
            other.restore_from_checkpoint(path)
        after = _parameters()
        for k in before:
            np.testing.assert_array_equal(after[k], before[k], err_msg=k)
        for k, s in other.parameter_learners[0].get_states().items():
            assert s.t == solver_state[k][1], f"{k}/t"
            assert set(s.pstate) == set(solver_state[k][0]), k
            for n, v in s.pstate.items():
                assert torch.equal(v.data, solver_state[k][0][n]), f"{k}/{n}"
        assert other.parameter_learners[0].hyper["alpha"] == 0.01
        assert (other.total_number_of_samples_seen, other.minibatches_seen) == counters


# ---------------------------------------------------------------------------------------------
# An unwritable checkpoint folder fails before training
# ---------------------------------------------------------------------------------------------
def test_an_unwritable_checkpoint_folder_fails_before_any_training(tmp_path, monkeypatch):
    """A read-only disk used to cost a whole epoch before the checkpoint write failed."""
    folder = tmp_path / "ro"
    folder.mkdir()
    real = tempfile.mkstemp

    def read_only(*args, dir=None, **kwargs):
        if dir is not None and os.path.abspath(dir) == str(folder):
            raise OSError(errno.EROFS, "Read-only file system", str(dir))
        return real(*args, dir=dir, **kwargs)
    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    x, y, trainer = _trainer()
    with pytest.raises(sd.ModelFileError, match=r"run\.ckpt: cannot write a checkpoint in "
                                                r".*ro \(Read-only file system\)"):
        _fit(trainer, x, y, _data(), epochs=2, checkpoint=folder / "run.ckpt")
    assert trainer.total_number_of_samples_seen == 0
    assert os.listdir(folder) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes into read-only folders")
def test_a_read_only_checkpoint_folder_fails_before_any_training(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        x, y, trainer = _trainer()
        with pytest.raises(sd.ModelFileError, match="cannot write a checkpoint"):
            _fit(trainer, x, y, _data(), epochs=2, checkpoint=folder / "run.ckpt")
        assert trainer.total_number_of_samples_seen == 0
    finally:
        folder.chmod(0o755)


# ---------------------------------------------------------------------------------------------
# A finished run says so
# ---------------------------------------------------------------------------------------------
def test_fit_on_a_finished_checkpoint_says_it_is_already_trained(tmp_path):
    path = tmp_path / "done.ckpt"
    x, y, trainer = _trainer()
    assert len(_fit(trainer, x, y, _data(), epochs=2, checkpoint=path)) == 2
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("stadyn")
    logger.addHandler(handler)
    try:
        with sd.parameter_registry(sd.ParameterRegistry()):
            x2, y2, again = _trainer()
            assert _fit(again, x2, y2, _data(), epochs=2, checkpoint=path) == []
    finally:
        logger.removeHandler(handler)
    messages = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert len(messages) == 1
    assert "done.ckpt: already trained 2 epochs of the 2 asked for" in messages[0]


# ---------------------------------------------------------------------------------------------
# Float class ids fed to an integer input are whole numbers
# ---------------------------------------------------------------------------------------------
def test_fractional_class_ids_fed_to_an_integer_input_are_refused():
    x, t = sd.Variable((1, 6)), sd.Variable((1, 1), dtype=np.int64)
    z = L.Dense(3)(x)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(sd.get_parameters())
    trainer = Trainer(z, (F.softmax_cross_entropy(z, t), F.top_n_error(z, t)), [solver])
    rng = np.random.RandomState(0)
    trainer.train_minibatch({x: rng.rand(4, 6), t: np.array([[0.0], [2.0], [1.0], [1.0]])})
    before = _parameters()
    with pytest.raises(sd.DataError, match="not whole; they would be truncated"):
        trainer.train_minibatch({x: rng.rand(4, 6), t: np.array([[0.0], [2.7], [1.0], [1.0]])})
    for k, v in _parameters().items():
        np.testing.assert_array_equal(v, before[k])


def test_class_ids_given_as_torch_tensors_are_checked_too():
    """Tensors are checked as tensors: whole numbers pass, a fraction is refused before any
    update (both kinds of minibatch data, NumPy arrays above and tensors here)."""
    x, t = sd.Variable((1, 6)), sd.Variable((1, 1), dtype=np.int64)
    z = L.Dense(3)(x)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(sd.get_parameters())
    trainer = Trainer(z, (F.softmax_cross_entropy(z, t), F.top_n_error(z, t)), [solver])
    features = torch.rand(3, 6, generator=torch.Generator().manual_seed(0))
    assert trainer.train_minibatch({x: features, t: torch.tensor([[0.0], [2.0], [1.0]])})
    before = _parameters()
    with pytest.raises(sd.DataError, match="not whole; they would be truncated"):
        trainer.train_minibatch({x: features, t: torch.tensor([[0.0], [1.5], [1.0]])})
    for k, v in _parameters().items():
        np.testing.assert_array_equal(v, before[k])


def test_fractional_class_ids_fed_to_a_float_target_are_refused_on_the_host():
    """Checked where the data is, so a GPU run (where the op cannot check) refuses them too."""
    x, t = sd.Variable((1, 6)), sd.Variable((1, 1))
    z = L.Dense(3)(x)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(sd.get_parameters())
    trainer = Trainer(z, (F.mean(F.softmax_cross_entropy(z, t)),), [solver])
    rng = np.random.RandomState(0)
    trainer.train_minibatch({x: rng.rand(2, 6), t: np.array([[0.0], [2.0]], np.float32)})
    with pytest.raises(sd.DataError, match=r"input .*\(2, 1\).* holds class ids.*not whole"):
        trainer.train_minibatch([rng.rand(2, 6), np.array([[0.0], [0.5]], np.float32)])
