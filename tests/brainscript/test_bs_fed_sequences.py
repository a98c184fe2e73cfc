"""Networks cntk.exe runs on sequences its reader delivers, whatever the network text uses.

cntk.exe links every Input given no ``dynamicAxis`` to the network's one MBLayout, whether or
not the network declares a ``DynamicAxis{}`` (``ComputationNetwork::ResetMBLayouts``,
ComputationNetworkEvaluation.cpp:628-632), and copies the reader's layout into it
(ReaderShim.cpp:318-327): such an Input fed sequences of several steps is a sequence on the
default axis.  Before bs28 Stadyn refused it where the network declared an axis and did not
pass the Input to a sequence function (``stream 'labels' delivered samples of shape (4, 3);
the input needs (3,)``).  Numbers: NumPy's softmax cross entropy and SGD step.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

import stadyn as sd
from stadyn.brainscript import run

LENGTHS = [3, 2, 4]


def _data(tmp_path, lengths=LENGTHS, label_per_sequence=False):
    """A CTF file: features and labels each step (or the labels on a sequence's first line
    only), and a context stream ``ctx`` each step."""
    rng = np.random.default_rng(0)
    lines, frames, labels = [], [], []
    for s, n in enumerate(lengths):
        for k in range(n):
            x = np.round(rng.standard_normal(4), 3)
            c = (s + k) % 3
            frames.append(x)
            label = ""
            if k == 0 or not label_per_sequence:
                labels.append(c)
                label = " |labels " + " ".join("1" if i == c else "0" for i in range(3))
            lines.append(f"{s} |features {' '.join(f'{v:.3f}' for v in x)}{label} |ctx {k}")
    path = tmp_path / "data.txt"
    path.write_text("\n".join(lines) + "\n")
    return path, np.array(frames), np.array(labels)


DECLARED = """{
    t = DynamicAxis{}
    ctx = Input {1, dynamicAxis = t}
    features = Input {4} ; labels = Input {3}
    lastCtx = BS.Sequences.Last (ctx)
    W = ParameterTensor {(3:4), initValue = 0.1}
    b = ParameterTensor {3, initValue = 0}
    z = W * features + b
    ce = CrossEntropyWithSoftmax (labels, z, tag = 'criterion')
}"""

READER = """reader = { readerType = "CNTKTextFormatReader" ; file = "DATA" ; randomize = false
        input = { features = { dim = 4 ; format = "dense" }
                  labels = { dim = 3 ; format = "dense" }
                  ctx = { dim = 1 ; format = "dense" } } }"""


def _config(tmp_path, network, data, epochs=2, commands="train", extra=""):
    text = (f"command = {commands}\ntraceLevel = 1\nmodelPath = \"{tmp_path}/m.dnn\"\n"
            f"train = {{\n    action = \"train\"\n    BrainScriptNetworkBuilder = {network}\n"
            f"    SGD = {{ epochSize = 0 ; maxEpochs = {epochs} ; minibatchSize = 16\n"
            "            learningRatesPerMB = 0.5 ; momentumPerMB = 0 ; numMBsToShowResult = 1 }\n"
            f"    {READER.replace('DATA', str(data))}\n}}\n{extra}")
    config = tmp_path / "run.cntk"
    config.write_text(text)
    return config


def _epochs(log):
    return [(float(v), int(n)) for v, n in re.findall(
        r"Finished Epoch\[.*?\]: \[Training\] ce = (\S+) \* (\d+)", log)]


def _softmax_ce(W, b, x, y):
    z = x @ W.T + b
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    onehot = np.eye(3)[y]
    return -np.sum(onehot * np.log(p)), (p - onehot)


def test_a_default_axis_input_of_a_declared_axis_network_reads_its_steps(tmp_path):
    data, x, y = _data(tmp_path)
    log = io.StringIO()
    run(str(_config(tmp_path, DECLARED, data)), [], out=log)
    got = _epochs(log.getvalue())
    # NumPy: one minibatch (all 9 steps) an epoch; the criterion of each epoch is that of the
    # parameters before its update; learningRatesPerMB 0.5 over minibatchSize 16 per sample
    W, b = np.full((3, 4), 0.1), np.zeros(3)
    expected = []
    for _ in range(2):
        ce, g = _softmax_ce(W, b, x, y)
        expected.append((ce / len(x), len(x)))
        W, b = W - 0.5 / 16 * g.T @ x, b - 0.5 / 16 * g.sum(axis=0)
    assert [n for _, n in got] == [9, 9]
    np.testing.assert_allclose([v for v, _ in got], [v for v, _ in expected], rtol=1e-5)
    trained = sd.load(f"{tmp_path}/m.dnn").parameters
    np.testing.assert_allclose(np.asarray(trained["W"].d).reshape(4, 3), W.T, rtol=1e-5)


def test_a_label_per_sequence_of_a_declared_axis_network_stays_one(tmp_path):
    # the same file with the labels on each sequence's first line only: the labels stream
    # lays out one step a sequence (CTF's own count of the stream's samples), so the label
    # stays one value per sequence, as in CNTK's sequence classification example
    # (features on the declared axis, reduced by BS.Sequences.Last)
    data, x, y = _data(tmp_path, label_per_sequence=True)
    network = DECLARED.replace("features = Input {4}", "features = Input {4, dynamicAxis = t}")
    network = network.replace("z = W * features + b",
                              "z = W * BS.Sequences.Last (features) + b")
    log = io.StringIO()
    run(str(_config(tmp_path, network, data, epochs=1)), [], out=log)
    last = np.cumsum(LENGTHS) - 1
    ce, _ = _softmax_ce(np.full((3, 4), 0.1), np.zeros(3), x[last], y)
    got = _epochs(log.getvalue())
    assert [n for _, n in got] == [3]
    np.testing.assert_allclose(got[0][0], ce / 3, rtol=1e-5)


PLAIN = """{
    features = Input {4} ; labels = Input {3}
    W = ParameterTensor {(3:4), initValue = 0.1}
    b = ParameterTensor {3, initValue = 0}
    z = W * features + b
    ce = CrossEntropyWithSoftmax (labels, z, tag = 'criterion')
}"""


def test_a_loaded_model_of_one_step_inputs_reads_sequences_step_by_step(tmp_path):
    # trained on one-line sequences (its Inputs one sample each), then loaded by
    # BS.Network.Load and trained on sequences of 3, 2 and 4 steps: cntk.exe compiles the loaded
    # network again, linking its Inputs to the reader's layout (CNTK.core.bs:1684,
    # ComputationNetworkEvaluation.cpp:513, 628-632); each step is a sample of the model
    one = tmp_path / "one"
    one.mkdir()
    first, _, _ = _data(one, [1] * 5)
    data, x, y = _data(tmp_path)
    again = (f"again = {{\n    action = \"train\"\n    modelPath = \"{tmp_path}/again.dnn\"\n"
             f"    BrainScriptNetworkBuilder = (BS.Network.Load (\"{tmp_path}/m.dnn\"))\n"
             "    SGD = { epochSize = 0 ; maxEpochs = 1 ; minibatchSize = 16\n"
             "            learningRatesPerMB = 0.5 ; momentumPerMB = 0 }\n"
             f"    {READER.replace('DATA', str(data))}\n}}\n")
    log = io.StringIO()
    run(str(_config(tmp_path, PLAIN, first, epochs=1, commands="train:again", extra=again)),
        [], out=log)
    trained = sd.load(f"{tmp_path}/m.dnn").parameters
    W = np.asarray(trained["W"].d).reshape(4, 3).T
    b = np.asarray(trained["b"].d).reshape(3)
    ce, g = _softmax_ce(W, b, x, y)
    got = _epochs(log.getvalue())
    assert [n for _, n in got] == [5, 9]
    np.testing.assert_allclose(got[1][0], ce / 9, rtol=1e-5)
    after = sd.load(f"{tmp_path}/again.dnn").parameters
    np.testing.assert_allclose(np.asarray(after["W"].d).reshape(4, 3),
                               (W - 0.5 / 16 * g.T @ x).T, rtol=1e-5)


def test_the_precompute_pass_refuses_layouts_as_training(tmp_path):
    # features of 3, 4, 2 and 3 steps beside labels of one step a sequence, no DynamicAxis:
    # cntk.exe's precompute pass reads every feature and label node (SGD.cpp:285-294, 1779)
    # through the reader that refuses the shared layout (ReaderShim.cpp:318-335), so it stops
    # there: no 'Precomputing --> Completed.', no model before epoch 1 (m.dnn.0).  Before
    # bs28 the pass read the features alone, completed and saved m.dnn.0; training refused.
    rng = np.random.default_rng(1)
    features, labels = [], []
    for s, n in enumerate([3, 4, 2, 3]):
        labels.append(f"{s} |labels {' '.join('1' if i == s % 3 else '0' for i in range(3))}")
        features += [f"{s} |features {' '.join(f'{v:.3f}' for v in rng.standard_normal(4))}"
                     for _ in range(n)]
    (tmp_path / "f.txt").write_text("\n".join(features) + "\n")
    (tmp_path / "l.txt").write_text("\n".join(labels) + "\n")
    network = PLAIN.replace("z = W * features + b",
                            "z = W * PerDimMeanVarNormalization (features, Mean (features), "
                            "InvStdDev (features)) + b")
    reader = f"""reader = {{ randomize = false
  deserializers = ({{ type = "CNTKTextFormatDeserializer" ; file = "{tmp_path}/f.txt"
                      input = {{ features = {{ dim = 4 ; format = "dense" }} }} }} :
                   {{ type = "CNTKTextFormatDeserializer" ; file = "{tmp_path}/l.txt"
                      input = {{ labels = {{ dim = 3 ; format = "dense" }} }} }}) }}"""
    config = tmp_path / "run.cntk"
    config.write_text(
        f"command = train\ntraceLevel = 1\nmodelPath = \"{tmp_path}/m.dnn\"\n"
        f"train = {{\n    action = \"train\"\n    BrainScriptNetworkBuilder = {network}\n"
        "    SGD = { epochSize = 0 ; maxEpochs = 1 ; minibatchSize = 8\n"
        f"            learningRatesPerMB = 0.5 }}\n    {reader}\n}}\n")
    log = io.StringIO()
    try:
        run(str(config), [], out=log)
    except sd.ConfigError as exc:
        message = str(exc)
    else:
        raise AssertionError("trained on sequences of different lengths")
    reader_line = config.read_text().splitlines().index(
        "    reader = { randomize = false") + 1
    assert message.startswith(f"{config}:{reader_line}:"), message
    assert ("Dynamic axis layout '*' is shared between inputs 'features' and 'labels', but "
            "layouts generated from the input data are incompatible on this axis. Are you "
            "using different sequence lengths? Did you consider adding a DynamicAxis() to the "
            "Input nodes? (command 'train')") in message
    assert "Precomputing --> 2 PreCompute nodes found." in log.getvalue()
    assert "Precomputing --> Completed." not in log.getvalue()
    assert not (tmp_path / "m.dnn.0").exists()


def test_the_cv_reader_is_opened_once_and_read_from_its_start_each_epoch(tmp_path, monkeypatch):
    # cntk.exe makes the cvReader once a train command (TrainActions.cpp:121-123) and starts
    # each validation at its epoch 0 (SimpleEvaluator.h:99): the same sweep each time.  Before
    # bs28 Stadyn opened (indexed) it again every epoch: 1 + 1 + 3 opens here, now 2 (the
    # reader and the cvReader, each indexed once by sequence_streams and read from there).
    # each validation is NumPy's cross entropy over the cv file's 9 steps (randomized or not)
    # of the parameters the epoch trained (one minibatch of the 4 training steps)
    from stadyn.brainscript import _deserializer_builders
    opened = []
    real = _deserializer_builders.open_deserializers

    def counted(reader):
        opened.append(reader)
        return real(reader)
    monkeypatch.setattr(_deserializer_builders, "open_deserializers", counted)
    train, xt, yt = _data(tmp_path, [2, 2])
    cv_dir = tmp_path / "cv"
    cv_dir.mkdir()
    cv, x, y = _data(cv_dir)
    cv_reader = READER.replace("DATA", str(cv)).replace("randomize = false",
                                                        "randomize = true")
    text = _config(tmp_path, PLAIN, train, epochs=3).read_text().replace(
        "    reader = {", "    cvReader" + cv_reader[len("reader"):] + "\n    reader = {")
    config = tmp_path / "run.cntk"
    config.write_text(text)
    log = io.StringIO()
    run(str(config), [], out=log)
    assert len(opened) == 2, len(opened)
    validated = [(float(v), int(n)) for v, n in re.findall(
        r"Finished Epoch\[.*?\]: \[Validate\] ce = (\S+) \* (\d+)", log.getvalue())]
    W, b, expected = np.full((3, 4), 0.1), np.zeros(3), []
    for _ in range(3):
        _, g = _softmax_ce(W, b, xt, yt)
        W, b = W - 0.5 / 16 * g.T @ xt, b - 0.5 / 16 * g.sum(axis=0)
        expected.append(_softmax_ce(W, b, x, y)[0] / 9)
    assert [n for _, n in validated] == [9, 9, 9]
    np.testing.assert_allclose([v for v, _ in validated], expected, rtol=1e-5)


LAYOUT_REFUSAL = (
    "Dynamic axis layout '*' is shared between inputs 'features' and 'labels', but layouts "
    "generated from the input data are incompatible on this axis. Are you using different "
    "sequence lengths? Did you consider adding a DynamicAxis() to the Input nodes? "
    "(command 'train')")


def _refusal(config):
    log = io.StringIO()
    try:
        run(str(config), [], out=log)
    except sd.ConfigError as exc:
        message = str(exc)
    else:
        raise AssertionError("trained: " + " ".join(
            line for line in log.getvalue().splitlines() if "Finished" in line))
    reader_line = next(i for i, line in enumerate(config.read_text().splitlines(), 1)
                       if line.lstrip().startswith("reader = {"))
    assert message.startswith(f"{config}:{reader_line}:"), message
    assert LAYOUT_REFUSAL in message, message
    assert not (config.parent / "m.dnn").exists()


@pytest.mark.parametrize("criterion", ["SquareError (labels, z, tag = 'criterion')",
                                       "ReduceSum (labels .* z, tag = 'criterion')"])
def test_a_label_per_sequence_beside_default_axis_steps_is_refused_as_cntk(tmp_path, criterion):
    # the declared-axis network with features on the default axis fed 3, 2 and 4 steps, and
    # labels on each sequence's first line only (one step a sequence): cntk.exe links every
    # Input of no dynamicAxis to the network's one layout, declared axis or not
    # (ComputationNetworkEvaluation.cpp:632), and its reader refuses streams of different
    # layouts on it (ReaderShim.cpp:318-335).  At 19f0fea7 the labels were left off the shared
    # layout and broadcast over the steps: 'ce = 1.20857557 * 9' (SquareError), NumPy's with
    # each label repeated over its sequence's steps 1.2085754877.
    data, _, _ = _data(tmp_path, label_per_sequence=True)
    network = DECLARED.replace("CrossEntropyWithSoftmax (labels, z, tag = 'criterion')",
                               criterion)
    _refusal(_config(tmp_path, network, data, epochs=1))


def test_one_line_sequences_of_a_past_value_network_train_a_step_each(tmp_path):
    # a PastValue network declaring no axis over sequences of one line each (features dim 4,
    # labels dim 3): 5 sequences of 1 step, one layout, as cntk.exe reads them.  At 19f0fea7
    # the layout check counted each sample's first dimension as its steps (4 against 3) and
    # refused it.  NumPy: each sequence's one step has PastValue's default 0.2 before it
    # (z = W x + 0.5 * 0.2 + b; W's equal rows give every class one score: ln 3)
    data, x, y = _data(tmp_path, [1] * 5)
    network = PLAIN.replace(
        "z = W * features + b",
        "h0 = W * features\n"
        "    z = h0 + 0.5 * PastValue (0, h0, defaultHiddenActivation = 0.2) + b")
    log = io.StringIO()
    run(str(_config(tmp_path, network, data, epochs=1)), [], out=log)
    ce, _ = _softmax_ce(np.full((3, 4), 0.1), np.full(3, 0.5 * 0.2), x, y)
    got = _epochs(log.getvalue())
    assert [n for _, n in got] == [5]
    np.testing.assert_allclose(got[0][0], ce / 5, rtol=1e-5)
    np.testing.assert_allclose(got[0][0], np.log(3), rtol=1e-7)


def test_three_step_features_beside_one_line_labels_of_their_dimension_are_refused(tmp_path):
    # features of 3 steps a sequence beside labels of one line a sequence, of dim 3 (as many
    # as the steps), no DynamicAxis: cntk.exe's reader refuses the layouts (ReaderShim.cpp:
    # 318-335).  At 19f0fea7 the check counted the labels' dimension as their steps (3 == 3),
    # passed, and training failed on "target has shape (2, 1, 3)".
    rng = np.random.default_rng(1)
    features, labels = [], []
    for s in range(4):
        labels.append(f"{s} |labels {' '.join('1' if i == s % 3 else '0' for i in range(3))}")
        features += [f"{s} |features {' '.join(f'{v:.3f}' for v in rng.standard_normal(4))}"
                     for _ in range(3)]
    (tmp_path / "f.txt").write_text("\n".join(features) + "\n")
    (tmp_path / "l.txt").write_text("\n".join(labels) + "\n")
    reader = f"""reader = {{ randomize = false
  deserializers = ({{ type = "CNTKTextFormatDeserializer" ; file = "{tmp_path}/f.txt"
                      input = {{ features = {{ dim = 4 ; format = "dense" }} }} }} :
                   {{ type = "CNTKTextFormatDeserializer" ; file = "{tmp_path}/l.txt"
                      input = {{ labels = {{ dim = 3 ; format = "dense" }} }} }}) }}"""
    config = tmp_path / "run.cntk"
    config.write_text(
        f"command = train\ntraceLevel = 1\nmodelPath = \"{tmp_path}/m.dnn\"\n"
        f"train = {{\n    action = \"train\"\n    BrainScriptNetworkBuilder = {PLAIN}\n"
        "    SGD = { epochSize = 0 ; maxEpochs = 1 ; minibatchSize = 8\n"
        f"            learningRatesPerMB = 0.5 }}\n    {reader}\n}}\n")
    _refusal(config)


def test_the_readers_of_a_train_command_are_closed_when_training_raises(tmp_path, monkeypatch):
    # the reader and the cvReader a train command opens are closed when training stops on an
    # error too (at 19f0fea7 they were closed only after training returned)
    from stadyn.brainscript import _runner
    closed = []
    real_source, real_close = _runner.make_source, _runner.Validation.close

    def source(*args, **kwargs):
        made = real_source(*args, **kwargs)
        close = made.close
        monkeypatch.setattr(made, "close", lambda: (closed.append("reader"), close())[1])
        return made

    def validation_close(self):
        closed.append("cvReader")
        real_close(self)

    def fails(*args, **kwargs):
        raise RuntimeError("stopped in training")
    monkeypatch.setattr(_runner, "make_source", source)
    monkeypatch.setattr(_runner.Validation, "close", validation_close)
    monkeypatch.setattr(_runner.NetworkTrainer, "fit", fails)
    data, _, _ = _data(tmp_path, [2, 2])
    text = _config(tmp_path, PLAIN, data, epochs=1).read_text().replace(
        "    reader = {", "    cvReader" + READER.replace("DATA", str(data))[len("reader"):]
        + "\n    reader = {")
    config = tmp_path / "run.cntk"
    config.write_text(text)
    try:
        run(str(config), [], out=io.StringIO())
    except RuntimeError as exc:
        assert str(exc) == "stopped in training"
    else:
        raise AssertionError("trained")
    assert sorted(closed) == ["cvReader", "reader"], closed


def test_a_loaded_model_of_one_step_inputs_writes_each_sequence_with_its_steps(tmp_path):
    # the loaded model above (its Inputs one sample each), written over sequences of 3, 2 and
    # 4 steps: cntk.exe's Inputs are on the reader's layout (ComputationNetworkEvaluation.cpp:
    # 628-632) and its writer writes each sequence of that layout with its steps
    # (ComputationNode.cpp:842-846, 901, 921): one sequencePrologue a sequence, %x its length.
    # At c4441c04 each step was written as a sequence of one step ('<3 1>...|' nine times).
    # NumPy: z = W x + b of the trained model's parameters (to '%f''s 6 decimals)
    one = tmp_path / "one"
    one.mkdir()
    first, _, _ = _data(one, [1] * 5)
    data, x, _ = _data(tmp_path)
    reader = READER.replace('DATA', str(data))
    fmt = ('format = { sequencePrologue = "<%x>" ; sequenceEpilogue = "|\\n" ; '
           'sampleSeparator = ";" }')
    extra = (f"again = {{\n    action = \"train\"\n    modelPath = \"{tmp_path}/again.dnn\"\n"
             f"    BrainScriptNetworkBuilder = (BS.Network.Load (\"{tmp_path}/m.dnn\"))\n"
             "    SGD = { epochSize = 0 ; maxEpochs = 1 ; minibatchSize = 16\n"
             "            learningRatesPerMB = 0.5 ; momentumPerMB = 0 }\n"
             f"    {reader}\n}}\n"
             f"out = {{\n    action = \"write\"\n    modelPath = \"{tmp_path}/again.dnn\"\n"
             f"    outputNodeNames = (z)\n    outputPath = \"{tmp_path}/w\"\n    {fmt}\n"
             f"    {reader}\n}}\n")
    log = io.StringIO()
    run(str(_config(tmp_path, PLAIN, first, epochs=1, commands="train:again:out",
                    extra=extra)), [], out=log)
    trained = sd.load(f"{tmp_path}/again.dnn").parameters
    W = np.asarray(trained["W"].d).reshape(4, 3).T
    b = np.asarray(trained["b"].d).reshape(3)
    z = (x @ W.T + b).astype(np.float32).astype(np.float64)
    written = (tmp_path / "w.z").read_text()
    got = [[float(v) for v in step.split()] for line in written.splitlines()
           for step in line[line.index(">") + 1:-1].split(";")]
    np.testing.assert_allclose(got, z, atol=2e-6)
    assert [line[:line.index(">") + 1] for line in written.splitlines()] == \
        ["<3 3>", "<3 2>", "<3 4>"]
    assert "Minibatch[0]: ActualMBSize = 9" in log.getvalue()
