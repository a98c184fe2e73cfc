"""The SGD block's ``batchNormalizationTimeConstant`` and ``batchNormalizationBlendTimeConstant``:
per-epoch values cntk.exe sets on every batch normalisation of the criterion where they change
(SGD.cpp ``ComputationNetwork::SetBatchNormalizationTimeConstants``; ComputationNetwork.cpp
prints ``"Setting batch normalization time constant to %.8g.\\n"``, ``"Setting batch
normalization blend time constant to %.8g.\\n"`` and ``"WARNING: there is no batch
normalization node.\\n"``).  Tests/EndToEndTests/Examples/Image/Deprecated/MNIST/
03_ConvBatchNorm_ndl/baseline.txt (``batchNormalizationBlendTimeConstant=0:1#INF``) shows the
line between epoch 1's checkpoint and ``Starting Epoch 2`` (line 314; Windows printed infinity
as ``1.#INF``, glibc as ``inf``)::

    SGD: Saving checkpoint model '.../Models/03_ConvBatchNorm.1'
    Setting batch normalization blend time constant to 1.#INF.

    Starting Epoch 2: learning rate per sample = 0.003125 ...

The losses are computed by hand in NumPy: with learning rate 0 (``minLearningRatePerSample = 0``
lets it train) the parameters stay as
initialised; a time constant of infinity keeps the first minibatch's statistics as the running
ones (mean, unbiased variance), and an infinite blend normalises with them alone.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from stadyn import ConfigError
from stadyn.brainscript._runner import run

CONFIG = """command = train
deviceId = -1
precision = "float"
traceLevel = 1
modelPath = "$OutputDir$/Models/bn"
train = {
    action = "train"
    BrainScriptNetworkBuilder = {
        feat = Input {2} ; lab = Input {1}
        normed = NORM
        out = ParameterTensor {(1:2), init = "fixedValue", value = 1} * normed
        sqerr = (out - lab) .* (out - lab)
        featureNodes = (feat) ; labelNodes = (lab) ; criterionNodes = (sqerr)
        outputNodes = (out)
    }
    SGD = {
        epochSize = 0
        minibatchSize = 4
        learningRatesPerSample = 0
        minLearningRatePerSample = 0
        momentumAsTimeConstant = 0
        maxEpochs = 2
        batchNormalizationTimeConstant = TIMECONST
        batchNormalizationBlendTimeConstant = BLEND
    }
    reader = {
        readerType = "CNTKTextFormatReader"
        file = "$DataDir$/data.txt"
        randomize = false
        input = { feat = { dim = 2 ; format = "dense" } ; lab = { dim = 1 ; format = "dense" } }
    }
}
"""
BN = "BatchNormalizationLayer {} (feat)"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bn")
    rng = np.random.default_rng(11)
    x = (rng.normal(0, 1.0, (16, 2)) * [1.0, 3.0] + [0.5, -2.0]).round(3)
    y = rng.normal(0, 1.0, 16).round(3)
    (folder / "data.txt").write_text("".join(f"|feat {a} {b} |lab {c}\n"
                                             for (a, b), c in zip(x, y)))
    return folder, x, y


def _run(folder: Path, blend: str, norm: str = BN, time_constant: str = "1#INF"):
    out = folder / f"run_{abs(hash((blend, norm, time_constant)))}"
    out.mkdir()
    path = out / "bn.cntk"
    path.write_text(CONFIG.replace("BLEND", blend).replace("NORM", norm)
                    .replace("TIMECONST", time_constant))
    log = io.StringIO()
    result = run(path, [f"DataDir={folder}", f"OutputDir={out}"], out=log)
    return log.getvalue(), result.commands["train"]


def _loss(x, y, mean, var):
    z = ((x - mean) / np.sqrt(var + 1e-5)).sum(axis=1)       # W = (1, 1), scale 1, bias 0
    return ((z - y) ** 2).mean()


def test_an_infinite_blend_from_epoch_2_normalises_with_the_running_statistics(data):
    folder, x, y = data
    text, epochs = _run(folder, "0:1#INF")
    batches = [slice(i, i + 4) for i in range(0, 16, 4)]
    # epoch 1: each minibatch its own statistics (biased variance)
    epoch1 = np.mean([_loss(x[b], y[b], x[b].mean(0), x[b].var(0)) for b in batches])
    # epoch 2: the running statistics, the first minibatch's (time constant infinite)
    first = x[batches[0]]
    epoch2 = _loss(x, y, first.mean(0), first.var(0, ddof=1))
    assert [e.criterion["sqerr"] for e in epochs] == [pytest.approx(epoch1, rel=1e-5),
                                                      pytest.approx(epoch2, rel=1e-5)]
    assert "Setting batch normalization time constant to inf.\n\nStarting Epoch 1:" in text
    assert text.count("Setting batch normalization blend time constant") == 1
    head, _, tail = text.partition("Setting batch normalization blend time constant to inf.\n")
    assert head.rstrip().endswith("bn.1'") and tail.startswith("\nStarting Epoch 2:")


NDL_NET = """run = net
net = [
    feat = Input(2)
    lab = Input(1)
    sc = Parameter(2, 1, init = fixedValue, value = 1)
    b = Parameter(2, 1, init = fixedValue, value = 0)
    m = Parameter(2, 1, init = fixedValue, value = 0, learningRateMultiplier = 0)
    v = Parameter(2, 1, init = fixedValue, value = 0, learningRateMultiplier = 0)
    h = BatchNormalization(feat, sc, b, m, v, spatial = false, normalizationTimeConstant = 100)
    W = Parameter(1, 2, init = fixedValue, value = 1)
    z = Times(W, h)
    d = Minus(z, lab)
    sqerr = ElementTimes(d, d)
    FeatureNodes = (feat)
    LabelNodes = (lab)
    CriterionNodes = (sqerr)
    OutputNodes = (z)
]
"""


def test_the_sgd_values_reach_an_ndl_batch_normalization_node_too(data):
    # the node's own normalizationTimeConstant = 100 is replaced by the SGD block's infinity
    folder, x, y = data
    (folder / "net.ndl").write_text(NDL_NET)
    builder = f'NDLNetworkBuilder = [ networkDescription = "{folder}/net.ndl" ]'
    text = CONFIG.replace("BLEND", "0:1#INF").replace("TIMECONST", "1#INF")
    start = text.index("    BrainScriptNetworkBuilder")
    text = text[:start] + "    " + builder + "\n" + text[text.index("    SGD = {"):]
    out = folder / "ndl"
    out.mkdir()
    (out / "bn.cntk").write_text(text)
    epochs = run(out / "bn.cntk", [f"DataDir={folder}", f"OutputDir={out}"],
                 out=io.StringIO()).commands["train"]
    first = x[:4]
    assert epochs[1].criterion["sqerr"] == pytest.approx(
        _loss(x, y, first.mean(0), first.var(0, ddof=1)), rel=1e-5)


def test_without_a_batch_normalization_cntk_warns(data):
    folder, _, _ = data
    text, _ = _run(folder, "0:1#INF", "feat")
    assert ("Setting batch normalization time constant to inf.\n"
            "WARNING: there is no batch normalization node.\n") in text


def test_a_negative_time_constant_is_refused_where_written(data):
    folder, _, _ = data
    with pytest.raises(ConfigError, match="batchNormalizationBlendTimeConstant must be >= 0"):
        _run(folder, "0:-1")


def test_a_negative_time_constant_is_corpus_level_statistics(data):
    # cntk.exe (TrainingNodes.h:2603-2610, ComputeExpAvgFactor): m_normTimeConst < 0 blends each
    # minibatch in with weight M / (M + samples seen before), no forgetting, so the running
    # mean is the average of the minibatch means so far and the running variance that of
    # their unbiased variances (all minibatches hold 4 samples); SGD.cpp:2990 and
    # ComputationNetwork.cpp:585-612 pass the SGD block's value to the node unchecked
    folder, x, y = data
    text, epochs = _run(folder, "0:1#INF", time_constant="-1")
    batches = [x[i:i + 4] for i in range(0, 16, 4)]
    epoch1 = np.mean([_loss(b, y[i * 4:i * 4 + 4], b.mean(0), b.var(0)) for i, b in
                      enumerate(batches)])
    # epoch 2, blend infinite: each minibatch is normalised with the running statistics just
    # updated with it, now over the 4 minibatches of epoch 1 and the first k + 1 of epoch 2
    seen = batches + batches
    epoch2 = np.mean([_loss(b, y[k * 4:k * 4 + 4],
                            np.mean([s.mean(0) for s in seen[:5 + k]], axis=0),
                            np.mean([s.var(0, ddof=1) for s in seen[:5 + k]], axis=0))
                      for k, b in enumerate(batches)])
    assert [e.criterion["sqerr"] for e in epochs] == [pytest.approx(epoch1, rel=1e-5),
                                                      pytest.approx(epoch2, rel=1e-5)]
    assert "Setting batch normalization time constant to -1.\n" in text
    # ... where an infinite one keeps the first minibatch's statistics (the test above)
    assert epoch2 != pytest.approx(_loss(x, y, batches[0].mean(0), batches[0].var(0, ddof=1)),
                                   rel=1e-3)
