"""CNTK's two BrainScript sequence examples, adapted (examples/brainscript): they train with
``stadyn train``'s engine on small generated CTF data of the same format, and the loss falls."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from stadyn.brainscript import run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "brainscript"
sys.path.insert(0, str(EXAMPLES))
import make_data  # noqa: E402  (the example's own generator)


def _train(config: str, tmp_path: Path, *overrides: str):
    out = io.StringIO()
    result = run(EXAMPLES / config, [f"DataDir={tmp_path}", f"OutputDir={tmp_path / 'out'}",
                                     "command=Train", *overrides], out=out)
    return result.commands["Train"], out.getvalue()


@pytest.mark.slow
def test_atis_slot_tagging_config_trains(tmp_path):
    # a BS.RNNs.RecurrentLSTMPStack: a loop written in BrainScript, run as one recurrence
    make_data.atis(str(tmp_path / "ATIS.train.ctf"), 24, 1, lengths=(3, 5))
    # the weights start as cntk.exe starts them: 'uniform' is U(+-0.05) times initValueScale,
    # so this small LSTM leaves the prior's plateau (about 2.06) only after some 8 epochs
    epochs, log = _train("ATIS.cntk", tmp_path, "Train.SGD.maxEpochs=12",
                         "Train.SGD.learningRatesPerSample=0.05")
    losses = [e.criterion["cr"] for e in epochs]
    assert len(losses) == 12 and losses[-1] < 0.8 * losses[0], losses
    # samples are the labels' steps: every word of the 24 sentences, each epoch
    steps = sum(1 for _ in open(tmp_path / "ATIS.train.ctf"))
    assert [e.samples for e in epochs] == [steps] * 12
    assert "cr = " in log and f"* {steps}; errs = " in log


@pytest.mark.slow
def test_simple_sequence_classification_config_trains(tmp_path):
    # EmbeddingLayer, RecurrentLSTMLayer (the fused LSTM), BS.Sequences.Last, DenseLayer;
    # features on their own DynamicAxis, one label per sequence
    make_data.classification(str(tmp_path / "Train.ctf"), 60, 3, lengths=(2, 5))
    epochs, log = _train("SimpleExample.cntk", tmp_path, "Train.SGD.maxEpochs=8",
                         # 20 steps: ~7 sequences, ~9 updates an epoch (an epoch's minibatches
                         # are no longer cut to a few steps at its end)
                         "Train.SGD.minibatchSize=20",
                         "Train.SGD.learningRatesPerSample=0.3")
    losses = [e.criterion["ce"] for e in epochs]
    assert losses[-1] < 0.8 * losses[0], losses
    assert [e.samples for e in epochs] == [60] * 8     # one label per sequence
