"""cntk.exe's ``hasComputed`` flag of a pre-computed node (``Mean``, ``InvStdDev``), saved with
the node in the model file (ComputationNode.h, PreComputedNodeBase::Save/Load: ``fstream <<
m_hasComputed``): a value computed from data that gives a NaN is a computed value -- a restart
does not compute it again and ``test`` reads it, the NaN going on into what it computes -- not
one "never computed".  A model file written before Stadyn saved the flag reads as before (an
all-NaN value is one never computed)."""

from __future__ import annotations

import io
import math

import numpy as np

import stadyn as sd
from stadyn.brainscript import run
from stadyn.brainscript._precompute_library import PreComputeNode
from stadyn.graph import Variable

# Log of a negative feature is NaN (CNTK's text reader takes no "nan"): the Mean over the
# data is NaN.  The criterion does not read it; the evaluation node "bad" does.
_CONFIG = """command = T:E ; deviceId = -1 ; traceLevel = 1
T = [ action = "train" ; modelPath = "{d}/m"
  BrainScriptNetworkBuilder = [ x = Input {{1}} ; y = Input {{2}}
    m = Mean (Log (x)) ; z = DenseLayer {{2}} (x)
    ce = CrossEntropyWithSoftmax (y, z) ; bad = ReduceSum (m + x)
    criterionNodes = (ce) ; evaluationNodes = (bad) ]
  SGD = [ minibatchSize = 2 ; learningRatesPerSample = 0.01 ; maxEpochs = 1 ]
  reader = $R$ ]
E = [ action = "test" ; modelPath = "{d}/m" ; evalNodeNames = (ce:bad) ; reader = $R$ ]
R = [ readerType = "CNTKTextFormatReader" ; file = "{d}/d.ctf" ; randomize = false
      input = [ x = [ dim = 1 ; format = "dense" ] ; y = [ dim = 2 ; format = "dense" ] ] ]
"""


def test_a_nan_from_the_data_is_a_computed_value(tmp_path):
    (tmp_path / "d.ctf").write_text("|x 1 |y 1 0\n|x -1 |y 0 1\n|x 2 |y 1 0\n|x 3 |y 0 1\n")
    (tmp_path / "j.cntk").write_text(_CONFIG.format(d=tmp_path))
    out = io.StringIO()
    result = run(str(tmp_path / "j.cntk"), out=out)
    assert "Precomputing --> 1 PreCompute nodes found." in out.getvalue()
    values = result.commands["E"].values
    assert math.isfinite(values["ce"][0]) and math.isnan(values["bad"][0])   # it propagates
    # a restart (one more epoch) reads the flag: nothing is computed again
    out = io.StringIO()
    run(str(tmp_path / "j.cntk"), ["T=[SGD=[maxEpochs=2]]", "command=T"], out=out)
    log = out.getvalue()
    assert "Starting from checkpoint" in log and "Precomputing -->" not in log
    assert "No PreCompute nodes found, or all already computed." in log


def test_without_the_flag_the_value_decides():
    with sd.parameter_registry(sd.ParameterRegistry()):
        value = Variable((2,))
        value.d = np.full(2, np.nan, np.float32)
        node = PreComputeNode("Mean", Variable((1, 2)), value, "mean/value")
        assert not node.computed                  # a file written before the flag was saved
        node.has_computed = True
        assert node.computed
        value.d = np.zeros(2, np.float32)
        node.has_computed = None
        assert node.computed


def test_bs_network_load_takes_the_flag_too(tmp_path):
    # a later train command loading the model (BS.Network.Load, as CNTK's Speech/LSTM configs
    # do after an edit action): the NaN value is a computed one, not one to compute again
    (tmp_path / "d.ctf").write_text("|x 1 |y 1 0\n|x -1 |y 0 1\n|x 2 |y 1 0\n|x 3 |y 0 1\n")
    text = _CONFIG.format(d=tmp_path).replace("command = T:E", "command = T:L") + f"""
L = [ action = "train" ; modelPath = "{tmp_path}/m2"
  BrainScriptNetworkBuilder = (BS.Network.Load ("{tmp_path}/m"))
  SGD = [ minibatchSize = 2 ; learningRatesPerSample = 0.01 ; maxEpochs = 1 ]
  reader = $R$ ]
"""
    (tmp_path / "j.cntk").write_text(text)
    out = io.StringIO()
    run(str(tmp_path / "j.cntk"), out=out)
    log = out.getvalue()
    assert log.count("Precomputing --> 1 PreCompute nodes found.") == 1       # T's pass only
    assert log.count("No PreCompute nodes found, or all already computed.") == 1
