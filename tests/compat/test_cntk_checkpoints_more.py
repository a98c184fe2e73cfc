"""CNTK 2.7's trainer checkpoints, the rest (``tests/fixtures/cntk_checkpoints/``, written by
``make_learners.py`` there): the learners beyond sgd/momentum/adam/adagrad/rmsprop, the
distributed learner on one worker, parameters of rank 3 and 4 (a convolutional net), the
learning-rate schedule a restore takes from the checkpoint, ``Learner.create_checkpoint`` /
``restore_from_checkpoint``, and a torn pair."""

import importlib.util
import json
import os
import shutil
import subprocess

import numpy as np
import pytest
import peers

import stadyn.compat.cntk as C
from stadyn import ModelFileError
from stadyn.compat.cntk._learner_api import Dictionary
from stadyn.serialize import _cntk_checkpoint as K
from test_cntk_checkpoints import _typed  # (the .ckp Dictionary as nested types)

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "cntk_checkpoints")
_spec = importlib.util.spec_from_file_location("ckpt_network_more",
                                               os.path.join(FIXTURES, "network.py"))
network = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(network)
with open(os.path.join(FIXTURES, "more_losses.json")) as _f:
    CNTK_LOSSES = json.load(_f)
with open(os.path.join(FIXTURES, "more.json")) as _f:
    CNTK_MORE = json.load(_f)
CASES = [("regressor", k) for k in network.MORE_LEARNERS] + \
    [("conv", k) for k in network.CONV_LEARNERS]
IDS = [f"{n}-{k}" for n, k in CASES]


def _build(net, kind):
    if net == "conv":
        x, y, z, trainer = network.build_conv(C, kind)
        return x, y, z, trainer, network.train_conv
    x, y, z, trainer = network.build(C, net, kind)
    return x, y, z, trainer, network.train


@pytest.mark.parametrize("net,kind", CASES, ids=IDS)
def test_restores_cntk_checkpoint_and_continues_with_cntk_losses(net, kind):
    x, y, z, trainer, train = _build(net, kind)
    assert trainer.restore_from_checkpoint(os.path.join(FIXTURES, f"{net}_{kind}.model")) \
        == {"epoch": 3}
    assert trainer.total_number_of_samples_seen == 12
    np.testing.assert_allclose(train(trainer, x, y, range(3, 6)),
                               CNTK_LOSSES[f"{net}_{kind}"], rtol=2e-5)


def _learner(typed):
    """The (first) learner of a typed .ckp, a distributed learner's inner one, seed dropped."""
    learner = typed["Learners"][1][0][1]
    learner = learner.get("localLearners", (10, learner))[1]
    learner.pop("noise_injection_seed")
    return learner


@pytest.mark.parametrize("net,kind", CASES, ids=IDS)
def test_writes_cntk_layout(tmp_path, net, kind):
    """The .ckp holds CNTK 2.7's keys, value types and array shapes (CNTK's own file of the
    same program; the convolutional net's smoothed gradients of rank 3 and 4 among them), the
    counts, schedule and smoothed gradients CNTK's values."""
    x, y, z, trainer, train = _build(net, kind)
    train(trainer, x, y, range(3))
    path = str(tmp_path / "run.model")
    trainer.save_checkpoint(path, {"epoch": 3})
    assert sorted(os.listdir(tmp_path)) == ["run.model", "run.model.ckp"]
    theirs = os.path.join(FIXTURES, f"{net}_{kind}.model")
    with open(path + ".ckp", "rb") as f, open(theirs + ".ckp", "rb") as g:
        mine, cntk = _typed(f.read()), _typed(g.read())
    mine.pop(K.DIGEST_KEY)
    assert _learner(mine) == _learner(cntk)
    assert {k: v for k, v in mine.items() if k != "Learners"} == \
        {k: v for k, v in cntk.items() if k != "Learners"}
    ours = K.read_checkpoint_file(path + ".ckp")["Learners"][0]
    cntk = K.read_checkpoint_file(theirs + ".ckp")["Learners"][0]
    for key in ("sample_count", "minibatchCount", "sweepCount", "learnig_rate_schedule",
                "master_parameter_updated"):
        assert ours.get(key) == cntk.get(key), key
    np.testing.assert_allclose(ours.get("smoothed_count", 0), cntk.get("smoothed_count", 0),
                               rtol=1e-6)
    for a, b in zip(ours["smoothed_gradients"], cntk["smoothed_gradients"]):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=1e-6)


_CNTK_PYTHON = peers.CNTK_PYTHON
_LIVE = """
import json, sys
sys.path.insert(0, {fixtures!r})
import cntk as C, network
out = {{}}
for net, kind in {cases!r}:
    if net == "conv":
        x, y, z, t = network.build_conv(C, kind)
        train = network.train_conv
    else:
        x, y, z, t = network.build(C, net, kind)
        train = network.train
    state = t.restore_from_checkpoint({folder!r} + "/" + net + "_" + kind + ".model")
    out[net + "_" + kind] = [state, t.total_number_of_samples_seen, train(t, x, y, range(3, 6))]
C.train.distributed.Communicator.finalize()
print("RESULT" + json.dumps(out))
"""


@pytest.mark.skipif(not os.path.exists(_CNTK_PYTHON), reason="CNTK 2.7 is not installed "
                    "(STADYN_CNTK_PYTHON); the committed fixtures are what CI checks")
def test_cntk_restores_stadyn_checkpoint_live(tmp_path):
    """CNTK 2.7 restores the pairs Stadyn wrote (each learner, the convolutional net) and
    continues with Stadyn's losses."""
    ours = {}
    for net, kind in CASES:
        x, y, z, trainer, train = _build(net, kind)
        train(trainer, x, y, range(3))
        trainer.save_checkpoint(str(tmp_path / f"{net}_{kind}.model"), {"epoch": 3})
        ours[f"{net}_{kind}"] = train(trainer, x, y, range(3, 6))
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
    run = subprocess.run([_CNTK_PYTHON, "-W", "ignore", "-c",
                          _LIVE.format(fixtures=FIXTURES, folder=str(tmp_path), cases=CASES)],
                         env=env, capture_output=True, text=True, timeout=300)
    line = [s for s in run.stdout.splitlines() if s.startswith("RESULT")]
    assert line, run.stdout[-2000:] + run.stderr[-2000:]
    theirs = json.loads(line[0][len("RESULT"):])
    for name, losses in ours.items():
        state, samples, cntk_losses = theirs[name]
        assert state == {"epoch": 3} and samples == 12, name
        np.testing.assert_allclose(cntk_losses, losses, rtol=2e-5, err_msg=name)


def _regressor(lr, kind="sgd"):
    """``make_learners.py``'s regressor: sgd at ``lr``, or momentum_sgd with momentum 0.5."""
    x, y = C.input_variable(3, name="x"), C.input_variable(1, name="y")
    z = C.layers.Dense(1, init=C.glorot_uniform(seed=1), name="d")(x)
    learner = C.sgd(z.parameters, lr) if kind == "sgd" else \
        C.momentum_sgd(z.parameters, lr, C.momentum_schedule(0.5))
    return x, y, z, C.Trainer(z, ((z - y) * (z - y), C.abs(z - y)), [learner])


def _rates_and_losses(trainer, x, y, minibatches):
    rates, losses = [], []
    for i in minibatches:
        rates.append(trainer.parameter_learners[0].learning_rate())
        losses += network.train(trainer, x, y, [i])
    return {"rates": rates, "losses": losses}


@pytest.mark.parametrize("case", ["schedule", "reset"])
def test_restore_takes_the_checkpoint_learning_rate_schedule(case):
    """CNTK 2.7's restore replaces the learner's rate schedule with the checkpoint's
    (``Learner.cpp:393-395``): restored into an sgd of constant rate 0.5, the rates and losses
    are those of the saved schedule (``[0.1, 0.05, 0.01]`` per 8 samples; and reset to
    ``[0.3, 0.2]`` per 4 after 4 samples).  Stadyn kept the program's 0.5."""
    x, y, z, trainer = _regressor(C.learning_parameter_schedule(0.5))
    trainer.restore_from_checkpoint(os.path.join(FIXTURES, f"{case}_sgd.model"))
    got = _rates_and_losses(trainer, x, y, range(3, 6))
    np.testing.assert_allclose(got["rates"], CNTK_MORE[case]["rates"])
    np.testing.assert_allclose(got["losses"], CNTK_MORE[case]["losses"], rtol=2e-5)


def test_restore_keeps_the_program_momentum():
    """CNTK 2.7 keeps no momentum in a checkpoint: ``regressor_momentum_sgd.model`` (momentum
    0.9) restored into a momentum_sgd of momentum 0.5 continues with 0.5."""
    x, y, z, trainer = _regressor(C.learning_parameter_schedule(0.05), "momentum_sgd")
    trainer.restore_from_checkpoint(os.path.join(FIXTURES, "regressor_momentum_sgd.model"))
    got = _rates_and_losses(trainer, x, y, range(3, 6))
    np.testing.assert_allclose(got["losses"], CNTK_MORE["momentum"]["losses"], rtol=2e-5)


@pytest.mark.parametrize("case", ["schedule", "reset"])
def test_writes_the_schedule_as_cntk_does(tmp_path, case):
    """The .ckp's ``learnig_rate_schedule`` is the whole schedule (CNTK 2.7's file of the same
    program), not the current rate: ``{8: 0.1, 16: 0.05, 24: 0.01}``, or after the reset at 4
    samples ``{8: 0.3, 12: 0.2}`` (epoch size 4)."""
    x, y, z, trainer = _regressor(C.learning_parameter_schedule([0.1, 0.05, 0.01],
                                                                epoch_size=8))
    network.train(trainer, x, y, range(1))
    if case == "reset":
        trainer.parameter_learners[0].reset_learning_rate(
            C.learning_parameter_schedule([0.3, 0.2], epoch_size=4))
    network.train(trainer, x, y, range(1, 3))
    trainer.save_checkpoint(str(tmp_path / "a.model"))
    mine = K.read_checkpoint_file(str(tmp_path / "a.model.ckp"))["Learners"][0]
    theirs = K.read_checkpoint_file(os.path.join(FIXTURES, f"{case}_sgd.model.ckp"))[
        "Learners"][0]
    assert mine["learnig_rate_schedule"] == theirs["learnig_rate_schedule"]
    # and the pair resumes with the same rates
    x, y, z, again = _regressor(C.learning_parameter_schedule(0.5))
    again.restore_from_checkpoint(str(tmp_path / "a.model"))
    np.testing.assert_allclose(_rates_and_losses(again, x, y, range(3, 6))["rates"],
                               CNTK_MORE[case]["rates"])


def test_learner_create_checkpoint_is_cntks_learner_dictionary():
    """``Learner.create_checkpoint()`` gives the learner's Dictionary as CNTK 2.7 does (the one
    its trainer writes in the .ckp: ``regressor_adam.model.ckp``), keys, counts, schedule and
    smoothed gradients; ``restore_from_checkpoint`` takes CNTK's and gives its counts and
    rate; a Dictionary of another learner kind is a RuntimeError that changes nothing."""
    x, y, z, trainer = network.build(C, "regressor", "adam")
    network.train(trainer, x, y, range(3))
    learner = trainer.parameter_learners[0]
    mine = learner.create_checkpoint()
    cntk = K.read_checkpoint_file(os.path.join(FIXTURES, "regressor_adam.model.ckp"))[
        "Learners"][0]
    assert sorted(mine.keys()) == sorted(cntk) and mine.contains("smoothed_count")
    for key in ("sample_count", "minibatchCount", "sweepCount", "learnig_rate_schedule",
                "smoothed_count", "master_parameter_updated", "type", "version"):
        assert mine[key] == cntk[key], key
    for a, b in zip(mine["smoothed_gradients"], cntk["smoothed_gradients"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    cntk = Dictionary(cntk)     # (CNTK 2.7's Python reads it as a Dictionary)
    x, y, z, other = network.build(C, "regressor", "adam")
    fresh = other.parameter_learners[0]
    fresh.restore_from_checkpoint(cntk)
    assert fresh.total_number_of_samples_seen() == 12
    assert fresh.total_number_of_minibatches_seen() == 3
    sgd = C.sgd(z.parameters, C.learning_parameter_schedule(0.05))
    with pytest.raises(RuntimeError, match="another kind"):       # (CNTK 2.7: RuntimeError)
        sgd.restore_from_checkpoint(cntk)
    assert sgd.total_number_of_samples_seen() == 0
    with pytest.raises(RuntimeError, match="sample_count"):
        sgd.restore_from_checkpoint(Dictionary())
    for plain in ({}, dict(cntk)):     # CNTK 2.7 takes its Dictionary only (TypeError: in
        with pytest.raises(TypeError, match="CNTK::Dictionary"):    # method 'Learner_...')
            sgd.restore_from_checkpoint(plain)
    with pytest.raises(ValueError, match="null reference"):
        sgd.restore_from_checkpoint(None)


def test_torn_cntk_pair_of_the_same_network_restores_as_cntk_does(tmp_path):
    """A CNTK-written .ckp keeps no digest of its model file: CNTK 2.7 restores a pair whose
    model and .ckp come from two saves of the same network without a word (run there: the
    model file's parameters, the .ckp's counts and external state).  So does Stadyn: nothing
    in such a pair tells the two saves apart.  (A .ckp of another network is refused, by CNTK
    2.7 as by Stadyn: the smoothed gradients' shapes.)"""
    shutil.copy(os.path.join(FIXTURES, "schedule_sgd.model"), tmp_path / "t.model")
    shutil.copy(os.path.join(FIXTURES, "reset_sgd.model.ckp"), tmp_path / "t.model.ckp")
    x, y, z, trainer = _regressor(C.learning_parameter_schedule(0.5))
    trainer.restore_from_checkpoint(str(tmp_path / "t.model"))
    x2, y2, z2, model = _regressor(C.learning_parameter_schedule(0.5))
    model.restore_from_checkpoint(os.path.join(FIXTURES, "schedule_sgd.model"))
    for p, q in zip(z.parameters, z2.parameters):
        np.testing.assert_array_equal(p.value, q.value)
    assert trainer.parameter_learners[0].learning_rate() == CNTK_MORE["reset"]["rates"][0]
    # (run on CNTK 2.7: "Shape '[3 x 1]' of the smoothed gradient value restored from
    # checkpoint for the parameter 'Parameter('W', [], [3 x 1])' ... does not match")
    shutil.copy(os.path.join(FIXTURES, "regressor_momentum_sgd.model"), tmp_path / "m.model")
    shutil.copy(os.path.join(FIXTURES, "classifier_momentum_sgd.model.ckp"),
                tmp_path / "m.model.ckp")
    x, y, z, trainer = _regressor(C.learning_parameter_schedule(0.05), "momentum_sgd")
    with pytest.raises(ModelFileError, match="m.model.ckp.*shape"):
        trainer.restore_from_checkpoint(str(tmp_path / "m.model"))
    assert trainer.total_number_of_samples_seen == 0


def test_schedule_without_cntk_form_keeps_stadyn_checkpoint(tmp_path):
    """A Stadyn cosine schedule has no CNTK 2.7 form: the checkpoint is Stadyn's own (with a
    warning naming why), and a restore keeps the cosine's rates (a constant standing in for it
    in a .ckp would replace the schedule on restore)."""
    from stadyn.schedules import cosine
    x, y, z, trainer = _regressor(cosine(0.1, 40))
    network.train(trainer, x, y, range(2))
    path = str(tmp_path / "c.model")
    with pytest.warns(UserWarning, match="schedule"):
        trainer.save_checkpoint(path)
    assert os.listdir(tmp_path) == ["c.model"]
    straight = _rates_and_losses(trainer, x, y, range(2, 5))
    trainer.restore_from_checkpoint(path)
    assert _rates_and_losses(trainer, x, y, range(2, 5)) == straight


def _sweep_step(trainer, x, y, i, end):
    rate = trainer.parameter_learners[0].learning_rate()
    trainer.train_minibatch({x: network.X[4 * i:4 * i + 4], y: network.TARGETS[4 * i:4 * i + 4]},
                            is_sweep_end=end)
    return rate, float(trainer.previous_minibatch_loss_average)


def test_schedule_per_sweep_both_ways(tmp_path):
    """A rate per data sweep (``learning_parameter_schedule([0.1, 0.05, 0.01])``: CNTK's
    counts are sweeps, ``epoch_size`` 0): CNTK 2.7's pair, saved after one sweep ended,
    restores into a constant 0.5 and continues at 0.05, 0.01, 0.01 (``sweep_sgd.model``); the
    pair Stadyn writes of the same run holds CNTK's schedule and sweep count."""
    x, y, z, trainer = _regressor(C.learning_parameter_schedule(0.5))
    trainer.restore_from_checkpoint(os.path.join(FIXTURES, "sweep_sgd.model"))
    steps = [_sweep_step(trainer, x, y, i, i == 3) for i in range(3, 6)]
    np.testing.assert_allclose([r for r, _ in steps], CNTK_MORE["sweep"]["rates"])
    np.testing.assert_allclose([v for _, v in steps], CNTK_MORE["sweep"]["losses"], rtol=2e-5)
    x, y, z, trainer = _regressor(C.learning_parameter_schedule([0.1, 0.05, 0.01]))
    for i in range(3):
        _sweep_step(trainer, x, y, i, i == 1)
    trainer.save_checkpoint(str(tmp_path / "s.model"))
    mine = K.read_checkpoint_file(str(tmp_path / "s.model.ckp"))["Learners"][0]
    theirs = K.read_checkpoint_file(os.path.join(FIXTURES, "sweep_sgd.model.ckp"))[
        "Learners"][0]
    for key in ("learnig_rate_schedule", "sweepCount", "sample_count"):
        assert mine[key] == theirs[key], key


@pytest.mark.parametrize("kind", ["adam", "rmsprop"])
def test_smoothed_count_counts_the_updates_begun(kind):
    """adam's and rmsprop's ``smoothed_count`` is the updates begun, refused ones too (run on
    CNTK 2.7: an adam that refuses a float64 gradient, then takes 2 updates, gives
    ``smoothed_count`` 3.0, ``minibatchCount`` 2; a learner restored from it takes the next
    update as the original does).  Stadyn wrote 2.0 and restored a count one behind."""
    w = C.parameter((2,), init=0.5)
    make = {"adam": lambda p: C.adam([p], C.learning_parameter_schedule(0.1),
                                     C.momentum_schedule(0.9)),
            "rmsprop": lambda p: C.rmsprop([p], C.learning_parameter_schedule(0.1), 0.95, 1.5,
                                           0.5, 5.0, 1e-3)}[kind]
    learner = make(w)
    with pytest.raises(RuntimeError):
        learner.update({w: np.ones(2, np.float64)}, 1)
    learner.update({w: np.ones(2, np.float32)}, 1)
    learner.update({w: np.full(2, 0.5, np.float32)}, 1)
    state = learner.create_checkpoint()
    assert (state["smoothed_count"], state["minibatchCount"]) == (3.0, 2)
    w2 = C.parameter((2,), init=0.0)
    w2.value = w.value
    again = make(w2)
    again.restore_from_checkpoint(state)
    learner.update({w: np.full(2, 0.25, np.float32)}, 1)
    again.update({w2: np.full(2, 0.25, np.float32)}, 1)
    np.testing.assert_array_equal(w2.value, w.value)


def test_distributed_learner_create_checkpoint_is_cntks():
    """A ``data_parallel_distributed_learner``'s ``create_checkpoint()`` is CNTK 2.7's
    ``{localLearners, totalNumberOfSamplesSeen}`` (the learner entry of
    ``regressor_distributed.model.ckp``), and ``restore_from_checkpoint`` takes it back."""
    from stadyn.serialize._cntk_format import _decode_file
    x, y, z, trainer = network.build(C, "regressor", "distributed")
    network.train(trainer, x, y, range(3))
    learner = trainer.parameter_learners[0]
    mine = learner.create_checkpoint()
    path = os.path.join(FIXTURES, "regressor_distributed.model.ckp")
    with open(path, "rb") as f:
        cntk = _decode_file(path, f.read())["Learners"][0]
    assert sorted(mine.keys()) == sorted(cntk) == ["localLearners", "totalNumberOfSamplesSeen"]
    assert mine["totalNumberOfSamplesSeen"] == cntk["totalNumberOfSamplesSeen"] == 12
    assert sorted(mine["localLearners"]) == sorted(cntk["localLearners"])
    x, y, z, other = network.build(C, "regressor", "distributed")
    other.parameter_learners[0].restore_from_checkpoint(Dictionary(cntk))
    assert other.parameter_learners[0].total_number_of_samples_seen == 12


def test_restore_takes_the_rate_reference_minibatch_too(tmp_path):
    """The schedule a restore takes keeps its reference minibatch size (run on CNTK 2.7: a
    rate of 0.02 per sample, saved, restored into a trainer of 0.3 per minibatch, goes on as
    the uninterrupted run, at 0.02 per sample)."""
    x, y, z, trainer = _regressor(C.learning_parameter_schedule_per_sample(0.02))
    network.train(trainer, x, y, range(3))
    path = str(tmp_path / "p.model")
    trainer.save_checkpoint(path)
    straight = network.train(trainer, x, y, range(3, 5))
    x, y, z, again = _regressor(C.learning_parameter_schedule(0.3))
    again.restore_from_checkpoint(path)
    assert again.parameter_learners[0].learning_rate() == 0.02
    assert network.train(again, x, y, range(3, 5)) == straight


@pytest.mark.parametrize("kind,saved", [("momentum_sgd", "distributed"),
                                        ("distributed", "momentum_sgd")])
def test_distributed_and_plain_checkpoints_do_not_cross(kind, saved):
    """A distributed learner's .ckp restored into a trainer of a plain learner, or a plain
    one's into a distributed one, is a RuntimeError naming the file, nothing restored.
    CNTK 2.7 on these fixtures (``network.build(cntk, "regressor", kind)`` then
    ``restore_from_checkpoint``): ``RuntimeError: Required key 'version' is not found in the
    dictionary.`` for the first, ``RuntimeError: _Map_base::at`` for the second."""
    x, y, z, trainer = network.build(C, "regressor", kind)
    before = [p.value.copy() for p in z.parameters]
    path = os.path.join(FIXTURES, f"regressor_{saved}.model")
    with pytest.raises(RuntimeError, match=r"regressor_%s\.model\.ckp: learner 0 was saved by "
                       % saved) as info:
        trainer.restore_from_checkpoint(path)
    assert isinstance(info.value, ModelFileError)
    for p, b in zip(z.parameters, before):
        np.testing.assert_array_equal(p.value, b)
    assert trainer.total_number_of_samples_seen == 0


def test_stadyn_written_distributed_checkpoint_refused_by_a_plain_trainer(tmp_path):
    """The same for the pair Stadyn writes: a distributed trainer's save restores into a
    distributed trainer, not a plain one."""
    x, y, z, trainer = network.build(C, "regressor", "distributed")
    network.train(trainer, x, y, range(2))
    path = str(tmp_path / "d.model")
    trainer.save_checkpoint(path)
    x, y, z, same = network.build(C, "regressor", "distributed")
    same.restore_from_checkpoint(path)
    assert same.total_number_of_samples_seen == 8
    x, y, z, plain = network.build(C, "regressor", "momentum_sgd")
    with pytest.raises(RuntimeError, match=r"d\.model\.ckp: learner 0 was saved by a "
                       "distributed learner, the trainer's is a plain one"):
        plain.restore_from_checkpoint(path)


def _lstm_trainer(top_n=1):
    x, y = C.sequence.input_variable(2), C.sequence.input_variable(3)
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(3)), C.layers.Dense(3)])(x)
    for p in z.parameters:
        p.value = (np.sin(np.arange(p.value.size) + p.value.size) * 0.3).reshape(
            p.value.shape).astype(np.float32)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y),
                            C.classification_error(z, y, topN=top_n)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    return x, y, z, trainer


def test_stadyn_lstm_checkpoint_restores_into_a_second_model(tmp_path):
    """An LSTM's checkpoint in Stadyn's format (CNTK's writer has no form of its top-2 error
    over sequences)
    restores into the same network built again in the same process, whose generated
    constant names differ (``constant0`` saved, ``constant1`` now): Stadyn refused it by
    name; CNTK 2.7 restores its own pair of this network and goes on with the same loss."""
    r = np.random.RandomState(0)
    xs = [r.randn(n, 2).astype(np.float32) for n in (3, 2, 4)]
    ys = [np.eye(3, dtype=np.float32)[r.randint(0, 3, n)] for n in (3, 2, 4)]
    x, y, z, trainer = _lstm_trainer(top_n=2)
    trainer.train_minibatch({x: xs, y: ys})
    path = str(tmp_path / "lstm.model")
    with pytest.warns(UserWarning):
        trainer.save_checkpoint(path, {"epoch": 1})
    x2, y2, z2, again = _lstm_trainer(top_n=2)
    assert again.restore_from_checkpoint(path) == {"epoch": 1}
    assert again.total_number_of_samples_seen == 9
    for a, b in zip(z.parameters, z2.parameters):
        np.testing.assert_array_equal(a.value, b.value)
    trainer.train_minibatch({x: xs, y: ys})
    again.train_minibatch({x2: xs, y2: ys})
    assert again.previous_minibatch_loss_average == trainer.previous_minibatch_loss_average
