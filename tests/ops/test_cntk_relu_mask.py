"""CNTK's ReLU (``rule="cntk"``: ``x * (x > 0) + 0.0``) keeps its mask in the values' dtype.

At ee9d720a the mask was bool, and torch converted it to float inside both products, the
forward's and the backward's: a pass over memory each (on ``stadyn bench cifar-bs`` 4 + 4
``aten::_to_copy`` of up to 64x64x32x32 a step, ~1/8 of the step's time in ops; see
docs/performance.md).  A float mask of 0s and 1s gives the same products bit for bit
(``tests/ops/test_nan_picks.py`` holds the values, NaN and infinities included, to NumPy).
"""

import numpy as np
import torch

import stadyn as sd
import stadyn.functions as F

A = np.array([[np.nan, np.inf, -np.inf, 1, -0.0, 0, 2, -3]], np.float32)


def test_the_static_backward_reads_a_mask_of_the_values_dtype():
    x = sd.Variable.from_numpy_array(A, need_grad=True)
    y = F.sum(F.relu(x, rule="cntk"))
    y.forward()
    dtypes = {t.dtype for t in y._plan.saved if isinstance(t, torch.Tensor)}  # what bw reads
    assert torch.bool not in dtypes and torch.float32 in dtypes
    y.backward()
    np.testing.assert_array_equal(x.g, (A > 0).astype(np.float32))   # (0 at NaN)


def test_the_dynamic_product_saves_a_mask_of_the_values_dtype():
    x = sd.Variable.from_numpy_array(A, need_grad=True)
    with sd.auto_forward():
        y = F.relu(x, rule="cntk")
    node = y.data.grad_fn.next_functions[0][0]          # add(., 0.0) -> the product
    assert node.name() == "MulBackward0"
    assert node._saved_other.dtype == torch.float32
