"""``ops/_half_elementwise._fold_impl``: the float16 fold of a broadcast input's float
gradients (NNabla 1.39's ``g0[idx0] = Half(float(g0[idx0]) + grad)``, transform_binary_grad0),
bit for bit against a scalar fold written here, on float16 values (``add2``'s gradient: one
``add.accumulate`` in C) and float values (``mul2``'s: a row at a time), overflowing to
``inf`` without a NumPy warning (NNabla's ``Half`` says nothing: case
``nnabla_half_42.half42__broadcast_gradient_overflow``)."""

import warnings

import numpy as np
import pytest
import torch

from stadyn.ops._half_elementwise import _fold_impl


def _scalar_fold(a: np.ndarray) -> np.ndarray:
    """Column by column, value by value: float32 addition, float16 rounding."""
    out = np.zeros(a.shape[1], np.float16)
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(a.shape[1]):
            acc = np.float16(0.0)
            for v in a[:, j]:
                acc = np.float16(np.float32(acc) + np.float32(v))
            out[j] = acc
    return out


def _values(kind: str, n: int, k: int, rs) -> np.ndarray:
    with np.errstate(over="ignore"):
        if kind == "half":
            return (rs.randn(n, k) * 10).astype(np.float16).astype(np.float32)
        if kind == "product":      # dy * x of two float16 numbers: exact in float32
            return (rs.randn(n, k).astype(np.float16).astype(np.float32)
                    * rs.randn(n, k).astype(np.float16).astype(np.float32))
        if kind == "float":
            return rs.randn(n, k).astype(np.float32)
        if kind == "overflow":
            return (rs.randn(n, k) * 30000).astype(np.float16).astype(np.float32)
        a = np.where(rs.rand(n, k) < 0.5, -0.0, 0.0).astype(np.float32)   # signed zeros
        if n > 2:
            a[n // 2, 0], a[1, -1] = np.nan, np.inf
        return a


@pytest.mark.parametrize("kind", ["half", "product", "float", "overflow", "special"])
@pytest.mark.parametrize("n,k", [(0, 3), (1, 1), (2, 5), (7, 16), (300, 3), (2049, 2),
                                 (1000, 40)])
def test_fold_is_the_scalar_fold_bit_for_bit_and_silent(kind, n, k):
    a = _values(kind, n, k, np.random.RandomState(n * 100 + k))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _fold_impl(torch.from_numpy(a)).numpy()
    assert got.dtype == np.float16 and got.shape == (k,)
    np.testing.assert_array_equal(got.view(np.uint16), _scalar_fold(a).view(np.uint16))


def test_fold_of_float16_values_stops_growing_where_float16_does():
    a = np.ones((5000, 2), np.float32)                    # 2048 + 1 rounds to 2048
    assert _fold_impl(torch.from_numpy(a)).tolist() == [2048.0, 2048.0]
