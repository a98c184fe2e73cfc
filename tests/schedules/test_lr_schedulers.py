"""NNabla's learning-rate schedulers (stadyn.schedules) at the edges of their arguments, held to
NNabla 1.39's values; their ordinary values are held in tests/compat
(nnabla_utils.py::learning_rate_schedulers)."""

import pytest

from stadyn.schedules import (CosineScheduler, ExponentialScheduler, LinearWarmupScheduler,
                              PolynomialScheduler, StepScheduler)


def test_a_fractional_power_past_max_iter_is_an_error_not_a_complex_rate():
    s = PolynomialScheduler(0.1, 100, 0.5)
    assert s.get_learning_rate(100) == 0.0
    with pytest.raises(ValueError, match="iteration 101 is past max_iter=100"):
        s.get_learning_rate(101)


def test_an_even_power_past_max_iter_keeps_the_formula():
    assert PolynomialScheduler(1.0, 10, 2).get_learning_rate(15) == pytest.approx(0.25)


# NNabla 1.39's learning_rate_scheduler.py checks no length when made (values from
# /work/peers/nnabla, iterations 0, 1, 2, 5): a negative one gives its formula's numbers, a
# warm-up of -1 is none, and a zero length divides by zero when a rate is asked for
@pytest.mark.parametrize("make, expected", [
    (lambda: PolynomialScheduler(0.1, -4, 1.0), [0.1, 0.125, 0.15, 0.225]),
    (lambda: CosineScheduler(0.1, -5), [0.1, 0.09045084971874738, 0.06545084971874737, 0.0]),
    (lambda: ExponentialScheduler(0.1, 0.5, iter_interval=-2), [0.1, 0.2, 0.2, 0.8]),
    (lambda: LinearWarmupScheduler(StepScheduler(0.2, 0.1, []), -1), [0.2, 0.2, 0.2, 0.2])])
def test_a_negative_length_gives_nnablas_numbers(make, expected):
    assert [make().get_learning_rate(i) for i in (0, 1, 2, 5)] == pytest.approx(expected)


@pytest.mark.parametrize("make", [lambda: PolynomialScheduler(0.1, 0, 1.0),
                                  lambda: CosineScheduler(0.1, 0),
                                  lambda: ExponentialScheduler(0.1, 0.9, iter_interval=0)])
def test_a_zero_length_is_nnablas_zero_division_when_a_rate_is_asked(make):
    scheduler = make()  # NNabla makes it
    with pytest.raises(ZeroDivisionError, match="is 0"):
        scheduler.get_learning_rate(0)


def test_a_warmup_of_zero_iterations_is_no_warmup():
    # NNabla 1.39 multiplies only while iter < warmup_iter: with 0, never (its
    # learning_rate_scheduler.py; case nnabla_user_39b.user39_warmup_length_from_args)
    inner = CosineScheduler(0.1, 10)
    w = LinearWarmupScheduler(inner, 0)
    assert [w.get_learning_rate(i) for i in range(12)] == [inner.get_learning_rate(i)
                                                           for i in range(12)]
