"""A network loaded from a Stadyn model file (``BS.Network.Load``) logs each criterion under
the CNTK operation that made it, as cntk.exe does from its model file (which keeps each node's
operation name): ``SquareError``, not the name of the Stadyn op that computes it last (a
``Reshape``).  The MEL case (a node a MEL script made) is in test_bs_mel.py."""

from __future__ import annotations

import io

import numpy as np

import stadyn as sd
from stadyn.brainscript._runner import run

CONFIG = """command = first:again
deviceId = -1
precision = "float"
traceLevel = 1
SGD = { epochSize = 0 ; minibatchSize = 4 ; maxEpochs = 1 ; learningRatesPerSample = 0.01 }
reader = {
    readerType = "CNTKTextFormatReader" ; file = "$DataDir$/data.txt" ; randomize = false
    input = { feat = { dim = 2 ; format = "dense" } ; lab = { dim = 2 ; format = "dense" } }
}
first = { action = "train" ; modelPath = "$DataDir$/m1/net"
    NDLNetworkBuilder = [ networkDescription = "$DataDir$/net.ndl" ] }
again = { action = "train" ; modelPath = "$DataDir$/m2/net"
    BrainScriptNetworkBuilder = (BS.Network.Load ("$DataDir$/m1/net")) }
"""
NDL = """run = net
net = [
    feat = Input(2)
    lab = Input(2)
    W = Parameter(2, 2, init = fixedValue, value = 0.5)
    out = Times(W, feat)
    se = SquareError(lab, out)
    FeatureNodes = (feat)
    LabelNodes = (lab)
    CriterionNodes = (se)
    OutputNodes = (out)
]
"""


def test_a_loaded_criterion_is_logged_under_its_cntk_operation(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, (8, 2)).round(3)
    (tmp_path / "data.txt").write_text("".join(
        f"|feat {a} {b} |lab {'1 0' if a > b else '0 1'}\n" for a, b in x))
    (tmp_path / "run.cntk").write_text(CONFIG)
    (tmp_path / "net.ndl").write_text(NDL)
    log = io.StringIO()
    run(tmp_path / "run.cntk", [f"DataDir={tmp_path}"], out=log)
    text = log.getvalue()
    assert text.count("Training criterion:   se = ") == 2       # first's, again's
    again = text[text.rindex("Training criterion:"):]
    assert "Training criterion:   se = SquareError\n" in again
    assert "operation:SquareError" in sd.load(str(tmp_path / "m1" / "net")).tags["se"]
