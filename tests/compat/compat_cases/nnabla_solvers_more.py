"""``nnabla.solvers``: the further solvers (Adamax, AdaBelief with its options, AdaBound,
AMSBound, Lamb, Lars, SgdW, RMSpropGraves) over several steps of the small model of
``nnabla_solvers``, with ``weight_decay`` (added to the gradients, or fused into the next update
for Lamb, Lars and SgdW), learning-rate changes, and the solver methods ``check_inf_grad``,
``check_nan_grad``, ``info``, ``weight_decay_is_fused`` and ``setup``.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_solvers import N, _model, _set_lr, solver_case

solver_case("Adamax", lambda S: S.Adamax(alpha=0.01), [N + "Adamax"])
solver_case("Adamax__weight_decay", lambda S: S.Adamax(alpha=0.01, beta1=0.8, eps=1e-4),
            [N + "Adamax"], decay=0.1)

solver_case("AdaBelief", lambda S: S.AdaBelief(alpha=0.01), [N + "AdaBelief"])
solver_case("AdaBelief__eps", lambda S: S.AdaBelief(alpha=0.01, eps=1e-2), [N + "AdaBelief"],
            note="a large eps shows where NNabla adds it (to the variance, every step)")
solver_case("AdaBelief__amsgrad", lambda S: S.AdaBelief(alpha=0.01, eps=1e-2, amsgrad=True),
            [N + "AdaBelief"])
solver_case("AdaBelief__decouple",
            lambda S: S.AdaBelief(alpha=0.01, wd=0.1, weight_decouple=True), [N + "AdaBelief"])
solver_case("AdaBelief__fixed_decay",
            lambda S: S.AdaBelief(alpha=0.01, wd=0.1, weight_decouple=True, fixed_decay=True),
            [N + "AdaBelief"])
solver_case("AdaBelief__wd_alone", lambda S: S.AdaBelief(alpha=0.01, wd=0.1),
            [N + "AdaBelief"], note="without weight_decouple NNabla does not use wd")
solver_case("AdaBelief__rectify", lambda S: S.AdaBelief(alpha=0.01, eps=1e-3, rectify=True),
            [N + "AdaBelief"], steps=7,
            note="rho_t > 4 from step 5: plain momentum steps before, rectified after")
solver_case("AdaBelief__weight_decay", lambda S: S.AdaBelief(alpha=0.01), [N + "AdaBelief"],
            decay=0.2)

solver_case("AdaBound", lambda S: S.AdaBound(alpha=0.01, final_lr=0.1, gamma=10.0),
            [N + "AdaBound"], note="a large gamma makes both bounds bite")
solver_case("AdaBound__low", lambda S: S.AdaBound(alpha=1e-5, final_lr=0.1, gamma=0.1),
            [N + "AdaBound"])
solver_case("AdaBound__set_learning_rate",
            lambda S: S.AdaBound(alpha=0.1, final_lr=0.1, gamma=10.0), [N + "AdaBound"],
            before_update=_set_lr, note="final_lr follows alpha / alpha_initial")
solver_case("AdaBound__weight_decay", lambda S: S.AdaBound(alpha=0.01), [N + "AdaBound"],
            decay=0.1)
solver_case("AMSBound", lambda S: S.AMSBound(alpha=0.05, final_lr=0.1, gamma=10.0),
            [N + "AMSBound"], note="NNabla 1.39's upper bound is final_lr (1 + t / gamma)")
solver_case("AMSBound__low", lambda S: S.AMSBound(alpha=1e-5, final_lr=0.1, gamma=0.1),
            [N + "AMSBound"])
solver_case("AMSBound__bias_correction",
            lambda S: S.AMSBound(alpha=0.05, final_lr=0.1, gamma=10.0, bias_correction=True),
            [N + "AMSBound"])

solver_case("Lamb", lambda S: S.Lamb(eta=0.01), [N + "Lamb"])
solver_case("Lamb__options", lambda S: S.Lamb(eta=0.01, beta1=0.8, gamma_l=2.0, gamma_u=2.5,
                                              bias_correction=True), [N + "Lamb"])
solver_case("Lamb__weight_decay", lambda S: S.Lamb(eta=0.01), [N + "Lamb"], decay=0.1,
            note="fused: the rate enters r in the next update; .g is left alone")

solver_case("Lars", lambda S: S.Lars(lr=0.5, coefficient=0.1), [N + "Lars"])
solver_case("Lars__weight_decay", lambda S: S.Lars(lr=0.5, coefficient=0.1), [N + "Lars"],
            decay=0.1)

solver_case("SgdW", lambda S: S.SgdW(lr=0.1, wd=0.05), [N + "SgdW"])
solver_case("SgdW__weight_decay", lambda S: S.SgdW(lr=0.1, wd=0.05), [N + "SgdW"], decay=0.2)
solver_case("SgdW__set_learning_rate", lambda S: S.SgdW(lr=0.1, wd=0.05), [N + "SgdW"],
            before_update=_set_lr, note="the decay follows lr / lr_initial")

solver_case("RMSpropGraves", lambda S: S.RMSpropGraves(lr=0.01), [N + "RMSpropGraves"])
solver_case("RMSpropGraves__weight_decay",
            lambda S: S.RMSpropGraves(lr=0.01, decay=0.9, momentum=0.5, eps=1e-3),
            [N + "RMSpropGraves"], decay=0.1)


@nnabla_case(names=[N + "Sgd", N + "Adamax", N + "AdaBelief", N + "AdaBound", N + "AMSBound",
                    N + "Lamb", N + "Lars", N + "SgdW", N + "RMSpropGraves"],
             note="the gradient checks, info (hyperparameters and options), which solvers fuse "
                  "weight_decay, and setup, which NNabla 1.39 refuses as deprecated")
def solver_methods(nn, F, PF, S, r):
    x, t, loss = _model(nn, F, PF, r)
    params = nn.get_parameters()
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(params)
    first = sorted(params)[0]
    res = {}
    for label, bad in (("finite", 1.0), ("inf", np.inf), ("nan", np.nan)):
        for k, v in params.items():
            v.g = np.ones(v.shape, np.float32)
        g = params[first].g
        g.flat[1] = bad
        params[first].g = g
        res[label] = [bool(solver.check_inf_grad()), bool(solver.check_nan_grad()),
                      bool(solver.check_inf_or_nan_grad())]
    r.touch(N + "Solver.check_inf_grad", N + "Solver.check_nan_grad")
    makers = {"Sgd": lambda: S.Sgd(lr=0.1), "Adamax": lambda: S.Adamax(),
              "AdaBelief": lambda: S.AdaBelief(amsgrad=True, rectify=True),
              "AdaBound": lambda: S.AdaBound(), "AMSBound": lambda: S.AMSBound(),
              "Lamb": lambda: S.Lamb(bias_correction=True), "Lars": lambda: S.Lars(),
              "SgdW": lambda: S.SgdW(), "RMSpropGraves": lambda: S.RMSpropGraves()}
    for name in sorted(makers):
        s = makers[name]()
        info = s.info
        res["info " + name] = dict((k, float(v) if not isinstance(v, bool) else v)
                                   for k, v in info.items())
        res["fused " + name] = bool(s.weight_decay_is_fused())
        s.set_parameters(params)
        res["states " + name] = sorted(s.get_states()[first].pstate.keys())
    try:
        solver.setup(params)
        res["setup"] = "accepted"
    except RuntimeError as exc:
        res["setup"] = "RuntimeError: deprecated" if "eprecated" in str(exc) else str(exc)
    return res
