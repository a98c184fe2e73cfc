"""An NNabla 1.39 user's own programs, sixth batch continued (nnuser38): skip-gram with
negative sampling, a DQN with a target network, MAML's second-order step, style transfer
optimizing the image itself, PointNet's input transform, SimCLR's NT-Xent loss, ESPCN's
sub-pixel upsampling with ``PF.prelu``, Grad-CAM read from an intermediate gradient and
``F.arange`` grids with sinusoidal encodings; each as
nnabla-examples' scripts (or a user following them) write it, run unchanged on NNabla 1.39 and
on ``stadyn.compat.nnabla``.  Random draws are the case's seeded inputs.
"""

import numpy as np

from compat_harness import nnabla_case

SV = "nnabla.solvers."
PFN = "nnabla.parametric_functions."
FN = "nnabla.functions."


@nnabla_case(names=[PFN + "embed", FN + "batch_matmul", FN + "sigmoid_cross_entropy",
                    SV + "Sgd"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_skipgram_negative_sampling(nn, F, PF, S, r):
    """word2vec's skip-gram with negative sampling (nnabla-examples ``word-embedding``): a
    centre word's ``PF.embed`` row against one context and three negative words' rows from a
    second embedding, scores by ``F.batch_matmul``, labels 1 then 0 through
    ``F.sigmoid_cross_entropy``; SGD whose rate decays linearly by ``set_learning_rate``.
    Five steps over fixed batches."""
    V, D, B, K = 11, 4, 6, 3
    centre = nn.Variable((B, 1))
    ctx = nn.Variable((B, 1 + K))
    label = nn.Variable.from_numpy_array(
        np.concatenate([np.ones((B, 1, 1)), np.zeros((B, 1, K))], axis=2).astype(np.float32))
    with nn.parameter_scope("w2v"):
        u = PF.embed(centre, V, D, name="in")            # (B, 1, D)
        v = PF.embed(ctx, V, D + 1, name="out")          # (B, 1+K, D+1)
    score = F.batch_matmul(u, F.slice(v, (0, 0, 0), (B, 1 + K, D)), transpose_b=True)
    loss = F.mean(F.sigmoid_cross_entropy(score, label))
    listing = r.set_params(nn.get_parameters())
    solver = S.Sgd(1.0)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "loss": [], "lr": []}
    batches = [(r.randint(0, V, (B, 1)), r.randint(0, V, (B, 1 + K))) for _ in range(2)]
    for step in range(5):
        centre.d, ctx.d = batches[step % 2]
        solver.set_learning_rate(1.0 * (1.0 - step / 5.0))
        res["lr"].append(solver.learning_rate())
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res["loss"].append(float(loss.d))
    res["score"] = score.d.copy()
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[FN + "max", FN + "huber_loss", FN + "one_hot", "nnabla.get_parameters",
                    SV + "RMSprop"],
             tols={"loss": (1e-4, 1e-5), "q": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_dqn_target_network(nn, F, PF, S, r):
    """A DQN update as nnabla-examples' ``reinforcement_learning`` writes it: ``q`` and
    ``target`` networks in two scopes, the target's parameters overwritten with the online
    ones by ``.d`` every second step, the bootstrapped ``r + gamma * max_a' Q_target`` built
    with ``F.max(axis=1, keepdims=True)`` and frozen by ``need_grad = False`` on an unlinked
    copy, the taken action's value by ``F.one_hot``, ``F.huber_loss``; RMSprop, four steps."""
    B, O, A = 5, 4, 3
    obs = nn.Variable.from_numpy_array(r.randn(B, O))
    nxt = nn.Variable.from_numpy_array(r.randn(B, O))
    act = nn.Variable.from_numpy_array(r.randint(0, A, (B, 1)))
    rew = nn.Variable.from_numpy_array(r.randn(B, 1))
    done = nn.Variable.from_numpy_array(np.array([[0], [0], [1], [0], [1]], np.float32))

    def qnet(x, scope):
        with nn.parameter_scope(scope):
            return PF.affine(F.relu(PF.affine(x, 6, name="fc1")), A, name="fc2")

    q = qnet(obs, "q")
    with nn.parameter_scope("target"):
        qt = qnet(nxt, "q")
    target = rew + 0.9 * (1.0 - done) * F.max(qt, axis=1, keepdims=True)
    target_fixed = target.get_unlinked_variable(need_grad=False)
    chosen = F.sum(q * F.one_hot(act, (A,)), axis=1, keepdims=True)
    loss = F.mean(F.huber_loss(chosen, target_fixed))
    with nn.parameter_scope("q"):
        online = nn.get_parameters()
    with nn.parameter_scope("target/q"):
        tparams = nn.get_parameters()
    listing = r.set_params(online)
    r.set_params({k: v for k, v in tparams.items()}, scale=0.2)

    def sync():
        for k, v in online.items():
            tparams[k].d = v.d.copy()

    solver = S.RMSprop(0.01)
    solver.set_parameters(online)
    res = {"params": listing, "loss": [], "q": []}
    for step in range(4):
        if step % 2 == 0:
            sync()
        target.forward()
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res["loss"].append(float(loss.d))
        res["q"].append(q.d.copy())
    res["target"] = target.d.copy()
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=["nnabla.grad", FN + "affine", FN + "squared_error", SV + "Adam"],
             tols={"loss": (1e-4, 1e-5), "inner loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_maml_second_order(nn, F, PF, S, r):
    """MAML on a sine-like regression as nnabla-examples' ``meta-learning`` writes it: the
    inner step's gradients by ``nn.grad`` (kept in the graph), fast weights
    ``w - alpha * g`` used by ``F.affine`` on the query set, the outer loss's backward
    reaching the meta-parameters through the second-order terms; Adam on the meta-parameters
    over two tasks, three meta-steps."""
    W1 = nn.parameter.get_parameter_or_create("meta/W1", (1, 8))
    b1 = nn.parameter.get_parameter_or_create("meta/b1", (8,))
    W2 = nn.parameter.get_parameter_or_create("meta/W2", (8, 1))
    b2 = nn.parameter.get_parameter_or_create("meta/b2", (1,))
    params = [W1, b1, W2, b2]

    def net(x, ps):
        return F.affine(F.tanh(F.affine(x, ps[0], ps[1])), ps[2], ps[3])

    tasks = []
    for amp in (1.0, 2.0):
        xs = r.rand(5, 1, low=-2.0, high=2.0)
        xq = r.rand(5, 1, low=-2.0, high=2.0)
        tasks.append((xs, amp * np.sin(xs), xq, amp * np.sin(xq)))
    listing = r.set_params(nn.get_parameters())
    solver = S.Adam(0.01)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "loss": [], "inner loss": []}
    for _ in range(3):
        solver.zero_grad()
        total = 0.0
        for xs, ys, xq, yq in tasks:
            inner = F.mean(F.squared_error(net(nn.Variable.from_numpy_array(xs), params),
                                           nn.Variable.from_numpy_array(ys)))
            grads = nn.grad([inner], params)
            fast = [p - 0.1 * g for p, g in zip(params, grads)]
            outer = F.mean(F.squared_error(net(nn.Variable.from_numpy_array(xq), fast),
                                           nn.Variable.from_numpy_array(yq)))
            outer.forward()
            outer.backward()
            res["inner loss"].append(float(inner.d))
            total += float(outer.d)
        solver.update()
        res["loss"].append(total)
    res["meta grads"] = np.concatenate([p.g.ravel() for p in params])
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[FN + "batch_matmul", PFN + "convolution", SV + "Adam"],
             tols={"loss": (1e-4, 1e-5), "image": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_style_transfer_image_optimized(nn, F, PF, S, r):
    """Style transfer as a user writes it after nnabla-examples' ``style-transfer``: a fixed
    feature extractor (``fix_parameters=True``), Gram matrices by ``F.batch_matmul(f, f,
    transpose_b=True)``, content and style losses, and the solver given the *image* itself
    (``set_parameters({"image": x})``, ``x.need_grad = True``); Adam on the pixels, four
    steps, the parameters of the extractor unchanged."""
    content = r.rand(1, 3, 6, 6)
    style = r.rand(1, 3, 6, 6)
    x = nn.Variable.from_numpy_array(content.copy())
    x.need_grad = True
    sv = nn.Variable.from_numpy_array(style)

    def features(v):
        with nn.parameter_scope("vgg"):
            h1 = F.relu(PF.convolution(v, 4, (3, 3), pad=(1, 1), fix_parameters=True,
                                       name="c1"))
            h2 = F.relu(PF.convolution(h1, 5, (3, 3), pad=(1, 1), fix_parameters=True,
                                       name="c2"))
        return h1, h2

    def gram(f):
        b, c, h, w = f.shape
        m = F.reshape(f, (b, c, h * w))
        return F.batch_matmul(m, m, transpose_b=True) / float(c * h * w)

    x1, x2 = features(x)
    s1, s2 = features(sv)
    c1, c2 = features(nn.Variable.from_numpy_array(content))
    style_loss = F.sum(F.squared_error(gram(x1), gram(s1))) + \
        F.sum(F.squared_error(gram(x2), gram(s2)))
    content_loss = F.mean(F.squared_error(x2, c2))
    loss = content_loss + 100.0 * style_loss
    listing = r.set_params(nn.get_parameters(grad_only=False))
    nn.forward_all([s1, s2, c1, c2])
    solver = S.Adam(0.05)
    solver.set_parameters({"image": x})
    res = {"params": listing, "loss": [], "solver params": sorted(solver.get_parameters())}
    for _ in range(4):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res["loss"].append(float(loss.d))
    res["image"] = x.d.copy()
    res.update(r.param_values(nn.get_parameters(grad_only=False)))
    return res


@nnabla_case(names=[FN + "batch_matmul", FN + "max", FN + "transpose", PFN + "convolution",
                    SV + "Momentum"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_pointnet_input_transform(nn, F, PF, S, r):
    """PointNet (nnabla-examples ``point_cloud``): a T-Net regresses a 3x3 transform (its
    last affine's bias the identity), the points are transformed by ``F.batch_matmul``,
    shared per-point MLPs are 1x1 convolutions, ``F.max`` over the points pools them, and the
    loss adds the orthogonality regulariser ``||T T^T - I||^2``; Momentum, three steps."""
    B, N = 3, 7
    pts = nn.Variable.from_numpy_array(r.randn(B, N, 3))
    t = nn.Variable.from_numpy_array(np.array([[0], [1], [1]], np.int32))

    def mlp(h, widths, scope):
        with nn.parameter_scope(scope):
            for i, w in enumerate(widths):
                h = F.relu(PF.convolution(h, w, (1,), name="conv%d" % i))
        return h

    h = mlp(F.transpose(pts, (0, 2, 1)), [4, 5], "tnet")
    with nn.parameter_scope("tnet"):
        T = F.reshape(PF.affine(F.max(h, axis=2), 9, name="fc"), (B, 3, 3))
    moved = F.batch_matmul(pts, T)
    feat = F.max(mlp(F.transpose(moved, (0, 2, 1)), [6, 8], "feat"), axis=2)
    with nn.parameter_scope("head"):
        logits = PF.affine(feat, 2, name="fc")
    eye = nn.Variable.from_numpy_array(np.tile(np.eye(3, dtype=np.float32), (B, 1, 1)))
    reg = F.mean(F.sum((F.batch_matmul(T, T, transpose_b=True) - eye) ** 2, axis=(1, 2)))
    loss = F.mean(F.softmax_cross_entropy(logits, t)) + 0.01 * reg
    listing = r.set_params(nn.get_parameters())
    nn.get_parameters()["tnet/fc/affine/b"].d = np.eye(3, dtype=np.float32).ravel()
    solver = S.Momentum(0.05, 0.9)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "loss": []}
    for _ in range(3):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res["loss"].append(float(loss.d))
    res["transform"] = T.d.copy()
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[FN + "norm_normalization", FN + "log_softmax", FN + "batch_matmul",
                    SV + "AdamW"],
             tols={"loss": (1e-4, 1e-5), "similarity": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_simclr_nt_xent(nn, F, PF, S, r):
    """SimCLR's NT-Xent loss as a user writes it in NNabla: two augmented views through one
    encoder and projection head, ``F.norm_normalization`` over the feature axis, the cosine
    similarities of all 2N embeddings by ``F.batch_matmul``, the diagonal pushed out with a
    large negative constant, ``F.log_softmax`` over each row at temperature 0.5, the positives
    picked by a mask; AdamW for three steps."""
    N = 4
    a = nn.Variable.from_numpy_array(r.randn(N, 6))
    b = nn.Variable.from_numpy_array(r.randn(N, 6))

    def embed(v):
        with nn.parameter_scope("enc"):
            h = F.relu(PF.affine(v, 8, name="fc1"))
            return PF.affine(h, 5, name="proj")

    z = F.norm_normalization(F.concatenate(embed(a), embed(b), axis=0), p=2, axes=[1])
    sim = F.reshape(F.batch_matmul(F.reshape(z, (1, 2 * N, 5)), F.reshape(z, (1, 2 * N, 5)),
                                   transpose_b=True), (2 * N, 2 * N)) / 0.5
    eye = np.eye(2 * N, dtype=np.float32)
    pos = np.roll(eye, N, axis=1)
    logits = sim - nn.Variable.from_numpy_array(eye * 1e4)
    loss = -F.sum(F.log_softmax(logits, axis=1) * nn.Variable.from_numpy_array(pos)) / (2 * N)
    listing = r.set_params(nn.get_parameters())
    solver = S.AdamW(alpha=0.02, wd=0.05)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "loss": []}
    for _ in range(3):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.weight_decay(0.05)
        solver.update()
        res["loss"].append(float(loss.d))
    res["similarity"] = sim.d.copy()
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[PFN + "prelu", PFN + "convolution", FN + "transpose", FN + "interpolate",
                    SV + "Adam"],
             tols={"loss": (1e-4, 1e-5), "upscaled": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user38_espcn_subpixel(nn, F, PF, S, r):
    """ESPCN super-resolution (nnabla-examples ``super-resolution``): convolutions with
    ``PF.prelu`` (one shared slope, then one per channel), the last producing ``r*r``
    channels rearranged by reshape / ``F.transpose`` / reshape into the upscaled image
    (pixel shuffle written out), trained against the high-resolution target with the
    bilinear ``F.interpolate`` baseline added; Adam, four steps."""
    R = 2
    lo = nn.Variable.from_numpy_array(r.rand(2, 1, 4, 5))
    hi = nn.Variable.from_numpy_array(r.rand(2, 1, 8, 10))
    with nn.parameter_scope("espcn"):
        h = PF.prelu(PF.convolution(lo, 4, (3, 3), pad=(1, 1), name="c1"), name="p1")
        h = PF.prelu(PF.convolution(h, 3, (3, 3), pad=(1, 1), name="c2"), shared=False,
                     name="p2")
        h = PF.convolution(h, R * R, (3, 3), pad=(1, 1), name="c3")
    h = F.reshape(h, (2, 1, R, R, 4, 5))
    h = F.transpose(h, (0, 1, 4, 2, 5, 3))
    up = F.reshape(h, (2, 1, 4 * R, 5 * R)) + \
        F.interpolate(lo, scale=(R, R), mode="linear", align_corners=False)
    loss = F.mean(F.squared_error(up, hi))
    listing = r.set_params(nn.get_parameters())
    solver = S.Adam(0.01)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "loss": []}
    for _ in range(4):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res["loss"].append(float(loss.d))
    res["upscaled"] = up.d.copy()
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[FN + "relu", FN + "average_pooling", PFN + "convolution"],
             rtol=1e-4, atol=1e-5)
def user38_grad_cam(nn, F, PF, r):
    """Grad-CAM as a user writes it: the last conv feature map kept (``persistent = True``),
    the class score's backward with ``clear_buffer=True`` leaving the feature map's gradient,
    channel weights by the spatial mean of that gradient (NumPy), the map
    ``relu(sum_c w_c A_c)`` by ``F.relu`` on an NdArray, normalised to its maximum."""
    x = nn.Variable.from_numpy_array(r.rand(2, 3, 6, 6))
    with nn.parameter_scope("cam"):
        h = F.relu(PF.convolution(x, 4, (3, 3), pad=(1, 1), name="c1"))
        feat = F.relu(PF.convolution(h, 5, (3, 3), pad=(1, 1), name="c2"))
        logits = PF.affine(F.average_pooling(feat, (6, 6)), 3, name="fc")
    listing = r.set_params(nn.get_parameters())
    feat.persistent = True
    res = {"params": listing}
    for cls in (0, 2):
        score = F.sum(F.slice(logits, (0, cls), (2, cls + 1)))
        score.forward(clear_no_need_grad=True)
        feat.grad.zero()
        score.backward(clear_buffer=True)
        w = feat.g.mean(axis=(2, 3), keepdims=True)
        cam = F.relu(nn.NdArray.from_numpy_array((w * feat.d).sum(axis=1)))
        m = cam.data.max(axis=(1, 2), keepdims=True)
        res["cam %d" % cls] = cam.data / np.maximum(m, 1e-8)
        res["score %d" % cls] = float(score.d)
    return res


@nnabla_case(names=[FN + "arange", FN + "r_div_scalar", FN + "sin", FN + "cos",
                    FN + "concatenate"],
             rtol=1e-6, atol=1e-7)
def user38_arange_grids_and_reciprocals(nn, F, PF, r):
    """Grids and encodings a user builds with ``F.arange`` (diffusion and NeRF-style scripts):
    a time grid ``F.arange(0, 100, 0.1)``, a coordinate axis ``F.arange(-1, 1, 0.1)``, a
    decreasing one ``F.arange(3, -2, -0.45)``, and sinusoidal embeddings of the times with the
    inverse frequencies ``1.0 / 10000 ** (k / 8)`` (``F.r_div_scalar``, also ``6.0 / x``).
    NNabla adds ``step`` in float32 value after value, the count too: 1001 times, the last
    99.99905; Stadyn gave ``torch.arange``'s 1000, and divided a number by ``x`` as
    ``x.reciprocal() * val`` (6 / 7 one float32 step off)."""
    res = {}
    times = F.arange(0, 100, 0.1)
    axis = F.arange(-1, 1, 0.1)
    down = F.arange(3, -2, -0.45)
    k = F.arange(0, 8, 2)
    inv_freq = F.r_div_scalar(F.r_pow_scalar(k * (1.0 / 8), 10000.0), 1.0)
    angles = F.reshape(times, (-1, 1)) * F.reshape(inv_freq, (1, -1))
    emb = F.concatenate(F.sin(angles), F.cos(angles), axis=1)
    x = nn.Variable.from_numpy_array(np.array([7, 3, 11, 13, 0.1, -9], np.float32))
    ratio = 6.0 / x
    nn.forward_all([times, axis, down, emb, ratio])
    res["times shape"] = list(times.shape)
    res["times"] = times.d.copy()
    res["axis"] = axis.d.copy()
    res["down"] = down.d.copy()
    res["inv freq"] = inv_freq.d.copy()
    res["embedding"] = emb.d.copy()
    res["six over x"] = ratio.d.copy()
    return res
