"""NNabla's further solvers: RMSprop, Adagrad, Adadelta, Lion, Adamax, AdaBelief, AdaBound,
AMSBound, Lamb, Lars, SgdW and RMSpropGraves, with NNabla 1.39's defaults, state names and
update rules (the maths is in :mod:`stadyn.solvers._functional` and
:mod:`stadyn.solvers._functional_nnabla`).  Lamb, Lars and SgdW fuse :meth:`weight_decay` into
the next update, as NNabla does (``weight_decay_is_fused()``); the others add it to the
gradients.  On CPU (plain contiguous float32 tensors) each runs NNabla 1.39's float32
arithmetic bit for bit, in blocks (:mod:`stadyn.solvers._float32_kernels`,
:mod:`stadyn.solvers._float32_blocks`); elsewhere (CUDA, non-contiguous or compiled tensors)
torch's ops take the same C++ operations in the same order, one rounding each, with NNabla's
float32 constants (:mod:`stadyn.solvers._functional_nnabla`,
:mod:`stadyn.solvers._functional_nnabla_plain`): NNabla 1.39's bits on CPU
(``tests/solvers/test_nnabla_torch_path_sweep.py``: six steps of the 18 solvers mixing
``weight_decay``, ``clip_grad_by_norm``, ``scale_grad``, ``set_learning_rate`` and a state
round trip) except where NNabla sums a norm one float after another and torch in another
order: on CUDA or a compiled step, Lamb's and Lars' norms and ``clip_grad_by_norm``'s (on CPU
Lamb and Lars sum theirs as NNabla, :func:`~stadyn.solvers._float32_kernels.sequential_norms`:
its bits).  Over 64,500 values Lamb stays within half an ulp of each array's largest
value; Lars' local rate follows its norms, 1.5e-5 apart there (NNabla's sequential float32
sum of 51,000 squares is that far from torch's), and so do its ``v`` and step.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F, stadyn.solvers as S
    >>> w = sd.Variable.from_numpy_array(np.array([1.0, -2.0]), need_grad=True)
    >>> solver = S.Adamax(alpha=0.1)
    >>> solver.set_parameters({"w": w})
    >>> loss = F.sum(w * w)
    >>> loss.forward(); solver.zero_grad(); loss.backward(); solver.update()
    >>> np.round(w.d, 4)
    array([ 0.9, -1.9], dtype=float32)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from . import _functional as Fn
from ._float32_blocks import adabelief_blocks, adabound_blocks, rmsprop_graves_blocks
from ._functional_nnabla_plain import (adadelta_nnabla, adagrad_nnabla, adamax_nnabla,
                                       lion_nnabla, rmsprop_nnabla)
from ._float32_kernels import (adadelta_blocks, adagrad_blocks, adamax_blocks, lamb_blocks,
                               lars_blocks, lars_error, lion_blocks, rmsprop_blocks,
                               sgdw_blocks)
from ._hooks import updated
from ._scalars import float32
from ._solver import Solver
from ._state_layout import end_to_end

__all__ = ["RMSprop", "Adagrad", "Adadelta", "Lion", "Adamax", "AdaBelief", "AdaBound",
           "AMSBound", "Lamb", "Lars", "SgdW", "RMSpropGraves"]


class RMSprop(Solver):
    r"""RMSprop: :math:`v \leftarrow \gamma v + (1-\gamma) g^2;\
    w \leftarrow w - \eta g / (\sqrt v + \epsilon)`.

    Example: ``S.RMSprop(lr=1e-3)``.
    """

    _state_names = ("v",)

    def __init__(self, lr: float = 1e-3, decay: float = 0.9, eps: float = 1e-8):
        super().__init__(lr=lr, decay=decay, eps=eps)

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        h = self.hyper
        if rmsprop_blocks(params, grads, states["v"], lr=scalars["lr"], decay=h["decay"],
                          eps=h["eps"]):
            return                       # on CPU: NNabla's arithmetic, bit for bit
        rmsprop_nnabla(params, grads, states["v"], lr=scalars["lr"], decay=h["decay"],
                       eps=h["eps"], foreach=self.foreach)


class Adagrad(Solver):
    r"""AdaGrad: :math:`G \leftarrow G + g^2;\ w \leftarrow w - \eta g / (\sqrt G + \epsilon)`.

    Example: ``S.Adagrad(lr=1e-2)``.
    """

    _state_names = ("v",)

    def __init__(self, lr: float = 1e-2, eps: float = 1e-8):
        super().__init__(lr=lr, eps=eps)

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        if adagrad_blocks(params, grads, states["v"], lr=scalars["lr"], eps=self.hyper["eps"]):
            return                       # on CPU: NNabla's arithmetic, bit for bit
        adagrad_nnabla(params, grads, states["v"], lr=scalars["lr"], eps=self.hyper["eps"],
                       foreach=self.foreach)


class Adadelta(Solver):
    r"""AdaDelta (Zeiler): updates scaled by :math:`RMS[\Delta w] / RMS[g]` (its state:
    ``e_sqr_grad``, ``e_sqr_delta``).

    Example: ``S.Adadelta()``.
    """

    _state_names = ("e_sqr_grad", "e_sqr_delta")
    _former_state_names = {"e_g": "e_sqr_grad", "e_x": "e_sqr_delta"}      # before NNabla's names

    def __init__(self, lr: float = 1.0, decay: float = 0.95, eps: float = 1e-6):
        super().__init__(lr=lr, decay=decay, eps=eps)

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        h = self.hyper
        if adadelta_blocks(params, grads, states["e_sqr_grad"], states["e_sqr_delta"],
                           lr=scalars["lr"], decay=h["decay"], eps=h["eps"]):
            return                       # on CPU: NNabla's arithmetic, bit for bit
        adadelta_nnabla(params, grads, states["e_sqr_grad"], states["e_sqr_delta"],
                        lr=scalars["lr"], decay=h["decay"], eps=h["eps"], foreach=self.foreach)


class Lion(Solver):
    r"""Lion: :math:`w \leftarrow w - \eta\,(\mathrm{sign}(\beta_1 m + (1-\beta_1) g) +
    \lambda w);\ m \leftarrow \beta_2 m + (1-\beta_2) g`.

    As in NNabla, weight decay is fused into the update: :meth:`weight_decay` sets
    :math:`\lambda` for the next :meth:`update` only (added to the gradient, it would vanish in
    the sign).

    Example: ``S.Lion(lr=1e-4)``.
    """

    _state_names = ("m",)
    _fused_weight_decay = True

    def __init__(self, lr: float = 1e-4, beta1: float = 0.9, beta2: float = 0.99):
        super().__init__(lr=lr, beta1=beta1, beta2=beta2)

    def _scalars(self, steps):
        return {"lr": self.hyper["lr"], "weight_decay": self._next_decay or 0.0}

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        h = self.hyper
        if lion_blocks(params, grads, states["m"], lr=scalars["lr"], beta1=h["beta1"],
                       beta2=h["beta2"], weight_decay=scalars["weight_decay"]):
            return                       # on CPU: NNabla's arithmetic, bit for bit
        lion_nnabla(params, grads, states["m"], lr=scalars["lr"], beta1=h["beta1"],
                    beta2=h["beta2"], weight_decay=scalars["weight_decay"], foreach=self.foreach)


def _one_or_list(values: list[float]) -> Any:
    """One float when every parameter is at the same step, else one per parameter."""
    return values[0] if len(set(values)) == 1 else values


class Adamax(Solver):
    r"""Adamax: :math:`m \leftarrow \beta_1 m + (1-\beta_1) g;\
    u \leftarrow \max(\beta_2 u, |g|);\
    w \leftarrow w - \frac{\alpha}{1-\beta_1^t} \frac{m}{u + \epsilon}` (its state: ``m``,
    ``u``).

    Example: ``S.Adamax(alpha=2e-3)``.
    """

    _state_names = ("m", "u")
    _lr_name = "alpha"
    _scalar_hypers = ("alpha",)

    def __init__(self, alpha: float = 2e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8):
        super().__init__(alpha=alpha, beta1=beta1, beta2=beta2, eps=eps)

    def _scalars(self, steps):
        h = self.hyper
        return {"step_size": _one_or_list([h["alpha"] / (1.0 - h["beta1"] ** t)
                                           for t in steps]),
                "alpha_t": _one_or_list([self._alpha_t(t) for t in steps])}

    def _alpha_t(self, t: int) -> float:
        """NNabla's float ``alpha_t`` of step ``t`` (``adamax.cpp:55-56``): ``1 / (1 -
        pow(beta1, t))`` in double from the float ``beta1``, rounded to float, times the float
        ``alpha``."""
        h = self.hyper
        correction = float32(1.0 / (1.0 - float32(h["beta1"]) ** t))
        return float32(float32(h["alpha"]) * correction)

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        h = self.hyper
        if adamax_blocks(params, grads, states["m"], states["u"], step_size=scalars["alpha_t"],
                         beta1=h["beta1"], beta2=h["beta2"], eps=h["eps"]):
            return                       # on CPU: NNabla's arithmetic, bit for bit
        adamax_nnabla(params, grads, states["m"], states["u"], step_size=scalars["alpha_t"],
                      beta1=h["beta1"], beta2=h["beta2"], eps=h["eps"], foreach=self.foreach)


class AdaBelief(Solver):
    r"""AdaBelief (NNabla's): :math:`m \leftarrow \beta_1 m + (1-\beta_1) g;\
    s \leftarrow \beta_2 s + (1-\beta_2)(g - m)^2 + \epsilon;\
    w \leftarrow w - \frac{\alpha}{1-\beta_1^t} \frac{m}{\sqrt{s / (1-\beta_2^t)} + \epsilon}`
    (its state: ``mean``, ``var``; ``s_max`` too with ``amsgrad``).

    Options as NNabla's: ``amsgrad`` (``s_max = max(s_max, s) + eps`` in the denominator, ``s``
    then without ``eps``), ``weight_decouple`` (scale ``w`` by ``1 - alpha wd`` before the step,
    ``1 - wd`` with ``fixed_decay``; ``wd`` has no effect without it; with it the decay is
    fused, as NNabla's: :meth:`weight_decay` replaces ``wd`` for the next update and leaves the
    gradients alone, ``adabelief.cpp:33,86-87``), ``rectify`` (RAdam's
    rectified step where the variance estimate is tractable, ``rho_t > 4``; ``w -= alpha m``
    before).

    Example: ``S.AdaBelief(alpha=1e-3, wd=1e-4, weight_decouple=True)``.
    """

    _lr_name = "alpha"
    _scalar_hypers = ("alpha",)

    def __init__(self, alpha: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8, wd: float = 0.0, amsgrad: bool = False,
                 weight_decouple: bool = False, fixed_decay: bool = False,
                 rectify: bool = False):
        self.amsgrad, self.weight_decouple = bool(amsgrad), bool(weight_decouple)
        self.fixed_decay, self.rectify = bool(fixed_decay), bool(rectify)
        self._state_names = ("mean", "var", "s_max") if self.amsgrad else ("mean", "var")
        self._fused_weight_decay = self.weight_decouple      # NNabla's Solver(ctx, decouple, wd)
        super().__init__(alpha=alpha, beta1=beta1, beta2=beta2, eps=eps, wd=wd)

    def _options(self):
        return {"amsgrad": self.amsgrad, "weight_decouple": self.weight_decouple,
                "fixed_decay": self.fixed_decay, "rectify": self.rectify}

    def _step_sizes(self, t: int) -> tuple[float, float]:
        """``(adaptive step size, plain momentum step)`` of step ``t``."""
        h = self.hyper
        alpha, b1, b2 = h["alpha"], h["beta1"], h["beta2"]
        corr1 = 1.0 - b1 ** t
        if not self.rectify:
            return alpha / corr1, 0.0
        rho_inf = 2.0 / (1.0 - b2) - 1.0
        rho = rho_inf - 2.0 * t * b2 ** t / (1.0 - b2 ** t)
        if rho <= 4.0:
            return 0.0, alpha
        r = math.sqrt((rho - 4.0) * (rho - 2.0) * rho_inf
                      / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho))
        return alpha * r / corr1, 0.0

    def _scalars(self, steps):
        h = self.hyper
        sizes = [self._step_sizes(t) for t in steps]
        factor, ratio = 1.0, 0.0
        if self.weight_decouple:
            rate = h["wd"] if self._next_decay is None else self._next_decay
            factor = 1.0 - (rate if self.fixed_decay else h["alpha"] * rate)
            wd = float32(rate)             # NNabla's float decay_ratio (adabelief.cpp:86-87)
            ratio = wd if self.fixed_decay else float32(wd * float32(h["alpha"]))
        exact = [self._float32_scalars(t) for t in steps]
        return {"step_size": _one_or_list([s for s, _ in sizes]),
                "sgd_step": _one_or_list([s for _, s in sizes]),
                "bias2": _one_or_list([1.0 - h["beta2"] ** t for t in steps]),
                "decay_factor": factor, "decay_ratio": ratio,
                "alpha_t": _one_or_list([a for a, _, _ in exact]),
                "plain": _one_or_list([p for _, p, _ in exact]),
                "correction2": _one_or_list([c for _, _, c in exact])}

    def _float32_scalars(self, t: int) -> tuple[float, float, float]:
        """NNabla's ``(alpha_t, sgd_update, bias_correction2)`` of step ``t`` as its C++ rounds
        them (``adabelief.cpp:69-87``): powers and the rectification in double from the float
        hyperparameters, each stored float rounded to float32."""
        h = self.hyper
        alpha, b1, b2 = float32(h["alpha"]), float32(h["beta1"]), float32(h["beta2"])
        beta2_t = float32(b2 ** t)
        correction1 = float32(1.0 - float32(b1 ** t))
        correction2 = float32(math.sqrt(1.0 - beta2_t))
        r_t, rho_t = 1.0, 0.0
        if self.rectify:
            rho_inf = 2.0 / (1.0 - b2) - 1.0
            rho_t = float32(rho_inf - 2.0 * t * beta2_t / (1.0 - beta2_t))
            if rho_t > 4.0:            # (else NaN in C++, unused: the plain step)
                r_t = float32(math.sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                                         / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t)))
        plain = self.rectify and rho_t <= 4.0
        alpha_t = alpha if plain else float32(float32(alpha * r_t) / correction1)
        return alpha_t, float(plain), correction2

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        h = self.hyper
        kw = dict(step_size=scalars["alpha_t"], sgd=scalars["plain"],
                  correction2=scalars["correction2"], beta1=h["beta1"], beta2=h["beta2"],
                  eps=h["eps"], s_max=states.get("s_max"), decay=scalars["decay_ratio"])
        if adabelief_blocks(params, grads, states["mean"], states["var"], **kw):
            return                       # on CPU: NNabla's arithmetic, bit for bit
        Fn.adabelief(params, grads, states["mean"], states["var"], foreach=self.foreach, **kw)


class AdaBound(Solver):
    r"""AdaBound: Adam's moments, and the element-wise step
    :math:`\eta = \mathrm{clip}(\alpha \frac{\sqrt{1-\beta_2^t}}{1-\beta_1^t}
    \frac{1}{\sqrt v + \epsilon}, \eta_l, \eta_u)`, :math:`w \leftarrow w - \eta m`, with
    :math:`\eta_l = \alpha^* (1 - \frac{1}{\gamma t + 1})`,
    :math:`\eta_u = \alpha^* (1 + \frac{1}{\gamma t})` and :math:`\alpha^*` ``final_lr`` scaled
    by ``alpha / alpha_initial`` (its state: ``mean``, ``var``).

    Example: ``S.AdaBound(alpha=1e-3, final_lr=0.1)``.
    """

    _state_names = ("mean", "var")
    _lr_name = "alpha"
    _scalar_hypers = ("alpha",)

    def __init__(self, alpha: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8, final_lr: float = 0.1, gamma: float = 1e-3):
        super().__init__(alpha=alpha, beta1=beta1, beta2=beta2, eps=eps, final_lr=final_lr,
                         gamma=gamma)

    def _corrected(self, t: int) -> float:
        h = self.hyper
        if not self._corrects():
            return h["alpha"]
        return h["alpha"] * math.sqrt(1.0 - h["beta2"] ** t) / (1.0 - h["beta1"] ** t)

    def _upper(self, final: float, t: int) -> float:
        return final * (1.0 + 1.0 / (self.hyper["gamma"] * t))

    def _scalars(self, steps):
        h = self.hyper
        final = h["final_lr"] * (h["alpha"] / self._initial_lr if self._initial_lr else 1.0)
        return {"step_size": _one_or_list([self._corrected(t) for t in steps]),
                "lower": _one_or_list([final * (1.0 - 1.0 / (h["gamma"] * t + 1.0))
                                       for t in steps]),
                "upper": _one_or_list([self._upper(final, t) for t in steps]),
                **self._float32_scalars(steps)}

    def _float32_scalars(self, steps) -> dict[str, Any]:
        """NNabla's float ``alpha_t`` and bounds (``adabound.cpp:62-71``, ``amsbound.cpp:
        70-79``): the bias correction in double rounded to float, the rest in float."""
        h, f = self.hyper, np.float32
        alpha, b1, b2, gamma = f(h["alpha"]), f(h["beta1"]), f(h["beta2"]), f(h["gamma"])
        ratio = alpha / f(self._initial_lr) if self._initial_lr else f(1)
        final = f(h["final_lr"]) * ratio
        sizes, lows, highs = [], [], []
        with np.errstate(all="ignore"):
            for t in steps:
                correction = f(math.sqrt(1.0 - float(b2) ** t) / (1.0 - float(b1) ** t))
                sizes.append(float(alpha * correction if self._corrects() else alpha))
                lows.append(float(final * (f(1) - f(1) / (gamma * f(t) + f(1)))))
                highs.append(float(final * self._float32_upper(gamma, f(t))))
        return {"alpha_t": _one_or_list(sizes), "lower_f": _one_or_list(lows),
                "upper_f": _one_or_list(highs)}

    def _corrects(self) -> bool:
        """Whether ``alpha_t`` carries the bias correction (AMSBound: its ``bias_correction``)."""
        return True

    @staticmethod
    def _float32_upper(gamma, t):
        return np.float32(1) + np.float32(1) / (gamma * t)

    def _moments(self, states):
        return states["mean"], states["var"], None

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        h = self.hyper
        m, v, v_max = self._moments(states)
        kw = dict(step_size=scalars["alpha_t"], lower=scalars["lower_f"],
                  upper=scalars["upper_f"], beta1=h["beta1"], beta2=h["beta2"], eps=h["eps"],
                  v_max=v_max)
        if adabound_blocks(params, grads, m, v, **kw):
            return                       # on CPU: NNabla's arithmetic, bit for bit
        Fn.adabound(params, grads, m, v, foreach=self.foreach, **kw)


class AMSBound(AdaBound):
    r"""AMSBound: AdaBound with :math:`\hat v \leftarrow \max(\hat v, v)` in the denominator
    and bias correction off by default (its state: ``m``, ``v``, ``v_hat``).  The upper bound
    is NNabla 1.39's, :math:`\alpha^* (1 + t / \gamma)` (its documentation states AdaBound's
    :math:`1 + 1 / (\gamma t)`; the solver computes this one).

    Example: ``S.AMSBound(alpha=1e-3, final_lr=0.1)``.
    """

    _state_names = ("m", "v", "v_hat")

    def __init__(self, alpha: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8, final_lr: float = 0.1, gamma: float = 1e-3,
                 bias_correction: bool = False):
        super().__init__(alpha=alpha, beta1=beta1, beta2=beta2, eps=eps, final_lr=final_lr,
                         gamma=gamma)
        self.bias_correction = bool(bias_correction)

    def _options(self):
        return {"bias_correction": self.bias_correction}

    def _upper(self, final: float, t: int) -> float:
        return final * (1.0 + t / self.hyper["gamma"])

    def _corrects(self) -> bool:
        return self.bias_correction

    @staticmethod
    def _float32_upper(gamma, t):
        return np.float32(1) + np.float32(1) / gamma * t

    def _moments(self, states):
        return states["m"], states["v"], states["v_hat"]


class Lamb(Solver):
    r"""LAMB: Adam's moments (bias-corrected with ``bias_correction``),
    :math:`r = \frac{\hat m}{\sqrt{\hat v} + \epsilon} + \lambda w`,
    :math:`w \leftarrow w - \eta \frac{\mathrm{clip}(\|w\|, \gamma_l, \gamma_u)}{\|r\|} r`, the
    norms per parameter (its state: ``mean``, ``var``).  :math:`\lambda` is the rate of
    :meth:`weight_decay` for the next update (fused, as NNabla's), 0 otherwise.

    Example: ``S.Lamb(eta=1e-3)``.
    """

    _state_names = ("mean", "var")
    _lr_name = "eta"
    _scalar_hypers = ("eta",)
    _fused_weight_decay = True

    def __init__(self, eta: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 gamma_l: float = 0.0, gamma_u: float = 10.0, eps: float = 1e-6,
                 bias_correction: bool = False):
        super().__init__(eta=eta, beta1=beta1, beta2=beta2, gamma_l=gamma_l, gamma_u=gamma_u,
                         eps=eps)
        self.bias_correction = bool(bias_correction)

    def _options(self):
        return {"bias_correction": self.bias_correction}

    def _scalars(self, steps):
        h = self.hyper
        bc = self.bias_correction
        return {"eta": h["eta"], "weight_decay": self._next_decay or 0.0,
                "bias1": _one_or_list([1.0 - h["beta1"] ** t if bc else 1.0 for t in steps]),
                "bias2": _one_or_list([1.0 - h["beta2"] ** t if bc else 1.0 for t in steps]),
                "correction1": _one_or_list([self._correction(h["beta1"], t) for t in steps]),
                "correction2": _one_or_list([self._correction(h["beta2"], t) for t in steps])}

    def _scratch(self, params: list) -> list:
        """NNabla's ``r`` of each of ``params`` (float32, end to end), kept while the update
        works on the same parameters: the exact blocks then find their plans again, and runs
        of small parameters go through as one array (made per update, every plan was new)."""
        key = [(p.data_ptr(), p.numel(), p.dtype, p.device) for p in params]
        kept = getattr(self, "_r", None)
        if kept is None or kept[0] != key:
            kept = self._r = (key, end_to_end(params, None, torch.float32))
        return kept[1]

    def _correction(self, beta: float, t: int) -> float:
        """NNabla's float bias correction (``lamb.cpp:55-56``): ``1 - pow(beta, t)`` in double
        from the float ``beta``, rounded to float; 1 without ``bias_correction``."""
        return float32(1.0 - float32(beta) ** t) if self.bias_correction else 1.0

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        h = self.hyper
        kw = dict(eta=scalars["eta"], correction1=scalars["correction1"],
                  correction2=scalars["correction2"], beta1=h["beta1"], beta2=h["beta2"],
                  eps=h["eps"], gamma_l=h["gamma_l"], gamma_u=h["gamma_u"],
                  weight_decay=scalars["weight_decay"])
        r = self._scratch(params) if params and params[0].is_cpu else None
        if lamb_blocks(params, grads, states["mean"], states["var"], r=r, **kw):
            return                       # on CPU: NNabla's arithmetic, bit for bit
        Fn.lamb(params, grads, states["mean"], states["var"], foreach=self.foreach, **kw)


class Lars(Solver):
    r"""LARS with momentum: :math:`\lambda = \eta \frac{\|w\|}{\|g\| + \beta \|w\| + \epsilon}`
    per parameter, :math:`v \leftarrow m v + \gamma \lambda (g + \beta w);\
    w \leftarrow w - v` (its state: ``v``).  :math:`\beta` is the rate of :meth:`weight_decay`
    for the next update (fused, as NNabla's), 0 otherwise.

    Example: ``S.Lars(lr=0.1, coefficient=1e-3)``.
    """

    _state_names = ("v",)
    _fused_weight_decay = True

    def __init__(self, lr: float = 1e-3, momentum: float = 0.9, coefficient: float = 1e-3,
                 eps: float = 1e-6):
        super().__init__(lr=lr, momentum=momentum, coefficient=coefficient, eps=eps)

    def _scalars(self, steps):
        return {"lr": self.hyper["lr"], "weight_decay": self._next_decay or 0.0}

    @torch.no_grad()
    def step(self, sample_count: int = 1) -> bool:
        """:meth:`Solver.step`; where a parameter's ``||g|| + weight_decay ||w||`` is negative or
        NaN, NNabla 1.39's partial update, then its ``RuntimeError``: NNabla visits the
        parameters in its ``unordered_map``'s order (:class:`~stadyn.solvers._param_order.
        MapOrder`) and raises at the first bad one, so those it visited before are
        updated (their ``t`` counts the step), the rest are not, and a fused
        :meth:`weight_decay` stays for the next update (``solver.cpp:213-230``)."""
        try:
            return super().step(sample_count)
        except RuntimeError as error:
            bad = getattr(error, "bad_parameters", None)
            if bad is None:
                raise
            names, params, grads = self._with_grad()
            visited = self._visited_before(bad, names)
            if visited is None:
                raise
            before, x = visited
            if before:
                at = [names.index(n) for n in before]
                self.apply_step([params[i] for i in at], [grads[i] for i in at],
                                self.state_tensors(before), self.step_scalars(before))
                for name in before:
                    self._states[name]["t"] += 1
                updated(self._params, before)
            raise lars_error({0: x}) from None

    def _visited_before(self, bad: dict, names: list):
        """The parameters NNabla updates before its first bad one (``bad``: position in
        ``names`` to its ``x``), and that one's ``x``."""
        try:
            order = self._map_order.order()
        except ValueError:                 # (more parameters than the primes kept)
            return None
        position = {name: i for i, name in enumerate(names)}
        before = []
        for name in order:
            i = position.get(name)
            if i in bad:
                return before, bad[i]
            if i is not None:
                before.append(name)
        return None

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        h = self.hyper
        if lars_blocks(params, grads, states["v"], lr=scalars["lr"], momentum=h["momentum"],
                       coefficient=h["coefficient"], eps=h["eps"],
                       weight_decay=scalars["weight_decay"]):
            return                       # on CPU: NNabla's arithmetic, bit for bit
        Fn.lars(params, grads, states["v"], lr=scalars["lr"], momentum=h["momentum"],
                coefficient=h["coefficient"], eps=h["eps"], weight_decay=scalars["weight_decay"],
                foreach=self.foreach)


class SgdW(Solver):
    r"""Momentum SGD with decoupled weight decay: :math:`m \leftarrow \gamma m + \eta g;\
    w \leftarrow w - m - \eta_t \lambda w_{old}` with :math:`\eta_t = \eta / \eta_0` (its
    state: ``m``).  :meth:`weight_decay` is fused, as NNabla's: it replaces ``wd`` in the next
    update.

    Example: ``S.SgdW(lr=0.1, momentum=0.9, wd=1e-4)``.
    """

    _state_names = ("m",)
    _scalar_hypers = ("lr", "wd")
    _fused_weight_decay = True

    def __init__(self, lr: float = 1e-3, momentum: float = 0.9, wd: float = 1e-4):
        super().__init__(lr=lr, momentum=momentum, wd=wd)

    def _scalars(self, steps):
        h = self.hyper
        rate = h["wd"] if self._next_decay is None else self._next_decay
        with np.errstate(all="ignore"):     # NNabla's float (lr / init_lr) * wd, sgdw.cpp:49:
            exact = np.float32(h["lr"]) / np.float32(self._initial_lr) * np.float32(rate)
            wide = np.float64(h["lr"]) / np.float64(self._initial_lr) * np.float64(rate)
        return {"lr": h["lr"], "decay": float(wide), "decay_f": float(exact)}  # (lr=0: NaN)

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        if sgdw_blocks(params, grads, states["m"], lr=scalars["lr"],
                       momentum=self.hyper["momentum"], decay=scalars["decay_f"]):
            return                       # on CPU: NNabla's arithmetic, bit for bit
        Fn.sgdw(params, grads, states["m"], lr=scalars["lr"], momentum=self.hyper["momentum"],
                decay=scalars["decay_f"], foreach=self.foreach)


class RMSpropGraves(Solver):
    r"""RMSprop as Graves (2013): :math:`n \leftarrow \rho n + (1-\rho) e^2;\
    g \leftarrow \rho g + (1-\rho) e;\
    d \leftarrow \beta d - \eta \frac{e}{\sqrt{n - g^2 + \epsilon}};\ w \leftarrow w + d`
    (its state: ``n``, ``g``, ``d``).

    Example: ``S.RMSpropGraves(lr=1e-4)``.
    """

    _state_names = ("n", "g", "d")

    def __init__(self, lr: float = 1e-4, decay: float = 0.95, momentum: float = 0.9,
                 eps: float = 1e-4):
        super().__init__(lr=lr, decay=decay, momentum=momentum, eps=eps)

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        h = self.hyper
        if rmsprop_graves_blocks(params, grads, states["n"], states["g"], states["d"],
                                 lr=scalars["lr"], decay=h["decay"], momentum=h["momentum"],
                                 eps=h["eps"]):
            return                       # on CPU: NNabla's arithmetic, bit for bit
        Fn.rmsprop_graves(params, grads, states["n"], states["g"], states["d"], lr=scalars["lr"],
                          decay=h["decay"], momentum=h["momentum"], eps=h["eps"],
                          foreach=self.foreach)
