"""Work the hot paths no longer do (speed27), each with its values unchanged:

* ``random_flip`` across samples (NNabla's walk) makes its output without autograd, then
  ``_SameMapBack`` gives the gradient: no autograd graph made only to be detached;
* the one-pass batch-norm gradient's kernel allocates no tensor only to compare strides
  when the gradient already has ``gy``'s;
* ``compat.nnabla``'s ``cast_counters`` walks a graph once per graph version and record, not
  at every forward once a static ``mean_subtraction`` exists.
"""

import numpy as np
import torch

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
from stadyn.compat.nnabla import _counters
from stadyn.ops import _batch_norm_kernel
from stadyn.ops._registry import CATALOG


def _flip(x, **kwargs):
    return CATALOG["random_flip"].impl(x, **kwargs)


def _packs(fn):
    """How many tensors autograd saved while ``fn`` ran, and its result."""
    count = [0]

    def pack(t):
        count[0] += 1
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return count[0], out


def test_random_flip_across_samples_saves_only_what_its_backward_reads():
    # on 843c47fc _flipped ran under autograd (torch.where, flip and index_select saved their
    # operands: 4 packs here) only for its output to be detached
    x = torch.arange(24.0).reshape(2, 3, 4).requires_grad_()
    torch.manual_seed(3)
    packs, y = _packs(lambda: _flip(x, axes=(0, 2), base_axis=1))
    assert packs == 2       # _SameMapBack's source and bits
    torch.manual_seed(3)
    with torch.no_grad():
        again = _flip(x, axes=(0, 2), base_axis=1)
    assert torch.equal(y, again)
    g = torch.arange(24.0).reshape(2, 3, 4)
    (gx,) = torch.autograd.grad(y, x, g)
    # NNabla's backward maps the gradient as the forward maps x (the same draws)
    torch.manual_seed(3)
    assert torch.equal(gx, _flip(g, axes=(0, 2), base_axis=1))


def test_one_pass_grad_kernel_allocates_nothing_to_compare_strides(monkeypatch):
    x = torch.randn(4, 3, 5, 5)
    w = torch.randn(3)
    calls = []
    real = torch.empty_like

    def counting(*args, **kwargs):
        calls.append(args[0].shape)
        return real(*args, **kwargs)

    for gy, copies in ((torch.randn(4, 3, 5, 5), 0),
                       (torch.randn(4, 3, 5, 5).contiguous(memory_format=torch.channels_last), 0),
                       (torch.randn(1, 1, 1, 1).expand(4, 3, 5, 5), 1)):
        want = _batch_norm_kernel._bn_one_pass_grads(gy, x, w, 1e-5, [True, True, True])
        calls.clear()
        monkeypatch.setattr(torch, "empty_like", counting)
        got = _batch_norm_kernel._bn_one_pass_grad_impl(gy, x, w, 1e-5, [True, True, True])
        monkeypatch.setattr(torch, "empty_like", real)
        # on 843c47fc every call allocated one (the dense gy's two cases included)
        assert len(calls) == copies
        assert got[0].stride() == real(gy).stride()
        for a, b in zip(got, want):
            assert torch.equal(a, b)


def _counted_graph():
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(np.arange(12, dtype=np.float32).reshape(4, 3))
    mean = nn.Variable.from_numpy_array(np.zeros(3, np.float32))
    t = nn.Variable.from_numpy_array(np.array([2.7], np.float32))
    y = F.mean_subtraction(x, mean, t)
    return F.sum(y * 2.0), t, x


def test_cast_counters_walks_a_graph_once(monkeypatch):
    walks = []
    real = _counters.topological_nodes

    def counting(roots):
        walks.append(len(roots))
        return real(roots)

    monkeypatch.setattr(_counters, "topological_nodes", counting)
    loss, t, x = _counted_graph()
    for step in range(4):
        loss.forward()
        assert t.d.dtype == np.int32 and t.d.tolist() == [3 if step == 0 else 5 + step]
        t.d = 5.5 + step           # a float written later: cast (truncated) at the next forward
    # on 843c47fc: one walk per forward (4)
    assert len(walks) == 1
    # a new counted node (another graph) and a rewired graph: walked again, still cast
    other, t2, _ = _counted_graph()
    loss.forward()
    assert len(walks) == 2
    other.forward()
    assert t2.d.dtype == np.int32 and len(walks) == 3
    # a rewired graph (the graph version): walked again, its counter still cast
    z = nn.Variable.from_numpy_array(np.ones((4, 3), np.float32))
    x.rewire_on(z * 3.0)
    t.d = 1.5
    loss.forward()
    assert t.d.dtype == np.int32 and len(walks) == 4


def test_random_flip_across_samples_copies_no_output():
    # on a21eddab _SameMapBack's forward returned y.clone() of the output made before it: one
    # more pass over the output (aten.clone in a plan's trace)
    from stadyn.graph import trace_fake

    def joint(x, gy):
        y = _flip(x, axes=(0, 2), base_axis=1)
        return y, torch.autograd.grad(y, [x], gy)

    torch.manual_seed(3)
    with torch.enable_grad():
        gm = trace_fake(joint, torch.randn(2, 3, 4, requires_grad=True), torch.randn(2, 3, 4))
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert "aten.clone.default" not in targets and "aten.index_select.default" in targets
