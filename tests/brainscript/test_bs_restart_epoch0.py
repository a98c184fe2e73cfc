"""A training run stopped in its first epoch, restarted (make mode): cntk.exe's
``DetermineStartEpoch`` finds ``modelPath.0`` (the model written after the pre-compute pass)
up to date and starts from it, logging ``Starting from checkpoint. Loading network from
'<modelPath>.0'.`` (TrainActions.cpp); its pre-computed nodes are computed (``hasComputed``),
so the pass is skipped (``No PreCompute nodes found, or all already computed. Skipping
pre-computation step.``) and, as nothing was computed and the network was loaded, ``.0`` is not
written again (SGD.cpp's ``TrainOrAdaptModel``).  The restarted run's epochs are the
uninterrupted run's."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
from stadyn.brainscript import _precompute, _train_progress
from test_bs_network_ops import _run

CONFIG = """command = train
deviceId = -1 ; traceLevel = 1
modelPath = "Models/net"
train = [ action = "train"
  BrainScriptNetworkBuilder = [
    features = Input {3} ; labels = Input {2}
    z = DenseLayer {2} (DenseLayer {4, activation = Tanh} (MeanVarNorm (features)))
    p = LogPrior (labels)
    ce = CrossEntropyWithSoftmax (labels, z)
    errs = ClassificationError (labels, z)
    criterionNodes = (ce) ; evaluationNodes = (errs) ; outputNodes = (z : p) ]
  SGD = [ epochSize = 0 ; minibatchSize = 16 ; learningRatesPerSample = 0.02
          momentumAsTimeConstant = 100 ; maxEpochs = 2 ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "data.txt" ; randomize = true
    input = [ features = [ dim = 3 ; format = "dense" ] ;
              labels = [ dim = 2 ; format = "dense" ] ] ] ]
"""


def _folder(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir()
    rng = np.random.default_rng(3)
    x = rng.normal(size=(48, 3)) * [1, 20, 0.1] + [5, 100, -1]
    y = (x[:, 0] - 5 + (x[:, 1] - 100) / 20 > 0).astype(int)
    (folder / "data.txt").write_text("".join(
        f"|features {' '.join(f'{v:.4f}' for v in row)} |labels {1 - k} {k}\n"
        for row, k in zip(x, y)))
    return folder


def _epochs(log: str) -> list[str]:
    return [re.sub(r"epochTime=.*", "", line) for line in log.splitlines()
            if line.startswith("Finished Epoch")]


def test_a_run_stopped_in_epoch_1_restarts_from_model_0_without_the_data_pass(tmp_path,
                                                                              monkeypatch):
    whole = _run(_folder(tmp_path, "whole"), CONFIG)
    assert "Precomputing --> 3 PreCompute nodes found." in whole
    folder = _folder(tmp_path, "stopped")
    with monkeypatch.context() as m:               # stopped as epoch 1 begins
        def interrupt(self, trainer, epoch):
            raise KeyboardInterrupt
        m.setattr(_train_progress.CNTKProgress, "on_epoch_begin", interrupt)
        with pytest.raises(KeyboardInterrupt):
            _run(folder, CONFIG)
    models = folder / "Models"
    assert sorted(os.listdir(models)) == ["net.0"]
    written = (models / "net.0").read_bytes()
    with monkeypatch.context() as m:               # the pass must not run again
        def no_pass(self, samples):
            raise AssertionError("the data pass ran again")
        m.setattr(_precompute.RunningStatistics, "add", no_pass)
        again = _run(folder, CONFIG)
    assert "Starting from checkpoint. Loading network from 'Models/net.0'." in again
    assert "Creating virgin network." not in again and "Precomputing -->" not in again
    assert "No PreCompute nodes found, or all already computed. Skipping pre-computation " \
        "step.\n\nStarting Epoch 1:" in again
    assert "Checkpoint file is missing" not in again          # CNTK reads none at epoch 0
    assert (models / "net.0").read_bytes() == written         # not written again
    # the uninterrupted run's epochs and model
    assert _epochs(again) == _epochs(whole) and len(_epochs(again)) == 2
    ours, theirs = (sd.load(str(tmp_path / d / "Models" / "net")).parameters
                    for d in ("stopped", "whole"))
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        np.testing.assert_array_equal(ours[name].d, theirs[name].d)


def test_a_model_0_the_edit_action_wrote_is_trained_on_after_its_data_pass(tmp_path):
    # CNTK's discriminative pre-training pattern: an edit command writes modelPath.0 and the
    # train command starts from it; its Mean/InvStdDev were never computed (hasComputed =
    # false), so the pass runs now, and .0 is written again with them (PreCompute returned true)
    folder = _folder(tmp_path, "edited")
    network = CONFIG[CONFIG.index("  BrainScriptNetworkBuilder"):CONFIG.index("  SGD = [")]
    log = _run(folder, CONFIG.replace("command = train", "command = make:train")
               + 'make = [ action = "edit" ; outputModelPath = "Models/net.0"\n' + network + "]\n")
    assert "Starting from checkpoint. Loading network from 'Models/net.0'." in log
    assert "Precomputing --> 3 PreCompute nodes found." in log
    rows = [line.split("|") for line in (folder / "data.txt").read_text().splitlines()]
    x = np.array([[float(v) for v in r[1].split()[1:]] for r in rows])
    labels = np.array([[float(v) for v in r[2].split()[1:]] for r in rows])
    stats = {k: v.d for k, v in sd.load(str(folder / "Models" / "net.0")).parameters.items()
             if not v.need_grad}
    # (cntk.exe's names: the expression path of MeanVarNorm's call, the argument x of each
    # DenseLayer's apply, as Speech/LSTM/FullUtteranceLayers' baseline names z.x.x.mean)
    np.testing.assert_allclose(stats["z.x.x.mean"], x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(stats["z.x.x.invStdDev"], 1 / x.std(0), rtol=1e-5)
    np.testing.assert_allclose(stats["p._"], labels.mean(0), rtol=1e-6)
    assert len(_epochs(log)) == 2
