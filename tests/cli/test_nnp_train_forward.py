"""``stadyn train`` and ``stadyn forward`` on a Console-style NNabla training configuration
(``tests/fixtures/nnp_console``, written by the real NNabla 1.39's ``nnabla.utils.save``: networks,
an Sgd optimizer, a monitor, an executor, CSV datasets of image files and of inline values)."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import stadyn as sd
from stadyn.cli import main
from stadyn.serialize import read_legacy_model

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "nnp_console")
NNP = os.path.join(FIX, "console_mlp.nnp")
NNABLA = os.environ.get("STADYN_NNABLA_PYTHON", "/work/peers/nnabla/bin/python")
RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "serialize",
                      "nnabla_run_nnp.py")


def _valid():
    with open(os.path.join(FIX, "data", "valid.csv")) as f:
        rows = list(csv.reader(f))[1:]
    x = np.array([[float(v) for v in r[:16]] for r in rows], np.float32).reshape(-1, 1, 4, 4)
    return x, np.array([int(r[16]) for r in rows])


def _failure(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(argv) == 1
    return err.getvalue().strip()


def _train(tmp_path):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["train", NNP, "-o", str(tmp_path / "out")]) == 0
    return out.getvalue()


def test_train_lowers_the_loss_and_writes_a_trained_file_that_loads_back(tmp_path):
    log = _train(tmp_path)
    costs = [float(c) for c in re.findall(r"cost=([0-9.]+)", log)]
    assert len(costs) == 6                                  # training_config.max_epoch
    assert costs[-1] < 0.8 * costs[0], log
    assert len(re.findall(r"valid_error=[0-9.]+", log)) == 6
    result = tmp_path / "out" / "results.nnp"
    trained = read_legacy_model(result)
    original = read_legacy_model(NNP)
    # every section is kept; only the parameters changed
    for key in ("optimizers", "datasets", "monitors", "executors", "training_config"):
        assert trained.extras[key] == original.extras[key], key
    assert list(trained.parameters) == list(original.parameters)
    assert not np.allclose(trained.parameters["fc1/affine/W"].value,
                           original.parameters["fc1/affine/W"].value)
    # the trained classifier separates the training set better than the initial one
    with open(os.path.join(FIX, "data", "train.csv")) as f:
        rows = list(csv.reader(f))[1:]
    x = np.stack([np.loadtxt(os.path.join(FIX, "data", r[0]), delimiter=",") for r in rows])
    x = x.reshape(-1, 1, 4, 4).astype(np.float32)
    y = np.array([int(r[1]) for r in rows])

    def accuracy(path):
        net = sd.load(path, batch_size=len(x))
        return float(np.mean(net(x=x)["prob"].argmax(1) == y))
    assert accuracy(result) > accuracy(NNP)
    assert (tmp_path / "out" / "monitoring_report.yml").read_text().startswith("1:\n  cost: ")


def test_forward_writes_the_executor_outputs_nnabla_computed(tmp_path):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["forward", NNP, "-d", os.path.join(FIX, "data", "valid.csv"), "-o",
                     str(tmp_path)]) == 0
    with open(tmp_path / "output_result.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0][-3:] == ["y", "prob__0", "prob__1"]
    got = np.array([[float(v) for v in r[-2:]] for r in rows[1:]])
    np.testing.assert_allclose(got, np.load(os.path.join(FIX, "valid_prob.npy")),
                               rtol=1e-5, atol=1e-6)


def test_train_refuses_a_file_without_an_optimizer(tmp_path):
    path = tmp_path / "runtime_only.nnp"
    net = sd.load(NNP)                                 # the executor "runtime"
    sd.save_nnp(path, net)
    assert _failure(["train", str(path), "-o", str(tmp_path / "out")]) == (
        f"stadyn train: error: {path}: holds no optimizer section, so nothing to train (a "
        "Neural Network Console / nnabla.utils.save training configuration has one)")
    assert not (tmp_path / "out").exists()


def test_train_names_a_missing_csv_file(tmp_path):
    shutil.copy(NNP, tmp_path / "moved.nnp")           # its data/ folder stays behind
    message = _failure(["train", str(tmp_path / "moved.nnp"), "-o", str(tmp_path / "out")])
    assert re.match(r"stadyn train: error: .*moved.nnp: dataset 'train''s CSV file "
                    r"'data/train.csv' was not found", message), message


@pytest.mark.skipif(not os.path.exists(NNABLA),
                    reason=f"the real NNabla 1.39 venv is not here ({NNABLA})")
def test_the_trained_file_runs_in_nnabla_as_in_stadyn(tmp_path):
    _train(tmp_path)
    result = tmp_path / "out" / "results.nnp"
    x, _ = _valid()
    x = x[:8]
    np.savez(tmp_path / "in.npz", x=x)
    proc = subprocess.run([NNABLA, RUNNER, str(result), "runtime", str(tmp_path / "in.npz"),
                           str(tmp_path / "o.npz")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = np.load(tmp_path / "o.npz")["out/prob"]
    np.testing.assert_allclose(got, sd.load(result)(x=x)["prob"], rtol=1e-5, atol=1e-6)
