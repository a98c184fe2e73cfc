"""``lambda_rank`` and ``ndcg_at_1`` as catalog ops: values and LambdaRank gradients equal to
CNTK 2.7's algorithm run sample by sample (``cntk_random_entries.ranking_reference``, the
algorithm ``tests/compat/compat_cases/cntk_ranking.py`` holds to CNTK 2.7's numbers) in both
modes, the incoming gradient ignored as CNTK ignores it, and bad shapes refused."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from cntk_random_entries import ranking_case, ranking_reference


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
