"""A number operand of an infix operator (or ``!``) on nodes is a constant node, as cntk.exe
makes it (BrainScriptEvaluator.cpp's ``CastToComputationNode``: a ``[1]`` LearnableParameter
with ``learningRateMultiplier = 0`` and ``initValue`` the number, named by the operator's
expression path; the operator's own node holds that name first, so the constant's is ``_`` and
the path after ConstructFromRoots makes the names unique).  cntk.exe's log of
Examples/Image/GettingStarted/05_OneConvRegr (baseline.txt:161-162): ``rmse = Sqrt (sqerr /
labelDim)`` gives ``_rmse.z = LearnableParameter() : -> [1]`` and ``rmse.z = ElementTimes
(sqerr, _rmse.z)``.  The values the network computes are unchanged (NumPy).  Where the CNTK
source mirror is at hand, the parameters and constants of two logs' networks are compared with
the logs' lists (skipped without it)."""

from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

import stadyn as sd
from stadyn.brainscript import StadynLibrary, build_network
from stadyn.brainscript._model_files import load_model_parameters, save_model
from stadyn.train import feed
from test_bs_param_names import MIRROR, _network_text

LOGS = {"05_OneConvRegr": "Tests/EndToEndTests/Examples/Image/GettingStarted/05_OneConvRegr/"
                          "baseline.txt",
        "MNISTClassifier": "Tests/EndToEndTests/CNTKv2Library/MNISTClassifier/baseline.txt",
        "ConvNet_CIFAR10": "Tests/EndToEndTests/Examples/Image/Classification/ConvNet_CIFAR/"
                           "ConvNet_CIFAR10/baseline.txt"}


def _log(path: str) -> str:
    """A baseline log cntk.exe wrote, from the CNTK source mirror (skips without one)."""
    if not os.path.isdir(MIRROR):
        pytest.skip("no CNTK source mirror")
    done = subprocess.run(["git", "-C", MIRROR, "show", f"HEAD:{path}"], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"the mirror has no {path}")
    return done.stdout


def _constants(text: str):
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(text, StadynLibrary())
        made = {k: (tuple(v.shape), v.need_grad, np.asarray(v.d).ravel().tolist())
                for k, v in sd.get_parameters(grad_only=False).items()}
    return net, made


def test_a_divisor_is_the_constant_of_its_reciprocal_named_as_in_cntk_exes_log():
    net, made = _constants("""{ labelDim = 10
        labels = Input {labelDim} ; z = Input {labelDim}
        diff = labels - z
        sqerr = ReduceSum (diff .* diff)
        rmse = Sqrt (sqerr / labelDim) }""")
    # (the reciprocal in double, held as a float32, as cntk.exe's 1.0 / (double) divisor)
    assert made == {"_rmse.z": ((1,), False, [float(np.float32(0.1))])}
    labels, z = np.array([[1.0, 0, 2, 0, 0, 0, 0, 0, 0, 3]]), np.zeros((1, 10))
    net.nodes["labels"].d, net.nodes["z"].d = labels, z
    rmse = net.nodes["rmse"]
    rmse.forward()
    np.testing.assert_allclose(np.asarray(rmse.d).ravel(), [np.sqrt(14 / 10)], rtol=1e-6)


def test_each_number_operand_is_a_constant_at_its_operators_path():
    _, made = _constants("""{ x = Input {2} ; labels = Input {2}
        y = (x + 1) * 2
        n = !x
        ce = CrossEntropyWithSoftmax (labels, y - 0.5) * 3 }""")
    # y = Times (y.TimesArgs[0] = Plus (x, 1), 2) -> the 1 at y.TimesArgs[0], the 2 at y;
    # !x = Minus (1, x); the criterion's operand y - 0.5 at its argument outProbVectorSequence
    assert made == {"_y.TimesArgs[0]": ((1,), False, [1.0]), "_y": ((1,), False, [2.0]),
                    "_n": ((1,), False, [1.0]),
                    "_ce.TimesArgs[0].outProbVectorSequence": ((1,), False, [0.5]),
                    "_ce": ((1,), False, [3.0])}


def test_a_top_n_classification_error_holds_its_n_as_a_constant():
    # CNTK.core.bs:507: ClassificationError (labels, z, topN = 5) is a node of three inputs,
    # the third Constant (topN) made inside the node's record at the argument inputs of
    # _AsNodes (ConvNet_CIFAR10/baseline.txt:213: inputs.inputs[2], [1 x 1]); topN = 1 has two
    net, made = _constants("""{ labels = Input {4} ; z = Input {4}
        top2 = ClassificationError (labels, z, topN = 2)
        errs = ClassificationError (labels, z) }""")
    assert made == {"inputs.inputs[2]": ((1, 1), False, [2.0])}
    feed(net.nodes["labels"], np.eye(4, dtype=np.float32)[[2, 3]])
    feed(net.nodes["z"], np.array([[0.1, 0.5, 0.3, 0.2], [0.4, 0.3, 0.2, 0.1]], np.float32))
    top2 = net.nodes["top2"]
    top2.forward()
    # (the first label is the 2nd highest output: no error; the second's is the lowest)
    assert np.asarray(top2.d).ravel().tolist() == [0.0, 1.0]


def test_numbers_given_to_clip_and_log_plus_are_constant_nodes():
    # CNTK.core.bs:649, 663: Clip's and LogPlus's inputs are _AsNodes (minValue : maxValue :
    # x), _AsNodes (leftMatrix : rightMatrix): a number is Constant {val}, [1 x 1], made at
    # _AsNodes' arr[i].res of the node record's member inputs (the record names from scratch,
    # as top5Errs' inputs.inputs[2] in ConvNet_CIFAR10's log); two at one path: '_' before
    net, made = _constants("""{ x = Input {3}
        y = Clip (0, 1, x) ; w = LogPlus (x, 2) }""")
    assert sorted(made.values()) == [((1, 1), False, [0.0]), ((1, 1), False, [1.0]),
                                     ((1, 1), False, [2.0])]
    assert sorted(made) == ["_inputs.arr[1].res", "inputs.arr[0].res", "inputs.arr[1].res"]
    x = np.array([[1.5, -2.0, 0.3]], np.float32)
    feed(net.nodes["x"], x)
    for name, want in (("y", np.clip(x, 0, 1)), ("w", np.logaddexp(x, 2))):
        net.nodes[name].forward()
        np.testing.assert_allclose(net.nodes[name].d, want, rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("example", sorted(LOGS))
def test_the_parameters_and_constants_are_those_of_cntk_exes_log(example):
    # every LearnableParameter of the log's first "Validating network" list (its parameters
    # and constants: 05_OneConvRegr's _rmse.z, MNISTClassifier's _out.s1 of s1 = x *
    # featScale) is one of ours by name, and ours are no more (the network from the config
    # the log echoes)
    log = _log(LOGS[example])
    first = log.index("Validating network.")
    block = log[first:log.index("Validating network", first + 30)]
    theirs = set(re.findall(r"Validating --> (\S+) = LearnableParameter\(\)", block))
    assert any(name.startswith("_") for name in theirs)
    with sd.parameter_registry(sd.ParameterRegistry()):
        build_network(_network_text(log), StadynLibrary())
        assert set(sd.get_parameters(grad_only=False)) == theirs


_SUM = """{ x = Input {2} ; W = ParameterTensor {(2:2)}
    z = W * x + 0.5 ; y = z * 3 ; outputNodes = (y) }"""


def _saved(path: str, text: str, w: np.ndarray) -> None:
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(text, StadynLibrary())
        net.nodes["W"].d = w
        save_model(path, {k: v for k, v in net.nodes.items() if v.parent is not None},
                   {"x": net.nodes["x"]})


def test_a_model_file_holds_the_constants_and_loads_with_or_without_them(tmp_path):
    w = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
    x = np.array([[1.0, 2.0]], np.float32)
    want = (x @ w + 0.5) * 3
    with_constants, without = str(tmp_path / "new"), str(tmp_path / "old")
    _saved(with_constants, _SUM, w)
    # (a file of the network without its numbers: as an older Stadyn wrote, no '_z')
    _saved(without, _SUM.replace(" + 0.5", "").replace(" * 3", ""), w)
    # both constants, the sum's and the product's (y = z * 3: cntk.exe's ElementTimes reads
    # _y, ConstructFromRoots keeps it), as cntk.exe's model file holds every node
    assert {"_z", "_y"} <= set(sd.load(with_constants).parameters)
    for path in (with_constants, without):
        with sd.parameter_registry(sd.ParameterRegistry()):
            net = build_network(_SUM, StadynLibrary())
            load_model_parameters(path)
            net.nodes["x"].d = x
            y = net.nodes["y"]
            y.forward()
            np.testing.assert_allclose(np.asarray(y.d), want, rtol=1e-6, err_msg=path)
            assert not sd.get_parameters(grad_only=False)["_z"].need_grad


def test_a_model_file_holds_the_top_n_constant(tmp_path):
    # cntk.exe's ClassificationError node reads Constant (topN) as its third input
    # (CNTK.core.bs:507, EvaluationNodes.h:81), so its model file holds inputs.inputs[2]
    # (ConvNet_CIFAR10/baseline.txt:213); the error values are those of topN = 2
    text = """{ labels = Input {4} ; z = Input {4}
        top2 = ClassificationError (labels, z, topN = 2) }"""
    path = str(tmp_path / "top2")
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(text, StadynLibrary())
        save_model(path, {"top2": net.nodes["top2"]},
                   {"labels": net.nodes["labels"], "z": net.nodes["z"]})
    assert "inputs.inputs[2]" in set(sd.load(path).parameters)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(text, StadynLibrary())
        load_model_parameters(path)
        feed(net.nodes["labels"], np.eye(4, dtype=np.float32)[[2, 3]])
        feed(net.nodes["z"], np.array([[0.1, 0.5, 0.3, 0.2], [0.4, 0.3, 0.2, 0.1]],
                                      np.float32))
        top2 = net.nodes["top2"]
        top2.forward()
        assert np.asarray(top2.d).ravel().tolist() == [0.0, 1.0]


def test_numbers_given_by_name_to_plus_minus_element_times_and_comparisons_are_constants():
    # CNTK.core.bs:461, 465-466, 524-529, 650, 680: Plus, Minus, ElementTimes, Less, ...,
    # ColumnElementTimes and Scale take their inputs through _AsNodes (_ : y), so a number is
    # Constant {val}, [1 x 1], at inputs.arr[i].res, as Clip's (the values unchanged: NumPy)
    net, made = _constants("""{ x = Input {3}
        p = Plus (x, 1) ; t = ElementTimes (x, 2) ; m = Minus (4, x) ; l = Less (x, 0)
        s = Scale (3, x) }""")
    assert sorted(made.values()) == [((1, 1), False, [v]) for v in (0.0, 1.0, 2.0, 3.0, 4.0)]
    assert {k.lstrip("_") for k in made} == {"inputs.arr[0].res", "inputs.arr[1].res"}
    x = np.array([[1.5, -2.0, 0.0]], np.float32)
    feed(net.nodes["x"], x)
    for name, want in (("p", x + 1), ("t", x * 2), ("m", 4 - x), ("l", (x < 0) * 1.0),
                       ("s", 3 * x)):
        net.nodes[name].forward()
        np.testing.assert_allclose(net.nodes[name].d, want, rtol=1e-6, err_msg=name)


def test_constants_at_one_path_are_named_in_cntk_exes_walk_of_its_own_nodes():
    # cntk.exe names nodes as ConstructFromRoots reaches them, breadth first from the roots
    # (ComputationNetworkScripting.cpp:106-176), a taken name getting '_' before it
    # (ComputationNetwork.h:911-925); it walks its own nodes: Clip (0, 5, x) and Plus (x, 1)
    # are both one step below a, and each one's constants one step below it (_AsNodes:
    # inputs.arr[i].res).  a's walk: a, Clip, Plus, 0, 5, x, 1: the Clip's 5 takes
    # inputs.arr[1].res, the Plus's 1 the next name (Stadyn's Clip is several ops: its 5
    # lies deeper in them than the Plus's 1)
    _, made = _constants("""{ x = Input {2}
        a = ElementTimes (Clip (0, 5, x), Plus (x, 1)) }""")
    assert {k: v[2] for k, v in made.items()} == {
        "inputs.arr[0].res": [0.0], "inputs.arr[1].res": [5.0], "_inputs.arr[1].res": [1.0]}
    # the arguments swapped: the Plus comes first, and its 1 takes the name
    _, made = _constants("""{ x = Input {2}
        a = ElementTimes (Plus (x, 1), Clip (0, 5, x)) }""")
    assert {k: v[2] for k, v in made.items()} == {
        "inputs.arr[0].res": [0.0], "inputs.arr[1].res": [1.0], "_inputs.arr[1].res": [5.0]}
    # an if's two numbers at one path (its own node takes the path): 'then' before 'else'
    # (BrainScriptEvaluator.cpp:589-596: If (cond, then, else))
    _, made = _constants("""{ x = Input {2}
        r = [ z = if x > 0 then 3 else 4 ].z }""")
    assert {k: v[2] for k, v in made.items()} == {
        "_r.z.if": [0.0], "_r.z": [3.0], "__r.z": [4.0]}


def test_a_one_element_constant_read_from_a_model_file_scales_by_the_files_value(tmp_path):
    # a [1 x 1] Constant (or an operator's number) is cntk.exe's LearnableParameter: the model
    # file holds it and loading the file sets it; the product (_scaled: ElementTimes of a
    # one-element constant, 05_OneConvRegr's featScaled = Constant (0.00390625) .* features)
    # must read the node, not the number the config wrote.  The file is written by the same
    # network with other numbers: the run computes with the file's (NumPy)
    def text(c: float, n: float, b: float) -> str:
        return f"""{{ x = Input {{3}}
            cs = Constant ({c}) ; s = cs .* x ; t = x * {n} ; p = Constant ({b}) + x }}"""
    path = str(tmp_path / "m")
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(text(5, 7, -4), StadynLibrary())
        save_model(path, {k: net.nodes[k] for k in ("s", "t", "p")}, {"x": net.nodes["x"]})
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(text(2, 3, 1), StadynLibrary())
        load_model_parameters(path)
        x = np.array([[1.0, -2.0, 0.5]], np.float32)
        feed(net.nodes["x"], x)
        for name, want in (("s", 5 * x), ("t", 7 * x), ("p", x - 4)):
            net.nodes[name].forward()
            np.testing.assert_allclose(np.asarray(net.nodes[name].d), want, err_msg=name)


def _old_constants_network():
    """The network of tests/fixtures/brainscript/constants_2edf55c6 (its make_model.py, which
    wrote model.dnn with Stadyn 2edf55c6), the folder and the script's module."""
    import importlib.util
    from stadyn.brainscript import parse_config
    from stadyn.brainscript._blocks import command_config
    from stadyn.brainscript._command_network import CommandNetwork
    folder = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript",
                          "constants_2edf55c6")
    spec = importlib.util.spec_from_file_location("make_model",
                                                  os.path.join(folder, "make_model.py"))
    writer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(writer)
    network = CommandNetwork(command_config(parse_config(writer.CONFIG), "T").network, 0.0)
    return network, folder


def _a(network, x):
    feed(network.net.nodes["x"], x)
    network.net.nodes["a"].forward()
    return np.asarray(network.net.nodes["a"].d)


def test_a_model_file_of_2edf55c6_reads_its_constants_at_one_path_by_the_names_it_gave():
    # tests/fixtures/brainscript/constants_2edf55c6/model.dnn, written by Stadyn 2edf55c6
    # (before a2b35f54 ordered constants at one path by cntk.exe's walk): the Clip's 5 under
    # _inputs.arr[1].res and the Plus's 1 under inputs.arr[1].res, the other way round from
    # today's names; read by name, a = clip (x, 0, 1) * (x + 5): [[8, 0]]
    x = np.array([[3.0, -2.5]], np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        network, folder = _old_constants_network()
        load_model_parameters(os.path.join(folder, "model.dnn"),
                              untagged_names=network.library.untagged_file_names)
        np.testing.assert_array_equal(_a(network, x), np.clip(x, 0, 5) * (x + 1))  # [[12, -0]]
        values = sd.get_parameters(grad_only=False)
        assert values["inputs.arr[1].res"].d.ravel().tolist() == [5.0]   # (today's names)
        assert values["_inputs.arr[1].res"].d.ravel().tolist() == [1.0]


def test_a_model_file_written_now_is_tagged_and_read_by_its_names(tmp_path):
    # a file saved today carries names:2 and is read by name, not through the old names; the
    # file's values (edited here, so that a swap would show) land where they were saved
    from stadyn.brainscript._model_files import NAMES_VERSION
    from stadyn.serialize import load
    x = np.array([[3.0, -2.5]], np.float32)
    path = str(tmp_path / "m.dnn")
    with sd.parameter_registry(sd.ParameterRegistry()):
        network, _ = _old_constants_network()
        sd.get_parameters(grad_only=False)["inputs.arr[1].res"].d = np.full((1, 1), 4.0, np.float32)
        save_model(path, *network.model_file_parts())
        assert NAMES_VERSION == 2 and any(
            "names:2" in tags for tags in load(path, registry=sd.ParameterRegistry()).tags.values())
    with sd.parameter_registry(sd.ParameterRegistry()):
        network, _ = _old_constants_network()
        assert network.library.untagged_file_names     # (an untagged file would be renamed)
        load_model_parameters(path, untagged_names=network.library.untagged_file_names)
        np.testing.assert_array_equal(_a(network, x), np.clip(x, 0, 4) * (x + 1))


def test_a_write_command_with_a_model_file_of_2edf55c6_computes_with_its_constants(tmp_path):
    # the same file through a write command (the runner's model loading): a = [[12, -0]]
    import io
    from stadyn.brainscript._runner import run
    folder = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript",
                          "constants_2edf55c6")
    (tmp_path / "x.txt").write_text("|x 3 -2.5\n")
    config = tmp_path / "w.cntk"
    config.write_text(f"""command = W
W = [ action = "write" ; modelPath = "{folder}/model.dnn" ; outputPath = "{tmp_path}/out"
  outputNodeNames = (a) ; minibatchSize = 1
  BrainScriptNetworkBuilder = [ x = Input {{2}}
    a = ElementTimes (Clip (0, 5, x), Plus (x, 1)) ; outputNodes = (a) ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "{tmp_path}/x.txt"
    input = [ x = [ dim = 2 ; format = "dense" ] ] ] ]
""")
    run(config, [], out=io.StringIO())
    written = (tmp_path / "out.a").read_text().split()
    np.testing.assert_array_equal([float(v) for v in written], [12.0, 0.0])


def test_a_parameter_file_written_now_is_read_by_its_names(tmp_path):
    # save_model writes a parameter file for a graph model files cannot hold: no tags, so
    # its names are taken as they are (not as an untagged model file's)
    x = np.array([[3.0, -2.5]], np.float32)
    path = str(tmp_path / "m.params")
    with sd.parameter_registry(sd.ParameterRegistry()):
        _old_constants_network()
        sd.get_parameters(grad_only=False)["inputs.arr[1].res"].d = np.full((1, 1), 4.0,
                                                                             np.float32)
        sd.save_parameters(path)
    with sd.parameter_registry(sd.ParameterRegistry()):
        network, _ = _old_constants_network()
        load_model_parameters(path, untagged_names=network.library.untagged_file_names)
        np.testing.assert_array_equal(_a(network, x), np.clip(x, 0, 4) * (x + 1))
