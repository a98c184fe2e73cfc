"""An NNabla 1.39 user's own programs, seventh batch continued (nnuser39): batch
normalisation written with ``F.batch_normalization`` / ``F.fused_batch_normalization`` and the
user's own running-statistics Variables (and the mistakes such a script makes),
``nnabla.utils.image_utils`` round trips feeding a net, solvers' gradient tools between
``backward`` and ``update``; each as NNabla's tutorials and nnabla-examples' scripts write it,
run unchanged on NNabla 1.39 and on ``stadyn.compat.nnabla``.  Random draws are the case's
seeded inputs.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import outcome

SV = "nnabla.solvers."
PFN = "nnabla.parametric_functions."
FN = "nnabla.functions."


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
