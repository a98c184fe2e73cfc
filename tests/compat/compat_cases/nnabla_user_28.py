"""An NNabla 1.39 user's own programs (nnuser28): each combines several features the way a
user's training or inference script does, written in the style of NNabla's tutorials and
nnabla-examples' utilities, and runs unchanged on NNabla and on ``stadyn.compat.nnabla``.

What each returns is what its user looks at: losses, parameters, printed lines and written
files (timings masked).
"""

import os

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import nnabla_refusal, outcome

D = "nnabla.utils.data_iterator."
SV = "nnabla.solvers."
MPT = "nnabla.experimental.mixed_precision_training"


def _mlp(nn, F, PF, x, hidden=8, classes=3):
    with nn.parameter_scope("net"):
        with nn.parameter_scope("fc1"):
            h = F.relu(PF.affine(x, hidden))
        with nn.parameter_scope("fc2"):
            return PF.affine(h, classes)


def _dataset(r, n=12):
    xs = r.randn(n, 4)
    ts = (np.arange(n) % 3).astype(np.int32).reshape(n, 1)
    return xs, ts


@nnabla_case(names=[D + "data_iterator_simple", SV + "Adam", "nnabla.parameter_scope",
                    "nnabla.get_parameters", "nnabla.functions.softmax_cross_entropy",
                    "nnabla.functions.mean", "nnabla.parametric_functions.affine",
                    "nnabla.clear_parameters", "nnabla.seed"])
def user28_training_resumed_from_states(nn, F, PF, S, r):
    """A training loop over ``data_iterator_simple`` (shuffled, memory cache) with Adam
    (weight decay, a step schedule through ``set_learning_rate``); the solver's states saved
    to ``.h5`` mid-run and loaded into a new solver over restored parameters: the continued
    run's losses equal the unbroken run's."""
    DI = r.module("nnabla.utils.data_iterator")
    xs, ts = _dataset(r)
    init = None

    def run(stop_at=None, resume=None):
        nn.clear_parameters()
        nn.seed(1)
        it = DI.data_iterator_simple(lambda i: (xs[i], ts[i]), len(xs), 4, shuffle=True,
                                     with_memory_cache=True, with_file_cache=False,
                                     rng=np.random.RandomState(7))
        x = nn.Variable((4, 4))
        t = nn.Variable((4, 1))
        loss = F.mean(F.softmax_cross_entropy(_mlp(nn, F, PF, x), t))
        params = nn.get_parameters()
        if init is not None:
            for k, v in params.items():
                v.d = init[k]
        solver = S.Adam(alpha=0.01)
        solver.set_parameters(params)
        start, losses = 0, []
        if resume is not None:
            start, values, path = resume
            for k, v in params.items():
                v.d = values[k]
            solver.load_states(path)
            for _ in range(start):
                it.next()
        for i in range(start, 9):
            solver.set_learning_rate(0.01 * (0.5 ** (i // 3)))
            x.d, t.d = it.next()
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.weight_decay(1e-3)
            solver.update()
            losses.append(float(loss.d))
            if stop_at is not None and i + 1 == stop_at:
                solver.save_states("states.h5")
                values = {k: v.d.copy() for k, v in params.items()}
                out = (losses, values, it.epoch, solver.learning_rate())
                it.close()
                return out
        it.close()
        return losses, {k: v.d.copy() for k, v in params.items()}, it.epoch, \
            solver.learning_rate()

    nn.clear_parameters()
    _mlp(nn, F, PF, nn.Variable((4, 4)))
    init = {k: v.d.copy() for k, v in nn.get_parameters().items()}
    full, full_params, full_epoch, lr = run()
    first, mid, epoch_mid, lr_mid = run(stop_at=5)
    rest, rest_params, _, _ = run(resume=(5, mid, "states.h5"))
    res = {"full": np.array(full), "first": np.array(first), "rest": np.array(rest),
           "epoch": [full_epoch, epoch_mid], "lr": [lr, lr_mid],
           "resumed equal": bool(np.allclose(first + rest, full, rtol=1e-5, atol=1e-6))}
    for k in sorted(full_params):
        res["param " + k] = rest_params[k]
    return res


@nnabla_case(names=[D + "data_iterator_simple"])
def user28_iterator_slices_for_workers(nn, r):
    """Two workers' slices of a shuffled iterator (as nnabla-examples' multi-device
    training splits one), with the memory cache: their batches, epochs and sizes."""
    DI = r.module("nnabla.utils.data_iterator")
    data = np.arange(10, dtype=np.float32).reshape(10, 1)
    it = DI.data_iterator_simple(lambda i: (data[i], np.array([i % 2], np.int32)), 10, 2,
                                 shuffle=False, with_memory_cache=True,
                                 with_file_cache=False)
    res = {"size": it.size, "batch_size": it.batch_size, "variables": list(it.variables)}
    for rank in range(2):
        part = it.slice(rng=None, num_of_slices=2, slice_pos=rank)
        batches = []
        for _ in range(4):
            a, b = part.next()
            batches.append([a[:, 0].tolist(), b[:, 0].tolist(), part.epoch])
        res["rank %d" % rank] = batches
        res["rank %d size" % rank] = part.size
        part.close()
    it.close()
    return res


@nnabla_case(names=["nnabla.parameter_scope", "nnabla.get_parameters",
                    "nnabla.save_parameters", "nnabla.load_parameters",
                    "nnabla.clear_parameters", "nnabla.parametric_functions.convolution",
                    "nnabla.parametric_functions.batch_normalization",
                    "nnabla.parametric_functions.affine"])
def user28_parameter_files_round_trip(nn, F, PF, r):
    """Nested scopes, ``get_parameters(grad_only=False)`` (the BN statistics too), the
    parameters saved to ``.h5`` and ``.protobuf``, cleared and loaded back (in a scope and at
    the root): names, shapes, need_grad and the network's output."""
    x = nn.Variable.from_numpy_array(r.randn(2, 1, 5, 5))

    def net(x):
        with nn.parameter_scope("model"):
            with nn.parameter_scope("conv"):
                h = PF.convolution(x, 2, (3, 3), pad=(1, 1))
                h = PF.batch_normalization(h, batch_stat=False)
            with nn.parameter_scope("head"):
                return PF.affine(F.relu(h), 3)

    y = net(x)
    for k, v in sorted(nn.get_parameters(grad_only=False).items()):
        v.d = r.randn(*v.shape) * 0.5 + (1.0 if k.endswith("var") else 0.0)
    y.forward()
    res = {"y": y.d.copy(),
           "trainable": sorted(nn.get_parameters().keys()),
           "all": sorted(nn.get_parameters(grad_only=False).keys())}
    with nn.parameter_scope("model"):
        res["in scope"] = sorted(nn.get_parameters(grad_only=False).keys())
    for ext in ("h5", "protobuf"):
        nn.save_parameters("params." + ext)
        nn.clear_parameters()
        res[ext + " empty"] = len(nn.get_parameters(grad_only=False))
        nn.load_parameters("params." + ext)
        loaded = nn.get_parameters(grad_only=False)
        res[ext + " loaded"] = [[k, list(v.shape), bool(v.need_grad)]
                                for k, v in sorted(loaded.items())]
        y2 = net(x)
        y2.forward()
        res[ext + " y"] = y2.d.copy()
    with nn.parameter_scope("model"):
        nn.save_parameters("model_only.h5")
    nn.clear_parameters()
    with nn.parameter_scope("copy"):
        nn.load_parameters("model_only.h5")
    res["scoped load"] = sorted(nn.get_parameters(grad_only=False).keys())
    return res


@nnabla_case(names=["nnabla.parametric_functions.affine", "nnabla.functions.tanh",
                    "nnabla.parameter_scope"])
def user28_nnp_saved_then_run(nn, F, PF, r):
    """A model saved with ``nnabla.utils.save.save`` (a network with a batch-size
    placeholder and an executor) and run back through ``NnpLoader`` (at another batch size)
    and ``nnabla.utils.load.load``'s executor."""
    save = r.module("nnabla.utils.save")
    nnp_graph = r.module("nnabla.utils.nnp_graph")
    load = r.module("nnabla.utils.load")
    x = nn.Variable((2, 4))
    with nn.parameter_scope("enc"):
        y = F.tanh(PF.affine(x, 3, name="fc"))
    for k, v in sorted(nn.get_parameters().items()):
        v.d = r.randn(*v.shape)
    data = r.randn(5, 4)
    x.d = data[:2]
    y.forward()
    res = {"y": y.d.copy()}
    contents = {"networks": [{"name": "net", "batch_size": 2, "outputs": {"y": y},
                              "names": {"x": x}}],
                "executors": [{"name": "runtime", "network": "net", "data": ["x"],
                               "output": ["y"]}]}
    save.save("model.nnp", contents)
    nn.clear_parameters()
    loader = nnp_graph.NnpLoader("model.nnp")
    res["networks"] = loader.get_network_names()
    g = loader.get_network("net", batch_size=5)
    gx, gy = g.inputs["x"], g.outputs["y"]
    gx.d = data
    gy.forward()
    res["loader y"] = gy.d.copy()
    res["loader shapes"] = [list(gx.shape), list(gy.shape)]
    res["loader params"] = sorted(nn.get_parameters().keys())
    nn.clear_parameters()
    info = load.load(["model.nnp"], batch_size=2)
    ex = info.executors["runtime"]
    ex.network.variables["x"].variable_instance.d = data[:2]
    out = ex.network.variables["y"].variable_instance
    out.forward()
    res["executor y"] = out.d.copy()
    res["executor data"] = sorted(v.name for v in ex.dataset_assign.keys())
    return res


@nnabla_case(names=["nnabla.auto_forward", "nnabla.grad", "nnabla.functions.sin",
                    "nnabla.functions.exp", "nnabla.functions.sum",
                    "nnabla.functions.mul2"])
def user28_auto_forward_higher_order(nn, F, r):
    """Dynamic mode: values appear as ops are called; ``nn.grad`` twice (a second-order
    derivative), ``unlinked`` cutting the graph, ``need_grad`` toggled and ``persistent``."""
    res = {}
    xv = r.randn(5)
    with nn.auto_forward():
        x = nn.Variable.from_numpy_array(xv, need_grad=True)
        y = F.sin(x) * F.exp(x * 0.5)
        res["y"] = y.d.copy()
        dx = nn.grad([F.sum(y)], [x])[0]
        res["dx"] = dx.d.copy()
        ddx = nn.grad([F.sum(dx)], [x])[0]
        res["ddx"] = ddx.d.copy()
        frozen = y.unlinked()
        res["unlinked parent"] = frozen.parent is None
        z = F.sum(frozen * x)
        res["z"] = float(z.d)
        x.grad.zero()
        z.backward()
        res["grad through unlinked"] = x.g.copy()
        x.need_grad = False
        w = F.mul2(x, x)
        res["need_grad off"] = bool(w.need_grad)
    res["auto after"] = nn.get_auto_forward()
    return res


@nnabla_case(names=["nnabla.functions.relu", "nnabla.functions.sum",
                    "nnabla.parametric_functions.affine", "nnabla.functions.sink"])
def user28_static_graph_buffers(nn, F, PF, r):
    """A static graph run with ``forward(clear_no_need_grad=True)`` and
    ``backward(clear_buffer=True)``: the gradients are those of a plain run; a ``persistent``
    intermediate keeps its value; two losses run at once through ``F.sink``."""
    x = nn.Variable.from_numpy_array(r.randn(3, 4))
    with nn.parameter_scope("a"):
        h = F.relu(PF.affine(x, 5))
    h.persistent = True
    with nn.parameter_scope("b"):
        y = PF.affine(h, 2)
    loss = F.sum(y ** 2)
    for k, v in sorted(nn.get_parameters().items()):
        v.d = r.randn(*v.shape)
    params = nn.get_parameters()
    res = {}
    for mode in ("plain", "clearing"):
        for v in params.values():
            v.grad.zero()
        if mode == "plain":
            loss.forward()
            loss.backward()
        else:
            loss.forward(clear_no_need_grad=True)
            loss.backward(clear_buffer=True)
        res[mode + " loss"] = float(loss.d)
        res[mode + " h"] = h.d.copy()
        for k in sorted(params):
            res[mode + " grad " + k] = params[k].g.copy()
    l2 = F.sum(h)
    s = F.sink(loss, l2)
    s.forward()
    res["sink values"] = [float(loss.d), float(l2.d)]
    return res


@nnabla_case(names=["nnabla.parametric_functions.lstm_cell", "nnabla.parametric_functions.gru",
                    "nnabla.functions.split", "nnabla.functions.stack",
                    "nnabla.functions.rnn", "nnabla.context_scope"])
def user28_recurrent_over_time(nn, F, PF, r):
    """A sequence model: inputs split over time, ``PF.lstm_cell`` stepped by hand
    and the outputs stacked; the same sequence through ``PF.gru`` and ``F.rnn``, in a CPU
    ``context_scope``: outputs and the gradients of a summed loss."""
    ext = r.module("nnabla.ext_utils")
    ctx = ext.get_extension_context("cpu")
    T, B, D, H = 4, 2, 3, 5
    xs = nn.Variable.from_numpy_array(r.randn(T, B, D), need_grad=True)
    res = {}
    with nn.context_scope(ctx):
        h = nn.Variable.from_numpy_array(np.zeros((B, H), np.float32))
        c = nn.Variable.from_numpy_array(np.zeros((B, H), np.float32))
        outs = []
        for xt in F.split(xs, axis=0):
            with nn.parameter_scope("cell"):
                h, c = PF.lstm_cell(xt, h, c, H)
            outs.append(h)
        ys = F.stack(*outs, axis=0)
        with nn.parameter_scope("gru"):
            g, gh = PF.gru(xs, nn.Variable.from_numpy_array(
                np.zeros((1, 1, B, H), np.float32)), num_layers=1)
        w0 = nn.Variable.from_numpy_array(r.randn(1, H, D + H) * 0.3, need_grad=True)
        b = nn.Variable.from_numpy_array(r.randn(1, 1, H) * 0.1, need_grad=True)
        h0 = nn.Variable.from_numpy_array(np.zeros((1, 1, B, H), np.float32))
        rn, rh = F.rnn(xs, h0, w0, bias=b, num_layers=1, nonlinearity="tanh")
    for k, v in sorted(nn.get_parameters().items()):
        v.d = r.randn(*v.shape) * 0.3
    res["params"] = [[k, list(v.shape)] for k, v in sorted(nn.get_parameters().items())]
    loss = F.sum(ys) + F.sum(g * g) + F.sum(rn)
    loss.forward()
    xs.grad.zero()
    loss.backward()
    res["lstm"] = ys.d.copy()
    res["gru"] = g.d.copy()
    res["gru h"] = gh.d.copy()
    res["rnn"] = rn.d.copy()
    res["rnn h"] = rh.d.copy()
    res["dx"] = xs.g.copy()
    res["dw0"] = w0.g.copy()
    return res


@nnabla_case(names=["nnabla.functions.add2", "nnabla.functions.mul2",
                    "nnabla.functions.div2", "nnabla.functions.maximum2",
                    "nnabla.functions.sum", "nnabla.functions.max"])
def user28_broadcasting_and_integers(nn, F, r):
    """Arithmetic a user writes on mixed shapes and integer arrays: broadcast two-operand
    ops, operators with NumPy scalars, integer Variables through them (the dtypes of the
    results as NNabla gives them) and reductions with keepdims."""
    a = nn.Variable.from_numpy_array(r.randn(2, 1, 3), need_grad=True)
    b = nn.Variable.from_numpy_array(r.randn(1, 4, 1), need_grad=True)
    ia = nn.Variable.from_numpy_array(np.arange(6, dtype=np.int32).reshape(2, 3))
    outs = [F.add2(a, b), F.mul2(a, b), F.div2(a, b + 3.0), F.maximum2(a, b),
            a * 2 - b / 4 + 1, 1.0 - a, 2 ** a, F.sum(a * b, axis=1, keepdims=True),
            F.max(a * b, axis=(0, 2))]
    res = {}
    for i, o in enumerate(outs):
        o.forward()
        res["out %d" % i] = o.d.copy()
        res["shape %d" % i] = list(o.shape)
        a.grad.zero()
        b.grad.zero()
        o.backward(np.ones(o.shape, np.float32))
        res["ga %d" % i] = a.g.copy()
        res["gb %d" % i] = b.g.copy()
    iouts = [ia + 1, ia * 2, F.sum(ia), ia / 2, F.max(ia, axis=1)]
    for i, o in enumerate(iouts):
        o.forward()
        res["int %d" % i] = o.d.copy()
    return res


@nnabla_case(names=["nnabla.parametric_functions.affine", "nnabla.functions.leaky_relu",
                    "nnabla.functions.sigmoid_cross_entropy", "nnabla.functions.mean",
                    SV + "Adam", SV + "Sgd"])
def user28_gan_two_solvers(nn, F, PF, S, r):
    """A GAN step as nnabla-examples' ``dcgan`` writes it: a generator and a discriminator
    in their own scopes and solvers, the fake images ``unlinked`` for the discriminator's
    step (and ``persistent``, as dcgan's are: without it NNabla's ``backward(clear_buffer=True)``
    frees them and the discriminator reads its memory pool's leftovers), two iterations:
    losses and parameters."""
    z = nn.Variable.from_numpy_array(r.randn(4, 2))
    real = nn.Variable.from_numpy_array(r.randn(4, 3) + 1.0)

    def gen(z):
        with nn.parameter_scope("gen"):
            return F.tanh(PF.affine(z, 3))

    def dis(x):
        with nn.parameter_scope("dis"):
            return PF.affine(F.leaky_relu(PF.affine(x, 4, name="l1"), 0.2), 1, name="l2")

    fake = gen(z)
    fake.persistent = True     # read after the generator's backward(clear_buffer=True)
    loss_g = F.mean(F.sigmoid_cross_entropy(dis(fake), F.constant(1, (4, 1))))
    fake_d = fake.unlinked()
    loss_d = F.mean(F.sigmoid_cross_entropy(dis(fake_d), F.constant(0, (4, 1))))
    loss_d += F.mean(F.sigmoid_cross_entropy(dis(real), F.constant(1, (4, 1))))
    for k, v in sorted(nn.get_parameters().items()):
        v.d = r.randn(*v.shape) * 0.5
    with nn.parameter_scope("gen"):
        sg = S.Adam(0.01, beta1=0.5)
        sg.set_parameters(nn.get_parameters())
    with nn.parameter_scope("dis"):
        sd = S.Sgd(0.1)
        sd.set_parameters(nn.get_parameters())
    res = {"gen params": sorted(sg.get_parameters().keys()),
           "dis params": sorted(sd.get_parameters().keys())}
    for step in range(2):
        loss_g.forward(clear_no_need_grad=True)
        sg.zero_grad()
        loss_g.backward(clear_buffer=True)
        sg.update()
        fake_d.d = fake.d
        loss_d.forward(clear_no_need_grad=True)
        sd.zero_grad()
        loss_d.backward(clear_buffer=True)
        sd.update()
        res["step %d" % step] = [float(loss_g.d), float(loss_d.d)]
    for k, v in sorted(nn.get_parameters().items()):
        res["param " + k] = v.d.copy()
    return res


@nnabla_case(names=[SV + "Momentum"])
def user28_solver_grad_tools(nn, F, PF, S, r):
    """The gradient tools a user calls between ``backward`` and ``update``:
    ``scale_grad`` (loss scaling undone), ``clip_grad_by_norm``, ``check_inf_or_nan_grad``
    (false, then true after a NaN), ``weight_decay``; ``remove_parameters``, ``info``-free
    state listing by ``get_states``."""
    x = nn.Variable.from_numpy_array(r.randn(3, 2))
    with nn.parameter_scope("m"):
        y = PF.affine(x, 2)
    for k, v in sorted(nn.get_parameters().items()):
        v.d = r.randn(*v.shape)
    loss = F.sum(y * y) * 8.0
    solver = S.Momentum(0.1, 0.9)
    solver.set_parameters(nn.get_parameters())
    res = {}
    for step in range(3):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.scale_grad(1.0 / 8.0)
        res["nan %d" % step] = bool(solver.check_inf_or_nan_grad())
        solver.clip_grad_by_norm(1.0)
        solver.weight_decay(0.01)
        solver.update()
        res["loss %d" % step] = float(loss.d)
    res["states"] = sorted(solver.get_states().keys())
    res["state vars"] = sorted(solver.get_states()["m/affine/W"].pstate.keys())
    params = nn.get_parameters()
    params["m/affine/b"].g[0] = np.nan
    res["nan after"] = bool(solver.check_inf_or_nan_grad())
    solver.remove_parameters(["m/affine/b"])
    res["after remove"] = sorted(solver.get_parameters().keys())
    for k, v in sorted(params.items()):
        res["param " + k] = v.d.copy()
    return res


@nnabla_case(names=["nnabla.monitor.Monitor", "nnabla.monitor.MonitorSeries",
                    "nnabla.monitor.MonitorTimeElapsed", "nnabla.monitor.MonitorImage",
                    "nnabla.monitor.MonitorImageTile"])
def user28_monitors_in_training(nn, r):
    """nnabla-examples' monitors over six iterations: the series and timer files (times
    masked), the images MonitorImage and MonitorImageTile write (names, sizes, pixels)."""
    M = r.module("nnabla.monitor")
    IU = r.module("nnabla.utils.image_utils")
    m = M.Monitor("tmp.monitor")
    loss = M.MonitorSeries("Training loss", m, interval=2)
    err = M.MonitorSeries("Training error", m, interval=3)
    timer = M.MonitorTimeElapsed("Training time", m, interval=3)
    img = M.MonitorImage("Generated", m, interval=3, num_images=2,
                         normalize_method=lambda x: (x + 1) / 2.0)
    tile = M.MonitorImageTile("Tiled", m, interval=3, num_images=4)
    images = np.tanh(r.randn(4, 1, 3, 5))
    for i in range(6):
        loss.add(i, 1.0 / (i + 1))
        err.add(i, 0.5 - i * 0.05)
        timer.add(i)
        img.add(i, images * (i + 1) / 6.0)
        tile.add(i, images[:, :, :, :4] * 0.5 + 0.5)
    res = {}
    for root, dirs, files in os.walk("tmp.monitor"):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, "tmp.monitor").replace(os.sep, "/")
            if name.endswith(".txt"):
                with open(path) as f:
                    lines = f.read().splitlines()
                if "time" in name:
                    lines = [line.split(" ")[0] for line in lines]
                res[rel] = lines
            else:
                pixels = IU.imread(path)
                res[rel] = np.asarray(pixels).astype(np.int32)
    res["files"] = sorted(k for k in res)
    return res


@nnabla_case(names=["nnabla.seed", "nnabla.parametric_functions.affine",
                    "nnabla.parametric_functions.convolution", "nnabla.functions.rand",
                    "nnabla.functions.randn", "nnabla.functions.dropout"])
def user28_seeded_runs_repeat(nn, F, PF, r):
    """A user relies on ``nn.seed`` for a reproducible run: the parameters PF functions
    create with their default initialisers after ``nn.seed(42)``, and the draws of
    ``F.rand``/``F.randn`` and a training ``F.dropout`` (seed -1, the global generator):
    NNabla's own numbers, twice from the same seed."""
    res = {}
    for run in range(2):
        nn.clear_parameters()
        nn.seed(42)
        x = nn.Variable.from_numpy_array(np.ones((2, 1, 4, 4), np.float32))
        with nn.parameter_scope("c"):
            h = PF.convolution(x, 2, (3, 3))
        with nn.parameter_scope("f"):
            y = PF.affine(h, 3)
        u = F.rand(-1.0, 1.0, shape=(2, 3))
        n = F.randn(0.0, 2.0, shape=(3,))
        d = F.dropout(F.constant(1.0, (2, 8)), p=0.5)
        for v in (y, u, n, d):
            v.forward()
        for k, v in sorted(nn.get_parameters().items()):
            res["run %d %s" % (run, k)] = v.d.copy()
        res["run %d rand" % run] = u.d.copy()
        res["run %d randn" % run] = n.d.copy()
        res["run %d dropout" % run] = d.d.copy()
    return res


@nnabla_case(names=["nnabla.set_function_pre_hook", "nnabla.set_function_post_hook",
                    "nnabla.unset_function_pre_hook", "nnabla.unset_function_post_hook",
                    "nnabla.no_grad", "nnabla.functions.relu", "nnabla.functions.sum"])
def user28_function_hooks_and_no_grad(nn, F, PF, r):
    """Hooks a user installs to trace a forward (the function names, in the order they run,
    before and after), removed again; a graph built under ``nn.no_grad()`` (its
    ``need_grad``), and one built after."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    with nn.parameter_scope("h"):
        y = F.sum(F.relu(PF.affine(x, 4)) * 2.0)
    calls = []
    nn.set_function_pre_hook("pre", lambda f: calls.append(["pre", f.info.type_name]))
    nn.set_function_post_hook("post", lambda f: calls.append(["post", f.info.type_name]))
    y.forward()
    nn.unset_function_pre_hook("pre")
    nn.unset_function_post_hook("post")
    y.forward()
    res = {"calls": calls, "y": float(y.d)}
    with nn.no_grad():
        z = F.relu(x) * 3.0
    res["no_grad need_grad"] = bool(z.need_grad)
    w = F.relu(x) * 3.0
    res["after need_grad"] = bool(w.need_grad)
    z.forward()
    res["z"] = z.d.copy()
    return res


@nnabla_case(names=["nnabla.parametric_functions.affine", SV + "Momentum",
                    "nnabla.functions.squared_error", "nnabla.functions.mean"])
def user28_learning_rate_schedulers(nn, F, PF, S, r):
    """``nnabla.utils.learning_rate_scheduler``'s schedules driving a solver through
    ``set_learning_rate`` each iteration (a warmed-up cosine, a step schedule), as
    nnabla-examples' training scripts do: the rates and the losses."""
    LRS = r.module("nnabla.utils.learning_rate_scheduler")
    x = nn.Variable.from_numpy_array(r.randn(6, 3))
    t = nn.Variable.from_numpy_array(r.randn(6, 1))
    y = PF.affine(x, 1)
    loss = F.mean(F.squared_error(y, t))
    for k, v in sorted(nn.get_parameters().items()):
        v.d = r.randn(*v.shape)
    solver = S.Momentum(0.1, 0.9)
    solver.set_parameters(nn.get_parameters())
    cosine = LRS.LinearWarmupScheduler(LRS.CosineScheduler(0.1, 10), 3)
    step = LRS.StepScheduler(0.1, 0.5, [2, 5])
    res = {"cosine": [cosine.get_learning_rate(i) for i in range(12)],
           "step": [step.get_learning_rate(i) for i in range(8)]}
    losses = []
    for i in range(8):
        solver.set_learning_rate(cosine.get_learning_rate(i))
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        losses.append(float(loss.d))
    res["losses"] = np.array(losses)
    return res


@nnabla_case(names=["nnabla.parametric_functions.affine", SV + "Sgd",
                    "nnabla.functions.mean", "nnabla.functions.squared_error",
                    MPT, MPT + ".DynamicLossScalingUpdater",
                    MPT + ".DynamicLossScalingUpdater.update"])
def user28_mixed_precision_loss_scaling(nn, F, PF, S, r):
    """``nnabla.experimental.mixed_precision_training.DynamicLossScalingUpdater`` over a
    small regression: the loss scale as steps run (one step's data made infinite: the step is
    retried at halved scales 101 times, then given up; more than ``N=2`` good steps in a row
    double it), the losses and the parameters."""
    MP = r.module("nnabla.experimental.mixed_precision_training")
    xs = r.randn(9, 4, 3)
    xs[2, 0, 0] = np.inf
    x = nn.Variable((4, 3))
    t = nn.Variable.from_numpy_array(r.randn(4, 2))
    loss = F.mean(F.squared_error(PF.affine(x, 2), t))
    for k, v in sorted(nn.get_parameters().items()):
        v.d = r.randn(*v.shape)
    solver = S.Sgd(0.05)
    solver.set_parameters(nn.get_parameters())
    feed = {"i": 0}

    def data_feeder():
        x.d = xs[feed["i"]]
    updater = MP.DynamicLossScalingUpdater(solver, loss, data_feeder=data_feeder, scale=8.0,
                                           scaling_factor=2.0, N=2, clear_buffer=True,
                                           weight_decay=1e-4)
    scales, losses = [], []
    for i in range(9):
        feed["i"] = i
        updater.update()
        r.touch(MPT + ".DynamicLossScalingUpdater.update")
        scales.append(float(updater.scale))
        losses.append(float(loss.d))
    res = {"scales": scales, "losses": np.array(losses)}
    for k, v in sorted(nn.get_parameters().items()):
        res["param " + k] = v.d.copy()
    return res


@nnabla_case(names=["nnabla.Variable", "nnabla.NdArray", "nnabla.functions.affine",
                    "nnabla.get_current_context"])
def user28_printing_and_inspecting(nn, F, r):
    """What a user prints while debugging: a Variable, an NdArray, a graph's functions
    (``parent.name``, ``info.type_name``, ``info.args``, inputs' shapes), the current
    context and the dtypes of cast arrays."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    w = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
    y = F.affine(x, w, base_axis=1)
    res = {"repr x": repr(x).split(" at ")[0], "shape": list(y.shape), "ndim": y.ndim,
           "size": y.size, "size_from_axis": y.size_from_axis(1),
           "parent": [y.parent.name, y.parent.info.type_name],
           "args": sorted(y.parent.info.args.items()),
           "inputs": [list(i.shape) for i in y.parent.inputs],
           "outputs": [list(o.shape) for o in y.parent.outputs]}
    a = nn.NdArray.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3))
    res["ndarray"] = [list(a.shape), a.ndim, a.size, str(a.dtype)]
    res["cast"] = [str(a.cast(np.int32).dtype), a.cast(np.float16).tolist()
                   if hasattr(a.cast(np.float16), "tolist") else a.data.tolist()]
    ctx = nn.get_current_context()
    res["context"] = [list(ctx.backend), ctx.array_class]
    res["print context"] = str(ctx)
    return res


def _forward_first(make):
    out = make()
    out = out[0] if isinstance(out, tuple) else out
    out.forward()
    return np.array(out.d, copy=True)


@nnabla_case(names=["nnabla.functions.rnn", "nnabla.functions.lstm", "nnabla.functions.gru"])
def user28_recurrent_misuse(nn, F, r):
    """The mistakes a user makes calling ``F.rnn``/``F.lstm``/``F.gru`` by hand (found
    writing ``user28_recurrent_over_time``): a bias shaped ``(L, H)`` (``rnn``'s is
    ``(L, D, H)``), of the wrong number of layers or gates, a ``weight`` with one layer,
    a ``c`` unlike ``h``, a ``weight_l0`` for another input size.  NNabla 1.39 refuses each
    (``RuntimeError``, rnn.cpp:28-114 and lstm.cpp / gru.cpp's ``setup_impl``); Stadyn computed
    several silently.  (A two-layer ``rnn`` without ``weight`` is left out: NNabla 1.39's
    process dies there.)"""
    T, B, I, H = 4, 2, 3, 5

    def V(*shape):
        return nn.Variable.from_numpy_array(r.randn(*shape) * 0.3)
    x = V(T, B, I)
    calls = {
        "rnn bias (L, H)": lambda: F.rnn(x, V(1, 1, B, H), V(1, H, I + H), bias=V(1, H)),
        "rnn bias hidden": lambda: F.rnn(x, V(1, 1, B, H), V(1, H, I + H), bias=V(1, 1, H + 1)),
        "rnn bias layers": lambda: F.rnn(x, V(1, 1, B, H), V(1, H, I + H), bias=V(2, 1, H)),
        "rnn weight one layer": lambda: F.rnn(x, V(1, 1, B, H), V(1, H, I + H),
                                              weight=V(1, 1, H, 2 * H)),
        "rnn two layers bias only": lambda: F.rnn(x, V(2, 1, B, H), V(1, H, I + H),
                                                  bias=V(2, 1, H), num_layers=2),
        "rnn h layers": lambda: F.rnn(x, V(2, 1, B, H), V(1, H, I + H)),
        "rnn w0 input size": lambda: F.rnn(x, V(1, 1, B, H), V(1, H, I + H + 1)),
        "rnn x 2-D": lambda: F.rnn(V(T, I), V(1, 1, B, H), V(1, H, I + H)),
        "rnn fine": lambda: F.rnn(x, V(1, 1, B, H), V(1, H, I + H), bias=V(1, 1, H)),
        "rnn two layers fine": lambda: F.rnn(x, V(2, 2, B, H), V(2, H, I + H),
                                             V(1, 2, H, 3 * H), V(2, 2, H), num_layers=2,
                                             bidirectional=True),
        "gru bias 3-D": lambda: F.gru(x, V(1, 1, B, H), V(1, 3, H, I + H), bias=V(1, 1, H)),
        "gru bias 3 gates": lambda: F.gru(x, V(1, 1, B, H), V(1, 3, H, I + H),
                                          bias=V(1, 1, 3, H)),
        "gru fine": lambda: F.gru(x, V(1, 1, B, H), V(1, 3, H, I + H), bias=V(1, 1, 4, H)),
        "lstm bias 3-D": lambda: F.lstm(x, V(1, 1, B, H), V(1, 1, B, H), V(1, 4, H, I + H),
                                        bias=V(1, 1, H)),
        "lstm bias hidden": lambda: F.lstm(x, V(1, 1, B, H), V(1, 1, B, H), V(1, 4, H, I + H),
                                           bias=V(1, 1, 4, H + 1)),
        "lstm c unlike h": lambda: F.lstm(x, V(1, 1, B, H), V(1, 1, B, H + 1),
                                          V(1, 4, H, I + H)),
        "lstm weight one layer": lambda: F.lstm(x, V(1, 1, B, H), V(1, 1, B, H),
                                                V(1, 4, H, I + H), weight=V(1, 1, 4, H, 2 * H)),
        "lstm two layers fine": lambda: F.lstm(x, V(2, 1, B, H), V(2, 1, B, H),
                                               V(1, 4, H, I + H), V(1, 1, 4, H, 2 * H),
                                               num_layers=2),
        # every argument by position, as the signature orders them (rnn: ..., num_layers,
        # nonlinearity, dropout, bidirectional, training; gru and lstm: no nonlinearity)
        "rnn positional bidirectional": lambda: F.rnn(x, V(1, 2, B, H), V(2, H, I + H), None,
                                                      None, 1, "tanh", 0.0, True, True),
        "rnn positional bidirectional, h one direction":
            lambda: F.rnn(x, V(1, 1, B, H), V(1, H, I + H), None, None, 1, "tanh", 0.0, True),
        "rnn positional two layers": lambda: F.rnn(x, V(2, 2, B, H), V(2, H, I + H),
                                                   V(1, 2, H, 3 * H), V(2, 2, H), 2, "relu",
                                                   0.0, True, False),
        "gru positional bidirectional": lambda: F.gru(x, V(1, 2, B, H), V(2, 3, H, I + H),
                                                      None, V(1, 2, 4, H), 1, 0.0, True, True),
        "gru positional bidirectional, h one direction":
            lambda: F.gru(x, V(1, 1, B, H), V(1, 3, H, I + H), None, None, 1, 0.0, True),
        "lstm positional bidirectional": lambda: F.lstm(x, V(1, 2, B, H), V(1, 2, B, H),
                                                        V(2, 4, H, I + H), None, None, 1, 0.0,
                                                        True, True),
        "lstm positional bidirectional, h one direction":
            lambda: F.lstm(x, V(1, 1, B, H), V(1, 1, B, H), V(1, 4, H, I + H), None, None, 1,
                           0.0, True),
    }
    return {k: outcome(lambda: _forward_first(make), raised=nnabla_refusal)
            for k, make in sorted(calls.items())}


RNNU = "nnabla.utils.rnn."


_CHAINED_ASSIGNMENTS = (
    "NNabla 1.39 gives no gradient to a sequence pad_sequence wrote by `x[key] = s` once a "
    "later assignment rewired x (in a static graph only the last of the assignments gets its "
    "gradient; in a dynamic one, nn.set_auto_forward(True) or `with nn.auto_forward()` as "
    "here, none does: zeros), where Stadyn passes each sequence the gradient of the slice it "
    "filled")


@nnabla_case(names=["nnabla.utils.rnn", RNNU + "PackedSequence", RNNU + "pad_sequence",
                    RNNU + "pack_padded_sequence", RNNU + "pack_sequence",
                    RNNU + "pad_packed_sequence", "nnabla.auto_forward"],
             known={"grad %d" % i: _CHAINED_ASSIGNMENTS for i in range(3)})
def user28_variable_length_sequences(nn, F, r):
    """Sentences of different lengths batched with ``nnabla.utils.rnn`` (missing from
    Stadyn until this program): padded both ways, packed unsorted and unpacked back (the
    original order, ``total_length``), a packed batch given batch-first; a loss over the
    padded batch and the unpacked one, and the gradients reaching each sentence."""
    R = r.module("nnabla.utils.rnn")
    empty = R.PackedSequence()
    res = {"empty": [empty.data, empty.batch_sizes, empty.sorted_indices,
                     empty.unsorted_indices]}
    with nn.auto_forward():
        seqs = [nn.Variable.from_numpy_array(r.randn(n, 3), need_grad=True) for n in (2, 4, 3)]
        padded = R.pad_sequence(seqs)
        first = R.pad_sequence(seqs, batch_first=True, padding_value=-1.0)
        res["padded"] = padded.d.copy()
        res["batch first"] = first.d.copy()
        packed = R.pack_sequence(seqs, enforce_sorted=False)
        res["packed"] = [packed.data.d.copy(), packed.batch_sizes.d.tolist(),
                         packed.sorted_indices.d.tolist(), packed.unsorted_indices.d.tolist()]
        back, lengths = R.pad_packed_sequence(packed, total_length=5)
        res["unpacked"] = back.d.copy()
        res["lengths"] = np.asarray(lengths.d).tolist()
        res["too short"] = outcome(lambda: R.pad_packed_sequence(packed, total_length=2),
                                   raised=lambda e: type(e).__name__)
        sorted_first = R.pad_sequence([seqs[1], seqs[2], seqs[0]], batch_first=True)
        lens = nn.Variable.from_numpy_array(np.array([4, 3, 2]))
        p2 = R.pack_padded_sequence(sorted_first, lens, batch_first=True)
        res["sorted packed"] = [p2.data.d.copy(), p2.batch_sizes.d.tolist(),
                                p2.sorted_indices is None]
        b2, l2 = R.pad_packed_sequence(p2, batch_first=True, padding_value=9.0)
        res["sorted unpacked"] = [b2.d.copy(), np.asarray(l2.d).tolist()]
        w = nn.Variable.from_numpy_array(r.randn(4, 3, 3))
        loss = F.sum(padded * w) + F.sum(back * back)
        for s in seqs:
            s.grad.zero()
        loss.backward()
        for i, s in enumerate(seqs):
            res["grad %d" % i] = s.g.copy()
    return res
