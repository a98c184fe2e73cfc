"""The random, sampling and ranking ops (CNTK's ``cntk.random``, ``random_sample``,
``lambda_rank``, ``ndcg_at_1``) in files: a Stadyn model file holds them (a random stream --
CNTK's seeds -- draws on in the loaded graph from where it stood, as CNTK 2.7's loaded models
do; a plain seed starts again, NNabla's rule for a function set up anew), ONNX runs the random
ones with its own generator (the same distributions) and refuses the others naming the op and
the reason, and CNTK Functions holding them save and load through the compat layer."""

from __future__ import annotations

import json
import math
import os
import zipfile

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn.ops import RandomStream
from stadyn.serialize import ExportError, model_info, to_onnx_model


def _ranking_inputs():
    s = np.array([[0.5], [1.5], [-0.2], [2.0], [0.1]], np.float32)
    g = np.array([[3], [1], [0], [2], [2]], np.float32)
    q = np.array([[1], [1], [1], [4], [4]], np.float32)
    return s, g, q


_STREAMS = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_random_streams",
                        "streams.json")


@pytest.mark.usefixtures("fresh_parameters")
def test_a_model_file_holds_the_random_sampling_and_ranking_ops(tmp_path):
    x = sd.Variable((4, 3))
    s, g, q = (sd.Variable((5, 1)) for _ in range(3))
    w = sd.Variable((4,))
    streams = {"n": lambda v: F.randn_like(v, seed=RandomStream(8)),
               "su": lambda v: F.rand_like(v, -1.0, 1.0, seed=RandomStream(6)),
               "sb": lambda v: F.bernoulli_like(v, 0.5, seed=RandomStream(5))}
    outs = {"u": F.rand_like(x, -1.0, 1.0, seed=7), "gumbel": F.gumbel_like(x, 1.0, 2.0, seed=3),
            "b": F.bernoulli_like(x, 0.3, seed=2), "rows": F.random_sample(w, 3, False, seed=4),
            "srows": F.random_sample(w, 3, False, seed=RandomStream(4)),
            "freq": F.random_sample_inclusion_frequency(w, 2, False),
            "rank": F.lambda_rank(s, g, q), "ndcg": F.ndcg_at_1(s, g, q),
            **{k: make(x) for k, make in streams.items()}}
    feeds = dict(zip("sgq", _ranking_inputs()), x=np.zeros((4, 3), np.float32),
                 w=np.array([1.0, 2.0, 0.5, 4.0], np.float32))
    for name, v in (("x", x), ("s", s), ("g", g), ("q", q), ("w", w)):
        v.d = feeds[name]
    sd.forward_all(list(outs.values()))         # the first draws of each seed
    first = {k: v.d.copy() for k, v in outs.items()}
    # what the streams draw next: the same streams made again, run twice
    again_x = sd.Variable.from_numpy_array(feeds["x"])
    again_w = sd.Variable.from_numpy_array(feeds["w"])
    fresh = {k: make(again_x) for k, make in streams.items()}
    fresh["srows"] = F.random_sample(again_w, 3, False, seed=RandomStream(4))
    sd.forward_all(list(fresh.values()))
    sd.forward_all(list(fresh.values()))
    path = os.path.join(tmp_path, "random.stadyn")
    sd.save(path, outs, {"x": x, "s": s, "g": g, "q": q, "w": w})
    net = sd.load(path)
    got = net(**feeds)
    # CNTK 2.7: a model saved after k evaluations, loaded, first gives the original's
    # evaluation k (0-based): its file keeps where each stream stood
    with open(_STREAMS) as fh:
        assert json.load(fh)["files"]["uniform_like"]["loaded_first_is_evaluation"][1] == 1
    for key in fresh:
        np.testing.assert_array_equal(got[key], fresh[key].d, err_msg=key)
    for key in ("u", "gumbel", "b", "rows", "freq", "rank", "ndcg"):
        # a plain seed is the op's own: the loaded graph starts its stream again
        np.testing.assert_array_equal(got[key], first[key], err_msg=key)
    again = net(**feeds)
    assert not np.array_equal(again["u"], got["u"])          # and draws on
    assert not np.array_equal(again["su"], got["su"])
    np.testing.assert_array_equal(again["rank"], got["rank"])


def test_a_stream_made_at_an_offset_is_saved_there_in_a_version_3_file(tmp_path):
    x = sd.Variable.from_numpy_array(np.zeros((2, 3), np.float32))
    y = F.rand_like(x, seed=RandomStream(11, offset=6))
    path = os.path.join(tmp_path, "stream.stadyn")
    sd.save(path, {"y": y}, {"x": x})
    assert model_info(path).kind == "Stadyn model file (format version 3)"
    want = F.rand_like(sd.Variable.from_numpy_array(np.zeros((3, 3), np.float32)),
                       seed=RandomStream(11))
    want.forward()         # 9 numbers: the 6 skipped, then the first 3 of the loaded draw
    np.testing.assert_array_equal(sd.load(path)(x=np.zeros((1, 3), np.float32))["y"],
                                  want.d[2:])


def test_a_streams_state_that_is_not_its_seeds_is_refused_naming_the_file(tmp_path):
    x = sd.Variable.from_numpy_array(np.zeros((2, 3), np.float32))
    path = os.path.join(tmp_path, "stream.stadyn")
    sd.save(path, {"y": F.rand_like(x, seed=RandomStream(11))}, {"x": x})
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    network = json.loads(members["network.json"])
    stream = network["nodes"][0]["attrs"]["seed"]["$stream"]
    stream["seed"] = 12                                 # the state is seed 11's
    members["network.json"] = json.dumps(network).encode()
    bad = os.path.join(tmp_path, "bad.stadyn")
    with zipfile.ZipFile(bad, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(sd.ModelFileError, match=r"bad\.stadyn: .*node 0.*random stream's "
                                                 r"state: not the state of a CPU generator "
                                                 r"seeded 12"):
        sd.load(bad)


def _session(model):
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("make, mean, sd_", [
    (lambda x: F.rand_like(x, 2.0, 4.0, seed=1), 3.0, 2 / math.sqrt(12)),
    (lambda x: F.randn_like(x, -1.0, 0.5), -1.0, 0.5),
    (lambda x: F.bernoulli_like(x, 0.25, seed=5), 0.25, math.sqrt(0.25 * 0.75)),
    (lambda x: F.gumbel_like(x, 1.0, 2.0), 1.0 + 0.5772156649 * 2.0, math.pi * 2 / math.sqrt(6)),
], ids=["uniform", "normal", "bernoulli", "gumbel"])
def test_onnx_runs_the_random_ops_with_the_same_distribution(make, mean, sd_):
    pytest.importorskip("onnx")
    x = sd.Variable((200, 100))
    model = to_onnx_model({"y": make(x)}, {"x": x})
    (y,) = _session(model).run(None, {"x": np.zeros((200, 100), np.float32)})
    assert y.shape == (200, 100) and y.dtype == np.float32
    assert abs(y.mean() - mean) < 6 * sd_ / math.sqrt(y.size)
    assert abs(y.std() - sd_) < 0.05 * sd_


@pytest.mark.parametrize("name, make", [
    ("lambda_rank", lambda s, g, q: F.lambda_rank(s, g, q)),
    ("random_sample", lambda s, g, q: F.random_sample(F.reshape(s + g + q, (5,)), 2, True))],
    ids=["lambda_rank", "random_sample"])
def test_onnx_export_refuses_the_ranking_and_sampling_ops_naming_them(name, make):
    pytest.importorskip("onnx")
    s, g, q = (sd.Variable((5, 1)) for _ in range(3))
    with pytest.raises(ExportError, match=f"'{name}'.*ONNX has no"):
        to_onnx_model({"y": make(s, g, q)}, {"s": s, "g": g, "q": q})


def test_cntk_functions_holding_them_save_and_load(tmp_path):
    import stadyn.compat.cntk as C
    score, gain, group = (C.input_variable(1, name=n) for n in ("score", "gain", "group"))
    noisy = C.plus(score, C.random.normal_like(score, scale=0.01, seed=3), name="noisy")
    loss = C.lambda_rank(noisy, gain, group, name="rank")
    path = os.path.join(tmp_path, "rank.model")
    loss.save(path)
    loaded = C.load_model(path)
    s, g, q = _ranking_inputs()
    args = {a.name: a for a in loaded.arguments}
    got = loaded.eval({args["score"]: s, args["gain"]: g, args["group"]: q})
    want = loss.eval({score: s, gain: g, group: q})
    np.testing.assert_allclose(got, want, rtol=1e-6)     # both the first draws of seed 3
    assert loaded.find_by_name("noisy").op_name == "Plus"
