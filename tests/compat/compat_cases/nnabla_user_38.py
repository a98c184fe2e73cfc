"""An NNabla 1.39 user's own programs, sixth batch (nnuser38): each combines several features
the way a user's script does (nnabla-examples' spatial-transformer, optical-flow, binary-network,
quantization, adversarial, capsule, word2vec and reinforcement-learning scripts) and runs
unchanged on NNabla and on ``stadyn.compat.nnabla``.

Combinations the earlier batches (``nnabla_user_28`` to ``nnabla_user_37``) left: a spatial
transformer (``F.affine_grid`` then ``F.warp_by_grid``) trained end to end, an unsupervised
flow loss through ``F.warp_by_flow``, binary-connect layers trained by their float weights,
fixed-point quantized activations with straight-through gradients, FGSM adversarial training
(``need_grad`` on the input, ``x.g`` read, ``F.sign`` on NdArrays), online hard example mining
by ``F.top_k_data``, capsule routing by ``F.batch_matmul``, skip-gram with negative sampling,
a DQN with a target network copied by ``.d``.  Random draws are the case's seeded inputs, so
both sides see the same numbers.
"""

import numpy as np

from compat_harness import nnabla_case

SV = "nnabla.solvers."
PFN = "nnabla.parametric_functions."
FN = "nnabla.functions."


def _steps(loss, solver, n, res, key="loss", before=None):
    for _ in range(n):
        if before is not None:
            before()
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res.setdefault(key, []).append(float(loss.d))


@nnabla_case(names=[FN + "affine_grid", FN + "warp_by_grid", PFN + "affine", PFN + "convolution",
                    SV + "Adam"],
             tols={"loss": (1e-4, 1e-5), "warped": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_spatial_transformer(nn, F, PF, S, r):
    """A spatial transformer network as nnabla-examples' ``stn`` builds it: a localization
    net regresses the 2x3 ``theta`` (its last affine starting at the identity transform),
    ``F.affine_grid`` makes the sampling grid, ``F.warp_by_grid`` resamples the image
    (bilinear, zero padding), a small classifier follows; Adam for four steps, then the
    warped images of the trained net."""
    x = nn.Variable.from_numpy_array(r.rand(3, 1, 8, 8))
    t = nn.Variable.from_numpy_array(np.array([[0], [2], [1]], np.int32))
    with nn.parameter_scope("loc"):
        h = F.relu(PF.convolution(x, 2, (3, 3), stride=(2, 2), name="conv"))
        theta = PF.affine(h, 6, name="theta")
    grid = F.affine_grid(F.reshape(theta, (3, 2, 3)), (6, 6), align_corners=False)
    warped = F.warp_by_grid(x, grid, mode="linear", padding_mode="zero", align_corners=False)
    with nn.parameter_scope("cls"):
        logits = PF.affine(F.tanh(PF.convolution(warped, 3, (3, 3), name="conv")), 3,
                           name="fc")
    loss = F.mean(F.softmax_cross_entropy(logits, t))
    listing = r.set_params(nn.get_parameters())
    params = nn.get_parameters()
    params["loc/theta/affine/W"].d = params["loc/theta/affine/W"].d * 0.1
    params["loc/theta/affine/b"].d = np.array([1, 0, 0, 0, 1, 0], np.float32)
    solver = S.Adam(0.02)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "grid shape": list(grid.shape)}
    _steps(loss, solver, 4, res)
    warped.forward()
    res["warped"] = warped.d.copy()
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[FN + "warp_by_flow", FN + "abs", PFN + "convolution", SV + "Momentum"],
             tols={"loss": (1e-4, 1e-5), "flow": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_unsupervised_flow(nn, F, PF, S, r):
    """Unsupervised optical flow as a user writes it from nnabla-examples' flow scripts: a
    conv net predicts a two-channel flow from the stacked frames, ``F.warp_by_flow`` warps the
    second frame back, the loss is the photometric L1 difference plus a first-order smoothness
    term on the flow (``F.slice`` differences); Momentum for three steps."""
    f1 = r.rand(2, 1, 6, 7)
    f2 = np.roll(f1, 1, axis=3) + 0.05 * r.randn(2, 1, 6, 7)
    a = nn.Variable.from_numpy_array(f1)
    b = nn.Variable.from_numpy_array(f2.astype(np.float32))
    with nn.parameter_scope("flownet"):
        h = F.tanh(PF.convolution(F.concatenate(a, b, axis=1), 4, (3, 3), pad=(1, 1),
                                  name="c1"))
        flow = 2.0 * PF.convolution(h, 2, (3, 3), pad=(1, 1), name="c2")
    back = F.warp_by_flow(b, flow)
    photometric = F.mean(F.abs(back - a))
    dx = F.slice(flow, (0, 0, 0, 1), (2, 2, 6, 7)) - F.slice(flow, (0, 0, 0, 0), (2, 2, 6, 6))
    dy = F.slice(flow, (0, 0, 1, 0), (2, 2, 6, 7)) - F.slice(flow, (0, 0, 0, 0), (2, 2, 5, 7))
    loss = photometric + 0.1 * (F.mean(F.abs(dx)) + F.mean(F.abs(dy)))
    listing = r.set_params(nn.get_parameters())
    solver = S.Momentum(0.5, 0.9)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing}
    _steps(loss, solver, 3, res)
    flow.forward()
    res["flow"] = flow.d.copy()
    back.forward()
    res["warped back"] = back.d.copy()
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[PFN + "binary_connect_affine", PFN + "binary_weight_convolution",
                    PFN + "batch_normalization", SV + "Adam"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_binary_connect_net(nn, F, PF, S, r):
    """nnabla-examples' ``binary-networks`` classifier: a binary-weight convolution (its
    weights' signs times their mean absolute value), batch normalization, a binary-connect
    affine head; the float weights ``W`` are what Adam trains, the binarized ``Wb`` /
    ``alpha`` are recomputed at every forward.  Four steps, then every parameter (float and
    binary) and the test-mode logits."""
    x = nn.Variable.from_numpy_array(r.randn(4, 2, 5, 5))
    t = nn.Variable.from_numpy_array(np.array([[0], [1], [2], [1]], np.int32))

    def net(test):
        h = PF.binary_weight_convolution(x, 3, (3, 3), with_bias=False, name="bwc")
        h = F.relu(PF.batch_normalization(h, batch_stat=not test, name="bn"))
        return PF.binary_connect_affine(h, 3, name="bca")

    logits = net(False)
    loss = F.mean(F.softmax_cross_entropy(logits, t))
    listing = r.set_params(nn.get_parameters(grad_only=False))
    solver = S.Adam(0.05)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "trained": sorted(nn.get_parameters().keys())}
    _steps(loss, solver, 4, res)
    test = net(True)
    test.forward()
    res["test logits"] = test.d.copy()
    res.update(r.param_values(nn.get_parameters(grad_only=False)))
    return res


@nnabla_case(names=[FN + "fixed_point_quantize", FN + "pow2_quantize", PFN + "affine",
                    SV + "Sgd"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_quantized_activations(nn, F, PF, S, r):
    """Quantization-aware training as a user writes it: activations through
    ``F.fixed_point_quantize`` (8-bit signed, delta 1/16, fine-grained straight-through: no
    gradient outside the range) and weights through ``F.pow2_quantize`` before an
    ``F.affine`` with the float parameter; SGD for four steps; the gradients of the first
    step and the quantized outputs of the last."""
    x = nn.Variable.from_numpy_array(4.0 * r.randn(6, 5))
    y = nn.Variable.from_numpy_array(r.randn(6, 2))
    with nn.parameter_scope("q"):
        h = PF.affine(x, 4, name="fc1")
    hq = F.fixed_point_quantize(F.tanh(h) * 10.0, sign=True, n=8, delta=1.0 / 16)
    w2 = nn.parameter.get_parameter_or_create("q/fc2/W", (4, 2))
    wq = F.pow2_quantize(w2, sign=True, with_zero=True, n=4, m=1)
    out = F.affine(hq, wq)
    loss = F.mean(F.squared_error(out, y))
    listing = r.set_params(nn.get_parameters())
    solver = S.Sgd(0.01)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing}
    loss.forward()
    solver.zero_grad()
    loss.backward()
    res["first grads"] = {k: v.g.ravel().tolist() for k, v in nn.get_parameters().items()}
    solver.update()
    res["loss"] = [float(loss.d)]
    _steps(loss, solver, 3, res)
    nn.forward_all([hq, wq])
    res["hq"] = hq.d.copy()
    res["wq"] = wq.d.copy()
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.g", FN + "sign",
                    FN + "clip_by_value", SV + "Momentum"],
             tols={"loss": (1e-4, 1e-5), "adv loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_fgsm_adversarial_training(nn, F, PF, S, r):
    """FGSM adversarial training: the input Variable gets ``need_grad=True``, a backward of
    the clean loss leaves its gradient in ``x.g``, the attack ``x + eps * sign(x.g)`` is made
    imperatively (``F.sign`` / ``F.clip_by_value`` on NdArrays) and written into a second
    input; the step trains on the mean of clean and adversarial losses.  Three steps."""
    x_np = r.rand(5, 6)
    t = nn.Variable.from_numpy_array(np.array([[0], [1], [2], [0], [1]], np.int32))
    x = nn.Variable((5, 6))
    x.need_grad = True
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.g")
    x_adv = nn.Variable((5, 6))

    def net(v):
        with nn.parameter_scope("clf"):
            return PF.affine(F.relu(PF.affine(v, 7, name="fc1")), 3, name="fc2")

    clean = F.mean(F.softmax_cross_entropy(net(x), t))
    adv = F.mean(F.softmax_cross_entropy(net(x_adv), t))
    loss = 0.5 * (clean + adv)
    listing = r.set_params(nn.get_parameters())
    solver = S.Momentum(0.1, 0.9)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "loss": [], "adv loss": [], "x grad": []}
    lo = nn.NdArray.from_numpy_array(np.zeros((5, 6), np.float32))
    for _ in range(3):
        x.d = x_np
        x.grad.zero()
        clean.forward()
        clean.backward()
        res["x grad"].append(x.g.copy())
        step = F.sign(x.grad) * 0.1
        attacked = F.clip_by_value(x.data + step, lo, lo + 1.0)
        x_adv.d = attacked.data
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res["loss"].append(float(loss.d))
        res["adv loss"].append(float(adv.d))
    res["adversarial input"] = x_adv.d.copy()
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[FN + "top_k_data", FN + "softmax_cross_entropy", PFN + "affine",
                    SV + "Sgd"],
             tols={"loss": (1e-4, 1e-5), "per sample": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_hard_example_mining(nn, F, PF, S, r):
    """Online hard example mining: per-sample losses of a batch of eight, the hardest three
    kept by ``F.top_k_data(losses, 3, reduce=False)`` (the rest zeroed, so only the kept ones
    carry gradient) and averaged; SGD for three steps; the kept mask of every step is read
    from the per-sample gradient."""
    x = nn.Variable.from_numpy_array(r.randn(8, 4))
    t = nn.Variable.from_numpy_array(r.randint(0, 3, (8, 1)))
    with nn.parameter_scope("ohem"):
        logits = PF.affine(F.tanh(PF.affine(x, 6, name="fc1")), 3, name="fc2")
    per = F.reshape(F.softmax_cross_entropy(logits, t), (1, 8))
    per.persistent = True
    hard = F.top_k_data(per, 3, reduce=False)
    loss = F.sum(hard) / 3.0
    listing = r.set_params(nn.get_parameters())
    solver = S.Sgd(0.5)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "loss": [], "per sample": [], "kept": []}
    for _ in range(3):
        loss.forward()
        solver.zero_grad()
        per.grad.zero()
        loss.backward()
        res["loss"].append(float(loss.d))
        res["per sample"].append(per.d.copy())
        res["kept"].append((per.g != 0).astype(np.int32).ravel().tolist())
        solver.update()
    top = F.top_k_data(per.data, 2)
    res["top two, reduced"] = top.data.copy()
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[FN + "batch_matmul", FN + "softmax", FN + "sum", FN + "maximum_scalar",
                    SV + "Adam"],
             tols={"loss": (1e-4, 1e-5), "lengths": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_capsule_routing(nn, F, PF, S, r):
    """A capsule layer as nnabla-examples' ``capsule_net`` writes it: predictions
    ``u_hat = W u`` by ``F.batch_matmul`` over (batch x input-capsule) pairs, three
    iterations of routing by agreement (``F.softmax`` of the logits over output capsules,
    the weighted sum, ``squash``, the agreement added back, with the logits' updates cut off
    from the gradient by ``.get_unlinked_variable``), and the margin loss on the lengths;
    Adam for three steps."""
    B, NI, NO, DI, DO = 2, 4, 3, 2, 3
    u = nn.Variable.from_numpy_array(r.randn(B, NI, DI))
    t = nn.Variable.from_numpy_array(r.onehot(B, NO))
    W = nn.parameter.get_parameter_or_create("caps/W", (1, NI, NO, DO, DI))

    def squash(s, axis):
        n2 = F.sum(s ** 2, axis=axis, keepdims=True)
        return s * (n2 / (1.0 + n2)) / F.pow_scalar(n2 + 1e-7, 0.5)

    uu = F.reshape(F.broadcast(F.reshape(u, (B, NI, 1, DI, 1)), (B, NI, NO, DI, 1)),
                   (B * NI * NO, DI, 1))
    ww = F.reshape(F.broadcast(W, (B, NI, NO, DO, DI)), (B * NI * NO, DO, DI))
    u_hat = F.reshape(F.batch_matmul(ww, uu), (B, NI, NO, DO))
    u_hat_stopped = u_hat.get_unlinked_variable(need_grad=False)
    logits = F.constant(0, (B, NI, NO, 1))
    for it in range(3):
        c = F.softmax(logits, axis=2)
        last = it == 2
        s = F.sum(c * (u_hat if last else u_hat_stopped), axis=1, keepdims=True)
        v = squash(s, axis=3)
        if not last:
            logits = logits + F.sum(u_hat_stopped * v, axis=3, keepdims=True)
    lengths = F.reshape(F.pow_scalar(F.sum(v ** 2, axis=3) + 1e-7, 0.5), (B, NO))
    margin = t * F.maximum_scalar(0.9 - lengths, 0.0) ** 2 + \
        0.5 * (1.0 - t) * F.maximum_scalar(lengths - 0.1, 0.0) ** 2
    loss = F.mean(F.sum(margin, axis=1))
    listing = r.set_params(nn.get_parameters())
    solver = S.Adam(0.05)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "loss": [], "lengths": []}
    for _ in range(3):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res["loss"].append(float(loss.d))
        res["lengths"].append(lengths.d.copy())
    res.update(r.param_values(nn.get_parameters()))
    return res
