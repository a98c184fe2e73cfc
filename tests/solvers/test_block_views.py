"""The blocks' cached NumPy views (``_float32_blocks._flat``) follow their tensors: a parameter
whose memory is replaced (``.data =``, ``resize_``, ``set_``) is updated in its new memory, a
gradient turned non-contiguous is read in its logical order, and the cache keeps no tensor
alive.  Expected values: NumPy's float32 ``w - lr*g`` (the product rounded first, NNabla's
``sgd.cpp``)."""

import gc
import weakref

import numpy as np
import torch

from stadyn.solvers import _float32_blocks as fb
from stadyn.solvers._float32_kernels import sgd_blocks
from stadyn.solvers._cntk_cpu import sgd_cntk

LR = np.float32(0.3)


def _expected(w: np.ndarray, g: np.ndarray) -> np.ndarray:
    return w - g * LR


def _rand(*shape, seed=0, dtype=np.float32):
    return np.random.RandomState(seed).randn(*shape).astype(dtype)


def test_parameter_replaced_by_data_assignment_is_updated_in_its_new_memory():
    w = torch.from_numpy(_rand(5)).requires_grad_()
    g = torch.from_numpy(_rand(5, seed=1))
    assert sgd_blocks([w], [g], lr=float(LR))
    old = w.data
    new = _rand(5, seed=2)
    w.data = torch.from_numpy(new.copy())
    assert sgd_blocks([w], [g], lr=float(LR))
    np.testing.assert_array_equal(w.detach().numpy(), _expected(new, g.numpy()))
    np.testing.assert_array_equal(old.numpy(), _expected(_rand(5), g.numpy()))


def test_resized_and_reset_parameters_get_new_views():
    w = torch.tensor(_rand(4))                         # its own, resizable memory
    g = torch.from_numpy(_rand(4, seed=1))
    assert sgd_blocks([w], [g], lr=float(LR))
    w.resize_(70000)                                   # past a block, new memory
    w.copy_(torch.from_numpy(_rand(70000, seed=3)))
    g2 = torch.from_numpy(_rand(70000, seed=4))
    assert sgd_blocks([w], [g2], lr=float(LR))
    np.testing.assert_array_equal(w.numpy(), _expected(_rand(70000, seed=3), g2.numpy()))
    other = torch.from_numpy(_rand(6, seed=5))
    w.set_(other)                                      # the memory of another tensor
    g3 = torch.from_numpy(_rand(6, seed=6))
    assert sgd_blocks([w], [g3], lr=float(LR))
    np.testing.assert_array_equal(other.numpy(), _expected(_rand(6, seed=5), g3.numpy()))


def test_gradient_made_non_contiguous_in_place_is_read_in_its_logical_order():
    w = torch.from_numpy(_rand(3, 2))
    g = torch.from_numpy(_rand(2, 3, seed=1))
    w2 = w.clone()
    assert sgd_cntk([w2], [g.t().contiguous()], lr=float(LR))   # (any kernel: a reference)
    assert sgd_blocks([w], [g.t().contiguous()], lr=float(LR))
    g.t_()                                             # same memory, now non-contiguous
    before = w.numpy().copy()
    assert sgd_blocks([w], [g], lr=float(LR))
    np.testing.assert_array_equal(w.numpy(), _expected(before, g.contiguous().numpy()))


def test_float64_view_of_the_same_memory_is_not_taken_for_float32():
    n = fb.BLOCK + 5                                   # past a block: CNTK's blocks, not torch
    w = torch.from_numpy(_rand(n, dtype=np.float64))
    g = torch.from_numpy(_rand(n, seed=1, dtype=np.float64))
    assert sgd_cntk([w], [g], lr=float(LR))
    w.data = w.data.view(torch.float32)[:n]            # same address and length, float32
    before = _rand(n, seed=3)
    w.data.copy_(torch.from_numpy(before))
    g32 = torch.from_numpy(_rand(n, seed=2))
    assert sgd_cntk([w], [g32], lr=float(LR))          # CNTK: w + (-lr) g
    expected = before + g32.numpy() * -LR
    np.testing.assert_array_equal(w.numpy(), expected)


def test_the_cache_keeps_no_tensor_or_memory_alive():
    w = torch.from_numpy(_rand(100000))
    g = torch.from_numpy(_rand(100000, seed=1))
    assert sgd_blocks([w], [g], lr=float(LR))
    key, ref = id(w), weakref.ref(w)
    assert key in fb._VIEWS
    del w
    gc.collect()
    assert ref() is None
    assert key not in fb._VIEWS
