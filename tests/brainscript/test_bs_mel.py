"""cntk.exe's MEL edit (``action = "edit"`` with ``editPath``; Source/CNTK/ModelEditLanguage.cpp)
on Stadyn model files, in the pattern of Examples/Speech/Miscellaneous/TIMIT's
TIMIT_TrainWithPreTrain_ndl_deprecated.cntk (and Tests/EndToEndTests/Speech/DNN's
DiscriminativePreTraining): train one hidden layer, add a layer with add_layer.mel (an NDL macro
call, ``SetInput`` with a ``*`` pattern), train on from the edited ``modelPath.0`` (cntk.exe
reads its start file's network), add another.  Expected: cntk.exe's log of that config grows by
one layer's parameters, two tensors and five nodes with gradient a step
(Tests/EndToEndTests/Examples/Speech/TIMIT/TrainWithPreTrain/baseline.gpu.txt: 499895 in 4
tensors and 10 nodes, 762551 in 6 and 15, 1025207 in 8 and 20, the layer 512 x 512 + 512); here
3 -> 4 -> 2 dims, a layer 4 x 4 + 4; the edited model's output against NumPy's composition of
the file's weights."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

import stadyn as sd
from stadyn import ConfigError
from stadyn.brainscript._runner import run

MACROS = """FF(X1, W1, B1)
{
    T=Times(W1,X1)
    P=Plus(T, B1)
}
BFF(in, rows, cols)
{
    B=Parameter(rows, init="fixedValue", value=0.1)
    W=Parameter(rows, cols)
    FF = FF(in, w, b)
}
SBFF(in,rowCount,colCount)
{
    BFF = BFF(in, rowCount, colCount)
    S = Sigmoid(BFF)
}
SMBFF(x,r,c, labels)
{
    BFF = BFF(x,r,c)
    SM = CrossEntropyWithSoftmax(labels, BFF)
}
"""

NDL = """run=ndlCreateNetwork
ndlCreateNetwork=[
    features=Input(3, tag="feature")
    labels=Input(2, tag="label")
    L1 = SBFF(features,4,3)
    CE = SMBFF(L1,2,4,labels,tag="criterion")
    Err = ClassificationError(labels,CE.BFF.FF.P,tag="evaluation")
]
"""

# TIMIT's add_layer.mel, the hidden dimension 4
ADD_LAYER = """m1 = LoadModel("$currModel$", format="cntk")
SetDefaultModel(m1)
HDim = 4
L$newLayer$ = SBFF(L$currLayer$.S, HDim, HDim)
SetInput(CE.*.T, 1, L$newLayer$.S)
SetInput(L$newLayer$.*.T, 1, L$currLayer$.S)
SaveModel(m1, "$newModel$", format="cntk")
Dump(m1, "$newModel$.dump.txt")
"""

CONFIG = """command = COMMANDS
precision = float
deviceId = -1
traceLevel = 1
ndlMacros = $Dir$/macros.ndl
SGD = [
    epochSize = 0
    minibatchSize = 5
    learningRatesPerMB = 0.1
    maxEpochs = 1
]
reader = [ readerType = CNTKTextFormatReader ; file = $Dir$/data.txt ; randomize = false
    input = [ features = [ dim = 3 ; format = dense ] ; labels = [ dim = 2 ; format = dense ] ] ]
Pre1 = [ action = train ; modelPath = $Dir$/m1/net
    NDLNetworkBuilder = [ networkDescription = $Dir$/net.ndl ] ]
Add2 = [ action = edit ; CurrLayer = 1 ; NewLayer = 2 ; CurrModel = $Dir$/m1/net
    NewModel = $Dir$/m2/net.0 ; editPath = $Dir$/SCRIPT ]
Pre2 = [ action = train ; modelPath = $Dir$/m2/net
    NDLNetworkBuilder = [ networkDescription = $Dir$/net.ndl ] ]
Add3 = [ action = edit ; CurrLayer = 2 ; NewLayer = 3 ; CurrModel = $Dir$/m2/net
    NewModel = $Dir$/m3/net.0 ; editPath = $Dir$/SCRIPT ]
Train3 = [ action = train ; modelPath = $Dir$/m3/net
    NDLNetworkBuilder = [ networkDescription = $Dir$/net.ndl ] ]
"""


def _setup(tmp_path, commands: str, script: str = ADD_LAYER, name: str = "add_layer.mel"):
    (tmp_path / "macros.ndl").write_text(MACROS)
    (tmp_path / "net.ndl").write_text(NDL)
    (tmp_path / name).write_text(script)
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((10, 3)).round(3)
    (tmp_path / "data.txt").write_text("".join(
        f"|features {a} {b} {c} |labels {'1 0' if a + b + c > 0 else '0 1'}\n"
        for a, b, c in rows))
    config = tmp_path / "pre.cntk"
    config.write_text(CONFIG.replace("COMMANDS", commands).replace("SCRIPT", name))
    return config


def _run(config, tmp_path) -> str:
    log = io.StringIO()
    run(config, [f"Dir={tmp_path}"], out=log)
    return log.getvalue()


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_mel_adds_layers_and_training_goes_on_from_the_edited_models(tmp_path):
    text = _run(_setup(tmp_path, "Pre1:Add2:Pre2:Add3:Train3"), tmp_path)
    counts = re.findall(r"Training (\d+) parameters in (\d+) out of \d+ parameter tensors "
                        r"and (\d+) nodes with gradient", text)
    # + 4 x 4 + 4 a layer, and its Times, Plus and Sigmoid (cntk.exe: 10, 15, 20 nodes)
    assert counts == [("26", "4", "10"), ("46", "6", "15"), ("66", "8", "20")]
    assert text.count("Starting from checkpoint. Loading network from") == 2
    # the edited model: CE's Times reads the new layer, which reads the old one
    net = sd.load(tmp_path / "m2" / "net.0", batch_size=2)
    p = {k: np.asarray(v.d, np.float64) for k, v in net.parameters.items()}
    assert sorted(p) == ["CE.BFF.B", "CE.BFF.W", "L1.BFF.B", "L1.BFF.W", "L2.BFF.B", "L2.BFF.W"]
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
    y = np.eye(2, dtype=np.float32)
    got = net(features=x, labels=y)["CE.BFF.FF.P"]
    h1 = _sigmoid(x @ p["L1.BFF.W"] + p["L1.BFF.B"])
    h2 = _sigmoid(h1 @ p["L2.BFF.W"] + p["L2.BFF.B"])
    np.testing.assert_allclose(got, h2 @ p["CE.BFF.W"] + p["CE.BFF.B"], rtol=1e-5, atol=1e-6)
    assert net.tags["CE.SM"][0] == "criterion" and net.tags["Err"][0] == "evaluation"
    # the layer Pre1 trained is the edited model's (the edit kept its values)
    first = sd.load(tmp_path / "m1" / "net", batch_size=2)
    np.testing.assert_array_equal(np.asarray(first.parameters["L1.BFF.W"].d), p["L1.BFF.W"])
    # the second edit found the names and inputs the first edit's training saved
    third = sd.load(tmp_path / "m3" / "net", batch_size=2).tags
    assert third["CE.BFF.FF.T"][-1] == 'inputs:["CE.BFF.W", "L3.S"]'
    assert third["L3.BFF.FF.T"][-1] == 'inputs:["L3.BFF.W", "L2.S"]'
    dump = (tmp_path / "m3" / "net.0.dump.txt").read_text()
    assert "CE.BFF.FF.T = " in dump and "(CE.BFF.W, L3.S)" in dump


def test_mel_mistakes_are_one_error_naming_the_line(tmp_path):
    bad = ADD_LAYER.replace("SetDefaultModel(m1)", "SetDefaultModel(m1)\nCopyNode(L1.S, L1.T)")
    with pytest.raises(ConfigError, match="MEL: CopyNode is not supported") as err:
        _run(_setup(tmp_path, "Pre1:Add2", bad, "bad.mel"), tmp_path)
    assert (err.value.path.endswith("bad.mel"), err.value.line) == (True, 3)
    assert not (tmp_path / "m1").exists()        # refused before any command ran
    # a misspelled command (no 'x =' before it: not an NDL item) is cntk.exe's "Unknown Editor
    # function", not an NDL error
    save = 'SaveModel(m1, "$newModel$", format="cntk")'
    for bad, name, line in (
            (ADD_LAYER.replace(save, save.replace("SaveModel", "SaveModle")), "SaveModle", 7),
            (ADD_LAYER.replace("HDim = 4", "Foo(L1.S)"), "Foo", 3)):
        with pytest.raises(ConfigError) as err:
            _run(_setup(tmp_path, "Pre1:Add2", bad, "typo.mel"), tmp_path)
        assert err.value.reason.startswith(f"MEL: unknown command '{name}' (Stadyn runs ")
        assert (err.value.path.endswith("typo.mel"), err.value.line) == (True, line)
        assert not (tmp_path / "m1").exists()
    with pytest.raises(ConfigError, match="MEL: LoadModel: the model file .* does not exist") \
            as err:
        _run(_setup(tmp_path, "Add2"), tmp_path)
    assert (err.value.path.endswith("add_layer.mel"), err.value.line) == (True, 1)
    _run(_setup(tmp_path, "Pre1"), tmp_path)
    legacy = ADD_LAYER.replace('format="cntk")\nSetDefaultModel', 'format="cntk_legacy")\n'
                                                                   'SetDefaultModel')
    with pytest.raises(ConfigError, match='LoadModel: format = "cntk_legacy" is not supported'):
        _run(_setup(tmp_path, "Add2", legacy, "legacy.mel"), tmp_path)
    for script, message, line in (
            ("SetInput(CE.*.X, 1, L1.S)", "no node of the model matches 'CE.\\*.X'", 3),
            ("SetInput(L1.S, 1, L1.S)", "'L1.S' has 1 input\\(s\\), no input 1", 3),
            ("SetInput(L1.BFF.FF.T, 1, L1.S)", "would close a loop", 3)):
        text = ADD_LAYER.replace("HDim = 4", script)
        with pytest.raises(ConfigError, match=message) as err:
            _run(_setup(tmp_path, "Add2", text, "wrong.mel"), tmp_path)
        assert (err.value.path.endswith("wrong.mel"), err.value.line) == (True, line)


def test_a_mel_script_may_add_an_input_and_rewire_a_criterion_to_it(tmp_path):
    # cntk.exe's MEL evaluates NDL items in the model (an Input too) and SetInput's 0 of
    # CrossEntropyWithSoftmax (labels, z) is its labels
    script = ADD_LAYER.replace("HDim = 4\n", "other = Input(2, tag=\"label\")\n").replace(
        "L$newLayer$ = SBFF(L$currLayer$.S, HDim, HDim)\n", "").replace(
        "SetInput(CE.*.T, 1, L$newLayer$.S)\nSetInput(L$newLayer$.*.T, 1, L$currLayer$.S)",
        "SetInput(CE.SM, 0, other)")
    _run(_setup(tmp_path, "Pre1:Add2", script, "relabel.mel"), tmp_path)
    net = sd.load(tmp_path / "m2" / "net.0", batch_size=2)
    assert list(net.inputs) == ["features", "labels", "other"]
    assert net.tags["CE.SM"][-1] == 'inputs:["other", "CE.BFF.FF.P"]'
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
    labels, other = np.eye(2, dtype=np.float32), np.eye(2, dtype=np.float32)[::-1]
    z = net(features=x, labels=labels, other=other)["CE.BFF.FF.P"].astype(np.float64)
    log_softmax = z - np.log(np.exp(z).sum(1, keepdims=True))
    got = net(features=x, labels=labels, other=other)["CE.SM"]
    np.testing.assert_allclose(np.asarray(got).ravel(), -(other * log_softmax).sum(1),
                               rtol=1e-5)


# Tests/EndToEndTests/Speech/DNN/SequenceTraining's replace_ce_with_sequence_criterion.mel: the
# criterion taken out of its group and removed, a new one of the same name made a criterion
REPLACE_CRITERION = """m1 = LoadModel("$currModel$", format="cntk")
SetDefaultModel(m1)
SetProperty(CE.SM, "criterion", false)
Remove(CE.SM)
CE.SM = SquareError(labels, CE.BFF.FF.P)
SetProperty(CE.SM, criterion, true)
SetProperty(Err, "evaluation", false)
SetProperty(L1.S, output, true)
SetProperty(L1.BFF.W, computeGradient, false)
SaveModel(m1, "$newModel$", format="cntk")
"""


def test_mel_set_property_regroups_nodes_and_stops_a_parameters_training(tmp_path):
    text = _run(_setup(tmp_path, "Pre1:Add2:Pre2", REPLACE_CRITERION, "seq.mel"), tmp_path)
    pre2 = text[text.index("# Pre2 command"):]
    # (cntk.exe logs the new node's operation: SquareError)
    assert "Training criterion:   CE.SM = SquareError\n" in pre2
    assert "Evaluation criterion" not in pre2
    assert "Err = " not in pre2.split("Finished Epoch")[1].split("\n")[0]
    # L1.BFF.W (4 x 3) has no gradient, nor the Times that reads it with the features
    assert re.findall(r"Training (\d+) parameters in (\d+) out of (\d+) parameter tensors "
                      r"and (\d+) nodes with gradient", pre2) == [("14", "3", "3", "8")]
    before = sd.load(tmp_path / "m1" / "net", batch_size=2).parameters
    after = sd.load(tmp_path / "m2" / "net", batch_size=2).parameters
    np.testing.assert_array_equal(after["L1.BFF.W"].d, before["L1.BFF.W"].d)
    assert not np.array_equal(after["CE.BFF.W"].d, before["CE.BFF.W"].d)
    net = sd.load(tmp_path / "m2" / "net.0", batch_size=2)
    assert "criterion" in net.tags["CE.SM"] and "output" in net.tags["L1.S"]
    assert "evaluation" not in net.tags["Err"]
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
    y = np.eye(2, dtype=np.float32)
    out = net(features=x, labels=y)        # the new criterion: a sample's squared distance
    np.testing.assert_allclose(np.asarray(out["CE.SM"]).ravel(),
                               ((y - out["CE.BFF.FF.P"]) ** 2).sum(1), rtol=1e-5)


# Tests/EndToEndTests/Image/FCN's prepare_for_test.mel: an input renamed, a new one of its name
# given to its readers, the old one deleted; and a pattern renamed (cntk.exe's GenerateNames)
SWAP_INPUT = """m = LoadModel("$currModel$", format="cntk")
SetDefaultModel(m)
Rename(labels, oldLabels)
labels = Input(2, tag="label")
SetInput(CE.SM, 0, labels)
SetInput(Err, 0, labels)
Delete(oldLabels)
Rename(L1.*, L9.*)
SaveModel(m, "$newModel$", format="cntk")
"""


def test_mel_rename_and_delete_replace_an_input(tmp_path):
    text = _run(_setup(tmp_path, "Pre1:Add2:Pre2", SWAP_INPUT, "swap.mel"), tmp_path)
    assert "Starting from checkpoint. Loading network from" in text
    net = sd.load(tmp_path / "m2" / "net.0", batch_size=2)
    assert list(net.inputs) == ["features", "labels"]
    assert sorted(net.parameters) == ["CE.BFF.B", "CE.BFF.W", "L9.BFF.B", "L9.BFF.W"]
    assert 'inputs:["CE.BFF.W", "L9.S"]' in net.tags["CE.BFF.FF.T"]
    assert net.tags["CE.SM"] == ["criterion", "operation:CrossEntropyWithSoftmax",
                                 'inputs:["labels", "CE.BFF.FF.P"]']
    p = {k: np.asarray(v.d, np.float64) for k, v in net.parameters.items()}
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
    y = np.eye(2, dtype=np.float32)[::-1]
    got = net(features=x, labels=y)
    z = _sigmoid(x @ p["L9.BFF.W"] + p["L9.BFF.B"]) @ p["CE.BFF.W"] + p["CE.BFF.B"]
    np.testing.assert_allclose(got["L9.S"], _sigmoid(x @ p["L9.BFF.W"] + p["L9.BFF.B"]),
                               rtol=1e-5)
    log_softmax = z - np.log(np.exp(z).sum(1, keepdims=True))
    np.testing.assert_allclose(np.asarray(got["CE.SM"]).ravel(), -(y * log_softmax).sum(1),
                               rtol=1e-5)


def test_mel_delete_rename_set_property_mistakes_name_the_line(tmp_path):
    _run(_setup(tmp_path, "Pre1"), tmp_path)
    for script, message in (
            ("Delete(L1.S)", "'CE.BFF.FF.T' still reads 'L1.S'"),
            ("Rename(labels, features)", "has a node named 'features' already"),
            ("Rename(L1.*, L9.S)", "must hold one '\\*' each"),
            ("SetProperty(L1.S, colour, true)", "no property 'colour'"),
            ("SetProperty(L1.BFF.W, learningRateMultiplier, -1)", "should be non-negative"),
            ("Remove(Nothing)", "no node of the model matches 'Nothing'")):
        text = ADD_LAYER.replace("HDim = 4", script)
        with pytest.raises(ConfigError, match=message) as err:
            _run(_setup(tmp_path, "Add2", text, "wrong.mel"), tmp_path)
        assert (err.value.path.endswith("wrong.mel"), err.value.line) == (True, 3)


# cntk.exe's 'm2 = LoadModel (...)' is LoadModelWithName (m2, ...): a network of its own, whose
# nodes keep the file's names, the default model only if none is set yet (ModelEditLanguage.h's
# OverrideModelNameAndSetDefaultModel); 'm2.L1.S' is a node of m2 (ParseName)
LOAD_TWICE = """m1 = LoadModel("$currModel$", format="cntk")
m2 = LoadModel("$currModel$", format="cntk")
SetProperty(m2.L1.BFF.W, computeGradient, false)
Rename(m2.CE.BFF.B, m2.CE.BFF.Bias)
SetProperty(Err, evaluation, false)
Delete(m2.L1.S)
SaveModel(m2, "$newModel$", format="cntk")
SaveModel(m1, "$newModel$.m1", format="cntk")
"""


def test_mel_loading_a_file_twice_keeps_the_files_names(tmp_path):
    script = LOAD_TWICE.replace("Delete(m2.L1.S)\n", "")
    _run(_setup(tmp_path, "Pre1:Add2", script, "twice.mel"), tmp_path)
    first = sd.load(tmp_path / "m1" / "net", batch_size=2).parameters
    second = sd.load(tmp_path / "m2" / "net.0", batch_size=2).parameters
    assert list(second) == ["L1.BFF.W", "L1.BFF.B", "CE.BFF.W", "CE.BFF.Bias"]
    for name in ("L1.BFF.W", "L1.BFF.B", "CE.BFF.W"):
        np.testing.assert_array_equal(second[name].d, first[name].d)
    np.testing.assert_array_equal(second["CE.BFF.Bias"].d, first["CE.BFF.B"].d)
    assert not second["L1.BFF.W"].need_grad
    # the edits of m2 are m2's: m1 saves as the file holds it
    again = sd.load(tmp_path / "m2" / "net.0.m1", batch_size=2)
    assert list(again.parameters) == list(first) and again.parameters["L1.BFF.W"].need_grad
    # the bare name is the default model's, m1 (the first loaded)
    assert "evaluation" not in again.tags["Err"]
    assert "evaluation" in sd.load(tmp_path / "m2" / "net.0", batch_size=2).tags["Err"]
    with pytest.raises(ConfigError, match="'CE.BFF.FF.T' still reads 'L1.S'") as err:
        _run(_setup(tmp_path, "Add2", LOAD_TWICE, "twice.mel"), tmp_path)
    assert err.value.line == 6


# cntk.exe names the model of a plain 'LoadModel (...)' "default" (ModelEditLanguage.cpp's
# LoadModel calls OverrideModelNameAndSetDefaultModel (cn), its name defaulting to "default"): a
# second plain LoadModel replaces the first, and so becomes the default model
LOAD_PLAIN = """LoadModel("$currModel$", format="cntk")
SetProperty(Err, evaluation, false)
SaveModel(default, "$newModel$.a", format="cntk")
LoadModel("$newModel$.a", format="cntk")
Rename(CE.BFF.B, CE.BFF.Bias)
SaveModel(default, "$newModel$", format="cntk")
"""


def test_mel_a_plain_load_model_is_the_model_named_default(tmp_path):
    _run(_setup(tmp_path, "Pre1:Add2", LOAD_PLAIN, "plain.mel"), tmp_path)
    first = sd.load(tmp_path / "m2" / "net.0.a", batch_size=2)
    assert "CE.BFF.B" in first.parameters and "evaluation" not in first.tags["Err"]
    second = sd.load(tmp_path / "m2" / "net.0", batch_size=2)     # the second file, renamed
    assert "CE.BFF.Bias" in second.parameters and "evaluation" not in second.tags["Err"]


def test_a_mel_command_with_a_target_other_than_load_model_is_an_ndl_item(tmp_path):
    # ModelEditLanguage.h (ParseValue): 'key = Function (...)' is MEL's own only for LoadModel
    # and CreateModel, "all other commands will be interpretted as NDL": NDL has no SetInput,
    # so the line is an error naming it, and nothing is rewired or saved
    _run(_setup(tmp_path, "Pre1"), tmp_path)
    script = ADD_LAYER.replace("SetInput(CE.*.T", "x = SetInput(CE.BFF.FF.T")
    with pytest.raises(ConfigError, match="NDL function 'SetInput' is not supported") as err:
        _run(_setup(tmp_path, "Add2", script, "target.mel"), tmp_path)
    assert (err.value.path.endswith("target.mel"), err.value.line) == (True, 5)
    assert not (tmp_path / "m2").exists()
