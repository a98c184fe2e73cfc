"""A kernel's backward that builds its gradient by in-place updates of views of a fresh tensor
(``img = x.new_zeros(...); img[:, a:b:s].add_(cols)``, then a copy of a slice of ``img``)
gives the same gradient in every mode.  A static plan splits its traced joint program where
the seed comes in; the updates read the seed but nothing reads their results, so the split
followed only the data edges (``img`` -> crop -> copy) and left them out of the backward
program: the gradient came out all zeros, with no error (found with NNabla's half
convolution's former ``col2im``).  The expectation is torch autograd of the same arithmetic
(a strided sum written with ``unfold``-free indexing, see :func:`_expected`)."""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.solvers as S
from stadyn.graph import OpSpec, apply
from stadyn.ops._kernel_op import kernel_op

_STRIDE, _K, _PAD = 2, 3, 1


def _out_len(n):
    return (n + 2 * _PAD - _K) // _STRIDE + 1


def _window_sums_impl(x):
    """``y[j] = sum_k xp[j * stride + k]`` over the zero-padded last axis of ``x``."""
    xp = torch.nn.functional.pad(x, (_PAD, _PAD))
    n = _out_len(x.shape[-1])
    return sum(xp[..., k:k + _STRIDE * (n - 1) + 1:_STRIDE] for k in range(_K))


def _window_sums_fake(x):
    return x.new_empty((*x.shape[:-1], _out_len(x.shape[-1])))


def _window_sums_setup(ctx, inputs, output):
    ctx.length = inputs[0].shape[-1]


def _window_sums_saving_setup(ctx, inputs, output):
    ctx.length = inputs[0].shape[-1]
    ctx.save_for_backward(inputs[0])


def _window_sums_backward(ctx, g):
    # the col2im pattern: a zeroed padded image, each offset added in place into a strided
    # slice view of it, the unpadded middle copied out; the image made from the saved input
    # (which the seed does not reach, as in the half convolution's) or from the seed
    n, length = g.shape[-1], ctx.length
    like = ctx.saved_tensors[0] if ctx.saved_tensors else g
    img = like.new_zeros((*g.shape[:-1], length + 2 * _PAD))
    for k in range(_K):
        img[..., k:k + _STRIDE * (n - 1) + 1:_STRIDE].add_(g)
    return img[..., _PAD:_PAD + length].contiguous()


def _window_sums_fw_inplace(x):
    """The same sums, written by in-place updates of views of fresh tensors (traced op by op,
    differentiated by torch's formulas of ``copy_`` and ``add_`` on views)."""
    n = _out_len(x.shape[-1])
    xp = x.new_zeros((*x.shape[:-1], x.shape[-1] + 2 * _PAD))
    xp[..., _PAD:_PAD + x.shape[-1]].copy_(x)
    y = x.new_zeros((*x.shape[:-1], n))
    for k in range(_K):
        y[..., :].add_(xp[..., k:k + _STRIDE * (n - 1) + 1:_STRIDE])
    return y


_KERNEL = kernel_op("stadyn_kernels::test_window_sums_inplace_views", "(Tensor x) -> Tensor",
                    _window_sums_impl, _window_sums_fake, _window_sums_backward,
                    _window_sums_setup)
_KERNEL_SAVED = kernel_op("stadyn_kernels::test_window_sums_inplace_views_saved",
                          "(Tensor x) -> Tensor", _window_sums_impl, _window_sums_fake,
                          _window_sums_backward, _window_sums_saving_setup)


def _window_sums(x):
    return _KERNEL(x)


def _window_sums_saved_image(x):
    return _KERNEL_SAVED(x)


def _window_sums_inplace_forward(x):
    return _window_sums_fw_inplace(x)


# declared as ops of their own, outside the catalog (a test's op is no public name)
_SPECS = {name: OpSpec.from_function(fn, 1, name=f"test_{name}", category="misc")
          for name, fn in (("window_sums", _window_sums),
                           ("window_sums_saved_image", _window_sums_saved_image),
                           ("window_sums_inplace_forward", _window_sums_inplace_forward))}

_X = np.random.RandomState(0).randn(2, 3, 7).astype(np.float32)
_W = np.random.RandomState(1).randn(2, 3, 4).astype(np.float32)    # weights of the loss


def _expected():
    """Torch autograd of ``sum(W * window_sums(x))`` written with plain slicing."""
    x = torch.tensor(_X, requires_grad=True)
    loss = (torch.tensor(_W) * _window_sums_impl(x)).sum()
    loss.backward()
    return loss.item(), x.grad.numpy()


def _graph(kind):
    x = sd.Variable.from_numpy_array(_X, need_grad=True)
    w = sd.Variable.from_numpy_array(_W)
    loss = F.sum(w * apply(_SPECS[kind], (x,), {}))
    return x, loss


# (auto_forward, y.forward() before y.backward()): a static plan; a dynamic graph run again
# by forward (a plan too: the mode that lost the gradient); a dynamic graph's backward alone
_MODES = {"static": (False, True), "dynamic_forward_backward": (True, True),
          "dynamic_backward": (True, False)}


@pytest.mark.parametrize("kind", sorted(_SPECS))
@pytest.mark.parametrize("mode", sorted(_MODES))
def test_in_place_view_updates_reach_the_gradient(kind, mode):
    auto, forward_first = _MODES[mode]
    value, grad = _expected()
    with sd.auto_forward(auto):
        x, loss = _graph(kind)
        if forward_first:
            loss.forward()
        loss.backward()
    np.testing.assert_allclose(float(loss.d), value, rtol=1e-5)
    np.testing.assert_allclose(x.g, grad, rtol=1e-6, atol=1e-6)
    assert np.abs(x.g).max() > 1.0


@pytest.mark.parametrize("kind", sorted(_SPECS))
def test_in_place_view_updates_reach_the_gradient_in_a_compiled_step(kind):
    value, grad = _expected()
    with sd.auto_forward(False):
        x, loss = _graph(kind)
        solver = S.Sgd(lr=0.0)
        solver.set_parameters({"x": x})
        step = sd.compile_step(loss, solver, compile=False)
        step()
    np.testing.assert_allclose(float(loss.d), value, rtol=1e-5)
    np.testing.assert_allclose(x.g, grad, rtol=1e-6, atol=1e-6)


# The kernels of ``src/stadyn/ops`` whose traced backward updates a tensor in place: NNabla's
# half convolution's ``col2im`` (``ops/_half_conv.py`` ``_image_grad``: ``index_add_`` into a
# zeroed image, then a copy of its middle).  Small integers: every float16 product and sum is
# exact, so its gradient is torch's fp32 one exactly.
@pytest.mark.parametrize("mode", sorted(_MODES))
def test_half_convolution_gradient_in_every_mode(mode):
    import stadyn.compat.nnabla as nn
    import stadyn.compat.nnabla.functions as NF
    from stadyn.compat.nnabla.ext_utils import get_extension_context

    auto, forward_first = _MODES[mode]
    rs = np.random.RandomState(0)
    x = rs.randint(-2, 3, (2, 3, 7, 7)).astype(np.float32)
    w = rs.randint(-2, 3, (4, 3, 3, 3)).astype(np.float32)
    g = rs.randint(-2, 3, (2, 4, 4, 4)).astype(np.float32)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    torch.nn.functional.conv2d(tx, tw, padding=1, stride=2).backward(torch.tensor(g))
    with sd.auto_forward(auto):
        vx = nn.Variable.from_numpy_array(x, need_grad=True)
        vw = nn.Variable.from_numpy_array(w, need_grad=True)
        with nn.context_scope(get_extension_context("cpu", type_config="half")):
            y = NF.convolution(vx, vw, pad=(1, 1), stride=(2, 2))
        if forward_first:
            y.forward()
        y.backward(g)
    np.testing.assert_array_equal(vx.g, tx.grad.numpy())
    np.testing.assert_array_equal(vw.g, tw.grad.numpy())


def test_partition_keeps_writes_into_views_that_only_the_storage_reads():
    """The split itself: ``img`` is made from a primal, written through a view by a
    seed-dependent ``add_`` (nothing reads its result), and then copied; the copy is what
    the backward returns, so the write has to be in the backward program."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from stadyn.graph import partition

    def joint(x, g):
        y = (x * 2.0).sum()
        img = x.new_zeros(5)
        img[1:4:2].add_(g.expand(2))
        return y, img[1:].clone()

    gm = make_fx(joint)(torch.ones(5), torch.tensor(1.0))
    fw, bw, _ = partition(gm, n_primals=1, n_fw_outputs=1)
    y, *saved = fw(torch.arange(5.0))
    assert float(y) == 20.0
    np.testing.assert_array_equal(bw(*saved, torch.tensor(3.0))[0].numpy(), [3, 0, 3, 0])
