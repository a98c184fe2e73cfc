"""CNTK.core.bs's ``EnvironmentInput (propertyName)`` (CNTK.core.bs:579): cntk.exe's
``EnvironmentInputNode`` (Source/ComputationNetworkLib/InputAndParamNodes.h:480-555) reads the
network's environment each time it runs (``IsOutOfDateWrtInputs`` is always true, :522) and
gives ``(ElemType) Environment().IsTraining()`` (:513-514) as one value, ``[1]`` without a
dynamic axis (:549-551); any other property is refused in Validate ("EnvironmentInput: There
is no environment property '%ls'", :516, read once at :546).  CNTK 2.7's Python has no such
node, so the expected values are these rules computed by hand in NumPy.  ee9d720a listed the
name as missing (tests/brainscript/test_bs_core_names.py)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import StadynLibrary, build_network
from stadyn.brainscript._runner import run
from stadyn.train import feed


def _network(text: str):
    # (one sample a row: no sequence axis)
    return build_network("{ " + text + " }", StadynLibrary(sequences=False), "net.bs")


@pytest.mark.parametrize("expression", [
    "e = EnvironmentInput ('isTraining')",
    # CNTK.core.bs's own form of the node, with the C++ node's setting
    "e = new ComputationNode [ operation = 'EnvironmentInput' ; propertyName = 'isTraining' ]"])
def test_one_graph_reads_the_phase_each_time_it_runs(expression):
    x = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        # a Dropout-like expression: twice the input while training, the input otherwise
        net = _network(f"x = Input {{2}}\n {expression}\n"
                       " y = BS.Boolean.If (e, x * 2, x) ; z = x .* e")
        feed(net.nodes["x"], x)
        assert net.nodes["e"].shape == (1,)           # [1], no batch axis
        for phase, want in ((True, 1.0), (False, 0.0), (True, 1.0)):
            with sd.training(phase):
                for name in ("e", "y", "z"):
                    net.nodes[name].forward()
                np.testing.assert_array_equal(net.nodes["e"].d, [want])
                np.testing.assert_array_equal(net.nodes["y"].d, x * (1.0 + want))
                np.testing.assert_array_equal(net.nodes["z"].d, x * want)


def test_another_property_is_refused_at_the_users_line():
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError) as e:
            _network("x = Input {2}\n e = EnvironmentInput ('isEvaluating')")
    assert (e.value.path, e.value.line) == ("net.bs", 2)
    assert "EnvironmentInput: There is no environment property 'isEvaluating'" in str(e.value)


CONFIG = """command = train
deviceId = -1
traceLevel = 1
modelPath = "$OutputDir$/Models/env"
train = {
    action = "train"
    BrainScriptNetworkBuilder = {
        feat = Input {2} ; lab = Input {1}
        out = ParameterTensor {(1:2), init = "fixedValue", value = 1} * feat
        # 100 added to each sample's loss while training, nothing in validation
        sqerr = (out - lab) .* (out - lab) + 100 * EnvironmentInput ('isTraining')
        featureNodes = (feat) ; labelNodes = (lab) ; criterionNodes = (sqerr)
    }
    SGD = {
        epochSize = 0 ; minibatchSize = 4 ; maxEpochs = 1
        learningRatesPerSample = 0 ; minLearningRatePerSample = 0 ; momentumAsTimeConstant = 0
    }
    reader = {
        readerType = "CNTKTextFormatReader" ; file = "$DataDir$/data.txt" ; randomize = false
        input = { feat = { dim = 2 ; format = "dense" } ; lab = { dim = 1 ; format = "dense" } }
    }
    cvReader = {
        readerType = "CNTKTextFormatReader" ; file = "$DataDir$/data.txt" ; randomize = false
        input = { feat = { dim = 2 ; format = "dense" } ; lab = { dim = 1 ; format = "dense" } }
    }
}
"""


def test_training_reads_1_and_validation_0(tmp_path):
    # the Trainer's steps run in the training phase, the cvReader pass after the epoch in the
    # evaluation phase (cntk.exe's SGD: ScopedNetworkOperationMode training / inferring)
    rng = np.random.default_rng(5)
    x = rng.normal(0, 1.0, (12, 2)).round(3)
    y = rng.normal(0, 1.0, 12).round(3)
    (tmp_path / "data.txt").write_text("".join(f"|feat {a} {b} |lab {c}\n"
                                               for (a, b), c in zip(x, y)))
    (tmp_path / "env.cntk").write_text(CONFIG)
    result = run(tmp_path / "env.cntk", [f"DataDir={tmp_path}", f"OutputDir={tmp_path}"],
                 out=io.StringIO())
    (epoch,) = result.commands["train"]
    loss = ((x.sum(axis=1) - y) ** 2).mean()        # W = (1, 1); learning rate 0
    assert epoch.criterion["sqerr"] == pytest.approx(loss + 100, rel=1e-5)
    assert epoch.validation["sqerr"] == pytest.approx(loss, rel=1e-5)
