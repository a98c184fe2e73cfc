"""A static graph lowered to one program, run again for a late ``need_grad``, where the
program computes from a leaf it wrote (``_grad_marks.program_side_effects``) runs again eagerly
instead (as a lowered program its running values would move again and the backward
differentiate what the first forward did not compute; eagerly, ``replaying_a_forward``, they
stay).

NNabla 1.39 (``tests/compat/compat_cases/nnabla_fidelity_27b.py``,
``late_need_grad__min_max_quantize_ema_static_and_dynamic``) runs no forward again: its x.g is
[0.23529, 0, 0, 0, 0, 0.31372, 0.31372, 0]; Stadyn's replay moved the moving range a second
time and gave [0.23497, 0, 0, 0, 0, 0.31329, 0.31329, 0.07022].
"""

import numpy as np
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
from stadyn.graph._grad_marks import program_side_effects


def _quantized(x_on_late: bool):
    x = nn.Variable.from_numpy_array(
        np.array([[0.5, -1.0, 2.0, 3.5], [1.5, 0.25, -0.5, -2.5]], np.float32),
        need_grad=not x_on_late)
    w = nn.Variable.from_numpy_array(np.array([[1.0, 2.0, -1.0, 0.5]], np.float32),
                                     need_grad=True)
    qmin, qmax, lmin, lmax = (nn.Variable.from_numpy_array(np.array([[v]], np.float32))
                              for v in (-0.5, 0.5, 0.0, 255.0))
    y = F.min_max_quantize(x * w, qmin, qmax, lmin, lmax, decay=0.5, x_min_max=True,
                           ema=True, ste_fine_grained=True)
    return x, F.sum(F.tanh(y)), qmin, qmax


def test_static_min_max_quantize_ema_late_leaf_runs_eagerly_as_nnabla():
    x, loss, qmin, qmax = _quantized(x_on_late=True)
    loss.forward()
    moved = (qmin.d.copy(), qmax.d.copy())
    x.need_grad = True
    x.grad.zero()
    loss.backward()         # (refused before nnpy28: "read a leaf's value it wrote")
    # run again eagerly, min_max_quantize moves nothing: the range the forward left (NNabla's
    # -1.25, 1.125) and NNabla 1.39's x.g for this graph (printed by NNabla 1.39)
    assert np.array_equal(qmin.d, moved[0]) and np.array_equal(qmax.d, moved[1])
    assert moved[0].ravel().tolist() == [-1.25] and moved[1].ravel().tolist() == [1.125]
    np.testing.assert_allclose(x.g.ravel(), [0.78430742, 0, 0, 0, 0, 1.56861484, -0.78430742, 0],
                               rtol=1e-5, atol=1e-6)


def test_static_min_max_quantize_ema_with_marks_set_first_runs():
    x, loss, _, _ = _quantized(x_on_late=False)
    loss.forward()
    loss.backward()             # no replay: nothing to refuse
    assert x.g.shape == (2, 4)


def test_program_side_effects_writes_alone_are_given_back():
    # a running statistic written and never read after (batch normalisation's): given back
    fw = make_fx(lambda x, m: (m.add_(x.mean()), x * 2.0)[1])(torch.ones(2), torch.zeros(1))
    assert program_side_effects(fw, 2) is None
    # read after the write (through the in-place op's result): refused
    fw = make_fx(lambda x, m: x * m.add_(x.mean()))(torch.ones(2), torch.zeros(1))
    assert "read a leaf's value it wrote" in program_side_effects(fw, 2)
    # read before the write only: the first run's value, given back after
    fw = make_fx(lambda x, m: (x * m, m.add_(1.0))[0])(torch.ones(2), torch.zeros(1))
    assert program_side_effects(fw, 2) is None


def test_replaying_a_forward_is_per_thread():
    # a forward run again for a backward in one thread does not make another thread's ops
    # (a mean_subtraction of another graph) skip their update
    import threading

    from stadyn.graph import replaying_a_forward
    from stadyn.graph._grad_marks import ReplayGuard
    inside, seen = threading.Event(), threading.Event()
    other = []

    def look():
        inside.wait(10)
        other.append(replaying_a_forward())
        seen.set()

    t = threading.Thread(target=look)
    t.start()
    with ReplayGuard([]):
        assert replaying_a_forward()
        inside.set()
        seen.wait(10)
    t.join(10)
    assert other == [False] and not replaying_a_forward()
