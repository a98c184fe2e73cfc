"""Static plans' memory layout: convolution chains run channels-last, with the NCHW results.

The references are the dynamic mode's (NCHW, torch's autograd) values, gradients and
parameters after several solver steps; channels-last kernels sum in another order, so they
agree within fp32 tolerance, not bit for bit.
"""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
import stadyn.parametric_functions as PF
import stadyn.solvers as S
from stadyn.models import digits_cnn

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BATCH, SHAPE = 4, (3, 12, 12)


def _convnet():
    """A small CIFAR-like ConvNet (CNTK's pattern: the 1/256 scale, padded convolutions and
    pooling, dropout, dense layers): a channels-last chain under the plan's rule."""
    with L.default_options(activation=L.relu, pad=True):
        net = L.Sequential([L.Convolution((3, 3), 8), L.Convolution((3, 3), 8),
                            L.MaxPooling((3, 3), (2, 2)), L.Dense(16), L.Dense(10,
                                                                            activation=None)])
    return lambda x: net(F.mul_scalar(x, 0.00390625))


def _batches(n):
    rng = np.random.RandomState(3)
    return [(rng.uniform(0, 255, (BATCH,) + SHAPE).astype(np.float32),
             rng.randint(0, 10, (BATCH, 1))) for _ in range(n)]


def _build(make_model, ctx=None):
    registry = sd.ParameterRegistry()
    sd.seed(0)
    model = make_model()
    x, t = sd.Variable((BATCH,) + SHAPE), sd.Variable((BATCH, 1))
    with sd.parameter_registry(registry), sd.context_scope(ctx or sd.context("cpu")):
        loss = F.mean(F.softmax_cross_entropy(model(x), t))
    return model, x, t, loss, registry


def _dynamic_loss(model, registry, xb, tb, ctx=None):
    with sd.parameter_registry(registry), sd.context_scope(ctx or sd.context("cpu")), \
            sd.auto_forward():
        x = sd.Variable.from_numpy_array(xb)
        t = sd.Variable.from_numpy_array(tb)
        return F.mean(F.softmax_cross_entropy(model(x), t))


def test_a_convolution_chain_runs_channels_last_with_the_nchw_values_and_gradients():
    model, x, t, loss, reg = _build(_convnet)
    (xb, tb), = _batches(1)
    x.d, t.d = xb, tb
    with sd.training(False):               # no dropout: both modes compute the same function
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        code = loss._plan.code
        static = {k: (v.g.copy(), v.grad.is_contiguous()) for k, v in reg.items()}
        static_loss = float(loss.d)
        for _, v in reg.items():
            v.grad = None
        dyn = _dynamic_loss(model, reg, xb, tb)
        dyn.backward()
    # the chain's input and both weights convert once; the reshape to the dense layer copies
    assert code.count("memory_format = torch.channels_last") == 3
    assert static_loss == pytest.approx(float(dyn.d), rel=1e-5)
    for k, v in reg.items():
        g, contiguous = static[k]
        assert contiguous, k                          # gradients come out in NCHW layout
        np.testing.assert_allclose(g, v.g, rtol=1e-4, atol=1e-6, err_msg=k)


def test_several_momentum_steps_match_the_dynamic_mode():
    model1, x1, t1, loss1, reg1 = _build(_convnet)
    model2, _, _, _, reg2 = _build(_convnet)
    solver1, solver2 = S.Momentum(lr=0.05, momentum=0.9), S.Momentum(lr=0.05, momentum=0.9)
    solver1.set_parameters(dict(reg1.items()))
    solver2.set_parameters(dict(reg2.items()))
    with sd.training(False):
        for xb, tb in _batches(5):
            x1.d, t1.d = xb, tb
            loss1.forward(clear_no_need_grad=True)
            solver1.zero_grad()
            loss1.backward(clear_buffer=True)
            solver1.update()
            dyn = _dynamic_loss(model2, reg2, xb, tb)
            solver2.zero_grad()
            dyn.backward()
            solver2.update()
            assert float(loss1.d) == pytest.approx(float(dyn.d), rel=1e-4)
    assert "channels_last" in loss1._plan.code
    for k, v in reg1.items():
        assert v.data.is_contiguous(), k            # parameters keep their layout
        np.testing.assert_allclose(v.d, reg2.get(k).d, rtol=1e-4, atol=1e-5, err_msg=k)


def test_the_bf16_plan_runs_channels_last_and_matches_the_dynamic_mode():
    ctx = sd.context("cpu", dtype="bfloat16")
    model, x, t, loss, reg = _build(_convnet, ctx)
    (xb, tb), = _batches(1)
    x.d, t.d = xb, tb
    with sd.training(False), sd.context_scope(ctx):
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        assert "channels_last" in loss._plan.code
        static = {k: v.g.copy() for k, v in reg.items()}
        static_loss = float(loss.d)
        for _, v in reg.items():
            v.grad = None
        dyn = _dynamic_loss(model, reg, xb, tb, ctx)
        dyn.backward()
    assert static_loss == pytest.approx(float(dyn.d), rel=2e-2)
    for k, v in reg.items():
        scale = np.abs(v.g).max() + 1e-6
        assert np.abs(static[k] - v.g).max() <= 0.05 * scale, k


def test_a_plan_that_keeps_every_intermediate_stays_nchw():
    _, x, t, loss, _ = _build(_convnet)
    (xb, tb), = _batches(1)
    x.d, t.d = xb, tb
    loss.forward()                                  # every intermediate gets a value
    assert "channels_last" not in loss._plan.code
    conv = loss.parent.inputs[0]
    while conv.parent.spec.name != "convolution":
        conv = conv.parent.inputs[0]
    assert conv.data.is_contiguous()


def test_a_plan_with_batch_normalization_stays_nchw_and_bit_identical_to_dynamic():
    # The measured rule: batch-normalised chains (the digits CNN) gained nothing channels-last.
    registry = sd.ParameterRegistry()
    rng = np.random.RandomState(0)
    xb, tb = rng.rand(4, 1, 8, 8) * 16, rng.randint(0, 10, (4, 1))
    with sd.parameter_registry(registry):
        sd.seed(0)
        x, t = sd.Variable.from_numpy_array(xb), sd.Variable.from_numpy_array(tb)
        loss = F.mean(F.softmax_cross_entropy(digits_cnn(x), t))
        loss.forward(clear_no_need_grad=True)
        assert "channels_last" not in loss._plan.code
        with sd.auto_forward():
            dyn = F.mean(F.softmax_cross_entropy(digits_cnn(sd.Variable.from_numpy_array(xb)),
                                                 sd.Variable.from_numpy_array(tb)))
    assert float(loss.d) == float(dyn.d)


def test_single_channel_and_channel_last_convolutions_stay_as_they_are():
    x = sd.Variable.from_numpy_array(np.ones((2, 1, 6, 6), np.float32))
    w = sd.Variable.from_numpy_array(np.ones((4, 1, 3, 3), np.float32), need_grad=True)
    y = F.sum(F.convolution(x, w, pad=(1, 1)))
    y.forward(clear_no_need_grad=True)
    assert "channels_last" not in y._plan.code        # one input channel: no gain measured
    xc = sd.Variable.from_numpy_array(np.ones((2, 6, 6, 3), np.float32))
    wc = sd.Variable.from_numpy_array(np.ones((4, 3, 3, 3), np.float32), need_grad=True)
    yc = F.sum(F.convolution(xc, wc, pad=(1, 1), channel_last=True))
    yc.forward(clear_no_need_grad=True)
    assert "memory_format = torch.channels_last" not in yc._plan.code
    with sd.auto_forward():
        dyn = F.sum(F.convolution(sd.Variable.from_numpy_array(np.ones((2, 6, 6, 3), np.float32)),
                                  wc, pad=(1, 1), channel_last=True))
    assert float(yc.d) == float(dyn.d)


@pytest.mark.parametrize("channels", [1, 3])
def test_a_grayscale_lenet_stays_nchw(channels):
    """LeNet on MNIST (one input channel, then a 16-channel convolution) ran 5-25% slower with
    its second convolution channels-last (the only one the old rule chose) and slower still
    with both; on three input channels the same net gains 1.3-1.5x (docs/performance.md)."""
    from stadyn.graph import Subgraph, plan_layout
    import stadyn.parametric_functions as PF
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.Variable((4, channels, 28, 28))
        c1 = F.relu(F.max_pooling(PF.convolution(x, 16, (5, 5), name="conv1"), (2, 2)))
        c2 = F.relu(F.max_pooling(PF.convolution(c1, 16, (5, 5), name="conv2"), (2, 2)))
        y = PF.affine(F.relu(PF.affine(c2, 50, name="fc3")), 10, name="fc4")
    sub = Subgraph([y])
    chosen = plan_layout(sub.nodes, sub.leaf_tensors())
    assert len(chosen) == (0 if channels == 1 else 2)


def test_nnablas_pf_convolution_follows_the_same_rule():
    """PF.convolution passes bias, base_axis, pad, ... positionally: the rule read the bias's
    slot as base_axis, so an NNabla-style network never ran channels-last."""
    import stadyn.parametric_functions as PF
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((2, 4, 8, 8)).astype(np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.Variable.from_numpy_array(xb)
        y = F.sum(F.relu(PF.convolution(F.relu(PF.convolution(x, 8, (3, 3), pad=(1, 1),
                                                               name="c1")),
                                        8, (3, 3), pad=(1, 1), name="c2")))
        y.forward(clear_no_need_grad=True)
        assert "channels_last" in y._plan.code
        xc = sd.Variable.from_numpy_array(np.ascontiguousarray(xb.transpose(0, 2, 3, 1)))
        yc = F.sum(PF.convolution(xc, 8, (3, 3), pad=(1, 1), channel_last=True, name="c3"))
        yc.forward(clear_no_need_grad=True)
        assert "memory_format = torch.channels_last" not in yc._plan.code
        with sd.auto_forward():
            dyn = F.sum(F.relu(PF.convolution(F.relu(PF.convolution(x, 8, (3, 3), pad=(1, 1),
                                                                     name="c1")),
                                              8, (3, 3), pad=(1, 1), name="c2")))
    np.testing.assert_allclose(float(y.d), float(dyn.d), rtol=1e-5)


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["program", "inductor"])
def test_the_compiled_step_program_runs_channels_last_and_matches_static_training(compiled):
    """Uncompiled and compiled by inductor, the step program holds what a static plan holds:
    channels-last convolutions, their (torch's) ReLU not fused into oneDNN's call, which would
    turn NaN into 0; compiled, the max
    pooling and its gradient are ATen's kernels (inductor's loops are 3-10x slower on CPU)."""
    _, x1, t1, loss1, reg1 = _build(_convnet)
    _, x2, t2, loss2, reg2 = _build(_convnet)
    solver1, solver2 = S.Momentum(lr=0.05, momentum=0.9), S.Momentum(lr=0.05, momentum=0.9)
    solver1.set_parameters(dict(reg1.items()))
    solver2.set_parameters(dict(reg2.items()))
    step = sd.compile_step(loss2, solver2, compile=compiled)
    with sd.training(False):
        for xb, tb in _batches(3):
            x1.d, t1.d = xb, tb
            loss1.forward(clear_no_need_grad=True)
            solver1.zero_grad()
            loss1.backward(clear_buffer=True)
            solver1.update()
            x2.d, t2.d = xb, tb
            step()
            assert float(loss2.d) == pytest.approx(float(loss1.d), rel=1e-5)
    code = step.graph_module.code
    assert "channels_last" in code
    assert code.count("mkldnn._convolution_pointwise") == 0
    assert code.count("stadyn_kernels.max_pool2d") == (2 if compiled else 0)
    # inductor sums in its own order: parameters agree to rounding, not bit for bit
    for k, v in reg1.items():
        np.testing.assert_allclose(reg2.get(k).d, v.d, rtol=1e-5 if not compiled else 1e-4,
                                   atol=1e-6 if not compiled else 1e-5, err_msg=k)


def test_the_rule_reads_the_plan():
    from stadyn.graph import Subgraph, plan_layout
    _, _, _, loss, _ = _build(_convnet)
    sub = Subgraph([loss])
    chosen = plan_layout(sub.nodes, sub.leaf_tensors())
    assert sorted(n.spec.name for n in sub.nodes if id(n) in chosen) == ["convolution"] * 2
    on_meta = [torch.empty(t.shape, device="meta") for t in sub.leaf_tensors()]
    assert plan_layout(sub.nodes, on_meta) == frozenset()     # off the CPU: NCHW


def _train_steps(monkeypatch, passes: bool, n: int = 3):
    """``n`` momentum steps of the small ConvNet's static plan (no dropout); the losses, the
    last gradients and the plan's code.  ``passes=False``: without the plan's fused and
    in-place ReLUs and reshaped-product buffers."""
    import stadyn.graph._passes as passes_module
    from stadyn.graph import _plan_reuse
    _plan_reuse.clear()        # a graph built alike would replay the other run's programs
    if not passes:
        monkeypatch.setattr(passes_module, "fuse_convolution_relu", lambda gm: 0)
        monkeypatch.setattr(passes_module, "reuse_dead_inputs", lambda gm: 0)
    _, x, t, loss, reg = _build(_convnet)
    solver = S.Momentum(lr=0.05, momentum=0.9)
    solver.set_parameters(dict(reg.items()))
    losses = []
    with sd.training(False):
        for xb, tb in _batches(n):
            x.d, t.d = xb, tb
            loss.forward(clear_no_need_grad=True)
            solver.zero_grad()
            loss.backward(clear_buffer=True)
            losses.append(float(loss.d))
            grads = {k: v.g.copy() for k, v in reg.items()}
            solver.update()
    monkeypatch.undo()
    return losses, grads, loss._plan.code


def test_the_relus_run_in_place_with_the_same_values(monkeypatch):
    """torch's ReLUs (the convolutions' and the dense layer's) and their backward run in place
    on values nothing else reads, with the same numbers as out of place; the convolutions'
    are not fused into oneDNN's post-op (0 for NaN: below)."""
    losses, grads, code = _train_steps(monkeypatch, passes=True)
    plain_losses, plain_grads, plain_code = _train_steps(monkeypatch, passes=False)
    assert "_convolution_pointwise" not in code
    assert code.count("aten.relu_.default") == 3       # two convolutions', the dense layer's
    assert "aten.threshold_backward.grad_input" in code      # the backward's, in place
    assert "aten.relu.default" in plain_code and "_convolution_pointwise" not in plain_code
    assert losses == plain_losses                             # the same numbers, bit for bit
    for k, g in grads.items():
        np.testing.assert_array_equal(g, plain_grads[k], err_msg=k)


def test_a_dense_weight_behind_the_flatten_gets_its_gradient_in_its_buffer():
    """The first dense layer's (C, H, W, out) weight gradient is a matrix product reshaped:
    it is written into the weight's gradient buffer, the same memory every step, and equals
    the dynamic mode's."""
    def make():
        with L.default_options(activation=L.relu, pad=True):
            return L.Sequential([L.Convolution((3, 3), 16), L.Dense(128),
                                 L.Dense(10, activation=None)])
    _, x, t, loss, reg = _build(make)
    model2, _, _, _, reg2 = _build(make)
    solver, solver2 = S.Momentum(lr=0.01, momentum=0.9), S.Momentum(lr=0.01, momentum=0.9)
    solver.set_parameters(dict(reg.items()))
    solver2.set_parameters(dict(reg2.items()))
    (name, w), = [(k, v) for k, v in reg.items() if v.shape == (16, 12, 12, 128)]
    assert w.data.numel() * 4 >= 1 << 20            # large enough to be written in place
    addresses = []
    with sd.training(False):
        for xb, tb in _batches(3):
            x.d, t.d = xb, tb
            loss.forward(clear_no_need_grad=True)
            solver.zero_grad()
            loss.backward(clear_buffer=True)
            addresses.append(w.grad.data_ptr())
            dyn = _dynamic_loss(model2, reg2, xb, tb)
            solver2.zero_grad()
            dyn.backward()
            # Channels-last sums in another order than NCHW (which order depends on the CPU's
            # oneDNN kernels: AVX2 and AVX-512 differ), so elements near 0 differ by float32
            # rounding of the largest terms: the tolerance is relative to the gradient's scale.
            want = reg2.get(name).g
            np.testing.assert_allclose(w.g, want, rtol=1e-4, atol=1e-6 * np.abs(want).max())
            solver.update()
            solver2.update()
    assert "grad_out_" in loss._plan.code
    assert len(set(addresses)) == 1


_REWRITTEN = ("mkldnn._convolution_pointwise", "aten.relu_.default", "aten.relu.default",
              "aten.threshold_backward.grad_input", "aten.threshold_backward.default")


def test_a_static_plan_and_an_uncompiled_step_get_the_same_rewrites():
    """Both lower the same forward and backward through ``plan_passes``: the fused, in-place
    and plain ReLUs of the ConvNet's static plan (forward + backward programs) and of its
    uncompiled training step are the same in number; a compiled step keeps its ReLUs out of
    place (inductor plans its buffers)."""
    _, x, t, loss, reg = _build(_convnet)
    (xb, tb), = _batches(1)
    x.d, t.d = xb, tb
    with sd.training(False):
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        plan_code = loss._plan.fw.code + loss._plan.bw.code
        solver = S.Sgd(lr=0.01)
        solver.set_parameters(dict(reg.items()))
        step = sd.compile_step(loss, solver, compile=False)
        step()
    step_code = step.graph_module.code
    counts = {k: (plan_code.count(k), step_code.count(k)) for k in _REWRITTEN}
    assert all(a == b for a, b in counts.values()), counts
    assert counts["aten.relu_.default"][0] >= 1                    # the dense layer's
    assert counts["aten.threshold_backward.grad_input"][0] >= 1    # its backward's
    assert counts["mkldnn._convolution_pointwise"][0] == 0          # torch's ReLU: not fused


def test_a_nan_in_the_data_gives_the_static_plan_the_dynamic_graphs_nan_loss():
    """A NaN pixel reaching channels-last convolutions with torch's ReLU (which keeps NaN):
    the static plan's loss and gradients are NaN where the dynamic graph's are.  Before, the
    plan fused each ReLU into oneDNN's convolution post-op, which gives 0 for NaN: static
    loss 2.3 (finite, the NaN hidden), dynamic NaN."""
    from stadyn.graph import _plan_reuse
    _plan_reuse.clear()
    model, x, t, loss, reg = _build(_convnet)
    (xb, tb), = _batches(1)
    xb[0, 0, 5, 5] = np.nan
    x.d, t.d = xb, tb
    with sd.training(False):
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        static = {k: np.isnan(v.g) for k, v in reg.items()}
        static_loss = float(loss.d)
        for _, v in reg.items():
            v.grad = None
        dyn = _dynamic_loss(model, reg, xb, tb)
        dyn.backward()
    assert np.isnan(static_loss) and np.isnan(float(dyn.d))
    for k, v in reg.items():                  # the same entries NaN, gradient by gradient
        np.testing.assert_array_equal(static[k], np.isnan(v.g), err_msg=k)
    assert any(m.any() for m in static.values())


def _nnabla_relu_net():
    """Two padded convolutions, each followed by NNabla's ReLU (``where(x > 0, x, 0)``)."""
    def model(x):
        h = F.relu(PF.convolution(x, 8, (3, 3), pad=(1, 1), name="c1"), rule="nnabla")
        h = F.relu(PF.convolution(h, 8, (3, 3), pad=(1, 1), name="c2"), rule="nnabla")
        return PF.affine(h, 10, name="fc")
    return model


def _nnabla_relu_steps(monkeypatch, fuse: bool):
    """The losses and gradients of two static steps of :func:`_nnabla_relu_net` (NaN in the
    second batch's data), and the plan's code; ``fuse=False``: without the fusion pass."""
    import stadyn.graph._passes as passes_module
    from stadyn.graph import _plan_reuse
    _plan_reuse.clear()        # a graph built alike would replay the other run's programs
    if not fuse:
        monkeypatch.setattr(passes_module, "fuse_convolution_relu", lambda gm: 0)
    model, x, t, loss, reg = _build(_nnabla_relu_net)
    batches = _batches(2)
    batches[1][0][0, 0, 3, 3] = np.nan            # a NaN reaching the first ReLU
    results = []
    for xb, tb in batches:
        x.d, t.d = xb, tb
        for _, v in reg.items():
            v.grad = None
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        results.append((float(loss.d), {k: v.g.copy() for k, v in reg.items()}))
    monkeypatch.undo()
    return results, loss._plan.code, (model, reg, batches)


def test_nnablas_relu_is_fused_with_its_convolution_and_keeps_its_values(monkeypatch):
    """NNabla's ReLU (0 for NaN and -inf, +0 for -0.0) is what oneDNN's ReLU post-op computes:
    a static plan fuses it into the convolution (torch's ReLU, which keeps NaN, is not fused),
    with the unfused plan's values and gradients bit for bit, NaN in
    the data too (the fused convolution turns it into 0 as NNabla's ReLU does); the dynamic
    graph (NCHW, unfused) agrees to rounding."""
    fused, code, (model, reg, batches) = _nnabla_relu_steps(monkeypatch, fuse=True)
    plain, plain_code, _ = _nnabla_relu_steps(monkeypatch, fuse=False)
    if torch.backends.mkldnn.is_available():
        assert code.count("mkldnn._convolution_pointwise") == 2
    assert "_convolution_pointwise" not in plain_code
    for (loss, grads), (plain_loss, plain_grads) in zip(fused, plain):
        assert loss == plain_loss and np.isfinite(loss)
        for k, g in grads.items():
            np.testing.assert_array_equal(g, plain_grads[k], err_msg=k)
    xb, tb = batches[1]
    dyn = _dynamic_loss(model, reg, xb, tb)
    assert float(dyn.d) == pytest.approx(fused[1][0], rel=1e-5)


def test_relu_gradient_written_into_a_dead_input_keeps_the_traced_layout():
    """``reuse_dead_inputs`` writes ``threshold_backward`` into its dying gradient input only
    where that input is laid out as the traced output: with a contiguous gradient and a
    channels-last ReLU output the traced result is channels-last, and the ops after it (a
    permute and a view, as an affine's backward over a flattened convolution) were traced on
    that; written into the contiguous gradient the view failed (StarGAN of nnabla-examples,
    its generator's backward)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from stadyn.graph import reuse_dead_inputs

    def step(g, y):
        d = torch.ops.aten.threshold_backward(g * 1.0, y, 0)
        return d.permute(0, 2, 3, 1).view(-1, d.shape[1])      # (N, H, W, C): viewable

    y = torch.randn(2, 3, 4, 4).contiguous(memory_format=torch.channels_last)
    g = torch.randn(2, 3, 4, 4)
    gm = make_fx(step, tracing_mode="fake")(g, y)
    reuse_dead_inputs(gm)
    expected = step(g, y)
    assert torch.equal(gm(g, y), expected)
