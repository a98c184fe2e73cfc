"""An NNabla 1.39 user's own programs, fifth batch (nnuser37): each combines several features
the way a user's script does (nnabla-examples' VAE, Siamese and transformer scripts, NNabla's
``doc/`` tutorials and ``python/test/``) and runs unchanged on NNabla and on
``stadyn.compat.nnabla``.

Combinations the earlier batches (``nnabla_user_28``, ``_28b``, ``_35``, ``_36``) left: a VAE
whose reparametrization draws ``F.randn`` in the static graph under ``nn.seed``, a transformer
block (``PF.multi_head_attention``, ``PF.layer_normalization``, ``F.gelu``) trained under
``nn.auto_forward``, a Siamese residual tower sharing one scope evaluated with
``batch_stat=False``, evaluation metrics kept in ``nn.NdArray`` sums and ``.data.cast``, Lamb /
AdaBelief / RMSpropGraves driven by ``learning_rate_scheduler`` and
``clear_parameters``, a layer frozen mid-run by ``need_grad``, a masked token loss over
``F.embed``, ``F.random_crop`` training under ``nn.seed`` and nested ``nn.context_scope``
contexts from ``ext_utils``.
"""

import numpy as np

from compat_harness import nnabla_case

SV = "nnabla.solvers."
PFN = "nnabla.parametric_functions."
FN = "nnabla.functions."
LRS = "nnabla.utils.learning_rate_scheduler."


@nnabla_case(names=["nnabla.seed", FN + "randn", FN + "binary_cross_entropy", FN + "exp",
                    PFN + "affine", SV + "Adam"],
             tols={"loss": (1e-4, 1e-5), "rec": (1e-4, 1e-5), "kl": (1e-4, 1e-5)})
def user37_vae_reparametrized(nn, F, PF, S, r):
    """A VAE as nnabla-examples' ``vae`` writes it: encoder to ``mu`` and ``logvar``,
    ``z = mu + exp(logvar / 2) * eps`` with ``eps = F.randn(shape=mu.shape)`` drawn anew at
    every forward of the static graph (``nn.seed(313)`` first), Bernoulli reconstruction by
    ``F.binary_cross_entropy`` and the Gaussian KL in closed form; Adam for five steps, then
    the mean decoded at ``z = mu`` (no noise)."""
    nn.seed(313)
    x = nn.Variable.from_numpy_array(r.rand(6, 8))

    def encode(x):
        with nn.parameter_scope("enc"):
            h = F.tanh(PF.affine(x, 5, name="fc1"))
            return PF.affine(h, 2, name="mu"), PF.affine(h, 2, name="logvar")

    def decode(z):
        with nn.parameter_scope("dec"):
            return F.sigmoid(PF.affine(F.tanh(PF.affine(z, 5, name="fc1")), 8, name="fc2"))

    mu, logvar = encode(x)
    eps = F.randn(shape=mu.shape)
    z = mu + F.exp(logvar * 0.5) * eps
    rec = F.sum(F.binary_cross_entropy(decode(z), x)) / 6.0
    kl = -0.5 * F.sum(1.0 + logvar - mu ** 2 - F.exp(logvar)) / 6.0
    loss = rec + kl
    listing = r.set_params(nn.get_parameters())
    solver = S.Adam(0.01)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "loss": [], "rec": [], "kl": [], "eps": []}
    for _ in range(5):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res["loss"].append(float(loss.d))
        res["rec"].append(float(rec.d))
        res["kl"].append(float(kl.d))
        res["eps"].append(eps.d.copy())
    mean_only = decode(encode(x)[0])
    mean_only.forward()
    res["decoded at mu"] = mean_only.d.copy()
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=["nnabla.auto_forward", PFN + "multi_head_attention",
                    PFN + "layer_normalization", FN + "gelu", FN + "softmax_cross_entropy",
                    SV + "AdamW"],
             tols={"loss": (1e-4, 1e-5), "attention": (1e-4, 1e-5),
                   # the key bias's gradient is zero but for rounding (softmax ignores a
                   # shift of every score): Adam scales that noise to steps of ~1e-2
                   "attn/multi_head_attention/k_bias|8": (0, 1e-4)},
             rtol=1e-4, atol=1e-5)
def user37_transformer_block_auto_forward(nn, F, PF, S, r):
    """One post-norm transformer encoder block (self-attention of two heads, residual,
    ``PF.layer_normalization``, a ``F.gelu`` feed-forward, residual, norm) over sequence-first
    ``(L, B, E)`` inputs, mean-pooled into a classifier; trained three steps with AdamW under
    ``nn.auto_forward()`` (the graph rebuilt every step, losses read without ``forward``)."""
    x_np = r.randn(5, 3, 8)
    t = nn.Variable.from_numpy_array(np.array([[1], [0], [2]], np.int32))

    def block(x):
        with nn.parameter_scope("attn"):
            a, w = PF.multi_head_attention(x, x, x, num_heads=2)
        h = PF.layer_normalization(x + a, name="ln1")
        f = PF.affine(F.gelu(PF.affine(h, 16, base_axis=2, name="ff1")), 8, base_axis=2,
                      name="ff2")
        return PF.layer_normalization(h + f, name="ln2"), w

    res = {"loss": []}
    solver = None
    with nn.auto_forward():
        for step in range(3):
            x = nn.Variable.from_numpy_array(x_np)
            y, attn = block(x)
            logits = PF.affine(F.mean(y, axis=0), 3, name="head")
            loss = F.mean(F.softmax_cross_entropy(logits, t))
            if solver is None:
                res["params"] = r.set_params(nn.get_parameters())
                solver = S.AdamW(alpha=0.01, wd=0.01)
                solver.set_parameters(nn.get_parameters())
                y, attn = block(x)                  # again, on the values just set
                logits = PF.affine(F.mean(y, axis=0), 3, name="head")
                loss = F.mean(F.softmax_cross_entropy(logits, t))
            res["loss"].append(float(loss.d))
            solver.zero_grad()
            loss.backward()
            solver.weight_decay(0.01)
            solver.update()
    res["attention"] = attn.d.copy()
    res["attention shape"] = list(attn.shape)
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=["nnabla.parameter_scope", PFN + "convolution", PFN + "batch_normalization",
                    FN + "maximum_scalar", SV + "Momentum"],
             tols={"loss": (1e-4, 1e-5), "eval distance": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user37_siamese_resnet_eval(nn, F, PF, S, r):
    """A Siamese pair of residual towers sharing one ``parameter_scope("tower")`` (the second
    call reuses the first's parameters), a contrastive loss with margin 1 trained three
    steps with Momentum on batch statistics, then the same towers rebuilt with
    ``batch_stat=False`` for evaluation: the distances and the running statistics."""
    a = nn.Variable.from_numpy_array(r.randn(4, 2, 5, 5))
    b = nn.Variable.from_numpy_array(r.randn(4, 2, 5, 5))
    same = nn.Variable.from_numpy_array(np.array([[1], [0], [1], [0]], np.float32))

    def tower(x, test):
        with nn.parameter_scope("tower"):
            h = PF.convolution(x, 3, (3, 3), pad=(1, 1), with_bias=False, name="conv0")
            h = F.relu(PF.batch_normalization(h, batch_stat=not test, name="bn0"))
            s = PF.convolution(h, 3, (3, 3), pad=(1, 1), with_bias=False, name="conv1")
            s = PF.batch_normalization(s, batch_stat=not test, name="bn1")
            h = F.relu(h + s)
            return PF.affine(F.average_pooling(h, (5, 5)), 4, name="fc")

    def distance(test):
        d = tower(a, test) - tower(b, test)
        return F.sum(d ** 2, axis=1, keepdims=True)

    d2 = distance(False)
    dist = (d2 + 1e-6) ** 0.5
    loss = F.mean(same * d2 + (1.0 - same) * F.maximum_scalar(1.0 - dist, 0.0) ** 2)
    listing = r.set_params(nn.get_parameters(grad_only=False))
    solver = S.Momentum(0.05, 0.9)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "loss": [], "trained": sorted(nn.get_parameters().keys())}
    for _ in range(3):
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
        res["loss"].append(float(loss.d))
    ev = distance(True)
    ev.forward(clear_buffer=True)
    res["eval distance"] = ev.d.copy()
    res.update(r.param_values(nn.get_parameters(grad_only=False)))
    return res


@nnabla_case(names=["nnabla.NdArray", "nnabla.NdArray.cast", "nnabla.Variable.data",
                    FN + "top_n_error", FN + "categorical_cross_entropy", FN + "softmax"],
             rtol=1e-5, atol=1e-6)
def user37_metrics_in_ndarrays(nn, F, PF, r):
    """An evaluation loop over three batches of a fixed classifier: the top-1 and top-2 errors
    (``F.top_n_error``) and ``F.categorical_cross_entropy`` of ``F.softmax``, summed in
    ``nn.NdArray`` accumulators (``+=`` of ``.data``, NdArray ``*`` a scalar, ``F`` called on
    NdArrays imperatively), the means read after ``.data.cast(np.float16)`` and back."""
    w = nn.Variable.from_numpy_array(r.randn(6, 4))
    top1 = nn.NdArray.from_numpy_array(np.zeros((), np.float32))
    top2 = nn.NdArray.from_numpy_array(np.zeros((), np.float32))
    xent = nn.NdArray((1,))
    xent.zero()
    res = {}
    for k in range(3):
        x = nn.Variable.from_numpy_array(r.randn(5, 6))
        t = nn.Variable.from_numpy_array(r.randint(0, 4, (5, 1)))
        logits = F.affine(x, w)
        e1 = F.mean(F.top_n_error(logits, t, n=1))
        e2 = F.mean(F.top_n_error(logits, t, n=2))
        ce = F.sum(F.categorical_cross_entropy(F.softmax(logits), t))
        nn.forward_all([e1, e2, ce])
        top1 += e1.data
        top2 += e2.data * 1.0
        xent = xent + F.reshape(ce.data, (1,))
        res["batch %d top-2 per sample" % k] = F.top_n_error(logits.data, t.data, n=2).data
    half = F.mul_scalar(top1, 1.0 / 3).cast(np.float16)
    res["top-1 mean fp16"] = half
    res["top-1 mean dtype"] = str(half.dtype)
    res["top-2 mean"] = (top2 / 3.0).data
    res["xent"] = xent.data
    out = nn.Variable.from_numpy_array(np.array([1.5, -2.25], np.float32))
    out.data.cast(np.float16)
    r.touch("nnabla.NdArray.cast", "nnabla.Variable.data")
    res["variable fp16"] = [str(out.d.dtype), out.d.tolist()]
    out.data.cast(np.float32)
    res["variable back"] = [str(out.d.dtype), out.d.tolist()]
    return res


@nnabla_case(names=[SV + "Lamb", SV + "AdaBelief", SV + "RMSpropGraves",
                    LRS + "CosineScheduler", LRS + "StepScheduler",
                    LRS + "LinearWarmupScheduler", "nnabla.solver.Solver.clear_parameters",
                    "nnabla.solver.Solver.learning_rate"],
             rtol=1e-4, atol=1e-5)
def user37_schedules_and_cleared_solvers(nn, F, PF, S, r):
    """Three heads on one trunk, each its own solver (Lamb, AdaBelief, RMSpropGraves) and
    schedule (cosine with linear warm-up, step, cosine), ``set_learning_rate`` from the
    schedule before every update; after four steps each solver's ``clear_parameters()`` and a
    fresh ``set_parameters`` (its state gone), then two more steps."""
    lrs = r.module("nnabla.utils.learning_rate_scheduler")
    x = nn.Variable.from_numpy_array(r.randn(6, 4))
    y = nn.Variable.from_numpy_array(r.randn(6, 1))
    losses, solvers = [], []
    for k, (make, sched) in enumerate([
            (lambda: S.Lamb(eta=0.02), lrs.LinearWarmupScheduler(
                lrs.CosineScheduler(0.02, 6), 2)),
            (lambda: S.AdaBelief(alpha=0.05), lrs.StepScheduler(0.05, 0.5, [2, 4])),
            (lambda: S.RMSpropGraves(lr=0.01), lrs.CosineScheduler(0.01, 6))]):
        with nn.parameter_scope("head%d" % k):
            pred = PF.affine(F.tanh(PF.affine(x, 3, name="fc1")), 1, name="fc2")
            losses.append(F.mean(F.squared_error(pred, y)))
            solvers.append((make(), sched, nn.get_parameters()))
    listing = r.set_params(nn.get_parameters())
    res = {"params": listing, "lr": [], "loss": []}
    for s, _, params in solvers:
        s.set_parameters(params)
    for it in range(6):
        if it == 4:
            for s, _, params in solvers:
                s.clear_parameters()
                s.set_parameters(params)
            res["states after clear"] = [len(s.get_states()) for s, _, _ in solvers]
        nn.forward_all(losses)
        row = []
        for loss, (s, sched, _) in zip(losses, solvers):
            s.set_learning_rate(sched.get_learning_rate(it))
            s.zero_grad()
            loss.backward()
            s.update()
            row.append(s.learning_rate())
        res["lr"].append(row)
        res["loss"].append([float(l.d) for l in losses])
    r.touch("nnabla.solver.Solver.clear_parameters", "nnabla.solver.Solver.learning_rate")
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=["nnabla.Variable.need_grad", PFN + "affine", SV + "Momentum",
                    "nnabla.solver.Solver.weight_decay"],
             rtol=1e-4, atol=1e-5)
def user37_layer_frozen_mid_training(nn, F, PF, S, r):
    """Fine-tuning as a user writes it: a two-layer net trained three steps with Momentum and
    weight decay on every parameter, then the first layer frozen by ``need_grad = False`` on
    its parameter Variables (the graph and the solver left as they were) for three more
    steps, then thawed for two: the frozen layer still moves by its momentum and decay on
    NNabla (the solver updates what it holds, from the gradient ``zero_grad`` left)."""
    x = nn.Variable.from_numpy_array(r.randn(5, 4))
    t = nn.Variable.from_numpy_array(r.randn(5, 2))
    with nn.parameter_scope("body"):
        h = F.relu(PF.affine(x, 3, name="fc"))
    with nn.parameter_scope("head"):
        y = PF.affine(h, 2, name="fc")
    loss = F.mean(F.squared_error(y, t))
    listing = r.set_params(nn.get_parameters())
    solver = S.Momentum(0.1, 0.9)
    solver.set_parameters(nn.get_parameters())
    with nn.parameter_scope("body"):
        body = nn.get_parameters()
    res = {"params": listing, "loss": [], "body W": [], "body W.g": [], "listed": []}
    for it in range(8):
        if it in (3, 6):
            for p in body.values():
                p.need_grad = it == 6
            res["listed"].append(sorted(nn.get_parameters().keys()))
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.weight_decay(1e-2)
        solver.update()
        r.touch("nnabla.Variable.need_grad", "nnabla.solver.Solver.weight_decay")
        res["loss"].append(float(loss.d))
        res["body W"].append(body["fc/affine/W"].d.copy())
        res["body W.g"].append(body["fc/affine/W"].g.copy())
    res.update(r.param_values(nn.get_parameters(grad_only=False)))
    return res


@nnabla_case(names=[PFN + "embed", FN + "softmax_cross_entropy", FN + "not_equal_scalar",
                    FN + "greater_equal_scalar", FN + "max", SV + "Adam"],
             tols={"loss": (1e-4, 1e-5), "accuracy": (0, 1e-6)}, rtol=1e-4, atol=1e-5)
def user37_masked_token_loss(nn, F, PF, S, r):
    """A tagger over padded token sequences (id 0 is padding): ``PF.embed``, a position-wise
    ``PF.affine`` (``base_axis=2``), ``F.softmax_cross_entropy`` per token weighted by the
    mask ``F.not_equal_scalar(ids, 0)`` and divided by its sum; Adam four steps; the masked
    accuracy from ``F.max(..., only_index=True)`` with a ``greater_equal_scalar`` length mask
    cross-checked."""
    ids = np.array([[3, 5, 2, 0, 0], [1, 4, 4, 6, 2], [6, 0, 0, 0, 0]], np.int32)
    lengths = np.array([3, 5, 1], np.float32)
    tags = nn.Variable.from_numpy_array(r.randint(0, 3, (3, 5, 1)))
    w = nn.Variable.from_numpy_array(ids)
    pos = nn.Variable.from_numpy_array(np.tile(np.arange(5, dtype=np.float32), (3, 1)))
    n = nn.Variable.from_numpy_array(lengths.reshape(3, 1))
    e = PF.embed(w, 7, 4, name="emb")
    logits = PF.affine(F.tanh(e), 3, base_axis=2, name="out")
    mask = F.not_equal_scalar(w, 0)
    mask2 = F.greater_equal_scalar(n - pos, 1.0)
    ce = F.reshape(F.softmax_cross_entropy(logits, tags, axis=2), (3, 5))
    loss = F.sum(ce * mask) / F.sum(mask)
    pred = F.max(logits, axis=2, only_index=True)
    correct = F.sum(F.equal(F.reshape(pred, (3, 5)), F.reshape(tags, (3, 5))) * mask) \
        / F.sum(mask)
    listing = r.set_params(nn.get_parameters())
    solver = S.Adam(0.05)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "loss": [], "accuracy": []}
    for _ in range(4):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        correct.forward()
        res["loss"].append(float(loss.d))
        res["accuracy"].append(float(correct.d))
    nn.forward_all([mask, mask2, pred])
    res["masks agree"] = bool(np.array_equal(mask.d, mask2.d))
    res["mask dtype"] = str(mask.d.dtype)
    res["pred"] = pred.d.copy()
    res["emb grad of padding row"] = nn.get_parameters()["emb/embed/W"].g[0].copy()
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=["nnabla.seed", FN + "random_crop", FN + "randn", PFN + "convolution",
                    SV + "Sgd"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user37_random_crop_training(nn, F, PF, S, r):
    """Augmented training: ``nn.seed(7)``, the static graph crops 6x6 windows from 8x8
    images with ``F.random_crop`` and adds ``F.randn`` noise of scale 0.1 (both drawn anew
    at every forward), a small CNN with ``F.global_average_pooling`` trained four steps with
    SGD; the crops seen each step, then a centre-crop evaluation by ``F.slice``."""
    nn.seed(7)
    x = nn.Variable.from_numpy_array(r.rand(3, 1, 8, 8))
    t = nn.Variable.from_numpy_array(np.array([[0], [1], [1]], np.int32))
    crop = F.random_crop(x, shape=(1, 6, 6))
    noisy = crop + 0.1 * F.randn(shape=crop.shape)

    def net(h):
        h = F.relu(PF.convolution(h, 4, (3, 3), pad=(1, 1), name="conv"))
        return PF.affine(F.global_average_pooling(h), 2, name="fc")

    loss = F.mean(F.softmax_cross_entropy(net(noisy), t))
    listing = r.set_params(nn.get_parameters())
    solver = S.Sgd(0.5)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "loss": [], "crops": []}
    for _ in range(4):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res["loss"].append(float(loss.d))
        res["crops"].append(crop.d.copy())
    centre = net(F.slice(x, (0, 0, 1, 1), (3, 1, 7, 7)))
    centre.forward()
    res["centre logits"] = centre.d.copy()
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=["nnabla.ext_utils.import_extension_module",
                    "nnabla.ext_utils.get_extension_context", "nnabla.context_scope",
                    "nnabla.set_default_context", "nnabla.get_current_context"],
             tols={"half out": (2e-3, 2e-3), "half loss": (2e-3, 2e-3)}, rtol=1e-4, atol=1e-5)
def user37_nested_context_scopes(nn, F, PF, S, r):
    """The device set up as nnabla-examples' ``train.py`` does (``import_extension_module``,
    ``get_extension_context('cpu')``, ``set_default_context``), then ``context_scope`` nested
    three deep (float, half inside it, float again innermost): the current context's
    backend and type config at each level and after leaving; a net whose middle layer is
    built in the half scope trained two steps; the extension module's helpers."""
    ext_utils = r.module("nnabla.ext_utils")
    ext = ext_utils.import_extension_module("cpu")
    ctx = ext_utils.get_extension_context("cpu", device_id="0", type_config="float")
    half = ext_utils.get_extension_context("cpu", type_config="half")
    nn.set_default_context(ctx)
    seen = []

    def note(where):
        c = nn.get_current_context()
        seen.append([where, list(c.backend), c.array_class, c.device_id])

    x = nn.Variable.from_numpy_array(r.randn(4, 5))
    t = nn.Variable.from_numpy_array(r.randn(4, 2))
    note("default")
    with nn.context_scope(ctx):
        note("float")
        h = F.tanh(PF.affine(x, 6, name="fc1"))
        with nn.context_scope(half):
            note("half")
            h = PF.affine(h, 6, name="fc2")
            with nn.context_scope(ctx):
                note("float in half")
                h = F.relu(h)
            note("half again")
        y = PF.affine(h, 2, name="fc3")
        note("float again")
    note("out")
    loss = F.mean(F.squared_error(y, t))
    listing = r.set_params(nn.get_parameters())
    solver = S.Sgd(0.1)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "contexts": seen, "half loss": [],
           "device count": int(ext.get_device_count()) > 0}
    for _ in range(2):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        ext.synchronize()
        res["half loss"].append(float(loss.d))
    ext.clear_memory_cache()
    res["half out"] = y.d.copy()
    res["out dtype"] = str(y.d.dtype)
    return res


@nnabla_case(names=["nnabla.utils.rnn.pack_sequence", "nnabla.utils.rnn.pad_packed_sequence",
                    "nnabla.utils.rnn.pad_sequence", PFN + "lstm", "nnabla.Variable.__getitem__",
                    "nnabla.set_auto_forward"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user37_packed_sequence_tagger(nn, F, PF, S, r):
    """Variable-length sequences as NNabla's ``utils.rnn`` docs use them (dynamic mode):
    ``pack_sequence(enforce_sorted=False)`` and back with ``pad_packed_sequence`` (the
    lengths it gives, taken through ``lengths[unsorted_indices]``: float32 on NNabla), a
    two-layer bidirectional ``PF.lstm`` over ``pad_sequence``'s batch, a per-step loss masked
    by ``F.less`` of the step numbers and those lengths; Adam three steps.  Then integer
    Variables indexed as a program picks labels (``labels[idx]``, ``labels[[2, 0]]``,
    ``labels[1:]``, ``labels[mask]``): the values' dtypes."""
    rnn = r.module("nnabla.utils.rnn")
    nn.set_auto_forward(True)
    seqs = [nn.Variable.from_numpy_array(r.randn(n, 3)) for n in (2, 4, 3)]
    packed = rnn.pack_sequence(seqs, enforce_sorted=False)
    back, lengths = rnn.pad_packed_sequence(packed)
    res = {"batch sizes": packed.batch_sizes.d.tolist(), "back": back.d.copy(),
           "lengths": [str(lengths.d.dtype), lengths.d.tolist()]}
    target = nn.Variable.from_numpy_array(r.randn(4, 3, 1))
    steps = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32).reshape(4, 1))
    mask = F.reshape(F.less(steps, F.reshape(lengths, (1, 3))), (4, 3, 1))
    h0 = nn.Variable.from_numpy_array(np.zeros((2, 2, 3, 4), np.float32))
    solver = None
    res["loss"] = []
    for _ in range(3):
        y, hn, cn = PF.lstm(rnn.pad_sequence(seqs), h0, h0, num_layers=2, bidirectional=True)
        pred = PF.affine(y, 1, base_axis=2, name="out")
        loss = F.sum(F.squared_error(pred, target) * mask) / F.sum(mask)
        if solver is None:
            res["params"] = r.set_params(nn.get_parameters())
            solver = S.Adam(0.02)
            solver.set_parameters(nn.get_parameters())
            continue
        solver.zero_grad()
        loss.backward()
        solver.update()
        res["loss"].append(float(loss.d))
    res["mask"] = mask.d.copy()
    labels = nn.Variable.from_numpy_array(np.array([4, 1, 3], np.int32))
    idx = nn.Variable.from_numpy_array(np.array([2, 0], np.int32))
    keep = nn.Variable.from_numpy_array(np.array([True, False, True]))
    for key, picked in [("labels[idx]", labels[idx]), ("labels[[2, 0]]", labels[[2, 0]]),
                        ("labels[1:]", labels[1:]), ("labels[mask]", labels[keep])]:
        res[key] = [str(picked.d.dtype), picked.d.tolist()]
    r.touch("nnabla.Variable.__getitem__")
    nn.set_auto_forward(False)
    res.update(r.param_values(nn.get_parameters()))
    return res


_HALF_LEAF_GRAD = (
    "graph/_variable_arrays.py keeps a leaf's gradient in the leaf's dtype (torch's autograd): "
    "a float16 leaf's g is float16 after backward, NNabla 1.39's float32 (the grad array its "
    "float context's functions write)")


@nnabla_case(names=[FN + "reshape", FN + "identity", "nnabla.Variable.reshape",
                    PFN + "convolution", SV + "Sgd"],
             known={"x.g dtype": _HALF_LEAF_GRAD},
             tols={"loss": (1e-3, 1e-4)}, rtol=1e-3, atol=1e-4)
def user37_float16_images_in_a_float_net(nn, F, PF, S, r):
    """Pictures stored as float16 (a user's ``np.load`` of a half-precision cache) fed to a
    float32 CNN in NNabla's default float context: ``x.reshape`` / ``F.reshape`` /
    ``F.identity`` of the half input (their dtypes: float16, their outputs its array; a
    copying ``F.reshape(inplace=False)`` and ``F.relu`` float32), a convolution (with bias)
    of it and an affine trained three steps with SGD in the static graph (Stadyn refused to
    build the convolution: its shape inference met a float16 input beside float32
    parameters), the input's gradient and its dtype."""
    x = nn.Variable.from_numpy_array(r.rand(2, 1, 4, 4).astype(np.float16), need_grad=True)
    t = nn.Variable.from_numpy_array(np.array([[1], [0]], np.int32))
    res = {}
    for key, v in [("reshape", F.reshape(x, (2, 16))), ("identity", F.identity(x)),
                   ("method reshape", x.reshape((2, 1, 16))),
                   ("copying reshape", F.reshape(x, (16, 2), inplace=False)),
                   ("identity of reshape", F.identity(F.reshape(x, (32,)))),
                   ("relu", F.relu(x))]:
        v.forward()
        res[key + " dtype"] = str(v.d.dtype)
        res[key] = v.d.astype(np.float32)
    r.touch("nnabla.Variable.reshape")
    h = F.relu(PF.convolution(F.identity(x), 2, (3, 3), name="conv"))
    loss = F.mean(F.softmax_cross_entropy(PF.affine(F.reshape(h, (2, 8)), 2, name="fc"), t))
    res["params"] = r.set_params(nn.get_parameters())
    solver = S.Sgd(0.3)
    solver.set_parameters(nn.get_parameters())
    res["loss"] = []
    for _ in range(3):
        loss.forward()
        solver.zero_grad()
        x.grad.zero()
        loss.backward()
        solver.update()
        res["loss"].append(float(loss.d))
    res["x.g dtype"] = str(x.g.dtype)
    res["x.g"] = x.g.astype(np.float32)
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=["nnabla.experimental.mixed_precision_training.DynamicLossScalingUpdater",
                    SV + "Momentum", "nnabla.solver.Solver.clip_grad_by_norm",
                    "nnabla.solver.Solver.check_inf_or_nan_grad"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user37_loss_scaling_over_a_bad_batch(nn, F, PF, S, r):
    """Mixed-precision style training with ``DynamicLossScalingUpdater`` (scale 8, factor 2,
    ``N=2``, weight decay) where the third batch holds an ``inf`` (a corrupt record): the
    scale after each ``update()``, the losses and the weights (the bad step leaves them as
    they were), then ``clip_grad_by_norm`` of a plain backward and ``check_inf_or_nan_grad``."""
    M = r.module("nnabla.experimental.mixed_precision_training")
    x = nn.Variable.from_numpy_array(r.randn(4, 3))
    t = nn.Variable.from_numpy_array(r.randn(4, 2))
    loss = F.mean(F.squared_error(PF.affine(x, 2, name="fc"), t))
    res = {"params": r.set_params(nn.get_parameters())}
    solver = S.Momentum(0.1, 0.9)
    solver.set_parameters(nn.get_parameters())
    updater = M.DynamicLossScalingUpdater(solver, loss, data_feeder=lambda: None, scale=8.0,
                                          scaling_factor=2.0, N=2, clear_buffer=True,
                                          accum_grad=1, weight_decay=1e-3, comm=None, grads=[])
    good = x.d[0, 0]
    res["scale"], res["loss"], res["W"] = [], [], []
    for it in range(6):
        x.d[0, 0] = np.inf if it == 2 else good
        updater.update()
        res["scale"].append(float(updater.scale))
        res["loss"].append(float(loss.d))
        res["W"].append(nn.get_parameters()["fc/affine/W"].d.copy())
    solver.zero_grad()
    loss.forward()
    loss.backward()
    solver.clip_grad_by_norm(0.1)
    res["clipped norms"] = [float(np.sqrt((p.g ** 2).sum()))
                            for _, p in sorted(nn.get_parameters().items())]
    res["inf or nan"] = bool(solver.check_inf_or_nan_grad())
    r.touch("nnabla.solver.Solver.clip_grad_by_norm", "nnabla.solver.Solver.check_inf_or_nan_grad")
    return res
