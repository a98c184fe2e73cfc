"""NNabla 1.39's names programs reach that are its own plumbing: the array-class preference
and available contexts (``nnabla._init``), the communicator class and short names, the
communicator utilities and progress reports, the loader's re-exported names, the image
backend manager, and the decorators NNabla publishes functions and solvers through."""

import os

import numpy as np

from compat_harness import nnabla_case

U = "nnabla.utils."


@nnabla_case(names=["nnabla.array_classes", "nnabla.prefer_cached_array",
                    "nnabla.reset_array_preference", "nnabla.add_available_context",
                    "nnabla.available_contexts"],
             note="the CPU array classes as NNabla's import leaves them (cached preferred), "
                  "after preferring the uncached ones, after a reset (registration order) and "
                  "preferring the cached one again; the preference is restored at the end")
def array_preference(nn, r):
    res = {"default": list(nn.array_classes())}
    nn.prefer_cached_array(False)
    res["not cached"] = list(nn.array_classes())
    nn.prefer_cached_array(False)                       # already set: nothing changes
    res["again"] = list(nn.array_classes())
    nn.reset_array_preference()
    res["reset"] = list(nn.array_classes())
    nn.prefer_cached_array(True)
    res["cached"] = list(nn.array_classes())
    contexts = nn.available_contexts
    res["cpu first"] = contexts[0]
    nn.add_available_context("stadyn-probe")
    nn.add_available_context("stadyn-probe")
    nn.add_available_context("cpu")
    res["added once, last"] = [contexts.count("stadyn-probe"), contexts[-1],
                               contexts.count("cpu")]
    res["same list"] = nn.available_contexts is contexts
    return res


CM = "nnabla.communicators."


@nnabla_case(names=[CM + "Comm", CM + "Dist", CM + "Communicator", CM + "Context",
                    CM + "DataParallelCommunicator"],
             note="a CPU run: NNabla 1.39 registers its single-process DataParallelCommunicator "
                  "only in its CUDA extension, so making one is a RuntimeError naming the "
                  "context's backend (Stadyn has none at all)")
def communicator_names(nn, r):
    C = r.module("nnabla.communicators")
    ext = r.module("nnabla.ext_utils")
    res = {"aliases": [C.Comm is C.MultiProcessDataParallelCommunicator,
                       C.Dist is C.MultiProcessDataParallelCommunicator],
           "context": C.Context is nn.Context, "interface is a class": isinstance(C.Communicator,
                                                                                type)}
    try:
        C.DataParallelCommunicator(ext.get_extension_context("cpu"))
        res["data parallel"] = "made"
    except RuntimeError as exc:
        res["data parallel"] = ["RuntimeError", "[cpu:float]" in str(exc)]
    return res


CU = U + "communicator_util."


@nnabla_case(names=[CU + "current_communicator", CU + "create_communicator",
                    CU + "single_or_rankzero", U + "load.current_communicator",
                    U + "load.single_or_rankzero", U + "data_source.single_or_rankzero"],
             note="run alone (no launcher): no communicator is made, and this process is the "
                  "one that reports")
def communicator_util(nn, r):
    CUm = r.module("nnabla.utils.communicator_util")
    L = r.module("nnabla.utils.load")
    DS = r.module("nnabla.utils.data_source")
    made = CUm.create_communicator(ignore_error=True)
    return {"made": made is None, "current": CUm.current_communicator() is None,
            "rank zero": [CUm.single_or_rankzero(), L.single_or_rankzero(),
                          DS.single_or_rankzero()],
            "load's": [L.current_communicator() is None,
                       L.single_or_rankzero is CUm.single_or_rankzero,
                       DS.single_or_rankzero is CUm.single_or_rankzero]}


P = U + "progress."


@nnabla_case(names=[P + "configure_progress", P + "progress", U + "data_source.progress"],
             note="the state file is emptied when configured and by progress(None), and not "
                  "rewritten within a second of the last write; the callback sees every report")
def progress(nn, r):
    Pm = r.module("nnabla.utils.progress")
    DS = r.module("nnabla.utils.data_source")
    seen = []
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "state.txt")
        with open(path, "w") as f:
            f.write("old")
        Pm.configure_progress(path, lambda state, p: seen.append([state, p]))
        with open(path) as f:
            res["configured"] = f.read()
        DS.progress("Training", 0.25)
        with open(path) as f:
            res["within a second"] = f.read()
        Pm.progress(None)
        with open(path) as f:
            res["cleared"] = f.read()
        Pm.configure_progress("")
    Pm.progress("no file", 1.0)
    res["seen"] = seen
    res["same"] = DS.progress is Pm.progress
    return res


L_ = U + "load."
_INITS = ["ConstantInitializer", "NormalInitializer", "RangeInitializer", "UniformInitializer"]
_SCHEDS = ["CosineScheduler", "ExponentialScheduler", "LinearWarmupScheduler",
           "PolynomialScheduler", "StepScheduler"]


@nnabla_case(names=[L_ + n for n in _INITS + _SCHEDS + ["data_iterator_csv_dataset",
                                                        "data_iterator_cache"]],
             note="nnabla.utils.load's names are the initializer, scheduler and data iterator "
                  "modules' own; one value of each")
def load_reexports(nn, r):
    L = r.module("nnabla.utils.load")
    I = r.module("nnabla.initializer")
    LR = r.module("nnabla.utils.learning_rate_scheduler")
    DI = r.module("nnabla.utils.data_iterator")
    res = {"same": [getattr(L, n) is getattr(I, n) for n in _INITS]
           + [getattr(L, n) is getattr(LR, n) for n in _SCHEDS]
           + [L.data_iterator_csv_dataset is DI.data_iterator_csv_dataset,
              L.data_iterator_cache is DI.data_iterator_cache]}
    res["constant"] = L.ConstantInitializer(2.5)((2, 3))
    res["range"] = L.RangeInitializer(1.0, 0.5)((2, 3))
    res["step"] = [float(L.StepScheduler(1.0, 0.5, [2, 4]).get_learning_rate(i))
                   for i in range(6)]
    res["cosine"] = [float(L.CosineScheduler(0.3, 10).get_learning_rate(i)) for i in (0, 5, 10)]
    return res


IU = U + "image_utils."


@nnabla_case(names=[IU + "backend_manager"],
             note="Pillow's backend set through the manager; an image written and read back "
                  "through it, and resized")
def backend_manager(nn, r):
    IUm = r.module("nnabla.utils.image_utils")
    bm = IUm.backend_manager
    bm.set_backend("PilBackend")
    res = {"chosen": [bm.get_backend(), IUm.get_backend()],
           "pil available": "PilBackend" in bm.get_available_backends()}
    img = (r.rand(4, 6, 3) * 255).astype(np.uint8)
    with r.tempdir() as folder:
        path = os.path.join(folder, "a.png")
        bm.imsave(path, img)
        res["read"] = bm.imread(path)
        res["grey"] = bm.imread(path, grayscale=True)
    res["resized"] = bm.imresize(img, (3, 2), interpolate="nearest").shape
    bm.set_backend("NoSuchBackend")
    res["unknown: last used"] = bm.get_backend()
    return res


@nnabla_case(names=["nnabla.functions.function_api", "nnabla.functions.FUNCTION_API_HEADER",
                    "nnabla.functions.FUNCTION_API_BODY", "nnabla.solvers.solver_api"],
             note="the decorated function's signature (ctx dropped), calls with positional, "
                  "variadic and keyword arguments, the source function_api describes it by, "
                  "the docstrings, and a function without ctx (KeyError)")
def context_api(nn, F, S, r):
    import inspect

    def f(ctx, x, y=2, *args, **kw):
        """doc of f
        second line"""
        return [type(ctx).__name__, x, y, list(args), sorted(kw.items())]

    def noctx(a):
        return a
    g = F.function_api(f)
    h = S.solver_api(f)
    res = {"signature": [str(inspect.signature(g)), str(inspect.signature(h))],
           "calls": [g(1), g(1, 5, 6, k=8), h(3, y=4)], "name": g.__name__,
           "source": g.__source__, "docs": [g.__doc__, h.__doc__],
           "bases": [g.__function_api_base__ is f, h.__solver_api_base__ is f],
           "templates": [F.FUNCTION_API_HEADER, F.FUNCTION_API_BODY]}
    errors = []
    for api in (F.function_api, S.solver_api):
        try:
            api(noctx)
            errors.append("accepted")
        except KeyError as exc:
            errors.append(str(exc))
    res["no ctx"] = errors
    return res


@nnabla_case(names=["nnabla.functions.BatchNormalizationInOutAdapter",
                    "nnabla.functions.BatchNormalizationInOutAdapter.inv"],
             note="axes (1, 3) of a 4-D input: the layout attributes, the reshaped values, the "
                  "inverse's values and gradient; one axis is refused")
def bn_in_out_adapter(nn, F, r):
    adapter = F.BatchNormalizationInOutAdapter(4, [1, 3])
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 4, 5), need_grad=True)
    y = adapter(x)
    z = adapter.inv(y * 2.0)
    r.touch("nnabla.functions.BatchNormalizationInOutAdapter.inv")
    z.forward()
    x.g = 0
    w = r.weights_like(z.d)
    z.backward(w)
    res = {"attrs": [adapter.ndim, list(adapter.axes), list(adapter.outer_axes),
                     list(adapter.transpose_axes), list(adapter.transposed_shape),
                     list(adapter.inv_transpose_axes)],
           "y": y.d.copy(), "z": z.d.copy(), "grad x": x.g.copy()}
    try:
        F.BatchNormalizationInOutAdapter(4, [1])
        res["one axis"] = "accepted"
    except AssertionError:
        res["one axis"] = "AssertionError"
    return res


# -- nnp_graph.NnpNetworkPass: a network rewritten while it is built ---------------------------
G = U + "nnp_graph."
_PASS = [G + "NnpNetworkPass." + m for m in [
    "on_function_pass_by_name", "on_function_pass_by_type", "on_generate_variable",
    "on_generate_function_by_name", "on_generate_function_by_type", "drop_function",
    "fix_parameters", "use_up_to", "remove_and_rewire", "set_variable",
    "force_average_pooling_global", "check_average_pooling_global",
    "set_batch_normalization_batch_stat_all"]]


def _dims(shape):
    return " ".join("dim: %d" % d for d in shape)


def _pass_nntxt():
    """x -> Conv (pad 1) -> BN (batch_stat) -> Relu -> Pool (2x2) -> Fc -> y, with the
    parameters inline; the same file on both sides."""
    rng = np.random.RandomState(7)
    params = [("conv/W", (3, 2, 3, 3)), ("conv/b", (3,)), ("bn/beta", (1, 3, 1, 1)),
              ("bn/gamma", (1, 3, 1, 1)), ("bn/mean", (1, 3, 1, 1)), ("bn/var", (1, 3, 1, 1)),
              ("fc/W", (12, 2)), ("fc/b", (2,))]
    lines = ['network { name: "net" batch_size: 2']

    def var(name, shape, kind="Buffer"):
        lines.append(' variable { name: "%s" type: "%s" shape { %s } }'
                     % (name, kind, _dims(shape)))
    var("x", (-1, 2, 4, 4))
    for n, s in params:
        var(n, s, "Parameter")
    for n, s in [("h1", (-1, 3, 4, 4)), ("h2", (-1, 3, 4, 4)), ("h3", (-1, 3, 4, 4)),
                 ("h4", (-1, 3, 2, 2)), ("y", (-1, 2))]:
        var(n, s)
    lines += [
        ' function { name: "Conv" type: "Convolution" input: "x" input: "conv/W" '
        'input: "conv/b" output: "h1" convolution_param { base_axis: 1 pad { dim: 1 dim: 1 } '
        'stride { dim: 1 dim: 1 } dilation { dim: 1 dim: 1 } group: 1 } }',
        ' function { name: "BN" type: "BatchNormalization" input: "h1" input: "bn/beta" '
        'input: "bn/gamma" input: "bn/mean" input: "bn/var" output: "h2" '
        'batch_normalization_param { axes: 1 decay_rate: 0.9 eps: 1e-05 batch_stat: true } }',
        ' function { name: "Relu" type: "ReLU" input: "h2" output: "h3" }',
        ' function { name: "Pool" type: "AveragePooling" input: "h3" output: "h4" '
        'average_pooling_param { kernel { dim: 2 dim: 2 } stride { dim: 2 dim: 2 } '
        'ignore_border: true pad { dim: 0 dim: 0 } including_pad: true } }',
        ' function { name: "Fc" type: "Affine" input: "h4" input: "fc/W" input: "fc/b" '
        'output: "y" affine_param { base_axis: 1 } }', '}']
    for n, s in params:
        v = rng.uniform(-0.5, 0.5, s)
        if n == "bn/var":
            v = np.abs(v) + 0.5
        lines.append('parameter { variable_name: "%s" shape { %s } %s need_grad: %s }' % (
            n, _dims(s), " ".join("data: %r" % float(np.float32(a)) for a in v.ravel()),
            "false" if n in ("bn/mean", "bn/var") else "true"))
    return "\n".join(lines) + "\n"


def _ports(net):
    return [[[k, list(v.shape)] for k, v in net.inputs.items()],
            [[k, list(v.shape)] for k, v in net.outputs.items()]]


@nnabla_case(names=[G + "NnpNetworkPass", G + "NnpLoader", G + "NnpLoader.get_network"]
             + _PASS,
             note="one small .nntxt rewritten by each rule (a fresh loader each time: NNabla's "
                  "keeps the running statistics an earlier forward updated); the ports, the "
                  "outputs' values, parameters' need_grad, the verbose lines and what custom "
                  "callbacks see")
def nnp_network_pass(nn, F, r):
    import contextlib
    import io
    NG = r.module("nnabla.utils.nnp_graph")
    r.touch(*(_PASS + [G + "NnpLoader.get_network"]))
    x = r.randn(2, 2, 4, 4)
    res = {}
    out = io.StringIO()
    with r.tempdir() as folder:
        path = os.path.join(folder, "net.nntxt")
        with open(path, "w") as f:
            f.write(_pass_nntxt())

        def build(callback, batch_size=2):
            nn.clear_parameters()
            with contextlib.redirect_stdout(out):
                return NG.NnpLoader(path).get_network("net", batch_size=batch_size,
                                                      callback=callback)

        def run(net, key):
            res[key + " ports"] = _ports(net)
            for k, v in net.inputs.items():
                if k == "x":
                    v.d = x
            for k, v in net.outputs.items():
                v.forward()
                res[key + " " + k] = v.d.copy()

        p = NG.NnpNetworkPass(1)
        p.set_batch_normalization_batch_stat_all(False)
        p.force_average_pooling_global("Pool")
        p.use_up_to("h4")
        p.fix_parameters()
        run(build(p), "frozen")
        res["frozen need_grad"] = sorted([k, v.need_grad] for k, v in
                                         nn.get_parameters(grad_only=False).items())

        p = NG.NnpNetworkPass(1)
        p.drop_function("Relu")
        res["dropped ports"] = _ports(build(p))

        p = NG.NnpNetworkPass(1)
        p.remove_and_rewire("Relu")
        run(build(p), "rewired")

        z = nn.Variable.from_numpy_array(x, need_grad=True)
        fed = F.tanh(z)
        p = NG.NnpNetworkPass(1)
        p.set_variable("x", fed)
        net = build(p)
        res["fed is the input"] = [net.inputs["x"] is fed, fed.name]
        y = net.outputs["y"]
        y.forward()
        z.g = 0
        y.backward(r.weights_like(y.d))
        res["fed y"] = y.d.copy()
        res["fed grad z"] = z.g.copy()

        p = NG.NnpNetworkPass(0)
        p.check_average_pooling_global("Pool")
        try:
            build(p)
            res["check"] = "accepted"
        except ValueError as exc:
            res["check"] = str(exc)

        p = NG.NnpNetworkPass(2)
        seen = []

        @p.on_generate_function_by_name("Conv")
        def no_pad(f):
            seen.append(["conv", f.name, f.proto.type,
                         list(f.proto.convolution_param.pad.dim[:])])
            f.proto.convolution_param.pad.dim[:] = [0, 0]
            return f

        @p.on_generate_function_by_type("AveragePooling")
        def one_by_one(f):
            f.proto.average_pooling_param.kernel.dim[:] = [1, 1]
            f.proto.average_pooling_param.stride.dim[:] = [1, 1]
            return f

        @p.on_generate_variable("x")
        def see_x(v):
            seen.append(["x", v.name, list(v.proto.shape.dim[:])])
            return v

        @p.on_function_pass_by_name("BN")
        def see_bn(f, variables, scope):
            seen.append(["bn", [v.name for v in f.inputs], f.inputs[0].parent.name,
                         f.outputs[0].num_referrers, sorted(f.outputs[0].referrers)])

        @p.on_function_pass_by_type("Relu")      # NNabla files it by name
        def see_relu(f, variables, scope):
            seen.append(["relu", f.name])
        p.use_up_to("h4")
        net = build(p, batch_size=3)
        res["custom ports"] = _ports(net)
        res["custom seen"] = seen
    res["printed"] = [line for line in out.getvalue().splitlines()
                      if not line.startswith("Replace x by")]
    return res


_TINY = ('network { name: "n" batch_size: 2 '
         'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 3 } } '
         'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 3 } } '
         'function { name: "t" type: "Tanh" input: "x" output: "y" } } '
         'executor { name: "run" network_name: "n" num_evaluations: 3 '
         'data_variable { variable_name: "x" data_name: "image" } '
         'output_variable { variable_name: "y" data_name: "out" type: "Error" } }\n')


@nnabla_case(names=[L_ + "base_load", L_ + "link_components"],
             note="base_load leaves the executors without their network and variables; "
                  "link_components ties them; the linked network computes")
def base_load_and_link(nn, r):
    L = r.module("nnabla.utils.load")
    xv = r.randn(2, 3)
    with r.tempdir() as folder:
        path = os.path.join(folder, "tiny.nntxt")
        with open(path, "w") as f:
            f.write(_TINY)
        nn.clear_parameters()
        info = L.base_load([path], prepare_data_iterator=False)
        ex = info.executors["run"]
        res = {"executors": list(info.executors), "networks": list(info.networks),
               "before": [ex.network is None, hasattr(ex, "dataset_assign"),
                          ex.num_evaluations, ex.need_back_propagation]}
        L.link_components(info)
        res["after"] = [ex.network is not None,
                        [[v.name, d] for v, d in ex.dataset_assign.items()],
                        [[v.name, list(o)] for v, o in ex.output_assign.items()]]
        (x,), (y,) = list(ex.dataset_assign), list(ex.output_assign)
        x.variable_instance.d = xv
        y.variable_instance.forward()
        res["y"] = y.variable_instance.d.copy()
    return res


CC = U + "create_cache.CreateCache"


@nnabla_case(names=[CC, CC + ".create", L_ + "CreateCache"],
             note="250 rows of a data set CSV (a comment column dropped) written as a cache "
                  "folder, unshuffled and shuffled (rng seeded 5): the files, the index, info "
                  "and order files, the cached arrays, and the first batch data_iterator_cache "
                  "reads back")
def create_cache(nn, r):
    CCm = r.module("nnabla.utils.create_cache")
    L = r.module("nnabla.utils.load")
    DI = r.module("nnabla.utils.data_iterator")
    r.touch(CC + ".create")
    rows = ["x__0,x__1,#note,y"] + ["%d,%.2f,n%d,%d" % (i, i * 0.5, i, i % 3)
                                    for i in range(250)]
    res = {"same": L.CreateCache is CCm.CreateCache}
    with r.tempdir() as folder:
        path = os.path.join(folder, "train.csv")
        with open(path, "w") as f:
            f.write("\n".join(rows) + "\n")
        for key, make in [("plain", lambda: CCm.CreateCache(path)),
                          ("shuffled", lambda: CCm.CreateCache(path, rng=np.random.RandomState(5),
                                                               shuffle=True))]:
            out = os.path.join(folder, key)
            os.makedirs(out)
            make().create(out, normalize=True)
            res[key + " files"] = sorted(os.listdir(out))
            for name in ("cache_index.csv", "cache_info.csv", "order.csv"):
                with open(os.path.join(out, name)) as f:
                    res[key + " " + name] = f.read()
            with open(os.path.join(out, "original.csv")) as f:
                res[key + " original"] = f.read() == "\n".join(rows) + "\n"
            with open(os.path.join(out, "cache_00000200_00000249.npy"), "rb") as f:
                res[key + " last x"] = np.load(f)
                res[key + " last y"] = np.load(f)
            it = DI.data_iterator_cache(out, 4, shuffle=False)
            res[key + " batch"] = list(it.next())
            it.close()
    return res
