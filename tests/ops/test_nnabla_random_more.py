"""``rand_gamma``/``rand_beta``/``rand_binomial`` (stadyn/ops/_random_more.py): the moments of
the drawn distributions against their analytic values (the compat cases compare with NNabla's
sample moments), and the seeding rule in both modes."""

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F

N = 200_000


@pytest.mark.parametrize("k,theta", [(0.3, 1.0), (1.0, 1.0), (4.0, 0.5)])
def test_gamma_moments_are_the_distributions(k, theta):
    with sd.auto_forward():
        g = F.rand_gamma(k, theta, shape=(N,), seed=11).d
    assert g.dtype == np.float32 and (g >= 0).all()
    # mean k*theta, variance k*theta^2; bounds are 6 standard errors
    assert abs(g.mean() - k * theta) < 6 * np.sqrt(k) * theta / np.sqrt(N)
    assert abs(g.var() / (k * theta * theta) - 1) < 0.05


def test_beta_moments_are_the_distributions():
    a, b = 2.0, 5.0
    with sd.auto_forward():
        x = F.rand_beta(a, b, shape=(N,), seed=3).d
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    assert ((x >= 0) & (x <= 1)).all()
    assert abs(x.mean() - mean) < 6 * np.sqrt(var / N)
    assert abs(x.var() / var - 1) < 0.05


def test_binomial_values_and_mean():
    with sd.auto_forward():
        x = F.rand_binomial(5, 0.2, shape=(N,)).d
    assert set(np.unique(x).tolist()) <= {0.0, 1.0, 2.0, 3.0, 4.0, 5.0}
    assert abs(x.mean() - 1.0) < 6 * np.sqrt(5 * 0.2 * 0.8 / N)


def test_a_seeded_draw_repeats_in_dynamic_mode_and_continues_in_a_static_graph():
    with sd.auto_forward():
        a, b = F.rand_gamma(shape=(20,), seed=5).d, F.rand_gamma(shape=(20,), seed=5).d
    assert np.array_equal(a, b)
    y = F.rand_beta(shape=(20,), seed=5)
    y.forward()
    first = y.d.copy()
    y.forward()
    assert not np.array_equal(first, y.d)


def test_bad_parameters_are_one_clear_error():
    with pytest.raises(ValueError, match="rand_gamma: k and theta must be > 0"):
        with sd.auto_forward():
            F.rand_gamma(-1.0, shape=(2,))
