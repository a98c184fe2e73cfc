"""The passes after a plan's forward/backward split judge memory as the split does
(``graph/_aliases.py``): a value is shared through every view of it, whatever the schema of
the op that made the view says.

* A large weight-gradient product written into one leaf's gradient buffer
  (``write_products_into_buffers``) while another leaf's gradient is a reshape of it (``W +
  reshape(V)`` as an affine weight): the copy the reshape needs was judged before the write
  was placed, so ``V.grad`` was a view of ``W``'s buffer and every later in-place update of
  one gradient (a second backward's accumulation, a solver's weight decay) changed the other
  too (SILENT).  Expectation: torch autograd of the same arithmetic.
* ``_unsafe_view`` (``matmul``'s result) and an item of ``split``'s result list share memory
  with their input though no schema annotation says so: ``reuse_dead_inputs`` ran a ReLU in
  place over a value read again later, ``aliased_outputs`` took a piece of an input for new
  memory, and the split lost a write through a piece of ``split``.
"""

import numpy as np
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import stadyn as sd
import stadyn.functions as F
from stadyn.graph import partition, reuse_dead_inputs
from stadyn.graph._passes import aliased_outputs

_aten = torch.ops.aten
_N = 512            # a (512, 512) float32 gradient: 1 MiB, the size plans write into a buffer
_RS = np.random.RandomState(0)
_X = _RS.randn(8, _N).astype(np.float32)
_W = (_RS.randn(_N, _N) * 0.01).astype(np.float32)
_V = (_RS.randn(_N * _N) * 0.01).astype(np.float32)


def _expected():
    """Torch autograd's gradients of ``sum(tanh(x @ (W + reshape(V))))`` w.r.t. W and V."""
    w = torch.tensor(_W, requires_grad=True)
    v = torch.tensor(_V, requires_grad=True)
    torch.tanh(torch.tensor(_X) @ (w + v.reshape(_N, _N))).sum().backward()
    return w.grad.numpy(), v.grad.numpy()


# (auto_forward, y.forward() before each y.backward()): a static plan; a dynamic graph run
# again by forward (a plan too); a dynamic graph's backward alone
_MODES = {"static": (False, True), "dynamic_forward_backward": (True, True),
          "dynamic_backward": (True, False)}


@pytest.mark.parametrize("v_first", [True, False])
@pytest.mark.parametrize("mode", sorted(_MODES))
def test_two_leaves_sharing_a_large_product_get_gradients_of_their_own(mode, v_first):
    auto, forward_first = _MODES[mode]
    gw, gv = _expected()
    with sd.auto_forward(auto):
        x = sd.Variable.from_numpy_array(_X)
        w = sd.Variable.from_numpy_array(_W, need_grad=True)
        v = sd.Variable.from_numpy_array(_V, need_grad=True)
        reshaped = F.reshape(v, (_N, _N))
        y = F.sum(F.tanh(F.affine(x, reshaped + w if v_first else w + reshaped)))
        for _ in range(2):          # the second backward accumulates into both gradients
            if forward_first:
                y.forward()
            y.backward()
    assert w.grad.data_ptr() != v.grad.data_ptr()
    np.testing.assert_allclose(w.g, 2 * gw, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(v.g, 2 * gv, rtol=1e-5, atol=1e-5)


def test_a_relu_over_an_unsafe_view_of_a_value_read_later_stays_out_of_place():
    def f(x):
        h = x * 2.0
        r = torch.relu(_aten._unsafe_view(h, [6]))
        return r + h.reshape(6)

    gm = make_fx(f)(torch.ones(2, 3))
    reuse_dead_inputs(gm)
    x = torch.tensor([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]])
    np.testing.assert_array_equal(gm(x).numpy(), [-2, 8, -6, 16, -10, 24])


def test_a_relu_over_an_unsafe_view_of_a_dying_product_still_runs_in_place():
    gm = make_fx(lambda a, b: torch.relu(torch.matmul(a, b)) + 1)(torch.ones(2, 3, 4),
                                                                  torch.ones(4, 5))
    assert any(n.target is _aten._unsafe_view.default for n in gm.graph.nodes)
    assert reuse_dead_inputs(gm) == 1
    a, b = torch.randn(2, 3, 4), torch.randn(4, 5)
    torch.testing.assert_close(gm(a, b), torch.relu(a @ b) + 1, rtol=0, atol=0)


def test_aliased_outputs_follow_pieces_of_a_split_and_buffers_written_with_out():
    def f(g, a, b, buf):
        first, second = torch.split(g, 2)
        return first, torch.mm(a * 1.0, b, out=buf), second * 1.0

    gm = make_fx(f)(torch.ones(4), torch.ones(2, 2), torch.ones(2, 2), torch.empty(2, 2))
    assert aliased_outputs(gm) == [True, True, False]


def test_partition_keeps_writes_through_a_piece_of_a_split():
    def joint(x, g):
        y = (x * 2.0).sum()
        img = x.new_zeros(6)
        first, _ = img.split(3)
        first.add_(g.expand(3))
        return y, img[1:].clone()

    gm = make_fx(joint)(torch.ones(6), torch.tensor(1.0))
    fw, bw, _ = partition(gm, n_primals=1, n_fw_outputs=1)
    y, *saved = fw(torch.arange(6.0))
    assert float(y) == 30.0
    np.testing.assert_array_equal(bw(*saved, torch.tensor(3.0))[0].numpy(), [3, 3, 0, 0, 0])


@pytest.mark.parametrize("mode", sorted(_MODES))
def test_two_backwards_of_one_forward_leave_the_seed_and_the_forward_values_alone(mode):
    """The seed and the values the forward passed on are inputs of the backward program,
    which no pass writes into (``reuse_dead_inputs`` rewrites only values the program made;
    ReLU's backward here reads the seed itself): a second ``backward`` of the same forward
    reads them unchanged, and the leaves' gradients accumulate to twice torch autograd's."""
    auto, forward_first = _MODES[mode]
    rs = np.random.RandomState(1)
    x_np, w_np = rs.randn(6, 5).astype(np.float32), rs.randn(5, 4).astype(np.float32)
    seed = rs.randn(6, 4).astype(np.float32)
    x, w = torch.tensor(x_np, requires_grad=True), torch.tensor(w_np, requires_grad=True)
    h = torch.relu(x @ w)
    (torch.relu(h * 2.0) - h).backward(torch.tensor(seed))
    with sd.auto_forward(auto):
        vx = sd.Variable.from_numpy_array(x_np, need_grad=True)
        vw = sd.Variable.from_numpy_array(w_np, need_grad=True)
        vh = F.relu(F.affine(vx, vw))
        y = F.relu(vh * 2.0) - vh
        if forward_first:
            y.forward()
        held = vh.d.copy()
        given = seed.copy()
        y.backward(given)
        y.backward(given)
    np.testing.assert_array_equal(given, seed)
    np.testing.assert_array_equal(vh.d, held)
    np.testing.assert_allclose(vx.g, 2 * x.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vw.g, 2 * w.grad.numpy(), rtol=1e-5, atol=1e-6)
