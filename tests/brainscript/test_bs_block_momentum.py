"""BrainScript's ``ParallelTrain = [ parallelizationMethod = BlockMomentumSGD ]``: ``stadyn
train --nproc 2`` of a tiny config (a linear softmax classifier, parameters starting at zero,
the data in order) ends with the parameters cntk.exe's block momentum (BMUF,
``Source/1BitSGD/BlockMomentumSGD.h`` and ``Source/SGDLib/MASGD.h``, written out in NumPy
here) gives: every merge takes the block momentum of a full block (the time constant per
worker over the block's samples per worker), and each epoch's end merges, whatever the
samples since the last merge (none too).  (compat.cntk's ``block_momentum_distributed_learner``
is CNTK 2.7's other rule, the momentum of the samples the block saw and no epoch ends: checked
against CNTK 2.7 in tests/compat/test_cntk_block_momentum.py.)  The block options are read
with CNTK's names and defaults (SGD.cpp).  (Two 2-worker jobs: about 12 s on a shared
machine.)"""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript._blocks import sgd_config
from stadyn.brainscript._config import parse_config
from stadyn.brainscript._sgd import block_momentum, parallel_train
from stadyn.cli import main as cli_main



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
    input = [ features = [ dim = 3 ; format = "dense" ] ;
              labels = [ dim = 2 ; format = "dense" ] ] ] ]
""")
    return str(path)


def _numpy_block_momentum(data: str, block: int, constant, workers: int = 2, minibatch: int = 16,
                          rates=(0.02,), epoch: int = 96):
    """cntk.exe's block momentum update written out in NumPy (its BMUF with its defaults:
    Nesterov, the block learning rate 1): worker r trains plain SGD on samples r, r + 2, ...
    of each minibatch, and every ``block / workers`` samples of its own the models merge, and
    at each epoch's end (``epoch`` samples of all workers; ``rates`` per epoch), every merge
    with the momentum of a full block (BlockMomentumSGD.h's ModelAggregationProcessing)."""
    rows = [line.split("|")[1:] for line in open(data).read().splitlines()]
    x = np.array([[float(v) for v in r[0].split()[1:]] for r in rows])
    y = np.array([[float(v) for v in r[1].split()[1:]] for r in rows])
    w, b = [np.zeros((3, 2)) for _ in range(workers)], [np.zeros(2) for _ in range(workers)]
    start, smoothed = [np.zeros((3, 2)), np.zeros(2)], [np.zeros((3, 2)), np.zeros(2)]
    if constant is None:
        constant = -block / np.log(1 - 1 / workers)
    def merge() -> None:
        m = np.exp(-(block // workers) / (constant / workers))
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
        if seen >= block // workers:       # (SGD.cpp: a worker's block is full)
            merge()
            seen = 0
        if ends_epoch:                      # (OnEpochEnd, whatever was seen since)
            merge()
            seen = 0
    return w[0], b[0]


def _trained(folder, data: str, parallel: str, **sgd) -> dict:
    folder.mkdir()
    status = cli_main(["train", _config(folder, data, parallel, **sgd), "--nproc", "2",
                       "--timeout", "120"])
    assert status == 0
    return {k: v.d for k, v in sd.load(str(folder / "Models" / "bm")).parameters.items()}


def test_two_workers_train_what_cntk_exes_rule_gives(tmp_path, capsys):
    """Blocks of 24 samples per worker (48 in all), the momentum as a time constant of 100:
    each worker's 48 samples end two blocks, and the epoch's end merges once more with no
    new samples (cntk.exe's OnEpochEnd always merges; Stadyn skipped it)."""
    data = _data(tmp_path)
    ours = _trained(tmp_path / "bs", data, "parallelizationMethod = BlockMomentumSGD ; "
                    "BlockMomentumSGD = [ blockSizePerWorker = 24 ; "
                    "blockMomentumAsTimeConstant = 100 ]")
    capsys.readouterr()
    w, b = ours["W"].reshape(3, 2), ours["b"].reshape(2)       # (features x classes)
    want_w, want_b = _numpy_block_momentum(data, 48, 100.0)
    np.testing.assert_allclose(w, want_w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(b, want_b, rtol=1e-4, atol=1e-6)


def test_the_learning_rate_schedule_counts_all_workers_samples(tmp_path, capsys):
    """Two epochs of 48 samples (24 per worker) at 0.02 then 0.01 per sample: cntk.exe sets the
    rate of each epoch, an epoch counting all workers' samples (a learner counting its own
    would stay at 0.02 through the second epoch); blocks of 16 per worker, each epoch's last 8
    merged at its end with a full block's momentum (Stadyn took that of 8 samples)."""
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


def test_a_restart_goes_on_with_the_block_and_each_workers_reader(tmp_path, capsys):
    """Two epochs, the run restarted after the first (its final model removed, the first
    epoch's checkpoint kept): the restart goes on with the block the checkpoint kept (the
    model at the block's start and the block-level smoothed gradient: cntk.exe's ``BMACKP``
    section, BlockMomentumSGD.h's SaveToCheckPoint/LoadFromCheckPoint) and each worker reads on
    from its own position, so it ends with the parameters of cntk.exe's rule over the two
    epochs, as the uninterrupted run does (Stadyn restarted with a fresh block, and every
    worker at worker 0's position)."""
    data = _data(tmp_path)
    folder = tmp_path / "bs"
    folder.mkdir()
    config = _config(folder, data, "parallelizationMethod = BlockMomentumSGD ; "
                     "BlockMomentumSGD = [ blockSizePerWorker = 20 ; "
                     "blockMomentumAsTimeConstant = 100 ]",
                     "epochSize = 0 ; learningRatesPerSample = 0.02 ; maxEpochs = 2 ; "
                     "keepCheckPointFiles = true")
    argv = ["train", config, "--nproc", "2", "--timeout", "120"]
    assert cli_main(argv) == 0
    models = folder / "Models"
    (models / "bm").unlink()
    (models / "bm.ckp").unlink()
    assert cli_main(argv) == 0                      # (from bm.1 and bm.1.ckp)
    assert "Starting from checkpoint" in capsys.readouterr().out
    got = {k: v.d for k, v in sd.load(str(models / "bm")).parameters.items()}
    twice = tmp_path / "twice.txt"
    twice.write_text(open(data).read() * 2)
    want_w, want_b = _numpy_block_momentum(str(twice), 40, 100.0, epoch=96)
    np.testing.assert_allclose(got["W"].reshape(3, 2), want_w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got["b"].reshape(2), want_b, rtol=1e-4, atol=1e-6)
