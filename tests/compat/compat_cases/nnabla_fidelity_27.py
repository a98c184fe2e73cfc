"""NNabla 1.39 fidelity: solvers and parameters (the 27th helper session, nnsolv27).

* A solver's ``weight_decay`` and ``update`` on a parameter no backward reached: NNabla 1.39
  skips only a gradient that is ``zeroing`` (``src/nbla/solver.cpp:213-340``); a gradient never
  written is not (``SyncedArray``'s constructor, ``src/nbla/synced_array.cpp:68-69``), reads
  zeros and is decayed and updated.  Stadyn's solvers skipped every parameter without a
  gradient.
"""

import numpy as np

from compat_harness import nnabla_case

# NNabla 1.39's solver classes (its AMSGRAD is Stadyn's AMSGRAD/AMSGrad)
_SOLVERS = ("Sgd", "Momentum", "Nesterov", "Adam", "AdamW", "AMSGRAD", "Adagrad", "Adadelta",
            "RMSprop", "RMSpropGraves", "AMSBound", "AdaBound", "AdaBelief", "Lamb", "Lars",
            "SgdW", "Lion", "Adamax")


@nnabla_case(names=["nnabla.solvers." + n for n in _SOLVERS] + ["nnabla.NdArray.fill",
                                                                 "nnabla.NdArray.zero"],
             note="every solver (defaults) over p = [1, -2] and q = [0.5, 0.5]: "
                  "weight_decay(0.5) then update, with p's gradient never written, zeroed by "
                  "p.grad.zero(), filled with p.grad.fill(0), after solver.zero_grad(), after "
                  "zero_grad() and a backward reaching q only; p, p.g after; then a second "
                  "update (the gradient kept); Sgd(lr=1) with clip_grad_by_norm, scale_grad, "
                  "check_inf_or_nan_grad, check_inf_grad, check_nan_grad on a gradient never "
                  "written, after weight_decay(0.5), and on a need_grad=False parameter")
def solver_weight_decay_no_backward(nn, F, PF, S, r):
    res = {}
    for name in _SOLVERS:
        for how in ("never written", "grad.zero()", "grad.fill(0)", "zero_grad()",
                    "backward of q only"):
            solver = getattr(S, name)()
            p = nn.Variable.from_numpy_array(np.array([1.0, -2.0], np.float32),
                                             need_grad=True)
            q = nn.Variable.from_numpy_array(np.array([0.5, 0.5], np.float32),
                                             need_grad=True)
            solver.set_parameters({"p": p, "q": q})
            if how == "grad.zero()":
                p.grad.zero()
            elif how == "grad.fill(0)":
                p.grad.fill(0)
            elif how == "zero_grad()":
                solver.zero_grad()
            elif how == "backward of q only":
                solver.zero_grad()
                y = F.sum(q * q)
                y.forward()
                y.backward()
            solver.weight_decay(0.5)
            solver.update()
            key = "%s, %s" % (name, how)
            res[key + ": p"] = p.d.copy()
            res[key + ": p.g"] = p.g.copy()
            res[key + ": q"] = q.d.copy()
            solver.update()
            res[key + ": p, second update"] = p.d.copy()
    for how in ("clip_grad_by_norm(1)", "scale_grad(2)", "checks", "weight_decay(0.5), "
                "clip_grad_by_norm(0.1)", "need_grad=False, weight_decay(0.5)"):
        solver = S.Sgd(lr=1.0)
        p = nn.Variable.from_numpy_array(np.ones(2, np.float32),
                                         need_grad=not how.startswith("need_grad"))
        solver.set_parameters({"p": p})
        if how.startswith("weight_decay") or how.startswith("need_grad"):
            solver.weight_decay(0.5)
        if "clip_grad_by_norm" in how:
            solver.clip_grad_by_norm(0.1 if "0.1" in how else 1.0)
        elif how == "scale_grad(2)":
            solver.scale_grad(2.0)
        elif how == "checks":
            res["checks"] = [bool(solver.check_inf_or_nan_grad()),
                             bool(solver.check_inf_grad()), bool(solver.check_nan_grad())]
        solver.update()
        res["Sgd(lr=1), " + how + ": p"] = p.d.copy()
        res["Sgd(lr=1), " + how + ": p.g"] = p.g.copy()
    r.touch("nnabla.NdArray.fill", "nnabla.NdArray.zero")
    return res
