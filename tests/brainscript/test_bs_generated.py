"""Generated VALID BrainScript (``bs_generate``), taken all the way: it evaluates to the network
the generator meant, the network runs, static == dynamic, a saved model gives the same outputs,
and a generated config trains and tests with the figures its SGD block asks for.

15 networks and 3 configs in CI (about 30 s on a loaded 2-core machine);
``STADYN_FUZZ_EXAMPLES=500 pytest tests/brainscript/test_bs_generated.py`` runs 500 of each.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from bs_generate import configs, examples, networks
from hypothesis import HealthCheck, Phase, given, settings

import stadyn as sd
import stadyn.functions as F
from stadyn.brainscript import StadynLibrary, build_network, load_config, run_config
from stadyn.brainscript._runner import run
from stadyn.train import feed

# No shrinking: a failing example is printed with its text (and a blob to reproduce it); shrinking
# a network through several builds can take minutes.
_SETTINGS = dict(deadline=None, derandomize=True, database=None, print_blob=True,
                 phases=[Phase.explicit, Phase.generate],
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
BATCH = 4


class FeedingLibrary(StadynLibrary):
    """Stadyn's library whose ``Input`` nodes hold the test's data from the start (by per-sample
    shape), so a network built in dynamic mode computes on it as it is built."""

    def __init__(self, data: dict[tuple, np.ndarray]):
        super().__init__()
        self._data = data

    def Input(self, dims, dynamicAxis="", sparse=False, tag="feature"):
        v = super().Input(dims, dynamicAxis, sparse, tag)
        feed(v, self._data[v.shape[1:]])
        return v


def _data(net, seed=0):
    rng = np.random.RandomState(seed)
    labels = np.eye(net.classes, dtype=np.float32)[rng.randint(0, net.classes, BATCH)]
    return {net.features: rng.randn(BATCH, *net.features).astype(np.float32),
            (net.classes,): labels}


def _build(net, data, seed):
    sd.seed(seed)
    built = build_network(net.text, FeedingLibrary(data))
    params = {k: v for k, v in sd.get_parameters().items()}
    return built, params


@settings(max_examples=examples(15), **_SETTINGS)
@given(net=networks())
def test_generated_networks_evaluate_run_and_agree_static_dynamic_and_saved(net, tmp_path_factory):
    data = _data(net)
    # -- it evaluates to the network the generator meant --------------------------------------
    with sd.parameter_registry(sd.ParameterRegistry()):
        built, params = _build(net, data, seed=3)
        assert len(params) == net.tensors, (net.kinds, list(params))
        assert sum(p.size for p in params.values()) == net.params, net.kinds
        z, ce, errs = built.output_nodes[0], built.criterion_nodes[0], built.evaluation_nodes[0]
        assert built.nodes["z"] is z and built.feature_nodes == [built.nodes["features"]]
        # -- it runs (static graph) --------------------------------------------------------------
        with sd.training(False):
            sd.forward_all([z, ce, errs])
        static_infer = {"z": z.d.copy(), "ce": ce.d.copy(), "errs": errs.d.copy()}
        assert static_infer["z"].shape == (BATCH, net.classes)
        assert np.isfinite(static_infer["z"]).all() and np.isfinite(static_infer["ce"]).all()
        # the metric is what its name says: 1 where the highest score is not the label's; among
        # equal scores the earlier class wins, as CNTK 2.7 measured it
        # (tests/examples/refs/cntk_classification_error.json)
        wrong = static_infer["z"].argmax(1) != data[(net.classes,)].argmax(1)
        np.testing.assert_array_equal(static_infer["errs"].reshape(-1), wrong.astype(np.float32))
        # -- save / load round trip (before training moves the running statistics) ------------
        path = tmp_path_factory.mktemp("bs") / "net.stadyn"
        sd.save(path, {"z": z, "errs": errs},
                {"features": built.nodes["features"], "labels": built.nodes["labels"]})
        loss = F.sum(ce)
        with sd.training(True):
            loss.forward()
            for p in params.values():
                p.grad = None
            loss.backward()
        static_train = float(loss.d)
        static_grads = {k: p.g.copy() for k, p in params.items()}
        initial = {k: p.d.copy() for k, p in params.items()}
    loaded = sd.load(path)
    with sd.training(False):
        out = loaded(features=data[net.features], labels=data[(net.classes,)])
    np.testing.assert_array_equal(out["z"], static_infer["z"])
    np.testing.assert_array_equal(out["errs"], static_infer["errs"])

    # -- static == dynamic, in both phases ------------------------------------------------------
    for phase in (False, True):
        with sd.parameter_registry(sd.ParameterRegistry()), sd.auto_forward(), \
                sd.training(phase):
            dyn, dparams = _build(net, data, seed=3)
            assert list(dparams) == list(params)
            for k, p in dparams.items():
                np.testing.assert_array_equal(p.d, initial[k], err_msg=k)
            if not phase:
                np.testing.assert_array_equal(dyn.output_nodes[0].d, static_infer["z"])
                np.testing.assert_array_equal(dyn.criterion_nodes[0].d, static_infer["ce"])
                continue
            dloss = F.sum(dyn.criterion_nodes[0])
            dloss.backward()
            assert float(dloss.d) == static_train
            for k, p in dparams.items():
                np.testing.assert_array_equal(p.g, static_grads[k], err_msg=k)


# ---------------------------------------------------------------------------------------------
# Whole configs: SGD block, reader, train and test commands
# ---------------------------------------------------------------------------------------------
EPOCH = re.compile(r"^Finished Epoch\[ *(\d+) of (\d+)\]: \[Training\] ce = ([0-9.]+) \* (\d+); "
                   r"errs = ([0-9.]+)% \* (\d+); totalSamplesSeen = (\d+); "
                   r"learningRatePerSample = ([0-9.e-]+); epochTime=", re.M)
FINAL = re.compile(r"^Final Results: Minibatch\[1-(\d+)\]: errs = ([0-9.]+)% \* (\d+); "
                   r"ce = ([0-9.]+) \* (\d+)", re.M)
TRAIN_SAMPLES, TEST_SAMPLES = 24, 13


def _write_ctf(path: Path, x: np.ndarray, y: np.ndarray) -> None:
    path.write_text("".join(
        f"|features {' '.join(f'{v:.6f}' for v in xi)} "
        f"|labels {' '.join(str(int(v)) for v in yi)}\n"
        for xi, yi in zip(x, y)))


@settings(max_examples=examples(3), **_SETTINGS)
@given(cfg=configs(data_samples=TRAIN_SAMPLES))
def test_generated_configs_train_and_test_as_their_sgd_block_says(cfg, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cfg")
    net = cfg.network
    rng = np.random.RandomState(1)
    d = net.features[0]
    for name, n in (("train.txt", TRAIN_SAMPLES), ("test.txt", TEST_SAMPLES)):
        labels = rng.randint(0, net.classes, n)
        x = rng.randn(n, d) + np.eye(d)[labels] * 2
        _write_ctf(tmp / name, x, np.eye(net.classes)[labels])
    (tmp / "gen.cntk").write_text(cfg.text)
    overrides = [f"dataDir={tmp}", f"outputDir={tmp}"]
    # -- it evaluates: the blocks hold what the generator wrote --------------------------------
    train, test = run_config(load_config(tmp / "gen.cntk", overrides)).commands
    assert (train.action, test.action) == ("train", "test")
    sgd = train.sgd
    assert sgd.max_epochs == cfg.max_epochs and sgd.epoch_size == cfg.epoch_size
    assert [sgd.minibatch_size[min(e, len(sgd.minibatch_size) - 1)]
            for e in range(cfg.max_epochs)] == list(cfg.minibatch_sizes)
    assert [s.dim for s in train.reader.deserializers[0].streams] == [d, net.classes]
    # -- it runs: one epoch line per epoch, with the block's sizes and rates -------------------
    with sd.parameter_registry(sd.ParameterRegistry()):
        log = _run(tmp / "gen.cntk", overrides)
    epochs = EPOCH.findall(log)
    assert [int(e[0]) for e in epochs] == list(range(1, cfg.max_epochs + 1)), log
    assert all(int(e[1]) == cfg.max_epochs for e in epochs)
    assert [int(e[3]) for e in epochs] == [cfg.epoch_size] * cfg.max_epochs
    assert [int(e[6]) for e in epochs] == [cfg.epoch_size * (k + 1)
                                           for k in range(cfg.max_epochs)]
    for e, lr in zip(epochs, cfg.lr_per_sample):
        assert float(e[7]) == pytest.approx(lr, rel=1e-6)
    assert all(np.isfinite(float(e[2])) for e in epochs)
    model = tmp / "Models" / "generated"
    assert model.is_file()
    for k in range(1, cfg.max_epochs):
        assert (tmp / "Models" / f"generated.{k}").is_file()
    # -- the test command's figures are the saved model's, computed here ----------------------
    final = FINAL.search(log)
    assert final, log
    assert int(final.group(3)) == TEST_SAMPLES
    x_test, y_test = _read_ctf(tmp / "test.txt", d, net.classes)
    loaded = sd.load(model, batch_size=TEST_SAMPLES)
    assert sorted(loaded.inputs) == ["features", "labels"]
    with sd.training(False):
        z = loaded(features=x_test, labels=y_test)["z"]
    wrong = (z > (z * y_test).sum(1, keepdims=True)).any(1).mean()
    assert float(final.group(2)) == pytest.approx(100 * wrong, abs=0.0005)


def _run(path, overrides) -> str:
    import io
    out = io.StringIO()
    run(path, overrides, out=out)
    return out.getvalue()


def _read_ctf(path: Path, d: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for line in path.read_text().splitlines():
        _, f, lab = line.split("|")
        xs.append([float(v) for v in f.split()[1:]])
        ys.append([float(v) for v in lab.split()[1:]])
    return np.array(xs, np.float32), np.array(ys, np.float32)
