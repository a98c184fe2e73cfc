"""``BS.Network.Load``, ``BS.Network.CloneFunction`` and ``BS.Network.Edit`` (CNTK.core.bs; CNTK's
``ComputationNetworkScripting.cpp``): a model written by ``stadyn train`` and a CNTK 2.7 model
(``tests/fixtures/legacy/cntk_named_mlp.model``, with the outputs CNTK computed for it) loaded as
records of their nodes, copied with frozen, learnable or shared parameters, and edited."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn._errors import ConfigError
from stadyn.brainscript import build_network
from stadyn.brainscript._runner import run
from stadyn.brainscript._stadyn_library import StadynLibrary
from stadyn.train import feed

LEGACY = Path(__file__).resolve().parents[1] / "fixtures" / "legacy"

READER = """reader = [ readerType = "CNTKTextFormatReader" ; file = "data.txt" ; randomize = false
    input = [ features = [ dim = 4 ; format = "dense" ] ;
              labels = [ dim = 2 ; format = "dense" ] ] ]"""

TRAIN = f"""deviceId = -1
modelPath = "Models/net"
train = [ action = "train"
  BrainScriptNetworkBuilder = [
    features = Input {{4}} ; labels = Input {{2}}
    h = DenseLayer {{3, activation = ReLU}} (features)
    z = LinearLayer {{2}} (h)
    ce = CrossEntropyWithSoftmax (labels, z)
    errs = ClassificationError (labels, z)
    criterionNodes = (ce) ; evaluationNodes = (errs) ; outputNodes = (z) ]
  SGD = [ epochSize = 0 ; minibatchSize = 16 ; learningRatesPerSample = 0.05 ; maxEpochs = 2 ]
  {READER} ]
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A folder with CTF data and ``Models/net``, trained by ``stadyn train``."""
    folder = tmp_path_factory.mktemp("net")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(int)
    (folder / "data.txt").write_text("".join(
        f"|features {' '.join(f'{v:.4f}' for v in row)} |labels {1 - k} {k}\n"
        for row, k in zip(x, y)))
    _run(folder, "command = train\n" + TRAIN)
    return folder, np.round(x, 4), y


def _run(folder: Path, text: str) -> str:
    (folder / "cmd.cntk").write_text(text)
    out = io.StringIO()
    cwd = Path.cwd()
    try:
        os.chdir(folder)
        run(str(folder / "cmd.cntk"), out=out)
    finally:
        os.chdir(cwd)
    return out.getvalue()


def test_a_test_command_on_a_loaded_model_is_the_models(trained):
    folder, x, y = trained
    log = _run(folder, "command = viaLoad:viaTrain\n" + TRAIN + f"""
viaLoad = [ action = "test"
  BrainScriptNetworkBuilder = [
    labels = Input {{2}}
    m = BS.Network.Load ("Models/net")
    final = Hardmax (m.z)
    errs = ClassificationError (labels, final, tag = "evaluation") ]
  {READER} ]
viaTrain = [ action = "test" ; evalNodeNames = errs ; {READER} ]
""")
    rates = [float(r) for r in re.findall(r"Final Results: .* errs = ([0-9.]+)% \* 64", log)]
    z = sd.load(str(folder / "Models" / "net"))(features=x)["z"]
    expected = 100 * np.mean(z.argmax(-1) != y)
    assert rates == pytest.approx([expected, expected], abs=1e-3)


def _parameters_of(root) -> dict[str, sd.Variable]:
    leaves = {id(v) for n in sd.graph.topological_nodes([root]) for v in n.inputs}
    return {k: v for k, v in sd.get_parameters(grad_only=False).items() if id(v) in leaves}


@pytest.mark.parametrize("treatment", ["constant", "learnable", "shared"])
def test_clone_function_copies_freezes_or_shares_the_parameters(trained, treatment):
    folder, x, _ = trained
    model = sd.load(str(folder / "Models" / "net"))
    expected = model(features=x[:5])["z"]
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network(f"""{{ m = BS.Network.Load ("{folder}/Models/net")
            f = BS.Network.CloneFunction (m.features, {{ out = m.z }}, parameters = "{treatment}")
            x = Input {{4}} ; y = f (x).out ; again = f (x).out }}""", lib)
        y, original = net.nodes["y"], net.record["m"]["z"]
        feed(net.nodes["x"], x[:5])
        y.forward()
        np.testing.assert_allclose(y.d, expected, rtol=1e-6)
        ours, theirs = _parameters_of(y), _parameters_of(original)
        assert len(ours) == len(theirs) == 4
        shared = {id(v) for v in ours.values()} & {id(v) for v in theirs.values()}
        assert len(shared) == (4 if treatment == "shared" else 0)
        assert all(v.need_grad == (treatment != "constant") for v in ours.values())
        # each call copies again (CNTK: "multiple uses of the lambda will not share")
        again = {id(v) for v in _parameters_of(net.nodes["again"]).values()}
        assert bool(again & {id(v) for v in ours.values()}) == (treatment == "shared")
        assert "m.z" not in net.nodes and net.name_of(net.nodes["x"]) == "x"


def test_a_frozen_clone_stays_put_while_the_new_layer_trains(trained):
    folder, _, _ = trained
    before = sd.load(str(folder / "Models" / "net")).parameters
    log = _run(folder, "command = adapt\n" + TRAIN + f"""
adapt = [ action = "train" ; modelPath = "Models/adapted"
  BrainScriptNetworkBuilder = [
    m = BS.Network.Load ("Models/net")
    frozen = BS.Network.CloneFunction (m.features, m.h, parameters = "constant")
    features = Input {{4}} ; labels = Input {{2}}
    z = LinearLayer {{2}} (frozen (features))
    ce = CrossEntropyWithSoftmax (labels, z)
    criterionNodes = (ce) ]
  SGD = [ epochSize = 0 ; minibatchSize = 16 ; learningRatesPerSample = 0.05 ; maxEpochs = 1 ]
  {READER} ]
""")
    assert "Training 8 parameters in 2 parameter tensors." in log      # the new layer only
    after = sd.load(str(folder / "Models" / "adapted")).parameters
    frozen = [v for k, v in after.items() if not v.need_grad]
    assert len(frozen) == 2
    for v in frozen:      # the hidden layer's W and b, as loaded
        assert any(np.array_equal(v.d, w.d) for w in before.values())


def test_edit_replaces_a_node_and_remakes_what_reads_it(trained):
    folder, x, _ = trained
    model = sd.load(str(folder / "Models" / "net"))
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(f"""{{ m = BS.Network.Load ("{folder}/Models/net")
            e = BS.Network.Edit (m, BS.Network.Editing.ReplaceLinksToNode (m.h, Sigmoid (m.h)), m.z)
            n = BS.Network.Edit (m, BS.Network.Editing.ReplaceLinksToNamedNode ("h", Tanh (m.h)),
                                 m.z)
            z = e.z ; z0 = m.z ; zt = n.z ; h = e.h }}""", StadynLibrary())
        feed(net.record["m"]["features"], x[:3])
        out = {k: (net.nodes[k].forward(), net.nodes[k].d.copy())[1] for k in ("z", "z0", "zt")}
        assert net.nodes["h"] is net.record["m"]["h"]          # what the edit did not touch
    h = model(features=x[:3])["h"]
    w, b = model.parameters["z.W"].d, model.parameters["z.b"].d      # cntk.exe's node names
    np.testing.assert_allclose(out["z"], (1 / (1 + np.exp(-h))) @ w + b, rtol=1e-5)
    np.testing.assert_allclose(out["zt"], np.tanh(h) @ w + b, rtol=1e-5)
    np.testing.assert_allclose(out["z0"], model(features=x[:3])["z"], rtol=1e-6)   # not in place


def test_a_cntk_model_loads_by_node_name():
    ref = np.load(LEGACY / "cntk_names_outputs.npz")
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(f"""{{ m = BS.Network.Load ("{LEGACY}/cntk_named_mlp.model")
            head = BS.Network.CloneFunction (m.act, m.out, parameters = "shared")
            a = Input {{8}} ; y = head (a) ; act = m.act ; prob = m.prob }}""", StadynLibrary())
        feed(net.nodes["features"], ref["in"])      # the loaded input keeps its name
        feed(net.nodes["a"], ref["combine/act"])
        for name, key in (("act", "combine/act"), ("prob", "model/prob"), ("y", "combine/out")):
            with sd.graph.training(False):       # CNTK's eval: batch normalisation's averages
                net.nodes[name].forward()
            np.testing.assert_allclose(net.nodes[name].d, ref[key], rtol=1e-4, atol=1e-6)
        assert "twice" not in net.record["m"]          # two nodes have that name: neither


@pytest.mark.parametrize("text, words", [
    ('m = BS.Network.Load ("nowhere.model")', "the model file 'nowhere.model' does not exist"),
    ('m = BS.Network.Load ("{net}") ; f = BS.Network.CloneFunction (m.h, m.features)',
     "no output depends on input 1 \\('h'\\)"),
    ('m = BS.Network.Load ("{net}") ; f = BS.Network.CloneFunction (m.features, m.z, '
     'parameters = "frozen")', "parameters must be 'learnable', 'constant' or 'shared'"),
    ('m = BS.Network.Load ("{net}") ; f = BS.Network.CloneFunction (m.features, m.z) ; '
     'y = f (m.z, m.z)', "takes 1 input\\(s\\), got 2"),
    ('x = Input {{4}} ; e = BS.Network.Edit (x, x, x)', "inputModel must be a network"),
    ('m = BS.Network.Load ("{net}") ; features = Input {{4}} ; z = m.z',
     "two different nodes are named 'features'"),
])
def test_mistakes_name_the_line(trained, text, words):
    folder, _, _ = trained
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match=words) as err:
            build_network("{\n" + text.format(net=folder / "Models" / "net") + "\n}",
                          StadynLibrary(), "net.bs")
    assert (err.value.path, err.value.line) == ("net.bs", 2)


def test_the_loaded_graph_is_stadyns_own(trained):
    """A loaded network's nodes are ordinary Stadyn Variables: a Python op applies to them."""
    folder, x, _ = trained
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(f'{{ m = BS.Network.Load ("{folder}/Models/net") ; z = m.z }}',
                            StadynLibrary())
        feed(net.nodes["features"], x[:2])
        total = F.sum(net.nodes["z"])
        total.forward()
        assert total.d.shape == ()


def test_a_whole_loaded_network_trains_on_with_its_criterion(trained):
    """Speech/LSTM's cntk.cntk: ``BrainScriptNetworkBuilder = (BS.Network.Load (...))``; the
    loaded losses are the criteria, its metrics the evaluation nodes (CNTK's model file named
    them; Stadyn's holds the ops)."""
    folder, x, y = trained
    log = _run(folder, "command = more\n" + TRAIN + f"""
more = [ action = "train" ; modelPath = "Models/more"
  BrainScriptNetworkBuilder = (BS.Network.Load ("Models/net"))
  SGD = [ epochSize = 0 ; minibatchSize = 64 ; learningRatesPerSample = 0.001 ; maxEpochs = 1 ]
  {READER} ]
""")
    assert "Training criterion:   ce = CrossEntropyWithSoftmax" in log
    errs = float(re.search(r"Finished Epoch\[ 1 of 1\]: \[Training\] ce = [0-9.]+ \* 64; "
                           r"errs = ([0-9.]+)%", log)[1])
    # (one minibatch: before its update)
    z = sd.load(str(folder / "Models" / "net"))(features=x)["z"]
    assert errs == pytest.approx(100 * np.mean(z.argmax(-1) != y), abs=1e-3)
    assert "Evaluation criterion: errs = ClassificationError" in log


def test_inputs_beside_a_loaded_sequence_model_are_sequences(tmp_path):
    """CNTK's Inputs all have the sequence axis; Stadyn makes them sequences where the network
    uses sequence functions, or (ATIS.cntk's Test command) loads a model of sequences."""
    from stadyn.brainscript._command_network import CommandNetwork
    from stadyn.brainscript._config import BrainScriptSource
    from stadyn.brainscript._model_files import save_model

    for model, hidden in (("seq", "RecurrentLSTMLayer {4} (features)"), ("flat", "features")):
        with sd.parameter_registry(sd.ParameterRegistry()):
            made = CommandNetwork(BrainScriptSource(f"""[ features = Input {{3}}
                labels = Input {{2}} ; z = LinearLayer {{2}} ({hidden})
                ce = CrossEntropyWithSoftmax (labels, z) ]"""), 0.0)
            save_model(str(tmp_path / model), *made.model_file_parts())
        with sd.parameter_registry(sd.ParameterRegistry()):
            net = build_network(f"""{{ labels = Input {{2}}
                m = BS.Network.Load ("{tmp_path / model}")
                errs = ClassificationError (labels, m.z)
                f = BS.Network.CloneFunction (m.features, m.z, parameters = "constant")
                x = Input {{3}} ; y = f (x) }}""", StadynLibrary())
            assert (net.nodes["labels"].sequence_lengths is not None) == (model == "seq")
            # the copy of the recurrence computes what the loaded one does, on its own weights
            x = np.random.default_rng(0).normal(size=(2, 5, 3) if model == "seq" else (2, 3))
            y, z = net.nodes["y"], net.record["m"]["z"]
            feed(net.nodes["x"], x.astype(np.float32))
            feed(net.record["m"]["features"], x.astype(np.float32))
            y.forward()
            z.forward()
            np.testing.assert_allclose(y.d, z.d, rtol=1e-6)
            copies = _parameters_of(y)
            assert len(copies) == (5 if model == "seq" else 2)
            assert not {id(v) for v in copies.values()} & {id(v) for v in
                                                          _parameters_of(z).values()}
