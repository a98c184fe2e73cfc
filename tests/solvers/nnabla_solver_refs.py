"""NumPy references of NNabla's further solvers (Adamax, AdaBelief, AdaBound, AMSBound, Lamb,
Lars, SgdW, RMSpropGraves) for the solver harness (``test_solvers.REFERENCES``).

Written from NNabla 1.39's documented update rules where they hold and from what NNabla 1.39
computes where they do not (``tests/compat/compat_cases/nnabla_solvers_more.py`` compares the
solvers with NNabla itself): AdaBelief adds ``eps`` to its variance every step (and, with
``amsgrad``, to the running maximum instead); AMSBound's upper bound is
``final_lr (1 + t / gamma)``.  Signature: ``step(w, g, s, t, h, h0, **options)`` as in
``test_solvers``.
"""

from __future__ import annotations

import math

import numpy as np


def _moments(g, s, h, m, v):
    s[m] = h["beta1"] * s[m] + (1 - h["beta1"]) * g
    s[v] = h["beta2"] * s[v] + (1 - h["beta2"]) * g * g


def adamax_step(w, g, s, t, h, h0):
    s["m"] = h["beta1"] * s["m"] + (1 - h["beta1"]) * g
    s["u"] = np.maximum(h["beta2"] * s["u"], np.abs(g))
    return w - h["alpha"] / (1 - h["beta1"] ** t) * s["m"] / (s["u"] + h["eps"])


def adabelief_step(w, g, s, t, h, h0):
    b1, b2, eps, alpha = h["beta1"], h["beta2"], h["eps"], h["alpha"]
    if h.get("weight_decouple"):
        w = w * (1 - (h["wd"] if h.get("fixed_decay") else alpha * h["wd"]))
    s["mean"] = b1 * s["mean"] + (1 - b1) * g
    s["var"] = b2 * s["var"] + (1 - b2) * (g - s["mean"]) ** 2
    if h.get("amsgrad"):
        s["s_max"] = np.maximum(s.get("s_max", np.zeros_like(w)), s["var"]) + eps
        second = s["s_max"]
    else:
        s["var"] = s["var"] + eps
        second = s["var"]
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    adaptive = s["mean"] / (np.sqrt(second / c2) + eps)
    if not h.get("rectify"):
        return w - alpha / c1 * adaptive
    # NNabla keeps beta2, beta2^t and rho_t as C++ floats (adabelief.cpp:70,80), and rho_t - 4
    # near the first rectified step magnifies their rounding (a few 1e-5 of the step at t=5)
    b2f = float(np.float32(b2))
    b2t = float(np.float32(b2f ** t))
    rho_inf = 2 / (1 - b2f) - 1
    rho = float(np.float32(rho_inf - 2 * t * b2t / (1 - b2t)))
    if rho <= 4:
        return w - alpha * s["mean"]
    r = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
    return w - alpha * r / c1 * adaptive


def _bounded_step(w, s, t, h, h0, second, corrected, upper):
    final = h["final_lr"] * h["alpha"] / h0["alpha"]
    lower = final * (1 - 1 / (h["gamma"] * t + 1))
    eta = np.clip(corrected / (np.sqrt(second) + h["eps"]), lower, upper(final))
    return w - eta * s["m" if "m" in s else "mean"]


def adabound_step(w, g, s, t, h, h0):
    _moments(g, s, h, "mean", "var")
    corrected = h["alpha"] * math.sqrt(1 - h["beta2"] ** t) / (1 - h["beta1"] ** t)
    return _bounded_step(w, s, t, h, h0, s["var"], corrected,
                         lambda final: final * (1 + 1 / (h["gamma"] * t)))


def amsbound_step(w, g, s, t, h, h0, bias_correction=False):
    _moments(g, s, h, "m", "v")
    s["v_hat"] = np.maximum(s["v_hat"], s["v"])
    corrected = h["alpha"]
    if bias_correction:
        corrected *= math.sqrt(1 - h["beta2"] ** t) / (1 - h["beta1"] ** t)
    return _bounded_step(w, s, t, h, h0, s["v_hat"], corrected,
                         lambda final: final * (1 + t / h["gamma"]))


def lamb_step(w, g, s, t, h, h0, bias_correction=False, wd=0.0):
    _moments(g, s, h, "mean", "var")
    m, v = s["mean"], s["var"]
    if bias_correction:
        m, v = m / (1 - h["beta1"] ** t), v / (1 - h["beta2"] ** t)
    r = m / (np.sqrt(v) + h["eps"]) + wd * w
    r_norm = np.linalg.norm(r)       # NNabla's local_lr is 1 unless ||r|| > eps (lamb.cpp)
    trust = (np.clip(np.linalg.norm(w), h["gamma_l"], h["gamma_u"]) / r_norm
             if r_norm > h["eps"] else 1.0)
    return w - h["eta"] * trust * r


def lars_step(w, g, s, t, h, h0, wd=0.0):
    wn = np.linalg.norm(w)
    local = h["coefficient"] * wn / (np.linalg.norm(g) + wd * wn + h["eps"])
    s["v"] = h["momentum"] * s["v"] + h["lr"] * local * (g + wd * w)
    return w - s["v"]


def sgdw_step(w, g, s, t, h, h0, wd=None):
    s["m"] = h["momentum"] * s["m"] + h["lr"] * g
    return w - s["m"] - h["lr"] / h0["lr"] * (h["wd"] if wd is None else wd) * w


def rmsprop_graves_step(w, g, s, t, h, h0):
    d = h["decay"]
    s["n"] = d * s["n"] + (1 - d) * g * g
    s["g"] = d * s["g"] + (1 - d) * g
    s["d"] = h["momentum"] * s["d"] - h["lr"] * g / np.sqrt(s["n"] - s["g"] ** 2 + h["eps"])
    return w + s["d"]


_ADAM = {"alpha": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}


def more_references(Reference) -> dict:
    """The entries of these solvers for ``test_solvers.REFERENCES``."""
    return {
        "Adamax": Reference(adamax_step, ("m", "u"), {**_ADAM, "alpha": 2e-3},
                            {"alpha": 0.05, "beta1": 0.8, "beta2": 0.95, "eps": 1e-6}),
        "AdaBelief": Reference(
            adabelief_step, ("mean", "var"), {**_ADAM, "wd": 0.0},
            {"alpha": 0.05, "beta1": 0.8, "beta2": 0.95, "eps": 1e-6},
            extra_configs=[{"alpha": 0.05, "eps": 1e-3, "wd": 0.1, "weight_decouple": True},
                           {"alpha": 0.05, "wd": 0.1, "weight_decouple": True,
                            "fixed_decay": True},
                           {"alpha": 0.05, "eps": 1e-3, "rectify": True},
                           {"alpha": 0.05, "eps": 1e-3, "amsgrad": True}]),
        "AdaBound": Reference(adabound_step, ("mean", "var"),
                              {**_ADAM, "final_lr": 0.1, "gamma": 1e-3},
                              {"alpha": 0.05, "final_lr": 0.1, "gamma": 0.5}),
        "AMSBound": Reference(amsbound_step, ("m", "v", "v_hat"),
                              {**_ADAM, "final_lr": 0.1, "gamma": 1e-3},
                              {"alpha": 0.05, "final_lr": 0.1, "gamma": 5.0},
                              extra_configs=[{"alpha": 0.05, "gamma": 5.0,
                                              "bias_correction": True}]),
        "Lamb": Reference(lamb_step, ("mean", "var"),
                          {"eta": 1e-3, "beta1": 0.9, "beta2": 0.999, "gamma_l": 0.0,
                           "gamma_u": 10.0, "eps": 1e-6},
                          {"eta": 0.05, "beta1": 0.8, "beta2": 0.95, "gamma_u": 2.0},
                          extra_configs=[{"eta": 0.05, "gamma_l": 3.0, "bias_correction": True}],
                          fused_weight_decay=True),
        "Lars": Reference(lars_step, ("v",),
                          {"lr": 1e-3, "momentum": 0.9, "coefficient": 1e-3, "eps": 1e-6},
                          {"lr": 0.5, "momentum": 0.8, "coefficient": 0.1},
                          fused_weight_decay=True),
        "SgdW": Reference(sgdw_step, ("m",), {"lr": 1e-3, "momentum": 0.9, "wd": 1e-4},
                          {"lr": 0.1, "momentum": 0.8, "wd": 0.05}, fused_weight_decay=True),
        "RMSpropGraves": Reference(rmsprop_graves_step, ("n", "g", "d"),
                                   {"lr": 1e-4, "decay": 0.95, "momentum": 0.9, "eps": 1e-4},
                                   {"lr": 0.01, "decay": 0.8, "momentum": 0.7, "eps": 1e-3}),
    }


def functional_calls(Fn) -> dict:
    """``test_solvers.FUNCTIONAL_CALLS`` entries of these solvers' maths: ``(params, grads, 3
    state lists, per-parameter rates, foreach)``, with the options the classes use."""
    return {
        "adamax": lambda P, G, St, lrs, fe: Fn.adamax(P, G, St[0], St[1], step_size=lrs,
                                                      beta1=0.8, beta2=0.9, eps=1e-6,
                                                      foreach=fe),
        "adabelief": lambda P, G, St, lrs, fe: Fn.adabelief(
            P, G, St[0], St[1], step_size=lrs, sgd=[0.0, 1.0, 0.0], correction2=[0.5, 0.3, 0.9],
            beta1=0.8, beta2=0.9, eps=1e-3, s_max=St[2], decay=[0.01, 0.0, 0.1], foreach=fe),
        "adabound": lambda P, G, St, lrs, fe: Fn.adabound(
            P, G, St[0], St[1], step_size=lrs, lower=[0.01, 0.02, 0.0], upper=[0.5, 0.1, 1.0],
            beta1=0.8, beta2=0.9, eps=1e-6, v_max=St[2], foreach=fe),
        "lamb": lambda P, G, St, lrs, fe: Fn.lamb(
            P, G, St[0], St[1], eta=lrs, correction1=[0.2, 1.0, 0.5], correction2=0.1, beta1=0.8,
            beta2=0.9, eps=1e-6, gamma_l=0.5, gamma_u=2.0, weight_decay=[0.1, 0.0, 0.2],
            foreach=fe),
        "lars": lambda P, G, St, lrs, fe: Fn.lars(P, G, St[0], lr=lrs, momentum=0.8,
                                                  coefficient=0.1, eps=1e-6,
                                                  weight_decay=[0.1, 0.0, 0.2], foreach=fe),
        "sgdw": lambda P, G, St, lrs, fe: Fn.sgdw(P, G, St[0], lr=lrs, momentum=0.8,
                                                  decay=[0.01, 0.0, 0.03], foreach=fe),
        "rmsprop_graves": lambda P, G, St, lrs, fe: Fn.rmsprop_graves(
            P, G, St[0], St[1], St[2], lr=lrs, decay=0.8, momentum=0.7, eps=1e-3, foreach=fe),
    }
