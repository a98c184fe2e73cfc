"""BrainScript parameters are registered (and saved) under cntk.exe's node names, and a model
file's parameters are loaded back by name, whatever order the network makes them in."""

from __future__ import annotations

import io
import os
import re
import subprocess

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ModelFileError
from stadyn.brainscript import build_network
from stadyn.brainscript._model_files import load_model_parameters, save_model
from stadyn.brainscript._stadyn_library import StadynLibrary

MIRROR = "/work/.mirror/yaochengji+CNTK/repo"
BASELINES = {
    "MLP_MNIST": "Tests/EndToEndTests/Examples/Image/Classification/MLP_MNIST/MLP_MNIST/"
                 "baseline.txt",
    "01_OneHidden": "Tests/EndToEndTests/Examples/Image/GettingStarted/01_OneHidden/"
                    "baseline.txt",
}


def _baseline(name: str) -> str:
    if not os.path.isdir(MIRROR):
        pytest.skip("no CNTK source mirror")
    done = subprocess.run(["git", "-C", MIRROR, "show", f"HEAD:{BASELINES[name]}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"the mirror has no {BASELINES[name]}")
    return done.stdout


def _network_text(log: str) -> str:
    """The ``BrainScriptNetworkBuilder`` record cntk.exe echoed at the top of its log."""
    start = log.index("BrainScriptNetworkBuilder = {") + len("BrainScriptNetworkBuilder = ")
    depth = 0
    for end in range(start, len(log)):
        depth += {"{": 1, "}": -1}.get(log[end], 0)
        if depth == 0:
            return log[start:end + 1]
    raise AssertionError("unbalanced network record")


def _trained_node_names(log: str) -> list[str]:
    """The nodes of cntk.exe's ``Training N parameters in K out of K parameter tensors`` list."""
    head = re.search(r"Training \d+ parameters in (\d+) out of \d+ parameter tensors", log)
    names = re.findall(r"\tNode '([^']+)' \(LearnableParameter operation\) :",
                       log[head.end():])
    return sorted(names[:int(head.group(1))])


def _names(text: str) -> list[str]:
    with sd.parameter_registry(sd.ParameterRegistry()):
        build_network(text, StadynLibrary())
        return sorted(sd.get_parameters())


@pytest.mark.parametrize("example", sorted(BASELINES))
def test_parameters_are_named_as_in_cntk_exes_log(example):
    log = _baseline(example)
    want = _trained_node_names(log)
    assert want and all("." in n for n in want)       # model.arrayOfFunctions[1]...W
    assert _names(_network_text(log)) == want


def test_hand_written_parameters_and_layers_take_their_expression_paths():
    # cntk.exe's names for such members (its logs: W0, out.h1.arrayOfFunctions[0].W, out.z.W;
    # a macro's [ W = ... ; c = ... ].c: the W of the member that calls it)
    names = _names("""{ x = Input {4} ; labels = Input {2}
        W0 = ParameterTensor {(3:4)}
        m (v) = { h1 = DenseLayer {3, activation = ReLU} (v) ; z = LinearLayer {2} (h1) }
        out = m (W0 * x)
        Macro (v) = [ W = Parameter (2, 2) ; c = Times (W, v) ].c
        p = Macro (out.z)
        ce = CrossEntropyWithSoftmax (labels, p) ; criterionNodes = (ce) }""")
    assert names == ["W0", "out.h1.arrayOfFunctions[0].W", "out.h1.arrayOfFunctions[0].b",
                     "out.z.W", "out.z.b", "p.W"]


def test_a_parameter_inside_an_expression_takes_the_path_of_the_operand():
    # cntk.exe names it by its expression path (BrainScriptEvaluator.cpp: an infix operator's
    # operands are evaluated at '<path>.<Name>Args[k]', a function's arguments at
    # '<path>.<parameter name>' (CNTK.core.bs's: Times (x, y), Exp (_), Tanh (z)), an 'if'
    # condition at '.if', a default value at the path of the function's definition)
    assert _names("{ x = Input {2} ; W = Parameter (2, 2) ; z = W * x + Parameter (2, 1) }") \
        == ["W", "z.PlusArgs[1]"]
    assert _names("""{ x = Input {2}
        t = Times (ParameterTensor {(2:2)}, Exp (ParameterTensor {(2:1)}))
        u = Tanh (-(ParameterTensor {2} .* x))
        f (v, b = ParameterTensor {2}) = v + b
        y = f (x) }""") == ["f.b", "t.x", "t.y._", "u.z._negate.ElementTimesArgs[0]"]


# the same network, its two same-shaped weights made in either order (the sum's operands are
# evaluated left first): as a change of evaluation order (2c1f61f's) would make them
_SWAPPED = """{{ x = Input {{3}} ; labels = Input {{3}}
    {first} = ParameterTensor {{(3:3)}}
    {second} = ParameterTensor {{(3:3)}}
    b = ParameterTensor {{3}}
    z = {terms} + b
    ce = CrossEntropyWithSoftmax (labels, z) ; criterionNodes = (ce) ; outputNodes = (z) }}"""


def _build(text: str):
    net = build_network(text, StadynLibrary())
    outputs = {k: v for k, v in net.nodes.items() if v.parent is not None}
    return net, outputs, {k: net.nodes[k] for k in ("x", "labels")}


def test_a_model_file_loads_by_name_when_the_members_are_made_in_another_order(tmp_path):
    path = str(tmp_path / "net")
    rng = np.random.RandomState(0)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net, outputs, inputs = _build(_SWAPPED.format(first="A", second="B",
                                                       terms="A * x + B * Tanh (x)"))
        made_first = list(sd.get_parameters())
        made = [id(v) for v in sd.get_parameters().values()]
        assert made.index(id(net.nodes["A"])) < made.index(id(net.nodes["B"]))
        values = {}
        for name in ("A", "B", "b"):
            net.nodes[name].d = values.setdefault(
                name, rng.uniform(-1, 1, net.nodes[name].shape).astype(np.float32))
        save_model(path, outputs, inputs)
    # the same network, its members written and its weights made in the other order
    with sd.parameter_registry(sd.ParameterRegistry()):
        net, _, _ = _build(_SWAPPED.format(first="B", second="A",
                                           terms="B * Tanh (x) + A * x"))
        made = [id(v) for v in sd.get_parameters().values()]
        assert made.index(id(net.nodes["B"])) < made.index(id(net.nodes["A"]))
        assert sorted(sd.get_parameters()) == sorted(made_first)
        load_model_parameters(path)
        for name, value in values.items():
            np.testing.assert_array_equal(net.nodes[name].d, value, err_msg=name)


def _old_file(tmp_path, shapes: dict[str, tuple[int, ...]],
              names: list[str] | None = None) -> tuple[str, dict]:
    """A model file as an older Stadyn wrote it: ``parameter_<n>/W`` in the order made (or
    ``names``)."""
    path = str(tmp_path / "old")
    reg = sd.ParameterRegistry()
    values = {}
    with sd.parameter_registry(reg):
        x = sd.Variable((1, 2))
        y = x
        for k, (member, shape) in enumerate(shapes.items()):
            value = np.full(shape, k + 1, np.float32)
            name = names[k] if names else "parameter" + (f"_{k}" if k else "") + "/W"
            w = sd.get_parameter_or_create(name, shape, value)
            values[member] = value
            y = sd.functions.add2(y, sd.functions.sum(w)) if w.ndim else y
        save_model(path, {"y": y}, {"x": x})
    return path, values


def test_an_old_named_model_file_loads_where_the_shapes_leave_no_doubt(tmp_path):
    path, values = _old_file(tmp_path, {"W": (2, 3), "b": (3,)})
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ x = Input {2} ; W = Parameter (3, 2) ; b = ParameterTensor {3}"
                            " ; z = W * x + b }", StadynLibrary())
        load_model_parameters(path)
        for name, value in values.items():
            np.testing.assert_array_equal(net.nodes[name].d, value, err_msg=name)


def test_an_old_named_model_file_of_same_shaped_parameters_is_refused(tmp_path):
    path, _ = _old_file(tmp_path, {"A": (3, 3), "B": (3, 3)})
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ x = Input {3} ; A = ParameterTensor {(3:3)}"
                            " ; B = ParameterTensor {(3:3)} ; z = B * (A * x) }", StadynLibrary())
        before = {k: net.nodes[k].d.copy() for k in ("A", "B")}
        with pytest.raises(ModelFileError, match=re.escape(path) + ".*older Stadyn.*"
                           "parameter/W, parameter_1/W.*train the model again"):
            load_model_parameters(path)
        for name, value in before.items():           # nothing was loaded
            np.testing.assert_array_equal(net.nodes[name].d, value)


def test_a_file_with_placeholder_names_loads_where_the_shapes_leave_no_doubt(tmp_path):
    # b509aa2's Stadyn saved a parameter made inside an expression as anonymous_<n>/W (and a
    # layer's it made otherwise as recurrence/lstm/W, batchnormalization/gamma, ...), numbered
    # in the order made; now it is z.PlusArgs[1]
    path, values = _old_file(tmp_path, {"W": (2, 3), "z.PlusArgs[1]": (1, 3)},
                             ["W", "anonymous_1/W"])
    with sd.parameter_registry(sd.ParameterRegistry()):
        build_network("{ x = Input {2} ; W = Parameter (3, 2) ; z = W * x + Parameter (3, 1) }",
                      StadynLibrary())
        load_model_parameters(path)
        params = sd.get_parameters()
        for name, value in values.items():
            np.testing.assert_array_equal(params[name].d, value, err_msg=name)


def test_a_file_with_placeholder_names_of_same_shaped_parameters_is_refused(tmp_path):
    path, _ = _old_file(tmp_path, {"A": (3, 3), "B": (3, 3)}, ["anonymous/W", "anonymous_1/W"])
    with sd.parameter_registry(sd.ParameterRegistry()):
        build_network("{ x = Input {3} ; z = ParameterTensor {(3:3)} * (ParameterTensor {(3:3)}"
                      " * x) }", StadynLibrary())
        assert sorted(sd.get_parameters()) == ["z.TimesArgs[0]", "z.TimesArgs[1].TimesArgs[0]"]
        with pytest.raises(ModelFileError, match=re.escape(path) + ".*older Stadyn.*"
                           "anonymous/W, anonymous_1/W.*train the model again"):
            load_model_parameters(path)


def test_a_model_file_written_for_another_network_is_refused_not_half_loaded(tmp_path):
    # the file holds A, B, b; this network names its weights C, D: loading used to leave C and
    # D as made (random) and evaluate or train on with them, silently (a file from before the
    # node names, whose layers were 'dense', 'dense_1', ..., did the same)
    path = str(tmp_path / "net")
    with sd.parameter_registry(sd.ParameterRegistry()):
        _, outputs, inputs = _build(_SWAPPED.format(first="A", second="B",
                                                     terms="A * x + B * Tanh (x)"))
        save_model(path, outputs, inputs)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net, _, _ = _build(_SWAPPED.format(first="C", second="D",
                                           terms="C * x + D * Tanh (x)"))
        before = {k: net.nodes[k].d.copy() for k in ("C", "D", "b")}
        with pytest.raises(ModelFileError, match=re.escape(path) + ": holds no value for 2 of "
                           r"the network's 3 parameters \(C, D\).*another network"):
            load_model_parameters(path)
        for name, value in before.items():           # nothing was loaded, b neither
            np.testing.assert_array_equal(net.nodes[name].d, value)


_PRETRAIN = """makeMode = true
command = Train1:Edit:Train2:Test
deviceId = -1 ; traceLevel = 1
R = [ readerType = "CNTKTextFormatReader" ; file = "train.ctf" ; randomize = false
      input = [ features = [ alias = "x" ; dim = 4 ; format = "dense" ]
                labels = [ alias = "y" ; dim = 3 ; format = "dense" ] ] ]
Train1 = [ action = "train" ; modelPath = "out/pre.dnn" ; reader = $R$
    SGD = [ epochSize = 0 ; minibatchSize = 25 ; learningRatesPerSample = 0.05 ; maxEpochs = 3 ]
    BrainScriptNetworkBuilder = [
        features = Input{4} ; labels = Input{3}
        h = DenseLayer{5, activation=ReLU}(features)
        z = LinearLayer{3}(h)
        ce = CrossEntropyWithSoftmax(labels, z) ; errs = ClassificationError(labels, z)
        criterionNodes=(ce) ; evaluationNodes=(errs) ; outputNodes=(z) ] ]
Edit = [ action = "edit" ; outputModelPath = "out/m.dnn.0"
    BrainScriptNetworkBuilder = [
        m = BS.Network.Load("out/pre.dnn")
        features = m.features ; labels = m.labels
        h2 = DenseLayer{5, activation=ReLU}(m.h + PerDimMeanVarNormalization(m.h, Mean(m.h),
                                                                            InvStdDev(m.h)))
        z = LinearLayer{3}(h2)
        ce = CrossEntropyWithSoftmax(labels, z) ; errs = ClassificationError(labels, z)
        criterionNodes=(ce) ; evaluationNodes=(errs) ; outputNodes=(z) ] ]
Train2 = [ action = "train" ; modelPath = "out/m.dnn" ; reader = $R$
    SGD = [ epochSize = 0 ; minibatchSize = 25 ; learningRatesPerSample = 0.05 ; maxEpochs = 3 ]
    BrainScriptNetworkBuilder = (BS.Network.Load("out/m.dnn.0")) ]
Test = [ action = "test" ; modelPath = "out/m.dnn" ; reader = $R$ ]
"""


def test_a_test_after_edit_and_train_from_a_loaded_network_scores_the_trained_model(
        tmp_path, monkeypatch):
    # cntk.exe's pattern for a network grown from a trained one (Speech/LSTM, discriminative
    # pre-training): the test must score out/m.dnn.  BS.Network.Load put each file's names under
    # a new 'Load/' level, so Train2's file and the Test's network named them differently and
    # the Test scored the untrained out/m.dnn.0, silently (83.5% against the model's 23%)
    from stadyn.brainscript import run
    rng = np.random.RandomState(0)
    x = rng.randn(200, 4).astype(np.float32)
    y = np.argmax(x[:, :3] + 0.5 * rng.randn(200, 3), axis=1)
    (tmp_path / "train.ctf").write_text("".join(
        f"|x {' '.join(f'{v:.3f}' for v in row)} "
        f"|y {' '.join(str(int(k == c)) for c in range(3))}\n"
        for row, k in zip(x, y)))
    (tmp_path / "cmd.cntk").write_text(_PRETRAIN)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    run(str(tmp_path / "cmd.cntk"), [], out=out)
    final = re.findall(r"Final Results: Minibatch\[1-1\]: errs = ([0-9.]+)% \* 200", out.getvalue())
    xs, rates = np.round(x, 3), {}
    for path in ("out/m.dnn", "out/m.dnn.0"):
        net = sd.load(path, batch_size=200)
        net.inputs["features"].d = xs
        net.outputs["z"].forward()
        rates[path] = 100 * float(np.mean(net.outputs["z"].d.argmax(-1) != y))
    assert [float(f) for f in final] == pytest.approx([rates["out/m.dnn"]], abs=1e-3)
    assert abs(rates["out/m.dnn.0"] - rates["out/m.dnn"]) > 10   # (the test can tell them apart)


def test_a_declared_parameter_nothing_uses_does_not_stop_test_or_resume(tmp_path, monkeypatch):
    # the model file holds what the network computes with; W2 is declared and never used, so it
    # is not in the file, and the test (and a resume) must not ask for it (a review found the
    # strict load refusing such a model for good)
    from stadyn.brainscript import run
    rng = np.random.RandomState(1)
    x = rng.randn(60, 4).astype(np.float32)
    y = np.argmax(x[:, :3], axis=1)
    (tmp_path / "train.ctf").write_text("".join(
        f"|x {' '.join(f'{v:.3f}' for v in row)} "
        f"|y {' '.join(str(int(k == c)) for c in range(3))}\n"
        for row, k in zip(x, y)))
    text = _PRETRAIN.split("Train1 = ")[0].replace("Train1:Edit:Train2:Test", "Train:Test") + """
Train = [ action = "train" ; modelPath = "out/m.dnn" ; reader = $R$
    SGD = [ epochSize = 0 ; minibatchSize = 20 ; learningRatesPerSample = 0.05 ; maxEpochs = $E$ ]
    BrainScriptNetworkBuilder = [
        features = Input{4} ; labels = Input{3}
        W2 = Parameter (3, 3)
        z = LinearLayer{3}(features)
        ce = CrossEntropyWithSoftmax(labels, z) ; errs = ClassificationError(labels, z)
        criterionNodes=(ce) ; evaluationNodes=(errs) ; outputNodes=(z) ] ]
Test = [ action = "test" ; modelPath = "out/m.dnn" ; reader = $R$ ]
"""
    (tmp_path / "cmd.cntk").write_text(text)
    monkeypatch.chdir(tmp_path)
    for epochs in (1, 2):                   # the second run resumes from the first's model
        out = io.StringIO()
        run(str(tmp_path / "cmd.cntk"), [f"E={epochs}"], out=out)
        assert "Final Results: Minibatch[1-1]: errs = " in out.getvalue()
    assert "Starting from checkpoint" in out.getvalue()
    assert "W2" not in sd.load("out/m.dnn").parameters


def test_constants_take_their_expression_paths_and_the_librarys_start_at_the_top():
    # cntk.exe's Speech/LSTM FullUtterance baseline (Tests/EndToEndTests/Speech/LSTM/
    # FullUtterance/baseline.cpu.txt:571): 'Validating --> BS.Constants.One =
    # LearnableParameter()': CNTK.core.bs's members are the network record's, so their paths
    # do not depend on the member that first uses them (here 'err')
    with sd.parameter_registry(sd.ParameterRegistry()):
        build_network("""{ x = Input {2} ; c = Constant (3, rows = 2)
            err = SumElements (BS.Constants.One - x .* c + Constant (1)) }""", StadynLibrary())
        names = sorted(k for k, v in sd.get_parameters(grad_only=False).items())
    assert names == ["BS.Constants.One", "c", "err.matrix.PlusArgs[1]"]


def test_old_style_names_the_network_itself_has_load_by_name(tmp_path):
    # a network loaded by BS.Network.Load keeps its file's names (recurrence/lstm/H, ...), and
    # two same-shaped ones named so pair by their names, not refused as an older Stadyn's
    path, values = _old_file(tmp_path, {"A": (3, 3), "B": (3, 3)},
                             ["recurrence/lstm/H", "recurrence_1/lstm/H"])
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.Variable((1, 3))
        a = sd.get_parameter_or_create("recurrence/lstm/H", (3, 3), np.zeros((3, 3), "f4"))
        b = sd.get_parameter_or_create("recurrence_1/lstm/H", (3, 3), np.zeros((3, 3), "f4"))
        sd.functions.add2(x, sd.functions.sum(a) + sd.functions.sum(b))
        load_model_parameters(path)
        np.testing.assert_array_equal(a.d, values["A"])
        np.testing.assert_array_equal(b.d, values["B"])
