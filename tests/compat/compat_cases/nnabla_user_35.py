"""An NNabla 1.39 user's own programs, third batch (nnuser35): each combines several features
the way a user's script does (NNabla's ``doc/`` tutorials, nnabla-examples' utilities) and runs
unchanged on NNabla and on ``stadyn.compat.nnabla``.

Combinations the first two batches (``nnabla_user_28``, ``nnabla_user_28b``) left: a VAE
with a categorical and a Gaussian latent, a conditional GAN with spectral norm, a seq2seq
with teacher forcing and masked losses, a Siamese net, batch-norm statistics read back after
training, learning-rate schedulers with monitors and a mid-run reload, weight normalisation
beside a user's ``PythonFunction``, a head grafted on a frozen trunk with ``rewire_on``.
Random draws (noise, the reparameterisation's epsilon) are the case's seeded inputs, so both
sides see the same numbers.
"""

import functools
import os

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import nnabla_refusal, outcome as _outcome

outcome = functools.partial(_outcome, raised=nnabla_refusal)

SV = "nnabla.solvers."
PFN = "nnabla.parametric_functions."
FN = "nnabla.functions."
LRS = "nnabla.utils.learning_rate_scheduler."


def _train(loss, solver, steps, feed=None):
    losses = []
    for i in range(steps):
        if feed is not None:
            feed(i)
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        losses.append(float(loss.d))
    return losses


@nnabla_case(names=[PFN + "affine", FN + "kl_multinomial", FN + "softmax",
                    FN + "sigmoid_cross_entropy", FN + "exp", SV + "Adam",
                    "nnabla.parameter_scope"])
def user35_vae_two_latents(nn, F, PF, S, r):
    """A VAE with a Gaussian latent (reparameterised with a given epsilon, KL in closed form)
    and a categorical one (``F.kl_multinomial`` against a uniform prior); the decoder's scope
    reused to decode prior samples after Adam training."""
    x = nn.Variable.from_numpy_array((r.rand(6, 10) > 0.5).astype(np.float32))
    eps = nn.Variable.from_numpy_array(r.randn(6, 3))

    def encoder(x):
        with nn.parameter_scope("enc"):
            h = F.tanh(PF.affine(x, 8, name="h"))
            mu = PF.affine(h, 3, name="mu")
            logvar = PF.affine(h, 3, name="logvar")
            logits = PF.affine(h, 4, name="cat")
        return mu, logvar, logits

    def decoder(z, c):
        with nn.parameter_scope("dec"):
            h = F.relu(PF.affine(F.concatenate(z, c, axis=1), 7, name="h"))
            return PF.affine(h, 10, name="out")

    mu, logvar, logits = encoder(x)
    z = mu + F.exp(0.5 * logvar) * eps
    q = F.softmax(logits)
    prior = F.constant(0.25, (6, 4))
    recon = F.sum(F.sigmoid_cross_entropy(decoder(z, q), x), axis=1)
    kl_g = -0.5 * F.sum(1 + logvar - mu ** 2 - F.exp(logvar), axis=1)
    kl_c = F.reshape(F.kl_multinomial(q, prior), (6,))
    loss = F.mean(recon + kl_g + kl_c)
    listing = r.set_params(nn.get_parameters())
    solver = S.Adam(alpha=0.01)
    solver.set_parameters(nn.get_parameters())
    losses = _train(loss, solver, 5)
    zs = nn.Variable.from_numpy_array(r.randn(2, 3))
    cs = nn.Variable.from_numpy_array(np.eye(4, dtype=np.float32)[[1, 3]])
    with nn.parameter_scope("dec"):
        n_dec = len(nn.get_parameters())
    sample = F.sigmoid(decoder(zs, cs))
    sample.forward()
    kl_c.forward()
    res = {"params": listing, "losses": np.array(losses), "sample": sample.d.copy(),
           "kl categorical": kl_c.d.copy(), "decoder params": n_dec,
           "all params": len(nn.get_parameters())}
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[PFN + "convolution", PFN + "spectral_norm", PFN + "deconvolution",
                    FN + "concatenate", FN + "one_hot", FN + "broadcast",
                    FN + "sigmoid_cross_entropy", SV + "Adam"],
             tols={"u after": (1e-4, 1e-5)})
def user35_conditional_gan_spectral_norm(nn, F, PF, S, r):
    """A conditional GAN: labels one-hot (``F.one_hot``), concatenated to the noise for the
    generator and broadcast over the image for a discriminator whose convolutions use
    ``apply_w=PF.spectral_norm`` (the power iteration's ``u`` moves each training forward);
    two Adam solvers, the generator's loss through the discriminator's frozen update."""
    labels = nn.Variable.from_numpy_array(np.array([[0], [2], [1], [2]], np.int32))
    y = F.one_hot(labels, (3,))
    noise = nn.Variable.from_numpy_array(r.randn(4, 5))
    real = nn.Variable.from_numpy_array(np.tanh(r.randn(4, 1, 4, 4)))

    def gen(z, y):
        with nn.parameter_scope("gen"):
            h = F.reshape(F.concatenate(z, y, axis=1), (4, 8, 1, 1))
            h = F.relu(PF.deconvolution(h, 3, (4, 4), name="d1"))
            return F.tanh(PF.convolution(h, 1, (3, 3), pad=(1, 1), name="c1"))

    def dis(img, y):
        ymap = F.broadcast(F.reshape(y, (4, 3, 1, 1)), (4, 3, 4, 4))
        with nn.parameter_scope("dis"):
            h = F.concatenate(img, ymap, axis=1)
            h = F.leaky_relu(PF.convolution(h, 5, (3, 3), name="c1",
                                            apply_w=lambda w: PF.spectral_norm(w, dim=0)))
            return PF.affine(h, 1, name="fc")

    fake = gen(noise, y)
    d_real = dis(real, y)
    d_fake = dis(fake, y)
    one = F.constant(1, (4, 1))
    zero = F.constant(0, (4, 1))
    loss_d = F.mean(F.sigmoid_cross_entropy(d_real, one)) + \
        F.mean(F.sigmoid_cross_entropy(d_fake, zero))
    loss_g = F.mean(F.sigmoid_cross_entropy(d_fake, one))
    listing = r.set_params(nn.get_parameters(grad_only=False))
    with nn.parameter_scope("gen"):
        sg = S.Adam(0.01, beta1=0.5)
        sg.set_parameters(nn.get_parameters())
    with nn.parameter_scope("dis"):
        sd = S.Adam(0.01, beta1=0.5)
        sd.set_parameters(nn.get_parameters())
    res = {"params": listing, "grad params": sorted(nn.get_parameters().keys()),
           "loss d": [], "loss g": []}
    u = [v for k, v in nn.get_parameters(grad_only=False).items() if k.endswith("/u")][0]
    for i in range(3):
        loss_d.forward()
        if i == 0:
            res["u forward"] = u.d.copy()
        sd.zero_grad()
        loss_d.backward()
        if i == 0:
            res["u backward"] = u.d.copy()
        sd.update()
        res["loss d"].append(float(loss_d.d))
        loss_g.forward()
        sg.zero_grad()
        loss_g.backward()
        sg.update()
        res["loss g"].append(float(loss_g.d))
    res["u after"] = u.d.copy()
    fake.forward()
    res["fake"] = fake.d.copy()
    return res


@nnabla_case(names=[PFN + "embed", PFN + "lstm_cell", FN + "stack", FN + "split",
                    FN + "softmax_cross_entropy", FN + "max", SV + "Adam"])
def user35_seq2seq_teacher_forcing(nn, F, PF, S, r):
    """A seq2seq over tokens: the source embedded and split over time into a ``PF.lstm_cell``
    encoder, the decoder fed the shifted target (teacher forcing), its logits ``F.stack``-ed
    over time, the cross entropy masked by the targets' lengths; then greedy decoding with
    ``F.max(only_index=True)``, one step at a time in a new graph over the same parameters."""
    B, T, V, E, H = 3, 4, 6, 5, 7
    src = nn.Variable.from_numpy_array(r.randint(1, V, (B, T)))
    tgt = r.randint(1, V, (B, T))
    lengths = np.array([4, 2, 3])
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(np.float32)
    tgt = tgt * mask.astype(np.int32)
    dec_in = nn.Variable.from_numpy_array(np.concatenate([np.zeros((B, 1), np.int32),
                                                          tgt[:, :-1]], axis=1))
    label = nn.Variable.from_numpy_array(tgt.reshape(B, T, 1))
    m = nn.Variable.from_numpy_array(mask.reshape(B, T, 1))

    def encode(src):
        h = F.constant(0, (B, H))
        c = F.constant(0, (B, H))
        emb = PF.embed(src, V, E, name="src_embed")
        for xt in F.split(emb, axis=1):
            with nn.parameter_scope("enc"):
                h, c = PF.lstm_cell(xt, h, c, H)
        return h, c

    def step(tok, h, c):
        e = PF.embed(tok, V, E, name="tgt_embed")
        with nn.parameter_scope("dec"):
            h, c = PF.lstm_cell(e, h, c, H)
        return PF.affine(h, V, name="proj"), h, c

    h, c = encode(src)
    logits = []
    for tok in F.split(dec_in, axis=1):
        y, h, c = step(tok, h, c)
        logits.append(y)
    logits = F.stack(*logits, axis=1)
    loss = F.sum(F.softmax_cross_entropy(logits, label, axis=2) * m) / F.sum(m)
    listing = r.set_params(nn.get_parameters())
    solver = S.Adam(alpha=0.02)
    solver.set_parameters(nn.get_parameters())
    losses = _train(loss, solver, 4)
    h, c = encode(src)
    tok = nn.Variable.from_numpy_array(np.zeros((B,), np.int32))
    out = []
    for _ in range(T):
        y, h, c = step(tok, h, c)
        idx = F.max(y, axis=1, only_index=True)
        idx.forward()
        out.append(idx.d.astype(np.int32).tolist())
        tok = nn.Variable.from_numpy_array(idx.d.astype(np.int32))
    return {"params": listing, "losses": np.array(losses), "greedy": out,
            "logits shape": list(logits.shape)}


@nnabla_case(names=[PFN + "convolution", PFN + "affine", FN + "maximum_scalar",
                    FN + "pow_scalar", FN + "squared_error", SV + "Momentum"])
def user35_siamese_contrastive(nn, F, PF, S, r):
    """A Siamese net: one tower (conv, pooling, affine) built twice in the same scope (the
    parameters shared), a contrastive loss with a margin, Momentum training; the distances of
    similar and dissimilar pairs before and after."""
    a = nn.Variable.from_numpy_array(r.randn(4, 1, 6, 6))
    b = nn.Variable.from_numpy_array(r.randn(4, 1, 6, 6))
    same = nn.Variable.from_numpy_array(np.array([1, 0, 1, 0], np.float32))

    def tower(x):
        with nn.parameter_scope("tower"):
            h = F.relu(PF.convolution(x, 3, (3, 3), name="conv"))
            h = F.max_pooling(h, (2, 2))
            return PF.affine(h, 2, name="fc")

    ea, eb = tower(a), tower(b)
    d2 = F.sum(F.squared_error(ea, eb), axis=1)
    d = F.pow_scalar(d2 + 1e-6, 0.5)
    margin = 1.0
    loss = F.mean(same * d2 + (1 - same) * F.maximum_scalar(margin - d, 0) ** 2) * 0.5
    listing = r.set_params(nn.get_parameters())
    d.forward()
    before = d.d.copy()
    solver = S.Momentum(0.1, 0.9)
    solver.set_parameters(nn.get_parameters())
    losses = _train(loss, solver, 5)
    d.forward()
    return {"params": listing, "losses": np.array(losses), "d before": before,
            "d after": d.d.copy(), "n params": len(nn.get_parameters())}


@nnabla_case(names=[PFN + "batch_normalization", PFN + "mean_subtraction",
                    FN + "batch_normalization", "nnabla.ext_utils.get_extension_context",
                    "nnabla.set_default_context", "nnabla.get_parameters", SV + "Sgd"])
def user35_batch_norm_statistics_read_back(nn, F, PF, S, r):
    """A CPU context from ``get_extension_context('cpu')``; ``PF.mean_subtraction`` then
    conv-BN trained a few steps; the running statistics read from
    ``get_parameters(grad_only=False)`` and used by hand in ``F.batch_normalization(...,
    batch_stat=False)``, which must equal the ``batch_stat=False`` graph's output; the
    mean subtraction's running mean and count."""
    ext = r.module("nnabla.ext_utils")
    ctx = ext.get_extension_context("cpu", device_id="0", type_config="float")
    nn.set_default_context(ctx)
    data = [r.randn(5, 2, 4, 4) * 2 + 1 for _ in range(3)]
    x = nn.Variable((5, 2, 4, 4))
    t = nn.Variable.from_numpy_array(np.array([[0], [1], [2], [0], [1]], np.int32))

    def net(x, test):
        h = PF.mean_subtraction(x, update_running_mean=not test, name="ms")
        h = PF.convolution(h, 3, (3, 3), pad=(1, 1), with_bias=False, name="conv")
        h = PF.batch_normalization(h, batch_stat=not test, decay_rate=0.8, name="bn")
        return PF.affine(F.relu(h), 3, name="fc")

    loss = F.mean(F.softmax_cross_entropy(net(x, False), t))
    listing = r.set_params(nn.get_parameters(grad_only=False))
    for k, v in nn.get_parameters(grad_only=False).items():
        if k.endswith("/var") or k.endswith("/t"):
            v.d = 0 if k.endswith("/t") else 1
        if k.endswith("/mean"):
            v.d = 0
    solver = S.Sgd(0.05)
    solver.set_parameters(nn.get_parameters())

    def feed(i):
        x.d = data[i]
    losses = _train(loss, solver, 3, feed)
    p = nn.get_parameters(grad_only=False)
    x.d = data[0]
    y = net(x, True)
    y.forward()
    ms_mean = p["ms/mean_subtraction/mean"]
    h = F.convolution(x - F.reshape(ms_mean, (1, 2, 4, 4)), p["conv/conv/W"])
    bn = F.batch_normalization(h, p["bn/bn/beta"], p["bn/bn/gamma"],
                               p["bn/bn/mean"], p["bn/bn/var"],
                               batch_stat=False)
    bn.forward()
    return {"params": listing, "losses": np.array(losses), "y": y.d.copy(),
            "bn mean": p["bn/bn/mean"].d.copy(), "bn var": p["bn/bn/var"].d.copy(),
            "ms mean": ms_mean.d.copy(), "ms t": p["ms/mean_subtraction/t"].d.copy(),
            "by hand": bn.d.copy(), "context": [ctx.backend, ctx.array_class]}


@nnabla_case(names=[LRS + "CosineScheduler", LRS + "LinearWarmupScheduler",
                    FN + "top_n_error", "nnabla.monitor.MonitorSeries",
                    "nnabla.save_parameters", "nnabla.load_parameters", SV + "Adam"])
def user35_scheduled_training_reloaded(nn, F, PF, S, r):
    """Training with a cosine schedule behind a linear warmup, the top-1 error monitored with
    ``MonitorSeries`` (interval 2), the parameters saved at step 4 and loaded back at step 6
    (the later steps redone from there): the monitor's file and the learning rates."""
    LR = r.module("nnabla.utils.learning_rate_scheduler")
    M = r.module("nnabla.monitor")
    xs = r.randn(8, 5)
    ts = (np.arange(8) % 4).astype(np.int32).reshape(8, 1)
    x = nn.Variable.from_numpy_array(xs)
    t = nn.Variable.from_numpy_array(ts)
    with nn.parameter_scope("clf"):
        y = PF.affine(F.relu(PF.affine(x, 6, name="l1")), 4, name="l2")
    loss = F.mean(F.softmax_cross_entropy(y, t))
    err = F.mean(F.top_n_error(y, t, n=1))
    listing = r.set_params(nn.get_parameters())
    sched = LR.LinearWarmupScheduler(LR.CosineScheduler(0.05, 10), 3)
    solver = S.Adam(alpha=0.05)
    solver.set_parameters(nn.get_parameters())
    monitor = M.Monitor("logs")
    merr = M.MonitorSeries("train-error", monitor, interval=2)
    lrs, losses = [], []
    for i in range(10):
        if i == 6:
            nn.load_parameters("step4.h5")
        lr = sched.get_learning_rate(i)
        lrs.append(lr)
        solver.set_learning_rate(lr)
        loss.forward()
        err.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        losses.append(float(loss.d))
        merr.add(i, float(err.d))
        if i == 4:
            nn.save_parameters("step4.h5")
    with open(os.path.join("logs", "train-error.series.txt")) as f:
        series = [line.split() for line in f.read().splitlines()]
    res = {"params": listing, "lrs": lrs, "losses": np.array(losses),
           "series": [[int(a), float(b)] for a, b in series]}
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[PFN + "weight_normalization", PFN + "affine", "nnabla.function.PythonFunction",
                    SV + "Sgd", "nnabla.get_current_context"])
def user35_weight_norm_with_python_function(nn, F, PF, S, r):
    """A user's ``PythonFunction`` (a soft clip ``x / (1 + |x|)`` with its backward) between
    two affines whose weights are weight-normalised (``apply_w=PF.weight_normalization``,
    the gain ``g`` a parameter); Sgd training, then the function's name in the graph."""
    FB = r.module("nnabla.function")

    class SoftSign(FB.PythonFunction):
        def __init__(self, ctx):
            super(SoftSign, self).__init__(ctx)

        @property
        def name(self):
            return "UserSoftSign"

        def min_outputs(self):
            return 1

        def grad_depends_output_data(self, i, o):
            return False

        def grad_depends_input_data(self, i, j):
            return True

        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            a = inputs[0].data.data
            outputs[0].data.data = a / (1 + np.abs(a))

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            if not propagate_down[0]:
                return
            a = inputs[0].data.data
            g = outputs[0].grad.data / (1 + np.abs(a)) ** 2
            if accum[0]:
                inputs[0].grad.data += g
            else:
                inputs[0].grad.data = g

    x = nn.Variable.from_numpy_array(r.randn(6, 4))
    t = nn.Variable.from_numpy_array(r.randn(6, 2))
    h = PF.affine(x, 5, name="fc1", apply_w=lambda w: PF.weight_normalization(w, dim=1))
    h = SoftSign(nn.get_current_context())(h)
    y = PF.affine(h, 2, name="fc2", apply_w=PF.weight_normalization)
    loss = F.mean(F.squared_error(y, t))
    listing = r.set_params(nn.get_parameters())
    solver = S.Sgd(0.1)
    solver.set_parameters(nn.get_parameters())
    losses = _train(loss, solver, 4)
    names = []
    loss.visit(lambda f: names.append(f.name))
    res = {"params": listing, "losses": np.array(losses), "functions": names}
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=["nnabla.Variable.rewire_on", "nnabla.Variable.need_grad",
                    FN + "image_augmentation", PFN + "convolution", SV + "RMSprop"])
def user35_head_on_frozen_trunk(nn, F, PF, S, r):
    """A trunk built on a placeholder, then ``rewire_on`` onto a preprocessed input
    (``F.image_augmentation`` with its identity settings, then scaled); the trunk's
    parameters frozen (``need_grad = False``) and only the head trained with RMSprop: the
    trunk unchanged, the head moved, the losses; ``pre`` itself has lost its parent to
    ``slot`` (NNabla refuses its ``forward``)."""
    img = nn.Variable.from_numpy_array(r.rand(3, 2, 5, 5))
    t = nn.Variable.from_numpy_array(np.array([[1], [0], [1]], np.int32))
    slot = nn.Variable((3, 2, 5, 5))
    with nn.parameter_scope("trunk"):
        feat = F.relu(PF.convolution(slot, 4, (3, 3), name="c"))
        trunk = nn.get_parameters()
    listing = r.set_params(trunk)
    pre = F.image_augmentation(img, shape=(2, 5, 5)) * 2 - 1
    slot.rewire_on(pre)
    r.touch("nnabla.Variable.rewire_on", "nnabla.Variable.need_grad")
    with nn.parameter_scope("head"):
        y = PF.affine(F.average_pooling(feat, (3, 3)), 2, name="fc")
        head = nn.get_parameters()
    listing += r.set_params(head)
    for v in trunk.values():
        v.need_grad = False
    before = {k: v.d.copy() for k, v in trunk.items()}
    loss = F.mean(F.softmax_cross_entropy(y, t))
    solver = S.RMSprop(0.01)
    solver.set_parameters(nn.get_parameters())
    losses = _train(loss, solver, 4)
    moved = outcome(pre.forward)
    slot.forward()
    return {"pre forward": moved, "params": listing, "losses": np.array(losses),
            "trunk unchanged": all(bool(np.array_equal(v.d, before[k]))
                                   for k, v in trunk.items()),
            "solver params": sorted(solver.get_parameters().keys()),
            "head W": head["fc/affine/W"].d.copy(), "slot": slot.d.copy(),
            "slot parent": slot.parent.name if slot.parent is not None else None}


@nnabla_case(names=["nnabla.Variable.forward", "nnabla.Variable.backward",
                    "nnabla.Variable.rewire_on", FN + "tanh"])
def user35_forward_of_a_leaf(nn, F, r):
    """What the frozen-trunk program found: ``forward``/``backward`` of a Variable with no
    parent function (a placeholder, a value from NumPy, one whose function ``rewire_on``
    moved away) is refused, as NNabla's (``Failed parent_``); the rewired Variable runs."""
    r.touch("nnabla.Variable.forward", "nnabla.Variable.backward", "nnabla.Variable.rewire_on")
    x = nn.Variable.from_numpy_array(r.randn(3))
    res = {"placeholder forward": outcome(lambda: nn.Variable((2,)).forward()),
           "placeholder backward": outcome(lambda: nn.Variable((2,)).backward()),
           "leaf forward": outcome(x.forward),
           "leaf backward": outcome(lambda: x.backward(clear_buffer=True))}
    slot = nn.Variable((3,))
    y = F.tanh(slot)
    moved = F.relu(x) * 2
    slot.rewire_on(moved)
    res["moved parent"] = moved.parent is None
    res["moved forward"] = outcome(moved.forward)
    res["moved backward"] = outcome(moved.backward)
    res["slot forward"] = outcome(slot.forward)
    y.forward()
    res["y"] = y.d.copy()
    return res
