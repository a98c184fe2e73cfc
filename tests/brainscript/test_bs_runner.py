"""``stadyn train`` / ``stadyn eval``: CNTK's three example configs run unchanged (data paths and
reduced epochs given as command-line overrides) on generated data in CNTK's layouts.

Expected lines follow CNTK's own logs (Tests/EndToEndTests/.../baseline.txt in microsoft/CNTK):
``Finished Epoch[ 1 of 3]: [Training] ce = 2.28370905 * 4096; errs = 87.061% * 4096;
totalSamplesSeen = 4096; learningRatePerSample = 0.0015625; epochTime=3.85148s``,
`` Epoch[ 1 of 3]-Minibatch[   1-  16, 25.00%]: ce = ... * 1024; ...; time = 2.3506s;
samplesPerSecond = 435.6`` and ``Final Results: Minibatch[1-20]: errs = 71.390% * 10000; ...``.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import re
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError, ModelFileError
from stadyn.brainscript._runner import run
from stadyn.cli import main as cli_main
from stadyn.io import convert_cifar10

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "brainscript"
CIFAR = FIXTURES / "ConvNet_CIFAR10_DataAug.cntk"
MNIST = FIXTURES / "ConvNet_MNIST.cntk"
ONE_HIDDEN = FIXTURES / "01_OneHidden.cntk"

EPOCH = re.compile(
    r"^Finished Epoch\[ *(\d+) of (\d+)\]: \[Training\] ce = (\d+\.\d{8}) \* (\d+); "
    r"errs = (\d+\.\d{3})% \* (\d+); totalSamplesSeen = (\d+); "
    r"learningRatePerSample = ([0-9.e-]+); epochTime=([0-9.e+-]+)s$", re.M)
MINIBATCH = re.compile(
    r"^ Epoch\[ *(\d+) of (\d+)\]-Minibatch\[ *(\d+)- *(\d+), (\d+\.\d\d)%\]: "
    r"ce = (\d+\.\d{8}) \* (\d+); errs = (\d+\.\d{3})% \* (\d+); "
    r"time = [0-9.e+-]+s; samplesPerSecond = \d+\.\d$", re.M)


# ---------------------------------------------------------------------------------------------
# Data in CNTK's layouts
# ---------------------------------------------------------------------------------------------
def _write_mnist_ctf(folder: Path, n_train: int = 256, n_test: int = 64) -> None:
    """MNIST-shaped CTF files (``|labels <10 one-hot> |features <784 values 0..255>``): each
    class lights its own 80 pixels; 40 random pixels are noise."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    pixels = [rng.choice(784, 80, replace=False) for _ in range(10)]
    for name, n in (("Train-28x28_cntk_text.txt", n_train), ("Test-28x28_cntk_text.txt", n_test)):
        rows = []
        for label in rng.integers(0, 10, n):
            image = np.zeros(784, dtype=int)
            image[pixels[label]] = rng.integers(150, 256, 80)
            image[rng.choice(784, 40, replace=False)] = rng.integers(0, 256, 40)
            onehot = " ".join("1" if k == label else "0" for k in range(10))
            rows.append(f"|labels {onehot} |features {' '.join(map(str, image))}\n")
        (folder / name).write_text("".join(rows))


def _write_cifar(folder: Path, tmp: Path, per_batch: int = 8) -> None:
    """CNTK's CIFAR-10 layout made by ``convert_cifar10`` from a small archive in CIFAR's own
    format (pickled dicts of 3072 uint8 values, R then G then B planes, and labels)."""
    rng = np.random.default_rng(1)
    colours = rng.integers(0, 256, (10, 3))
    archive = tmp / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in [f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]:
            labels = rng.integers(0, 10, per_batch)
            planes = colours[labels][:, :, None] + rng.normal(0, 25, (per_batch, 3, 1024))
            data = np.clip(planes, 0, 255).astype(np.uint8).reshape(per_batch, 3072)
            raw = pickle.dumps({"data": data, "labels": labels.tolist()})
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    convert_cifar10(archive, folder, ctf=False, progress=False)


@pytest.fixture(scope="module")
def mnist(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("mnist")
    _write_mnist_ctf(folder)
    return folder


@pytest.fixture(scope="module")
def cifar(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("cifar")
    _write_cifar(tmp / "CIFAR-10", tmp)
    return tmp / "CIFAR-10"


def _one_hidden(data: Path, out: Path, *extra: str, callback=None) -> str:
    log = io.StringIO()
    run(ONE_HIDDEN, [f"dataDir={data}", f"outputDir={out}", "trainNetwork.SGD.epochSize=256",
                     "trainNetwork.SGD.numMBsToShowResult=2", *extra],
        out=log, epoch_callback=callback)
    return log.getvalue()


@pytest.fixture(scope="module")
def one_hidden_run(mnist, tmp_path_factory) -> tuple[str, Path]:
    """01_OneHidden.cntk for 3 epochs of 256 samples, then its test command."""
    out = tmp_path_factory.mktemp("one_hidden")
    return _one_hidden(mnist, out, "trainNetwork.SGD.maxEpochs=3"), out


def _epochs(text: str) -> list[tuple]:
    return [m.groups() for m in EPOCH.finditer(text)]


# ---------------------------------------------------------------------------------------------
# 01_OneHidden.cntk
# ---------------------------------------------------------------------------------------------
def test_one_hidden_trains_logs_like_cntk_and_loss_falls(one_hidden_run):
    text, _ = one_hidden_run
    epochs = _epochs(text)
    assert [(e[0], e[1], e[3], e[5], e[6]) for e in epochs] == [
        ("1", "3", "256", "256", "256"), ("2", "3", "256", "256", "512"),
        ("3", "3", "256", "256", "768")]
    assert {e[7] for e in epochs} == {"0.0099999998"}  # 0.01 as CNTK's float, printed %.8g
    ces = [float(e[2]) for e in epochs]
    errs = [float(e[4]) for e in epochs]
    assert ces[0] > ces[1] > ces[2] and errs[2] < 10.0
    # minibatch lines every 2 minibatches of 64, with the epoch progress CNTK printed
    lines = [m.groups() for m in MINIBATCH.finditer(text)]
    assert [(g[0], g[2], g[3], g[4], g[6]) for g in lines] == [
        (e, a, b, p, "128") for e in "123" for a, b, p in (("1", "2", "50.00"),
                                                           ("3", "4", "100.00"))]
    # an epoch's criterion is the sample-weighted mean of its minibatch windows
    for k, epoch in enumerate(epochs):
        halves = [float(g[5]) for g in lines[2 * k: 2 * k + 2]]
        assert float(epoch[2]) == pytest.approx(sum(halves) / 2, abs=2e-8)
    assert "Training 159010 parameters in 4 out of 4 parameter tensors:" in text
    assert text.index("Finished Epoch[ 3 of 3]") < text.index("# testNetwork command (test action)")


def test_one_hidden_saves_a_model_per_epoch(one_hidden_run):
    text, out = one_hidden_run
    models = out / "Models"
    assert sorted(os.listdir(models)) == ["01_OneHidden", "01_OneHidden.0", "01_OneHidden.1",
                                          "01_OneHidden.2", "01_OneHidden.ckp"]
    for epoch in (1, 2):
        assert f"SGD: Saving checkpoint model '{models}/01_OneHidden.{epoch}'" in text
    assert f"SGD: Saving checkpoint model '{models}/01_OneHidden'\n" in text
    net = sd.load(models / "01_OneHidden")          # a model file holds the network
    assert list(net.inputs) == ["features", "labels"] and "ce" in net.outputs


def test_one_hidden_test_command_prints_cntks_final_results(one_hidden_run, mnist):
    text, out = one_hidden_run
    assert "evalNodeNames are not specified, using all the default evalnodes and training " \
           "criterion nodes." in text
    final = re.search(r"^Final Results: Minibatch\[1-1\]: errs = (\d+\.\d{3})% \* 64; "
                      r"ce = (\d+\.\d{8}) \* 64; perplexity = (\d+\.\d{8})$", text, re.M)
    assert final, text
    errs, ce, perplexity = map(float, final.groups())
    assert perplexity == pytest.approx(math.exp(ce), rel=1e-7)
    # an independent evaluation of the saved model on the test file
    rows = [line.split("|") for line in (mnist / "Test-28x28_cntk_text.txt").read_text().split("\n")
            if line]
    labels = np.array([[float(v) for v in r[1].split()[1:]] for r in rows], dtype=np.float32)
    features = np.array([[float(v) for v in r[2].split()[1:]] for r in rows], dtype=np.float32)
    net = sd.load(out / "Models" / "01_OneHidden", batch_size=64)
    with sd.training(False):
        z = net(features=features.reshape(64, 1, 28, 28), labels=labels)["out.z"]
    shifted = z - z.max(1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    assert ce == pytest.approx(-(labels * logp).sum(1).mean(), abs=1e-6)
    assert errs == pytest.approx(100 * (z.argmax(1) != labels.argmax(1)).mean(), abs=1e-3)


def test_resume_after_an_interrupted_run_continues_from_the_last_saved_epoch(one_hidden_run,
                                                                             mnist, tmp_path):
    reference, _ = one_hidden_run

    def stop_after_first_epoch(command, epoch):
        if epoch == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _one_hidden(mnist, tmp_path, "trainNetwork.SGD.maxEpochs=3",
                    callback=stop_after_first_epoch)
    models = tmp_path / "Models"
    assert sorted(os.listdir(models)) == ["01_OneHidden.0", "01_OneHidden.1",
                                          "01_OneHidden.1.ckp"]
    resumed = _one_hidden(mnist, tmp_path, "trainNetwork.SGD.maxEpochs=3")
    assert f"Starting from checkpoint. Loading network from '{models}/01_OneHidden.1'." in resumed
    # only epochs 2 and 3 train, and they are exactly the uninterrupted run's (the reader
    # position, learner state and sample counts were restored)
    strip = [e[:8] for e in _epochs(resumed)]
    assert [e[0] for e in strip] == ["2", "3"]
    assert strip == [e[:8] for e in _epochs(reference)][1:]


def test_raising_max_epochs_trains_only_the_new_epochs(mnist, tmp_path):
    first = _one_hidden(mnist, tmp_path, "trainNetwork.SGD.maxEpochs=1")
    assert [e[:2] for e in _epochs(first)] == [("1", "1")]
    again = _one_hidden(mnist, tmp_path, "trainNetwork.SGD.maxEpochs=2")
    assert [(e[0], e[1], e[6]) for e in _epochs(again)] == [("2", "2", "512")]
    done = _one_hidden(mnist, tmp_path, "trainNetwork.SGD.maxEpochs=2")
    assert f"Final model exists: {tmp_path}/Models/01_OneHidden" in done
    assert "No further training is necessary." in done and not _epochs(done)
    assert "Final Results: Minibatch[1-1]" in done  # the test command still runs


def test_every_evaluation_node_is_logged(mnist, tmp_path):
    path, _, _ = _edited(tmp_path, "        evaluationNodes = (errs)",
                         "        errs3 = ClassificationError (labels, out.z, topN = 3)\n"
                         "        evaluationNodes = (errs : errs3)")
    log = io.StringIO()
    run(path, [f"dataDir={mnist}", f"outputDir={tmp_path}", "trainNetwork.SGD.maxEpochs=1",
               "trainNetwork.SGD.epochSize=256"], out=log)
    line = re.search(r"^Finished Epoch\[ 1 of 1\]: \[Training\] ce = \d+\.\d{8} \* 256; "
                     r"errs = (\d+\.\d{3})% \* 256; errs3 = (\d\.\d{8}) \* 256; "
                     r"totalSamplesSeen = 256;", log.getvalue(), re.M)
    assert line, log.getvalue()
    # 'errs3' does not end in 's': CNTK prints it as a plain number, not a percentage
    assert float(line.group(2)) <= float(line.group(1)) / 100
    assert re.search(r"^Final Results: Minibatch\[1-1\]: errs = \S+% \* 64; errs3 = \S+ \* 64; "
                     r"ce = \S+ \* 64; perplexity = \S+$", log.getvalue(), re.M)


def _mnist_arrays(path: Path) -> tuple[np.ndarray, np.ndarray]:
    rows = [line.split("|") for line in path.read_text().split("\n") if line]
    labels = np.array([[float(v) for v in r[1].split()[1:]] for r in rows], dtype=np.float32)
    features = np.array([[float(v) for v in r[2].split()[1:]] for r in rows], dtype=np.float32)
    return features, labels


def test_cv_reader_is_evaluated_after_each_epoch_as_cntk_did(mnist, tmp_path):
    # CNTK's SGD: after each epoch, the criterion and evaluation nodes over the cvReader set in
    # minibatches of the training minibatchSize (64 -> 1 of 64 samples), then the model file
    path, _, _ = _edited(tmp_path, "    SGD = {\n", """    cvReader = {
        readerType = "CNTKTextFormatReader"
        file = "$DataDir$/Test-28x28_cntk_text.txt"
        input = { features = { dim = 784 ; format = "dense" }
                  labels = { dim = 10 ; format = "dense" } }
    }
    SGD = {
""")
    log = io.StringIO()
    result = run(path, [f"dataDir={mnist}", f"outputDir={tmp_path}", "command=trainNetwork",
                        "trainNetwork.SGD.maxEpochs=2", "trainNetwork.SGD.epochSize=256",
                        "trainNetwork.SGD.minibatchSize=32"], out=log)
    text = log.getvalue()
    validate = re.findall(r"^Final Results: Minibatch\[1-2\]: ce = (\d+\.\d{8}) \* 64; "
                          r"perplexity = \S+; errs = (\d+\.\d{3})% \* 64\n"
                          r"Finished Epoch\[ (\d) of 2\]: \[Validate\] ce = \1 \* 64; "
                          r"errs = \2% \* 64\n", text, re.M)
    assert [v[2] for v in validate] == ["1", "2"], text
    order = [text.index(s) for s in ("Finished Epoch[ 1 of 2]: [Training]",
                                     "Finished Epoch[ 1 of 2]: [Validate]",
                                     "SGD: Saving checkpoint model")]
    assert order == sorted(order)
    # the last validation is the final model's: an independent evaluation on the test file
    features, labels = _mnist_arrays(mnist / "Test-28x28_cntk_text.txt")
    net = sd.load(tmp_path / "Models" / "01_OneHidden", batch_size=64)
    with sd.training(False):
        z = net(features=features.reshape(64, 1, 28, 28), labels=labels)["out.z"]
    shifted = z - z.max(1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    ce, errs = float(validate[1][0]), float(validate[1][1])
    assert ce == pytest.approx(-(labels * logp).sum(1).mean(), abs=1e-6)
    assert errs == pytest.approx(100 * (z.argmax(1) != labels.argmax(1)).mean(), abs=1e-3)
    epochs = result.commands["trainNetwork"]
    assert epochs[1].validation["ce"] == pytest.approx(ce, abs=1e-8)


@pytest.mark.parametrize("timestamping, name", [
    # cntk configFile=... (wmainOldCNTKConfig, Source/CNTK/CNTK.cpp:666-691): the stderr path
    # itself, or with timestamping (its "old way") the commands and .log appended
    ("false", "OneHidden_bs_out"),
    ("true", "OneHidden_bs_out_trainNetwork_testNetwork.log")])
def test_stderr_key_writes_the_log_to_a_file_too(mnist, tmp_path, timestamping, name):
    text = _one_hidden(mnist, tmp_path, "trainNetwork.SGD.maxEpochs=1",
                       f"stderr={tmp_path}/logs/OneHidden_bs_out",
                       f"timestamping={timestamping}")
    assert os.listdir(tmp_path / "logs") == [name]
    log = (tmp_path / "logs" / name).read_text()
    assert log == text and "Finished Epoch[ 1 of 1]" in log


# ---------------------------------------------------------------------------------------------
# ConvNet_MNIST.cntk and ConvNet_CIFAR10_DataAug.cntk
# ---------------------------------------------------------------------------------------------
def test_convnet_mnist_runs_unchanged(mnist, tmp_path):
    log = io.StringIO()
    run(MNIST, [f"dataDir={mnist}", f"outputDir={tmp_path}", "trainNetwork.SGD.maxEpochs=1",
                "trainNetwork.SGD.epochSize=128"], out=log)
    text = log.getvalue()
    assert "Training 98778 parameters in 10 out of 10 parameter tensors:" in text
    assert "\nSetting dropout rate to 0.5.\n" in text
    assert [(e[0], e[1], e[3], e[6], e[7]) for e in _epochs(text)] == [
        ("1", "1", "128", "128", "0.001")]
    assert re.search(r"^Final Results: Minibatch\[1-1\]: errs = \d+\.\d{3}% \* 64; "
                     r"ce = \d+\.\d{8} \* 64; perplexity = \d+\.\d{8}$", text, re.M), text
    assert (tmp_path / "Models" / "ConvNet_MNIST").is_file()


def test_convnet_cifar10_dataaug_runs_unchanged_and_stadyn_eval_repeats_it(cifar, tmp_path,
                                                                           capsys):
    overrides = [f"dataDir={cifar}", f"outputDir={tmp_path}", "TrainConvNet.SGD.maxEpochs=1"]
    log = io.StringIO()
    run(CIFAR, overrides, out=log)
    text = log.getvalue()
    assert "Training 949834 parameters in 14 out of 14 parameter tensors:" in text
    # epochSize = 0: one sweep of the 40 training images, in one minibatch (minibatchSize 64)
    assert [(e[0], e[1], e[3], e[5], e[6], e[7]) for e in _epochs(text)] == [
        ("1", "1", "40", "40", "40", "0.0015625")]
    assert (tmp_path / "Models" / "ConvNet_CIFAR10_DataAug").is_file()
    final = re.search(r"^Final Results: Minibatch\[1-1\]: errs = \d+\.\d{3}% \* 8; "
                      r"top5Errs = \d+\.\d{3}% \* 8$", text, re.M)
    assert final, text
    assert re.search(r"^Minibatch\[1-1\]: errs = \d+\.\d{3}% \* 8; top5Errs = \d+\.\d{3}% \* 8$",
                     text, re.M)
    capsys.readouterr()
    assert cli_main(["eval", str(CIFAR), *overrides]) == 0
    again = capsys.readouterr().out
    assert final.group(0) in again.splitlines()
    assert "Finished Epoch" not in again and "# Eval command (eval action)" in again


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------
def _edited(tmp_path: Path, old: str, new: str) -> tuple[Path, int, int]:
    """A copy of 01_OneHidden.cntk with ``old`` replaced; (path, line, column) of the edit."""
    text = ONE_HIDDEN.read_text()
    assert text.count(old) == 1
    start = text.index(old)
    line = text.count("\n", 0, start) + 1
    column = start - text.rfind("\n", 0, start)
    path = tmp_path / "edited.cntk"
    path.write_text(text.replace(old, new))
    return path, line, column


def _train_error(capsys, path: Path, *overrides: str) -> str:
    capsys.readouterr()
    assert cli_main(["train", str(path), *overrides]) == 1
    return capsys.readouterr().err


def test_syntax_error_points_to_file_line_column(mnist, tmp_path, capsys):
    path, line, column = _edited(tmp_path, "{200, activation=ReLU}", "{200 activation=ReLU}")
    err = _train_error(capsys, path, f"dataDir={mnist}", f"outputDir={tmp_path}")
    at = column + len("{200 ")
    assert f"{path}:{line}:{at}: unexpected identifier 'activation'; expected ',' or '}}'" in err
    assert "DenseLayer {200 activation=ReLU} (s1)" in err     # the offending source line


def test_unknown_library_function_is_named_with_its_location(mnist, tmp_path, capsys):
    path, line, column = _edited(tmp_path, "LinearLayer {labelDim} (h1)",
                                 "LinearLayr {labelDim} (h1)")
    err = _train_error(capsys, path, f"dataDir={mnist}", f"outputDir={tmp_path}")
    assert f"{path}:{line}:{column}: unknown function 'LinearLayr'" in err
    assert "did you mean 'LinearLayer'" in err


def test_evaluation_error_names_the_bad_argument(mnist, tmp_path, capsys):
    path, line, column = _edited(tmp_path, "{200, activation=ReLU}", "{200, activaton=ReLU}")
    err = _train_error(capsys, path, f"dataDir={mnist}", f"outputDir={tmp_path}")
    assert f"{path}:{line}:{column}: DenseLayer: " in err and "'activaton'" in err


def test_unknown_sgd_key_is_named(mnist, tmp_path, capsys):
    err = _train_error(capsys, ONE_HIDDEN, f"dataDir={mnist}", f"outputDir={tmp_path}",
                       "trainNetwork.SGD.momentumAsTimeConstnt=10")
    assert "unknown or unsupported SGD key 'momentumAsTimeConstnt'" in err
    assert "did you mean 'momentumAsTimeConstant'" in err


def test_reader_that_does_not_fit_the_network_is_reported(mnist, tmp_path):
    path, _, _ = _edited(tmp_path, "imageShape = 28:28:1", "imageShape = 14:14:1")
    with pytest.raises(ConfigError) as err:
        run(path, [f"dataDir={mnist}", f"outputDir={tmp_path}"], out=io.StringIO())
    assert "reader stream 'features' delivers samples of shape (784,) (784 values) but the " \
           "network input 'features' has 14 x 14 x 1 (196 values)" in str(err.value)
    reader_line = path.read_text().split("\n").index("    reader = {") + 1
    assert (err.value.path, err.value.line) == (str(path), reader_line)


def _bad_value(tmp_path: Path, old: str, new: str, value: str) -> tuple[Path, int, int]:
    """:func:`_edited`, with the line and column of ``value`` (its last occurrence in ``new``)."""
    path, _, _ = _edited(tmp_path, old, new)
    text = path.read_text()
    start = text.index(new) + new.rindex(value)
    return path, text.count("\n", 0, start) + 1, start - text.rfind("\n", 0, start)


def _short(data: Path, out: Path, edited: str = "") -> list[str]:
    """Overrides for a short run (1 epoch of 256 samples), leaving alone the keys ``edited``
    sets: a value that slipped through is found in seconds, not after 10 epochs of 60000."""
    short = ["trainNetwork.SGD.maxEpochs=1", "trainNetwork.SGD.epochSize=256"]
    return [f"dataDir={data}", f"outputDir={out}",
            *(o for o in short if o.split("=")[0].split(".")[-1] + " =" not in edited)]


def _error_of_edit(data: Path, tmp_path: Path, old: str, new: str, value: str,
                   keep: str = "") -> tuple[str, str]:
    """Run the example config with ``old`` replaced by ``new`` (a short run that leaves alone
    the keys ``keep`` sets); returns where ``value`` stands (``file:line:col``) and the
    ConfigError's message."""
    path, line, column = _bad_value(tmp_path, old, new, value)
    with pytest.raises(ConfigError) as err:
        run(path, _short(data, tmp_path, keep), out=io.StringIO())
    return f"{path}:{line}:{column}", str(err.value)


@pytest.mark.parametrize("old, new, value, message", [
    ("minibatchSize = 64", "minibatchSize = 0", "0", "trainNetwork.SGD.minibatchSize"),
    ("minibatchSize = 64", "minibatchSize = -4", "-4", "trainNetwork.SGD.minibatchSize"),
    ("minibatchSize = 64", "minibatchSize = 64:0", "0", "trainNetwork.SGD.minibatchSize"),
    ("minibatchSize = 1024", "minibatchSize = 0", "0", "testNetwork.minibatchSize"),
    ("minibatchSize = 1024", "minibatchSize = -4", "-4", "testNetwork.minibatchSize"),
])
def test_minibatch_size_below_1_is_reported_where_it_is_written(mnist, tmp_path, old, new,
                                                                value, message):
    at, error = _error_of_edit(mnist, tmp_path, old, new, value)
    assert error == f"{at}: {message} must be >= 1, got {value}"


@pytest.mark.parametrize("old, new, value, message", [
    ("learningRatesPerSample = 0.01*5:0.005", "learningRatesPerSample = -0.01", "-0.01",
     "learningRatesPerSample must be >= 0"),
    ("learningRatesPerSample = 0.01*5:0.005", "learningRatesPerSample = 0.01*5:-0.005", "-0.005",
     "learningRatesPerSample must be >= 0"),
    ("learningRatesPerSample = 0.01*5:0.005", "learningRatesPerMB = -1", "-1",
     "learningRatesPerMB must be >= 0"),
    ("learningRatesPerSample = 0.01*5:0.005", "learningRatesPerSample = 1e999", "1e999",
     "learningRatesPerSample must be a finite number"),
    ("momentumAsTimeConstant = 0", "momentumAsTimeConstant = -5", "-5",
     "momentumAsTimeConstant must be >= 0"),
    ("momentumAsTimeConstant = 0", "momentumPerMB = 0.9:1", "1",
     "momentumPerMB must lie in [0, 1)"),
    ("momentumAsTimeConstant = 0", "momentumAsTimeConstant = 0 ; L2RegWeight = -1", "-1",
     "L2RegWeight must be >= 0"),
    ("momentumAsTimeConstant = 0", "momentumAsTimeConstant = 0 ; L1RegWeight = -0.5", "-0.5",
     "L1RegWeight must be >= 0"),
    ("momentumAsTimeConstant = 0", "momentumAsTimeConstant = 0 ; dropoutRate = 0.5*2:1.5", "1.5",
     "dropoutRate must lie in [0, 1)"),
    ("momentumAsTimeConstant = 0", "momentumAsTimeConstant = 0 ; clippingThresholdPerSample = 0",
     "0", "clippingThresholdPerSample must be > 0 (infinity: no clipping)"),
    ("epochSize = 60000", "epochSize = -5", "-5",
     "epochSize must be >= 0 (0: one sweep of the data)"),
    ("maxEpochs = 10", "maxEpochs = 0", "0", "maxEpochs must be >= 1"),
    ("numMBsToShowResult = 500", "numMBsToShowResult = -1", "-1",
     "numMBsToShowResult must be >= 0"),
])
def test_bad_sgd_values_are_reported_as_written_where_they_stand(mnist, tmp_path, old, new,
                                                                 value, message):
    at, error = _error_of_edit(mnist, tmp_path, old, new, value, keep=new)
    assert error == f"{at}: trainNetwork.SGD.{message}, got {value}"


@pytest.mark.parametrize("old, new, value, message", [
    ("minibatchSize = 1024", "minibatchSize = 1024 ; numMBsToShowResult = x", "x",
     "'testNetwork.numMBsToShowResult' must be an integer, got 'x'"),
    ("minibatchSize = 1024", "minibatchSize = 1024 ; firstMBsToShowResult = -1", "-1",
     "testNetwork.firstMBsToShowResult must be >= 0, got -1"),
    ("minibatchSize = 1024", "minibatchSize = 1024 ; epochSize = -1", "-1",
     "testNetwork.epochSize must be >= 0 (0: one sweep of the data), got -1"),
    ('outputDir = "./Output" ;', 'outputDir = "./Output" ; randomSeedOffset = -3', "-3",
     "randomSeedOffset must lie in [0, 2**32), got -3"),
])
def test_other_bad_numbers_of_the_runner_are_located(mnist, tmp_path, old, new, value, message):
    at, error = _error_of_edit(mnist, tmp_path, old, new, value)
    assert error == f"{at}: {message}"


def test_stadyn_train_reports_a_bad_time_constant_as_written(mnist, tmp_path, capsys):
    path, line, column = _bad_value(tmp_path, "momentumAsTimeConstant = 0",
                                    "momentumAsTimeConstant = -5", "-5")
    err = _train_error(capsys, path, *_short(mnist, tmp_path))
    assert err == (f"stadyn train: error: {path}:{line}:{column}: "
                   "trainNetwork.SGD.momentumAsTimeConstant must be >= 0, got -5\n")


def _copy_models(one_hidden_run, tmp_path: Path) -> Path:
    """A copy of the 3-epoch run's model files (times kept) in ``tmp_path/Models``."""
    models = tmp_path / "Models"
    shutil.copytree(one_hidden_run[1] / "Models", models)
    return models


def test_a_truncated_model_file_gets_the_model_loaders_error(one_hidden_run, mnist, tmp_path):
    models = _copy_models(one_hidden_run, tmp_path)
    final = models / "01_OneHidden"
    with open(final, "r+b") as f:   # a zip cut short: no central directory any more
        f.truncate(3000)
    with pytest.raises(ConfigError) as err:
        run(ONE_HIDDEN, [f"dataDir={mnist}", f"outputDir={tmp_path}"], actions=("test",),
            out=io.StringIO())
    message = str(err.value)
    assert err.value.path == str(ONE_HIDDEN) and err.value.line is not None
    assert f"{final}: not a Stadyn model file: not a zip archive or truncated" in message
    assert "parameter file" not in message
    # resuming from a truncated model file: the same error, naming that file
    final.unlink()
    (models / "01_OneHidden.ckp").unlink()
    with open(models / "01_OneHidden.2", "r+b") as f:
        f.truncate(3000)
    with pytest.raises(ConfigError) as err:
        _one_hidden(mnist, tmp_path, "trainNetwork.SGD.maxEpochs=3")
    assert f"{models}/01_OneHidden.2: not a Stadyn model file: not a zip archive" in str(err.value)


def test_a_truncated_checkpoint_is_an_error_naming_it(one_hidden_run, mnist, tmp_path):
    models = _copy_models(one_hidden_run, tmp_path)
    ckp = models / "01_OneHidden.ckp"
    with open(ckp, "r+b") as f:
        f.truncate(ckp.stat().st_size // 2)
    with pytest.raises(ModelFileError) as err:
        _one_hidden(mnist, tmp_path, "trainNetwork.SGD.maxEpochs=4")
    assert str(err.value).startswith(f"{ckp}: not a readable checkpoint (")


def test_eval_without_a_model_and_unsupported_settings(mnist, tmp_path, capsys):
    capsys.readouterr()
    assert cli_main(["eval", str(ONE_HIDDEN), f"dataDir={mnist}", f"outputDir={tmp_path}"]) == 1
    err = capsys.readouterr().err
    assert f"model file '{tmp_path}/Models/01_OneHidden' does not exist" in err
    with pytest.raises(ConfigError, match='precision = "double" is not supported'):
        run(ONE_HIDDEN, [f"dataDir={mnist}", f"outputDir={tmp_path}", "precision=double"],
            out=io.StringIO())
    with pytest.raises(ConfigError, match=r"runs no eval or test command \(its commands: "
                                          r"trainNetwork \(train\)\)"):
        run(ONE_HIDDEN, [f"dataDir={mnist}", "command=trainNetwork"], actions=("test", "eval"),
            out=io.StringIO())
    assert cli_main(["train", str(ONE_HIDDEN), "maxEpochs"]) == 1
    assert "'maxEpochs' is not a key=value override" in capsys.readouterr().err
    assert cli_main(["train", str(ONE_HIDDEN), "--nproc", "0"]) == 1
    assert "--nproc must be at least 1" in capsys.readouterr().err


def test_stadyn_train_nproc_2_matches_one_process(mnist, tmp_path, capsys):
    """``stadyn train ... --nproc 2`` starts two ``python -m stadyn train`` workers.  On data read
    in order each reads every second sample, 32 of each minibatch of 64 (CNTK's data
    partitions), and they sum their gradients, so they train what one process trains (up to
    summation order)."""
    in_order = "trainNetwork.reader.randomize=false"
    one = _epochs(_one_hidden(mnist, tmp_path / "one", "trainNetwork.SGD.maxEpochs=1",
                              in_order))[0]
    capsys.readouterr()
    status = cli_main(["train", str(ONE_HIDDEN), f"dataDir={mnist}", f"outputDir={tmp_path}",
                       "trainNetwork.SGD.maxEpochs=1", "trainNetwork.SGD.epochSize=256",
                       "trainNetwork.SGD.numMBsToShowResult=2", in_order, "--nproc", "2",
                       "--timeout", "120"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "Data-parallel training on 2 workers." in out
    (two,) = _epochs(out)                         # rank 0 logs, once
    assert two[:2] == ("1", "1") and two[3:8] == one[3:8]
    assert float(two[2]) == pytest.approx(float(one[2]), abs=1e-6)
    assert out.count("Final Results: Minibatch[1-1]: errs = ") == 1
    assert sorted(os.listdir(tmp_path / "Models")) == ["01_OneHidden", "01_OneHidden.0",
                                                      "01_OneHidden.ckp"]


def test_stadyn_train_nproc_2_with_a_worker_given_no_data(mnist, tmp_path, capsys):
    """Randomized, CNTK's reader deals whole chunks to the workers: the small file is one
    chunk, so worker 0 reads 32 samples of each minibatch and worker 1 none; worker 1 still
    takes part in every step (cntk.exe's workers do), and the epoch counts its 256 samples
    (before, worker 1 stopped: 'the reader delivered no samples')."""
    status = cli_main(["train", str(ONE_HIDDEN), f"dataDir={mnist}", f"outputDir={tmp_path}",
                       "trainNetwork.SGD.maxEpochs=1", "trainNetwork.SGD.epochSize=256",
                       "trainNetwork.SGD.numMBsToShowResult=2", "--nproc", "2",
                       "--timeout", "120"])
    out = capsys.readouterr().out
    assert status == 0, out
    (two,) = _epochs(out)
    assert two[:2] == ("1", "1") and two[3] == "256"
    assert float(two[2]) < 2.3026                 # the loss (ln 10 at the start) fell


def test_check_numerics_names_the_config_line_that_made_the_nan(mnist, tmp_path, capsys):
    """checkNumerics=true: the first node giving -inf is named with its line in the config."""
    old = "h1 = DenseLayer {200, activation=ReLU} (s1)"
    path, line, _ = _edited(tmp_path, old, "h1 = Log (DenseLayer {200, activation=ReLU} (s1) * 0)")
    err = _train_error(capsys, path, f"dataDir={mnist}", f"outputDir={tmp_path}",
                       "trainNetwork.SGD.epochSize=256", "trainNetwork.SGD.maxEpochs=1",
                       "checkNumerics=true")
    assert f"log, created at {path}:{line}: its output holds -inf" in err
    assert "NumericsError" in err or "forward pass" in err


def test_test_command_windows_follow_cntk_and_add_up_to_the_final_results(mnist, tmp_path):
    """The test command with traceLevel=1: a line after each of the first 2 minibatches and
    every 3rd (numMBsToShowResult), one for the rest, each over its own window; the windows'
    sample-weighted criteria are the final results (64 samples in minibatches of 7)."""
    log = io.StringIO()
    run(ONE_HIDDEN, [f"dataDir={mnist}", f"outputDir={tmp_path}", "trainNetwork.SGD.epochSize=256",
                     "trainNetwork.SGD.maxEpochs=1", "testNetwork.minibatchSize=7",
                     "testNetwork.traceLevel=1", "testNetwork.numMBsToShowResult=3",
                     "testNetwork.firstMBsToShowResult=2"], out=log)
    text = log.getvalue()
    text = text[text.index("# testNetwork command"):]
    windows = re.findall(r"^Minibatch\[(\d+)-(\d+)\]: errs = ([\d.]+)% \* (\d+); "
                         r"ce = ([\d.]+) \* (\d+)$", text, re.M)
    assert [(int(a), int(b), int(n)) for a, b, _, n, _, _ in windows] == [
        (1, 1, 7), (2, 2, 7), (3, 3, 7), (4, 6, 21), (7, 9, 21), (10, 10, 1)]
    final = re.search(r"^Final Results: Minibatch\[1-10\]: errs = ([\d.]+)% \* 64; "
                      r"ce = ([\d.]+) \* 64; perplexity = ([\d.]+)$", text, re.M)
    assert final is not None
    ce = sum(float(c) * int(n) for *_, c, n in windows) / 64
    errs = sum(float(e) * int(n) for _, _, e, n, _, _ in windows) / 64
    assert float(final.group(2)) == pytest.approx(ce, rel=1e-6)
    assert float(final.group(1)) == pytest.approx(errs, abs=1e-3)
    assert float(final.group(3)) == pytest.approx(np.exp(float(final.group(2))), rel=1e-6)
