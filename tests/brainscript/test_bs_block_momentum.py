"""BrainScript's ``ParallelTrain = [ parallelizationMethod = BlockMomentumSGD ]``: ``stadyn
train --nproc 2`` of a tiny config (a linear softmax classifier, parameters starting at zero,
the data in order) ends with the parameters compat.cntk's ``block_momentum_distributed_learner``
(checked against CNTK 2.7 under ``mpiexec -n 2`` in tests/compat/test_cntk_block_momentum.py)
reaches on the same data with the same minibatches and blocks (its script:
``tests/fixtures/bs_block_momentum/compat_block_momentum.py``), and those the block momentum
update written out in NumPy gives.  The block options are read with CNTK's names and defaults
(SGD.cpp).  (Two 2-worker jobs, run side by side: about 15 s on a shared machine.)"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript._blocks import sgd_config
from stadyn.brainscript._config import parse_config
from stadyn.brainscript._sgd import block_momentum, parallel_train
from stadyn.cli import main as cli_main

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "fixtures", "bs_block_momentum", "compat_block_momentum.py")
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "src"))


def _data(folder) -> str:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(96, 3))
    k = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(int)
    path = folder / "data.txt"
    path.write_text("".join(f"|features {' '.join(f'{v:.4f}' for v in row)} |labels {1 - c} {c}\n"
                            for row, c in zip(x, k)))
    return str(path)


def _config(folder, data: str, parallel: str, sgd: str = "epochSize = 0 ; "
            "learningRatesPerSample = 0.02 ; maxEpochs = 1") -> str:
    path = folder / "bm.cntk"
    path.write_text(f"""command = train
deviceId = -1 ; traceLevel = 0
train = [ action = "train" ; modelPath = "{folder}/Models/bm"
  BrainScriptNetworkBuilder = [
    features = Input {{3}} ; labels = Input {{2}}
    W = ParameterTensor {{(2:3), init = "fixedValue", value = 0}}
    b = ParameterTensor {{2, init = "fixedValue", value = 0}}
    z = W * features + b
    ce = CrossEntropyWithSoftmax (labels, z)
    criterionNodes = (ce) ; outputNodes = (z) ]
  SGD = [ {sgd} ; minibatchSize = 16 ; momentumPerMB = 0
    ParallelTrain = [ {parallel} ] ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "{data}" ; randomize = false
    input = [ features = [ dim = 3 ; format = "dense" ] ; labels = [ dim = 2 ; format = "dense" ] ] ] ]
""")
    return str(path)


def _numpy_block_momentum(data: str, block: int, constant, workers: int = 2, minibatch: int = 16,
                          rates=(0.02,), epoch: int = 96):
    """The block momentum update written out in NumPy (CNTK's BMUF with its defaults:
    Nesterov, the block learning rate 1): worker r trains plain SGD on samples r, r + 2, ...
    of each minibatch, and every ``block / workers`` samples of its own the models merge, and
    at each epoch's end (``epoch`` samples of all workers; ``rates`` per epoch)."""
    rows = [line.split("|")[1:] for line in open(data).read().splitlines()]
    x = np.array([[float(v) for v in r[0].split()[1:]] for r in rows])
    y = np.array([[float(v) for v in r[1].split()[1:]] for r in rows])
    w, b = [np.zeros((3, 2)) for _ in range(workers)], [np.zeros(2) for _ in range(workers)]
    start, smoothed = [np.zeros((3, 2)), np.zeros(2)], [np.zeros((3, 2)), np.zeros(2)]
    if constant is None:
        constant = -block / np.log(1 - 1 / workers)
    def merge(seen: int) -> None:
        m = np.exp(-seen / (constant / workers))
        for k, mine in enumerate((w, b)):
            summed = sum(start[k] - v for v in mine)
            smoothed[k] = m * smoothed[k] + (1 - m) * summed
            start[k] = start[k] - smoothed[k] - m * smoothed[k]     # (Nesterov)
            for r in range(workers):
                mine[r] = start[k].copy()

    seen = 0
    for first in range(0, len(x), minibatch):
        rate = rates[min(first // epoch, len(rates) - 1)]
        for r in range(workers):
            rows = list(range(first + r, min(first + minibatch, len(x)), workers))
            z = x[rows] @ w[r] + b[r]
            p = np.exp(z - z.max(1, keepdims=True))
            g = p / p.sum(1, keepdims=True) - y[rows]
            w[r] -= rate * x[rows].T @ g
            b[r] -= rate * g.sum(0)
        seen += len(range(first, min(first + minibatch, len(x)), workers))
        ends_epoch = (first + minibatch) % epoch == 0 or first + minibatch >= len(x)
        if seen >= block // workers or (ends_epoch and seen):
            merge(seen)
            seen = 0
    return w[0], b[0]


def _trained(folder, data: str, parallel: str, **sgd) -> dict:
    folder.mkdir()
    status = cli_main(["train", _config(folder, data, parallel, **sgd), "--nproc", "2",
                       "--timeout", "120"])
    assert status == 0
    return {k: v.d for k, v in sd.load(str(folder / "Models" / "bm")).parameters.items()}


def _compat(folder, data: str, block: int, constant=None) -> subprocess.Popen:
    """compat.cntk's run of the same training on 2 workers, started (it runs beside ours)."""
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([SRC] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    env.pop("PYTEST_XDIST_WORKER", None)
    argv = [sys.executable, "-m", "stadyn.distributed.run", "--nproc", "2", "--timeout", "120",
            SCRIPT, data, str(folder / "compat.npz"), "16", str(block)] + (
                [] if constant is None else [str(constant)])
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def test_two_workers_train_what_the_compat_learner_and_numpy_train(tmp_path, capsys):
    """Blocks of 28 samples per worker (56 in all), the momentum as a time constant of 100:
    each worker's 48 samples end one block after 32 and leave 16 in a second, which the
    epoch's end merges (cntk.exe's OnEpochEnd; compat's ``create_checkpoint()`` ends it)."""
    data = _data(tmp_path)
    compat = _compat(tmp_path, data, 56, 100.0)
    ours = _trained(tmp_path / "bs", data, "parallelizationMethod = BlockMomentumSGD ; "
                    "BlockMomentumSGD = [ blockSizePerWorker = 28 ; "
                    "blockMomentumAsTimeConstant = 100 ]")
    capsys.readouterr()
    _, err = compat.communicate(timeout=300)
    assert compat.returncode == 0, err[-4000:]
    with np.load(tmp_path / "compat.npz") as f:
        theirs = {k: f[k] for k in f.files}
    w, b = ours["W"].reshape(3, 2), ours["b"].reshape(2)       # (features x classes)
    np.testing.assert_allclose(w, theirs["W"].reshape(3, 2), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(b, theirs["b"].reshape(2), rtol=1e-5, atol=1e-7)
    want_w, want_b = _numpy_block_momentum(data, 56, 100.0)
    np.testing.assert_allclose(w, want_w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(b, want_b, rtol=1e-4, atol=1e-6)


def test_the_learning_rate_schedule_counts_all_workers_samples(tmp_path, capsys):
    """Two epochs of 48 samples (24 per worker) at 0.02 then 0.01 per sample: cntk.exe sets the
    rate of each epoch, an epoch counting all workers' samples (a learner counting its own
    would stay at 0.02 through the second epoch); blocks of 16 per worker, each epoch's last 8
    merged at its end."""
    data = _data(tmp_path)
    ours = _trained(tmp_path / "bs", data, "parallelizationMethod = BlockMomentumSGD ; "
                    "BlockMomentumSGD = [ blockSizePerWorker = 16 ]",
                    sgd="epochSize = 48 ; learningRatesPerSample = 0.02:0.01 ; maxEpochs = 2")
    capsys.readouterr()
    want_w, want_b = _numpy_block_momentum(data, 32, None, rates=(0.02, 0.01), epoch=48)
    np.testing.assert_allclose(ours["W"].reshape(3, 2), want_w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ours["b"].reshape(2), want_b, rtol=1e-4, atol=1e-6)


def _options(text: str, workers: int = 2):
    rec = parse_config("SGD = [ maxEpochs = 1 ; learningRatesPerSample = 0.1 ; ParallelTrain = "
                       f"[ parallelizationMethod = BlockMomentumSGD ; {text} ] ]")["SGD"]
    return block_momentum(sgd_config(rec), rec, workers)


def test_cntks_names_and_defaults():
    """SGD.cpp: 120000 samples per worker by default, the momentum 1 - 1/workers per block as
    a time constant, blockMomentumPerSync converted with the block size, Nesterov's momentum,
    the learner's momentum reset and a block learning rate of 1 by default."""
    default = _options("")
    assert default["block_size"] == 240000
    assert default["time_constant"] == pytest.approx(-240000 / np.log(0.5))
    assert (default["nesterov"], default["reset_after_block"],
            default["block_learning_rate"]) == (True, True, 1.0)
    given = _options("BlockMomentumSGD = [ syncPeriod = 100 ; blockMomentumPerSync = 0.9 ; "
                     "useNesterovMomentum = false ; resetSGDMomentum = false ; "
                     "blockLearningRate = 0.5 ]", workers=4)
    assert given["block_size"] == 400
    assert given["time_constant"] == pytest.approx(-400 / np.log(0.9))
    assert (given["nesterov"], given["reset_after_block"],
            given["block_learning_rate"]) == (False, False, 0.5)
    assert _options("BlockMomentumSGD = [ blockSize = 7 ]", workers=1) is None   # alone


@pytest.mark.parametrize("text, message", [
    ("BlockMomentumSGD = [ blockSize = 8 ; blockSizePerWorker = 4 ]",
     "only allowed to set blockSizePerWorker or blockSize"),
    ("BlockMomentumSGD = [ blockMomentumPerSync = 0.5 ; blockMomentumAsTimeConstant = 9 ]",
     "either blockMomentumPerSync or blockMomentumAsTimeConstant"),
    ("BlockMomentumSGD = [ blockMomentumPerSync = 1 ]", r"must be in \[0, 1\)")])
def test_contradicting_options_are_refused_with_cntks_words(text, message):
    with pytest.raises(ConfigError, match=message):
        _options(text)


def test_block_momentum_is_accepted_on_several_workers():
    """bbd61c07 refused it ('parallelizationMethod = BlockMomentumSGD is not supported')."""
    rec = parse_config("SGD = [ maxEpochs = 1 ; learningRatesPerSample = 0.1 ; ParallelTrain = "
                       "[ parallelizationMethod = BlockMomentumSGD ] ]")["SGD"]
    assert parallel_train(sgd_config(rec), rec, 2) is None
