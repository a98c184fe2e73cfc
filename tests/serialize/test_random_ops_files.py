"""The random, sampling and ranking ops (CNTK's ``cntk.random``, ``random_sample``,
``lambda_rank``, ``ndcg_at_1``) in files: a Stadyn model file holds them (a seeded stream starts
again from its seed in the loaded graph), ONNX runs the random ones with its own generator (the
same distributions) and refuses the others naming the op and the reason, and CNTK Functions
holding them save and load through the compat layer."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn.ops import RandomStream
from stadyn.serialize import ExportError, to_onnx_model


def _ranking_inputs():
    s = np.array([[0.5], [1.5], [-0.2], [2.0], [0.1]], np.float32)
    g = np.array([[3], [1], [0], [2], [2]], np.float32)
    q = np.array([[1], [1], [1], [4], [4]], np.float32)
    return s, g, q


@pytest.mark.usefixtures("fresh_parameters")
def test_a_model_file_holds_the_random_sampling_and_ranking_ops(tmp_path):
    x = sd.Variable((4, 3))
    s, g, q = (sd.Variable((5, 1)) for _ in range(3))
    w = sd.Variable((4,))
    outs = {"u": F.rand_like(x, -1.0, 1.0, seed=7), "n": F.randn_like(x, seed=RandomStream(8)),
            "gumbel": F.gumbel_like(x, 1.0, 2.0, seed=3), "b": F.bernoulli_like(x, 0.3, seed=2),
            "rows": F.random_sample(w, 3, False, seed=4),
            "freq": F.random_sample_inclusion_frequency(w, 2, False),
            "rank": F.lambda_rank(s, g, q), "ndcg": F.ndcg_at_1(s, g, q)}
    feeds = dict(zip("sgq", _ranking_inputs()), x=np.zeros((4, 3), np.float32),
                 w=np.array([1.0, 2.0, 0.5, 4.0], np.float32))
    for name, v in (("x", x), ("s", s), ("g", g), ("q", q), ("w", w)):
        v.d = feeds[name]
    sd.forward_all(list(outs.values()))         # the first draws of each seed
    first = {k: v.d.copy() for k, v in outs.items()}
    path = os.path.join(tmp_path, "random.stadyn")
    sd.save(path, outs, {"x": x, "s": s, "g": g, "q": q, "w": w})
    net = sd.load(path)
    got = net(**feeds)
    for key in outs:        # every seed is the op's own: the loaded graph starts each stream again
        np.testing.assert_array_equal(got[key], first[key], err_msg=key)
    again = net(**feeds)
    assert not np.array_equal(again["u"], got["u"])          # and draws on
    np.testing.assert_array_equal(again["rank"], got["rank"])


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
