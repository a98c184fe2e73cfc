"""An NNabla 1.39 user's own programs, fourth batch (nnuser36): each combines several features
the way a user's script does (nnabla-examples' GAN, U-Net and distillation scripts, NNabla's
``doc/`` tutorials) and runs unchanged on NNabla and on ``stadyn.compat.nnabla``.

Combinations the earlier batches (``nnabla_user_28``, ``nnabla_user_28b``, ``nnabla_user_35``)
left: WGAN-GP's gradient penalty through ``nn.grad``, parameter files of one nested scope
loaded into another, a solver grown mid-run (``set_parameters(reset=False,
retain_state=True)``) with states moved between solvers, a U-Net of ``F.pad`` /
``F.interpolate`` / ``PF.deconvolution``, iterators over epoch edges with callbacks and
slices, ``F.sink`` of weighted losses with ``one_input_grad=False`` beside ``nn.recompute``
and ``F.fused_batch_normalization``, NNabla's half-precision CPU context, an LSTM language
model with carried state, gradient accumulation with ``nn.forward_all``, distillation from a
frozen teacher, an EMA of the weights kept by ``F.assign``.  Random draws are the case's
seeded inputs, so both sides see the same numbers.
"""

import os

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import outcome

SV = "nnabla.solvers."
PFN = "nnabla.parametric_functions."
FN = "nnabla.functions."
D = "nnabla.utils.data_iterator."


@nnabla_case(names=["nnabla.grad", "nnabla.Variable.get_unlinked_variable", PFN + "affine",
                    FN + "leaky_relu", FN + "mean", SV + "Adam"],
             tols={"loss d": (1e-4, 1e-5), "loss g": (1e-4, 1e-5), "gp": (1e-4, 1e-5)})
def user36_wgan_gp_gradient_penalty(nn, F, PF, S, r):
    """WGAN-GP as nnabla-examples writes it: the fake batch unlinked for the critic's step,
    the real/fake mix's critic output differentiated with ``nn.grad`` w.r.t. the mix, the
    penalty ``mean((||g|| - 1)^2)`` backpropagated (double backward) into the critic; five
    critic steps per generator step, two Adam solvers."""
    z = nn.Variable.from_numpy_array(r.randn(6, 3))
    real = nn.Variable.from_numpy_array(r.randn(6, 4) * 0.5 + 1.0)
    eps = nn.Variable.from_numpy_array(r.rand(6, 1))

    def gen(z):
        with nn.parameter_scope("gen"):
            return PF.affine(F.relu(PF.affine(z, 5, name="l1")), 4, name="l2")

    def critic(x):
        with nn.parameter_scope("critic"):
            return PF.affine(F.leaky_relu(PF.affine(x, 6, name="l1"), 0.2), 1, name="l2")

    fake = gen(z)
    fake_d = fake.get_unlinked_variable(need_grad=False)
    r.touch("nnabla.Variable.get_unlinked_variable")
    mix = eps * real + (1.0 - eps) * fake_d
    d_mix = critic(mix)
    grads = nn.grad([d_mix], [mix])
    norm = F.sum(grads[0] ** 2.0, axis=1) ** 0.5
    gp = F.mean((norm - 1.0) ** 2.0)
    loss_d = F.mean(critic(fake_d)) - F.mean(critic(real)) + 10.0 * gp
    loss_g = -F.mean(critic(fake))
    listing = r.set_params(nn.get_parameters())
    with nn.parameter_scope("gen"):
        sg = S.Adam(1e-2, beta1=0.5, beta2=0.9)
        sg.set_parameters(nn.get_parameters())
    with nn.parameter_scope("critic"):
        sd = S.Adam(1e-2, beta1=0.5, beta2=0.9)
        sd.set_parameters(nn.get_parameters())
    res = {"params": listing, "loss d": [], "loss g": [], "gp": []}
    for it in range(2):
        fake.forward()
        for _ in range(5):
            loss_d.forward(clear_no_need_grad=True)
            sd.zero_grad()
            loss_d.backward(clear_buffer=True)
            sd.update()
            res["loss d"].append(float(loss_d.d))
            gp.forward()
            res["gp"].append(float(gp.d))
        loss_g.forward()
        sg.zero_grad()
        loss_g.backward()
        sg.update()
        res["loss g"].append(float(loss_g.d))
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=["nnabla.parameter_scope", "nnabla.get_parameters",
                    "nnabla.save_parameters", "nnabla.load_parameters",
                    PFN + "batch_normalization", PFN + "affine"])
def user36_scope_files_loaded_elsewhere(nn, F, PF, r):
    """Nested scopes ``net/enc`` and ``net/dec``; ``get_parameters(grad_only=False)`` (batch
    norm's statistics included) filtered to the encoder's by key, saved to ``.h5``, cleared,
    then loaded inside another scope: the keys it lands under and the copied encoder's
    output, beside ``get_parameters(path=...)`` (a prefix put before every key, as NNabla's
    recursion uses it) and ``get_parameters(params=...)`` (the dict given, filled)."""
    x = nn.Variable.from_numpy_array(r.randn(4, 5))

    def encoder(x, test):
        with nn.parameter_scope("enc"):
            h = PF.affine(x, 6, name="fc1")
            h = F.relu(PF.batch_normalization(h, batch_stat=not test, name="bn1"))
            return PF.affine(h, 3, name="fc2")

    with nn.parameter_scope("net"):
        code = encoder(x, False)
        with nn.parameter_scope("dec"):
            out = PF.affine(code, 5, name="fc")
    listing = r.set_params(nn.get_parameters(grad_only=False))
    out.forward()                       # batch statistics move the running mean/var
    res = {"params": listing,
           "grad only": sorted(nn.get_parameters().keys()),
           "all": sorted(nn.get_parameters(grad_only=False).keys()),
           "path net/enc": sorted(nn.get_parameters(path="net/enc", grad_only=False).keys())}
    mine = {"extra": x}
    with nn.parameter_scope("net/dec"):
        filled = nn.get_parameters(params=mine, path="dec")
    res["params filled"] = [filled is mine, sorted(mine.keys())]
    enc = {k: v for k, v in nn.get_parameters(grad_only=False).items()
           if k.startswith("net/enc/")}
    with r.tempdir() as folder:
        path = os.path.join(folder, "enc.h5")
        nn.save_parameters(path, params=enc)
        test_code = None
        with nn.parameter_scope("net"):
            test_code = encoder(x, True)
        test_code.forward()
        res["trained code"] = test_code.d.copy()
        nn.clear_parameters()
        res["after clear"] = len(nn.get_parameters(grad_only=False))
        with nn.parameter_scope("copy"):
            nn.load_parameters(path)
        res["loaded"] = sorted(nn.get_parameters(grad_only=False).keys())
        res["loaded need_grad"] = [v.need_grad for k, v in
                                   sorted(nn.get_parameters(grad_only=False).items())]
        with nn.parameter_scope("copy/net"):
            copied = encoder(x, True)
        copied.forward()
        res["copied code"] = copied.d.copy()
        res["after rebuild"] = sorted(nn.get_parameters(grad_only=False).keys())
    return res


@nnabla_case(names=["nnabla.get_parameters", "nnabla.parameter_scope",
                    "nnabla.parameter.get_parameter_or_create", "nnabla.save_parameters"])
def user36_get_parameters_order(nn, r):
    """The order ``get_parameters`` lists parameters in, unsorted, when scopes are visited
    again after other parameters were made (NNabla 1.39 walks its nested scope dicts, each
    where it was first made): with and without ``grad_only`` (a scope whose first parameter
    has ``need_grad=False``), inside a scope, with ``path`` and a ``params`` dict already
    holding some keys; a saved file's keys in that order (a solver's states are in NNabla's
    hash-map order: ``nnabla-names.md``)."""
    P = r.module("nnabla.parameter")
    r.touch("nnabla.parameter.get_parameter_or_create")
    with nn.parameter_scope("a"):
        P.get_parameter_or_create("stat", (1,), need_grad=False)
    P.get_parameter_or_create("x", (2,))
    with nn.parameter_scope("a"):
        P.get_parameter_or_create("W", (3,))
        with nn.parameter_scope("c"):
            P.get_parameter_or_create("W", (1,))
    P.get_parameter_or_create("a2/W", (2,))
    P.get_parameter_or_create("a/c/b", (1,))
    P.get_parameter_or_create("z", (1,), need_grad=False)
    res = {"all": list(nn.get_parameters(grad_only=False)),
           "grad only": list(nn.get_parameters()),
           "path": list(nn.get_parameters(path="net", grad_only=False))}
    with nn.parameter_scope("a"):
        res["in a"] = list(nn.get_parameters(grad_only=False))
    given = {"z": 0, "x": 1, "first": 2}
    res["params given"] = list(nn.get_parameters(params=given))
    with r.tempdir() as folder:
        path = os.path.join(folder, "p.protobuf")
        nn.save_parameters(path)
        nn.clear_parameters()
        res["loaded"] = [p.variable_name for p in nn.load_parameters(path).parameter]
    return res


@nnabla_case(names=[SV + "Momentum", "nnabla.solver.Solver.set_parameters",
                    "nnabla.solver.Solver.get_states", "nnabla.solver.Solver.set_states",
                    "nnabla.solver.Solver.remove_parameters", PFN + "affine"])
def user36_solver_grown_and_states_moved(nn, F, PF, S, r):
    """A progressively grown model: Momentum over the first layer, a second head added
    mid-run with ``set_parameters(reset=False, retain_state=True)``; the states read with
    ``get_states`` (keys, ``t``, momentum buffers), handed to a fresh solver with
    ``set_states``, one head removed with ``remove_parameters``; losses and parameters as the
    two solvers continue."""
    x = nn.Variable.from_numpy_array(r.randn(5, 3))
    t1 = nn.Variable.from_numpy_array(r.randn(5, 2))
    t2 = nn.Variable.from_numpy_array(r.randn(5, 1))
    h = F.tanh(PF.affine(x, 4, name="trunk"))
    loss1 = F.mean(F.squared_error(PF.affine(h, 2, name="head1"), t1))
    listing = r.set_params(nn.get_parameters())
    solver = S.Momentum(0.1, momentum=0.8)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "losses": []}
    for _ in range(3):
        loss1.forward()
        solver.zero_grad()
        loss1.backward()
        solver.update()
        res["losses"].append(float(loss1.d))
    loss2 = F.mean(F.squared_error(PF.affine(h, 1, name="head2"), t2))
    for k, v in nn.get_parameters().items():
        if k.startswith("head2"):
            v.d = r.randn(*v.shape) * 0.3
    solver.set_parameters(nn.get_parameters(), reset=False, retain_state=True)
    total = loss1 + loss2
    states = solver.get_states()
    r.touch("nnabla.solver.Solver.set_parameters", "nnabla.solver.Solver.get_states",
            "nnabla.solver.Solver.set_states", "nnabla.solver.Solver.remove_parameters")
    res["state keys"] = sorted(states.keys())
    res["state t"] = {k: int(s.t) for k, s in states.items()}
    res["trunk momentum"] = states["trunk/affine/W"].pstate["m"].d.copy()
    for _ in range(2):
        total.forward()
        solver.zero_grad()
        total.backward()
        solver.update()
        res["losses"].append(float(total.d))
    other = S.Momentum(0.1, momentum=0.8)
    other.set_parameters(nn.get_parameters())
    other.set_states(solver.get_states())
    other.remove_parameters(["head1/affine/W", "head1/affine/b"])
    res["other keys"] = sorted(other.get_parameters().keys())
    res["other t"] = {k: int(s.t) for k, s in other.get_states().items()}
    for _ in range(2):
        total.forward()
        other.zero_grad()
        total.backward()
        other.update()
        res["losses"].append(float(total.d))
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[FN + "pad", FN + "interpolate", PFN + "deconvolution", PFN + "convolution",
                    FN + "max_pooling", FN + "concatenate", FN + "sigmoid_cross_entropy",
                    SV + "Adam"],
             tols={"losses": (1e-4, 1e-5), "out": (1e-4, 1e-5)})
def user36_unet_pad_interpolate_deconv(nn, F, PF, S, r):
    """A two-level U-Net for segmentation: reflect padding (``F.pad``) before unpadded 3x3
    convolutions, max pooling down, one level up by ``F.interpolate`` (nearest) and one by a
    stride-2 ``PF.deconvolution``, skips concatenated; a per-pixel sigmoid cross entropy
    trained with Adam; the losses, the output and the gradients."""
    x = nn.Variable.from_numpy_array(r.rand(2, 1, 8, 8))
    mask = nn.Variable.from_numpy_array((r.rand(2, 1, 8, 8) > 0.5).astype(np.float32))

    def conv(h, c, name):
        h = F.pad(h, (1, 1, 1, 1), mode="reflect")
        return F.relu(PF.convolution(h, c, (3, 3), name=name))

    e1 = conv(x, 3, "e1")                                  # 8x8
    e2 = conv(F.max_pooling(e1, (2, 2)), 4, "e2")          # 4x4
    b = conv(F.max_pooling(e2, (2, 2)), 4, "b")            # 2x2
    u2 = F.interpolate(b, scale=(2, 2), mode="nearest")    # 4x4
    d2 = conv(F.concatenate(u2, e2, axis=1), 4, "d2")
    u1 = PF.deconvolution(d2, 3, (2, 2), stride=(2, 2), name="up1")   # 8x8
    d1 = conv(F.concatenate(u1, e1, axis=1), 3, "d1")
    out = PF.convolution(d1, 1, (1, 1), name="out")
    loss = F.mean(F.sigmoid_cross_entropy(out, mask))
    listing = r.set_params(nn.get_parameters())
    solver = S.Adam(0.01)
    solver.set_parameters(nn.get_parameters())
    losses = []
    for _ in range(3):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        if not losses:
            grads = {"grad " + k: v.g.copy() for k, v in nn.get_parameters().items()
                     if k.startswith(("e1", "up1"))}
        solver.update()
        losses.append(float(loss.d))
    out.forward()
    res = {"params": listing, "losses": np.array(losses), "out": out.d.copy(),
           "shapes": [list(v.shape) for v in (e1, e2, b, u2, d2, u1, d1)]}
    res.update(grads)
    return res


@nnabla_case(names=[D + "data_iterator_simple", D + "data_iterator_csv_dataset",
                    D + "DataIterator.register_epoch_end_callback", D + "DataIterator.slice",
                    D + "DataIterator.register_epoch_begin_callback", D + "DataIterator.epoch",
                    D + "DataIterator.position"])
def user36_iterator_epoch_edges(nn, r):
    """Iterators across epoch edges: ``data_iterator_simple`` (10 samples, batches of 4, no
    cache) over three epochs with epoch-begin and -end callbacks, epoch and position read after
    each batch, ``next(it)``; a slice (2 of 3) of it; a CSV dataset (7 rows, batches of 3,
    normalised) over its edges."""
    DI = r.module("nnabla.utils.data_iterator")
    xs = np.arange(30, dtype=np.float32).reshape(10, 3)
    ys = np.arange(10, dtype=np.int32).reshape(10, 1) % 3
    ends, begins = [], []
    it = DI.data_iterator_simple(lambda i: (xs[i], ys[i]), 10, 4, shuffle=False,
                                 with_memory_cache=False, with_file_cache=False)
    it.register_epoch_end_callback(lambda epoch: ends.append(int(epoch)))
    it.register_epoch_begin_callback(lambda epoch: begins.append(int(epoch)))
    r.touch(*[D + "DataIterator." + m for m in (
        "register_epoch_end_callback", "register_epoch_begin_callback", "slice", "epoch",
        "position")])
    res = {"variables": list(it.variables), "size": int(it.size), "batches": [],
           "labels": [], "marks": []}
    for _ in range(8):
        bx, by = it.next()
        res["batches"].append(bx[:, 0].tolist())
        res["labels"].append(by[:, 0].tolist())
        res["marks"].append([int(it.epoch), int(it.position)])
    res["ends"] = list(ends)
    res["begins"] = list(begins)
    res["builtin next"] = [next(it)[0][:, 0].tolist(), int(it.epoch), int(it.position)]
    sl = it.slice(rng=None, num_of_slices=3, slice_pos=1)
    res["slice size"] = int(sl.size)
    res["slice batches"] = [sl.next()[0][:, 0].tolist() for _ in range(3)]
    res["slice marks"] = [int(sl.epoch), int(sl.position)]
    with r.tempdir() as folder:
        path = os.path.join(folder, "data.csv")
        with open(path, "w") as f:
            f.write("x__0:in,x__1:in,y:label\n")
            for i in range(7):
                f.write("%d,%d,%d\n" % (i, 2 * i + 1, i % 2))
        csv = DI.data_iterator_csv_dataset(path, 3, shuffle=False, normalize=True,
                                           with_memory_cache=True, with_file_cache=False)
        res["csv variables"] = list(csv.variables)
        rows = []
        for _ in range(4):
            b = csv.next()
            rows.append([a.tolist() for a in b])
            res["marks"].append([int(csv.epoch), int(csv.position)])
        res["csv rows"] = rows
        csv.close()
    it.close()
    sl.close()
    return res


@nnabla_case(names=[FN + "sink", "nnabla.recompute", FN + "fused_batch_normalization",
                    PFN + "affine"])
def user36_sink_weighted_losses_recompute(nn, F, PF, r):
    """Multi-task training with ``F.sink(..., one_input_grad=False)``: each loss's ``g`` set
    to its weight before ``sink.backward()``; the trunk built under ``nn.recompute(True)``
    with a fused batch norm (residual ``z``, relu) whose statistics move; gradients, the
    running mean/var, and the inference output with ``batch_stat=False``."""
    x = nn.Variable.from_numpy_array(r.randn(6, 4))
    t1 = nn.Variable.from_numpy_array(r.randn(6, 3))
    t2 = nn.Variable.from_numpy_array(r.randint(0, 3, (6, 1)))
    beta = nn.parameter.get_parameter_or_create("bn/beta", (1, 3), np.zeros((1, 3), np.float32))
    gamma = nn.parameter.get_parameter_or_create("bn/gamma", (1, 3),
                                                 np.ones((1, 3), np.float32))
    mean = nn.parameter.get_parameter_or_create("bn/mean", (1, 3),
                                                np.zeros((1, 3), np.float32), need_grad=False)
    var = nn.parameter.get_parameter_or_create("bn/var", (1, 3),
                                               np.ones((1, 3), np.float32), need_grad=False)
    with nn.recompute(True):
        a = PF.affine(x, 3, name="fc")
        skip = PF.affine(x, 3, name="skip")
        h = F.fused_batch_normalization(a, beta, gamma, mean, var, z=skip, axes=[1],
                                        decay_rate=0.8, batch_stat=True, nonlinearity="relu")
    l1 = F.mean(F.squared_error(PF.affine(h, 3, name="reg"), t1))
    l2 = F.mean(F.softmax_cross_entropy(PF.affine(h, 3, name="cls"), t2))
    listing = r.set_params(nn.get_parameters())
    sink = F.sink(l1, l2, one_input_grad=False)
    sink.forward()
    for v in nn.get_parameters().values():
        v.grad.zero()
    l1.g = 0.3
    l2.g = 0.7
    sink.backward()
    res = {"params": listing, "l1": float(l1.d), "l2": float(l2.d),
           "sink shape": list(sink.shape), "mean": mean.d.copy(), "var": var.d.copy()}
    for k, v in sorted(nn.get_parameters().items()):
        res["grad " + k] = v.g.copy()
    infer = F.fused_batch_normalization(a, beta, gamma, mean, var, z=skip, axes=[1],
                                        batch_stat=False, nonlinearity="relu")
    infer.forward()
    res["inference"] = infer.d.copy()
    return res


@nnabla_case(names=[FN + "sink", "nnabla.auto_forward", "nnabla.Variable.backward"])
def user36_sink_input_grads_as_written(nn, F, r):
    """``F.sink(..., one_input_grad=False)``'s backward writes nothing into its inputs'
    gradients, so it flows from what the program wrote there (NNabla 1.39's
    ``Sink::backward_impl``): ``g`` set before or after the forward, kept across two backwards
    (a leaf's gradient accumulating), changed between two; in a dynamic graph, with
    ``clear_buffer=True``, with function hooks, an array ``g``, an input never written (zero),
    a leaf input (its own gradient stays: the others add to it), an input also read by
    another input."""
    xs = r.randn(2, 3)

    def build():
        x = nn.Variable.from_numpy_array(xs, need_grad=True)
        return x, F.sum(x * x), F.mean(F.tanh(x) * 3.0)

    def step(s, x, set_g, **kw):
        x.grad.zero()
        set_g()
        s.backward(**kw)
        return x.g.copy()

    res = {}
    x, l1, l2 = build()
    s = F.sink(l1, l2, one_input_grad=False)

    def weights(a=0.3, b=0.7):
        def set_g():
            l1.g = a
            l2.g = b
        return set_g

    s.forward()
    res["after forward"] = step(s, x, weights())
    res["kept g"] = [float(l1.g), float(l2.g)]
    s.backward()
    res["second backward"] = x.g.copy()
    s.forward()
    res["changed"] = step(s, x, weights(2.0, -1.0))
    res["hooks"] = step(s, x, weights(), function_pre_hook=lambda f: None)
    res["clear buffer"] = step(s, x, weights(), clear_buffer=True)
    x, l1, l2 = build()
    s = F.sink(l1, l2, one_input_grad=False)
    l1.g = 0.5
    l2.g = 0.25
    s.forward()
    res["before forward"] = step(s, x, lambda: None)
    x, l1, l2 = build()
    s = F.sink(l1, l2, one_input_grad=False)
    s.forward()
    res["never written"] = step(s, x, lambda: None)
    with nn.auto_forward():
        x, l1, l2 = build()
        s = F.sink(l1, l2, one_input_grad=False)
    res["dynamic"] = step(s, x, weights())
    x, l1, l2 = build()
    h = F.tanh(x) * 2.0
    s = F.sink(h, l1, x, one_input_grad=False)
    s.forward()

    def arrays():
        h.g = np.arange(6, dtype=np.float32).reshape(2, 3) / 6.0
        l1.g = 0.1
        x.g = 1.0
    res["array g, leaf input"] = step(s, x, arrays)
    x, l1, l2 = build()
    l3 = l1 * 2.0
    s = F.sink(l1, l3, one_input_grad=False)
    s.forward()

    def shared():
        l1.g = 0.3
        l3.g = 0.5
    res["shared"] = step(s, x, shared)
    r.touch("nnabla.Variable.backward")
    return res


@nnabla_case(names=["nnabla.ext_utils.get_extension_context", "nnabla.context_scope",
                    "nnabla.get_current_context", PFN + "affine"])
def user36_half_context_on_cpu(nn, F, PF, S, r):
    """Mixed precision on a CPU as a user first tries it: ``get_extension_context('cpu',
    type_config='half')`` inside ``nn.context_scope``, and the same call misspelled with
    ``dtype_config='half'`` (NNabla's CPU extension takes and ignores unknown keywords: a
    float context); the contexts, the parameters' dtype, the output and its dtype after a
    forward outside the scope, and a graph built outside it forwarded inside."""
    EU = r.module("nnabla.ext_utils")
    x = nn.Variable.from_numpy_array(r.randn(4, 3))
    t = nn.Variable.from_numpy_array(r.randn(4, 2))
    half = EU.get_extension_context("cpu", type_config="half")
    typo = EU.get_extension_context("cpu", dtype_config="half")
    res = {"half": repr(half), "typo": repr(typo)}
    with nn.context_scope(half):
        res["inside"] = repr(nn.get_current_context())
        y = PF.affine(x, 2, name="fc")
        loss = F.mean(F.squared_error(y, t))
    res["after"] = repr(nn.get_current_context())
    listing = r.set_params(nn.get_parameters())
    loss.forward()
    res["half out"] = y.d.astype(np.float32)
    res["half dtype"] = str(y.d.dtype)
    res["param dtype"] = [str(v.d.dtype) for k, v in sorted(nn.get_parameters().items())]
    with nn.context_scope(typo):
        y2 = PF.affine(x, 2, name="fc")
    y2.forward()
    res["float out"] = y2.d.copy()
    with nn.context_scope(half):
        y2.forward()
    res["float built, half forward"] = y2.d.astype(np.float32)
    res["float built, half forward dtype"] = str(y2.d.dtype)
    res["params"] = listing
    return res


@nnabla_case(names=["nnabla.context_scope", "nnabla.set_default_context", "nnabla.auto_forward",
                    "nnabla.ext_utils.get_extension_context", PFN + "affine", FN + "relu"])
def user36_context_bound_when_built(nn, F, PF, r):
    """NNabla 1.39 binds each function's context when it is made: the dtypes of an affine made
    in a ``cpu:half`` scope and a relu made there after it, forwarded outside; a loss made
    outside over that affine (float: its function reads the half output as float); a float
    graph forwarded in the half scope; an affine made under ``set_default_context(half)``
    forwarded after the default went back to float; one made in a dynamic graph in the scope,
    forwarded again outside it."""
    EU = r.module("nnabla.ext_utils")
    half = EU.get_extension_context("cpu", type_config="half")
    x = nn.Variable.from_numpy_array(r.randn(4, 3))
    res = {}
    with nn.context_scope(half):
        y = PF.affine(x, 2, name="fc")
        z = F.relu(y)
    loss = F.sum(y * y)
    r.set_params(nn.get_parameters())
    z.forward()
    loss.forward()
    res["half built"] = [str(y.d.dtype), str(z.d.dtype), str(loss.d.dtype)]
    y2 = PF.affine(x, 2, name="fc")
    with nn.context_scope(half):
        y2.forward()
    res["float built, half forward"] = [str(y2.d.dtype), y2.d.copy()]
    nn.set_default_context(half)
    y3 = PF.affine(x, 2, name="fc")
    nn.set_default_context(EU.get_extension_context("cpu"))
    y3.forward()
    res["default half, then float"] = str(y3.d.dtype)
    with nn.auto_forward():
        with nn.context_scope(half):
            y4 = PF.affine(x, 2, name="fc")
        first = str(y4.d.dtype)
    y4.forward()
    res["dynamic"] = [first, str(y4.d.dtype)]
    return res


@nnabla_case(names=["nnabla.ext_utils.get_extension_context"])
def user36_cpu_context_type_configs(nn, r):
    """``get_extension_context('cpu', type_config=...)`` of each spelling a user tries: NNabla
    1.39's CPU extension knows ``'float'`` and ``'half'`` and refuses the rest
    (``nnabla_ext/cpu``'s ``context``: ``ValueError``), whatever the CUDA ones take; a
    ``device_id`` is ignored there."""
    EU = r.module("nnabla.ext_utils")
    res = {}
    for config in ("float", "half", "mixed_half", "bfloat16", "float32", "float16"):
        res[config] = outcome(lambda: repr(EU.get_extension_context("cpu", type_config=config)))
    res["device_id"] = repr(EU.get_extension_context("cpu", device_id="3"))
    return res


@nnabla_case(names=[PFN + "embed", PFN + "lstm_cell", FN + "softmax_cross_entropy",
                    FN + "stack", SV + "RMSprop"],
             tols={"losses": (1e-4, 1e-5), "carried h": (1e-4, 1e-5)})
def user36_lstm_language_model_carried_state(nn, F, PF, S, r):
    """A character LSTM language model unrolled over 4 steps with ``PF.lstm_cell`` on
    ``nn.Variable`` states; truncated BPTT: each chunk's final ``h``/``c`` copied into the
    next chunk's input states; per-step cross entropies stacked and averaged; RMSprop."""
    tokens = r.randint(0, 6, (3, 13))
    xs = [nn.Variable((3, 1)) for _ in range(4)]
    ts = [nn.Variable((3, 1)) for _ in range(4)]
    h0 = nn.Variable.from_numpy_array(np.zeros((3, 5), np.float32))
    c0 = nn.Variable.from_numpy_array(np.zeros((3, 5), np.float32))
    h, c = h0, c0
    losses = []
    for x, t in zip(xs, ts):
        e = PF.embed(x, 6, 4, name="embed")
        e = F.reshape(e, (3, 4))
        h, c = PF.lstm_cell(e, h, c, 5, name="lstm")
        losses.append(F.softmax_cross_entropy(PF.affine(h, 6, name="out"), t))
    loss = F.mean(F.stack(*losses))
    listing = r.set_params(nn.get_parameters())
    solver = S.RMSprop(0.01, decay=0.9)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "losses": [], "chunk lengths": []}
    for epoch in range(2):
        h0.d = 0
        c0.d = 0
        for start in range(0, 12, 4):
            for i in range(4):
                xs[i].d = tokens[:, start + i:start + i + 1]
                ts[i].d = tokens[:, start + i + 1:start + i + 2]
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
            res["losses"].append(float(loss.d))
            h0.d = h.d.copy()
            c0.d = c.d.copy()
    res["carried h"] = h0.d.copy()
    res["losses"] = np.array(res["losses"])
    return res


@nnabla_case(names=["nnabla.forward_all", "nnabla.solver.Solver.scale_grad",
                    "nnabla.solver.Solver.weight_decay", SV + "Sgd", PFN + "affine"])
def user36_gradient_accumulation(nn, F, PF, S, r):
    """Gradient accumulation over 3 micro-batches (``backward`` without ``zero_grad`` in
    between, ``clear_buffer=True``), then ``scale_grad(1/3)``, ``weight_decay`` and one
    update; an evaluation loss and accuracy computed together by ``nn.forward_all``; the
    accumulated gradients, the parameters and both metrics each step."""
    data = r.randn(12, 4)
    labels = r.randint(0, 3, (12, 1))
    x = nn.Variable((4, 4))
    t = nn.Variable((4, 1))
    logits = PF.affine(F.relu(PF.affine(x, 5, name="fc1")), 3, name="fc2")
    loss = F.mean(F.softmax_cross_entropy(logits, t))
    vx = nn.Variable.from_numpy_array(data[:6])
    vt = nn.Variable.from_numpy_array(labels[:6])
    vlogits = PF.affine(F.relu(PF.affine(vx, 5, name="fc1")), 3, name="fc2")
    vloss = F.mean(F.softmax_cross_entropy(vlogits, vt))
    vacc = F.mean(F.equal(F.reshape(F.max(vlogits, axis=1, only_index=True), (6, 1)), vt))
    listing = r.set_params(nn.get_parameters())
    solver = S.Sgd(0.1)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "micro": [], "eval": []}
    for step in range(3):
        solver.zero_grad()
        for m in range(3):
            x.d = data[4 * m:4 * m + 4]
            t.d = labels[4 * m:4 * m + 4]
            loss.forward(clear_no_need_grad=True)
            loss.backward(clear_buffer=True)
            res["micro"].append(float(loss.d))
        if step == 0:
            res["accumulated"] = nn.get_parameters()["fc1/affine/W"].g.copy()
        solver.scale_grad(1.0 / 3)
        r.touch("nnabla.solver.Solver.scale_grad", "nnabla.solver.Solver.weight_decay")
        solver.weight_decay(1e-2)
        solver.update()
        nn.forward_all([vloss, vacc])
        res["eval"].append([float(vloss.d), float(vacc.d)])
    res.update(r.param_values(nn.get_parameters()))
    return res


@nnabla_case(names=[FN + "kl_multinomial", FN + "softmax", "nnabla.Variable.need_grad",
                    "nnabla.get_parameters", SV + "Adam"],
             tols={"losses": (1e-4, 1e-5)})
def user36_distillation_frozen_teacher(nn, F, PF, S, r):
    """Knowledge distillation: a teacher under its own scope whose parameters are frozen
    (``need_grad = False``: ``get_parameters()`` then leaves them out), temperature-softened
    soft targets through ``F.kl_multinomial`` plus the hard labels' cross entropy for a
    smaller student; Adam over what ``get_parameters()`` gives; the teacher unchanged."""
    x = nn.Variable.from_numpy_array(r.randn(8, 5))
    t = nn.Variable.from_numpy_array(r.randint(0, 4, (8, 1)))
    T = 2.0
    with nn.parameter_scope("teacher"):
        tl = PF.affine(F.tanh(PF.affine(x, 8, name="fc1")), 4, name="fc2")
    with nn.parameter_scope("student"):
        sl = PF.affine(x, 4, name="fc")
    listing = r.set_params(nn.get_parameters())
    before = sorted(nn.get_parameters().keys())
    with nn.parameter_scope("teacher"):
        for v in nn.get_parameters().values():
            v.need_grad = False
            r.touch("nnabla.Variable.need_grad")
        teacher_init = {k: v.d.copy() for k, v in nn.get_parameters(grad_only=False).items()}
    after = sorted(nn.get_parameters().keys())
    soft_t = F.softmax(tl / T)
    soft_s = F.softmax(sl / T)
    kd = F.mean(F.kl_multinomial(soft_t, soft_s)) * (T * T)
    hard = F.mean(F.softmax_cross_entropy(sl, t))
    loss = 0.7 * kd + 0.3 * hard
    solver = S.Adam(0.05)
    solver.set_parameters(nn.get_parameters())
    res = {"params": listing, "before": before, "after": after, "losses": [],
           "solver keys": sorted(solver.get_parameters().keys())}
    for _ in range(4):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res["losses"].append(float(loss.d))
    res["losses"] = np.array(res["losses"])
    with nn.parameter_scope("teacher"):
        res["teacher unchanged"] = all(
            np.array_equal(v.d, teacher_init[k])
            for k, v in nn.get_parameters(grad_only=False).items())
    res.update(r.param_values(nn.get_parameters(grad_only=False)))
    return res


@nnabla_case(names=[FN + "assign", FN + "identity", "nnabla.parameter_scope", PFN + "affine",
                    SV + "Adam"])
def user36_ema_weights_by_assign(nn, F, PF, S, r):
    """An exponential moving average of the weights, as nnabla-examples' GAN scripts keep
    one: the same net built in ``net`` and ``ema`` scopes, the ``ema`` copy first filled by
    ``F.assign(ema, F.identity(p))`` and then updated after each Adam step by one graph of
    ``F.assign(ema, 0.9 * ema + 0.1 * p)`` (``F.sink`` of them all); the EMA net's output
    against the trained net's."""
    x = nn.Variable.from_numpy_array(r.randn(5, 3))
    t = nn.Variable.from_numpy_array(r.randn(5, 2))

    def net(x):
        return PF.affine(F.tanh(PF.affine(x, 4, name="l1")), 2, name="l2")

    with nn.parameter_scope("net"):
        y = net(x)
        params = nn.get_parameters()
    with nn.parameter_scope("ema"):
        y_ema = net(x)
        ema = nn.get_parameters()
    listing = r.set_params(nn.get_parameters())
    copy = F.sink(*[F.assign(ema[k], F.identity(params[k])) for k in sorted(params)])
    update = F.sink(*[F.assign(ema[k], 0.9 * ema[k] + 0.1 * params[k]) for k in sorted(params)])
    copy.forward()
    res = {"params": listing, "copied": [bool(np.array_equal(ema[k].d, params[k].d))
                                         for k in sorted(params)]}
    loss = F.mean(F.squared_error(y, t))
    solver = S.Adam(0.05)
    solver.set_parameters(params)
    losses = []
    for _ in range(4):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        update.forward()
        losses.append(float(loss.d))
    y.forward()
    y_ema.forward()
    res.update({"losses": np.array(losses), "y": y.d.copy(), "y ema": y_ema.d.copy(),
                "ema grads zero": [bool(not ema[k].g.any()) for k in sorted(ema)]})
    for k in sorted(ema):
        res["ema " + k] = ema[k].d.copy()
    return res
