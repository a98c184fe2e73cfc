"""An NNabla 1.39 user's own programs, second batch (nnuser28b): each combines several
features the way a user's script does (NNabla's tutorials, nnabla-examples' utilities) and
runs unchanged on NNabla and on ``stadyn.compat.nnabla``.

The areas the first batch (``nnabla_user_28``) left: image datasets read through a CSV,
less common parametric functions and index ops inside one model, solvers' gradient tools and
states, graph converters on a trained net, ``.nnp``/``.nntxt`` files trained or run back.
"""

import os

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import nnabla_refusal, outcome

D = "nnabla.utils.data_iterator."
SV = "nnabla.solvers."
PFN = "nnabla.parametric_functions."
FN = "nnabla.functions."
GC = "nnabla.experimental.graph_converters."


def _write_images(folder, IU, r, n=6):
    """``n`` small RGB images of different sizes, saved as PNG, and a CSV naming them."""
    lines = ["x:image,y:label"]
    for i in range(n):
        img = (r.rand(3, 6 + i % 2, 5) * 255).astype(np.uint8)
        name = "img%d.png" % i
        IU.imsave(os.path.join(folder, name), img, channel_first=True)
        lines.append("%s,%d" % (name, i % 3))
    path = os.path.join(folder, "train.csv")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


@nnabla_case(names=[D + "data_iterator_csv_dataset", "nnabla.utils.image_utils.imsave",
                    "nnabla.utils.image_utils.imread", "nnabla.utils.image_utils.imresize",
                    PFN + "convolution", FN + "average_pooling", SV + "Adam"],
             tols={"imread size": (0, 1)},
             note="imread size: Pillow's bilinear downsampling rounds a pixel 1 apart between "
                  "Pillow 12.3 (NNabla's env) and 13.0 (Stadyn's); imresize to (5, 6) agrees")
def user28b_image_folder_csv_training(nn, F, PF, S, r):
    """Images saved with ``image_utils.imsave``, listed in a ``x:image,y:label`` CSV; the
    images read back (``imread`` with ``size``, ``imresize``) to one size as a user's
    preprocessing does, then ``data_iterator_csv_dataset`` (normalised) feeding a small CNN
    trained with Adam: the batches, the resized images and the losses."""
    IU = r.module("nnabla.utils.image_utils")
    DI = r.module("nnabla.utils.data_iterator")
    res = {}
    with r.tempdir() as folder:
        path = _write_images(folder, IU, r)
        img = IU.imread(os.path.join(folder, "img1.png"), channel_first=True)
        res["imread shape"] = list(img.shape)
        res["imread"] = img.astype(np.float32)
        small = IU.imread(os.path.join(folder, "img1.png"), size=(4, 4), channel_first=True)
        res["imread size"] = small.astype(np.float32)
        res["imresize"] = IU.imresize(img, (5, 6), channel_first=True).astype(np.float32)
        # the user's preprocessing: every image to 6x5 before training
        for i in range(6):
            p = os.path.join(folder, "img%d.png" % i)
            IU.imsave(p, IU.imresize(IU.imread(p, channel_first=True), (5, 6),
                                     channel_first=True), channel_first=True)
        it = DI.data_iterator_csv_dataset(path, 3, shuffle=False, normalize=True,
                                          with_memory_cache=False, with_file_cache=False)
        res["variables"] = list(it.variables)
        x = nn.Variable((3, 3, 6, 5))
        t = nn.Variable((3, 1))
        h = F.relu(PF.convolution(x, 4, (3, 3), pad=(1, 1), name="conv"))
        y = PF.affine(F.average_pooling(h, (2, 2)), 3, name="fc")
        loss = F.mean(F.softmax_cross_entropy(y, t))
        r.set_params(nn.get_parameters())
        solver = S.Adam(0.01)
        solver.set_parameters(nn.get_parameters())
        losses = []
        for k in range(4):
            xb, tb = it.next()
            if k < 2:
                res["batch %d x" % k] = xb
                res["batch %d y" % k] = tb
            x.d, t.d = xb, tb
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
            losses.append(float(loss.d))
        res["epoch"] = it.epoch
        it.close()
    res["losses"] = np.array(losses)
    return res


@nnabla_case(names=["nnabla.utils.image_utils.imsave", "nnabla.utils.image_utils.imread"])
def user28b_sixteen_bit_images(nn, r):
    """A 16-bit depth map saved and read back (``as_uint16``), a float image saved through
    ``auto_scale``, and a grayscale read of an RGB file, as a user's data conversion script
    does."""
    IU = r.module("nnabla.utils.image_utils")
    res = {}
    with r.tempdir() as folder:
        depth = (r.rand(5, 4) * 60000).astype(np.uint16)
        p = os.path.join(folder, "depth.png")
        IU.imsave(p, depth, as_uint16=True)
        back = IU.imread(p, as_uint16=True)
        res["uint16 dtype"] = str(back.dtype)
        res["uint16"] = back.astype(np.int64)
        res["uint8 of it"] = IU.imread(p).astype(np.int64)
        rgb = r.rand(4, 3, 3)
        q = os.path.join(folder, "rgb.png")
        IU.imsave(q, rgb, auto_scale=True)
        res["auto_scale"] = IU.imread(q).astype(np.int64)
        res["grayscale"] = IU.imread(q, grayscale=True).astype(np.int64)
        res["grayscale shape"] = list(IU.imread(q, grayscale=True, num_channels=1).shape)
    return res


@nnabla_case(names=[PFN + "convolution", PFN + "spectral_norm", PFN + "deconvolution",
                    PFN + "group_normalization", FN + "interpolate", FN + "pad"])
def user28b_gan_generator_blocks(nn, F, PF, r):
    """A GAN generator and discriminator block as nnabla-examples write them: a
    deconvolution with ``output_padding``, group normalisation, ``F.interpolate`` upsampling,
    reflect padding, a grouped dilated convolution and a spectrally normalised convolution
    (``apply_w=PF.spectral_norm``): outputs, parameter listing and gradients."""
    z = nn.Variable.from_numpy_array(r.randn(2, 4, 3, 3), need_grad=True)
    with nn.parameter_scope("gen"):
        h = PF.deconvolution(z, 6, (3, 3), stride=(2, 2), pad=(1, 1), output_padding=(1, 1),
                             name="deconv")
        h = PF.group_normalization(h, num_groups=3, name="gn")
        h = F.interpolate(h, scale=(2, 2), mode="nearest")
        h = F.pad(h, (1, 1, 1, 1), mode="reflect")
        h = PF.convolution(h, 6, (3, 3), dilation=(2, 2), group=2, name="dil")
    with nn.parameter_scope("dis"):
        sn = lambda w: PF.spectral_norm(w, dim=0, itr=2, test=False)  # noqa: E731
        d = PF.convolution(F.leaky_relu(h, 0.2), 2, (3, 3), stride=(2, 2), apply_w=sn,
                           name="conv")
    listing = r.set_params(nn.get_parameters(grad_only=False))
    d.forward()
    res = {"params": listing, "h shape": list(h.shape), "d": d.d.copy()}
    d.backward(r.weights_like(d.d))
    res["grad z"] = z.g.copy()
    for k, v in sorted(nn.get_parameters().items()):
        res["grad " + k] = v.g.copy()
    return res


@nnabla_case(names=[PFN + "embed", PFN + "layer_normalization", PFN + "instance_normalization",
                    PFN + "convolution", FN + "cumsum", FN + "top_k_data", FN + "sort"],
             tols=dict((k, (1e-4, 1e-5)) for k in [
                 "grad conv/conv/W", "grad conv/conv/b", "grad emb/embed/W",
                 "grad ln/layer_normalization/beta", "grad ln/layer_normalization/gamma",
                 "grad in/instance_normalization/beta",
                 "grad in/instance_normalization/gamma"]),
             known={"channel_last": "NNabla 1.39's CPU Convolution refuses channel_last=True "
                                    "(convolution.cpp:165) where its cuDNN one computes it; "
                                    "Stadyn computes it on every device (docs/nnabla-names.md)"})
def user28b_token_model(nn, F, PF, r):
    """A small sequence model: ``PF.embed`` of token ids, layer normalisation, a
    1-D convolution, instance normalisation, a cumulative sum over time, then the top-2
    scores (``top_k_data``) and the sorted scores.  The user first wrote the convolution
    ``channel_last=True`` over the ``(B, T, C)`` embedding: NNabla 1.39's CPU convolution
    refuses that at ``forward`` (``RuntimeError``, convolution.cpp:165 "channel_last_=true is
    not supported in CPU Convolution"), so the program transposes instead."""
    ids = nn.Variable.from_numpy_array(r.randint(0, 7, (2, 5)))
    e = PF.embed(ids, 7, 4, name="emb")
    e = PF.layer_normalization(e, batch_axis=0, name="ln")
    with nn.parameter_scope("first_try"):
        tried = PF.convolution(e, 6, (3,), pad=(1,), channel_last=True, name="conv")
    refused = outcome(lambda: tried.forward(), raised=nnabla_refusal)
    nn.clear_parameters()
    e = PF.layer_normalization(PF.embed(ids, 7, 4, name="emb"), batch_axis=0, name="ln")
    c = PF.convolution(F.transpose(e, (0, 2, 1)), 6, (3,), pad=(1,), name="conv")
    c = PF.instance_normalization(c, name="in")
    s = F.cumsum(F.mean(c, axis=1), axis=1)
    top = F.top_k_data(s, 2, reduce=False)
    top_only = F.top_k_data(s, 2)
    srt = F.sort(s, axis=1, reverse=True, with_index=True)
    out = F.sink(top, top_only, srt[0], srt[1])
    listing = r.set_params(nn.get_parameters())
    out.forward()
    res = {"channel_last": refused, "params": listing, "s": s.d.copy(), "top": top.d.copy(),
           "top only": top_only.d.copy(), "sorted": srt[0].d.copy(), "order": srt[1].d.copy()}
    loss = F.sum(top_only * nn.Variable.from_numpy_array(r.randn(2, 2))) + \
        F.sum(srt[0] * nn.Variable.from_numpy_array(r.randn(2, 5)))
    loss.forward()
    for v in nn.get_parameters().values():
        v.grad.zero()
    loss.backward()
    for k, v in sorted(nn.get_parameters().items()):
        res["grad " + k] = v.g.copy()
    return res


@nnabla_case(names=[FN + "gather_nd", FN + "scatter_nd", "nnabla.NdArray"])
def user28b_gather_scatter_and_ndarrays(nn, F, r):
    """A user's index plumbing: ``gather_nd`` of picked positions, ``scatter_nd`` back into
    a zero map and into a given ``out``, the gradients; then ``nn.NdArray`` arithmetic
    (in place, with scalars, reversed operators) and ``.cast`` between dtypes."""
    x = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
    idx = nn.Variable.from_numpy_array(np.array([[0, 2, 1, 2], [1, 3, 0, 0]], np.int32))
    g = F.gather_nd(x, idx)
    back = F.scatter_nd(g * 2.0, idx, shape=(3, 4))
    base = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
    into = F.scatter_nd(g, idx, out=base)
    y = F.sink(back, into)
    y.forward()
    res = {"g": g.d.copy(), "back": back.d.copy(), "into": into.d.copy()}
    x.grad.zero()
    base.grad.zero()
    w = r.randn(3, 4)
    total = F.sum(back * nn.Variable.from_numpy_array(w)) + F.sum(into)
    total.forward()
    total.backward()
    res["grad x"] = x.g.copy()
    res["grad base"] = base.g.copy()
    a = nn.NdArray.from_numpy_array(r.randn(2, 3))
    b = nn.NdArray.from_numpy_array(r.randn(2, 3))
    c = (a + b) * 2 - 1
    c += a
    c /= 2
    res["ndarray"] = c.data.copy()
    res["rsub rdiv"] = (1 - a).data.copy() + (3 / (b * b + 1)).data.copy()
    res["pow neg"] = ((-a) ** 2).data.copy()
    # ``cast`` converts the array in place and returns it as a NumPy array
    h = c.cast(np.float16)
    res["cast"] = [type(h).__name__, str(h.dtype), str(c.dtype)]
    res["cast values"] = np.asarray(h, dtype=np.float32)
    res["int cast"] = np.array(c.cast(np.int32))
    res["after int cast"] = [str(c.dtype), str(c.data.dtype)]
    return res


@nnabla_case(names=[SV + "AdaBelief", SV + "Lars", SV + "SgdW", SV + "AMSBound",
                    "nnabla.utils.learning_rate_scheduler.PolynomialScheduler"],
             tols={"AMSBound a/affine/W": (2e-4, 1e-6), "AMSBound a/affine/b": (2e-4, 1e-6),
                   "AMSBound b/affine/W": (2e-4, 1e-6), "AMSBound b/affine/b": (2e-4, 1e-6)},
             note="AMSBound's parameters after the twin's step differ by float32 rounding "
                  "(8e-5 relative: the step divides by the square root of a clipped, halved "
                  "gradient's tiny second moment); its losses and the other solvers agree")
def user28b_solver_tools_and_states(nn, F, PF, S, r):
    """Less common solvers in a loop driven by a polynomial schedule, with
    ``clip_grad_by_norm``, ``scale_grad``, ``check_inf_or_nan_grad``; a parameter removed
    from one solver (``remove_parameters``); its states copied into a fresh solver with
    ``get_states``/``set_states`` and the two continued in step."""
    LRS = r.module("nnabla.utils.learning_rate_scheduler")
    x = nn.Variable.from_numpy_array(r.randn(5, 3))
    t = nn.Variable.from_numpy_array(r.randn(5, 2))
    with nn.parameter_scope("a"):
        ya = PF.affine(x, 2)
    with nn.parameter_scope("b"):
        yb = PF.affine(x, 2)
    loss = F.mean(F.squared_error(ya + yb, t))
    r.set_params(nn.get_parameters())
    init = {k: v.d.copy() for k, v in nn.get_parameters().items()}
    sched = LRS.PolynomialScheduler(0.05, 6, 2.0)
    res = {"schedule": [sched.get_learning_rate(i) for i in range(7)]}
    makers = {"AdaBelief": lambda: S.AdaBelief(0.05, wd=1e-3),
              "Lars": lambda: S.Lars(0.05),
              "SgdW": lambda: S.SgdW(0.05, wd=1e-2),
              "AMSBound": lambda: S.AMSBound(0.05)}
    for name in sorted(makers):
        for k, v in nn.get_parameters().items():
            v.d = init[k]
        solver = makers[name]()
        solver.set_parameters(nn.get_parameters())
        solver.remove_parameters(["b/affine/b"])
        losses = []
        for i in range(4):
            solver.set_learning_rate(sched.get_learning_rate(i))
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.scale_grad(0.5)
            solver.clip_grad_by_norm(0.3)
            losses.append([float(loss.d), bool(solver.check_inf_or_nan_grad())])
            solver.update()
        res[name + " losses"] = losses
        res[name + " names"] = sorted(solver.get_parameters().keys())
        res[name + " lr"] = solver.learning_rate()
        twin = makers[name]()
        twin.set_parameters(solver.get_parameters())
        twin.set_states(solver.get_states())
        twin.set_learning_rate(solver.learning_rate())
        st = twin.get_states()
        res[name + " state keys"] = sorted(st.keys())
        res[name + " t"] = [st[k].t for k in sorted(st)]
        loss.forward()
        twin.zero_grad()
        loss.backward()
        twin.update()
        for k, v in sorted(nn.get_parameters().items()):
            res[name + " " + k] = v.d.copy()
    return res


@nnabla_case(names=[GC + "GraphConverter", GC + "BatchNormalizationFoldingModifier",
                    PFN + "batch_normalization", "nnabla.utils.profiler.GraphProfiler"])
def user28b_fold_trained_batch_norm(nn, F, PF, S, r):
    """A conv-BN-ReLU net trained a few steps (the running statistics move), then the
    inference graph's batch normalisations folded into the convolutions: equal outputs, the
    functions left; ``GraphProfiler`` run over the folded graph (its result's shape)."""
    x = nn.Variable.from_numpy_array(r.randn(4, 2, 5, 5))
    t = nn.Variable.from_numpy_array(np.array([[0], [1], [1], [0]], np.int32))

    def net(test):
        h = PF.convolution(x, 3, (3, 3), pad=(1, 1), name="c1")
        h = F.relu(PF.batch_normalization(h, batch_stat=not test, name="bn1"))
        h = PF.convolution(h, 4, (3, 3), name="c2")
        h = F.relu(PF.batch_normalization(h, batch_stat=not test, name="bn2"))
        return PF.affine(h, 2, name="fc")

    loss = F.mean(F.softmax_cross_entropy(net(False), t))
    r.set_params(nn.get_parameters(grad_only=False))
    solver = S.Momentum(0.05, 0.9)
    solver.set_parameters(nn.get_parameters())
    for _ in range(3):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
    y = net(True)
    y.forward()
    res = {"y": y.d.copy()}
    GCM = r.module("nnabla.experimental.graph_converters")
    folded = GCM.GraphConverter([GCM.BatchNormalizationFoldingModifier()]).convert(y)
    folded.forward()
    res["folded y"] = folded.d.copy()
    res["equal"] = bool(np.allclose(folded.d, y.d, atol=1e-5))
    names = []
    folded.visit(lambda f: names.append(f.info.type_name))
    res["functions"] = names
    prof = r.module("nnabla.utils.profiler")
    ctx = nn.get_current_context()
    # GraphProfiler sets the default context to its device's (profiler.py:168): put it back
    gp = prof.GraphProfiler(folded, device_id=0, ext_name="cpu", n_run=2)
    gp.run()
    nn.set_default_context(ctx)
    res["profiled"] = [len(gp.result["forward"]), sorted(gp.result.keys())]
    return res


@nnabla_case(names=["nnabla.utils.save.save", "nnabla.utils.nnp_graph.NnpLoader",
                    PFN + "affine", PFN + "layer_normalization"])
def user28b_nnp_two_networks_and_callback(nn, F, PF, r):
    """An ``.nnp`` with a training and a runtime network and two executors (one a
    monitor-style executor with ``no_image_normalization``), loaded with ``NnpLoader``:
    ``get_network`` at a new ``batch_size`` and with a ``callback`` that swaps a function
    (``on_function_pass_by_type``): outputs, names and the executors read back."""
    save = r.module("nnabla.utils.save")
    nnp_graph = r.module("nnabla.utils.nnp_graph")
    x = nn.Variable((2, 3))
    t = nn.Variable((2, 2))
    h = F.tanh(PF.layer_normalization(PF.affine(x, 4, name="fc1"), name="ln"))
    y = PF.affine(h, 2, name="fc2")
    loss = F.mean(F.squared_error(y, t))
    r.set_params(nn.get_parameters())
    contents = {
        "networks": [{"name": "train", "batch_size": 2, "outputs": {"loss": loss},
                      "names": {"x": x, "t": t}},
                     {"name": "runtime", "batch_size": 2, "outputs": {"y": y},
                      "names": {"x": x}}],
        "executors": [{"name": "infer", "network": "runtime", "data": ["x"],
                       "output": ["y"]},
                      {"name": "monitor", "network": "train", "data": ["x", "t"],
                       "output": ["loss"], "no_image_normalization": True}]}
    save.save("two.nnp", contents)
    data = r.randn(3, 3)
    nn.clear_parameters()
    loader = nnp_graph.NnpLoader("two.nnp")
    res = {"networks": sorted(loader.get_network_names())}
    g = loader.get_network("runtime", batch_size=3)
    g.inputs["x"].d = data
    g.outputs["y"].forward()
    res["y"] = g.outputs["y"].d.copy()
    res["shape"] = list(g.outputs["y"].shape)
    cb = nnp_graph.NnpNetworkPass(verbose=0)

    @cb.on_function_pass_by_type("Tanh")
    def tanh_to_sigmoid(f, variables, param_scope):
        return F.sigmoid(variables[0])

    g2 = loader.get_network("runtime", batch_size=3, callback=cb)
    g2.inputs["x"].d = data
    g2.outputs["y"].forward()
    res["swapped y"] = g2.outputs["y"].d.copy()
    tr = loader.get_network("train", batch_size=3)
    res["train inputs"] = sorted(tr.inputs.keys())
    res["train outputs"] = sorted(tr.outputs.keys())
    return res


@nnabla_case(names=["nnabla.utils.save.save", "nnabla.utils.load.load", PFN + "affine"])
def user28b_nntxt_trained_by_its_optimizer(nn, F, PF, S, r):
    """A training configuration saved as ``.nntxt`` (network, optimizer with an Adam solver,
    a dataset entry), read back with ``nnabla.utils.load.load`` and trained through the
    loaded optimizer's solver and network for a few steps: losses and the parameters."""
    save = r.module("nnabla.utils.save")
    load = r.module("nnabla.utils.load")
    x = nn.Variable((4, 3))
    t = nn.Variable((4, 1))
    y = PF.affine(F.relu(PF.affine(x, 5, name="l1")), 1, name="l2")
    loss = F.mean(F.squared_error(y, t))
    r.set_params(nn.get_parameters())
    solver = S.Adam(0.02)
    solver.set_parameters(nn.get_parameters())
    with open("train.csv", "w") as f:
        f.write("x__0,x__1,x__2,t\n1,2,3,0.5\n")
    contents = {
        "global_config": {"default_context": nn.get_current_context()},
        "training_config": {"max_epoch": 1, "iter_per_epoch": 4, "save_best": True},
        "networks": [{"name": "net", "batch_size": 4, "outputs": {"loss": loss},
                      "names": {"x": x, "t": t}}],
        "datasets": [{"name": "data", "uri": "train.csv", "cache_dir": "cache",
                      "variables": ["x", "t"], "shuffle": False, "batch_size": 4,
                      "no_image_normalization": True}],
        "optimizers": [{"name": "opt", "solver": solver, "network": "net",
                        "dataset": "data", "weight_decay": 0, "lr_decay": 1,
                        "lr_decay_interval": 1, "update_interval": 1}]}
    save.save("train.nntxt", contents)
    xs, ts = r.randn(4, 3), r.randn(4, 1)
    nn.clear_parameters()
    info = load.load(["train.nntxt"], prepare_data_iterator=False)
    opt = info.optimizers["opt"]
    res = {"optimizers": sorted(info.optimizers.keys()),
           "solver": opt.solver.name, "lr": opt.solver.learning_rate(),
           "is a Solver": isinstance(opt.solver, r.module("nnabla.solver").Solver),
           "networks": sorted(info.networks.keys())}
    net = opt.network
    net.variables["x"].variable_instance.d = xs
    net.variables["t"].variable_instance.d = ts
    out = net.variables["loss"].variable_instance
    losses = []
    for _ in range(3):
        out.forward()
        opt.solver.zero_grad()
        out.backward()
        opt.solver.update()
        losses.append(float(out.d))
    res["losses"] = np.array(losses)
    for k, v in sorted(nn.get_parameters().items()):
        res["param " + k] = v.d.copy()
    return res


@nnabla_case(names=["nnabla.utils.data_source.DataSourceWithFileCache",
                    "nnabla.utils.data_source_implements.SimpleDataSource", D + "DataIterator"])
def user28b_file_cache_of_own_source(nn, r):
    """A user's own source cached to ``.npy`` files by ``DataSourceWithFileCache`` and read
    through a ``DataIterator``; then a source whose samples differ in length (a feature
    vector of 2 or 3 values), which the user's script guards with ``except ValueError``:
    NNabla 1.39 raises NumPy's ``ValueError`` stacking them (Stadyn raised only its
    ``RuntimeError``, which the guard missed)."""
    DS = r.module("nnabla.utils.data_source")
    DSI = r.module("nnabla.utils.data_source_implements")
    DI = r.module("nnabla.utils.data_iterator")
    feats = r.randn(5, 3)
    res = {}
    with r.tempdir() as folder:
        src = DSI.SimpleDataSource(lambda i: (feats[i], np.array([i % 2], np.int32)), 5)
        cached = DS.DataSourceWithFileCache(src, cache_dir=folder, shuffle=False)
        it = DI.DataIterator(cached, 2)
        res["batches"] = [[b.tolist() for b in it.next()] for _ in range(3)]
        res["files"] = sorted(os.listdir(folder))
        it.close()
    with r.tempdir() as folder:
        ragged = DSI.SimpleDataSource(lambda i: (feats[i, :2 + i % 2],), 4)
        res["ragged"] = outcome(
            lambda: DS.DataSourceWithFileCache(ragged, cache_dir=folder, shuffle=False),
            raised=lambda e: "ValueError" if isinstance(e, ValueError) else type(e).__name__)
    return res
