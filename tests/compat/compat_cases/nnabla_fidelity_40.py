"""NNabla 1.39's last digits mended in nnsolv40: RMSprop, Lamb, Adamax, Adadelta, Lars, Sgd,
SgdW, Adagrad, Lion and the gradient's weight decay in NNabla's float32 arithmetic, compared
bit for bit after five updates (with and without ``weight_decay``); and what NaN and infinite
gradients do to the C++ comparisons (``std::max``, Lion's ``sign``, Lars' check)."""

import functools

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import builtin_type, outcome

_outcome = functools.partial(outcome, raised=builtin_type)

_STEPS = (1, 5)
_BIG = (300, 250)        # 75000 values: more than one block of solvers/_float32_blocks.py


def _updates(nn, solver, r, wd, big=False):
    """``{step: parameter}`` at steps 1 and 5 of five updates of a (40, 50) parameter with
    seeded gradients, ``solver.weight_decay(wd)`` before each where ``wd``; with ``big`` a
    second parameter of 75000 values (its every 101st value)."""
    shapes = [(40, 50)] + ([_BIG] if big else [])
    ps = dict(("p%d" % i, nn.Variable.from_numpy_array(r.randn(*s), need_grad=True))
              for i, s in enumerate(shapes))
    solver.set_parameters(ps)
    out = {}
    for t in range(1, 6):
        for p in ps.values():
            p.g = r.randn(*p.shape)
        if wd:
            solver.weight_decay(wd)
        solver.update()
        if t in _STEPS:
            out["step %d" % t] = ps["p0"].d.copy()
            if big:
                out["big step %d" % t] = ps["p1"].d.reshape(-1)[::101].copy()
    return out


def _keys(confs, big=False):
    return ["%s %s %sstep %d" % (n, c, b, t) for n, c, _ in confs for t in _STEPS
            for b in (("", "big ") if big else ("",))]


def _run(S, nn, r, confs, big=False):
    res = {}
    for name, conf, kwargs in confs:
        kwargs = dict(kwargs)
        wd = kwargs.pop("weight_decay", 0.0)
        solver = getattr(S, name)(**kwargs)
        for key, value in _updates(nn, solver, r, wd, big).items():
            res["%s %s %s" % (name, conf, key)] = value
    return res


_RMSPROP = (("RMSprop", "lr=1e-2", {"lr": 1e-2}),
            ("RMSprop", "weight_decay", {"lr": 1e-2, "weight_decay": 1e-3}))


@nnabla_case(names=["nnabla.solvers.RMSprop"], tols=dict((k, (0, 0)) for k in _keys(_RMSPROP)))
def fidelity40__rmsprop_float32_steps(nn, F, PF, S, r):
    """RMSprop, five updates, bit for bit: NNabla 1.39 takes ``v = v*decay + (g*g)*(1-decay)``
    with the float ``1 - decay`` (0.100000024 for 0.9) and ``w -= (lr / (sqrt(v) + eps)) * g``,
    the step size divided before the gradient multiplies it (``rmsprop.cpp:49-50``).  Stadyn
    (torch's ``addcmul`` and ``g / denom * lr``) differed in 451 of 2000 values after five
    steps (465 with ``weight_decay``), by up to 345 units in the last place."""
    r.touch("nnabla.solvers.RMSprop")
    return _run(S, nn, r, _RMSPROP)


_LAMB = (("Lamb", "eta=1e-2", {"eta": 1e-2}),
         ("Lamb", "weight_decay", {"eta": 1e-2, "weight_decay": 1e-3}),
         ("Lamb", "bias_correction", {"eta": 1e-2, "bias_correction": True}),
         ("Lamb", "gamma_u=0.5", {"eta": 1e-2, "gamma_u": 0.5, "weight_decay": 1e-3}))


@nnabla_case(names=["nnabla.solvers.Lamb"],
             tols=dict((k, (0, 0)) for k in _keys(_LAMB, big=True)))
def fidelity40__lamb_float32_steps(nn, F, PF, S, r):
    """Lamb, five updates of a (40, 50) and a 75000-value parameter, bit for bit: NNabla 1.39's
    norms are ``std::accumulate`` over float (a sequential float32 sum, not a pairwise one),
    rooted in float; its ``local_lr`` is a double holding the float quotient, so ``w -=
    eta*local_lr*r`` is taken in double and rounded once (``lamb.cpp:66-89``); ``r = (m/c1) /
    (sqrt(v/c2) + eps) + wd*w`` in float.  Stadyn differed in 462 of 2000 values after five
    steps (155 with ``weight_decay``), by up to 2895 units in the last place."""
    r.touch("nnabla.solvers.Lamb")
    return _run(S, nn, r, _LAMB, big=True)


_ADAMAX = (("Adamax", "alpha=1e-2", {"alpha": 1e-2}),
           ("Adamax", "beta1=0.95", {"alpha": 1e-2, "beta1": 0.95, "weight_decay": 1e-3}))


@nnabla_case(names=["nnabla.solvers.Adamax"], tols=dict((k, (0, 0)) for k in _keys(_ADAMAX)))
def fidelity40__adamax_float32_steps(nn, F, PF, S, r):
    """Adamax, five updates, bit for bit: NNabla 1.39's ``alpha_t`` is ``alpha`` times ``1 /
    (1 - pow(beta1, t))`` rounded to float, ``m = b1*m + (1-b1)*g`` with both products rounded
    and the float ``1 - b1``, ``w = w - (alpha_t*m) / (u + eps)`` (``adamax.cpp:55-63``).
    Stadyn differed in 107 of 2000 values after five steps (106 with ``weight_decay``)."""
    r.touch("nnabla.solvers.Adamax")
    return _run(S, nn, r, _ADAMAX)


_ADADELTA = (("Adadelta", "lr=1e-2", {"lr": 1e-2}),
             ("Adadelta", "weight_decay", {"weight_decay": 1e-3}))


@nnabla_case(names=["nnabla.solvers.Adadelta"],
             tols=dict((k, (0, 0)) for k in _keys(_ADADELTA)))
def fidelity40__adadelta_float32_steps(nn, F, PF, S, r):
    """Adadelta, five updates, bit for bit: NNabla 1.39 rounds ``e*decay`` and ``(g*g)*(1 -
    decay)`` before their sum and ``lr*delta`` before the subtraction (``adadelta.cpp:
    47-52``); Stadyn's ``addcmul`` and ``add_(alpha=-lr)`` rounded each multiply-add once."""
    r.touch("nnabla.solvers.Adadelta")
    return _run(S, nn, r, _ADADELTA)


_LARS = (("Lars", "lr=1e-2", {"lr": 1e-2}),
         ("Lars", "weight_decay", {"lr": 1e-1, "momentum": 0.95, "coefficient": 1e-2,
                                   "weight_decay": 1e-3}),
         ("Lars", "eps=1e3", {"lr": 1e-2, "eps": 1e3, "weight_decay": 1e-2}))


@nnabla_case(names=["nnabla.solvers.Lars"],
             tols=dict((k, (0, 0)) for k in _keys(_LARS, big=True)))
def fidelity40__lars_float32_steps(nn, F, PF, S, r):
    """Lars, five updates of a (40, 50) and a 75000-value parameter, bit for bit: NNabla 1.39's
    norms are sequential float32 sums; ``x = ||g|| + wd*||w||`` gets ``eps`` only where ``x <
    eps``, the local rate is ``lr`` where ``||w|| < eps`` (``lars.cpp:45-60``); Stadyn added
    ``eps`` always and took torch's norms (4 of 2000 values off after five steps; with
    ``eps=1e3`` every value)."""
    r.touch("nnabla.solvers.Lars")
    return _run(S, nn, r, _LARS, big=True)


_SGD = (("Sgd", "lr=0.3", {"lr": 0.3}),
        ("Sgd", "weight_decay", {"lr": 0.3, "weight_decay": 1e-2}),
        ("SgdW", "lr=1e-2", {"lr": 1e-2, "wd": 1e-2}),
        ("SgdW", "weight_decay", {"lr": 1e-2, "weight_decay": 1e-3}),
        ("Adagrad", "lr=1e-2", {"lr": 1e-2}),
        ("Adagrad", "weight_decay", {"lr": 1e-2, "weight_decay": 1e-3}),
        ("Lion", "lr=1e-2", {"lr": 1e-2}),
        ("Lion", "weight_decay", {"lr": 1e-2, "weight_decay": 1e-3}),
        ("AMSGRAD", "weight_decay", {"alpha": 1e-2, "weight_decay": 1e-3}),
        ("RMSpropGraves", "weight_decay", {"lr": 1e-2, "weight_decay": 1e-3}))


@nnabla_case(names=["nnabla.solvers." + n for n in ("Sgd", "SgdW", "Adagrad", "Lion", "AMSGRAD",
                                                    "RMSpropGraves", "Sgd.weight_decay")],
             tols=dict((k, (0, 0)) for k in _keys(_SGD)))
def fidelity40__sgd_family_and_weight_decay_float32_steps(nn, F, PF, S, r):
    """Sgd, SgdW, Adagrad and Lion, five updates, bit for bit, and ``weight_decay`` before each:
    NNabla 1.39 rounds ``lr*g`` before ``w - lr*g`` (``sgd.cpp``), takes SgdW's ``w = (w - v) -
    decay*w`` with the float ``(lr/init_lr)*wd``, Adagrad's ``(lr*g) / (sqrt(v) + eps)``, Lion's
    ``lerp`` as ``x + t*(y - x)``, and the gradient's decay as ``g + float(rate*w)``
    (``weight_decay.hpp``).  Stadyn's fused multiply-adds left 134 (Sgd), 115 (SgdW), 104
    (Adagrad), 152 (Lion with decay) and 1-2 (AMSGRAD, RMSpropGraves with decay) of 2000 values
    off after five steps."""
    r.touch(*["nnabla.solvers." + n for n in ("Sgd", "SgdW", "Adagrad", "Lion", "AMSGRAD",
                                              "RMSpropGraves", "Sgd.weight_decay")])
    return _run(S, nn, r, _SGD)


@nnabla_case(names=["nnabla.solvers." + n for n in ("AMSGRAD", "AMSBound", "AdaBound",
                                                    "AdaBelief", "Adamax", "Lion", "Lars")])
def fidelity40__nan_and_inf_gradients(nn, F, PF, S, r):
    """A gradient with NaN, inf and -inf in it, then finite ones: NNabla 1.39's ``v_hat =
    std::max(v_hat, v)`` keeps the old ``v_hat`` where ``v`` is NaN (AMSGRAD, AMSBound; and
    AdaBelief's ``s_max``), where Stadyn's ``maximum`` took the NaN; Lion's ``sign`` is ``(v >
    0) - (v < 0)``, 0 for NaN, so its parameter stays where Stadyn's became NaN; Lars' ``x >=
    0`` check raises a RuntimeError where Stadyn went on with NaN.  AdaBound's eta clip
    (``std::min(upper, std::max(x, lower))`` gives ``upper`` for a NaN ``x``) is not
    visible here: a NaN gradient makes ``m`` NaN too."""
    r.touch(*["nnabla.solvers." + n for n in ("AMSGRAD", "AMSBound", "AdaBound", "AdaBelief",
                                              "Adamax", "Lion", "Lars")])
    res = {}
    for name, kwargs in (("AMSGRAD", {}), ("AMSBound", {}), ("AdaBound", {}),
                         ("AdaBelief", {"amsgrad": True}), ("Adamax", {}), ("Lion", {}),
                         ("Lars", {})):
        p = nn.Variable.from_numpy_array(r.randn(6), need_grad=True)
        solver = getattr(S, name)(**kwargs)
        solver.set_parameters({"p": p})
        for t in range(3):
            g = r.randn(6)
            if t == 1:
                g[:3] = [np.nan, np.inf, -np.inf]
            p.g = g
            got = _outcome(solver.update, lambda _: "updated")
            res["%s %d" % (name, t)] = got
            if got != "updated":
                break
            res["%s %d p" % (name, t)] = p.d.copy()
            for k, v in sorted(solver.get_states()["p"].pstate.items()):
                res["%s %d %s" % (name, t, k)] = v.d.copy()
    return res


_CLIPS = (("clip_norm=10", 10.0), ("clip_norm=0.37", 0.37), ("clip_norm=-3", -3.0))


@nnabla_case(names=["nnabla.solvers.Sgd.clip_grad_by_norm"],
             tols=dict(("%s %s step %d" % (c, k, t), (0, 0)) for c, _ in _CLIPS
                       for k in ("g", "big g", "p") for t in _STEPS))
def fidelity40__clip_grad_by_norm_float32_steps(nn, F, PF, S, r):
    """``clip_grad_by_norm`` before five Sgd updates, bit for bit, of a (40, 50) and a
    75000-value parameter: NNabla 1.39 sums ``g*g`` one float addition after another (``T sum``
    in ``clip_grad.hpp:30-32``), roots in float and takes ``(c*g) / norm``; Stadyn took torch's
    pairwise norm (every clipped value up to 7 units in the last place off)."""
    r.touch("nnabla.solvers.Sgd.clip_grad_by_norm")
    res = {}
    for conf, c in _CLIPS:
        ps = {"p0": nn.Variable.from_numpy_array(r.randn(40, 50), need_grad=True),
              "p1": nn.Variable.from_numpy_array(r.randn(*_BIG), need_grad=True)}
        solver = S.Sgd(lr=0.3)
        solver.set_parameters(ps)
        for t in range(1, 6):
            for p in ps.values():
                p.g = r.randn(*p.shape)
            solver.clip_grad_by_norm(c)
            if t in _STEPS:
                res["%s g step %d" % (conf, t)] = ps["p0"].g.copy()
                res["%s big g step %d" % (conf, t)] = ps["p1"].g.reshape(-1)[::101].copy()
            solver.update()
            if t in _STEPS:
                res["%s p step %d" % (conf, t)] = ps["p0"].d.copy()
    return res


@nnabla_case(names=["nnabla.solvers.SgdW", "nnabla.solvers.SgdW.set_learning_rate"])
def fidelity40__sgdw_made_with_lr_0(nn, F, PF, S, r):
    """``SgdW(lr=0, wd=1e-2)``: NNabla 1.39's decay rate is the float ``(lr / init_lr) * wd``
    (``sgdw.cpp:49``), 0/0, so the update makes the parameter NaN (and so it stays after
    ``set_learning_rate(0.1)``); Stadyn took ``lr / init_lr`` as 1 where ``init_lr`` is 0 and
    decayed the parameter to 0.99."""
    r.touch("nnabla.solvers.SgdW", "nnabla.solvers.SgdW.set_learning_rate")
    p = nn.Variable.from_numpy_array(np.ones(3, np.float32), need_grad=True)
    solver = S.SgdW(lr=0.0, wd=1e-2)
    solver.set_parameters({"p": p})
    res = {}
    for t, lr in enumerate((None, 0.1)):
        if lr is not None:
            solver.set_learning_rate(lr)
        p.g = np.ones(3, np.float32)
        solver.update()
        res["step %d" % (t + 1)] = p.d.copy()
    return res



_ADABELIEF = (("AdaBelief", "decouple", {"alpha": 1e-2, "wd": 1e-2, "weight_decouple": True,
                                        "weight_decay": 3e-3}),
              ("AdaBelief", "decouple fixed", {"alpha": 1e-2, "wd": 1e-2, "weight_decouple": True,
                                              "fixed_decay": True, "weight_decay": 3e-3}),
              ("AdaBelief", "coupled", {"alpha": 1e-2, "weight_decay": 3e-3}))


@nnabla_case(names=["nnabla.solvers.AdaBelief", "nnabla.solvers.AdaBelief.weight_decay",
                    "nnabla.solvers.AdaBelief.weight_decay_is_fused"],
             tols=dict((k, (0, 0)) for k in _keys(_ADABELIEF)))
def fidelity40__adabelief_decoupled_weight_decay(nn, F, PF, S, r):
    """AdaBelief's ``weight_decay(rate)`` before each of five updates, bit for bit: with
    ``weight_decouple`` NNabla 1.39's AdaBelief is made ``Solver(ctx, weight_decouple, wd)``
    (``adabelief.cpp:33``), so its weight decay is fused: ``rate`` replaces ``wd`` in the next
    update's ``decay_ratio`` and the gradient is left alone.  Stadyn added ``rate*w`` to the
    gradient and decayed by ``wd`` as well (all 2000 values off, up to 1.8 % with
    ``fixed_decay``); without ``weight_decouple`` the rate joins the gradient, as before."""
    r.touch("nnabla.solvers.AdaBelief", "nnabla.solvers.AdaBelief.weight_decay",
            "nnabla.solvers.AdaBelief.weight_decay_is_fused")
    res = _run(S, nn, r, _ADABELIEF)
    for _, conf, kwargs in _ADABELIEF:
        kwargs = dict(kwargs)
        kwargs.pop("weight_decay")
        res["%s fused" % conf] = np.array(S.AdaBelief(**kwargs).weight_decay_is_fused())
    return res
