"""An NNabla 1.39 user's own programs, seventh batch (nnuser39): each combines several features
the way a user's script does (NNabla's ``doc/python/tutorial`` notebooks, ``python/test/`` and
nnabla-examples' training utilities) and runs unchanged on NNabla and on
``stadyn.compat.nnabla``.

Combinations the earlier batches (``nnabla_user_28`` to ``nnabla_user_38c``) left: the
learning-rate scheduler classes (warm-up around a cosine, polynomial, step) driving a solver
step by step, a dynamic-graph loop whose Python branches read values under
``nn.auto_forward``, a nested-scope net reused by ``PF`` names and evaluated with
``batch_stat=False``, GAN-style detaching by ``unlinked()``, weights quantized by
``F.pow2_quantize`` / ``F.fixed_point_quantize`` with straight-through gradients, an embedding
language model with a per-step ``F.softmax_cross_entropy`` over a sequence axis,
``nn.no_grad()`` beside ``need_grad`` switches, ``backward(grad=...)`` with an array and
``clear_buffer``, and a solver's state moved to a second solver with ``get_states`` /
``set_states`` beside ``remove_parameters`` and ``clear_parameters``.  Random draws are the case's
seeded inputs, so both sides see the same numbers.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import outcome

SV = "nnabla.solvers."
PFN = "nnabla.parametric_functions."
FN = "nnabla.functions."
LRS = "nnabla.utils.learning_rate_scheduler."


def _steps(loss, solver, n, res, key="loss", before=None):
    for i in range(n):
        if before is not None:
            before(i)
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res.setdefault(key, []).append(float(loss.d))


@nnabla_case(names=[LRS + "LinearWarmupScheduler", LRS + "CosineScheduler",
                    LRS + "PolynomialScheduler", LRS + "StepScheduler",
                    LRS + "ExponentialScheduler", SV + "Momentum", PFN + "affine"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user39_scheduler_classes_drive_solver(nn, F, PF, S, r):
    """nnabla-examples' classification loop: the rate of each iteration comes from a scheduler
    (``LinearWarmupScheduler`` over a ``CosineScheduler``) and is set on Momentum before its
    update; the other scheduler classes' rates over the same iterations are printed as the
    tutorial's table."""
    lrs = r.module("nnabla.utils.learning_rate_scheduler")
    x = nn.Variable.from_numpy_array(r.randn(6, 4))
    t = nn.Variable.from_numpy_array(r.randint(0, 3, (6, 1)))
    with nn.parameter_scope("fc"):
        y = PF.affine(F.relu(PF.affine(x, 5, name="l1")), 3, name="l2")
    loss = F.mean(F.softmax_cross_entropy(y, t))
    listing = r.set_params(nn.get_parameters())
    sched = lrs.LinearWarmupScheduler(lrs.CosineScheduler(0.1, 8), 3)
    solver = S.Momentum(0.0, 0.9)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "lr": []}

    def set_lr(i):
        lr = sched.get_learning_rate(i)
        solver.set_learning_rate(lr)
        res["lr"].append(float(solver.learning_rate()))

    _steps(loss, solver, 8, res, before=set_lr)
    others = [lrs.PolynomialScheduler(0.1, 8, 2.0), lrs.StepScheduler(0.1, 0.5, [2, 5]),
              lrs.ExponentialScheduler(0.1, 0.8, iter_interval=2)]
    res["table"] = [[float(s.get_learning_rate(i)) for i in range(10)] for s in others]
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=["nnabla.auto_forward", FN + "mean", FN + "tanh", PFN + "affine",
                    SV + "Sgd"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user39_dynamic_loop_reads_values(nn, F, PF, S, r):
    """The dynamic-NN tutorial's pattern: under ``nn.auto_forward()`` the net applies its
    shared hidden layer a data-dependent number of times (``while`` on the activation's mean,
    read by ``.d`` as the graph is built), then the loss is back-propagated and SGD steps; the
    depth taken each step and the losses are compared."""
    xs = [r.randn(4, 3) for _ in range(4)]
    ts = [r.randn(4, 3) for _ in range(4)]
    res = {"depth": [], "loss": []}

    def net(x):
        h = x
        depth = 0
        while depth < 4:
            h = F.tanh(PF.affine(h, 3, name="shared"))
            depth += 1
            if float(F.mean(F.abs(h)).d) < 0.35:
                break
        return PF.affine(h, 3, name="out"), depth

    solver = S.Sgd(0.1)
    with nn.auto_forward():
        net(nn.Variable.from_numpy_array(xs[0]))
        res["params"] = r.set_params(nn.get_parameters())
        solver.set_parameters(nn.get_parameters())
        for i in range(4):
            y, depth = net(nn.Variable.from_numpy_array(xs[i]))
            loss = F.mean(F.squared_error(y, nn.Variable.from_numpy_array(ts[i])))
            solver.zero_grad()
            loss.backward()
            solver.update()
            res["depth"].append(depth)
            res["loss"].append(float(loss.d))
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[PFN + "batch_normalization", PFN + "convolution", PFN + "affine",
                    "nnabla.parameter_scope", SV + "Adam"],
             tols={"loss": (1e-4, 1e-5), "eval": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user39_nested_scopes_reused_eval(nn, F, PF, S, r):
    """A ResNet-style block function called twice, under ``nn.parameter_scope("net")`` then
    per-block scopes, built once for training (``batch_stat=True``) and again with the same
    names for evaluation (``batch_stat=False``, the learnt running statistics); Adam for four
    steps, then the evaluation outputs and the running mean/var read back; then a NumPy
    ``w_init`` of another shape than the kernel's (NNabla's assertion, ``parameter.py``)."""

    def block(h, name, test):
        with nn.parameter_scope(name):
            with nn.parameter_scope("a"):
                c = PF.convolution(h, 2, (3, 3), pad=(1, 1), with_bias=False)
                g = F.relu(PF.batch_normalization(c, batch_stat=not test, decay_rate=0.8))
            with nn.parameter_scope("b"):
                c = PF.convolution(g, 2, (3, 3), pad=(1, 1), with_bias=False)
                g = PF.batch_normalization(c, batch_stat=not test, decay_rate=0.8)
        return F.relu(h + g)

    def net(x, test):
        with nn.parameter_scope("net"):
            h = block(block(x, "b1", test), "b2", test)
            return PF.affine(F.average_pooling(h, (2, 2)), 3, name="fc")

    x = nn.Variable.from_numpy_array(r.randn(4, 2, 4, 4))
    t = nn.Variable.from_numpy_array(r.randint(0, 3, (4, 1)))
    loss = F.mean(F.softmax_cross_entropy(net(x, False), t))
    listing = r.set_params(nn.get_parameters(grad_only=False))
    n_train = len(nn.get_parameters(grad_only=False))
    xe = nn.Variable.from_numpy_array(r.randn(3, 2, 4, 4))
    ye = net(xe, True)
    solver = S.Adam(0.01)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "count": [n_train, len(nn.get_parameters(grad_only=False)),
                                        len(nn.get_parameters())]}
    _steps(loss, solver, 4, res)
    ye.forward()
    res["eval"] = ye.d.copy()
    res.update(r.param_values(nn.get_parameters(grad_only=False)))
    with nn.parameter_scope("bad"):     # a (2, 2) kernel's array for a (3, 3) convolution
        res["wrong-shaped w_init"] = outcome(lambda: PF.convolution(
            x, 3, (3, 3), w_init=np.ones((3, 2, 2, 2), np.float32)))
    return res


@nnabla_case(names=["nnabla.Variable.unlinked", "nnabla.Variable.get_unlinked_variable",
                    "nnabla.Variable.need_grad", FN + "sigmoid_cross_entropy", PFN + "affine",
                    SV + "Adam"],
             tols={"d loss": (1e-4, 1e-5), "g loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user39_gan_detached_by_unlinked(nn, F, PF, S, r):
    """DCGAN's training loop: the generator's fake is detached by ``fake.unlinked()`` (then
    ``need_grad=True`` on it) for the discriminator's loss, and by
    ``get_unlinked_variable(need_grad=False)`` for a logged copy; the generator's loss runs
    through the linked fake.  Two Adam solvers, three rounds; the generator's gradients after
    the discriminator's backward stay zero."""
    z = nn.Variable.from_numpy_array(r.randn(4, 3))
    real = nn.Variable.from_numpy_array(r.randn(4, 2) + 1.0)
    with nn.parameter_scope("gen"):
        fake = PF.affine(F.tanh(PF.affine(z, 4, name="l1")), 2, name="l2")

    def dis(h):
        with nn.parameter_scope("dis"):
            return PF.affine(F.leaky_relu(PF.affine(h, 4, name="l1"), 0.2), 1, name="l2")

    r.touch("nnabla.Variable.unlinked", "nnabla.Variable.get_unlinked_variable",
            "nnabla.Variable.need_grad")
    fake_d = fake.unlinked()
    fake_d.need_grad = True
    logged = fake.get_unlinked_variable(need_grad=False)
    ones = F.constant(1, (4, 1))
    zeros = F.constant(0, (4, 1))
    d_loss = (F.mean(F.sigmoid_cross_entropy(dis(real), ones)) +
              F.mean(F.sigmoid_cross_entropy(dis(fake_d), zeros)))
    g_loss = F.mean(F.sigmoid_cross_entropy(dis(fake), ones))
    listing = r.set_params(nn.get_parameters())
    with nn.parameter_scope("gen"):
        sg = S.Adam(0.02, beta1=0.5)
        sg.set_parameters(nn.get_parameters())
    with nn.parameter_scope("dis"):
        sd = S.Adam(0.02, beta1=0.5)
        sd.set_parameters(nn.get_parameters())
    res = {"params": listing, "flags": [fake_d.need_grad, logged.need_grad,
                                        fake_d.parent is None, logged.parent is None]}
    for _ in range(3):
        fake.forward()
        res.setdefault("logged", []).append(logged.d.copy().tolist())
        sg.zero_grad()
        sd.zero_grad()
        d_loss.forward(clear_no_need_grad=True)
        d_loss.backward(clear_buffer=True)
        res.setdefault("gen grad after d", []).append(
            float(sum(np.abs(p.g).sum() for k, p in nn.get_parameters().items()
                      if k.startswith("gen/"))))
        sd.update()
        res.setdefault("d loss", []).append(float(d_loss.d))
        g_loss.forward(clear_no_need_grad=True)
        sg.zero_grad()
        g_loss.backward(clear_buffer=True)
        sg.update()
        res.setdefault("g loss", []).append(float(g_loss.d))
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[FN + "pow2_quantize", FN + "fixed_point_quantize", FN + "affine",
                    SV + "Sgd"],
             tols={"loss": (1e-4, 1e-5), "qw": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user39_quantized_weights_training(nn, F, PF, S, r):
    """nnabla-examples' quantized-network training done by hand: each layer's float weight is
    quantized in the forward pass (``F.pow2_quantize`` for the first, ``F.fixed_point_quantize``
    for the second, straight-through gradients), the floats are what SGD updates; the
    quantized weights and the losses after five steps."""
    x = nn.Variable.from_numpy_array(r.randn(6, 4))
    t = nn.Variable.from_numpy_array(r.randint(0, 3, (6, 1)))
    P = r.module("nnabla.parameter")
    w1 = P.get_parameter_or_create("w1", (4, 5), need_grad=True)
    w2 = P.get_parameter_or_create("w2", (5, 3), need_grad=True)
    q1 = F.pow2_quantize(w1, sign=True, with_zero=True, n=6, m=1, ste_fine_grained=True)
    q2 = F.fixed_point_quantize(w2, sign=True, n=6, delta=0.0625, ste_fine_grained=True)
    h = F.relu(F.affine(x, q1))
    y = F.affine(h, q2)
    loss = F.mean(F.softmax_cross_entropy(y, t))
    listing = r.set_params(nn.get_parameters())
    solver = S.Sgd(0.5)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing}
    _steps(loss, solver, 5, res)
    q1.forward()
    q2.forward()
    res["qw"] = [q1.d.copy(), q2.d.copy()]
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[PFN + "embed", FN + "softmax_cross_entropy", FN + "sum", PFN + "affine",
                    SV + "Adam"],
             tols={"loss": (1e-4, 1e-5), "ppl": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user39_embed_language_model(nn, F, PF, S, r):
    """The PTB example's loss shape: tokens ``(B, T)`` embedded by ``PF.embed``, a per-step
    affine with ``base_axis=2``, ``F.softmax_cross_entropy(y, t, axis=2)`` of targets
    ``(B, T, 1)``, summed over time and averaged over the batch; Adam four steps, then the
    perplexity of a held-out batch."""
    V, B, T = 7, 3, 5
    toks = r.randint(0, V, (B, T + 1))
    held = r.randint(0, V, (B, T + 1))

    def lm(seq):
        e = PF.embed(seq, V, 4, name="embed")
        h = F.tanh(PF.affine(e, 6, base_axis=2, name="hid"))
        return PF.affine(h, V, base_axis=2, name="out")

    x = nn.Variable.from_numpy_array(toks[:, :T])
    t = nn.Variable.from_numpy_array(toks[:, 1:].reshape(B, T, 1))
    y = lm(x)
    ce = F.softmax_cross_entropy(y, t, axis=2)
    loss = F.mean(F.sum(ce, axis=1))
    listing = r.set_params(nn.get_parameters())
    solver = S.Adam(0.05)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "ce shape": list(ce.shape)}
    _steps(loss, solver, 4, res)
    xh = nn.Variable.from_numpy_array(held[:, :T])
    th = nn.Variable.from_numpy_array(held[:, 1:].reshape(B, T, 1))
    nll = F.mean(F.softmax_cross_entropy(lm(xh), th, axis=2))
    nll.forward()
    res["ppl"] = float(np.exp(nll.d))
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=["nnabla.no_grad", "nnabla.Variable.need_grad", "nnabla.Variable.backward",
                    PFN + "affine", SV + "Sgd"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user39_no_grad_and_need_grad(nn, F, PF, S, r):
    """A teacher target built inside ``with nn.no_grad():`` (its variables need no gradient),
    the student's first layer frozen by ``need_grad = False`` on its parameters for two steps
    then released; the student's parameters' ``need_grad`` flags, the leaves' flags and the
    losses of four SGD steps."""
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward")
    x = nn.Variable.from_numpy_array(r.randn(5, 3))
    with nn.parameter_scope("teacher"):
        with nn.no_grad():
            target = F.sigmoid(PF.affine(x, 2, name="fc"))
    with nn.parameter_scope("student"):
        h = F.relu(PF.affine(x, 4, name="l1"))
        y = F.sigmoid(PF.affine(h, 2, name="l2"))
    loss = F.mean(F.squared_error(y, target))
    listing = r.set_params(nn.get_parameters(grad_only=False))
    with nn.parameter_scope("student"):
        solver = S.Sgd(1.0)
        solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "target need_grad": bool(target.need_grad)}
    l1 = [p for k, p in nn.get_parameters(grad_only=False).items() if "student/l1" in k]

    def freeze(i):
        for p in l1:
            p.need_grad = i >= 2
        res.setdefault("grad only", []).append(len(nn.get_parameters()))

    _steps(loss, solver, 4, res, before=freeze)
    res.update(r.param_values(nn.get_parameters(grad_only=False)))
    return res


@nnabla_case(names=["nnabla.Variable.backward", "nnabla.Variable.g", FN + "exp",
                    FN + "affine"],
             rtol=1e-5, atol=1e-6)
def user39_backward_with_custom_grad(nn, F, PF, S, r):
    """``y.backward(grad=array)`` with a non-scalar output: an array gradient, then a scalar
    gradient, then ``clear_buffer=True`` and an accumulating second backward
    (``x.grad.zero()`` skipped), as the Variable tutorial reads ``x.g`` after each; then a
    gradient array of another shape (one row for every sample, or transposed), which NNabla
    1.39 refuses (``set_grad``: ``Shape must match``) rather than broadcasting; a list (its
    ValueError) and a Variable (its RuntimeError) as the gradient."""
    r.touch("nnabla.Variable.backward", "nnabla.Variable.g")
    x = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
    w = nn.Variable.from_numpy_array(r.randn(4, 2), need_grad=True)
    y = F.exp(F.affine(x, w) * 0.5)
    gy = r.randn(3, 2)
    y.forward()
    res = {"y": y.d.copy()}
    x.grad.zero()
    w.grad.zero()
    y.backward(grad=gy)
    res["x.g array"] = x.g.copy()
    res["w.g array"] = w.g.copy()
    x.grad.zero()
    w.grad.zero()
    y.backward(grad=2.0)
    res["x.g scalar"] = x.g.copy()
    y.backward(grad=gy, clear_buffer=True)
    res["x.g accumulated"] = x.g.copy()
    res["w.g accumulated"] = w.g.copy()
    y.forward()
    x.grad.zero()
    res["per-column grad"] = outcome(lambda: y.backward(grad=np.ones(2, np.float32)))
    res["transposed grad"] = outcome(lambda: y.backward(grad=gy.T.copy()))
    res["list grad"] = outcome(lambda: y.backward(grad=gy.tolist()))
    res["Variable grad"] = outcome(lambda: y.backward(grad=nn.Variable.from_numpy_array(gy)))
    res["x.g after refusals"] = x.g.copy()
    return res


@nnabla_case(names=[SV + "Adam", SV + "RMSprop", "nnabla.solver.Solver.get_states",
                    "nnabla.solver.Solver.set_states", "nnabla.solver.Solver.remove_parameters",
                    "nnabla.solver.Solver.clear_parameters", "nnabla.solver.Solver.get_parameters",
                    PFN + "affine"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user39_states_between_solvers(nn, F, PF, S, r):
    """Two Adam solvers for one net: three steps with the first, its states copied to a second
    by ``get_states`` / ``set_states``, the last layer removed from the second by
    ``remove_parameters`` (its parameters then stay put), and an RMSprop solver emptied by
    ``clear_parameters`` then given one layer again (NNabla 1.39 has no ``clear_state``); the
    states' names and ``t``, and the parameters after each phase."""
    r.touch(*["nnabla.solver.Solver." + m for m in (
        "get_states", "set_states", "remove_parameters", "clear_parameters",
        "get_parameters")])
    x = nn.Variable.from_numpy_array(r.randn(6, 3))
    t = nn.Variable.from_numpy_array(r.randn(6, 2))
    with nn.parameter_scope("net"):
        y = PF.affine(F.tanh(PF.affine(x, 4, name="l1")), 2, name="l2")
    loss = F.mean(F.squared_error(y, t))
    listing = r.set_params(nn.get_parameters())
    s1 = S.Adam(0.05)
    s1.set_parameters(nn.get_parameters())
    res = {"params": listing}
    _steps(loss, s1, 3, res)
    states = s1.get_states()
    res["state keys"] = sorted(states.keys())
    res["state t"] = sorted(set(int(st.t) for st in states.values()))
    res["pstate keys"] = sorted(next(iter(states.values())).pstate.keys())
    s2 = S.Adam(0.05)
    s2.set_parameters(nn.get_parameters())
    s2.set_states(states)
    s2.remove_parameters(["net/l2/affine/W", "net/l2/affine/b"])
    res["s2 keys"] = sorted(s2.get_parameters().keys())
    before = nn.get_parameters()["net/l2/affine/W"].d.copy()
    _steps(loss, s2, 2, res)
    res["l2 moved"] = float(np.abs(nn.get_parameters()["net/l2/affine/W"].d - before).max())
    res["s2 t"] = sorted(set(int(st.t) for st in s2.get_states().values()))
    s3 = S.RMSprop(0.01)
    s3.set_parameters(nn.get_parameters())
    _steps(loss, s3, 2, res, key="rms loss")
    res["has clear_state"] = hasattr(s3, "clear_state")
    s3.clear_parameters()
    res["cleared keys"] = sorted(s3.get_states().keys())
    with nn.parameter_scope("net/l1"):
        s3.set_parameters(nn.get_parameters())
    res["reset t"] = sorted(set(int(st.t) for st in s3.get_states().values()))
    res["reset v"] = float(np.abs(s3.get_states()["affine/W"].pstate["v"].d).sum())
    _steps(loss, s3, 1, res, key="rms loss")
    res.update(r.param_values(nn.get_parameters()))
    return res
