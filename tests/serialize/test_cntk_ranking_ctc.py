"""Reading CNTK 2.7's ``NDCG`` (``ndcg_at_1``) and ``ForwardBackward`` of ``LabelsToGraph``
(``forward_backward``, CNTK's CTC criterion) from model files:
``tests/fixtures/cntk_ranking_ctc/`` (``ndcg.model``, ``ctc.model`` and ``refs.npz``: inputs,
CNTK 2.7's outputs and the CTC gradient for the network output), written by the real CNTK 2.7
(``make_models.py`` there).

Before (8105dcf2) both files were refused: "CNTK functions no Stadyn op maps: NDCG",
"... ForwardBackward, LabelsToGraph".  ``LambdaRank`` and ``NDCG`` on sequences:
``tests/fixtures/cntk_ranking_sequences/`` (``ranking.model``, ``refs.npz``, its
``make_model.py``), CNTK 2.7's values and gradients on minibatches it packs.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

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


SEQUENCES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_ranking_sequences")
SEQUENCE_REFS = dict(np.load(os.path.join(SEQUENCES, "refs.npz")))


@pytest.mark.parametrize("batch", range(3))
def test_ranking_of_sequences_gives_cntks_values_and_gradient(batch):
    # CNTK 2.7's LambdaRank and NDCG on sequences, read as its minibatch packs them (first
    # fit: lengths 1, 3, 2 and 4, 1, 2, 1 take fewer streams); 8ee3919c refused the file ("an
    # NDCG of other than one value per sample")
    m = C.load_model(os.path.join(SEQUENCES, "ranking.model"))
    feed = {a: [SEQUENCE_REFS[f"{batch}/{a.name}/{j}"] for j in range(6)
                if f"{batch}/{a.name}/{j}" in SEQUENCE_REFS] for a in m.arguments}
    out = {v.name: float(np.asarray(value)) for v, value in m.eval(feed).items()}
    for name in ("lambda_rank", "ndcg"):
        np.testing.assert_allclose(out[name], SEQUENCE_REFS[f"{batch}/{name}"], rtol=1e-5)
    score = next(a for a in m.arguments if a.name == "score")
    lambda_rank = next(o for o in m.outputs if o.name == "lambda_rank")
    got = C.combine([lambda_rank]).grad(feed, wrt=[score])
    for j, g in enumerate(got):
        np.testing.assert_allclose(np.asarray(g), SEQUENCE_REFS[f"{batch}/grad/{j}"],
                                   rtol=1e-5, atol=1e-6)


def test_lambda_rank_of_sequences_is_saved_in_cntks_format(tmp_path):
    # CNTK 2.7 saves a LambdaRank of sequences (and loads it back, computing what it computed);
    # Function.save wrote Stadyn's format instead, with a warning ("an op on a sequence the
    # writer has no sequence form for").  CNTK 2.7 reads the file written here and gives the
    # same value (checked by hand: -39.27895 for one sequence of scores 3, 1, 2).
    import warnings

    from stadyn.serialize import read_legacy_model
    s = C.sequence.input_variable(1, name="score")
    g = C.sequence.input_variable(1, name="gain", sequence_axis=s.dynamic_axes[1])
    q = C.sequence.input_variable(1, name="group", sequence_axis=s.dynamic_axes[1])
    path = str(tmp_path / "lambda_rank.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        C.lambda_rank(s, g, q, name="lambda_rank").save(path)
    assert read_legacy_model(path).format == "cntk-v2"
    m = C.load_model(path)
    assert (m.root_function.op_name, m.name) == ("LambdaRank", "lambda_rank")
    for batch in range(3):
        feed = {a: [SEQUENCE_REFS[f"{batch}/{a.name}/{j}"] for j in range(6)
                    if f"{batch}/{a.name}/{j}" in SEQUENCE_REFS] for a in m.arguments}
        np.testing.assert_allclose(float(np.asarray(m.eval(feed))),
                                   SEQUENCE_REFS[f"{batch}/lambda_rank"], rtol=1e-5)


@pytest.mark.parametrize("sequences", [False, True])
def test_ndcg_at_1_is_saved_in_cntks_format(tmp_path, sequences):
    # CNTK 2.7 saves an NDCG (of sequences too) and loads it back; Function.save wrote
    # Stadyn's format with a warning (no rule for ndcg_at_1; over sequences, none for
    # cntk_sequence_columns).  CNTK 2.7 read the files written here as its own NDCG and gave
    # the same values (400, 342.857, 600 on the three minibatches of sequences; 200 below)
    import warnings

    from stadyn.serialize import read_legacy_model
    make = C.sequence.input_variable if sequences else C.input_variable
    s = make(1, name="score")
    axis = {"sequence_axis": s.dynamic_axes[1]} if sequences else {}
    g, q = make(1, name="gain", **axis), make(1, name="group", **axis)
    path = str(tmp_path / "ndcg.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        C.ndcg_at_1(s, g, q, name="ndcg").save(path)
    assert read_legacy_model(path).format == "cntk-v2"
    m = C.load_model(path)
    assert (m.root_function.op_name, m.name) == ("NDCG", "ndcg")     # (as CNTK 2.7 shows it)
    if not sequences:
        # groups {1, 2} (top score's gain 1 of best 3) and {5} (2 of 2): mean 2/3, x 100 x 3
        v = {"score": [[1], [2], [5]], "gain": [[3], [1], [2]], "group": [[0], [0], [1]]}
        out = m.eval({a: np.array(v[a.name], np.float32) for a in m.arguments})
        np.testing.assert_allclose(float(np.asarray(out)), 200.0, rtol=1e-5)
        return
    for batch in range(3):
        feed = {a: [SEQUENCE_REFS[f"{batch}/{a.name}/{j}"] for j in range(6)
                    if f"{batch}/{a.name}/{j}" in SEQUENCE_REFS] for a in m.arguments}
        np.testing.assert_allclose(float(np.asarray(m.eval(feed))),
                                   SEQUENCE_REFS[f"{batch}/ndcg"], rtol=1e-5)
