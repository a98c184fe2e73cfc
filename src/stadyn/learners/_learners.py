"""CNTK's learners: each a :class:`Learner` subclass whose rule is one call of the solver maths.

In the formulas ``g`` is the gradient summed over the ``M`` samples of the minibatch (after
clipping and L2), ``lr`` the effective rate ``lr / R`` (``R > 0``) or ``lr / M`` (``R = 0``),
``m`` a momentum scaled to the minibatch (``m ** (M / R)``, or ``m`` when ``R = 0``) and
``u = 1 - m`` with unit gain (``1`` without).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from .._errors import StadynError
from ..graph import data_of
from ..schedules import learning_parameter_schedule_per_sample, momentum_schedule_per_sample
from ..solvers import functional as Fn
from ._learner import Learner, _finite, default_unit_gain_value

__all__ = ["sgd", "momentum_sgd", "nesterov", "adam", "adagrad", "adadelta", "rmsprop",
           "fsadagrad"]

_VARIANCE_MOMENTUM = 0.9999986111120757     # exp(-1 / 720000) per sample, CNTK's default


def _unit_gain(value: bool | None) -> bool:
    return default_unit_gain_value() if value is None else bool(value)


class _SGD(Learner):
    name = "sgd"
    _fused_l2 = True

    def _apply(self, params, grads, states, scalars, foreach):
        if not Fn.sgd_cntk(params, grads, lr=scalars["lr"], **self._rule_l2(scalars)):
            grads = self._l2_for_rule(params, grads, scalars)
            Fn.sgd(params, grads, lr=scalars["lr"], foreach=foreach)


class _MomentumSGD(Learner):
    name = "momentum_sgd"
    _state_names = ("v",)
    _sparse_rule = "momentum"
    _momentum_names = ("momentum",)
    _fused_l2 = True

    def __init__(self, parameters, lr, momentum, unit_gain, **options):
        super().__init__(parameters, lr, **options)
        self._set_schedule("momentum", momentum)
        self.unit_gain = _unit_gain(unit_gain)

    def _method_scalars(self, sample_count, lr):
        m = self._per_minibatch("momentum", sample_count)
        return {"momentum": m, "gain": (1.0 - m) * lr if self.unit_gain else lr}

    def _apply(self, params, grads, states, scalars, foreach):
        if not Fn.momentum_cntk(params, grads, states["v"], lr=scalars["lr"],
                                momentum=scalars["momentum"], unit_gain=self.unit_gain,
                                **self._rule_l2(scalars)):
            grads = self._l2_for_rule(params, grads, scalars)
            Fn.momentum(params, grads, states["v"], momentum=scalars["momentum"],
                        gain=scalars["gain"], foreach=foreach)


class _Nesterov(_MomentumSGD):
    name = "nesterov"
    _sparse_rule = "nesterov"

    def _apply(self, params, grads, states, scalars, foreach):
        if not Fn.momentum_cntk(params, grads, states["v"], lr=scalars["lr"],
                                momentum=scalars["momentum"], unit_gain=self.unit_gain,
                                nesterov=True, **self._rule_l2(scalars)):
            grads = self._l2_for_rule(params, grads, scalars)
            Fn.nesterov(params, grads, states["v"], momentum=scalars["momentum"],
                        gain=scalars["gain"], foreach=foreach)


def _kernel_value(learner: Learner, value: float) -> float:
    """``value`` as CNTK's kernel for the learner's parameters receives it: rounded to float32
    for float32 parameters (the float kernel), the double otherwise."""
    if all(data_of(v).dtype == torch.float32 for v in learner.named_parameters().values()):
        return float(np.float32(value))
    return value


class _Adam(Learner):
    name = "adam"
    _state_names = ("m", "v")
    # adam's sparse rule is the dense one (CNTK 2.7's GPU kernel, see _row_sparse); adamax's
    # GPU kernel writes NaN into the rows never touched, and its CPU build refuses: refused
    _adamax_refusal = ("AdamUpdate", 1859, "has no CPU kernel for adamax on a sparse gradient "
                       "(its GPU kernel, without epsilon, writes NaN into the rows not touched)")
    _momentum_names = ("momentum", "variance_momentum")

    def __init__(self, parameters, lr, momentum, unit_gain, variance_momentum, epsilon, adamax,
                 **options):
        super().__init__(parameters, lr, **options)
        self._set_schedule("momentum", momentum)
        self._set_schedule("variance_momentum", variance_momentum)
        self.unit_gain = _unit_gain(unit_gain)
        self.epsilon = _finite(epsilon, "adam: epsilon")
        self.adamax = bool(adamax)

    def _method_scalars(self, sample_count, lr):
        b1 = self._per_minibatch("momentum", sample_count)
        b2 = self._per_minibatch("variance_momentum", sample_count)
        t = self._updates_begun() + 1              # CNTK counts updates, not samples
        if b1 == 1.0:
            raise StadynError("adam: momentum is 1, so the bias correction 1 / (1 - momentum^t) "
                              "divides by zero")
        if self.adamax:
            correction = 1.0 / (1.0 - b1 ** t)
        else:
            correction = math.sqrt(1.0 - b2 ** t) / (1.0 - b1 ** t)
        # CNTK's float kernel gets the variance momentum as a float32 (1 - b2 is ~5.6e-6 for
        # the default per-sample time constant, so the rounding shows), the bias correction
        # the double.
        return {"step_size": lr * correction, "beta1": b1, "beta2": _kernel_value(self, b2),
                "gain": 1.0 - b1 if self.unit_gain else 1.0, "correction": correction}

    def _sparse_rule_now(self):
        return self._adamax_refusal if self.adamax else super()._sparse_rule_now()

    def reset_smoothed_gradients(self) -> None:
        """The moment estimates back to zero and the bias correction's update count with them
        (CNTK's LearnerAdam::ResetSmoothedGradients zeroes its smoothed count: the next update
        is corrected as a first one)."""
        super().reset_smoothed_gradients()
        self._restart_update_count()

    def _apply(self, params, grads, states, scalars, foreach):
        if Fn.adam_cntk(params, grads, states["m"], states["v"], lr=scalars["lr"],
                        correction=scalars["correction"], beta1=scalars["beta1"],
                        beta2=scalars["beta2"], eps=self.epsilon, unit_gain=self.unit_gain,
                        adamax=self.adamax):
            return
        rule = Fn.adamax if self.adamax else Fn.adam
        rule(params, grads, states["m"], states["v"], step_size=scalars["step_size"],
             beta1=scalars["beta1"], beta2=scalars["beta2"], eps=self.epsilon,
             gain=scalars["gain"], foreach=foreach)


class _FSAdaGrad(Learner):
    name = "fsadagrad"
    _state_names = ("v", "m")
    _momentum_names = ("momentum", "variance_momentum")

    def __init__(self, parameters, lr, momentum, unit_gain, variance_momentum, **options):
        super().__init__(parameters, lr, **options)
        self._set_schedule("momentum", momentum)
        self._set_schedule("variance_momentum", variance_momentum)
        self.unit_gain = _unit_gain(unit_gain)
        self._scalar_state["smoothed_count"] = 0.0

    def _method_scalars(self, sample_count, lr):
        m = self._per_minibatch("momentum", sample_count)
        vm = self._per_minibatch("variance_momentum", sample_count)
        # CNTK: how many samples the g^2 average holds; target average denominator 1
        count = vm * self._scalar_state["smoothed_count"] + (1.0 - vm) * sample_count
        return {"momentum": m, "gain": 1.0 - m if self.unit_gain else 1.0,
                "var_momentum": _kernel_value(self, vm), "ada_mul": math.sqrt(count),
                "smoothed_count": count}

    def _apply(self, params, grads, states, scalars, foreach):
        if Fn.fsadagrad_cntk(params, grads, states["v"], states["m"], lr=scalars["lr"],
                             momentum=scalars["momentum"], var_momentum=scalars["var_momentum"],
                             ada_mul=scalars["ada_mul"], unit_gain=self.unit_gain):
            return
        Fn.fsadagrad(params, grads, states["v"], states["m"], lr=scalars["lr"],
                     momentum=scalars["momentum"], gain=scalars["gain"],
                     var_momentum=scalars["var_momentum"], ada_mul=scalars["ada_mul"],
                     foreach=foreach)

    def _advance_method(self, scalars):
        self._scalar_state["smoothed_count"] = float(scalars["smoothed_count"])

    def reset_smoothed_gradients(self) -> None:
        """The per-parameter state and the count of samples the ``g^2`` average holds back to
        their initial values (CNTK's LearnerFSAdaGrad::ResetSmoothedGradients zeroes both)."""
        super().reset_smoothed_gradients()
        self._scalar_state["smoothed_count"] = 0.0


class _AdaGrad(Learner):
    name = "adagrad"
    _state_names = ("v",)
    _sparse_rule = "adagrad"

    def __init__(self, parameters, lr, need_ave_multiplier, **options):
        super().__init__(parameters, lr, **options)
        self.need_ave_multiplier = bool(need_ave_multiplier)

    def _apply(self, params, grads, states, scalars, foreach):
        if Fn.adagrad_cntk(params, grads, states["v"], lr=scalars["lr"],
                           average_multiplier=self.need_ave_multiplier):
            return
        Fn.adagrad_normalized(params, grads, states["v"], lr=scalars["lr"],
                              average_multiplier=self.need_ave_multiplier, foreach=foreach)


class _AdaDelta(Learner):
    name = "adadelta"
    _state_names = ("sq_grad", "sq_delta")

    def __init__(self, parameters, lr, rho, epsilon, **options):
        super().__init__(parameters, lr, **options)
        self.rho = _finite(rho, "adadelta: rho")
        if self.rho > 1:
            raise StadynError(f"adadelta: rho must lie in [0, 1], got {rho}")
        self.epsilon = _finite(epsilon, "adadelta: epsilon")

    def _apply(self, params, grads, states, scalars, foreach):
        if Fn.adadelta_cntk(params, grads, states["sq_grad"], states["sq_delta"],
                            lr=scalars["lr"], rho=self.rho, eps=self.epsilon):
            return
        Fn.adadelta(params, grads, states["sq_grad"], states["sq_delta"], lr=scalars["lr"],
                    decay=self.rho, eps=self.epsilon, foreach=foreach)


class _RMSProp(Learner):
    name = "rmsprop"
    _state_names = ("v", "signs", "steps")
    _state_init = {"steps": 0.02}          # CNTK's initial per-element step size

    def __init__(self, parameters, lr, gamma, inc, dec, max, min, need_ave_multiplier,
                 **options):
        super().__init__(parameters, lr, **options)
        self.gamma = _finite(gamma, "rmsprop: gamma")
        if self.gamma > 1:
            raise StadynError(f"rmsprop: gamma must lie in [0, 1], got {gamma}")
        self.inc = _finite(inc, "rmsprop: inc")
        self.dec = _finite(dec, "rmsprop: dec")
        # CNTK 2.7 takes max=np.inf (its Manual_How_to_use_learners does): no upper bound
        self.max = math.inf if not isinstance(max, bool) and max == math.inf \
            else _finite(max, "rmsprop: max")
        self.min = _finite(min, "rmsprop: min")
        if self.min > self.max:
            raise StadynError(f"rmsprop: min ({min}) must not exceed max ({max})")
        self.need_ave_multiplier = bool(need_ave_multiplier)

    def _method_scalars(self, sample_count, lr):
        return {"first": 1.0 if self._updates_begun() == 0 else 0.0}

    def reset_smoothed_gradients(self) -> None:
        """The per-parameter state back to its initial values and the update count to zero
        (CNTK's LearnerRMSProp::ResetSmoothedGradients zeroes its smoothed count, so the next
        update initialises the averages as a first one does)."""
        super().reset_smoothed_gradients()
        self._restart_update_count()

    def _apply(self, params, grads, states, scalars, foreach):
        if Fn.rmsprop_cntk(params, grads, states["v"], states["signs"], states["steps"],
                           lr=scalars["lr"], gamma=self.gamma, inc=self.inc, dec=self.dec,
                           max_step=self.max, min_step=self.min, first=scalars["first"],
                           average_multiplier=self.need_ave_multiplier):
            return
        Fn.rmsprop_adaptive(params, grads, states["v"], states["signs"], states["steps"],
                            lr=scalars["lr"], gamma=self.gamma, inc=self.inc, dec=self.dec,
                            max_step=self.max, min_step=self.min, first=scalars["first"],
                            average_multiplier=self.need_ave_multiplier, foreach=foreach)


# ---------------------------------------------------------------------------------------------
# CNTK's factories (CNTK 2.7 signatures)
# ---------------------------------------------------------------------------------------------
def _options(l1, l2, noise, clip, truncation, use_mean_gradient, minibatch_size,
             epoch_size) -> dict[str, Any]:
    return dict(l1_regularization_weight=l1, l2_regularization_weight=l2,
                gaussian_noise_injection_std_dev=noise,
                gradient_clipping_threshold_per_sample=clip,
                gradient_clipping_with_truncation=truncation,
                use_mean_gradient=use_mean_gradient, minibatch_size=minibatch_size,
                epoch_size=epoch_size)


def sgd(parameters, lr, l1_regularization_weight=0.0, l2_regularization_weight=0.0,
        gaussian_noise_injection_std_dev=0.0, gradient_clipping_threshold_per_sample=math.inf,
        gradient_clipping_with_truncation=True, use_mean_gradient=None, minibatch_size=None,
        epoch_size=None) -> Learner:
    """Plain SGD: ``w -= lr g``.

    ``lr`` is a number, a CNTK list or a :class:`~stadyn.schedules.Schedule`; the common options
    (regularisation, noise, clipping, reference ``minibatch_size``, ``epoch_size`` of ``lr``
    lists) are described in ``docs/learners.md``.

    Example:
        >>> import numpy as np, torch, stadyn as sd
        >>> from stadyn.learners import sgd
        >>> w = sd.Variable.from_numpy_array(np.array([1.0]), need_grad=True)
        >>> learner = sgd([w], lr=0.5)       # per minibatch: 0.5 x the mean gradient
        >>> w.grad = torch.tensor([4.0])     # summed over 2 samples
        >>> learner.update(2); w.d
        True
        array([0.], dtype=float32)
    """
    return _SGD(parameters, lr, **_options(
        l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
        gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation,
        use_mean_gradient, minibatch_size, epoch_size))


def momentum_sgd(parameters, lr, momentum, unit_gain=None, l1_regularization_weight=0.0,
                 l2_regularization_weight=0.0, gaussian_noise_injection_std_dev=0.0,
                 gradient_clipping_threshold_per_sample=math.inf,
                 gradient_clipping_with_truncation=True, use_mean_gradient=None,
                 minibatch_size=None, epoch_size=None) -> Learner:
    """SGD with momentum: ``v = m v + u lr g; w -= v`` (``u = 1 - m`` with unit gain).

    ``unit_gain=None`` takes :func:`~stadyn.learners.default_unit_gain_value`.  ``momentum`` is
    a number or list (per minibatch unless the learner has a ``minibatch_size``) or a schedule,
    e.g. :func:`~stadyn.schedules.momentum_as_time_constant_schedule`.

    Example:
        >>> import math, numpy as np, torch, stadyn as sd
        >>> import stadyn.schedules as S
        >>> from stadyn.learners import momentum_sgd
        >>> w = sd.Variable.from_numpy_array(np.zeros(1), need_grad=True)
        >>> learner = momentum_sgd([w], S.learning_parameter_schedule_per_sample(0.01),
        ...                        S.momentum_as_time_constant_schedule(600))
        >>> w.grad = torch.tensor([64.0])    # summed over 64 samples
        >>> learner.update(64)
        True
        >>> m = math.exp(-64 / 600)
        >>> bool(np.isclose(w.d[0], -0.01 * (1 - m) * 64.0))
        True
    """
    return _MomentumSGD(parameters, lr, momentum, unit_gain, **_options(
        l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
        gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation,
        use_mean_gradient, minibatch_size, epoch_size))


def nesterov(parameters, lr, momentum, unit_gain=None, l1_regularization_weight=0.0,
             l2_regularization_weight=0.0, gaussian_noise_injection_std_dev=0.0,
             gradient_clipping_threshold_per_sample=math.inf,
             gradient_clipping_with_truncation=True, use_mean_gradient=None,
             minibatch_size=None, epoch_size=None) -> Learner:
    """Nesterov momentum: ``v = m v + u lr g; w -= m v + u lr g``.

    Example:
        >>> import numpy as np, torch, stadyn as sd
        >>> from stadyn.learners import nesterov
        >>> w = sd.Variable.from_numpy_array(np.zeros(1), need_grad=True)
        >>> learner = nesterov([w], lr=0.1, momentum=0.5, unit_gain=False)
        >>> w.grad = torch.tensor([1.0]); learner.update(1)
        True
        >>> w.d                              # v = 0.1; w -= 0.5 * 0.1 + 0.1
        array([-0.15], dtype=float32)
    """
    return _Nesterov(parameters, lr, momentum, unit_gain, **_options(
        l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
        gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation,
        use_mean_gradient, minibatch_size, epoch_size))


def adam(parameters, lr, momentum, unit_gain=None, variance_momentum=None,
         l1_regularization_weight=0.0, l2_regularization_weight=0.0,
         gaussian_noise_injection_std_dev=0.0, gradient_clipping_threshold_per_sample=math.inf,
         gradient_clipping_with_truncation=True, use_mean_gradient=None, epsilon=1e-8,
         adamax=False, minibatch_size=None, epoch_size=None) -> Learner:
    """Adam (CNTK's): ``m = b1 m + u g; v = b2 v + (1 - b2) g^2;
    w -= lr sqrt(1 - b2^t) / (1 - b1^t) m / (sqrt(v) + epsilon)``.

    ``b1`` is ``momentum`` and ``b2`` ``variance_momentum`` (default: per sample
    ``0.9999986111120757 = exp(-1/720000)``), both scaled to the minibatch like a momentum;
    ``t`` counts updates (minibatches).  ``adamax=True``: ``v = max(b2 v, |g|)`` and the
    correction is ``1 / (1 - b1^t)``.

    Example:
        >>> import numpy as np, torch, stadyn as sd
        >>> from stadyn.learners import adam
        >>> w = sd.Variable.from_numpy_array(np.zeros(2), need_grad=True)
        >>> learner = adam([w], lr=0.1, momentum=0.9)
        >>> w.grad = torch.tensor([3.0, -0.5]); learner.update(1)
        True
        >>> np.round(w.d, 4)   # about lr * sign(g); CNTK's float32 b2 makes it 0.1007
        array([-0.1007,  0.1007], dtype=float32)
    """
    if variance_momentum is None:
        variance_momentum = momentum_schedule_per_sample(_VARIANCE_MOMENTUM)
    return _Adam(parameters, lr, momentum, unit_gain, variance_momentum, epsilon, adamax,
                 **_options(l1_regularization_weight, l2_regularization_weight,
                            gaussian_noise_injection_std_dev,
                            gradient_clipping_threshold_per_sample,
                            gradient_clipping_with_truncation, use_mean_gradient,
                            minibatch_size, epoch_size))


def fsadagrad(parameters, lr, momentum, unit_gain=None, variance_momentum=None,
              l1_regularization_weight=0.0, l2_regularization_weight=0.0,
              gaussian_noise_injection_std_dev=0.0,
              gradient_clipping_threshold_per_sample=math.inf,
              gradient_clipping_with_truncation=True, use_mean_gradient=None,
              minibatch_size=None, epoch_size=None) -> Learner:
    """FSAdaGrad (Frank Seide's AdaGrad variant; CNTK's ``FSAdagradUpdate``):

    ``c = vm c + (1 - vm) M`` (samples in the average); ``v = vm v + (1 - vm) g^2``;
    ``r = min(sqrt(c) / sqrt(v), 10)`` (``1`` where ``v = 0``); ``m = b m + u r g`` (when
    ``b > 0``; else the step is ``r g``); ``w -= lr m``.  ``vm`` is ``variance_momentum``
    (default per sample ``exp(-1/720000)``), ``b`` the momentum.

    Example:
        >>> import numpy as np, torch, stadyn as sd
        >>> from stadyn.learners import fsadagrad
        >>> w = sd.Variable.from_numpy_array(np.zeros(1), need_grad=True)
        >>> learner = fsadagrad([w], lr=0.1, momentum=0.0)
        >>> w.grad = torch.tensor([2.0]); learner.update(1)
        True
        >>> np.round(w.d, 6)   # r = sqrt(c / v) = 1/2: w -= 0.1 * 2 / 2 (v's float32 vm: .100654)
        array([-0.100654], dtype=float32)
    """
    if variance_momentum is None:
        variance_momentum = momentum_schedule_per_sample(_VARIANCE_MOMENTUM)
    return _FSAdaGrad(parameters, lr, momentum, unit_gain, variance_momentum, **_options(
        l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
        gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation,
        use_mean_gradient, minibatch_size, epoch_size))


def adagrad(parameters, lr, need_ave_multiplier=True, l1_regularization_weight=0.0,
            l2_regularization_weight=0.0, gaussian_noise_injection_std_dev=0.0,
            gradient_clipping_threshold_per_sample=math.inf,
            gradient_clipping_with_truncation=True, use_mean_gradient=None, minibatch_size=None,
            epoch_size=None) -> Learner:
    """AdaGrad (CNTK's): ``v += g^2; r = 1 / sqrt(v + 1e-16); w -= lr / mean(r) r g`` — with
    ``need_ave_multiplier`` the step is divided by the mean of ``r`` over each tensor.

    Example:
        >>> import numpy as np, torch, stadyn as sd
        >>> from stadyn.learners import adagrad
        >>> w = sd.Variable.from_numpy_array(np.zeros(2), need_grad=True)
        >>> learner = adagrad([w], lr=0.1, need_ave_multiplier=False)
        >>> w.grad = torch.tensor([2.0, -4.0]); learner.update(1)
        True
        >>> w.d
        array([-0.1,  0.1], dtype=float32)
    """
    return _AdaGrad(parameters, lr, need_ave_multiplier, **_options(
        l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
        gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation,
        use_mean_gradient, minibatch_size, epoch_size))


def adadelta(parameters, lr=None, rho=0.95, epsilon=1e-8, l1_regularization_weight=0.0,
             l2_regularization_weight=0.0, gaussian_noise_injection_std_dev=0.0,
             gradient_clipping_threshold_per_sample=math.inf,
             gradient_clipping_with_truncation=True, use_mean_gradient=None,
             minibatch_size=None, epoch_size=None) -> Learner:
    """AdaDelta: ``E[g^2] = rho E[g^2] + (1 - rho) g^2;
    dx = sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) g; E[dx^2] = rho E[dx^2] + (1 - rho) dx^2;
    w -= lr dx``.  ``lr`` defaults to 1 per sample (CNTK).

    Example:
        >>> import numpy as np, torch, stadyn as sd
        >>> from stadyn.learners import adadelta
        >>> w = sd.Variable.from_numpy_array(np.zeros(1), need_grad=True)
        >>> learner = adadelta([w], epsilon=1e-6)
        >>> w.grad = torch.tensor([1.0]); learner.update(1)
        True
        >>> np.round(w.d, 6)                 # sqrt(1e-6 / (0.05 + 1e-6))
        array([-0.004472], dtype=float32)
    """
    if lr is None:
        lr = learning_parameter_schedule_per_sample(1.0)
    return _AdaDelta(parameters, lr, rho, epsilon, **_options(
        l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
        gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation,
        use_mean_gradient, minibatch_size, epoch_size))


def rmsprop(parameters, lr, gamma, inc, dec, max, min, need_ave_multiplier=True,
            l1_regularization_weight=0.0, l2_regularization_weight=0.0,
            gaussian_noise_injection_std_dev=0.0, gradient_clipping_threshold_per_sample=math.inf,
            gradient_clipping_with_truncation=True, use_mean_gradient=None, minibatch_size=None,
            epoch_size=None) -> Learner:
    """RMSProp (CNTK's, with per-element step sizes): ``v = gamma v + (1 - gamma) g^2`` (``v``
    starts at ``g^2``); each element's step ``s`` (starting at 0.02) becomes
    ``min(s inc, max)`` when ``g`` kept its sign, else ``max(s dec, min)``;
    ``r = s / sqrt(v + 1e-6)``; ``w -= lr / mean(r) r g`` (``mean`` per tensor with
    ``need_ave_multiplier``, else 1).

    Example:
        >>> import numpy as np, torch, stadyn as sd
        >>> from stadyn.learners import rmsprop
        >>> w = sd.Variable.from_numpy_array(np.zeros(2), need_grad=True)
        >>> learner = rmsprop([w], 0.1, gamma=0.9, inc=1.2, dec=0.5, max=10.0, min=0.001)
        >>> w.grad = torch.tensor([1.0, -3.0]); learner.update(1)
        True
        >>> np.round(w.d, 5)                 # r g = 0.01 sign(g), lr / mean(r) = 15
        array([-0.15,  0.15], dtype=float32)
    """
    return _RMSProp(parameters, lr, gamma, inc, dec, max, min, need_ave_multiplier, **_options(
        l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
        gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation,
        use_mean_gradient, minibatch_size, epoch_size))
