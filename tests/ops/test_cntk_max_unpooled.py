"""``F.cntk_max_unpooled``'s gradient is CNTK 2.7's ``MaxUnpoolingNode::BackpropTo``: the pooled
values get the max pooling of the output's gradient over each window (the padding never a
maximum), whatever place each value went to; the unpooled values get none.  Checked against a
NumPy max pooling (the compat harness checks ``unpooling`` against CNTK 2.7 itself:
``cntk_ops_more``'s unpooling, ``cntk_sequence_shape``'s steps_unpooling,
``unpooling__overlapping_windows``).  Before cntkwrite10 the values got the gradient at the
places they went (the unpooling's derivative)."""

from __future__ import annotations

import numpy as np

import stadyn as sd
import stadyn.cntk_semantics as S
import stadyn.functions as F


def _window_maxima(g: np.ndarray, kernel, stride, lower, upper) -> np.ndarray:
    """NumPy: the maximum of ``g`` (its last two axes padded by -inf) over each window."""
    padded = np.pad(g, [(0, 0)] * (g.ndim - 2) + list(zip(lower, upper)),
                    constant_values=-np.inf)
    rows = (padded.shape[-2] - kernel[0]) // stride[0] + 1
    cols = (padded.shape[-1] - kernel[1]) // stride[1] + 1
    out = np.empty(g.shape[:-2] + (rows, cols), g.dtype)
    for i in range(rows):
        for j in range(cols):
            out[..., i, j] = padded[..., i * stride[0]:i * stride[0] + kernel[0],
                                    j * stride[1]:j * stride[1] + kernel[1]].max(axis=(-2, -1))
    return out


def test_the_values_get_the_window_maxima_of_the_output_gradient():
    rng = np.random.RandomState(3)
    u = sd.Variable.from_numpy_array(rng.randn(2, 1, 4, 5).astype(np.float32), need_grad=True)
    v = sd.Variable.from_numpy_array(rng.randn(2, 1, 3, 3).astype(np.float32), need_grad=True)
    w = rng.randn(2, 1, 4, 5).astype(np.float32)
    with sd.auto_forward():
        y = F.cntk_max_unpooled(u, v, (2, 3), (1, 1), (0, 0), (0, 0))
        F.sum(F.mul2(y, sd.Variable.from_numpy_array(w))).backward()
    np.testing.assert_array_equal(y.d, u.d)
    np.testing.assert_allclose(v.g, _window_maxima(w, (2, 3), (1, 1), (0, 0), (0, 0)))
    assert not np.any(u.g)


def test_max_unpooling_with_padding_has_cntks_gradient():
    # windows of 3 with a stride of 2 over 4 x 5, auto-padded (CNTK's padding: one row above
    # and below, one column after): the windows at the edges take the maximum of the gradient
    # inside the input only
    rng = np.random.RandomState(4)
    x = sd.Variable.from_numpy_array(rng.rand(1, 1, 4, 5).astype(np.float32))
    v = sd.Variable.from_numpy_array(rng.rand(1, 1, 2, 3).astype(np.float32), need_grad=True)
    w = (rng.rand(1, 1, 4, 5) - 0.5).astype(np.float32)
    with sd.auto_forward():
        y = S.max_unpooling(v, x, (3, 3), (2, 2), True)
        F.sum(F.mul2(y, sd.Variable.from_numpy_array(w))).backward()
    np.testing.assert_allclose(v.g, _window_maxima(w, (3, 3), (2, 2), (1, 1), (0, 1)))
