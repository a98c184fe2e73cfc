"""``F.arange`` adds ``step`` in float32 value after value, and ``F.r_div_scalar`` divides in
``x``'s precision, as NNabla 1.39's kernels (``function/generic/arange.cpp``: a ``float``
running sum for the count and the values; ``r_div_scalar``: ``val / x`` in ``T``).  The
expectations are a plain float32 loop and NumPy's float32 division; NNabla's own numbers are
case ``nnabla_user_38b.user38_arange_grids_and_reciprocals``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F


def _float32_loop(start, stop, step):
    value, step32, stop32 = np.float32(start), np.float32(step), np.float32(stop)
    out = []
    while (value < stop32) if step32 > 0 else (value > stop32):
        out.append(value)
        value = np.float32(value + step32)
    return np.array(out, np.float32)


@pytest.mark.parametrize("args", [(0, 100, 0.1), (0, 1, 0.1), (0.5, 10, 0.7),
                                  (3, -2, -0.45), (-1, 1, 0.1), (1, 2, 0.25), (0, 5, 1),
                                  (2, 2, 1), (5, 0, 1)])
def test_arange_is_a_float32_running_sum(args):
    with sd.auto_forward():
        got = F.arange(*args).d
    want = _float32_loop(*args)
    assert got.dtype == np.float32
    assert got.shape == want.shape          # (0, 100, 0.1): 1001 values, torch.arange's 1000
    np.testing.assert_array_equal(got, want)


def test_arange_in_a_static_graph():
    y = F.arange(0, 1, 0.1)
    y.forward()
    np.testing.assert_array_equal(y.d, _float32_loop(0, 1, 0.1))


def test_r_div_scalar_rounds_once():
    x_np = np.array([7, 3, 11, 13, 0.1, -9], np.float32)
    x = sd.Variable.from_numpy_array(x_np, need_grad=True)
    y = F.r_div_scalar(x, 6.0)
    y.forward()
    np.testing.assert_array_equal(y.d, np.float32(6.0) / x_np)   # 6 / 7: 0.85714287
    y.backward(np.ones(6, np.float32))
    np.testing.assert_allclose(x.g, -6.0 / x_np.astype(np.float64) ** 2, rtol=1e-6)


@pytest.mark.parametrize("dtype, want", [(torch.float64, torch.float64),
                                         (torch.float16, torch.float16),
                                         (torch.int32, torch.float32)])
def test_r_div_scalar_keeps_the_dtype_a_number_gives(dtype, want):
    from stadyn.ops._arith import r_div_scalar
    x = torch.tensor([7, 3], dtype=dtype)
    got = r_div_scalar.__wrapped__(x, 6.0) if hasattr(r_div_scalar, "__wrapped__") else None
    if got is None:
        pytest.skip("the op's kernel is not reachable as a plain function")
    assert got.dtype == want == (6.0 / x).dtype


def test_arange_whose_float32_sum_sticks_is_refused():
    # 16777216 + 1 is 16777216 in float32: NNabla 1.39's counting loop (arange.cpp:33-38)
    # never ends; Stadyn returned 20000003 values, the last 3222787 all 16777216
    with pytest.raises(ValueError,
                       match=r"arange\(0, 20000000.0, 1\): .*sticks at 16777216\.0 .*never ends"):
        F.arange(0, 2e7, 1)
    assert np.float32(np.float32(16777216) + np.float32(1)) == np.float32(16777216)


def test_arange_longer_than_its_exact_count():
    # the rounded step -1e-7 (-1.00000001e-7) added in float32 falls short near 0.4: NNabla 1.39
    # gives 1118481 values ending 0.40000009536743164; Stadyn refused it as a stuck sum (it
    # summed only the exact count's 1000002 values)
    with sd.auto_forward():
        got = F.arange(0.5, 0.4, -1e-7).d
    want = _float32_loop(0.5, 0.4, -1e-7)
    assert got.shape == want.shape == (1118481,)
    np.testing.assert_array_equal(got, want)
    assert float(got[-1]) == 0.40000009536743164


def test_arange_that_sticks_at_once_is_refused_before_a_large_allocation():
    # 1 + 1e-9 is 1 in float32; the exact count is 1e9: Stadyn allocated 4 GB of float32 steps
    # (8.8 GB peak) before finding the stuck sum
    import tracemalloc
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"arange\(1, 2, 1e-09\): .*sticks at 1\.0 "):
            F.arange(1, 2, 1e-9)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2 ** 20, peak
