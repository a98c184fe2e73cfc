"""What CNTK's Speech/LSTM configs (Tests/EndToEndTests/Speech/LSTM/cntk.cntk) ask of the
BrainScript runner beyond their reader, on small networks of the same shape: an ``edit`` action
saves the network and the ``train`` command loads it with ``BS.Network.Load`` (its criterion,
evaluation and output nodes keep their tags); ``BS.Constants.One`` is a constant, not an
input; and a criterion that is one number for the whole minibatch (``SumElements`` of a
per-frame criterion, as the config's ``ce`` and ``err``) counts the minibatch's frames, as
cntk.exe's SGD does (``CriterionAccumulator::GetNumSamples``: a node without an MBLayout counts
``GetNumSamplesWithLabelOfNetwork``, the real frames of the default sequence axis)."""

from __future__ import annotations

import io
import math
import re

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn.brainscript import run
from stadyn.serialize import ExportError

LENGTHS = [3, 4, 5, 3, 4, 5]          # six sequences; minibatches of 8 frames pack them as
PACKED = [7, 8, 4, 5]                 # 3+4, 5+3, 4, 5 (the next would not fit)

NETWORK = """{
    features = Input {4} ; labels = Input {3}
    W = ParameterTensor {(3:4), initValue = 0.1}
    z = W * features
    ce  = SumElements (ReduceLogSum (z) - TransposeTimes (labels, z), tag='criterion')
    err = SumElements (BS.Constants.One - TransposeTimes (labels, Hardmax (z)),
                       tag='evaluation')
    out = Pass (z, tag='output')
}"""

TRAIN = """{
    action = "train"
    BrainScriptNetworkBuilder = NETWORK
    SGD = { epochSize = 0 ; maxEpochs = 1 ; minibatchSize = 8 ; learningRatesPerMB = 0.5
            numMBsToShowResult = 1 }
    reader = { readerType = "CNTKTextFormatReader" ; file = "DATA" ; randomize = false
        input = { features = { dim = 4 ; format = "dense" } ;
                  labels = { dim = 3 ; format = "dense" } } }
}"""


def _data(tmp_path):
    rng = np.random.default_rng(0)
    labels = [rng.integers(3, size=n) for n in LENGTHS]
    lines = []
    for s, ids in enumerate(labels):
        for label in ids:
            x = " ".join(f"{v:.3f}" for v in rng.standard_normal(4))
            y = " ".join("1" if i == label else "0" for i in range(3))
            lines.append(f"{s} |features {x} |labels {y}")
    path = tmp_path / "data.txt"
    path.write_text("\n".join(lines) + "\n")
    return path, labels


def _run(tmp_path, text):
    config = tmp_path / "run.cntk"
    config.write_text(text)
    log = io.StringIO()
    run(str(config), [], out=log)
    return log.getvalue()


def _minibatches(log):
    return [(float(ce), int(n), float(err), int(m)) for ce, n, err, m in re.findall(
        r"Minibatch\[.*?\]: ce = (\S+) \* (\d+); err = (\S+) \* (\d+)", log)]


def _config(tmp_path, data, commands, network=NETWORK, train_network=None):
    train = TRAIN.replace("NETWORK", train_network or network).replace("DATA", str(data))
    return (f"command = {commands}\ntraceLevel = 1\nmodelPath = \"{tmp_path}/m.dnn\"\n"
            f"create = {{\n    action = \"edit\"\n    outputModelPath = \"$modelPath$.initial\"\n"
            f"    BrainScriptNetworkBuilder = {network}\n}}\ntrain = {train}\n")


def _first_minibatch(labels):
    """W = 0.1 everywhere gives every class the same score: a frame's ReduceLogSum (z) - z_label
    is log 3, and Hardmax picks class 0 (an error where the label is another)."""
    frames = np.concatenate(labels)[:PACKED[0]]
    return math.log(3), float(np.mean(frames != 0))


def test_tags_and_constants_survive_the_edit_actions_model_file(tmp_path):
    # the config's speechCreate (edit) then speechTrain (BS.Network.Load): the loaded network
    # has its criterion, evaluation and output nodes; BS.Constants.One stays a constant
    data, labels = _data(tmp_path)
    text = _config(tmp_path, data, "create:train",
                   train_network='(BS.Network.Load ("$modelPath$.initial"))')
    log = _run(tmp_path, text)
    assert "Training criterion:   ce = SumElements" in log
    assert "Evaluation criterion: err = SumElements" in log
    assert "Training 12 parameters in 1 out of 1 parameter tensors" in log   # not the constant
    ce, err = _first_minibatch(labels)
    first = _minibatches(log)[0]
    assert first[1] == first[3] == PACKED[0]
    np.testing.assert_allclose(first[0], ce, rtol=1e-6)
    np.testing.assert_allclose(first[2], err, rtol=1e-6)
    # (and each named node's CNTK operation, which a network loaded from the file logs, and
    # its inputs; the nodes inside the functions under cntk.exe's names, those of
    # Tests/EndToEndTests/Speech/LSTM's baseline: "ce.matrix = Minus
    # (ce.matrix.MinusArgs[0].r, ce.matrix.MinusArgs[1])", "err.matrix = Minus
    # (BS.Constants.One, err.matrix.MinusArgs[1])")
    want = {"ce": ["criterion", "operation:SumElements", 'inputs:["ce.matrix"]'],
            "err": ["evaluation", "operation:SumElements", 'inputs:["err.matrix"]'],
            "out": ["output", "operation:Pass", 'inputs:["z"]'],
            "z": ["operation:Times", 'inputs:["W", "features"]', "names:2"],   # (the first)
            "ce.matrix.MinusArgs[0].r": ["operation:ReduceElements", 'inputs:["z"]'],
            "ce.matrix.MinusArgs[1]": ["operation:TransposeTimes", 'inputs:["labels", "z"]'],
            "ce.matrix": ["operation:Minus",
                          'inputs:["ce.matrix.MinusArgs[0].r", "ce.matrix.MinusArgs[1]"]'],
            "err.matrix.MinusArgs[1].rightMatrix": ["operation:Hardmax", 'inputs:["z"]'],
            "err.matrix.MinusArgs[1]": [
                "operation:TransposeTimes",
                'inputs:["labels", "err.matrix.MinusArgs[1].rightMatrix"]'],
            "err.matrix": ["operation:Minus",
                           'inputs:["BS.Constants.One", "err.matrix.MinusArgs[1]"]']}
    for path in (f"{tmp_path}/m.dnn.initial", f"{tmp_path}/m.dnn"):     # edit's, train's
        assert sd.load(path).tags == want
    # the constant is saved as a parameter that is not trained, with its value
    saved = sd.load(f"{tmp_path}/m.dnn")
    constants = [p for p in saved.parameters.values() if not p.need_grad]
    assert [p.d.tolist() for p in constants] == [[[1.0]]]


def test_constants_one_is_a_constant(tmp_path):
    # err = SumElements (BS.Constants.One - ...): a parameter that is not trained (CNTK.core.bs:
    # Constant is a LearnableParameter with learningRateMultiplier = 0), not an input to feed
    data, labels = _data(tmp_path)
    log = _run(tmp_path, _config(tmp_path, data, "train"))
    assert "Training 12 parameters in 1 out of 1 parameter tensors" in log
    first = _minibatches(log)[0]          # the first minibatch's errors, however counted
    errors = int(np.sum(np.concatenate(labels)[:PACKED[0]] != 0))
    assert round(first[2] * first[3]) == errors


def test_a_whole_minibatch_criterion_counts_frames(tmp_path):
    # SumElements of a per-frame criterion: one number a minibatch, counted as its frames
    # (not its sequences), so the logged averages, the sample counts and the momentum per
    # minibatch are those of the same criterion given per frame (which counts its frames)
    data, labels = _data(tmp_path)
    # (the count alone: no constant; a delay so that the inputs are sequences, as the LSTM's)
    accuracy = NETWORK.replace("BS.Constants.One - ", "").replace(
        "z = W * features", "z = W * features ; zPrev = PastValue (3, z)")
    log = _run(tmp_path, _config(tmp_path, data, "train", accuracy))
    got = _minibatches(log)
    assert [n for _, n, _, _ in got] == [m for _, _, _, m in got] == PACKED
    assert f"[Training] ce = {sum(a * n for a, n, _, _ in got) / sum(PACKED):.8f} * 24" in log
    ce, err = _first_minibatch(labels)
    np.testing.assert_allclose(got[0][0], ce, rtol=1e-6)
    np.testing.assert_allclose(got[0][2], 1 - err, rtol=1e-6)
    per_frame = accuracy.replace("ce  = SumElements (ReduceLogSum (z) - TransposeTimes (labels, "
                                "z), tag='criterion')",
                                "ce  = ReduceLogSum (z) - TransposeTimes (labels, z)") \
        .replace("tag='output')", "tag='output') ; criterionNodes = (ce)")
    assert per_frame != accuracy
    (tmp_path / "m.dnn").unlink()
    expected = _minibatches(_run(tmp_path, _config(tmp_path, data, "train", per_frame)))
    assert [n for _, n, _, _ in expected] == PACKED
    np.testing.assert_allclose([c for c, *_ in got], [c for c, *_ in expected], rtol=1e-5)


def test_model_file_tags_round_trip(tmp_path):
    x = sd.Variable((2, 3))
    y = F.relu(x)
    path = str(tmp_path / "net.stadyn")
    sd.save(path, {"y": y, "s": F.sum(y)}, {"x": x}, tags={"s": ["criterion", "evaluation"]})
    assert sd.load(path).tags == {"s": ["criterion", "evaluation"]}
    sd.save(path, {"y": y}, {"x": x})
    assert sd.load(path).tags == {}
    with pytest.raises(ExportError, match=r"tags given for \[.z.\], which are neither"):
        sd.save(path, {"y": y}, {"x": x}, tags={"z": ["output"]})


def test_pre_computed_values_of_an_edit_actions_model_are_computed_by_the_train_command(
        tmp_path):
    # the LSTM config's speechCreate saves MeanVarNorm's Mean and InvStdDev before any data
    # pass (NaN); cntk.exe's speechTrain computes them ('Precomputing --> 3 PreCompute nodes
    # found.') from the training data: the model file says from what (their input, tagged)
    data, labels = _data(tmp_path)
    network = NETWORK.replace("z = W * features", "z = W * MeanVarNorm (features)")
    text = _config(tmp_path, data, "create:train", network,
                   train_network='(BS.Network.Load ("$modelPath$.initial"))')
    log = _run(tmp_path, text)
    assert "Precomputing --> 2 PreCompute nodes found." in log
    assert "\tz.mean = Mean()\n" in log and "\tz.invStdDev = InvStdDev()\n" in log
    frames = np.array([[float(v) for v in line.split("|features ")[1].split("|")[0].split()]
                       for line in data.read_text().splitlines()])
    saved = sd.load(f"{tmp_path}/m.dnn.initial")
    nan = [k for k, p in saved.parameters.items() if np.isnan(p.d).all()]
    assert len(nan) == 2
    trained = sd.load(f"{tmp_path}/m.dnn").parameters       # (a Load keeps the file's names)
    mean, inv = ([p for k, p in trained.items() if k == name] for name in nan)
    assert len(mean) == len(inv) == 1
    np.testing.assert_allclose(mean[0].d.reshape(-1), frames.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(inv[0].d.reshape(-1), 1 / frames.std(0), rtol=1e-4)
    assert len(_minibatches(log)) == len(PACKED)


def test_a_test_command_counts_a_whole_minibatch_criterion_in_frames(tmp_path):
    # cntk.exe's SimpleEvaluator counts as its SGD (GetNumSamplesWithLabelOfNetwork)
    data, labels = _data(tmp_path)
    text = _config(tmp_path, data, "train:check")
    reader = TRAIN[TRAIN.index("    reader = {"):TRAIN.rindex("}")].replace("DATA", str(data))
    text += f"check = {{\n    action = \"test\"\n    minibatchSize = 8\n{reader}\n}}\n"
    log = _run(tmp_path, text)
    final = re.search(r"Final Results: Minibatch\[1-(\d+)\]: err = (\S+) \* (\d+); "
                      r"ce = \S+ \* (\d+)", log)
    assert final, log[-800:]
    assert int(final[3]) == int(final[4]) == sum(LENGTHS)
