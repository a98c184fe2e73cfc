"""``lambda_rank`` and ``ndcg_at_1`` as catalog ops: values and LambdaRank gradients equal to
CNTK 2.7's algorithm run sample by sample (``cntk_random_entries.ranking_reference``, the
algorithm ``tests/compat/compat_cases/cntk_ranking.py`` holds to CNTK 2.7's numbers) in both
modes, the incoming gradient ignored as CNTK ignores it, and bad shapes refused."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from cntk_random_entries import ranking_case, ranking_reference, ref_cntk_sequence_columns


def _run(case, dynamic, scale=1.0):
    s, g, q = case
    score = sd.Variable.from_numpy_array(s, need_grad=True)
    gain, group = sd.Variable.from_numpy_array(g), sd.Variable.from_numpy_array(q)
    with sd.auto_forward(dynamic):
        loss = F.lambda_rank(score, gain, group)
        scaled = F.mul_scalar(loss, scale)
    if not dynamic:
        scaled.forward()
    scaled.backward()
    return float(loss.d), score.g.copy()


CASES = [ranking_case(n, k, ties=t, seed=i) for i, (n, k, t) in enumerate(
    [(6, 2, False), (10, 3, True), (16, 5, False), (16, 2, True), (3, 3, False), (25, 4, True)])]
# consecutive runs of the same id are one group; a repeated id after another is a new group
CASES.append((np.array([[0.3], [0.1], [0.9], [0.5], [0.2]], np.float32),
              np.array([[3], [1], [2], [2], [0]], np.float32),
              np.array([[1], [1], [2], [1], [1]], np.float32)))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("index", range(len(CASES)))
def test_lambda_rank_value_and_gradient_are_cntks(index, dynamic):
    value, grad = _run(CASES[index], dynamic)
    want_value, want_grad = ranking_reference("lambda_rank", *CASES[index])
    np.testing.assert_allclose(value, want_value, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_lambda_rank_ignores_the_incoming_gradient_as_cntk_does(dynamic):
    _, once = _run(CASES[2], dynamic)
    _, scaled = _run(CASES[2], dynamic, scale=-7.0)
    np.testing.assert_array_equal(once, scaled)
    assert np.abs(once).max() > 0


@pytest.mark.parametrize("index", range(len(CASES)))
def test_ndcg_at_1_is_cntks(index):
    with sd.auto_forward():
        v = F.ndcg_at_1(*(sd.Variable.from_numpy_array(a) for a in CASES[index]))
    np.testing.assert_allclose(float(v.d), ranking_reference("ndcg_at_1", *CASES[index])[0],
                               rtol=1e-5, atol=1e-4)


def test_a_ranking_input_of_the_wrong_shape_is_refused():
    s, g, q = CASES[0]
    with pytest.raises(ValueError, match="gain must be"):
        with sd.auto_forward():
            F.lambda_rank(*(sd.Variable.from_numpy_array(a) for a in (s, g[:-1], q)))


# Over sequences: the columns CNTK 2.7 packs them into (F.cntk_sequence_columns), one static
# graph run on minibatches of other lengths (other packings) as the dynamic mode runs each.
SEQUENCE_BATCHES = [(1, 3, 2), (4, 1, 2, 1), (3, 3), (2, 5, 1, 3, 2, 4)]


def _sequence_batch(lengths, seed):
    rng = np.random.default_rng(seed)
    scores = [rng.standard_normal((k, 1)).astype(np.float32) for k in lengths]
    gains = [np.sort(rng.integers(0, 4, (k, 1)), 0)[::-1].astype(np.float32) for k in lengths]
    groups = [np.sort(rng.integers(1, 3, (k, 1)), 0).astype(np.float32) for k in lengths]
    return scores, gains, groups


def _packed_reference(lengths, scores, gains, groups):
    """The value and each step's gradient from NumPy: the packed columns, CNTK's algorithm
    over them, each column's gradient back to the step it came from."""
    width = max(lengths)

    def padded(seqs):
        out = np.zeros((len(seqs), width, 1))
        for b, v in enumerate(seqs):
            out[b, :len(v)] = v
        return out

    ids = padded([np.arange(1, k + 1)[:, None] + 100 * b for b, k in enumerate(lengths)])
    where = ref_cntk_sequence_columns(ids, lengths).ravel()          # 0: a gap
    value, grad = ranking_reference("lambda_rank", *(ref_cntk_sequence_columns(padded(v), lengths)
                                                     for v in (scores, gains, groups)))
    steps = [np.zeros(k) for k in lengths]
    for col, at in enumerate(where.astype(int)):
        if at:
            steps[at // 100][at % 100 - 1] = grad[col, 0]
    return value, steps


def _sequence_loss():
    s = sd.sequence.input_variable(1, need_grad=True)
    g, q = sd.sequence.input_variable(1), sd.sequence.input_variable(1)
    columns = [F.cntk_sequence_columns(v, v.sequence_lengths) for v in (s, g, q)]
    return s, g, q, F.lambda_rank(*columns)


def test_lambda_rank_of_packed_sequences_is_cntks_in_both_modes():
    s, g, q, loss = _sequence_loss()                                 # one static graph
    for seed, lengths in enumerate(SEQUENCE_BATCHES):
        data = _sequence_batch(lengths, seed)
        want_value, want_steps = _packed_reference(lengths, *data)
        for v, d in zip((s, g, q), data):
            sd.sequence.feed(v, d)
        s.g = 0
        loss.forward()
        loss.backward()
        static = float(loss.d), np.asarray(s.g).copy()
        ds, dg, dq = (sd.sequence.input_variable(1, need_grad=k == 0) for k in range(3))
        for v, d in zip((ds, dg, dq), data):
            sd.sequence.feed(v, d)
        with sd.auto_forward():
            dynamic = F.lambda_rank(*(F.cntk_sequence_columns(v, v.sequence_lengths)
                                      for v in (ds, dg, dq)))
        dynamic.backward()
        for value, grad in (static, (float(dynamic.d), np.asarray(ds.g))):
            np.testing.assert_allclose(value, want_value, rtol=1e-5, atol=1e-4)
            for b, want in enumerate(want_steps):
                np.testing.assert_allclose(grad[b, :len(want), 0], want, rtol=1e-5, atol=1e-6)
                assert not grad[b, len(want):].any()
