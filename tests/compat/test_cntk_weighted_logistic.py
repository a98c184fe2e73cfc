"""``weighted_binary_cross_entropy`` refuses what CNTK 2.7's Logistic refuses when it runs (checked
on CNTK 2.7): outputs of more than one value per sample (its ValueError 'The input matrix
dimensions do not match') and a weight without the batch axis, such as a constant (its
RuntimeError '... missing a ReconcileDynamicAxis operation?').  Stadyn computed a number for
both; now, as in CNTK, the graph builds (a program may only inspect it) and its runs raise."""

import numpy as np
import pytest

import stadyn.compat.cntk as C


def test_more_than_one_output_value_per_sample_is_refused():
    o, t, w = C.input_variable(3), C.input_variable(3), C.input_variable(3)
    f = C.weighted_binary_cross_entropy(o, t, w)          # builds, as in CNTK
    data = np.full((2, 3), 0.5, np.float32)
    with pytest.raises(ValueError, match=r"one output value per sample, not \(3,\)"):
        f.eval({o: data, t: data, w: data})


def test_a_weight_without_the_batch_axis_is_refused():
    o, t = C.input_variable(1), C.input_variable(1)
    f = C.weighted_binary_cross_entropy(o, t, C.constant(np.array([2.0], np.float32)))
    data = np.full((2, 1), 0.5, np.float32)
    with pytest.raises(ValueError, match="the weight has no batch axis"):
        f.eval({o: data, t: data})


def test_one_value_and_one_weight_per_sample_still_computes_cntks_number():
    # CNTK 2.7: -N sum(w l) / sum(w) = 1.55178 for these four samples (review script's value)
    o, t, w = C.input_variable(1), C.input_variable(1), C.input_variable(1)
    f = C.weighted_binary_cross_entropy(o, t, w)
    got = f.eval({o: np.array([[0.2], [0.7], [0.9], [0.4]], np.float32),
                  t: np.array([[0], [1], [1], [0]], np.float32),
                  w: np.array([[1], [2], [0.5], [3]], np.float32)})
    assert float(np.asarray(got).ravel()[0]) == pytest.approx(1.55178, abs=1e-5)
