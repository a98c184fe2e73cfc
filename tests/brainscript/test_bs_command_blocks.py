"""A run's log and its config as cntk.exe reads them: the learnable parameters listed by name,
a test command's ``SGD`` block (read only by training), SGD keys without effect here, a stray
closing bracket at the end of a file."""
from __future__ import annotations

import io
import re

import numpy as np
import pytest

from stadyn._errors import ConfigError
from stadyn.brainscript import parse_config
from stadyn.brainscript._blocks import sgd_config
from stadyn.brainscript._runner import run
from stadyn.brainscript._sgd import check_sgd_keys

_CONFIG = """deviceId = -1
traceLevel = 1
modelPath = "Models/net"
command = train:test
train = [ action = "train"
  BrainScriptNetworkBuilder = [
    features = Input {3} ; labels = Input {3}
    zz = ParameterTensor {(3:3)}
    B = ParameterTensor {(3:3)}
    A = ParameterTensor {(3:3)}
    b = ParameterTensor {3}
    z = zz * Tanh (features) + B * features + A * features + b
    ce = CrossEntropyWithSoftmax (labels, z)
    criterionNodes = (ce) ; outputNodes = (z) ]
  SGD = [ epochSize = 0 ; minibatchSize = 8 ; learningRatesPerSample = 0.01 ; maxEpochs = 1 ]
  READER
]
test = [ action = "test" ; minibatchSize = 8
  # PTB's RNN test (Tests/EndToEndTests/Text/...): an SGD block in a test command
  SGD = [ maxEpochs = 3 ]
  READER ]
""".replace("READER", """reader = [ readerType = "CNTKTextFormatReader" ; file = "data.txt"
    randomize = false
    input = [ features = [ dim = 3 ; format = "dense" ] ;
              labels = [ dim = 3 ; format = "dense" ] ] ]""")


def _run(tmp_path, monkeypatch, config: str = _CONFIG) -> str:
    rng = np.random.default_rng(0)
    (tmp_path / "data.txt").write_text("".join(
        f"|features {' '.join(f'{v:.3f}' for v in rng.normal(size=3))} |labels 0 1 0\n"
        for _ in range(16)))
    (tmp_path / "cmd.cntk").write_text(config)
    out = io.StringIO()
    monkeypatch.chdir(tmp_path)
    run(str(tmp_path / "cmd.cntk"), out=out)
    return out.getvalue()


def test_learnable_parameters_are_listed_by_name_and_a_test_sgd_block_needs_no_rates(tmp_path,
                                                                                      monkeypatch):
    log = _run(tmp_path, monkeypatch)
    # cntk.exe sorts the learnable nodes by name (ComputationNetwork.cpp, "sort learnable
    # parameters by name"; BatchNormalization/NonSpatial/CNTK/baseline.txt lists b, h1.W, h1.b,
    # ol.W, ol.b, sc), not in the order they were made
    listed = re.findall(r"\tNode '([^']+)' \(LearnableParameter operation\)", log)
    assert listed == ["A", "B", "b", "zz"]
    # the test command reads nothing of its SGD block's training settings
    assert re.search(r"Final Results: Minibatch\[1-2\]: ce = [0-9.]+ \* 16", log), log


def test_sequence_training_keys_are_accepted_without_a_sequence_criterion():
    # SGD.cpp reads hSmoothingWeight (default 0.95), frameDropThresh, ... and passes them only to
    # a SequenceWithSoftmax criterion (ComputationNetwork::SetSeqParam); cntk_sequence.cntk
    # writes hsmoothingWeight and frameDropThresh
    rec = parse_config("SGD = [ learningRatesPerSample = 0.1 ; maxEpochs = 1\n"
                       "  hsmoothingWeight = 0.95 ; frameDropThresh = 1e-10 ; seqGammarAMF = 14\n"
                       "  doReferenceAlign = false ; seqGammarLMF = 14 ; seqGammarWordPen = 0\n"
                       "  seqGammarBMMIFactor = 0 ; seqGammarUsesMBR = false ]")["SGD"]
    check_sgd_keys(sgd_config(rec), rec)


def test_a_closing_bracket_alone_at_the_files_level_is_an_item_nothing_reads():
    # cntk.exe's ConfigParser::Parse (Config.h) hands a token without '=' to ParseValue, which
    # sets it as a key to "true": Tests/EndToEndTests/ModelExport/Model0/0.cntk ends "    ]\n]"
    root = parse_config('command = export\nexport = [\n    action = "exportdbn"\n    ]\n]')
    assert root["export"]["action"] == "exportdbn" and root["command"] == "export"
    assert parse_config("a = 1\n ]) ; b = 2  # after\n]\n").get_int("b") == 2
    with pytest.raises(ConfigError, match="no bracket is open here"):
        parse_config("a = 1 ]\n")       # a value's text, not an item of its own


def test_train_rnn_action_is_train():
    # CNTK.cpp's DoCommands: 'if (thisAction == "train" || thisAction == "trainRNN") DoTrain'
    # (TIMIT_TrainLSTM_ndl_deprecated.cntk's action), the SGD block read as for train
    from stadyn.brainscript._blocks import command_config
    root = parse_config('T = [ action = "trainRNN" ; SGD = [ maxEpochs = 3 ; '
                        'learningRatesPerSample = 0.5 ] ]')
    cmd = command_config(root, "T")
    assert cmd.action == "train" and cmd.sgd is not None and cmd.sgd.max_epochs == 3


def test_a_train_command_without_an_sgd_block_uses_an_enclosing_ones(tmp_path, monkeypatch):
    # cntk.exe's DoTrain reads config(L"SGD"), which looks in the enclosing blocks too
    # (ConfigParameters::TryFind): TIMIT_TrainWithPreTrain's train commands share the top-level
    # SGD block and save where their own modelPath says
    sgd = ("  SGD = [ epochSize = 0 ; minibatchSize = 8 ; learningRatesPerSample = 0.01 ; "
           "maxEpochs = 1 ]\n")
    assert sgd in _CONFIG
    config = _CONFIG.replace(sgd, '  modelPath = "Models/own"\n').replace(
        "command = train:test", "command = train\nSGD = [ epochSize = 0 ; minibatchSize = 4 ; "
        "learningRatesPerSample = 0.01 ; maxEpochs = 2 ]")
    log = _run(tmp_path, monkeypatch, config)
    epochs = re.findall(r"Finished Epoch\[ (\d) of 2\]: \[Training\] ce = \S+ \* 16", log)
    assert epochs == ["1", "2"]
    assert (tmp_path / "Models" / "own").exists()
    assert not (tmp_path / "Models" / "net").exists()
