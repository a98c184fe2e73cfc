"""CNTK 2.7's trainer checkpoints through ``stadyn.compat.cntk``'s Trainer: the pairs CNTK 2.7
wrote (``tests/fixtures/cntk_checkpoints/``, by ``make_checkpoints.py`` there) restore and
continue with the losses CNTK 2.7 got; the pairs Stadyn writes have CNTK's layout (compared
with CNTK's own files of the same program) and CNTK 2.7 continues from them with Stadyn's
losses (live, where CNTK 2.7 is installed)."""

import importlib.util
import json
import os
import shutil
import subprocess
import warnings

import numpy as np
import pytest
import peers

import stadyn.compat.cntk as C
from stadyn import ModelFileError
from stadyn.serialize import _cntk_checkpoint as K
from stadyn._proto_schemas import cntk_messages

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "cntk_checkpoints")
_spec = importlib.util.spec_from_file_location("ckpt_network",
                                               os.path.join(FIXTURES, "network.py"))
network = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(network)
with open(os.path.join(FIXTURES, "losses.json")) as _f:
    CNTK_LOSSES = json.load(_f)
CASES = [(n, k) for n in network.NETWORKS for k in network.LEARNERS] + [("deep", "adam")]


def _trained(net, kind, minibatches=3):
    x, y, z, trainer = network.build(C, net, kind)
    network.train(trainer, x, y, range(minibatches))
    return x, y, z, trainer


@pytest.mark.parametrize("net,kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_restores_cntk_checkpoint_and_continues_with_cntk_losses(net, kind):
    x, y, z, trainer = network.build(C, net, kind)
    external = trainer.restore_from_checkpoint(os.path.join(FIXTURES, f"{net}_{kind}.model"))
    assert external == {"epoch": 3}
    assert trainer.total_number_of_samples_seen == 12
    assert trainer.parameter_learners[0].minibatches_seen == 3
    losses = network.train(trainer, x, y, range(3, 6))
    np.testing.assert_allclose(losses, CNTK_LOSSES[f"{net}_{kind}"], rtol=2e-5)


def _typed(value, top=True):
    """A Dictionary (protobuf) as nested ``{key: (value type, content)}``: what CNTK 2.7
    stores, with the types (size_t, double, string...) it gives each value."""
    def one(v):
        if v.value_type == 10:
            return (10, _typed(v.dictionary_value, False))
        if v.value_type == 9:
            return (9, [one(e) for e in v.vector_value.value])
        if v.value_type == 11:
            a = v.nd_array_view_value
            return (11, (a.data_type, tuple(a.shape.shape_dim)))
        return (v.value_type, None)
    msg = cntk_messages()["Dictionary"].FromString(value) if top else value
    return {e.key: one(e.value) for e in msg.data}


@pytest.mark.parametrize("kind", network.LEARNERS)
def test_writes_cntk_layout(tmp_path, kind):
    """The .ckp holds CNTK 2.7's keys, value types and array shapes (CNTK's own file of the
    same program), the values CNTK's; the model file CNTK's functions."""
    _, _, _, trainer = _trained("regressor", kind)
    path = str(tmp_path / "run.model")
    trainer.save_checkpoint(path, {"epoch": 3})
    assert sorted(os.listdir(tmp_path)) == ["run.model", "run.model.ckp"]
    theirs = os.path.join(FIXTURES, f"regressor_{kind}.model")
    with open(path + ".ckp", "rb") as f, open(theirs + ".ckp", "rb") as g:
        mine_bytes, their_bytes = f.read(), g.read()
    mine = _typed(mine_bytes)
    mine.pop(K.DIGEST_KEY)
    learner, their_learner = mine["Learners"][1][0][1], _typed(their_bytes)["Learners"][1][0][1]
    learner.pop("noise_injection_seed"), their_learner.pop("noise_injection_seed")
    assert mine == {**_typed(their_bytes),
                    "Learners": (9, [(10, their_learner)])}
    ours = K.read_checkpoint_file(path + ".ckp")["Learners"][0]
    cntk = K.read_checkpoint_file(theirs + ".ckp")["Learners"][0]
    for key in ("sample_count", "minibatchCount", "sweepCount", "learnig_rate_schedule",
                "smoothed_count"):
        assert ours.get(key) == cntk.get(key), key
    for a, b in zip(ours["smoothed_gradients"], cntk["smoothed_gradients"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    from stadyn.serialize._cntk_format import _decode_file

    def ops(p):
        top = _decode_file(p, open(p, "rb").read())
        return sorted((f["op"], f.get("name", "")) for f in top["primitive_functions"])
    assert ops(path) == ops(theirs)


@pytest.mark.parametrize("kind", ["adam", "rmsprop"])
def test_stadyn_pair_resumes_as_the_uninterrupted_run(tmp_path, kind):
    x, y, z, trainer = _trained("regressor", kind)
    path = str(tmp_path / "run.model")
    trainer.save_checkpoint(path, {"epoch": 3})
    straight = network.train(trainer, x, y, range(3, 6))
    x, y, z, again = network.build(C, "regressor", kind)
    assert again.restore_from_checkpoint(path) == {"epoch": 3}
    assert network.train(again, x, y, range(3, 6)) == straight
    np.testing.assert_allclose(straight, CNTK_LOSSES[f"regressor_{kind}"], rtol=2e-5)


def _unwritable(minibatches=3):
    """The regressor with its loss through ``C.pow``, which the CNTK v2 writer refuses (CNTK
    2.7's ``pow(0, -1)`` is 0, Stadyn's inf), trained by adam on ``minibatches``: a graph
    whose checkpoint stays Stadyn's own."""
    x, y = C.input_variable(3, name="x"), C.input_variable(1, name="y")
    z = C.layers.Dense(1, init=C.glorot_uniform(seed=1), name="d")(x)
    trainer = C.Trainer(z, (C.pow(z - y, 2), C.abs(z - y)),
                        [C.adam(z.parameters, C.learning_parameter_schedule(0.05),
                                C.momentum_schedule(0.9))])
    network.train(trainer, x, y, range(minibatches))
    return x, y, z, trainer


def test_unwritable_graph_keeps_stadyn_checkpoint_with_a_warning(tmp_path):
    x, y, z, trainer = _unwritable()
    path = str(tmp_path / "run.model")
    with pytest.warns(UserWarning, match="pow"):
        trainer.save_checkpoint(path, {"epoch": 3})
    assert os.listdir(tmp_path) == ["run.model"]
    straight = network.train(trainer, x, y, range(3, 6))
    # (Stadyn's own checkpoint names the parameters as this process built them: restored into
    # the same network, as before)
    assert trainer.restore_from_checkpoint(path) == {"epoch": 3}
    assert network.train(trainer, x, y, range(3, 6)) == straight


def _snapshot(trainer):
    return ([np.array(p.value) for p in trainer.model.parameters],
            trainer.total_number_of_samples_seen,
            {k: v.clone() for k, v in trainer.parameter_learners[0].state_dict()["tensors"]
             .items()})


def _unchanged(trainer, before):
    after = _snapshot(trainer)
    for a, b in zip(before[0], after[0]):
        np.testing.assert_array_equal(a, b)
    assert before[1] == after[1]
    assert before[2].keys() == after[2].keys()
    assert all(bool((before[2][k] == after[2][k]).all()) for k in before[2])


@pytest.mark.parametrize("source,net,kind,match", [
    ("classifier_adam", "regressor", "adam", "shape"),           # another network
    ("regressor_adam", "regressor", "sgd", "another kind"),      # another learner
    ("regressor_rmsprop", "regressor", "adam", "smoothed"),      # another learner
])
def test_mismatch_is_one_model_file_error_and_changes_nothing(source, net, kind, match):
    x, y, z, trainer = _trained(net, kind, 1)
    before = _snapshot(trainer)
    path = os.path.join(FIXTURES, f"{source}.model")
    with pytest.raises(ModelFileError, match=match) as info:
        trainer.restore_from_checkpoint(path)
    assert source in str(info.value)
    _unchanged(trainer, before)


def test_failed_write_keeps_the_previous_pair(tmp_path, monkeypatch):
    x, y, z, trainer = _trained("regressor", "adam")
    path = str(tmp_path / "run.model")
    trainer.save_checkpoint(path, {"epoch": 3})
    old = {n: (tmp_path / n).read_bytes() for n in os.listdir(tmp_path)}
    network.train(trainer, x, y, range(3, 4))

    def broken(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(K, "checkpoint_bytes", broken)
    with pytest.raises(OSError, match="disk full"):
        trainer.save_checkpoint(path, {"epoch": 4})
    assert {n: (tmp_path / n).read_bytes() for n in os.listdir(tmp_path)} == old


def test_pair_from_two_saves_is_refused(tmp_path):
    x, y, z, trainer = _trained("regressor", "adam")
    first, second = str(tmp_path / "a.model"), str(tmp_path / "b.model")
    trainer.save_checkpoint(first)
    network.train(trainer, x, y, range(3, 4))
    trainer.save_checkpoint(second)
    shutil.copy(second, first)            # as a crash between the two moves would leave it
    before = _snapshot(trainer)
    with pytest.raises(ModelFileError, match="another model file"):
        trainer.restore_from_checkpoint(first)
    _unchanged(trainer, before)


_CNTK_PYTHON = peers.CNTK_PYTHON
_LIVE = """
import json, sys
sys.path.insert(0, {fixtures!r})
import cntk as C, network
out = {{}}
for kind in network.LEARNERS:
    x, y, z, t = network.build(C, "regressor", kind)
    state = t.restore_from_checkpoint({folder!r} + "/" + kind + ".model")
    out[kind] = [state, t.total_number_of_samples_seen, network.train(t, x, y, range(3, 6))]
print("RESULT" + json.dumps(out))
"""


@pytest.mark.skipif(not os.path.exists(_CNTK_PYTHON), reason="CNTK 2.7 is not installed "
                    "(STADYN_CNTK_PYTHON); the committed fixtures are what CI checks")
def test_cntk_restores_stadyn_checkpoint_live(tmp_path):
    ours = {}
    for kind in network.LEARNERS:
        x, y, z, trainer = _trained("regressor", kind)
        trainer.save_checkpoint(str(tmp_path / f"{kind}.model"), {"epoch": 3})
        ours[kind] = network.train(trainer, x, y, range(3, 6))
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
    run = subprocess.run([_CNTK_PYTHON, "-W", "ignore", "-c",
                          _LIVE.format(fixtures=FIXTURES, folder=str(tmp_path))],
                         env=env, capture_output=True, text=True, timeout=300)
    line = [s for s in run.stdout.splitlines() if s.startswith("RESULT")]
    assert line, run.stdout[-2000:] + run.stderr[-2000:]
    theirs = json.loads(line[0][len("RESULT"):])
    for kind in network.LEARNERS:
        state, samples, losses = theirs[kind]
        assert state == {"epoch": 3} and samples == 12
        np.testing.assert_allclose(losses, ours[kind], rtol=2e-5)


def test_session_resumes_from_cntk_session_checkpoint(tmp_path):
    """A training_session restores the checkpoint CNTK 2.7's session wrote (the reader's
    position under ``TrainingMinibatchSource``, the counts the trainer's) and ends where
    CNTK 2.7's resumed session ended."""
    for name in ("session.model", "session.model.ckp"):
        shutil.copy(os.path.join(FIXTURES, name), tmp_path / name)
    with open(os.path.join(FIXTURES, "session.json")) as f:
        cntk = json.load(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")           # (the classifier's own checkpoints: Stadyn's)
        trainer, z, src = network.session(C, str(tmp_path / "session.model"), 40)
    assert trainer.total_number_of_samples_seen == cntk["samples"]
    state = src.get_checkpoint_state()
    assert state["position"] % state["sweep_length"] == cntk["source"]["cursor"]
    for p, q in zip(z.parameters, cntk["parameters"]):
        np.testing.assert_allclose(p.value, q, rtol=1e-5, atol=1e-6)


def test_session_keeps_the_source_state_as_cntk_does(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        network.session(C, str(tmp_path / "session.model"), 12)
    theirs = K.read_checkpoint_file(os.path.join(FIXTURES, "session.model.ckp"))
    mine = K.read_checkpoint_file(str(tmp_path / "session.model.ckp"))   # CNTK's pair now
    assert mine["ExternalState"]["TrainingMinibatchSource"] == \
        theirs["ExternalState"]["TrainingMinibatchSource"]


@pytest.mark.parametrize("make,reference", [
    (lambda: C.learning_parameter_schedule(0.1), 0),
    (lambda: C.learning_parameter_schedule(0.1, minibatch_size=4), 4),
    (lambda: C.learning_parameter_schedule_per_sample(0.1), 1)])
def test_rate_schedule_keeps_its_reference_minibatch(tmp_path, make, reference):
    """CNTK 2.7's ``sgd(...).create_checkpoint()['learnig_rate_schedule']`` for these rates:
    ``{'schedule': {'0': 0.1}, 'ref_mb_size': 0 / 4 / 1, 'epoch_size': 0, ...}``."""
    x, y, z, _ = network.build(C, "regressor", "sgd")
    trainer = C.Trainer(z, ((z - y) * (z - y), C.abs(z - y)), [C.sgd(z.parameters, make())])
    trainer.save_checkpoint(str(tmp_path / "a.model"))
    schedule = K.read_checkpoint_file(str(tmp_path / "a.model.ckp"))["Learners"][0][
        "learnig_rate_schedule"]
    assert schedule == {"epoch_size": 0, "ref_mb_size": reference, "schedule": {"0": 0.1},
                        "type": "TrainingParameterSchedule", "version": 2}


def test_stadyn_checkpoint_over_a_cntk_pair_leaves_no_stale_ckp(tmp_path):
    for name in ("classifier_adam.model", "classifier_adam.model.ckp"):
        shutil.copy(os.path.join(FIXTURES, name), tmp_path / name)
    path = str(tmp_path / "classifier_adam.model")
    x, y, z, trainer = _unwritable()
    with pytest.warns(UserWarning, match="Stadyn's checkpoint"):
        trainer.save_checkpoint(path, {"epoch": 3})     # (a graph with pow: Stadyn's own)
    assert os.listdir(tmp_path) == ["classifier_adam.model"]
    straight = network.train(trainer, x, y, range(3, 6))
    assert trainer.restore_from_checkpoint(path) == {"epoch": 3}
    assert network.train(trainer, x, y, range(3, 6)) == straight


@pytest.mark.parametrize("damage", ["truncated", "not a dictionary"])
def test_damaged_ckp_is_one_model_file_error(tmp_path, damage):
    for name in ("regressor_adam.model", "regressor_adam.model.ckp"):
        shutil.copy(os.path.join(FIXTURES, name), tmp_path / name)
    ckp = tmp_path / "regressor_adam.model.ckp"
    data = ckp.read_bytes()
    ckp.write_bytes(data[:len(data) // 2] if damage == "truncated"
                    else b"\x08\x02")           # a Dictionary of version 2 and nothing else
    x, y, z, trainer = _trained("regressor", "adam", 1)
    before = _snapshot(trainer)
    with pytest.raises(ModelFileError, match="regressor_adam.model.ckp"):
        trainer.restore_from_checkpoint(str(tmp_path / "regressor_adam.model"))
    _unchanged(trainer, before)


@pytest.mark.parametrize("writer", ["cntk", "stadyn"])
def test_running_statistics_are_restored_as_cntk_restores_them(tmp_path, writer):
    """Batch normalisation's running statistics are constants of the model file; CNTK 2.7's
    restore sets them with the parameters, so inference after a restore reads the saved
    statistics (``make_batchnorm.py``: CNTK trains 3 minibatches, saves, trains 2 more,
    restores, evaluates).  The same with the pair Stadyn writes (``writer="stadyn"``)."""
    with open(os.path.join(FIXTURES, "batchnorm.json")) as f:
        cntk = json.load(f)
    x, y, z, trainer = network.build_batchnorm(C)
    if writer == "cntk":
        network.train(trainer, x, y, range(5))          # (then restored over)
        path = os.path.join(FIXTURES, "batchnorm_adam.model")
    else:
        network.train(trainer, x, y, range(3))
        path = str(tmp_path / "batchnorm_adam.model")
        trainer.save_checkpoint(path)
        assert sorted(os.listdir(tmp_path)) == ["batchnorm_adam.model",
                                                "batchnorm_adam.model.ckp"]
        network.train(trainer, x, y, range(3, 5))
    trainer.restore_from_checkpoint(path)
    np.testing.assert_allclose(z.eval({x: network.X[:6]}), cntk["eval"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(network.train(trainer, x, y, range(3, 6)), cntk["losses"],
                               rtol=2e-5)


def _two_layers(learners):
    """x -> Dense(4, tanh, no bias) -> Dense(4, no bias): two parameters of one shape, given
    to the learners ``learners(W1, W2)`` makes."""
    x, y = C.input_variable(4), C.input_variable(4)
    l1 = C.layers.Dense(4, bias=False, activation=C.tanh, init=C.glorot_uniform(seed=1))
    l2 = C.layers.Dense(4, bias=False, init=C.glorot_uniform(seed=2))
    z = l2(l1(x))
    w1, w2 = l1.parameters[0], l2.parameters[0]
    lr = C.learning_parameter_schedule(0.05)
    return x, y, w1, w2, C.Trainer(z, (C.squared_error(z, y), C.squared_error(z, y)),
                                   learners(w1, w2, lr))


@pytest.mark.parametrize("learners", [
    lambda w1, w2, lr: [C.sgd([w1], lr), C.sgd([w2], lr)],
    lambda w1, w2, lr: [C.momentum_sgd([w1, w2], lr, C.momentum_schedule(0.9))],
    lambda w1, w2, lr: [C.sgd([w2], lr)]],             # the first layer frozen
    ids=["two learners", "a learner listing the first layer first", "a frozen layer"])
def test_restore_puts_each_parameter_back_in_its_place(tmp_path, learners):
    """CNTK 2.7 restores the graph's parameters by their place in the graph, whatever order
    or subset the learners hold (review: learners' order swapped two (4, 4) weights silently;
    a frozen layer made the pair 'another network')."""
    rng = np.random.RandomState(0)
    x, y, w1, w2, trainer = _two_layers(learners)
    batches = [{x: rng.rand(5, 4).astype(np.float32), y: rng.rand(5, 4).astype(np.float32)}
               for _ in range(4)]
    for b in batches[:2]:
        trainer.train_minibatch(b)
    path = str(tmp_path / "run.model")
    trainer.save_checkpoint(path)
    saved = [np.array(w1.value), np.array(w2.value)]
    for b in batches[2:]:
        trainer.train_minibatch(b)
    trainer.restore_from_checkpoint(path)
    np.testing.assert_array_equal(w1.value, saved[0])
    np.testing.assert_array_equal(w2.value, saved[1])


def test_external_state_integers_are_typed_as_cntk_types_them(tmp_path):
    """``external_sgd.model`` (``make_learners.py``): CNTK 2.7 saved integers of each
    Dictionary type (2**31 - 1 an Int, 2**31 and 2**64 - 1 SizeT, -2**31 - 1 a Double...) and
    restored them as ``more.json`` holds (-2**31 - 1 comes back as the float -2147483649.0).
    Stadyn restores CNTK's file to the same values and types, and writes them with CNTK's
    value types (a millisecond time stamp failed to save, review: protobuf's 'Value out of
    range')."""
    with open(os.path.join(FIXTURES, "more.json")) as f:
        cntk = json.load(f)["external"]
    x, y, z, trainer = _trained("regressor", "sgd", 1)
    path = os.path.join(FIXTURES, "external_sgd.model")
    back = trainer.restore_from_checkpoint(path)
    assert back == cntk
    assert {k: type(v) for k, v in back.items()} == {k: type(v) for k, v in cntk.items()}
    values = {"a": 2**31 - 1, "b": 2**31, "c": -2**31 - 1, "d": 2**64 - 1,
              "ms": 1733300000000, "f": 0.25, "s": "text", "n": None, "l": [1, 2.5], "t": True}
    trainer.save_checkpoint(str(tmp_path / "b.model"), values)
    with open(str(tmp_path / "b.model.ckp"), "rb") as f, open(path + ".ckp", "rb") as g:
        assert _typed(f.read())["ExternalState"] == _typed(g.read())["ExternalState"]
    assert trainer.restore_from_checkpoint(str(tmp_path / "b.model")) == cntk
