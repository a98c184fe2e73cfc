"""Ranking and retrieval criteria: ``lambda_rank`` (value and LambdaRank gradients),
``ndcg_at_1`` and ``cosine_distance_with_negative_samples`` (values and gradients)."""

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_ops import op_case


def _queries(r, sizes):
    """Scores, gains and group ids for groups of ``sizes``: gains distinct and decreasing in a
    group, its last 0 (CNTK's LambdaRank expects that order and pairs with the minimum)."""
    gains, groups = [], []
    for q, n in enumerate(sizes):
        g = np.sort(r.rand(n - 1, low=1.0, high=20.0))[::-1].round(2)
        gains.extend(list(g) + [0.0])
        groups.extend([q + 3] * n)
    n = sum(sizes)
    col = lambda v: np.asarray(v, np.float32).reshape(n, 1)  # noqa: E731
    return col(r.randn(n)), col(gains), col(groups)


@cntk_case(names=["cntk.losses.lambda_rank", "cntk.Function.grad", "cntk.Function.eval"],
           note="CNTK's LambdaRank gradient does not scale by the root gradient; both sides "
                "get the same random root")
def lambda_rank(C, r):
    r.touch("cntk.Function.grad", "cntk.Function.eval")
    group, gain = C.input_variable(1), C.input_variable(1)
    score = C.input_variable(1, needs_gradient=True)
    f = C.losses.lambda_rank(score, gain, group)
    s, g, q = _queries(r, [4, 3, 5])
    feed = {score: s, gain: g, group: q}
    value, (grad,) = r.cntk_forward_backward(f, feed, [score])
    doc = {score: np.array([[1], [2], [3], [4]], np.float32),
           gain: np.array([[7], [1], [3], [1]], np.float32),
           group: np.array([[1], [1], [2], [2]], np.float32)}
    return {"value": f.eval(feed), "shape": list(f.shape), "train_value": value,
            "grad": grad, "grad_of_sum": f.grad(feed, wrt=[score]),
            "documented": f.grad(doc, wrt=[score]), "documented_value": f.eval(doc)}


@cntk_case(names=["cntk.metrics.ndcg_at_1", "cntk.Function.eval"],
           note="the second group's top scores tie: CNTK ranks the lower gain first")
def ndcg_at_1(C, r):
    r.touch("cntk.Function.eval")
    group, score, gain = C.input_variable(1), C.input_variable(1), C.input_variable(1)
    f = C.metrics.ndcg_at_1(score, gain, group)
    s, g, q = _queries(r, [4, 3, 5, 2])
    s[4:6] = 5.0                                      # a tie at the top of group 2
    doc = {score: np.array([[2], [1], [3], [1]], np.float32),
           gain: np.array([[7], [1], [3], [1]], np.float32),
           group: np.array([[1], [1], [2], [2]], np.float32)}
    return {"value": f.eval({score: s, gain: g, group: q}), "shape": list(f.shape),
            "documented": f.eval(doc)}


op_case("cosine_distance_with_negative_samples",
        lambda C, x, y: C.cosine_distance_with_negative_samples(x, y, 1, 2), [(4,), (4,)],
        names=["cntk.losses.cosine_distance_with_negative_samples"])
op_case("cosine_distance_with_negative_samples__wrap",
        lambda C, x, y: C.cosine_distance_with_negative_samples(x, y, 2, 4), [(2, 3), (2, 3)],
        names=["cntk.losses.cosine_distance_with_negative_samples"],
        note="with 3 samples, shift 2 and 4 negatives the shifted samples wrap around twice")
