"""A parameter's ``learningRateMultiplier`` scales its learning rate, as cntk.exe's
``SGD::TrainOneEpoch`` does (``learnRatePerSample * node->GetLearningRateMultiplier()`` passed
to ``UpdateWeights``): the rate, not the gradient, so under FSAdaGrad, whose step divides by the
gradient's running size, a multiplier still scales the step.  The expectations are a NumPy
rewrite of SGD.cpp's ``UpdateWeights`` and the CPU kernels it calls (Matrix.cpp
``MomentumSGDUpdate``: ``sg = m sg + (1 - m) lr g; w -= sg``; CPUMatrixImpl.h ``FSAdagrad``),
on a linear model whose gradients are written out by hand, and CNTK 2.7's Trainer with one
learner per parameter at its own rate (``refgen_bs_lr_multiplier.py`` wrote
``lr_multiplier_cntk27.json``: the data and the trained values)."""

from __future__ import annotations

import io
import json
import pathlib

import numpy as np
import pytest

from stadyn import ConfigError
from stadyn.brainscript._runner import run
from stadyn.parametric import ParameterRegistry
from stadyn.serialize import load

CONFIG = """command = train
deviceId = -1
precision = "float"
traceLevel = 1
modelPath = "$OutputDir$/Models/lrm"
train = {
    action = "train"
    BUILDER
    SGD = {
        epochSize = 0
        minibatchSize = 4
        learningRatesPerSample = 0.01
        maxEpochs = 1
        UPDATE
    }
    reader = {
        readerType = "CNTKTextFormatReader"
        file = "$DataDir$/data.txt"
        randomize = false
        input = { feat = { dim = 2 ; format = "dense" } ; lab = { dim = 1 ; format = "dense" } }
    }
}
"""
BS = """BrainScriptNetworkBuilder = {
        feat = Input {2} ; lab = Input {1}
        W = ParameterTensor {(1:2), init = "fixedValue", value = 0.5, learningRateMultiplier = 0.5}
        b = ParameterTensor {1, init = "fixedValue", value = -0.25, learningRateMultiplier = 2}
        out = W * feat + b
        sqerr = (out - lab) .* (out - lab)
        featureNodes = (feat) ; labelNodes = (lab) ; criterionNodes = (sqerr)
        outputNodes = (out)
    }"""
NDL = """run = net
net = [
    feat = Input(2)
    lab = Input(1)
    W = Parameter(1, 2, init = fixedValue, value = 0.5, learningRateMultiplier = 0.5)
    b = Parameter(1, 1, init = fixedValue, value = -0.25, learningRateMultiplier = 2)
    out = Plus(Times(W, feat), b)
    d = Minus(out, lab)
    sqerr = ElementTimes(d, d)
    FeatureNodes = (feat)
    LabelNodes = (lab)
    CriterionNodes = (sqerr)
    OutputNodes = (out)
]
"""
MULTIPLIERS = (0.5, 2.0)                          # W's and b's
LR, MB, TC = 0.01, 4, 10.0                       # momentumAsTimeConstant = 10 where used
UPDATES = {"sgd": "momentumAsTimeConstant = 0",
           "momentum": f"momentumAsTimeConstant = {TC:g}",
           "fsadagrad": f"momentumAsTimeConstant = {TC:g} ; gradUpdateType = FSAdaGrad ; "
                        "varianceTimeConstant = 20",
           "adagrad": "gradUpdateType = AdaGrad",      # (these two against CNTK 2.7 only)
           "rmsprop": "gradUpdateType = RmsProp"}


CNTK27 = json.loads((pathlib.Path(__file__).parent.parent / "fixtures" / "brainscript" /
                     "lr_multiplier_cntk27.json").read_text())


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lrm")
    x = np.array(CNTK27["x"], np.float32)
    y = np.array(CNTK27["y"], np.float32)
    (folder / "data.txt").write_text("".join(f"|feat {a} {b} |lab {c}\n"
                                             for (a, b), c in zip(x, y)))
    (folder / "net.ndl").write_text(NDL)
    return folder, x, y


def _train(folder, update: str, builder: str, epochs: str = "maxEpochs = 1"
           ) -> dict[str, np.ndarray]:
    out = folder / f"run_{update}_{len(builder)}_{len(epochs)}"
    out.mkdir()
    path = out / "lrm.cntk"
    path.write_text(CONFIG.replace("BUILDER", builder).replace("UPDATE", UPDATES[update])
                    .replace("maxEpochs = 1", epochs))
    run(path, [f"DataDir={folder}", f"OutputDir={out}"], out=io.StringIO())
    found = ParameterRegistry()
    load(str(out / "Models" / "lrm"), registry=found)
    values = dict(found.items())
    return {name: np.asarray(values[name].d, np.float64).ravel() for name in ("W", "b")}


def _expected(x, y, update: str, epochs: int = 1) -> list[np.ndarray]:
    """SGD.cpp's updates of W and b, each at the rate times its multiplier."""
    params = [np.array([0.5, 0.5]), np.array([-0.25])]
    smoothed = [np.zeros(2), np.zeros(1)]
    ada = [np.zeros(2), np.zeros(1)]
    count = 0.0
    momentum = 0.0 if update == "sgd" else float(np.float32(np.exp(-1.0 / TC))) ** MB
    var_momentum = np.exp(-MB / 20.0)
    for start in [s for _ in range(epochs) for s in range(0, len(x), MB)]:
        xb, yb = x[start:start + MB].astype(np.float64), y[start:start + MB].astype(np.float64)
        d = xb @ params[0] + params[1][0] - yb
        grads = [2 * d @ xb, np.array([2 * d.sum()])]   # of the criterion summed over the batch
        count = var_momentum * count + (1 - var_momentum) * MB
        for k, (g, mult) in enumerate(zip(grads, MULTIPLIERS)):
            rate = LR * mult
            if update == "fsadagrad":
                ada[k] = var_momentum * ada[k] + (1 - var_momentum) * g * g
                g = g * np.minimum(np.sqrt(count) / np.sqrt(ada[k]), 10.0)
                smoothed[k] = momentum * smoothed[k] + (1 - momentum) * g
                params[k] = params[k] - rate * smoothed[k]
            else:
                smoothed[k] = momentum * smoothed[k] + (1 - momentum) * rate * g
                params[k] = params[k] - smoothed[k]
    return params


@pytest.mark.parametrize("update", sorted(UPDATES))
def test_each_parameter_trains_at_its_learning_rate_multiplier(data, update):
    folder, x, y = data
    got = _train(folder, update, BS)
    if update in ("sgd", "momentum", "fsadagrad"):
        want_w, want_b = _expected(x, y, update)
        np.testing.assert_allclose(got["W"], want_w, rtol=2e-5, atol=1e-6)
        np.testing.assert_allclose(got["b"], want_b, rtol=2e-5, atol=1e-6)
    cntk = CNTK27["trained"][update]
    np.testing.assert_allclose(got["W"], cntk["W"], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(got["b"], cntk["b"], rtol=2e-5, atol=1e-6)


def test_auto_adjust_keeps_each_parameters_multiplier(data):
    # after its fixed epochs AutoAdjust sets the rate it carries on: each parameter's times its
    # multiplier still (here the criterion improves, so the rate stays the block's)
    folder, x, y = data
    got = _train(folder, "momentum", BS,
                 "maxEpochs = 2 ; AutoAdjust = [ autoAdjustLR = adjustAfterEpoch ]")
    want_w, want_b = _expected(x, y, "momentum", epochs=2)
    np.testing.assert_allclose(got["W"], want_w, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(got["b"], want_b, rtol=2e-5, atol=1e-6)


def test_an_ndl_parameter_trains_at_its_learning_rate_multiplier(data):
    folder, x, y = data
    got = _train(folder, "momentum", f'NDLNetworkBuilder = [ networkDescription = '
                                      f'"{folder}/net.ndl" ]')
    want_w, want_b = _expected(x, y, "momentum")
    np.testing.assert_allclose(got["W"], want_w, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(got["b"], want_b, rtol=2e-5, atol=1e-6)


def test_a_negative_learning_rate_multiplier_is_refused(data):
    folder, _, _ = data
    with pytest.raises(ConfigError, match="learningRateMultiplier should be non-negative, "
                                          "got -1"):
        _train(folder, "sgd",
               BS.replace("learningRateMultiplier = 2", "learningRateMultiplier = -1"))


EDIT = """command = pre:edit:train
deviceId = -1
precision = "float"
traceLevel = 1
reader = {
    readerType = "CNTKTextFormatReader" ; file = "$DataDir$/data.txt" ; randomize = false
    input = { feat = { dim = 2 ; format = "dense" } ; lab = { dim = 1 ; format = "dense" } }
}
BrainScriptNetworkBuilder = {
    feat = Input {2} ; lab = Input {1}
    W = ParameterTensor {(1:2), init = "fixedValue", value = 0.5}
    b = ParameterTensor {1, init = "fixedValue", value = -0.25}
    out = W * feat + b
    sqerr = (out - lab) .* (out - lab)
    featureNodes = (feat) ; labelNodes = (lab) ; criterionNodes = (sqerr) ; outputNodes = (out)
}
pre = { action = "train" ; modelPath = "$OutputDir$/m1/lrm"
    SGD = { epochSize = 0 ; minibatchSize = 4 ; maxEpochs = 1
            learningRatesPerSample = 0 ; minLearningRatePerSample = 0 } }
edit = { action = "edit" ; editPath = "$OutputDir$/set.mel" }
train = { action = "train" ; modelPath = "$OutputDir$/m2/lrm"
    SGD = { epochSize = 0 ; minibatchSize = 4 ; maxEpochs = 1
            learningRatesPerSample = 0.01 ; momentumAsTimeConstant = 10 } }
"""
MEL = """m = LoadModel("$OutputDir$/m1/lrm", format="cntk")
SetProperty(W, learningRateMultiplier, 0.5)
SetProperty(b, learningRateMultiplier, 2)
SaveModel(m, "$OutputDir$/m2/lrm.0", format="cntk")
"""


def test_mel_set_property_gives_a_learning_rate_multiplier_the_model_file_keeps(data):
    # cntk.exe's SetProperty (node, learningRateMultiplier, v) takes any value not negative and
    # the model file keeps it (LearnableParameter::Save); the next train command starts from
    # the edited file (modelPath.0) and trains each parameter at its rate
    folder, x, y = data
    out = folder / "edit"
    out.mkdir()
    (out / "set.mel").write_text(MEL)
    (out / "edit.cntk").write_text(EDIT)
    run(out / "edit.cntk", [f"DataDir={folder}", f"OutputDir={out}"], out=io.StringIO())
    found = ParameterRegistry()
    load(str(out / "m2" / "lrm"), registry=found)
    values = dict(found.items())
    cntk = CNTK27["trained"]["momentum"]
    np.testing.assert_allclose(np.asarray(values["W"].d).ravel(), cntk["W"], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(values["b"].d).ravel(), cntk["b"], rtol=2e-5, atol=1e-6)
