"""``PastValue`` / ``FutureValue`` of a criterion node, refused as cntk.exe refuses it: cntk.exe's
``SquareError`` (any criterion node) is one ``[1]`` value for the minibatch with no MBLayout
(``ComputationNodeBase::ValidateBinaryReduce``: ``m_pMBLayout = nullptr``), and
``DelayedValueNodeBase::Validate`` (RecurrentNodes.cpp) stops the network's validation with
"p PastValue operation requires the main (first) input to have a dynamic axis."  On 2f8d9b80
Stadyn trained such a network, delaying its per-sample criterion values one step."""

from __future__ import annotations

import io

import pytest

from stadyn._errors import ConfigError
from stadyn.brainscript import run

CONFIG = """command = train
deviceId = -1 ; traceLevel = 1
modelPath = "$OutputDir$/Models/net"
train = [ action = "train"
  BrainScriptNetworkBuilder = [
    t = DynamicAxis {}
    features = Input {1, dynamicAxis = t} ; labels = Input {1, dynamicAxis = t}
    w = ParameterTensor {1, initValue = 1}
    se = SquareError (labels, w .* features)
    p = DELAY (0, CRITERION)
    ce = se + p
    criterionNodes = (ce) ]
  SGD = [ epochSize = 0 ; minibatchSize = 6 ; learningRatesPerSample = 0.000001 ; maxEpochs = 1 ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "$OutputDir$/data.txt" ; randomize = false
    input = [ features = [ dim = 1 ; format = "dense" ]
              labels = [ dim = 1 ; format = "dense" ] ] ] ]
"""


@pytest.mark.parametrize("delay, criterion", [("PastValue", "se"), ("FutureValue", "se"),
                                              ("PastValue", "Negate (se)")])
def test_a_delay_of_a_criterion_node_is_refused_as_cntk_exe_refuses_it(tmp_path, delay,
                                                                         criterion):
    (tmp_path / "data.txt").write_text(
        "".join(f"{i // 3} |features {i} |labels {i % 2}\n" for i in range(12)))
    config = tmp_path / "cmd.cntk"
    config.write_text(CONFIG.replace("DELAY", delay).replace("CRITERION", criterion))
    with pytest.raises(ConfigError) as info:
        run(config, [f"OutputDir={tmp_path}"], out=io.StringIO())
    message = str(info.value)
    assert f"p {delay} operation requires the main (first) input to have a dynamic axis" \
        in message
    assert f"{config}:10:" in message        # the user's line: p = ...
