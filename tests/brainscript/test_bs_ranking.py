"""BrainScript's ranking criteria (CNTK.core.bs's ``LambdaRank`` and ``NDCG1Eval`` nodes, which
Tests/EndToEndTests/Text/IRMetric trains with) against CNTK 2.7's Python ``lambda_rank`` and
``ndcg_at_1``, the same ComputationNetworkLib nodes (``refgen_bs_ranking.py`` wrote
tests/fixtures/brainscript/ranking.json), and the ``BFF``/``SBFF`` macros of CNTK.core.bs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import build_network
from stadyn.brainscript._stadyn_library import StadynLibrary
from stadyn.train import feed
from cntk_repo_files import copy_cntk_file
from test_bs_ndl import _baseline, _build, _check_parameters

IR_METRIC = "Tests/EndToEndTests/Text/IRMetric"
REFS = json.loads((Path(__file__).parent.parent / "fixtures" / "brainscript" /
                   "ranking.json").read_text())

NETWORK = """g = Input {1} ; s = Input {1} ; q = Input {1}
    irm = LambdaRank (g, s, q, tag = 'criterion')
    ndcg = NDCG1Eval (g, s, q, tag = 'evaluation')"""


def _ref(name: str) -> np.ndarray:
    return np.asarray(REFS[name], dtype=np.float32)


def test_lambda_rank_and_ndcg_as_cntk():
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        nodes = build_network("{ " + NETWORK + " }", lib).nodes
        for name, ref in (("g", "gain"), ("s", "score"), ("q", "group")):
            feed(nodes[name], _ref(ref))
        nodes["s"].need_grad = True
        irm, ndcg = nodes["irm"], nodes["ndcg"]
        ndcg.forward()
        irm.forward()
        irm.backward()
        np.testing.assert_allclose(float(irm.d), REFS["lambda_rank"], rtol=1e-5)
        np.testing.assert_allclose(float(ndcg.d), REFS["ndcg_at_1"], rtol=1e-5)
        np.testing.assert_allclose(nodes["s"].g, _ref("lambda_rank_grad"), rtol=1e-4,
                                   atol=1e-6)
        assert lib.operation_of(irm) == "LambdaRank"
        assert lib.operation_of(ndcg) == "NDCG1Eval"


def test_ranking_of_one_step_sequences_is_per_document():
    # a network that uses recurrence makes every Input a sequence; a ranking reader's
    # documents are one-step sequences, each one sample of the criterion
    with sd.parameter_registry(sd.ParameterRegistry()):
        nodes = build_network("{ " + NETWORK + " ; d = PastValue (1, s) }",
                              StadynLibrary()).nodes
        for name, ref in (("g", "gain"), ("s", "score"), ("q", "group")):
            sd.sequence.feed(nodes[name], [row[None] for row in _ref(ref)])
        nodes["irm"].forward()
        nodes["ndcg"].forward()
        np.testing.assert_allclose(float(nodes["irm"].d), REFS["lambda_rank"], rtol=1e-5)
        np.testing.assert_allclose(float(nodes["ndcg"].d), REFS["ndcg_at_1"], rtol=1e-5)


def test_ranking_inputs_must_be_one_number_per_sample():
    with pytest.raises(ConfigError, match=r"LambdaRank: prediction must be one number per "):
        build_network("{ g = Input {1} ; s = Input {2} ; q = Input {1} ; "
                      "irm = LambdaRank (g, s, q) }", StadynLibrary())


def test_bff_macros_are_w_x_plus_b_and_its_sigmoid():
    # CNTK.core.bs: BFF (in, rows, cols) = [B = Parameter (rows, 1, initValue = 0) ;
    # W = Parameter (rows, cols) ; z = W * in + B], SBFF's Eh = Sigmoid (BFF (...).z)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    w = rng.normal(size=(3, 4)).astype(np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        nodes = build_network("{ x = Input {4} ; L = BFF (x, 3, 4) ; z = L.z ; B = L.B ; "
                              "W = L.W ; h = SBFF (x, 3, 4).Eh }", StadynLibrary()).nodes
        assert nodes["W"].shape == (4, 3) and nodes["B"].shape == (1, 3)   # CNTK's reversed
        assert float(np.abs(nodes["B"].d).sum()) == 0.0
        nodes["W"].d = w.T
        feed(nodes["x"], x)
        nodes["z"].forward()
        np.testing.assert_allclose(nodes["z"].d, x @ w.T, rtol=1e-5, atol=1e-6)
        nodes["h"].forward()
        assert nodes["h"].shape == (5, 3) and ((nodes["h"].d > 0) & (nodes["h"].d < 1)).all()


def test_ir_metric_network_has_cntk_exes_parameters(tmp_path):
    # Tests/EndToEndTests/Text/IRMetric: BFF records inside the config's own macros, named as
    # cntk.exe names them (Q.z.W, R1.l2.B, ...), "Training 8491209 parameters in 12 out of 12"
    config = copy_cntk_file(tmp_path, f"{IR_METRIC}/ir.cntk")
    _, lib, params = _build(config, "train", [f"DataDir={tmp_path}", f"RunDir={tmp_path}"])
    _check_parameters(params, _baseline(f"{IR_METRIC}/baseline.txt"))
    assert [lib.operation_of(n) for n in lib.tagged["criterion"]] == ["LambdaRank"]
    assert [lib.operation_of(n) for n in lib.tagged["evaluation"]] == ["NDCG1Eval"]


@pytest.mark.parametrize("case", range(len(REFS["sequences"])))
def test_ranking_of_sequences_reads_every_column_as_cntk(case):
    # CNTK's nodes take every column of the minibatch: the sequences packed into parallel
    # streams (first fit), the steps time-major across the streams, the gaps after a stream's
    # sequences included (CNTK 2.7's numbers, refgen_bs_ranking.py; cases 3 and 4 pack)
    ref = REFS["sequences"][case]
    with sd.parameter_registry(sd.ParameterRegistry()):
        nodes = build_network("{ " + NETWORK + " ; d = PastValue (1, s) }",
                              StadynLibrary()).nodes
        for name, key in (("g", "gain"), ("s", "score"), ("q", "group")):
            sd.sequence.feed(nodes[name], [np.asarray(v, np.float32)[:, None]
                                           for v in ref[key]])
        nodes["s"].need_grad = True
        nodes["ndcg"].forward()
        nodes["irm"].forward()
        nodes["irm"].backward()
        np.testing.assert_allclose(float(nodes["ndcg"].d), ref["ndcg_at_1"], rtol=1e-5)
        np.testing.assert_allclose(float(nodes["irm"].d), ref["lambda_rank"], rtol=1e-5)
        grad = np.asarray(nodes["s"].g)                    # (sequences, steps, 1), padded
        for b, want in enumerate(ref["lambda_rank_grad"]):
            np.testing.assert_allclose(grad[b, :len(want), 0], want, rtol=1e-4, atol=1e-6)
