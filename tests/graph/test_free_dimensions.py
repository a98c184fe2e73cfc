"""Free dimensions of an input (graph/_free_axes.py: CNTK's ``FreeDimension``): any length per
minibatch, a stand-in length until fed, widened where an op needs more."""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
from stadyn.graph import (free_batch_input, free_dimensions, holds_free_stand_ins,
                          mark_free_dimensions, widen_free_dimensions)


def _input():
    return mark_free_dimensions(free_batch_input(sd.Variable((1, 1, 3))), [1])


def test_a_static_graph_runs_each_new_length_with_a_plan_of_its_own():
    x = _input()
    y = F.sum(F.tanh(x) * 2.0, axis=1)
    for n in (4, 2, 4):          # (back to a length seen: its plan again, not the last one)
        a = np.random.RandomState(n).randn(2, n, 3).astype(np.float32)
        x.data = torch.from_numpy(a)
        y.forward()
        np.testing.assert_allclose(y.d, (np.tanh(a) * 2).sum(axis=1), rtol=1e-5, atol=1e-6)


def test_only_a_leaf_takes_free_dimensions():
    x = _input()
    assert free_dimensions(x) == frozenset({1}) and free_dimensions(x * 2) == frozenset()
    with pytest.raises(ValueError, match="only a graph input"):
        mark_free_dimensions(x * 2, [1])


def test_axes_outside_the_shape_are_refused_both_ways():
    assert free_dimensions(mark_free_dimensions(sd.Variable((1, 1, 3)), [-2])) == {1}
    for axes in ([3], [-4]):            # (-4 on 3 axes was wrapped to axis 2)
        with pytest.raises(ValueError, match="beyond the shape"):
            mark_free_dimensions(sd.Variable((1, 1, 3)), axes)


def test_a_pooling_window_longer_than_the_stand_in_widens_it():
    x = mark_free_dimensions(sd.Variable((1, 1, 1, 1)), [2, 3])
    assert holds_free_stand_ins(x)
    # (1 x 1 refused, then widened: with stride 1 a kernel of 3 fits no window of a 1 x 1 map;
    # with stride 3 NNabla's rule fits one over what is there, nothing to widen)
    y = F.max_pooling(F.tanh(x), (3, 3), (1, 1))
    assert x.shape[2] >= 3 and x.shape[3] >= 3
    a = np.random.RandomState(0).randn(1, 1, 7, 6).astype(np.float32)
    x.data = torch.from_numpy(a)
    y.forward()
    expected = torch.nn.functional.max_pool2d(torch.tanh(torch.from_numpy(a)), 3, 1).numpy()
    np.testing.assert_allclose(y.d, expected, rtol=1e-6)
    assert not holds_free_stand_ins(x)                  # fed


def test_widening_that_cannot_help_leaves_the_shapes_as_they_were():
    x = mark_free_dimensions(sd.Variable((1, 2, 1)), [2])
    h = F.tanh(x)
    assert not widen_free_dimensions([h], lambda: h.shape[1] >= 3)     # axis 1 is not free
    assert x.shape == (1, 2, 1) and h.shape == (1, 2, 1)
    with pytest.raises(Exception, match="max_pooling"):
        F.max_pooling(h, (3, 1), (1, 1))     # (stride 1: no window of 3 fits 2)
