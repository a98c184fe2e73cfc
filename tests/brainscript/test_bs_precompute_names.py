"""Pre-computed nodes are saved under cntk.exe's node names, those its log lists.

cntk.exe names a ``Mean``/``InvStdDev`` node by where the network makes it: a member's own name
(Tests/EndToEndTests/Examples/Speech/TIMIT/CrossValidateSimpleNetwork/baseline.txt, the roots
of the network: ``MeanOfFeatures = Mean()``, ``InvStdOfFeatures = InvStdDev()``), or, made
inside a function, the member holding it, dot, the name in the function's definition
(Tests/EndToEndTests/Examples/Speech/AN4/LSTM/baseline.cpu.txt line 300: ``featNorm.xMean =
Mean()``; CNTK.core.bs's ``MeanVarNorm`` calls them ``mean`` and ``invStdDev``).  The model file
used ``mean/value``, ``invStdDev/value``, ``mean_1/value``; a file an older Stadyn wrote so
still loads.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

import stadyn as sd
from stadyn.brainscript._runner import run
from stadyn.parametric import ParameterRegistry

CONFIG = """command = fit:check
deviceId = -1 ; traceLevel = 1
modelPath = "$OutputDir$/Models/mvn"
fit = [
    action = "train"
    BrainScriptNetworkBuilder = [
        obs = Input {2} ; cls = Input {2}
        featNorm = MeanVarNorm (obs)
        scale = Mean (obs .* 3)
        logits = DenseLayer {2} (featNorm .* scale)
        logPrior = LogPrior (cls)
        ce = CrossEntropyWithSoftmax (cls, logits - logPrior)
        criterionNodes = (ce) ; outputNodes = (logits)
    ]
    SGD = [ minibatchSize = 5 ; learningRatesPerSample = 0.01 ; maxEpochs = 1 ]
    reader = [ readerType = "CNTKTextFormatReader" ; file = "$DataDir$/d.ctf" ; randomize = false
               input = [ obs = [ dim = 2 ; format = "dense" ]
                         cls = [ dim = 2 ; format = "dense" ] ] ]
]
check = [
    action = "test"
    reader = [ readerType = "CNTKTextFormatReader" ; file = "$DataDir$/d.ctf" ; randomize = false
               input = [ obs = [ dim = 2 ; format = "dense" ]
                         cls = [ dim = 2 ; format = "dense" ] ] ]
]
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("names")
    rng = np.random.default_rng(7)
    x = (rng.normal(0, 1, (20, 2)) * [2.0, 0.5] + [1.0, -3.0]).round(3)
    c = (x[:, 0] > 1.0).astype(int)
    (folder / "d.ctf").write_text("".join(f"|obs {a} {b} |cls {1 - k} {k}\n"
                                          for (a, b), k in zip(x, c)))
    (folder / "mvn.cntk").write_text(CONFIG)
    log = io.StringIO()
    run(folder / "mvn.cntk", [f"DataDir={folder}", f"OutputDir={folder}"], out=log)
    return folder, x, c, log.getvalue()


def _final(text: str) -> str:
    return re.search(r"^Final Results: .*$", text, re.M).group(0)


def test_the_model_file_names_pre_computed_values_as_the_log_does(trained):
    folder, x, c, text = trained
    logged = re.findall(r"^\t(\S+) = (?:Mean|InvStdDev)\(\)$", text, re.M)
    assert sorted(logged) == ["featNorm.invStdDev", "featNorm.mean", "logPrior._", "scale"]
    held = sd.load(str(folder / "Models" / "mvn")).parameters
    stats = {k: np.asarray(v.d) for k, v in held.items() if not v.need_grad and v.shape != (1,)}
    assert sorted(stats) == sorted(logged)
    # (beside them the [1] constant of obs .* 3, which the product reads, as cntk.exe's file)
    assert np.asarray(held["_scale.dataVectorSequence"].d).tolist() == [3.0]
    np.testing.assert_allclose(stats["featNorm.mean"], x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(stats["featNorm.invStdDev"], 1 / x.std(0), rtol=1e-5)
    np.testing.assert_allclose(stats["scale"], 3 * x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(stats["logPrior._"], [np.mean(c == 0), np.mean(c == 1)],
                               rtol=1e-6)


def test_a_model_file_with_an_older_stadyns_names_still_loads(trained):
    folder, _, _, text = trained
    # the same model as an older Stadyn saved it: the values under the names they were made
    # under, in the order made, and its hasComputed tags with them
    older = {"featNorm.mean": "mean/value", "featNorm.invStdDev": "invStdDev/value",
             "scale": "mean_1/value", "logPrior._": "mean_2/value"}
    registry = ParameterRegistry()
    model = sd.load(str(folder / "Models" / "mvn"), registry=registry)
    for new, old in older.items():
        registry.rename(new, old)
    tags = {k: [re.sub(r"^(\w+):([^:]+):", lambda m: f"{m[1]}:{older.get(m[2], m[2])}:", t)
                for t in v] for k, v in model.tags.items()}
    assert any("hasComputed:mean/value:true" in t for t in tags.values())
    old = folder / "old"
    (old / "Models").mkdir(parents=True)
    sd.save(str(old / "Models" / "mvn"), model.outputs, model.inputs, tags=tags)
    saved = sd.load(str(old / "Models" / "mvn")).parameters
    assert set(older.values()) <= set(saved) and not set(older) & set(saved)
    log = io.StringIO()
    run(folder / "mvn.cntk", [f"DataDir={folder}", f"OutputDir={old}", "command=check"],
        out=log)
    assert _final(log.getvalue()) == _final(text)


@pytest.mark.parametrize("selector,test", [("0", "FullUtterance"), ("1", "FullUtteranceLayers")])
def test_speech_lstms_pre_computed_nodes_take_their_expression_paths(selector, test, tmp_path):
    # Tests/EndToEndTests/Speech/LSTM/<test>/baseline.cpu.txt lists the PreCompute nodes:
    # z.featNorm.mean (modelSelector 0: featNorm = MeanVarNorm (features) in a model applied
    # as z = model (feashift)), z.x.x.mean (1: MeanVarNorm first in a Sequential), logPrior._:
    # cntk.exe names a node by the expression path it is made at (BrainScriptEvaluator.cpp:703,
    # 730: an argument at the call's path plus its parameter's name); before, both were z.mean
    from stadyn.brainscript import load_config, run_config
    from stadyn.brainscript._command_network import CommandNetwork
    from cntk_repo_files import cntk_file
    log = cntk_file(f"Tests/EndToEndTests/Speech/LSTM/{test}/baseline.cpu.txt").decode()
    theirs = sorted(set(re.findall(r"\t(\S+) = (?:Mean|InvStdDev)\(\)", log)))
    (tmp_path / "cntk.cntk").write_bytes(cntk_file("Tests/EndToEndTests/Speech/LSTM/cntk.cntk"))
    cfg = load_config(tmp_path / "cntk.cntk", ["DeviceId=-1", f"ConfigDir={tmp_path}",
                                               f"RunDir={tmp_path}", f"DataDir={tmp_path}",
                                               f"OutputDir={tmp_path}", "truncated=false",
                                               f"modelSelector={selector}"])
    with sd.parameter_registry(ParameterRegistry()):
        network = CommandNetwork(run_config(cfg).commands[0].network, 0.0)
        ours = sorted(network.precompute_name(p) for p in network.library.precompute_nodes)
    assert ours == theirs and len(ours) == 3


def test_a_model_file_of_01cf9a0_with_owner_names_still_loads():
    # tests/fixtures/brainscript/precompute_01cf9a0/model.dnn, written by Stadyn 01cf9a0 (its
    # make_model.py): the pre-computed values under z.mean, z.invStdDev (the first named node
    # reaching them), now z.x.x.mean, z.x.x.invStdDev (cntk.exe's expression paths)
    import importlib.util
    import os
    from stadyn.brainscript import parse_config
    from stadyn.brainscript._blocks import command_config
    from stadyn.brainscript._command_network import CommandNetwork
    from stadyn.brainscript._model_files import load_model_parameters
    folder = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript",
                          "precompute_01cf9a0")
    spec = importlib.util.spec_from_file_location("make_model",
                                                  os.path.join(folder, "make_model.py"))
    writer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(writer)
    with sd.parameter_registry(ParameterRegistry()):
        network = CommandNetwork(command_config(parse_config(writer.CONFIG), "T").network, 0.0)
        flags = load_model_parameters(os.path.join(folder, "model.dnn"),
                                      aliases=network.precompute_aliases)
        values = sd.get_parameters(grad_only=False)
        np.testing.assert_array_equal(values["z.x.x.mean"].d, writer.VALUES["mean"])
        np.testing.assert_array_equal(values["z.x.x.invStdDev"].d, writer.VALUES["invStdDev"])
        np.testing.assert_array_equal(values["p._"].d, writer.VALUES["_"])
        assert "z.mean" not in values
        assert flags.get("z.x.x.mean") is not None


def test_a_model_file_of_01cf9a0_with_nested_mean_var_norms_loads_each_pair_into_its_own():
    # tests/fixtures/brainscript/precompute_01cf9a0/model_nested.dnn, written by Stadyn 01cf9a0
    # (make_model_nested.py): two nested MeanVarNorm, all four values reached first by z;
    # 01cf9a0 gave the inner pair z.mean, z.invStdDev and the outer pair, whose guess was
    # taken, kept mean_1/value, invStdDev_1/value (as that script printed)
    import importlib.util
    import os
    from stadyn.brainscript import parse_config
    from stadyn.brainscript._blocks import command_config
    from stadyn.brainscript._command_network import CommandNetwork
    from stadyn.brainscript._model_files import load_model_parameters
    folder = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript",
                          "precompute_01cf9a0")
    spec = importlib.util.spec_from_file_location(
        "make_model_nested", os.path.join(folder, "make_model_nested.py"))
    writer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(writer)
    with sd.parameter_registry(ParameterRegistry()):
        network = CommandNetwork(command_config(parse_config(writer.CONFIG), "T").network, 0.0)
        names = [node.name for node in network.library.precompute_nodes]
        assert names == ["z.x.feat.mean", "z.x.feat.invStdDev", "z.x.mean", "z.x.invStdDev"]
        # only the first value with a guess is offered it, as 01cf9a0 gave it
        aliases = network.precompute_aliases
        assert aliases["z.x.feat.mean"] == ("z.mean", "mean/value")
        assert aliases["z.x.mean"] == "mean_1/value"
        assert aliases["z.x.invStdDev"] == "invStdDev_1/value"
        load_model_parameters(os.path.join(folder, "model_nested.dnn"), aliases=aliases)
        values = sd.get_parameters(grad_only=False)
        for name, expected in zip(names, writer.VALUES):
            np.testing.assert_array_equal(values[name].d, expected, err_msg=name)


def test_pre_computed_values_are_made_under_their_node_names():
    # the network alone (build_network, no command): the parameter registry holds the values
    # under cntk.exe's names already (Speech/LSTM/FullUtterance/baseline.cpu.txt lines 221-224:
    # z.featNorm.mean, z.featNorm.invStdDev, logPrior._), not mean/value, mean_1/value ...
    from stadyn.brainscript import StadynLibrary, build_network
    with sd.parameter_registry(ParameterRegistry()):
        build_network("""{ obs = Input {2} ; cls = Input {3}
            model (x) = { featNorm = MeanVarNorm (x) ; y = featNorm .* 2 }.y
            z = model (obs) ; scale = Mean (obs) ; logPrior = LogPrior (cls) }""",
                      StadynLibrary())
        names = sorted(k for k, v in sd.get_parameters(grad_only=False).items()
                       if not v.need_grad and v.shape != (1,))
    assert names == ["logPrior._", "scale", "z.featNorm.invStdDev", "z.featNorm.mean"]
