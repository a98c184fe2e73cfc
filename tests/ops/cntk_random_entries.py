"""Harness entries of CNTK's random ops (``stadyn/ops/_random_like.py``: ``rand_like``,
``randn_like``, ``gumbel_like``, ``bernoulli_like``, ``random_sample``,
``random_sample_inclusion_frequency``), ranking criteria (``stadyn/ops/_ranking.py``:
``lambda_rank``, ``ndcg_at_1``, and ``cntk_sequence_columns``, the columns they read from
sequences) and ``EpochAccumulator`` (``stadyn/ops/_cntk_stateful.py``).

The random ones get checks: shape, dtype, support, and the moments of many draws within six
standard errors of the distribution's (the Gumbel's mean is ``loc + euler_gamma * scale``, its
variance ``pi^2 scale^2 / 6``).  The deterministic ones get NumPy references:
``random_sample_inclusion_frequency`` solves ``sum(1 - (1 - p)^t) = n`` by NumPy's bisection, and
the ranking criteria run CNTK 2.7's algorithm sample by sample (:func:`ranking_reference`), the
algorithm whose values and gradients ``tests/compat/compat_cases/cntk_ranking.py`` holds to
CNTK 2.7's own.
"""

from __future__ import annotations

import math

import numpy as np

_RNG = np.random.default_rng(2718)


def _zeros(*shape):
    return np.zeros(shape, np.float32)


def _within(estimate, expected, sd, n, what):
    bound = 6 * sd / math.sqrt(n) + 1e-9
    assert abs(estimate - expected) < bound, f"{what}: {estimate}, expected {expected} +- {bound}"


def _like(inputs, outputs):
    x, y = inputs[0], outputs[0]
    assert y.shape == x.shape and y.dtype == np.float32     # the harness feeds float32
    return y.astype(np.float64).ravel()


def check_rand_like(inputs, outputs, low=0.0, high=1.0, seed=-1):
    y = _like(inputs, outputs)
    assert (y >= low).all() and (y < high).all()
    width = high - low
    _within(y.mean(), (low + high) / 2, width / math.sqrt(12), y.size, "mean")
    _within(y.var(), width ** 2 / 12, width ** 2 / math.sqrt(180), y.size, "variance")


def check_randn_like(inputs, outputs, mu=0.0, sigma=1.0, seed=-1):
    y = _like(inputs, outputs)
    _within(y.mean(), mu, sigma, y.size, "mean")
    _within(y.var(), sigma ** 2, sigma ** 2 * math.sqrt(2), y.size, "variance")


def check_gumbel_like(inputs, outputs, loc=0.0, scale=1.0, seed=-1):
    y = _like(inputs, outputs)
    assert np.isfinite(y).all()
    sd = math.pi * scale / math.sqrt(6)
    _within(y.mean(), loc + 0.5772156649015329 * scale, sd, y.size, "mean")
    # the Gumbel's excess kurtosis is 12/5: the variance's standard error is sd^2 sqrt(2 + 12/5)
    _within(y.var(), sd ** 2, sd ** 2 * math.sqrt(2 + 2.4), y.size, "variance")


def check_bernoulli_like(inputs, outputs, p=0.5, seed=-1):
    y = _like(inputs, outputs)
    assert set(np.unique(y)) <= {0.0, 1.0}
    _within(y.mean(), p, math.sqrt(p * (1 - p)), y.size, "frequency of 1")


def check_random_sample(inputs, outputs, num_samples=1, allow_duplicates=True, seed=-1):
    w, rows = inputs[0].astype(np.float64), outputs[0]
    assert rows.shape == (num_samples, w.size) and rows.dtype == np.float32
    assert set(np.unique(rows)) <= {0.0, 1.0} and (rows.sum(1) == 1).all()
    picks = rows.argmax(1)
    assert (w[picks] > 0).all(), "a class of weight 0 was drawn"
    if not allow_duplicates:
        assert len(set(picks.tolist())) == num_samples, "duplicates without allow_duplicates"
        return
    p = w / w.sum()
    for c in range(w.size):
        _within((picks == c).mean(), p[c], math.sqrt(p[c] * (1 - p[c])), num_samples,
                f"class {c}")


def ref_random_sample_inclusion_frequency(weights, num_samples=1, allow_duplicates=True):
    p = weights.astype(np.float64) / weights.sum()
    if allow_duplicates:
        return (num_samples * p).astype(np.float32)
    log_miss = np.log1p(-np.minimum(p, 1 - 1e-12))

    def distinct(t):
        return float(np.sum(-np.expm1(t * log_miss)))
    lo = hi = float(num_samples)
    while distinct(hi) < num_samples - 1e-9:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if distinct(mid) < num_samples else (lo, mid)
    return (-np.expm1(0.5 * (lo + hi) * log_miss)).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# CNTK 2.7's ranking algorithm, one sample at a time
# ---------------------------------------------------------------------------------------------
def _groups(group):
    runs, previous = [], None
    for i, g in enumerate(group):
        if int(g) != previous:
            runs.append([])
            previous = int(g)
        runs[-1].append(i)
    return runs


def _ranks(scores, gains):
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), float(gains[i])))
    ranks = [0] * len(scores)
    for r, i in enumerate(order):
        ranks[i] = r
    return ranks


def ranking_reference(kind, output, gain, group):
    """``(value, gradient of the scores)`` of ``lambda_rank`` or ``ndcg_at_1`` (gradient None)."""
    s, g, q = (np.asarray(a, np.float64).reshape(-1) for a in (output, gain, group))
    runs = _groups(q)
    total, state = 0.0, []
    for idx in runs:
        ranks, gains = _ranks(s[idx], g[idx]), g[idx]
        if kind == "ndcg_at_1":
            if gains[0] != 0.0:
                total += gains[ranks.index(0)] / gains[0]
            continue
        ideal = float(sum(gn / math.log(2.0 + k) for k, gn in enumerate(gains)))
        dcg = float(sum(gn / math.log(2.0 + r) for gn, r in zip(gains, ranks)))
        if ideal != 0.0:
            total += dcg / ideal
        state.append((idx, ranks, ideal))
    n = len(s)
    if kind == "ndcg_at_1":
        return total / len(runs) * 100 * n, None
    value = (1.0 - total / len(runs)) * 100 * n
    pairs = []
    for idx, _, _ in state:
        for a, i in enumerate(idx):
            if g[i] > g[idx[-1]]:
                pairs.extend(s[i] - s[j] for j in idx[a + 1:])
    lambdas = -1.0 / (1.0 + np.exp(np.asarray(pairs, np.float64)))
    out, used = np.zeros(n), 0
    for idx, ranks, ideal in state:
        for a, i in enumerate(idx):
            if not g[i] > g[idx[-1]]:
                continue
            di = math.log(2.0 + ranks[a])
            for b in range(a + 1, len(idx)):
                j = idx[b]
                if abs(g[i] - g[j]) < 1e-7:
                    continue
                dj = math.log(2.0 + ranks[b])
                delta = (g[i] - g[j]) * (di - dj) / (di * dj)
                lam = lambdas[used] * (0.0 if ideal == 0.0 else abs(delta / ideal))
                used += 1
                out[i] += lam
                out[j] -= lam
    return value, out.reshape(-1, 1)


def ref_lambda_rank(output, gain, group):
    return np.float32(ranking_reference("lambda_rank", output, gain, group)[0])


def ref_ndcg_at_1(output, gain, group):
    return np.float32(ranking_reference("ndcg_at_1", output, gain, group)[0])


def ranking_case(n, groups, ties=False, seed=0):
    """Scores, gains listed decreasing within each group, and group ids, each ``(n, 1)``."""
    rng = np.random.default_rng(seed)
    sizes = np.diff(np.sort(np.concatenate([[0, n], rng.choice(np.arange(1, n), groups - 1,
                                                                replace=False)])))
    q = np.repeat(np.arange(groups) * 3 + 1, sizes).astype(np.float32)
    g = np.concatenate([np.sort(rng.integers(0, 4, k))[::-1] for k in sizes]).astype(np.float32)
    s = (rng.integers(0, 3, n) if ties else rng.standard_normal(n)).astype(np.float32)
    return s[:, None], g[:, None], q[:, None]


def ref_cntk_sequence_columns(x, lengths):
    """CNTK 2.7's packed minibatch, filled stream by stream: a sequence joins the first stream
    whose steps so far leave room for it within the longest sequence's, else opens a stream;
    column ``t * streams + s`` is stream ``s``'s step ``t``, 0 after a stream's sequences."""
    width = int(max(lengths))
    streams = []                                        # each: the (sequence, step) it holds
    for b, n in enumerate(int(k) for k in lengths):
        steps = [(b, t) for t in range(n)]
        room = [st for st in streams if len(st) + n <= width]
        if room:
            room[0].extend(steps)
        else:
            streams.append(steps)
    out = np.zeros((len(streams) * width,) + x.shape[2:])
    for s, held in enumerate(streams):
        for t, (b, j) in enumerate(held):
            out[t * len(streams) + s] = x[b, j]
    return out


def _padded(lengths, sample=(1,), steps=None, seed=0):
    rng = np.random.default_rng(seed)
    lengths = np.array(lengths, np.int64)
    x = rng.standard_normal((len(lengths), steps or int(lengths.max())) + sample)
    for b, n in enumerate(lengths):
        x[b, n:] = 50.0                                  # padding the op must not read
    return x.astype(np.float32), lengths


def cntk_random_entries(Case, Entry):
    """The entries, built with test_ops.py's ``Case`` and ``Entry``."""
    like = "only the operand's shape is read: no gradient flows into it"
    weights = np.array([1.0, 0.0, 3.0, 2.0, 0.5], np.float32)
    rng = np.random.default_rng(7)
    return {
        "rand_like": Entry(
            [Case((_zeros(200, 50),)), Case((_zeros(4000),),
                                            {"low": -2.0, "high": 3.0, "seed": 5})],
            check=check_rand_like, random=True, no_grad=like),
        "randn_like": Entry(
            [Case((_zeros(100, 100),)), Case((_zeros(4000),), {"mu": 1.5, "sigma": 0.5,
                                                              "seed": 3})],
            check=check_randn_like, random=True, no_grad=like),
        "gumbel_like": Entry(
            [Case((_zeros(20000),)), Case((_zeros(50, 200),), {"loc": 2.0, "scale": 3.0,
                                                              "seed": 8})],
            check=check_gumbel_like, random=True, no_grad=like),
        "bernoulli_like": Entry(
            [Case((_zeros(100, 100),)), Case((_zeros(5000),),
                                             {"p": 0.2, "seed": 4}),
             Case((_zeros(30),), {"p": 1.0})],
            check=check_bernoulli_like, random=True, no_grad=like),
        "random_sample": Entry(
            [Case((weights,), {"num_samples": 6000, "allow_duplicates": True}),
             Case((weights,), {"num_samples": 4, "allow_duplicates": False, "seed": 2}),
             Case((np.ones(7, np.float32),), {"num_samples": 6, "allow_duplicates": False})],
            check=check_random_sample, random=True, no_grad="a draw has no gradient (CNTK's)"),
        "random_sample_inclusion_frequency": Entry(
            [Case((weights,), {"num_samples": 3, "allow_duplicates": True}),
             Case((weights,), {"num_samples": 3, "allow_duplicates": False}),
             Case((np.concatenate([np.full(50, 1000.0), np.full(50, 1.0)]).astype(np.float32),),
                  {"num_samples": 60, "allow_duplicates": False})],
            reference=ref_random_sample_inclusion_frequency, rtol=1e-5, atol=1e-6,
            no_grad="CNTK gives it no gradient"),
        "lambda_rank": Entry(
            [Case(ranking_case(9, 3)), Case(ranking_case(12, 4, ties=True, seed=1)),
             Case(ranking_case(1, 1, seed=2))],
            reference=ref_lambda_rank, rtol=1e-5, atol=1e-4,
            no_grad="LambdaRank's gradient is CNTK's rule, not the value's derivative: "
                    "tests/ops/test_ranking_ops.py checks it against CNTK's algorithm in both "
                    "modes"),
        "ndcg_at_1": Entry(
            [Case(ranking_case(9, 3)), Case(ranking_case(12, 4, ties=True, seed=1))],
            reference=ref_ndcg_at_1, rtol=1e-5, atol=1e-4, no_grad="a metric (CNTK's)"),
        "cntk_sequence_columns": Entry(
            [Case(_padded([1, 3, 2])), Case(_padded([4, 1, 1], (2,), seed=1)),
             Case(_padded([5, 1, 6, 4, 5, 2], seed=2)), Case(_padded([2, 1], steps=4, seed=3)),
             Case(_padded([3, 3], seed=4))],
            reference=ref_cntk_sequence_columns, grad_inputs=(0,),
            why_not_others="the lengths are counts"),
        # CNTK's EpochAccumulator: on a node's first run (or the same input again) the mean of
        # the samples; the running mean over runs: tests/brainscript/test_bs_crop.py
        "cntk_epoch_accumulator": Entry(
            [Case((rng.standard_normal((4, 3)).astype(np.float32),)),
             Case((rng.standard_normal((5, 2, 3)).astype(np.float32),))],
            reference=lambda x: x.mean(0),
            no_grad="a running mean over the epoch's runs (CNTK's node has no backward)"),
    }
