"""The rest of ``stadyn.compat.nnabla``: ``nnabla``'s own names (Variable, modes, grad,
contexts, parameters and their files, seed), ``nnabla.initializer``, ``nnabla.ext_utils``,
``nnabla.utils.data_iterator``, ``nnabla.communicators`` and the tutorials' ``tiny_digits``.

NNabla's communicators need an MPI/NCCL build (the CPU build here cannot make one) and
``tiny_digits`` comes from NNabla's tutorials, not the package: those cases give their
expected values by hand (``expected=``), from the documented behaviour.
"""

import os

import numpy as np

from compat_harness import nnabla_case


@nnabla_case(names=["nnabla.Variable"])
def variable(nn, F, r):
    x = nn.Variable((2, 3), need_grad=True)
    x.d = r.randn(2, 3)
    y = F.sigmoid(x) * 2.0
    y.forward()
    x.g = 0
    y.backward()
    z = nn.Variable.from_numpy_array(r.randn(3))
    return {"shape": list(x.shape), "ndim": x.ndim, "size": x.size, "need_grad": x.need_grad,
            "y": y.d.copy(), "grad": x.g.copy(), "z": z.d.copy(), "z_need_grad": z.need_grad,
            "y_shape": list(y.shape)}


@nnabla_case(names=["nnabla.Variable"])
def variable_backward_accumulates(nn, F, r):
    """backward() adds to the inputs' gradients until they are zeroed."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    y = F.tanh(x)
    y.forward()
    x.g = 0
    y.backward()
    first = x.g.copy()
    y.backward()
    return {"first": first, "second": x.g.copy()}


@nnabla_case(names=["nnabla.set_auto_forward", "nnabla.get_auto_forward", "nnabla.auto_forward"])
def auto_forward_switch(nn, F, r):
    before = nn.get_auto_forward()
    nn.set_auto_forward(True)
    try:
        on = nn.get_auto_forward()
        x = nn.Variable.from_numpy_array(r.randn(2, 3))
        y = F.exp(x)
        value = y.d.copy()
    finally:
        nn.set_auto_forward(False)
    with nn.auto_forward():
        inside = nn.get_auto_forward()
    return {"before": before, "on": on, "value": value, "inside": inside,
            "after": nn.get_auto_forward()}


@nnabla_case(names=["nnabla.forward_all"])
def forward_all(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(3, 4))
    h = F.relu(x)
    a, b = F.sum(h, axis=1), F.max(h, axis=0)
    nn.forward_all([a, b])
    return {"a": a.d.copy(), "b": b.d.copy()}


@nnabla_case(names=["nnabla.grad"])
def grad(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    y = F.sum(F.tanh(x) * x)
    gx = nn.grad([y], [x])[0]
    gx.forward()
    ggx = nn.grad([F.sum(gx)], [x])[0]
    ggx.forward()
    return {"grad": gx.d.copy(), "second": ggx.d.copy()}


@nnabla_case(names=["nnabla.parameter_scope", "nnabla.get_parameters",
                    "nnabla.clear_parameters", "nnabla.get_parameter_or_create"],
             substitutes={"nnabla.get_parameter_or_create":
                          "nnabla.parameter.get_parameter_or_create"},
             note="NNabla keeps get_parameter_or_create in nnabla.parameter")
def parameters(nn, F, r):
    I = r.module("nnabla.initializer")
    with nn.parameter_scope("net"):
        with nn.parameter_scope("a"):
            w = nn.get_parameter_or_create("w", (2, 3), I.ConstantInitializer(0.5))
            again = nn.get_parameter_or_create("w", (2, 3))
        c = nn.get_parameter_or_create("c", (4,), r.randn(4), need_grad=False)
    listing = [[k, list(v.shape), bool(v.need_grad)]
               for k, v in nn.get_parameters(grad_only=False).items()]
    learnable = list(nn.get_parameters().keys())
    with nn.parameter_scope("net"):
        scoped = list(nn.get_parameters().keys())
    values = [w.d.copy(), c.d.copy()]
    same = again is w or np.array_equal(again.d, w.d)
    nn.clear_parameters()
    return {"listing": listing, "learnable": learnable, "scoped": scoped, "w": values[0],
            "c": values[1], "same": bool(same), "after_clear": len(nn.get_parameters())}


@nnabla_case(names=["nnabla.save_parameters", "nnabla.load_parameters"],
             substitutes={"nnabla.get_parameter_or_create":
                          "nnabla.parameter.get_parameter_or_create"})
def parameter_files(nn, F, r):
    """Parameters saved to .h5 and loaded back after clearing (names, shapes, values,
    need_grad)."""
    r.module("nnabla.initializer")
    with r.tempdir() as folder:
        with nn.parameter_scope("m"):
            nn.get_parameter_or_create("W", (3, 2), r.randn(3, 2))
            nn.get_parameter_or_create("stat", (2,), r.randn(2), need_grad=False)
        path = os.path.join(folder, "p.h5")
        nn.save_parameters(path)
        nn.clear_parameters()
        nn.load_parameters(path)
        return dict(("%s %s" % (k, v.need_grad), v.d.copy())
                    for k, v in nn.get_parameters(grad_only=False).items())


@nnabla_case(names=["nnabla.seed"])
def seed(nn, F, r):
    """The same seed gives the same random initial values (within a framework)."""
    PF = r.module("nnabla.parametric_functions")
    values = []
    for _ in range(2):
        nn.clear_parameters()
        nn.seed(42)
        PF.affine(nn.Variable((2, 3)), 4)
        values.append(nn.get_parameters()["affine/W"].d.copy())
    nn.seed(43)
    nn.clear_parameters()
    PF.affine(nn.Variable((2, 3)), 4)
    other = nn.get_parameters()["affine/W"].d.copy()
    return {"repeats": bool(np.array_equal(values[0], values[1])),
            "other_seed_differs": not bool(np.array_equal(values[0], other))}


@nnabla_case(names=["nnabla.context_scope", "nnabla.set_default_context",
                    "nnabla.get_current_context", "nnabla.ext_utils.get_extension_context"])
def contexts(nn, F, r):
    E = r.module("nnabla.ext_utils")
    ctx = E.get_extension_context("cpu")
    default = nn.get_current_context()
    with nn.context_scope(ctx):
        x = nn.Variable.from_numpy_array(r.randn(2, 2))
        y = F.relu(x)
        y.forward()
        inside = y.d.copy()
    nn.set_default_context(ctx)
    try:
        z = F.exp(x)
        z.forward()
    finally:
        nn.set_default_context(default)
    return {"inside": inside, "after_set": z.d.copy(),
            "default": _describe(default), "extension": _describe(ctx)}


def _describe(ctx):
    """A context's NNabla fields (``<missing>`` where Stadyn's has none: a known difference)."""
    return [str(getattr(ctx, name, "<missing>")) for name in ("backend", "array_class",
                                                             "device_id")]


@nnabla_case(names=["nnabla.Context"])
def context_constructor(nn, r):
    made = nn.Context(backend=["cpu:float"], array_class="CpuCachedArray", device_id="0")
    return {"made": [list(made.backend), str(made.array_class), str(made.device_id)]}


# -- initializers ---------------------------------------------------------------------------
Z = "nnabla.initializer."


@nnabla_case(names=[Z + "ConstantInitializer", Z + "UniformInitializer", Z + "NormalInitializer",
                    Z + "UniformIntInitializer"],
             note="with a seeded NumPy RandomState both draw the same numbers")
def initializers(nn, I, r):
    ints = np.asarray(I.UniformIntInitializer((0, 7), rng=np.random.RandomState(5))((6,)))
    return {"constant": I.ConstantInitializer(0.25)((2, 3)),
            "uniform": I.UniformInitializer((-0.5, 1.5), rng=np.random.RandomState(3))((3, 4)),
            "normal": I.NormalInitializer(0.3, rng=np.random.RandomState(4))((3, 4)),
            "uniform_int": ints.astype(np.int64), "uniform_int dtype": str(ints.dtype)}


@nnabla_case(names=[Z + "calc_uniform_lim_glorot", Z + "calc_normal_std_glorot",
                    Z + "calc_normal_std_he_forward", Z + "calc_normal_std_he_backward"])
def initializer_limits(nn, I, r):
    res = {}
    for args in ((3, 5), (4, 6, (3, 3)), (8, 2, (2, 5))):
        key = "x".join(str(a) for a in args[:2])
        res["uniform_glorot " + key] = I.calc_uniform_lim_glorot(*args)
        res["normal_glorot " + key] = I.calc_normal_std_glorot(*args)
        res["he_forward " + key] = I.calc_normal_std_he_forward(*args)
        res["he_backward " + key] = I.calc_normal_std_he_backward(*args)
    return res


@nnabla_case(names=[Z + "GlorotUniformInitializer", Z + "GlorotNormalInitializer",
                    Z + "HeUniformInitializer", Z + "HeNormalInitializer",
                    Z + "Initializer"],
             note="Stadyn's named initialisers; NNabla writes them as Uniform/NormalInitializer "
                  "with the calc_* limit, and its base class is BaseInitializer")
def named_initializers(nn, I, r):
    shape, fan = (4, 6), (4, 6)
    if r.real:
        r.touch(*[Z + n for n in ("GlorotUniformInitializer", "GlorotNormalInitializer",
                                  "HeUniformInitializer", "HeNormalInitializer",
                                  "Initializer")])
        he = I.calc_normal_std_he_forward(*fan)
        inits = [I.UniformInitializer(I.calc_uniform_lim_glorot(*fan),
                                      rng=np.random.RandomState(1)),
                 I.NormalInitializer(I.calc_normal_std_glorot(*fan), rng=np.random.RandomState(1)),
                 I.UniformInitializer((-he * np.sqrt(3), he * np.sqrt(3)),
                                      rng=np.random.RandomState(1)),
                 I.NormalInitializer(he, rng=np.random.RandomState(1))]
        base = I.BaseInitializer
    else:
        inits = [I.GlorotUniformInitializer(*fan, rng=np.random.RandomState(1)),
                 I.GlorotNormalInitializer(*fan, rng=np.random.RandomState(1)),
                 I.HeUniformInitializer(*fan, rng=np.random.RandomState(1)),
                 I.HeNormalInitializer(*fan, rng=np.random.RandomState(1))]
        base = I.Initializer
    return {"values": [np.asarray(i(shape), np.float32).tolist() for i in inits],
            "bases": [isinstance(i, base) for i in inits]}


# -- data iterators -------------------------------------------------------------------------
D = "nnabla.utils.data_iterator."


def _load(i):
    return np.array([i, 10 * i], np.float32), np.array([i % 3], np.int32)


@nnabla_case(names=[D + "data_iterator_simple", D + "DataIterator"],
             note="NNabla's position is the source's after the batch its thread prefetched: "
                  "one batch ahead of the batch next() returned (Stadyn's too)")
def data_iterator_simple(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    it = DI.data_iterator_simple(_load, 10, 4, shuffle=False, with_memory_cache=False,
                                 with_file_cache=False)
    res = {"size": it.size, "batch_size": it.batch_size, "variables": list(it.variables),
           "is_iterator": isinstance(it, DI.DataIterator)}
    epochs = []
    for k in range(5):
        a, b = it.next()
        res["x%d" % k], res["y%d" % k] = a, b
        epochs.append([it.epoch, it.position])
    res["epochs"] = epochs
    return res


@nnabla_case(names=[D + "data_iterator_simple"],
             note="shuffled: each epoch is a permutation (the orders differ between the two "
                  "frameworks' generators)")
def data_iterator_shuffle(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    it = DI.data_iterator_simple(_load, 8, 4, shuffle=True, rng=np.random.RandomState(0),
                                 with_memory_cache=False, with_file_cache=False)
    epochs = []
    for _ in range(2):
        seen = []
        for _ in range(2):
            a, _ = it.next()
            seen.extend(a[:, 0].astype(int).tolist())
        epochs.append(sorted(seen))
    return {"epochs": epochs}


@nnabla_case(names=[D + "data_iterator_simple"],
             note="stop_exhausted=True, 10 samples in batches of 4: 2 batches, then "
                  "StopIteration (issue 18)")
def data_iterator_stop_exhausted(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    it = DI.data_iterator_simple(_load, 10, 4, shuffle=False, with_memory_cache=False,
                                 with_file_cache=False, stop_exhausted=True)
    batches = []
    try:
        for _ in range(5):
            batches.append(it.next()[0][:, 0].tolist())
    except StopIteration:
        batches.append("StopIteration")
    return {"batches": batches}


@nnabla_case(names=[D + "data_iterator", D + "SimpleDataSource"])
def data_iterator_source(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    source = DI.SimpleDataSource(_load, 6)
    it = DI.data_iterator(source, 4, with_memory_cache=False)
    res = {"size": it.size, "source_size": source.size}
    for k in range(3):
        a, b = it.next()
        res["x%d" % k], res["y%d" % k] = a, b
    return res


@nnabla_case(names=[D + "SimpleDataSource"])
def simple_data_source_shuffle(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    source = DI.SimpleDataSource(_load, 6, shuffle=False, rng=np.random.RandomState(0))
    it = DI.data_iterator(source, 3, with_memory_cache=False)
    return {"x": it.next()[0]}


@nnabla_case(names=[D + "DataSource"],
             substitutes={D + "DataSource": "nnabla.utils.data_source.DataSource"},
             note="NNabla keeps DataSource in nnabla.utils.data_source")
def data_source_class(nn, r):
    DI = r.module("nnabla.utils.data_iterator")
    source = DI.SimpleDataSource(_load, 5)
    return {"simple_is_source": isinstance(source, DI.DataSource)}


# -- by hand: communicators alone, the tutorials' tiny_digits -------------------------------
M = "nnabla.communicators."
_MEMBERS = ["init", "abort", "name", "rank", "size", "local_rank", "add_context_and_parameters",
            "clear_context_parameters", "new_group", "list_groups", "find_group", "all_reduce",
            "reduce", "bcast", "all_gather", "barrier"]


def _communicator_expected(np):
    return {"rank_size_local": [0, 1, 0], "name": "MultiProcessDataParallelCommunicator",
            "same_class": [True, True],
            "all_reduce": [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]], "reduce": [1.0, 2.0, 3.0],
            "bcast": [1.0, 2.0, 3.0], "all_gather": [[1.0, 2.0, 3.0]],
            "groups": {"world": [0]}, "world": [0], "registered": [4.0, 5.0],
            "has_members": True}


@nnabla_case(names=[M + "MultiProcessDataParallelCommunicator",
                    M + "MultiProcessDataParalellCommunicator", M + "MultiProcessCommunicator"]
             + [M + "MultiProcessDataParallelCommunicator." + m for m in _MEMBERS],
             expected=_communicator_expected,
             note="by hand: one process alone is rank 0 of 1, and every collective leaves the "
                  "data as it is (NNabla's CPU build cannot make a communicator)")
def communicators(nn, r):
    Cm = r.module("nnabla.communicators")
    cls = Cm.MultiProcessDataParallelCommunicator
    r.touch(*[M + "MultiProcessDataParallelCommunicator." + m for m in _MEMBERS])
    comm = Cm.MultiProcessDataParalellCommunicator(None)
    comm.init()
    data = [np.array([1.0, 2.0, 3.0], np.float32), np.array([1.0, 2.0, 3.0], np.float32)]
    comm.all_reduce(data, division=True)
    one = np.array([1.0, 2.0, 3.0], np.float32)
    comm.reduce([one])
    comm.bcast([one])
    out = [np.zeros(3, np.float32)]
    comm.all_gather(one, out)
    comm.barrier()
    p = nn.Variable.from_numpy_array(np.array([0.0, 0.0], np.float32), need_grad=True)
    p.g = np.array([4.0, 5.0], np.float32)
    comm.add_context_and_parameters((None, {"p": p}))
    comm.all_reduce()
    registered = p.g.tolist()
    comm.clear_context_parameters()
    return {"rank_size_local": [comm.rank, comm.size, comm.local_rank], "name": comm.name,
            "same_class": [Cm.MultiProcessDataParalellCommunicator is cls,
                           Cm.MultiProcessCommunicator is cls],
            "all_reduce": [d.tolist() for d in data], "reduce": one.tolist(),
            "bcast": one.tolist(), "all_gather": [o.tolist() for o in out],
            "groups": comm.list_groups(), "world": comm.find_group("world"),
            "registered": registered,
            "has_members": all(callable(getattr(comm, m)) for m in (
                "new_group", "abort", "init"))}


def _tiny_digits_expected(np):
    from sklearn.datasets import load_digits
    digits = load_digits()
    return {"shapes": [[16, 1, 8, 8], [16, 1]], "dtypes": ["float64", "int32"],
            "first_image": digits.images[0][None].tolist(), "first_label": int(digits.target[0]),
            "n": int(digits.target.shape[0]), "png": True}


@nnabla_case(names=["nnabla.tutorial.tiny_digits.load_digits",
                    "nnabla.tutorial.tiny_digits.data_iterator_tiny_digits",
                    "nnabla.tutorial.tiny_digits.plot_stats"],
             expected=_tiny_digits_expected,
             note="NNabla's tutorials (not its package) define tiny_digits: batches of 8x8 "
                  "scikit-learn digits (float images, int32 labels), and plot_stats draws them")
def tiny_digits(nn, r):
    T = r.module("nnabla.tutorial.tiny_digits")
    digits = T.load_digits()
    it = T.data_iterator_tiny_digits(digits, batch_size=16, shuffle=False)
    images, labels = it.next()
    with r.tempdir() as folder:
        path = os.path.join(folder, "digits.png")
        T.plot_stats(digits, path)
        with open(path, "rb") as f:
            png = f.read(8) == b"\x89PNG\r\n\x1a\n"
    return {"shapes": [list(images.shape), list(labels.shape)],
            "dtypes": [str(images.dtype), str(labels.dtype)], "first_image": images[0].tolist(),
            "first_label": int(labels[0, 0]), "n": int(digits.target.shape[0]), "png": png}


# -- NNabla's own model files -------------------------------------------------------------------
LEGACY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures",
                      "legacy")
G = "nnabla.utils.nnp_graph."


@nnabla_case(names=[G + "NnpLoader", G + "NnpLoader.get_network",
                    G + "NnpLoader.get_network_names", G + "NnpNetwork"],
             note="the LeNet NNabla 1.39 saved with parameter.protobuf (tests/fixtures/legacy)")
def nnp_loader(nn, r):
    NG = r.module("nnabla.utils.nnp_graph")
    nnp = NG.NnpLoader(os.path.join(LEGACY, "nnabla_lenet_protobuf.nnp"))
    names = nnp.get_network_names()
    net = nnp.get_network("lenet", batch_size=2)
    r.touch(G + "NnpLoader.get_network", G + "NnpLoader.get_network_names")
    x, y = net.inputs["x"], net.outputs["y"]
    x.d = r.rand(2, 1, 28, 28)
    y.forward()
    return {"names": names, "inputs": list(net.inputs), "outputs": list(net.outputs),
            "y": y.d.copy(), "is_network": isinstance(net, NG.NnpNetwork),
            "shape": list(y.shape)}


@nnabla_case(names=["nnabla.utils.load.load"],
             note="the deep CNN NNabla 1.39 saved with its training sections "
                  "(tests/fixtures/legacy)")
def nnp_load(nn, r):
    L = r.module("nnabla.utils.load")
    info = L.load([os.path.join(LEGACY, "nnabla_deep_cnn.nnp")], prepare_data_iterator=False,
                  batch_size=2)
    executor = info.executors["runtime"]
    (x, data), = executor.dataset_assign.items()
    (y, out), = executor.output_assign.items()
    x.variable_instance.d = r.rand(2, 1, 8, 8) * 16
    y.variable_instance.forward()
    return {"networks": list(info.networks), "executors": list(info.executors),
            "names": [x.name, data, y.name, out], "y": y.variable_instance.d.copy(),
            "optimizers": sorted(info.optimizers), "datasets": sorted(info.datasets),
            "monitors": sorted(info.monitors)}


@nnabla_case(names=["nnabla.Variable.data", "nnabla.Variable.grad",
                    "nnabla.parametric_functions.get_parameter_or_create"])
def variable_data_and_grad_arrays(nn, F, r):
    """NNabla's first tutorial's idioms: .data / .grad are NdArrays over the Variable's memory
    (zero(), fill(), .data, in-place operators), for inputs, op outputs and parameters."""
    r.touch("nnabla.Variable.data", "nnabla.Variable.grad")
    x = nn.Variable([2, 3], need_grad=True)
    kinds = [type(x.data).__name__, type(x.grad).__name__]
    x.d = r.randn(2, 3)
    same_data = bool(np.all(x.d == x.data.data))
    x.g = 1.5
    same_grad = bool(np.all(x.g == x.grad.data))
    x.grad.zero()
    zeroed = x.g.copy()
    x.grad.fill(0.25)
    filled = x.g.copy()
    PF = r.module("nnabla.parametric_functions")
    with nn.parameter_scope("lin"):
        w = PF.get_parameter_or_create("W", (3, 2), need_grad=True)
    w.d = r.randn(3, 2)
    y = F.sum(F.tanh(F.affine(x, w)))
    kinds.append(type(y.data).__name__)
    for p in nn.get_parameters().values():
        p.grad.zero()
    x.grad.zero()
    y.forward()
    y.backward()
    w_grad = w.g.copy()
    for p in nn.get_parameters().values():
        p.data -= p.grad * 0.1
    x.data += 1.0
    x.data *= 2.0
    return {"kinds": kinds, "same_data": same_data, "same_grad": same_grad, "zeroed": zeroed,
            "filled": filled, "y": y.data.data.copy(), "w_grad": w_grad, "w": w.d.copy(),
            "x": x.d.copy(), "grad_shape": list(w.grad.shape)}
