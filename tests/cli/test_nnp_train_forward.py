"""``stadyn train`` and ``stadyn forward`` on a Console-style NNabla training configuration
(``tests/fixtures/nnp_console``, written by the real NNabla 1.39's ``nnabla.utils.save``: networks,
an Sgd optimizer, a monitor, an executor, CSV datasets of image files and of inline values)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import shutil
import subprocess
import zipfile

import numpy as np
import pytest
import peers

import stadyn as sd
from stadyn.cli import main
from stadyn.serialize import read_legacy_model

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "nnp_console")
NNP = os.path.join(FIX, "console_mlp.nnp")
NNABLA = peers.NNABLA_PYTHON
RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "serialize",
                      "nnabla_run_nnp.py")


def _samples(name):
    """The images and labels of ``data/<name>.csv``."""
    with open(os.path.join(FIX, "data", name)) as f:
        rows = list(csv.reader(f))[1:]
    x = np.stack([np.loadtxt(os.path.join(FIX, "data", r[0]), delimiter=",") for r in rows])
    return x.astype(np.float32), np.array([int(r[1]) for r in rows])


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
    x, y = _samples("train.csv")

    def accuracy(path):
        net = sd.load(path, batch_size=len(x))
        return float(np.mean(net(x=x)["prob"].argmax(1) == y))
    assert accuracy(result) > accuracy(NNP)
    # nnabla_cli train numbers the epochs of its report from 0
    assert (tmp_path / "out" / "monitoring_report.yml").read_text().startswith("0:\n  cost: ")


def test_results_nnp_holds_the_epoch_nnabla_cli_saves_as_best(tmp_path):
    """nnabla_cli train evaluates epochs 1-5 and every monitor_interval-th (10 here) and, with
    save_best, saves the parameters of an evaluated epoch whose valid_error is at most the best
    so far as results.nnp; results_current_<max_epoch>.nnp holds the last epoch's."""
    from stadyn.cli._nnp_run import train_nnp
    report = train_nnp(NNP, str(tmp_path / "out"), log=lambda line: None)
    errors = report["monitors"]["valid_error"]
    assert len(errors) == 6
    best, expected = None, None
    for epoch, error in enumerate(errors[:5], 1):      # epoch 6 is not evaluated
        if not best or error <= best:
            best, expected = error, epoch
    assert report["best_epoch"] == expected
    kept = read_legacy_model(report["result"]).parameters
    last = read_legacy_model(tmp_path / "out" / "results_current_6.nnp").parameters
    assert list(kept) == list(last)
    assert not np.allclose(kept["fc1/affine/W"].value, last["fc1/affine/W"].value)


def test_forward_writes_the_executor_outputs_nnabla_computed(tmp_path):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["forward", NNP, "-d", os.path.join(FIX, "data", "valid.csv"), "-o",
                     str(tmp_path)]) == 0
    with open(tmp_path / "output_result.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["x:image", "y:label", "prob__0", "prob__1"]
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
    x, _ = _samples("valid.csv")
    x = x[:8]
    np.savez(tmp_path / "in.npz", x=x)
    proc = subprocess.run([NNABLA, RUNNER, str(result), "runtime", str(tmp_path / "in.npz"),
                           str(tmp_path / "o.npz")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = np.load(tmp_path / "o.npz")["out/prob"]
    np.testing.assert_allclose(got, sd.load(result)(x=x)["prob"], rtol=1e-5, atol=1e-6)


def _write_stadyn_config(path, shuffle, lr_decay=1, lr_decay_interval=1, max_epoch=3,
                         valid=None, monitors=(("valid_error", "valid"),), train=None):
    """The fixture's configuration written by Stadyn's ``nnabla.utils.save`` (Stadyn's initial
    parameters, absolute CSV paths, weight decay, ``lr_decay`` every ``lr_decay_interval``
    iterations, ``max_epoch`` epochs of 3 iterations; ``valid``: the validation CSV, default
    the fixture's; ``train`` the same for training; ``monitors``: (name, dataset) of each
    monitor of the network ``validation``)."""
    from stadyn.compat import nnabla as nn
    from stadyn.compat.nnabla import functions as F_, parametric_functions as PF_
    from stadyn.compat.nnabla import solvers as S_
    from stadyn.compat.nnabla.utils.save import save

    def net(x, t=None):
        h = F_.relu(PF_.affine(x, 8, name="fc1"))
        y = PF_.affine(h, 2, name="fc2")
        return F_.softmax(y) if t is None else F_.mean(F_.softmax_cross_entropy(y, t))
    with sd.parameter_registry(sd.ParameterRegistry()):
        nn.seed(5)
        x, t = nn.Variable((8, 4, 4)), nn.Variable((8, 1))
        loss, vloss, prob = net(x, t), net(x, t), net(x)
        solver = S_.Sgd(lr=0.5)
        solver.set_parameters(nn.get_parameters())
        data = os.path.abspath(os.path.join(FIX, "data"))
        save(str(path), {
            "global_config": {"default_context": nn.get_current_context()},
            "training_config": {"max_epoch": max_epoch, "iter_per_epoch": 3, "save_best": True},
            "networks": [
                {"name": "training", "batch_size": 8, "outputs": {"loss": loss},
                 "names": {"x": x, "y": t}},
                {"name": "validation", "batch_size": 8, "outputs": {"loss": vloss},
                 "names": {"x": x, "y": t}},
                {"name": "runtime", "batch_size": 8, "outputs": {"prob": prob},
                 "names": {"x": x}}],
            "optimizers": [{"name": "optimizer", "solver": solver, "network": "training",
                            "dataset": "train", "weight_decay": 0.01, "lr_decay": lr_decay,
                            "lr_decay_interval": lr_decay_interval, "update_interval": 1}],
            "datasets": [
                {"name": n, "uri": {"valid": valid, "train": train}[n] or os.path.join(
                    data, f"{n}.csv"),
                 "cache_dir": str(path.parent / f"{n}.cache"), "variables": {"x": x, "y": t},
                 "shuffle": shuffle, "batch_size": 8, "no_image_normalization": True}
                for n in ("train", "valid")],
            "monitors": [{"name": m, "network": "validation", "dataset": d} for m, d in monitors],
            "executors": [{"name": "runtime", "network": "runtime", "data": ["x"],
                           "output": ["prob"]}]})


@pytest.mark.skipif(not os.path.exists(os.path.join(os.path.dirname(NNABLA), "nnabla_cli")),
                    reason="the real NNabla 1.39 venv (nnabla_cli) is not here")
@pytest.mark.parametrize("decay", [(1, 1), (0.5, 3)])
def test_a_stadyn_written_config_trains_in_nnabla_cli_as_in_stadyn(tmp_path, decay):
    """With lr_decay 0.5 every 3 iterations, the first epoch has the lowest valid_error:
    results.nnp holds its parameters (save_best), results_current_3.nnp the last epoch's."""
    path = tmp_path / "config.nnp"
    _write_stadyn_config(path, False, *decay)          # the same batches in both
    # nnabla_cli train initialises the parameters afresh unless -p names a file to start from;
    # stadyn train starts from the file's
    (tmp_path / "nnabla").mkdir()
    proc = subprocess.run([os.path.join(os.path.dirname(NNABLA), "nnabla_cli"), "train", "-c",
                           str(path), "-p", str(path), "-o", str(tmp_path / "nnabla")],
                          capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Training Completed." in log, log[-3000:]
    nnabla_costs = [float(c) for c in re.findall(r"epoch \d+ of \d+ cost=([0-9.]+)", log)]
    nnabla_errors = [float(c) for c in re.findall(r"valid_error=([0-9.]+)", log)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["train", str(path), "-o", str(tmp_path / "stadyn")]) == 0
    costs = [float(c) for c in re.findall(r"cost=([0-9.]+)", out.getvalue())]
    errors = [float(c) for c in re.findall(r"valid_error=([0-9.]+)", out.getvalue())]
    np.testing.assert_allclose(costs, nnabla_costs, rtol=1e-4)
    np.testing.assert_allclose(errors, nnabla_errors, rtol=1e-4)
    assert costs[-1] < costs[0]
    for result in ("results.nnp", "results_current_3.nnp"):
        ours = read_legacy_model(tmp_path / "stadyn" / result).parameters
        theirs = read_legacy_model(tmp_path / "nnabla" / result).parameters
        assert list(ours) == list(theirs)
        for name in ours:
            np.testing.assert_allclose(ours[name].value, theirs[name].value, rtol=1e-5,
                                       atol=1e-6, err_msg=f"{result}: {name}")


@pytest.mark.parametrize("fields", [
    'lr_scheduler_type: "Step" step_scheduler_param { gamma: 0.5 iter_steps: 2 iter_steps: 4 }',
    'lr_scheduler_type: "Polynomial" polynomial_scheduler_param { max_iter: 5 power: 2.0 } '
    'lr_warmup_scheduler_type: "Linear" linear_warmup_scheduler_param { warmup_iter: 3 }',
    'lr_scheduler_type: "Cosine" cosine_scheduler_param { max_iter: 6 }',
    'lr_scheduler_type: "Exponential" exponential_scheduler_param { gamma: 0.5 '
    'iter_interval: 2 }',
    "lr_decay: 0.5 lr_decay_interval: 2"])
def test_train_sets_each_iterations_rate_from_the_files_scheduler(tmp_path, fields):
    """nnabla_cli train sets the rate of iteration i to the optimizer's scheduler's
    get_learning_rate(i); nnabla.utils.load builds that scheduler (its rates are NNabla 1.39's:
    the load_scheduler__* compat cases)."""
    from stadyn.cli._nnp_run import train_nnp
    from stadyn.compat.nnabla.utils.load import load
    shutil.copytree(os.path.join(FIX, "data"), tmp_path / "data")
    with zipfile.ZipFile(NNP) as z:
        members = {n: z.read(n) for n in z.namelist()}
    old = "    lr_decay: 1.0\n    lr_decay_interval: 1\n"
    text = members["network.nntxt"].decode()
    assert old in text
    members["network.nntxt"] = text.replace(old, fields + "\n").encode()
    path = str(tmp_path / "scheduled.nnp")
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    report = train_nnp(path, str(tmp_path / "out"), epochs=2, log=lambda line: None)
    with sd.parameter_registry(sd.ParameterRegistry()):
        scheduler = load([path], prepare_data_iterator=False).optimizers["optimizer"].scheduler
    expected = [scheduler.get_learning_rate(i) for i in range(6)]   # 2 epochs of 3 iterations
    assert len(set(expected)) > 1
    np.testing.assert_allclose(report["rates"], expected, rtol=1e-6)


def _report_keys(path):
    """The epochs (as nnabla_cli numbers them: from 0) and fields of a monitoring_report.yml."""
    return [line.split(":")[0].strip() for line in path.read_text().splitlines()]


def _diverging_config(tmp_path):
    """The rate grows 1e12-fold each epoch (3 iterations): NNabla 1.39's nnabla_cli train, run
    on this file, logs epoch 1, then ``Cost is Nan`` in epoch 2 and ``Training Incompleted.``;
    it leaves results.nnp (epoch 1's parameters, its only evaluated epoch), results_current_1.nnp
    (saved at epoch 1, as it saves the current parameters at epochs 1, 12, 23, ...) and a
    monitoring_report.yml of epoch "0" only."""
    path = tmp_path / "config.nnp"
    _write_stadyn_config(path, False, 1e12, 3, max_epoch=6)
    return path


def _nan_valid_config(tmp_path):
    """One validation sample holds inf, so every valid_error is NaN: NNabla 1.39 logs
    ``Validation error is Nan`` and records and compares it as 0.0, so with save_best every
    evaluated epoch (1-5 of 6) is at most the best and results.nnp holds epoch 5's parameters;
    monitoring_report.yml has no valid_error for epoch 6 (index 5), which it does not evaluate."""
    shutil.copytree(os.path.join(FIX, "data", "valid_images"), tmp_path / "valid_images")
    shutil.copy(os.path.join(FIX, "data", "valid.csv"), tmp_path / "valid.csv")
    image = tmp_path / "valid_images" / "3.csv"
    rows = image.read_text().splitlines()
    image.write_text("\n".join(["inf,0.1,0.2,0.3"] + rows[1:]) + "\n")
    path = tmp_path / "config.nnp"
    _write_stadyn_config(path, False, max_epoch=6, valid=str(tmp_path / "valid.csv"))
    return path


def _short_valid_config(tmp_path, samples=12):
    """The first ``samples`` validation samples, batches of 8: nnabla_cli train evaluates a
    monitor over ``samples // 8`` batches (none for 4: valid_error 0.0), its reader going on
    from where the last evaluation left it (for 12: samples 0-7, then 8-11 and 0-3, ...).
    NNabla 1.39 prints valid_error 0.787497, 0.757799, 0.720723, 0.694463, 0.705992 for 12."""
    shutil.copytree(os.path.join(FIX, "data", "valid_images"), tmp_path / "valid_images")
    with open(os.path.join(FIX, "data", "valid.csv")) as f:
        rows = f.read().splitlines()
    (tmp_path / "valid.csv").write_text("\n".join(rows[:samples + 1]) + "\n")
    path = tmp_path / "config.nnp"
    _write_stadyn_config(path, False, max_epoch=6, valid=str(tmp_path / "valid.csv"))
    return path


def test_a_monitor_smaller_than_a_batch_reads_nothing_as_in_nnabla_cli(tmp_path):
    from stadyn.cli._nnp_run import train_nnp
    report = train_nnp(str(_short_valid_config(tmp_path, 4)), str(tmp_path / "out"),
                       log=lambda line: None)
    assert report["monitors"]["valid_error"][:5] == [0.0] * 5     # epochs 1-5, evaluated
    assert report["best_epoch"] == 5


def test_a_nan_cost_stops_training_and_keeps_what_nnabla_cli_saved(tmp_path):
    from stadyn.cli._nnp_run import train_nnp
    lines = []
    report = train_nnp(str(_diverging_config(tmp_path)), str(tmp_path / "out"),
                       log=lines.append)
    assert lines[0].startswith("epoch 1 of 6 cost=") and lines[1] == "Cost is Nan"
    assert lines[2].startswith("Training Incompleted.") and len(lines) == 3
    assert not report["completed"] and report["best_epoch"] == 1
    assert len(report["costs"]) == 1
    assert sorted(os.listdir(tmp_path / "out")) == ["monitoring_report.yml", "results.nnp",
                                                    "results_current_1.nnp"]
    assert _report_keys(tmp_path / "out" / "monitoring_report.yml") == ["0", "cost",
                                                                        "valid_error"]
    # results.nnp holds what one epoch of training gives
    one = train_nnp(str(tmp_path / "config.nnp"), str(tmp_path / "one"), epochs=1,
                    log=lambda line: None)
    kept = read_legacy_model(report["result"]).parameters
    after_one = read_legacy_model(one["current"]).parameters
    for name in kept:
        np.testing.assert_array_equal(kept[name].value, after_one[name].value)
        assert np.isfinite(kept[name].value).all()


def test_a_nan_valid_error_counts_as_zero_as_in_nnabla_cli(tmp_path):
    from stadyn.cli._nnp_run import train_nnp
    lines = []
    report = train_nnp(str(_nan_valid_config(tmp_path)), str(tmp_path / "out"),
                       log=lines.append)
    assert report["completed"]
    assert report["monitors"]["valid_error"][:5] == [0.0] * 5
    assert lines.count("Validation error is Nan") == 5
    assert report["best_epoch"] == 5
    assert _report_keys(tmp_path / "out" / "monitoring_report.yml") == (
        ["0", "cost", "valid_error", "1", "cost", "valid_error", "2", "cost", "valid_error",
         "3", "cost", "valid_error", "4", "cost", "valid_error", "5", "cost"])


@pytest.mark.skipif(not os.path.exists(os.path.join(os.path.dirname(NNABLA), "nnabla_cli")),
                    reason="the real NNabla 1.39 venv (nnabla_cli) is not here")
@pytest.mark.parametrize("make", [_diverging_config, _nan_valid_config, _short_valid_config])
def test_nnabla_cli_and_stadyn_train_save_the_same_files_and_errors(tmp_path, make):
    path = make(tmp_path)
    (tmp_path / "nnabla").mkdir()
    proc = subprocess.run([os.path.join(os.path.dirname(NNABLA), "nnabla_cli"), "train", "-c",
                           str(path), "-p", str(path), "-o", str(tmp_path / "nnabla")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["train", str(path), "-o", str(tmp_path / "stadyn")]) == 0
    theirs_errors = re.findall(r"valid_error=([0-9.]+)", proc.stdout + proc.stderr)
    ours_errors = re.findall(r"valid_error=([0-9.]+)", out.getvalue())
    # Stadyn also prints the epochs nnabla_cli does not evaluate (6 here)
    np.testing.assert_allclose(np.array(ours_errors[:len(theirs_errors)], float),
                               np.array(theirs_errors, float), rtol=1e-4, atol=1e-6)
    theirs = sorted(f for f in os.listdir(tmp_path / "nnabla") if f.endswith((".nnp", ".yml")))
    assert sorted(os.listdir(tmp_path / "stadyn")) == theirs
    assert _report_keys(tmp_path / "stadyn" / "monitoring_report.yml") == _report_keys(
        tmp_path / "nnabla" / "monitoring_report.yml")
    for result in theirs:
        if result.endswith(".nnp"):
            ours = read_legacy_model(tmp_path / "stadyn" / result).parameters
            nnabla = read_legacy_model(tmp_path / "nnabla" / result).parameters
            for name in ours:
                np.testing.assert_allclose(ours[name].value, nnabla[name].value, rtol=1e-5,
                                           atol=1e-6, err_msg=f"{result}: {name}")


def _shared_readers_config(tmp_path, shuffle):
    """20 training samples (a monitor of them reads 16: their order shows) and 12 validation
    samples read by two monitors (``valid_error`` then ``v2``) of one dataset."""
    for folder, name, n in (("images", "train.csv", 20), ("valid_images", "valid.csv", 12)):
        shutil.copytree(os.path.join(FIX, "data", folder), tmp_path / folder)
        with open(os.path.join(FIX, "data", name)) as f:
            rows = f.read().splitlines()
        (tmp_path / name).write_text("\n".join(rows[:n + 1]) + "\n")
    path = tmp_path / "config.nnp"
    _write_stadyn_config(path, shuffle, max_epoch=6, valid=str(tmp_path / "valid.csv"),
                         train=str(tmp_path / "train.csv"),
                         monitors=(("train_error", "train"), ("valid_error", "valid"),
                                   ("v2", "valid")))
    return path


@pytest.mark.skipif(not os.path.exists(os.path.join(os.path.dirname(NNABLA), "nnabla_cli")),
                    reason="the real NNabla 1.39 venv (nnabla_cli) is not here")
@pytest.mark.parametrize("shuffle", [False, True])
def test_monitors_read_their_datasets_as_nnabla_cli_does(tmp_path, shuffle):
    """nnabla_cli train (NNabla 1.39) gives dataset i of the file a RandomState(i) for its
    shuffles, shared by the optimizer's reader and the one reader the monitors of that
    dataset share (``v2`` reads the batches after ``valid_error``'s): the costs and every
    monitor value of the evaluated epochs are NNabla's."""
    path = _shared_readers_config(tmp_path, shuffle)
    (tmp_path / "nnabla").mkdir()
    proc = subprocess.run([os.path.join(os.path.dirname(NNABLA), "nnabla_cli"), "train", "-c",
                           str(path), "-p", str(path), "-o", str(tmp_path / "nnabla")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Training Completed." in log, log[-3000:]
    _check_monitors(path, tmp_path, [(k, float(v)) for k, v in re.findall(_MONITORS, log)])


def test_monitors_equal_nnabla_clis_committed_values(tmp_path):
    # the same, against what nnabla_cli 1.39 printed (tests/fixtures/nnp_console/
    # make_monitor_refs.py wrote monitor_refs.json): CI has no NNabla
    with open(os.path.join(FIX, "monitor_refs.json")) as f:
        refs = json.load(f)
    for shuffle in (False, True):
        folder = tmp_path / str(shuffle)
        folder.mkdir()
        _check_monitors(_shared_readers_config(folder, shuffle), folder,
                        [tuple(kv) for kv in refs[f"shuffle={shuffle}"]])


_MONITORS = r"(cost|train_error|valid_error|v2)=([0-9.]+)"


def _check_monitors(path, tmp_path, theirs):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["train", str(path), "-o", str(tmp_path / "stadyn")]) == 0
    ours = [(k, float(v)) for k, v in re.findall(_MONITORS, out.getvalue())]
    assert len(theirs) == 5 * 4 + 1                  # epochs 1-5 evaluated, 6 not
    ours = ours[:len(theirs) - 1] + [ours[-4]]       # Stadyn also prints epoch 6's monitors
    assert [k for k, _ in ours] == [k for k, _ in theirs]
    np.testing.assert_allclose([v for _, v in ours], [v for _, v in theirs], rtol=2e-5)
    # the monitors of one dataset read different batches (the order shows)
    assert [v for k, v in ours if k == "valid_error"] != [v for k, v in ours if k == "v2"]
