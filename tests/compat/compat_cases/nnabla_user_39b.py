"""An NNabla 1.39 user's own programs, seventh batch continued (nnuser39): batch
normalisation written with ``F.batch_normalization`` / ``F.fused_batch_normalization`` and the
user's own running-statistics Variables (and the mistakes such a script makes), solvers'
gradient tools between ``backward`` and ``update`` driven by a script's arguments,
``nnabla.utils.image_utils`` round trips feeding a net, a CSV file cache read back by
``data_iterator_cache`` and sliced for two workers, a warm-up length taken from the script's
arguments (0 for none); each as NNabla's tutorials and nnabla-examples' scripts write it, run
unchanged on NNabla 1.39 and on ``stadyn.compat.nnabla``.  Random draws are the case's seeded
inputs.
"""

import os

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import outcome

SV = "nnabla.solvers."
PFN = "nnabla.parametric_functions."
FN = "nnabla.functions."
LRS = "nnabla.utils.learning_rate_scheduler."


@nnabla_case(names=[FN + "batch_normalization", FN + "fused_batch_normalization",
                    FN + "affine", SV + "Sgd"],
             tols={"loss": (1e-4, 1e-5), "eval": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user39_functional_bn_own_statistics(nn, F, PF, S, r):
    """A net written with functions only (the "NNabla by examples" style): the user creates
    ``beta``, ``gamma`` and the running ``mean`` / ``var`` Variables, trains with
    ``F.batch_normalization(..., batch_stat=True)`` (the running statistics updated in place)
    and evaluates with ``batch_stat=False``.  Then the script's two mistakes: an evaluation
    built with the statistics left ``None``, and a training graph given ``mean * 1.0`` (a
    function's output) as its running mean -- NNabla 1.39 refuses both when they are built
    (``ValueError``), and the running variance stays as it was."""
    x = nn.Variable.from_numpy_array(r.randn(6, 3, 2))
    t = nn.Variable.from_numpy_array(r.randint(0, 2, (6, 1)))
    w = nn.Variable.from_numpy_array(r.randn(6, 2) * 0.5, need_grad=True)
    beta = nn.Variable.from_numpy_array(np.zeros((1, 3, 1), np.float32), need_grad=True)
    gamma = nn.Variable.from_numpy_array(np.ones((1, 3, 1), np.float32), need_grad=True)
    mean = nn.Variable.from_numpy_array(np.zeros((1, 3, 1), np.float32))
    var = nn.Variable.from_numpy_array(np.ones((1, 3, 1), np.float32))
    h = F.batch_normalization(x, beta, gamma, mean, var, batch_stat=True, decay_rate=0.7)
    loss = F.mean(F.softmax_cross_entropy(F.affine(F.relu(h), w), t))
    solver = S.Sgd(0.3)
    solver.set_parameters({"w": w, "beta": beta, "gamma": gamma})
    res = {}
    for _ in range(4):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res.setdefault("loss", []).append(float(loss.d))
    res["running"] = [mean.d.copy(), var.d.copy()]
    xe = nn.Variable.from_numpy_array(r.randn(2, 3, 2))
    ye = F.affine(F.relu(F.batch_normalization(xe, beta, gamma, mean, var, batch_stat=False)),
                  w)
    ye.forward()
    res["eval"] = ye.d.copy()
    fused = F.fused_batch_normalization(xe, beta, gamma, mean, var, batch_stat=False)
    fused.forward()
    res["eval fused"] = fused.d.copy()
    res["eval without stats"] = outcome(
        lambda: F.batch_normalization(xe, beta, gamma, None, None, batch_stat=False).shape)
    res["fused eval without variance"] = outcome(
        lambda: F.fused_batch_normalization(xe, beta, gamma, mean, None, batch_stat=False).shape)
    before = var.d.copy()

    def computed_mean():
        y = F.batch_normalization(x, beta, gamma, mean * 1.0, var, batch_stat=True)
        y.forward()
        return y.shape
    res["train with computed mean"] = outcome(computed_mean)
    res["fused train with computed variance"] = outcome(
        lambda: F.fused_batch_normalization(x, beta, gamma, mean, var * 1.0).shape)
    res["var unchanged"] = bool(np.array_equal(before, var.d))
    return res


@nnabla_case(names=[SV + "AdamW", SV + "Adam", "nnabla.solver.Solver.weight_decay",
                    "nnabla.solver.Solver.clip_grad_by_norm", "nnabla.solver.Solver.scale_grad",
                    "nnabla.solver.Solver.check_inf_or_nan_grad", PFN + "affine"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user39_finetune_grad_tools_from_args(nn, F, PF, S, r):
    """BERT fine-tuning's step (nnabla-examples ``BERT-finetuning/finetune_and_eval.py``):
    after ``backward``, ``solver.weight_decay(args.weight_decay)``, then
    ``solver.clip_grad_by_norm(args.max_grad_norm)``, a loss scale undone by ``scale_grad``
    and the step skipped when ``check_inf_or_nan_grad()``; run for three ``args`` settings,
    one with ``max_grad_norm=0`` (NNabla's "no clipping": ``Solver::clip_grad_by_norm``
    returns at once for 0) and one with an AdamW solver, whose decay is fused into its
    update.  The gradients after clipping and the parameters after four steps."""
    r.touch(*["nnabla.solver.Solver." + m for m in (
        "weight_decay", "clip_grad_by_norm", "scale_grad", "check_inf_or_nan_grad")])
    xs = r.randn(5, 4) * 3.0
    ts = r.randint(0, 3, (5, 1))
    res = {}
    runs = [("clip 0.5", 0.01, 0.5, False), ("clip 0", 0.01, 0.0, False),
            ("adamw clip 0", 0.1, 0.0, True)]
    for tag, wd, max_norm, adamw in runs:
        nn.clear_parameters()
        x = nn.Variable.from_numpy_array(xs)
        t = nn.Variable.from_numpy_array(ts)
        with nn.parameter_scope("cls"):
            y = PF.affine(F.tanh(PF.affine(x, 6, name="l1")), 3, name="l2")
        loss = F.mean(F.softmax_cross_entropy(y, t))
        r.set_params(nn.get_parameters())
        solver = S.AdamW(0.05, wd=0.0) if adamw else S.Adam(0.05)
        solver.set_parameters(nn.get_parameters())
        for step in range(4):
            loss.forward()
            solver.zero_grad()
            loss.backward(8.0)
            solver.scale_grad(1.0 / 8.0)
            if solver.check_inf_or_nan_grad():
                continue
            solver.weight_decay(wd)
            solver.clip_grad_by_norm(max_norm)
            if step == 0:
                res[tag + " clipped grads"] = [p.g.copy() for p in
                                               nn.get_parameters().values()]
            solver.update()
            res.setdefault(tag + " loss", []).append(float(loss.d))
        res[tag + " params"] = [p.d.copy() for p in nn.get_parameters().values()]
    return res


@nnabla_case(names=["nnabla.utils.image_utils.imsave", "nnabla.utils.image_utils.imread",
                    "nnabla.utils.image_utils.imresize", PFN + "convolution", SV + "Adam"],
             tols={"loss": (1e-4, 1e-5), "pred": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user39_images_round_trip_through_a_net(nn, F, PF, S, r):
    """An image-to-image script's data path (nnabla-examples' ``utils/neu`` and the
    super-resolution examples): uint8 RGB images written by ``imsave``, read back
    ``channel_first`` and as grayscale, downscaled by ``imresize`` (bilinear, then nearest)
    as the net's inputs with the full-size gray images as targets; a two-layer conv net
    trained by Adam, its float prediction saved with ``auto_scale`` and read back as uint8."""
    IU = r.module("nnabla.utils.image_utils")
    res = {}
    with r.tempdir() as folder:
        imgs = [(r.rand(6, 8, 3) * 255).astype(np.uint8) for _ in range(3)]
        paths = [os.path.join(folder, "img%d.png" % i) for i in range(3)]
        for p, im in zip(paths, imgs):
            IU.imsave(p, im)
        cf = [IU.imread(p, channel_first=True) for p in paths]
        gray = [IU.imread(p, grayscale=True) for p in paths]
        res["read"] = [cf[0], gray[0]]
        res["equal"] = bool(np.array_equal(cf[0].transpose(1, 2, 0), imgs[0]))
        small = [IU.imresize(im, (4, 3), interpolate="bilinear", channel_first=True)
                 for im in cf]
        res["small"] = small[0]
        res["nearest"] = IU.imresize(gray[1], (4, 3), interpolate="nearest")
        up = np.stack([IU.imresize(s_, (8, 6), channel_first=True) for s_ in small])
        x = nn.Variable.from_numpy_array(up.astype(np.float32) / 255.0)
        t = nn.Variable.from_numpy_array(np.stack(gray)[:, None].astype(np.float32) / 255.0)
        h = F.relu(PF.convolution(x, 4, (3, 3), pad=(1, 1), name="c1"))
        y = F.sigmoid(PF.convolution(h, 1, (3, 3), pad=(1, 1), name="c2"))
        loss = F.mean(F.squared_error(y, t))
        res["params"] = r.set_params(nn.get_parameters())
        solver = S.Adam(0.01)
        solver.set_parameters(nn.get_parameters())
        for _ in range(4):
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
            res.setdefault("loss", []).append(float(loss.d))
        y.forward()
        res["pred"] = y.d.copy()
        out = os.path.join(folder, "pred.png")
        IU.imsave(out, y.d[0, 0], auto_scale=True)
        back = IU.imread(out)
        res["saved"] = [back.dtype.name, list(back.shape)]
        res["saved max diff"] = int(np.abs(back.astype(np.int32)
                                           - np.round(y.d[0, 0] * 255)).max())
    return res


@nnabla_case(names=["nnabla.utils.data_iterator.data_iterator_csv_dataset",
                    "nnabla.utils.data_iterator.data_iterator_cache",
                    "nnabla.utils.data_iterator.DataIterator.slice", PFN + "affine",
                    SV + "Sgd"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user39_cache_shards_for_two_workers(nn, F, PF, S, r):
    """A distributed script's data path (nnabla-examples' ``data_iterator`` helpers with a
    communicator's rank): a CSV dataset converted once into a file cache
    (``data_iterator_csv_dataset(..., cache_dir=...)``), then read back by
    ``data_iterator_cache`` and cut by ``slice(rng=None, num_of_slices=2, slice_pos=rank)``
    for two workers; each worker's batches, sizes and epoch marks, and the losses of a model
    trained by worker 0's batches (``normalize=False``, so the values are the CSV's)."""
    DI = r.module("nnabla.utils.data_iterator")
    r.touch("nnabla.utils.data_iterator.DataIterator.slice")
    res = {}
    with r.tempdir() as folder:
        csv = os.path.join(folder, "train.csv")
        with open(csv, "w") as f:
            f.write("x__0,x__1,x__2,y\n")
            for i in range(10):
                f.write("%d,%d,%.2f,%d\n" % (i, i * i % 7, i * 0.25, i % 3))
        cache = os.path.join(folder, "cache")
        os.makedirs(cache)      # NNabla 1.39 writes into it, but does not make it
        it = DI.data_iterator_csv_dataset(csv, 4, shuffle=False, normalize=False,
                                          with_memory_cache=False, with_file_cache=True,
                                          cache_dir=cache)
        res["csv first"] = [a.tolist() for a in it.next()]
        it.close()
        res["cache files"] = sorted(n for n in os.listdir(cache) if n.endswith(".h5")
                                    or n.endswith(".npy"))[:1] != []
        cached = DI.data_iterator_cache(cache, 2, shuffle=False, normalize=False,
                                        with_memory_cache=False)
        res["variables"] = list(cached.variables)
        res["size"] = int(cached.size)
        shards = [cached.slice(rng=None, num_of_slices=2, slice_pos=k) for k in range(2)]
        res["shard sizes"] = [int(sh.size) for sh in shards]
        for k, sh in enumerate(shards):
            got = []
            for _ in range(4):
                bx, by = sh.next()
                got.append([bx[:, 0].tolist(), by[:, 0].tolist()])
            res["worker %d" % k] = got
            res["worker %d marks" % k] = [int(sh.epoch), int(sh.position)]
        x = nn.Variable((2, 3))
        t = nn.Variable((2, 1))
        y = PF.affine(x, 3, name="fc")
        loss = F.mean(F.softmax_cross_entropy(y, t))
        res["params"] = r.set_params(nn.get_parameters())
        solver = S.Sgd(0.05)
        solver.set_parameters(nn.get_parameters())
        for _ in range(5):
            x.d, t.d = shards[0].next()
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
            res.setdefault("loss", []).append(float(loss.d))
        for sh in shards:
            sh.close()
        cached.close()
    return res


@nnabla_case(names=[LRS + "LinearWarmupScheduler", LRS + "StepScheduler", SV + "Momentum",
                    PFN + "affine"],
             tols={"loss": (1e-4, 1e-5)}, rtol=1e-4, atol=1e-5)
def user39_warmup_length_from_args(nn, F, PF, S, r):
    """A training script whose warm-up length is an argument (``--warmup-iter``, 0 meaning
    none): ``LinearWarmupScheduler(StepScheduler(...), args.warmup_iter)`` for 0 and 3, the
    rate set on Momentum each iteration; the rates and losses of six steps per setting
    (NNabla 1.39 scales only while ``iter < warmup_iter``: with 0, never)."""
    lrs = r.module("nnabla.utils.learning_rate_scheduler")
    xs, ts = r.randn(6, 3), r.randn(6, 2)
    res = {}
    for warmup_iter in (0, 3):
        nn.clear_parameters()
        x = nn.Variable.from_numpy_array(xs)
        y = PF.affine(F.tanh(PF.affine(x, 4, name="l1")), 2, name="l2")
        loss = F.mean(F.squared_error(y, nn.Variable.from_numpy_array(ts)))
        r.set_params(nn.get_parameters())
        sched = lrs.LinearWarmupScheduler(lrs.StepScheduler(0.2, 0.5, [4]), warmup_iter)
        solver = S.Momentum(0.2, 0.9)
        solver.set_parameters(nn.get_parameters())
        for i in range(6):
            solver.set_learning_rate(sched.get_learning_rate(i))
            res.setdefault("lr %d" % warmup_iter, []).append(float(solver.learning_rate()))
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
            res.setdefault("loss %d" % warmup_iter, []).append(float(loss.d))
        res["params %d" % warmup_iter] = [p.d.copy() for p in nn.get_parameters().values()]
    return res
