"""NNabla 1.39's last digits mended in solv39: AdaBelief's float32 (and double) arithmetic,
five updates compared bit for bit."""

from compat_harness import nnabla_case

_CONFS = (("default", {}), ("beta1=0.95", {"beta1": 0.95}),
          ("amsgrad", {"beta1": 0.95, "amsgrad": True}),
          ("decouple", {"beta1": 0.95, "wd": 1e-2, "weight_decouple": True}),
          ("rectify", {"beta1": 0.95, "rectify": True}))
_KEYS = ["AdaBelief %s step %d" % (c, t) for c, _ in _CONFS for t in range(1, 6)]


def _five_updates(nn, solver, r, shape):
    """The parameter after each of five updates with seeded gradients."""
    p = nn.Variable.from_numpy_array(r.randn(*shape), need_grad=True)
    solver.set_parameters({"p": p})
    out = []
    for _ in range(5):
        p.g = r.randn(*shape)
        solver.update()
        out.append(p.d.copy())
    return out


@nnabla_case(names=["nnabla.solvers.AdaBelief"], tols=dict((k, (0, 0)) for k in _KEYS))
def fidelity39b__adabelief_float32_steps(nn, F, PF, S, r):
    """AdaBelief over a (40, 50) parameter, five updates (lr=1e-2), bit for bit: NNabla's
    ``s = beta2*s + (1-beta2)*std::pow(g-m, 2)`` takes ``pow``'s double, so the sum is rounded
    once from double (``src/nbla/solver/generic/adabelief.cpp:99``); its denominator is
    ``sqrt(s)/sqrt(1-beta2^t)`` in float with the correction rounded to float, the decoupled
    decay is ``w - w*ratio`` and ``1 - beta1`` is float32's.  Stadyn differed in 1216 of the
    2000 values after five steps (beta1=0.95)."""
    r.touch("nnabla.solvers.AdaBelief")
    res = {}
    for conf, kwargs in _CONFS:
        solver = S.AdaBelief(alpha=1e-2, **kwargs)
        for t, value in enumerate(_five_updates(nn, solver, r, (40, 50)), 1):
            res["AdaBelief %s step %d" % (conf, t)] = value
    return res


_BOUND_CONFS = (("AdaBound", "beta1=0.95", {"beta1": 0.95}),
                ("AdaBound", "final_lr=0.02", {"beta1": 0.95, "final_lr": 0.02, "gamma": 0.1}),
                ("AMSBound", "beta1=0.95", {"beta1": 0.95}),
                ("AMSBound", "bias_correction", {"beta1": 0.95, "bias_correction": True}),
                ("AMSBound", "final_lr=0.02", {"beta1": 0.95, "final_lr": 0.02, "gamma": 0.1}))
_BOUND_KEYS = ["%s %s step %d" % (n, c, t) for n, c, _ in _BOUND_CONFS for t in range(1, 6)]


@nnabla_case(names=["nnabla.solvers.AdaBound", "nnabla.solvers.AMSBound"],
             tols=dict((k, (0, 0)) for k in _BOUND_KEYS))
def fidelity39b__adabound_amsbound_float32_steps(nn, F, PF, S, r):
    """AdaBound and AMSBound over a (40, 50) parameter, five updates (lr=1e-2), bit for bit:
    NNabla computes the bounds and ``alpha_t / (sqrt(v) + eps)`` in float
    (``adabound.cpp:62-75``, ``amsbound.cpp:70-84``; the bias correction in double rounded to
    float), ``1 - beta1`` in float32, each product rounded before its sum.  Stadyn differed in
    1884 (AMSBound) and 182 (AdaBound) of the 2000 values after five steps (beta1=0.95)."""
    r.touch("nnabla.solvers.AdaBound", "nnabla.solvers.AMSBound")
    res = {}
    for name, conf, kwargs in _BOUND_CONFS:
        solver = getattr(S, name)(alpha=1e-2, **kwargs)
        for t, value in enumerate(_five_updates(nn, solver, r, (40, 50)), 1):
            res["%s %s step %d" % (name, conf, t)] = value
    return res


_GRAVES_CONFS = (("default", {}), ("decay=0.9", {"decay": 0.9, "momentum": 0.5, "eps": 1e-6}))
_GRAVES_KEYS = ["RMSpropGraves %s step %d" % (c, t) for c, _ in _GRAVES_CONFS
                for t in range(1, 6)]


@nnabla_case(names=["nnabla.solvers.RMSpropGraves"],
             tols=dict((k, (0, 0)) for k in _GRAVES_KEYS))
def fidelity39b__rmsprop_graves_float32_steps(nn, F, PF, S, r):
    """RMSpropGraves over a (40, 50) parameter, five updates (lr=1e-2), bit for bit: NNabla's
    float ``d = momentum*d - lr*grad / sqrt(n - g*g + eps)`` with ``1 - decay`` in float32 and
    each product rounded before its sum (``rmsprop_graves.cpp:64-70``).  Stadyn differed in
    821 of the 2000 values after five steps."""
    r.touch("nnabla.solvers.RMSpropGraves")
    res = {}
    for conf, kwargs in _GRAVES_CONFS:
        solver = S.RMSpropGraves(lr=1e-2, **kwargs)
        for t, value in enumerate(_five_updates(nn, solver, r, (40, 50)), 1):
            res["RMSpropGraves %s step %d" % (conf, t)] = value
    return res
