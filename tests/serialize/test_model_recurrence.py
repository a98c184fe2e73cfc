"""Model files hold recurrent networks: a ``recurrence`` node's step is stored as a graph of its
own (format version 2), the fused LSTM/GRU/RNN ops as ordinary nodes, and sequence inputs with
their lengths.  A saved network -- native layers, a CNTK-API model (``Function.save`` /
``load_model``), a BrainScript config's model file -- loads back and gives the original's
outputs on new minibatches of variable-length sequences; a damaged recurrence entry is one
``ModelFileError`` naming the file and the node."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
from stadyn import ModelFileError
from stadyn.graph import Subgraph

RNG = np.random.default_rng(7)


def _seqs(lengths, dim=3):
    return [RNG.standard_normal((n, dim)).astype(np.float32) for n in lengths]


def _run(y, x, data):
    x.d = data
    y.forward()
    return y.d.copy()


def _layers_model(x):
    h = L.Recurrence(L.LSTM(4, use_peepholes=True))(x)              # a recorded step graph
    g = L.Recurrence(L.GRU(2), go_backwards=True, initial_state=0.3)(x)   # fused GRU op
    r = L.Recurrence(L.LSTM(4))(x)                                   # torch's fused LSTM
    e = L.Recurrence(L.RNNStep(2, activation=F.relu))(x)             # fused RNN op
    return (L.Dense(2)(sd.sequence.last(h) + sd.sequence.first(r))
            + sd.sequence.reduce_sum(g) + sd.sequence.reduce_max(e))


def _format_version(path) -> int:
    with zipfile.ZipFile(path) as zf:
        return json.loads(zf.read("format.json"))["version"]


def test_a_layers_model_round_trips_in_both_modes(tmp_path):
    x = sd.sequence.input_variable(3)
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.seed(3)
        y = _layers_model(x)
    ops = {n.spec.name for n in Subgraph([y]).nodes}
    assert {"recurrence", "cntk_lstm_sequence", "cntk_gru_sequence",
            "cntk_rnn_sequence"} <= ops
    batches = [_seqs([3, 1, 5]), _seqs([2, 7]), _seqs([5, 3, 1, 2])]
    expected = [_run(y, x, b) for b in batches]
    # the same model run define-by-run on the same parameters gives the same numbers
    for b, want in zip(batches, expected):
        with sd.parameter_registry(sd.ParameterRegistry()), sd.auto_forward():
            xd = sd.sequence.input_variable(3)
            xd.d = b
            sd.seed(3)               # the same parameters
            np.testing.assert_allclose(_layers_model(xd).d, want, rtol=1e-5, atol=1e-6)
    path = tmp_path / "rec.stadyn"
    sd.save(path, {"y": y}, {"x": x})
    assert _format_version(path) == 2
    net = sd.load(path)
    assert list(net.inputs) == ["x"] and net.inputs["x"].sequence_lengths is not None
    for b, want in zip(batches, expected):
        np.testing.assert_array_equal(net(x=b)["y"], want)
    # loaded inside a dynamic block, its outputs feed define-by-run code alike
    with sd.auto_forward():
        net2 = sd.load(path, batch_size=2)
    np.testing.assert_array_equal(net2(x=batches[1])["y"], expected[1])
    info = sd.serialize.model_info(path)
    assert info.op_counts["recurrence"] == 1 and info.kind.endswith("(format version 2)")


def test_a_saved_recurrence_matches_numpy(tmp_path):
    # going backwards, h_t = tanh(x_t W + h_{t+1} U + c) from h = 0.1, with c computed outside
    # the loop from a constant (the step captures a hoisted value), and a second state summing h
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    u = RNG.standard_normal((4, 4)).astype(np.float32) * 0.5
    b = RNG.standard_normal(4).astype(np.float32)
    x = sd.sequence.input_variable(3)
    W, U, B = (sd.Variable.from_numpy_array(a) for a in (w, u, b))
    c = F.tanh(B)

    def step(h, s, xt):
        h2 = F.tanh(F.affine(xt, W) + F.affine(h, U) + c)
        return h2, s + h2
    hs, ss = sd.sequence.recurrence(step, [x], [0.1, 0.0], [(4,), (4,)], go_backwards=True)
    y = sd.sequence.first(ss) + sd.sequence.last(hs)
    path = tmp_path / "np.stadyn"
    sd.save(path, {"y": y, "h": hs}, {"x": x})
    data = _seqs([4, 1, 3])
    out = sd.load(path)(x=data)
    for k, seq in enumerate(data):
        h, steps = np.full(4, 0.1, np.float32), {}
        for t in reversed(range(len(seq))):
            h = np.tanh(seq[t] @ w + h @ u + np.tanh(b))
            steps[t] = h
        h_all = np.array([steps[t] for t in range(len(seq))])
        np.testing.assert_allclose(out["h"][k, :len(seq)], h_all, rtol=1e-5, atol=1e-6)
        assert not out["h"][k, len(seq):].any()          # padded steps are 0
        np.testing.assert_allclose(out["y"][k], h_all.sum(0) + h_all[-1], rtol=1e-5, atol=1e-5)


def test_cudnn_style_stacks_round_trip(tmp_path):
    # CNTK's optimized_rnnstack over a sequence input and NNabla's time-major PF.lstm
    import stadyn.parametric_functions as PF
    from stadyn.ops import rnnstack_weight_count
    x = sd.sequence.input_variable(3)
    n = rnnstack_weight_count(3, 4, num_layers=2, bidirectional=True, recurrent_op="gru")
    w = sd.Variable.from_numpy_array(RNG.standard_normal((n // 4, 4)).astype(np.float32) * 0.3)
    y = sd.sequence.reduce_sum(sd.sequence.optimized_rnnstack(x, w, 4, 2, bidirectional=True,
                                                              recurrent_op="gru"))
    with sd.parameter_registry(sd.ParameterRegistry()):
        xt = sd.Variable((5, 2, 3))
        h0, c0 = (sd.Variable.from_numpy_array(np.zeros((1, 1, 2, 4), np.float32))
                  for _ in range(2))
        yl = PF.lstm(xt, h0, c0)[0]
    sd.save(tmp_path / "s.stadyn", {"y": y, "yl": yl}, {"x": x, "xt": xt})
    net = sd.load(tmp_path / "s.stadyn")
    for lengths in ([2, 5, 3], [6, 1]):
        data, frames = _seqs(lengths), RNG.standard_normal((5, 2, 3)).astype(np.float32)
        want = _run(y, x, data), _run(yl, xt, frames)
        got = net(x=data, xt=frames)
        np.testing.assert_array_equal(got["y"], want[0])
        np.testing.assert_array_equal(got["yl"], want[1])


def test_plain_models_stay_format_version_1(tmp_path):
    x = sd.Variable((2, 3))
    sd.save(tmp_path / "p.stadyn", F.relu(x), x)
    assert _format_version(tmp_path / "p.stadyn") == 1


def test_a_cntk_api_recurrent_model_saves_and_loads(tmp_path):
    import stadyn.compat.cntk as C
    x = C.sequence.input_variable(3, name="x")
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(4, use_peepholes=True)),
                             C.layers.Recurrence(C.layers.GRU(3), go_backwards=True),
                             C.layers.Fold(C.layers.RNNStep(2)),
                             C.layers.Dense(2)])(x)
    batches = [_seqs([3, 1, 5]), _seqs([6, 2])]
    expected = [z.eval({x: b}) for b in batches]
    path = str(tmp_path / "z.model")
    z.save(path)
    loaded = C.load_model(path)
    (arg,) = loaded.arguments
    assert arg.name == "x"
    for b, want in zip(batches, expected):
        np.testing.assert_array_equal(np.asarray(loaded.eval({arg: b})), np.asarray(want))


@pytest.mark.slow
def test_a_brainscript_lstm_config_writes_a_model_file_that_loads(tmp_path):
    # ATIS.cntk's BS.RNNs.RecurrentLSTMPStack, a loop written in BrainScript (one recurrence
    # node with a recorded step): the model file written after training is now the whole
    # network, and loads to the numbers the config's own network gives with its parameters
    from stadyn.brainscript import StadynLibrary, build_network, command_config, load_config, run
    examples = Path(__file__).resolve().parents[2] / "examples" / "brainscript"
    sys.path.insert(0, str(examples))
    try:
        import make_data
    finally:
        sys.path.remove(str(examples))
    make_data.atis(str(tmp_path / "ATIS.train.ctf"), 8, 1, lengths=(3, 5))
    overrides = [f"DataDir={tmp_path}", f"OutputDir={tmp_path / 'out'}", "command=Train",
                 "Train.SGD.maxEpochs=1"]
    run(examples / "ATIS.cntk", overrides, out=io.StringIO())
    model = tmp_path / "out" / "ATIS.slot.lstm"
    assert sd.serialize.is_model_file(model)
    net = sd.load(model)
    assert sd.serialize.model_info(model).op_counts["recurrence"] >= 1

    source = command_config(load_config(examples / "ATIS.cntk", overrides), "Train").network
    reg = sd.ParameterRegistry()
    with sd.parameter_registry(reg):
        library = StadynLibrary()
        built = build_network(source, library)
        sd.load(model, registry=reg)               # the trained parameters, by name
    names = [built.name_of(v) for v in library.inputs]
    # the library makes inputs in cntk.exe's evaluation order (the criterion's labels first);
    # the model file lists them as the description writes them; both name the same inputs
    assert sorted(names) == sorted(net.inputs) and len(names) == len(net.inputs)
    for lengths in ([4, 2, 6], [1, 3]):
        feed = {}
        for name, v in zip(names, library.inputs):
            dim = v.shape[-1]
            feed[name] = [np.eye(dim, dtype=np.float32)[RNG.integers(0, dim, n)]
                          for n in lengths]
            v.d = feed[name]
        want = built.nodes["outputs"]
        with sd.parameter_registry(reg), sd.training(False):
            want.forward()
        got = net(**feed)["outputs"]
        np.testing.assert_allclose(got, want.d, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Damaged entries
# ---------------------------------------------------------------------------------------------
def _saved_recurrence(tmp_path):
    x = sd.sequence.input_variable(2)
    (h,) = sd.sequence.recurrence(lambda s, u: F.tanh(s + u), [x], [0.0], [(2,)])
    path = tmp_path / "r.stadyn"
    sd.save(path, {"h": h}, {"x": x})
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    return path, members, json.loads(members["network.json"])


def _rewrite(path, members, network=None, fmt=None):
    members = dict(members)
    if network is not None:
        members["network.json"] = json.dumps(network).encode()
    if fmt is not None:
        members["format.json"] = json.dumps(fmt).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _recurrence_node(network):
    return next(n for n in network["nodes"] if n["op"] == "recurrence")


@pytest.mark.parametrize("damage, message", [
    (lambda node: node["attrs"]["step"].pop("outputs"),
     "attribute 'step' must be a graph (an object with variables, nodes and outputs)"),
    (lambda node: node["attrs"]["step"]["outputs"].append(0),
     "the step has 2 states and the node"),
    (lambda node: node["attrs"]["step"]["nodes"][0].update(op="no_such_op"),
     "graph node 0: unknown op 'no_such_op'"),
    (lambda node: node["attrs"]["step"]["variables"][0].update(kind="op"),
     "graph variable 0: must be a leaf record"),
    (lambda node: node["attrs"].update(step={"$tuple": [1]}),
     "attribute 'step' must be a graph"),
    (lambda node: node["attrs"]["step"].update(extra=1),
     "a graph must be an object with variables, nodes and outputs"),
    (lambda node: node["attrs"]["step"]["variables"][-1].update(shape=[1, 5]),
     "the file says (1, 5)"),
], ids=["no-outputs", "outputs-vs-inputs", "unknown-inner-op", "leaf-kind", "not-a-graph",
        "extra-key", "inner-shape"])
def test_a_damaged_recurrence_entry_is_one_error_naming_the_file(tmp_path, damage, message):
    path, members, network = _saved_recurrence(tmp_path)
    damage(_recurrence_node(network))
    _rewrite(path, members, network)
    with pytest.raises(ModelFileError) as info:
        sd.load(path)
    text = str(info.value)
    assert str(path) in text and "(recurrence)" in text and message in text, text


def test_version_2_fields_in_a_version_1_file_are_refused(tmp_path):
    path, members, network = _saved_recurrence(tmp_path)
    _rewrite(path, members, fmt={"format": "stadyn-model", "version": 1})
    with pytest.raises(ModelFileError, match=r"r\.stadyn: network\.json: variable 0: unknown "
                                             r"field\(s\) \['sequence'\]"):
        sd.load(path)


def test_lengths_that_name_no_sequence_input_are_refused(tmp_path):
    path, members, network = _saved_recurrence(tmp_path)
    lengths = next(v for v in network["variables"] if v["kind"] == "lengths")
    lengths["of"] = len(network["variables"]) - 1
    _rewrite(path, members, network)
    with pytest.raises(ModelFileError, match="lengths must name the sequence input"):
        sd.load(path)


# ---------------------------------------------------------------------------------------------
# A recurrent model written by CNTK 2.7 itself (make_cntk_recurrent.py)
# ---------------------------------------------------------------------------------------------
LEGACY = Path(__file__).resolve().parents[1] / "fixtures" / "legacy"


def test_a_cntk_written_recurrent_model_decodes_with_its_loops():
    # CNTK stores a Recurrence as a graph loop through PastValue / FutureValue; the decoder
    # reads it as such, and the import builds one recurrence per loop
    from stadyn.serialize import read_legacy_model
    path = LEGACY / "cntk_recurrent.model"
    counts = read_legacy_model(path).op_counts()
    assert counts["PastValue"] == 2 and counts["FutureValue"] == 1
    net = sd.load(path)
    assert net.info().op_counts["recurrence"] == 2
    assert net.inputs["x"].sequence_lengths is not None


def test_a_cntk_written_recurrent_model_gives_cntks_outputs():
    ref = np.load(LEGACY / "cntk_recurrent_outputs.npz")
    net = sd.load(LEGACY / "cntk_recurrent.model")
    seqs = [ref["x"][b, :n] for b, n in enumerate(ref["lengths"])]
    (y,) = net(x=seqs).values()
    np.testing.assert_allclose(y, ref["y"], rtol=1e-5, atol=1e-6)
