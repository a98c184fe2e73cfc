"""NNabla's learning-rate schedulers (stadyn.schedules) where Stadyn refuses what NNabla would
compute as nonsense; their values are held to NNabla 1.39's in tests/compat
(nnabla_utils.py::learning_rate_schedulers)."""

import pytest

from stadyn.schedules import (CosineScheduler, ExponentialScheduler, LinearWarmupScheduler,
                              PolynomialScheduler)


def test_a_fractional_power_past_max_iter_is_an_error_not_a_complex_rate():
    s = PolynomialScheduler(0.1, 100, 0.5)
    assert s.get_learning_rate(100) == 0.0
    with pytest.raises(ValueError, match="iteration 101 is past max_iter=100"):
        s.get_learning_rate(101)


def test_an_even_power_past_max_iter_keeps_the_formula():
    assert PolynomialScheduler(1.0, 10, 2).get_learning_rate(15) == pytest.approx(0.25)


@pytest.mark.parametrize("make", [lambda: PolynomialScheduler(0.1, 0, 1.0),
                                  lambda: CosineScheduler(0.1, -5),
                                  lambda: ExponentialScheduler(0.1, 0.9, iter_interval=0),
                                  lambda: LinearWarmupScheduler(CosineScheduler(0.1, 10), -1)])
def test_a_zero_or_negative_length_is_refused_when_made(make):
    with pytest.raises(ValueError, match="must be .*positive"):
        make()


def test_a_warmup_of_zero_iterations_is_no_warmup():
    # NNabla 1.39 multiplies only while iter < warmup_iter: with 0, never (its
    # learning_rate_scheduler.py; case nnabla_user_39b.user39_warmup_length_from_args)
    inner = CosineScheduler(0.1, 10)
    w = LinearWarmupScheduler(inner, 0)
    assert [w.get_learning_rate(i) for i in range(12)] == [inner.get_learning_rate(i)
                                                           for i in range(12)]
