"""Reading CNTK 2.7's ``NDCG`` (``ndcg_at_1``) and ``ForwardBackward`` of ``LabelsToGraph``
(``forward_backward``, CNTK's CTC criterion) from model files:
``tests/fixtures/cntk_ranking_ctc/`` (``ndcg.model``, ``ctc.model`` and ``refs.npz``: inputs,
CNTK 2.7's outputs and the CTC gradient for the network output), written by the real CNTK 2.7
(``make_models.py`` there).

Before (8105dcf2) both files were refused: "CNTK functions no Stadyn op maps: NDCG",
"... ForwardBackward, LabelsToGraph".
"""

from __future__ import annotations

import os

import numpy as np

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_ranking_ctc")
REFS = dict(np.load(os.path.join(FIXTURES, "refs.npz")))


def _feed(name, m):
    feed = {}
    for a in m.arguments:
        key = f"{name}/{a.name}"
        feed[a] = REFS[key] if key in REFS else [
            REFS[f"{key}/{k}"] for k in range(len(REFS)) if f"{key}/{k}" in REFS]
    return feed


def test_ndcg_gives_cntks_value():
    m = C.load_model(os.path.join(FIXTURES, "ndcg.model"))
    assert m.root_function.op_name == "NDCG"
    assert [a.name for a in m.arguments] == ["score", "gain", "group"]
    np.testing.assert_allclose(np.asarray(m.eval(_feed("ndcg", m))).reshape(-1),
                               REFS["ndcg/output"].reshape(-1), rtol=1e-6)


def test_ctc_gives_cntks_value_and_gradient():
    m = C.load_model(os.path.join(FIXTURES, "ctc.model"))
    assert m.root_function.op_name == "ForwardBackward"
    feed = _feed("ctc", m)
    np.testing.assert_allclose(np.asarray(m.eval(feed)).reshape(-1),
                               REFS["ctc/output"].reshape(-1), rtol=1e-5)
    z = next(a for a in m.arguments if a.name == "z")
    got = m.grad(feed, wrt=[z])
    assert len(got) == 2
    for k, g in enumerate(got):
        np.testing.assert_allclose(np.asarray(g), REFS[f"ctc/grad/{k}"], rtol=1e-5, atol=1e-6)
