"""NNabla's backward order for an op keeping its backward (graph/_reader_order.py) in float64:
what such an op's backward sees of its input's other readers' parts, and the gradient left,
keep float64's digits (the parts caught were cast to float32: an assigning backward left
``x.grad`` ``2x + (1/7 - float32(1/7))``, off by 6e-9).  Expected values: NumPy, float64."""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F

X = np.array([0.1, 1.0 / 3.0, 2.0 / 7.0])


class _Kept:
    """A Python function 2 * x ... whose backward waits for its input's readers that NNabla
    runs before it (``defer_input`` / ``run_leaves``), and either adds its part ``2 * g`` to
    what they left (``assign=False``) or writes it over them; it notes what it saw."""

    def __init__(self, leaf, assign):
        self.leaf, self.assign, self.k, self.seen = leaf, assign, None, []

    def output_shapes(self, shapes, dtypes):
        return [(shapes[0], dtypes[0])]

    def forward_arrays(self, arrays):
        return None, [2 * arrays[0]]

    def backward_arrays(self, state, grads, needed):
        if self.k is not None:
            self.kept = grads[0]
            return [np.zeros_like(grads[0])]
        return [2 * grads[0]]

    def defer_input(self, k):
        self.k = k

    def held_gradient(self, k):
        g = self.leaf.data.grad
        return (np.zeros(X.shape) if g is None else g.numpy().copy()), True

    def run_leaves(self, partial, accum):
        self.seen.append(partial[0].copy())
        mine = 2 * self.kept
        return {0: mine if self.assign else partial[0] + mine}


@pytest.mark.parametrize("assign", [False, True])
@pytest.mark.parametrize("dynamic", [False, True])
def test_float64_parts_keep_their_digits(assign, dynamic):
    x = sd.Variable.from_numpy_array(X, need_grad=True, dtype=np.float64)
    kept = _Kept(x, assign)
    with sd.auto_forward(dynamic):
        loss = F.sum(x * (1.0 / 7.0)) + F.sum(F.python_function(x, function=kept))
    if not dynamic:
        loss.forward()
    loss.backward()
    assert x.data.dtype == torch.float64
    # x * (1/7) is made first: NNabla runs its backward first, so the kept backward sees 1/7
    assert len(kept.seen) == 1
    np.testing.assert_array_equal(kept.seen[0], np.full(3, 1.0 / 7.0))
    expected = np.full(3, 2.0) if assign else np.full(3, 1.0 / 7.0 + 2.0)
    np.testing.assert_allclose(x.g, expected, rtol=1e-15, atol=0)
