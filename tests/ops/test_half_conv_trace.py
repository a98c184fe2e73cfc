"""NNabla's float16 convolution (``ops/_half_conv.py``) as a static plan's trace records it:
its backward's folds are one operator each, not one recorded step per value of the inner
axis (a 28 x 28 image's ``dW`` folded over its 576 output positions took a static
``F.convolution`` in ``cpu:half`` 19 s to build), and the traced program computes the
eager kernel's numbers bit for bit."""

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from stadyn.ops._half_conv import fold_conv2d


def _joint(x, w, b, g):
    xs = [t.detach().requires_grad_() for t in (x, w, b)]
    y = fold_conv2d(*xs, [1, 1], [1, 1], [1, 1], 1)
    return (y,) + torch.autograd.grad(y, xs, g)


def test_traced_backward_is_one_operator_per_fold_and_the_eager_numbers():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(2, 2, 12, 12, generator=gen).half()
    w = (torch.randn(3, 2, 3, 3, generator=gen) * 0.2).half()
    b = torch.zeros(3, dtype=torch.float16)
    g = torch.rand(2, 3, 12, 12, generator=gen).half()
    with torch.enable_grad():
        eager = _joint(x, w, b, g)
        gm = make_fx(_joint, tracing_mode="fake")(x, w, b, g)
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    # the folds of dx's columns and of dW are one half_fold_matmul call each; the column
    # image adds one index_add per kernel offset (9), not a step per output position (144):
    # 140 calls in all (1029 when dW's fold was traced through)
    assert sum("half_fold_matmul" in str(n.target) for n in calls) == 2
    assert len(calls) < 300, len(calls)
    traced = gm(x, w, b, g)
    for e, t in zip(eager, traced):
        assert torch.equal(e, t)
