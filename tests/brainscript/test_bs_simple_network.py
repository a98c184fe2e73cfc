"""cntk.exe's ``SimpleNetworkBuilder`` (the feed-forward network of its speech configs).

Against cntk.exe's baseline logs, from the copy of CNTK at ``$STADYN_CNTK_SOURCE`` (without one
those tests skip): Tests/EndToEndTests/Speech/Simple run unchanged (its data is in CNTK's
repository) trains with cntk.exe's losses and errors and writes with the model its train
command saved; the AN4 FeedForward network has the nodes, operations and parameter count of
its "Validating network" list.  Against NumPy: a small network's output and criteria from its
parameters, and the parameters' values as cntk.exe draws them (seed ``i + 1`` for ``W<i>``).
"""

from __future__ import annotations

import io as pyio
import re

import numpy as np
import pytest

import stadyn as sd
from stadyn import ConfigError
from stadyn._mt19937 import uniform_floats
from stadyn.brainscript import (StadynLibrary, build_network, command_config, load_config,
                                parse_config, run, run_config)
from stadyn.brainscript._cntk_log import cntk_shape_text
from stadyn.train import feed
from cntk_repo_files import cntk_file, copy_cntk_file

SIMPLE = "Tests/EndToEndTests/Speech/Simple"
AN4 = "Tests/EndToEndTests/Examples/Speech/AN4/FeedForward/baseline.cpu.txt"


def _command(text: str, name: str = "T"):
    return command_config(parse_config(text, "c.cntk"), name)


def _build(text: str):
    lib = StadynLibrary()
    return build_network(_command(text).network, lib), lib


_SMALL = """T = [ action = train
    SimpleNetworkBuilder = [ layerSizes = 3:4:5:2 ; trainingCriterion = CrossEntropyWithSoftmax
        evalCriterion = ClassificationError ; layerTypes = Tanh:None ; initValueScale = 2
        %s ]
]"""


# ---------------------------------------------------------------------------------------------
# cntk.exe's logs
# ---------------------------------------------------------------------------------------------
def _numbers(line: str) -> list[tuple[str, str]]:
    return re.findall(r"= (\d+\.\d+) \* (\d+)", line)


def test_speech_simple_runs_unchanged_as_cntk_exe(tmp_path):
    config = copy_cntk_file(tmp_path, f"{SIMPLE}/cntk.cntk")
    copy_cntk_file(tmp_path, "Tests/EndToEndTests/Speech/Data/SimpleDataTrain_cntk_text.txt")
    test = copy_cntk_file(tmp_path, "Tests/EndToEndTests/Speech/Data/SimpleDataTest_cntk_text.txt")
    assert "SimpleNetworkBuilder=[" in config.read_text()
    log = cntk_file(f"{SIMPLE}/baseline.cpu.txt").decode("utf-8", "replace")
    out = pyio.StringIO()
    run(str(config), [f"DataDir={tmp_path}", f"RunDir={tmp_path}/run",
                      "Simple_Demo=[SGD=[maxEpochs=1]]"], out=out)
    ours = out.getvalue()
    # baseline.cpu.txt, first command: "Training criterion:   CrossEntropyWithSoftmax =
    # CrossEntropyWithSoftmax", "Evaluation criterion: EvalClassificationError =
    # ClassificationError", "Training 2802 parameters in 6 out of 6 parameter tensors", the
    # three pre-computed nodes
    for pattern in (r"Training criterion: +\w+ = \w+", r"Evaluation criterion: \w+ = \w+",
                    r"Training \d+ parameters in \d+ out of \d+ parameter tensors",
                    r"\t\w+ = (?:Mean|InvStdDev)\(\)"):
        assert re.findall(pattern, ours) == re.findall(pattern, log)[:len(re.findall(
            pattern, ours))] != []
    assert "Training 2802 parameters in 6 out of 6" in ours
    # "... parameter tensors and 15 nodes with gradient:" (SGD.cpp: the criterion's nodes that
    # are trained parameters or computed from one: W0, B0, W0*features, ..., HLast, the criterion)
    gradient = r"parameter tensors and (\d+) nodes with gradient:"
    assert re.findall(gradient, ours)[0] == re.findall(gradient, log)[0] == "15"
    # epoch 1's seven minibatch lines and its summary: the errors exactly, the losses to 1e-6
    # (float32 sums in another order than cntk.exe's; see test_bs_precompute.py)
    line = re.compile(r"Epoch\[ 1 of \d+\]-Minibatch\[.*|Finished Epoch\[ 1 of \d+\]: "
                      r"\[Training\].*")
    mine, cntk = line.findall(ours), line.findall(log)[:8]
    assert len(mine) == len(cntk) == 8
    for a, b in zip(mine, cntk):
        (loss_a, n_a), (err_a, m_a) = _numbers(a)[:2]
        (loss_b, n_b), (err_b, m_b) = _numbers(b)[:2]
        assert (err_a, n_a, m_a) == (err_b, n_b, m_b)
        assert float(loss_a) == pytest.approx(float(loss_b), abs=1e-6)
    # the write command (outputNodeNames = ScaledLogLikelihood) uses the train command's
    # network and model: "Minibatch[0]: ActualMBSize = 603" as cntk.exe
    assert "Minibatch[0]: ActualMBSize = 603" in ours and "ActualMBSize = 603" in log
    written = np.loadtxt(tmp_path / "run" / "SimpleOutput.ScaledLogLikelihood", ndmin=2)
    assert written.shape == (len(test.read_text().split("\n")) - 1, 2)


def test_an4_feed_forward_has_cntk_exes_nodes_and_parameters():
    log = cntk_file(AN4).decode("utf-8", "replace")
    config = cntk_file("Examples/Speech/AN4/Config/FeedForward.cntk").decode()
    # baseline.cpu.txt lines 330-354: "Validating --> NAME = OPERATION (...) : ... -> [SHAPE]"
    first = log.index("Validating network. 25 nodes")
    listed = re.findall(r"Validating --> (\S+) = (\w+) ?\(.*?-> \[([^\]]*)\]",
                        log[first:log.index("Validating network", first + 30)])
    assert len(listed) == 25
    net = run_config(parse_config(config, "FeedForward.cntk", ["RootDir=/x"])).commands[0]
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        built = build_network(net.network, lib)
        params = sd.get_parameters()
        count = sum(p.size for p in params.values())
    ours = {}
    for name, v in built.nodes.items():
        shape = cntk_shape_text(tuple(v.shape[1:] if lib.has_batch_axis(v) else v.shape))
        per_sample = lib.has_batch_axis(v) and v.shape[1:] != (1,)   # not a criterion's [1]
        ours[name] = (lib.operation_of(v), shape + (" x *" if per_sample else ""))
    # the same 25 names; cntk.exe's operations (Stadyn's PerDimMeanVarNormalization is an
    # ElementTimes); the shapes but for the "x 1" cntk.exe's [512 x 1] biases add to a sum
    # ([512 x *] + [512 x 1] -> [512 x 1 x *]), where Stadyn broadcasts to [512 x *]
    assert sorted(ours) == sorted(name for name, _, _ in listed)
    for name, operation, shape in listed:
        op, ours_shape = ours[name]
        assert op == ("ElementTimes" if operation == "PerDimMeanVarNormalization" else operation)
        assert ours_shape == shape.replace(" x 1 x *", " x *")
    # "Training 516740 parameters in 6 out of 6 parameter tensors"
    assert re.search(r"Training (\d+) parameters in (\d+) ", log).groups() == \
        (str(count), str(len(params))) == ("516740", "6")
    assert sorted(params) == ["B0", "B1", "B2", "W0", "W1", "W2"]
    assert {k: tuple(reversed(p.shape)) for k, p in params.items()} == {
        "W0": (512, 363), "B0": (512, 1), "W1": (512, 512), "B1": (512, 1),
        "W2": (132, 512), "B2": (132, 1)}


# ---------------------------------------------------------------------------------------------
# the network against NumPy
# ---------------------------------------------------------------------------------------------
def test_weights_are_drawn_as_cntk_exe_draws_them():
    # SimpleNetworkBuilder: W<i> uniform (U(+-0.05f * initValueScale)) with seed i + 1, B<i> 0
    with sd.parameter_registry(sd.ParameterRegistry()):
        _build(_SMALL % "")
        params = {k: p.d.copy() for k, p in sd.get_parameters().items()}
    for i, (n_in, n_out) in enumerate([(3, 4), (4, 5), (5, 2)]):
        limit = float(np.float32(0.05) * np.float32(2.0))
        np.testing.assert_array_equal(params[f"W{i}"], uniform_floats(
            i + 1, n_in * n_out, limit).reshape(n_in, n_out))
        assert not params[f"B{i}"].any() and params[f"B{i}"].shape == (1, n_out)
    # uniformInit = false: cntk.exe's 'gaussian', N(0, 0.2 / sqrt(fanIn)) times the scale
    with sd.parameter_registry(sd.ParameterRegistry()):
        _build(_SMALL % "uniformInit = false")
        w = sd.get_parameters()["W1"].d
    assert w.shape == (4, 5) and 0.05 < w.std() < 0.6


def test_a_small_network_computes_numpys_values():
    with sd.parameter_registry(sd.ParameterRegistry()):
        net, lib = _build(_SMALL % "needPrior = false ; addDropoutNodes = true")
        p = {k: v.d.astype(np.float64) for k, v in sd.get_parameters().items()}
        # layerTypes Tanh:None: H1 = Tanh, H2 linear (the sum itself, named H2); dropout
        # nodes after each hidden layer (the identity outside training)
        assert [k for k in net.nodes if k.startswith(("H", "Drop", "W1*"))] == \
            ["H1", "DropH1", "W1*H1", "H2", "DropH2", "HLast"]
        assert "W1*H1+B1" not in net.nodes and "Prior" not in net.nodes
        assert lib.operation_of(net.nodes["H2"]) == "Plus"
        assert net.output_nodes == [net.nodes["HLast"]]
        x = np.random.RandomState(0).randn(6, 3).astype(np.float32)
        labels = np.eye(2, dtype=np.float32)[[0, 1, 1, 0, 1, 0]]
        feed(net.nodes["features"], x)
        feed(net.nodes["labels"], labels)
        for name in ("HLast", "CrossEntropyWithSoftmax", "EvalClassificationError",
                     "PosteriorProb"):
            net.nodes[name].forward()
        h1 = np.tanh(x @ p["W0"] + p["B0"])
        z = (h1 @ p["W1"] + p["B1"]) @ p["W2"] + p["B2"]
        np.testing.assert_allclose(net.nodes["HLast"].d, z, rtol=1e-5, atol=1e-6)
        log_softmax = z - np.log(np.exp(z).sum(1, keepdims=True))
        np.testing.assert_allclose(net.nodes["CrossEntropyWithSoftmax"].d.ravel(),
                                   -(labels * log_softmax).sum(1), rtol=1e-5)
        np.testing.assert_array_equal(net.nodes["EvalClassificationError"].d.ravel(),
                                      (z.argmax(1) != labels.argmax(1)).astype(np.float32))
        np.testing.assert_allclose(net.nodes["PosteriorProb"].d, np.exp(log_softmax),
                                   rtol=1e-5)


def test_eval_criterion_cross_entropy_is_the_criterion_and_zero_hidden_layers():
    with sd.parameter_registry(sd.ParameterRegistry()):
        net, _ = _build("""T = [ action = train ; SimpleNetworkBuilder = [ layerSizes = 3:2
            trainingCriterion = crossentropywithsoftmax ; evalCriterion = CrossEntropyWithSoftmax
            applyMeanVarNorm = true ] ]""")
        assert net.evaluation_nodes == net.criterion_nodes == [net.nodes[
            "CrossEntropyWithSoftmax"]]
        assert "EvalClassificationError" not in net.nodes
        assert sorted(sd.get_parameters()) == ["B0", "W0"]
        assert "W0*H-1" in net.nodes      # cntk.exe's name of the only layer's product


# ---------------------------------------------------------------------------------------------
# what is refused, and where
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("setting, message", [
    ("rnnType = NPLM", "rnnType 'NPLM' .*DNN language model network.* not supported"),
    ("rnnType = CLASSLSTM ; trainingCriterion = classCrossEntropyWithSoftmax ; evalCriterion = "
     "classCrossEntropyWithSoftmax ; nbrClass = 2 ; lookupTableOrder = 3",
     "lookupTableOrder 3 is not supported"),
    ("rnnType = SIMPLERNN", "rnnType 'SIMPLERNN'"),
    ("rnnType = FOO", "unknown rnnType 'FOO'"),
    ("trainingCriterion = squareError", "trainingCriterion 'squareError' is not supported"),
    ("trainingCriterion = classCrossEntropyWithSoftmax", "only for the recurrent rnnTypes"),
    ("trainingCriterion = bogus", "trainingCriterion 'bogus' is not one of"),
    ("evalCriterion = logistic", "evalCriterion 'logistic' is not supported"),
    ("layerSizes = 3:4:4:2 ; layerTypes = Sigmoid:softplus", "layerTypes 'softplus'"),
    ("layerTypes = sigmoid", "layerTypes 'sigmoid'"),     # cntk.exe compares case-sensitively
    ("layerSizes = 363", "at least two layers"),
])
def test_refused_settings_name_their_line(setting, message):
    text = f"""T = [ action = train
        SimpleNetworkBuilder = [ layerSizes = 3:4:2 ; trainingCriterion = CrossEntropyWithSoftmax
            evalCriterion = ClassificationError
            {setting} ]
    ]"""
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match=message) as err:
            _build(text)
    assert err.value.line == 4


def test_rnn_type_of_an_enclosing_block_counts():
    # cntk.exe's config lookups look outwards (RNNLM's rnnlm.cntk sets rnnType in 'train')
    text = """T = [ action = train ; rnnType = NCELSTM
        SimpleNetworkBuilder = [ layerSizes = 3:4:2 ; trainingCriterion = CrossEntropyWithSoftmax
            evalCriterion = ClassificationError ] ]"""
    cmd = _command(text)               # reading the config is fine: the network is built later
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match="rnnType 'NCELSTM'") as err:
            build_network(cmd.network, StadynLibrary())
    assert err.value.line == 1


def test_a_missing_criterion_is_named():
    with pytest.raises(ConfigError, match="needs 'evalCriterion'"):
        _build("""T = [ action = train ; SimpleNetworkBuilder = [ layerSizes = 3:2
            trainingCriterion = CrossEntropyWithSoftmax ] ]""")


# ---------------------------------------------------------------------------------------------
# rnnType = CLASSLSTM (the PennTreebank RNN example)
# ---------------------------------------------------------------------------------------------
PTB = "Tests/EndToEndTests/Examples/Text/PennTreebank/RNN/baseline.linux.cpu.txt"


def test_penn_treebank_class_lstm_has_cntk_exes_nodes_and_parameters(tmp_path):
    log = cntk_file(PTB).decode("utf-8", "replace")
    config = copy_cntk_file(tmp_path, "Examples/SequenceToSequence/PennTreebank/Config/rnn.cntk")
    cmd = run_config(load_config(str(config))).command("train")
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network(cmd.network, lib)
        params = {k: cntk_shape_text(p.shape) for k, p in sd.get_parameters().items()}
        shapes = {}
        for name, v in net.nodes.items():
            lead = 2 if v.sequence_lengths is not None else int(lib.has_batch_axis(v))
            shapes[name] = cntk_shape_text(v.shape[lead:])
    # baseline lines 411-430: "Training 3791400 parameters in 18 out of 18 parameter tensors",
    # then "Node 'E0' (LearnableParameter operation) : [150 x 10000]" ... for each
    assert re.search(r"Training (\d+) parameters in (\d+) ", log).groups() == ("3791400", "18")
    listed = dict(re.findall(r"Node '(\w+)' \(LearnableParameter operation\) : \[([^\]]*)\]",
                             log[:log.index("Precomputing") if "Precomputing" in log else
                                 log.index("Starting Epoch 1")]))
    assert params == listed
    assert sum(np.prod([int(d) for d in s.split(" x ")]) for s in params.values()) == 3791400
    # the 63 nodes of its "Validating network" list (AutoName<n> numbered as cntk.exe made
    # them), with their shapes but for the "x 1" of a sum with a [200 x 1] bias
    first = log.index("Validating network.")
    block = log[first:log.index("Validating network.", log.index("in pass 2", first) + 10)]
    theirs = {}
    for name, shape in re.findall(r"Validating --> (\S+) = \w+ ?\(.*?-> \[([^\]]*)\]", block):
        theirs.setdefault(name, re.sub(r"( x 1)?( x \*1)?$", "", shape))
    assert len(theirs) == 63 and {k: re.sub(r"( x 1)$", "", v) for k, v in shapes.items()} == \
        {k: re.sub(r" x 1$", "", v) for k, v in theirs.items()}
    assert [net.name_of(n) for n in net.criterion_nodes + net.evaluation_nodes +
            net.output_nodes] == ["TrainNodeClassBasedCrossEntropy"] * 2 + ["outputs"]


@pytest.mark.parametrize("layer_type", [None, "Tanh"])
def test_a_small_class_lstm_computes_numpys_lstm(layer_type):
    # BuildLSTMComponent: i = s(Wxi x + bi + Whi h' + Wci c'), f likewise, c = f c' + i tanh(Wxc
    # x + Whc h' + bc), o = s(Wxo x + bo + Who h' + Wco c), h = o tanh(c); h' = c' = 0.1 at
    # the start (defaultHiddenActivity); x = E0 * the word's one-hot; s is
    # ApplyNonlinearFunction(..., 0): layerTypes' first, Sigmoid by default
    types = "" if layer_type is None else f"; layerTypes = {layer_type}"
    text = f"""T = [ action = train ; SimpleNetworkBuilder = [ rnnType = CLASSLSTM
        layerSizes = 6:3:4:6 ; lookupTableOrder = 1 ; nbrClass = 2 ; initValueScale = 6
        trainingCriterion = classCrossEntropyWithSoftmax {types}
        evalCriterion = classCrossEntropyWithSoftmax ] ]"""
    words = [[0, 3, 5], [2, 1]]
    with sd.parameter_registry(sd.ParameterRegistry()):
        net, _ = _build(text)
        p = {k: v.d.astype(np.float64) for k, v in sd.get_parameters().items()}
        feed(net.nodes["features"], [np.eye(6, dtype=np.float32)[w] for w in words])
        for name in ("outputs", "ClassPostProb"):
            net.nodes[name].forward()
        outputs, classes = net.nodes["outputs"].d, net.nodes["ClassPostProb"].d
    # cntk.exe's biases: bi, bo, bf = -1 (the gates' default init values), bc = 0
    assert [p[f"b{g}0"].ravel()[0] for g in "iofc"] == [-1, -1, -1, 0]

    def sigmoid(v):
        return np.tanh(v) if layer_type == "Tanh" else 1 / (1 + np.exp(-v))
    for k, seq in enumerate(words):
        h = c = np.full(4, 0.1)
        for t, word in enumerate(seq):
            x = p["E0"][word]
            i = sigmoid(x @ p["WXI0"] + p["bi0"][0] + h @ p["WHI0"] + p["WCI0"][0] * c)
            f = sigmoid(x @ p["WXF0"] + p["bf0"][0] + h @ p["WHF0"] + p["WCF0"][0] * c)
            c = f * c + i * np.tanh(x @ p["WXC0"] + h @ p["WHC0"] + p["bc0"][0])
            o = sigmoid(x @ p["WXO0"] + p["bo0"][0] + h @ p["WHO0"] + p["WCO0"][0] * c)
            h = o * np.tanh(c)
            np.testing.assert_allclose(outputs[k, t].ravel(), h @ p["W2"].T, rtol=1e-4,
                                       atol=1e-5)
            np.testing.assert_allclose(classes[k, t].ravel(), h @ p["WeightForClassPostProb"],
                                       rtol=1e-4, atol=1e-5)


def test_a_small_class_rnn_computes_numpys_recurrence():
    # rnnType CLASSLM (BuildClassEntropyRNNFromDescription, RNNLM's rnnlm.cntk): h = Sigmoid
    # (U0 x + W0 h'), h' = 0.1 at the start; ClassPostProb = WeightForClassPostProb h
    text = """T = [ action = train ; rnnType = CLASSLM ; recurrentLayer = 1
        SimpleNetworkBuilder = [ layerSizes = 6:4:6 ; vocabSize = 6 ; nbrClass = 2
        trainingCriterion = classCrossEntropyWithSoftmax
        evalCriterion = classCrossEntropyWithSoftmax ; initValueScale = 6 ] ]"""
    words = [[0, 3, 5], [2, 1]]
    with sd.parameter_registry(sd.ParameterRegistry()):
        net, _ = _build(text)
        p = {k: v.d.astype(np.float64) for k, v in sd.get_parameters().items()}
        feed(net.nodes["features"], [np.eye(6, dtype=np.float32)[w] for w in words])
        net.nodes["ClassPostProb"].forward()
        classes = net.nodes["ClassPostProb"].d
        # cntk.exe's nodes: the delay AutoName1, then (arguments right to left) W0 * delay
        # AutoName2, U0 * features AutoName3, their sum AutoName4, the sigmoid AutoName5
        assert [k for k in net.nodes if k.startswith("AutoName")] == \
            [f"AutoName{n}" for n in (2, 3, 4, 5, 1)]
        assert [net.name_of(v) for v in net.criterion_nodes + net.output_nodes] == \
            ["TrainNodeClassBasedCrossEntropy"] * 2
    # seeds: U0 1, W0 2, W1 3, WeightForClassPostProb 4, each U(+-0.05 * 6)
    limit = float(np.float32(0.05) * np.float32(6.0))
    for seed, (name, shape) in enumerate([("U0", (6, 4)), ("W0", (4, 4)), ("W1", (6, 4)),
                                          ("WeightForClassPostProb", (4, 2))], 1):
        np.testing.assert_array_equal(p[name], uniform_floats(
            seed, int(np.prod(shape)), limit).reshape(shape))
    for k, seq in enumerate(words):
        h = np.full(4, 0.1)
        for t, word in enumerate(seq):
            h = 1 / (1 + np.exp(-(p["U0"][word] + h @ p["W0"])))
            np.testing.assert_allclose(classes[k, t].ravel(), h @ p["WeightForClassPostProb"],
                                       rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# rnnType = LSTM (the SLU example's config)
# ---------------------------------------------------------------------------------------------
SLU = "Tests/EndToEndTests/Examples/Text/Miscellaneous/SLU"


def test_slu_lstm_has_cntk_exes_nodes_and_parameters():
    # SLU/baseline.cpu.txt: "Validating network. 168 nodes" (features, E0, LookupTable of 3
    # words [150 x *1], the LSTMs of layers 0, 2 and 3 with AutoName<n>, W4, ...,
    # PosteriorProb) and "Training 2071600 parameters in 47 out of 47 parameter tensors" with
    # each "Node 'X' (LearnableParameter operation) : [dims]" (SimpleNetworkBuilder.cpp:
    # BuildLSTMNetworkFromDescription)
    log = cntk_file(f"{SLU}/baseline.cpu.txt").decode("utf-8", "replace")
    config = cntk_file(f"{SLU}/Config/rnnlu.cntk").decode()
    root = parse_config(config, "rnnlu.cntk", ["DeviceId=-1", "ExpDir=/x", "DataDir=/x"])
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network(command_config(root, "LSTM").network, lib)
        params = {k: cntk_shape_text(p.shape) for k, p in sd.get_parameters().items()}
    first = log.index("Validating network. 168")
    block = log[first:log.index("Validating network.", log.index("in pass 2", first) + 10)]
    theirs = dict(re.findall(r"Validating --> (\S+) = (\w+)", block))
    assert len(theirs) == 168 and sorted(net.nodes) == sorted(theirs)
    ops = {k: lib.operation_of(v) for k, v in net.nodes.items()}
    assert all(ops[k] in (None, theirs[k]) for k in theirs if k != "LookupTable")
    listed = dict(re.findall(r"Node '(\w+)' \(LearnableParameter operation\) : \[([^\]]*)\]",
                             log[:log.index("Starting Epoch 1")]))
    assert params == listed and len(params) == 47
    assert sum(np.prod([int(d) for d in v.split(" x ")]) for v in params.values()) == 2071600
    assert [net.name_of(n) for n in net.criterion_nodes + net.evaluation_nodes +
            net.output_nodes] == ["CrossEntropyWithSoftmax"] * 2 + ["outputs"]


def test_lstm_builds_a_hidden_layer_not_in_recurrent_layer_as_cntk_exe():
    # SimpleNetworkBuilder.cpp:1280-1286 (BuildLSTMNetworkFromDescription): a hidden layer i
    # not in recurrentLayer is ApplyNonlinearFunction(Plus(Times(U<i>, x), B<i>), i): U<i>
    # [size(i+1) x size(i)] takes the next seed (12, after the 11 weights of layer 0's LSTM),
    # B<i> is 0, the function is layerTypes' i-th (Tanh here; Sigmoid the LSTM's gates);
    # before, Stadyn refused it ("Stadyn builds LSTM layers only")
    text = """T = [ action = train ; SimpleNetworkBuilder = [ rnnType = LSTM
        layerSizes = 3:4:5:2 ; layerTypes = Sigmoid:Tanh
        trainingCriterion = CrossEntropyWithSoftmax ; evalCriterion = ClassificationError ] ]"""
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network(_command(text).network, lib)
        p = {k: v.d for k, v in sd.get_parameters().items()}
        assert p["U1"].shape == (4, 5) and p["W2"].shape == (5, 2)
        np.testing.assert_array_equal(p["U1"].ravel(), uniform_floats(12, 20, 0.05))
        np.testing.assert_array_equal(p["W2"].ravel(), uniform_floats(13, 10, 0.05))
        np.testing.assert_array_equal(p["B1"], np.zeros((1, 5), np.float32))
        assert [lib.operation_of(net.nodes[f"AutoName{k}"]) for k in (39, 40, 41)] == \
            ["Times", "Plus", "Tanh"]
        x = np.random.RandomState(0).rand(1, 2, 3).astype(np.float32)   # 2 steps
        feed(net.nodes["features"], [x[0]])
        layer = net.nodes["AutoName41"]
        layer.forward()
        h = net.nodes["AutoName38"].d.reshape(2, 4)                     # layer 0's output
        np.testing.assert_allclose(layer.d.reshape(2, 5), np.tanh(h @ p["U1"] + p["B1"]),
                                   rtol=1e-5, atol=1e-6)


def test_lstm_lookup_table_stacks_the_words_embeddings():
    # LookupTableNode: E0 [2 x 3] (3 = 6 input rows / lookupTableOrder 2) gives [4 x *], each
    # word's column of E0 in turn
    text = """T = [ action = train ; SimpleNetworkBuilder = [ rnnType = LSTM
        layerSizes = 6:2:3:2 ; lookupTableOrder = 2 ; trainingCriterion = CrossEntropyWithSoftmax
        evalCriterion = ClassificationError ] ]"""
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(_command(text).network, StadynLibrary())
        e0 = sd.get_parameters()["E0"].d                  # (3, 2): row v is word v's embedding
        assert e0.shape == (3, 2)
        np.testing.assert_array_equal(e0.ravel(), uniform_floats(1, 6, 0.05))
        words = np.zeros((1, 2, 6), np.float32)           # one sequence of two steps
        words[0, 0, [2, 3 + 0]] = 1
        words[0, 1, [1, 3 + 1]] = 1
        lookup = net.nodes["LookupTable"]
        feed(net.nodes["features"], [words[0]])
        lookup.forward()
        np.testing.assert_allclose(lookup.d.reshape(2, 4), [np.r_[e0[2], e0[0]],
                                                            np.r_[e0[1], e0[1]]], rtol=1e-6)
        assert [net.name_of(n) for n in net.evaluation_nodes] == ["EvalClassificationError"]


def test_recurrent_simple_networks_count_cntk_exes_nodes_with_gradient(tmp_path):
    # SGD.cpp:356-361: the nodes of the criterion's evaluation order that NeedsGradient, which
    # propagates through the PastValue loops (ComputationNetworkEvaluation.cpp:754); each
    # member of the generated description is one node of cntk.exe's builder.  SLU's
    # baseline.cpu.txt: "... 47 out of 47 parameter tensors and 164 nodes with gradient";
    # PennTreebank RNN's baseline.linux.cpu.txt: "... 18 out of 18 parameter tensors and 59
    # nodes with gradient"; before, no count for a network with a loop
    from stadyn.brainscript._command_network import CommandNetwork
    slu = parse_config(cntk_file(f"{SLU}/Config/rnnlu.cntk").decode(), "rnnlu.cntk",
                       ["DeviceId=-1", "ExpDir=/x", "DataDir=/x"])
    ptb = load_config(str(copy_cntk_file(tmp_path, "Examples/SequenceToSequence/PennTreebank/"
                                               "Config/rnn.cntk")))
    for root, command, log, expected in ((slu, "LSTM", f"{SLU}/baseline.cpu.txt", 164),
                                         (ptb, "train", PTB, 59)):
        baseline = cntk_file(log).decode("utf-8", "replace")
        assert f"parameter tensors and {expected} nodes with gradient:" in baseline
        with sd.parameter_registry(sd.ParameterRegistry()):
            network = CommandNetwork(command_config(root, command).network, 0.0)
            assert network.nodes_with_gradient(network.criterion_nodes[0]) == expected
