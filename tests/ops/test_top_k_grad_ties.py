"""Among equal gradient values, ``top_k_grad`` passes the lowest positions, as NNabla 1.39 does.

NNabla's kernel (``nbla/utils/top_k.hpp``) fills a heap with the first ``k`` entries and lets a
later entry in only when it is strictly larger, so at the cut the earliest of equal entries
stay.  The expected arrays below are NNabla 1.39's, run here (``F.top_k_grad`` forward, then
``backward`` with the gradient shown; ``F.top_k_data(..., reduce=False)`` likewise).
``torch.topk`` left ties to its kernel: for ``[[0, 1, 9, 2, 2], [3, 3, 3, 1, 0]]`` and k = 2 it
kept ``[[., ., 9, ., 2], [., 3, 3, ., .]]``.
"""

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as NF
import stadyn.functions as F

G = np.array([[0, 1, 9, 2, 2], [3, 3, 3, 1, 0]], np.float32)
SIGNED = np.array([[3, -3, 1, 3, -3], [-2, 2, -2, 2, 1]], np.float32)

# (gradient, k, abs) -> NNabla 1.39's x.g
TOP_K_GRAD = [
    (G, 2, False, [[0, 0, 9, 2, 0], [3, 3, 0, 0, 0]]),
    (G, 4, False, [[0, 1, 9, 2, 2], [3, 3, 3, 1, 0]]),
    (SIGNED, 1, True, [[3, 0, 0, 0, 0], [-2, 0, 0, 0, 0]]),
    (SIGNED, 2, True, [[3, -3, 0, 0, 0], [-2, 2, 0, 0, 0]]),
    (SIGNED, 3, True, [[3, -3, 0, 3, 0], [-2, 2, -2, 0, 0]]),
    (SIGNED, 2, False, [[3, 0, 0, 3, 0], [0, 2, 0, 2, 0]]),
    (np.ones((1, 12), np.float32), 5, False, [[1] * 5 + [0] * 7]),
]


@pytest.mark.parametrize("grad, k, use_abs, expected", TOP_K_GRAD)
def test_native_top_k_grad_keeps_nnablas_entries_among_ties(grad, k, use_abs, expected):
    x = sd.Variable.from_numpy_array(np.arange(grad.size, dtype=np.float32).reshape(grad.shape),
                                     need_grad=True)
    with sd.auto_forward():
        y = F.top_k_grad(x, k, abs=use_abs)
    assert y.d.tolist() == x.d.tolist()            # the forward is the identity
    y.backward(grad)
    assert x.g.tolist() == expected


@pytest.mark.parametrize("grad, k, use_abs, expected", TOP_K_GRAD[:4])
def test_nnabla_top_k_grad_in_a_static_graph_keeps_nnablas_entries(grad, k, use_abs, expected):
    x = nn.Variable.from_numpy_array(np.zeros_like(grad), need_grad=True)
    y = NF.top_k_grad(x, k, abs=use_abs)
    y.forward()
    x.grad.zero()
    y.backward(grad)
    assert x.g.tolist() == expected


# k, abs -> NNabla 1.39's y.d for SIGNED (its x.g is the whole gradient: 1..10)
TOP_K_DATA_UNREDUCED = [
    (1, True, [[3, 0, 0, 0, 0], [-2, 0, 0, 0, 0]]),
    (2, True, [[3, -3, 0, 0, 0], [-2, 2, 0, 0, 0]]),
    (3, True, [[3, -3, 0, 3, 0], [-2, 2, -2, 0, 0]]),
    (2, False, [[3, 0, 0, 3, 0], [0, 2, 0, 2, 0]]),
]


@pytest.mark.parametrize("k, use_abs, expected", TOP_K_DATA_UNREDUCED)
def test_top_k_data_unreduced_keeps_nnablas_entries_among_ties(k, use_abs, expected):
    dy = np.arange(1, 11, dtype=np.float32).reshape(2, 5)
    x = nn.Variable.from_numpy_array(SIGNED, need_grad=True)
    y = NF.top_k_data(x, k, abs=use_abs, reduce=False)
    y.forward()
    x.grad.zero()
    y.backward(dy)
    assert y.d.tolist() == expected
    assert x.g.tolist() == dy.tolist()
