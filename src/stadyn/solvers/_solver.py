"""Solvers (NNabla's API): a class holds the parameters and their state, the maths is functional.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F, stadyn.solvers as S
    >>> w = sd.Variable.from_numpy_array(np.array([1.0, -2.0]), need_grad=True)
    >>> solver = S.Sgd(lr=0.5)
    >>> solver.set_parameters({"w": w})
    >>> loss = F.sum(w * w)
    >>> loss.forward(); solver.zero_grad(); loss.backward(); solver.update()
    >>> w.d
    array([0., 0.], dtype=float32)
"""

from __future__ import annotations

import json
import math
import os
from collections import OrderedDict
from typing import Any, Mapping

import torch

from .._errors import ParameterError, StadynError
from .._fileutil import atomic_write
from ..graph import Variable
from . import _functional as Fn

__all__ = ["Solver", "Sgd", "Momentum", "Nesterov", "Adam", "AdamW", "AMSGrad", "RMSprop",
           "Adagrad", "Adadelta", "Lion"]


class Solver:
    """Base class: parameters by name, per-parameter state, NNabla's solver methods.

    Subclasses declare ``_state_names`` and implement :meth:`_step`, which calls one function of
    :mod:`stadyn.solvers._functional` on the parameters that have a gradient.
    """

    _state_names: tuple[str, ...] = ()
    _lr_name = "lr"

    def __init__(self, **hyper: float):
        for key, value in hyper.items():
            if isinstance(value, (int, float)) and not math.isfinite(value):
                raise StadynError(f"{type(self).__name__}: {key} must be finite, got {value}")
        if hyper.get(self._lr_name, 0.0) < 0:
            raise StadynError(f"{type(self).__name__}: invalid learning rate "
                              f"{hyper[self._lr_name]}")
        self.hyper: dict[str, float] = dict(hyper)
        self._initial_lr = hyper.get(self._lr_name, 0.0)
        self.foreach = True
        self._params: OrderedDict[str, Variable] = OrderedDict()
        self._states: dict[str, dict[str, Any]] = {}

    # -- parameters -----------------------------------------------------------------------------
    def set_parameters(self, param_dict: Mapping[str, Variable], reset: bool = True,
                       retain_state: bool = False) -> None:
        """Set the parameters to update.

        ``reset`` replaces the current set (dropping all state); with ``reset=False`` the given
        parameters are added, and ``retain_state=True`` keeps the state of those already known.
        """
        if reset:
            self._params.clear()
            self._states.clear()
        for name, var in param_dict.items():
            if not isinstance(var, Variable):
                raise ParameterError(f"solver parameter '{name}' is a {type(var).__name__}, not a "
                                     "Variable")
            known = name in self._params and self._params[name] is var
            self._params[name] = var
            if not (known and retain_state) or name not in self._states:
                self._states[name] = self._init_state(var.data)

    def remove_parameters(self, keys) -> None:
        for k in keys:
            self._params.pop(k, None)
            self._states.pop(k, None)

    def clear_parameters(self) -> None:
        self._params.clear()
        self._states.clear()

    def get_parameters(self) -> "OrderedDict[str, Variable]":
        return OrderedDict(self._params)

    def _init_state(self, p: torch.Tensor) -> dict[str, Any]:
        state: dict[str, Any] = {name: torch.zeros_like(p, dtype=torch.float32)
                                 for name in self._state_names}
        state["t"] = 0
        return state

    def _with_grad(self) -> tuple[list[str], list[torch.Tensor], list[torch.Tensor]]:
        names, params, grads = [], [], []
        for name, var in self._params.items():
            t = var.data
            g = var.grad
            if g is None:
                continue
            names.append(name)
            params.append(t.detach())
            grads.append(g)
        return names, params, grads

    # -- NNabla's solver methods ----------------------------------------------------------------
    def zero_grad(self) -> None:
        """Forget the gradients (parameters whose gradient is not recomputed are not updated)."""
        for var in self._params.values():
            var.grad = None

    @torch.no_grad()
    def update(self) -> None:
        """Apply one step to every parameter that has a gradient."""
        names, params, grads = self._with_grad()
        if not names:
            return
        for name in names:
            self._states[name]["t"] += 1
        self._step(names, params, grads)

    def _step(self, names, params, grads) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _state_list(self, names, key) -> list[torch.Tensor]:
        return [self._states[n][key] for n in names]

    @torch.no_grad()
    def weight_decay(self, decay_rate: float) -> None:
        """Add ``decay_rate * w`` to each gradient (L2 regularisation)."""
        _, params, grads = self._with_grad()
        if grads and decay_rate:
            Fn.add_weight_decay(grads, params, rate=decay_rate, foreach=self.foreach)

    @torch.no_grad()
    def clip_grad_by_norm(self, clip_norm: float) -> None:
        """Rescale each parameter's gradient whose norm exceeds ``clip_norm`` (per parameter)."""
        _, _, grads = self._with_grad()
        if grads:
            Fn.clip_by_norm(grads, max_norm=clip_norm, foreach=self.foreach)

    @torch.no_grad()
    def check_inf_or_nan_grad(self) -> bool:
        """True if any gradient holds an inf or a NaN."""
        _, _, grads = self._with_grad()
        return any(not bool(torch.isfinite(g).all()) for g in grads)

    def learning_rate(self) -> float:
        return float(self.hyper[self._lr_name])

    def set_learning_rate(self, learning_rate: float) -> None:
        if learning_rate < 0:
            raise StadynError(f"{type(self).__name__}: invalid learning rate {learning_rate}")
        self.hyper[self._lr_name] = float(learning_rate)

    @property
    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        hyper = ", ".join(f"{k}={v}" for k, v in self.hyper.items())
        return f"{self.name}({hyper}) with {len(self._params)} parameters"

    # -- state ----------------------------------------------------------------------------------
    def get_states(self) -> "OrderedDict[str, dict[str, Any]]":
        """Per-parameter state: tensors by name and the step count ``t``."""
        return OrderedDict((k, dict(v)) for k, v in self._states.items())

    def set_states(self, states: Mapping[str, Mapping[str, Any]]) -> None:
        for name, state in states.items():
            if name not in self._params:
                raise ParameterError(f"{self.name}.set_states: unknown parameter '{name}'")
            mine = self._states[name]
            for key, value in state.items():
                if key == "t":
                    mine["t"] = int(value)
                elif key in mine:
                    if tuple(value.shape) != tuple(mine[key].shape):
                        raise ParameterError(f"{self.name} state '{name}/{key}' has shape "
                                             f"{tuple(value.shape)}, expected "
                                             f"{tuple(mine[key].shape)}")
                    mine[key].copy_(torch.as_tensor(value))

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: hyperparameters, step counts and state tensors."""
        return {"solver": self.name, "hyper": dict(self.hyper),
                "t": {k: s["t"] for k, s in self._states.items()},
                "tensors": {f"{k}/{n}": s[n] for k, s in self._states.items()
                            for n in self._state_names}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("solver") not in (None, self.name):
            raise StadynError(f"cannot load {state.get('solver')} state into {self.name}")
        self.hyper.update(state.get("hyper", {}))
        merged: dict[str, dict[str, Any]] = {}
        for key, tensor in state.get("tensors", {}).items():
            name, _, sub = key.rpartition("/")
            merged.setdefault(name, {})[sub] = tensor
        for name, t in state.get("t", {}).items():
            merged.setdefault(name, {})["t"] = t
        self.set_states(merged)

    def save_states(self, path: str | os.PathLike) -> None:
        """Write the state to a safetensors file (atomically: temporary name, then rename)."""
        from safetensors.torch import save_file
        state = self.state_dict()
        meta = {"format": "stadyn-solver-states", "version": "1",
                "solver": state["solver"], "hyper": json.dumps(state["hyper"]),
                "t": json.dumps(state["t"])}
        tensors = {k: v.detach().cpu().contiguous() for k, v in state["tensors"].items()}
        atomic_write(path, lambda tmp: save_file(tensors, tmp, metadata=meta))

    def load_states(self, path: str | os.PathLike) -> None:
        """Read a state file written by :meth:`save_states`."""
        from safetensors import safe_open
        try:
            with safe_open(os.fspath(path), framework="pt") as f:
                meta = f.metadata() or {}
                tensors = {k: f.get_tensor(k) for k in f.keys()}
        except Exception as exc:  # safetensors raises several types for bad files
            raise StadynError(f"{path}: not a solver state file ({exc})") from exc
        if meta.get("format") != "stadyn-solver-states":
            raise StadynError(f"{path}: not a Stadyn solver state file")
        self.load_state_dict({"solver": meta.get("solver"), "hyper": json.loads(meta["hyper"]),
                              "t": json.loads(meta["t"]), "tensors": tensors})


# ---------------------------------------------------------------------------------------------
class Sgd(Solver):
    r"""Stochastic gradient descent: :math:`w \leftarrow w - \eta g`.

    Example: ``S.Sgd(lr=0.1)``.
    """

    def __init__(self, lr: float = 1e-3):
        super().__init__(lr=lr)

    def _step(self, names, params, grads):
        Fn.sgd(params, grads, lr=self.hyper["lr"], foreach=self.foreach)


class Momentum(Solver):
    r"""SGD with momentum: :math:`v \leftarrow \gamma v + \eta g;\ w \leftarrow w - v`.

    Example: ``S.Momentum(lr=0.01, momentum=0.9)``.
    """

    _state_names = ("v",)

    def __init__(self, lr: float = 1e-3, momentum: float = 0.9):
        super().__init__(lr=lr, momentum=momentum)

    def _step(self, names, params, grads):
        Fn.momentum(params, grads, self._state_list(names, "v"), momentum=self.hyper["momentum"],
                    gain=self.hyper["lr"], foreach=self.foreach)


class Nesterov(Solver):
    r"""Nesterov accelerated gradient: :math:`v \leftarrow \gamma v - \eta g;\
    w \leftarrow w - \gamma v_{old} + (1 + \gamma) v` (stored with the opposite sign).

    Example: ``S.Nesterov(lr=0.01, momentum=0.9)``.
    """

    _state_names = ("v",)

    def __init__(self, lr: float = 1e-3, momentum: float = 0.9):
        super().__init__(lr=lr, momentum=momentum)

    def _step(self, names, params, grads):
        Fn.nesterov(params, grads, self._state_list(names, "v"), momentum=self.hyper["momentum"],
                    gain=self.hyper["lr"], foreach=self.foreach)


class Adam(Solver):
    r"""Adam (NNabla's form): :math:`m \leftarrow \beta_1 m + (1-\beta_1) g;\
    v \leftarrow \beta_2 v + (1-\beta_2) g^2;\
    w \leftarrow w - \alpha \frac{\sqrt{1-\beta_2^t}}{1-\beta_1^t} \frac{m}{\sqrt v + \epsilon}`.

    Example: ``S.Adam(alpha=1e-3)``.
    """

    _state_names = ("m", "v")
    _lr_name = "alpha"

    def __init__(self, alpha: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8):
        super().__init__(alpha=alpha, beta1=beta1, beta2=beta2, eps=eps)

    def _step_sizes(self, names, bias_correction: bool = True) -> list[float]:
        h = self.hyper
        if not bias_correction:
            return [h["alpha"]] * len(names)
        out = []
        for n in names:
            t = self._states[n]["t"]
            out.append(h["alpha"] * math.sqrt(1.0 - h["beta2"] ** t) / (1.0 - h["beta1"] ** t))
        return out

    def _step(self, names, params, grads):
        h = self.hyper
        Fn.adam(params, grads, self._state_list(names, "m"), self._state_list(names, "v"),
                step_size=self._step_sizes(names), beta1=h["beta1"], beta2=h["beta2"],
                eps=h["eps"], foreach=self.foreach)


class AdamW(Adam):
    r"""Adam with decoupled weight decay: Adam's step, then
    :math:`w \leftarrow w - \eta_t \lambda w_{old}` with :math:`\eta_t = \alpha / \alpha_0`.

    Example: ``S.AdamW(alpha=1e-3, wd=1e-4)``.
    """

    def __init__(self, alpha: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8, wd: float = 1e-4):
        Solver.__init__(self, alpha=alpha, beta1=beta1, beta2=beta2, eps=eps, wd=wd)

    def _step(self, names, params, grads):
        h = self.hyper
        eta = h["alpha"] / self._initial_lr if self._initial_lr else 1.0
        Fn.adam(params, grads, self._state_list(names, "m"), self._state_list(names, "v"),
                step_size=self._step_sizes(names), beta1=h["beta1"], beta2=h["beta2"],
                eps=h["eps"], decoupled_decay=eta * h["wd"], foreach=self.foreach)


class AMSGrad(Adam):
    r"""AMSGrad: Adam with :math:`\hat v \leftarrow \max(\hat v, v)` in the denominator; bias
    correction off by default (NNabla).

    Example: ``S.AMSGrad(alpha=1e-3)``.
    """

    _state_names = ("m", "v", "v_hat")

    def __init__(self, alpha: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8, bias_correction: bool = False):
        Solver.__init__(self, alpha=alpha, beta1=beta1, beta2=beta2, eps=eps)
        self.bias_correction = bias_correction

    def _step(self, names, params, grads):
        h = self.hyper
        Fn.adam(params, grads, self._state_list(names, "m"), self._state_list(names, "v"),
                step_size=self._step_sizes(names, self.bias_correction), beta1=h["beta1"],
                beta2=h["beta2"], eps=h["eps"], v_max=self._state_list(names, "v_hat"),
                foreach=self.foreach)


class RMSprop(Solver):
    r"""RMSprop: :math:`v \leftarrow \gamma v + (1-\gamma) g^2;\
    w \leftarrow w - \eta g / (\sqrt v + \epsilon)`.

    Example: ``S.RMSprop(lr=1e-3)``.
    """

    _state_names = ("v",)

    def __init__(self, lr: float = 1e-3, decay: float = 0.9, eps: float = 1e-8):
        super().__init__(lr=lr, decay=decay, eps=eps)

    def _step(self, names, params, grads):
        h = self.hyper
        Fn.rmsprop(params, grads, self._state_list(names, "v"), lr=h["lr"], decay=h["decay"],
                   eps=h["eps"], foreach=self.foreach)


class Adagrad(Solver):
    r"""AdaGrad: :math:`G \leftarrow G + g^2;\ w \leftarrow w - \eta g / (\sqrt G + \epsilon)`.

    Example: ``S.Adagrad(lr=1e-2)``.
    """

    _state_names = ("v",)

    def __init__(self, lr: float = 1e-2, eps: float = 1e-8):
        super().__init__(lr=lr, eps=eps)

    def _step(self, names, params, grads):
        h = self.hyper
        Fn.adagrad(params, grads, self._state_list(names, "v"), lr=h["lr"], eps=h["eps"],
                   foreach=self.foreach)


class Adadelta(Solver):
    r"""AdaDelta (Zeiler): updates scaled by :math:`RMS[\Delta w] / RMS[g]`.

    Example: ``S.Adadelta()``.
    """

    _state_names = ("e_g", "e_x")

    def __init__(self, lr: float = 1.0, decay: float = 0.95, eps: float = 1e-6):
        super().__init__(lr=lr, decay=decay, eps=eps)

    def _step(self, names, params, grads):
        h = self.hyper
        Fn.adadelta(params, grads, self._state_list(names, "e_g"), self._state_list(names, "e_x"),
                    lr=h["lr"], decay=h["decay"], eps=h["eps"], foreach=self.foreach)


class Lion(Solver):
    r"""Lion: :math:`w \leftarrow w - \eta\,\mathrm{sign}(\beta_1 m + (1-\beta_1) g);\
    m \leftarrow \beta_2 m + (1-\beta_2) g`.

    Example: ``S.Lion(lr=1e-4)``.
    """

    _state_names = ("m",)

    def __init__(self, lr: float = 1e-4, beta1: float = 0.9, beta2: float = 0.99):
        super().__init__(lr=lr, beta1=beta1, beta2=beta2)

    def _step(self, names, params, grads):
        h = self.hyper
        Fn.lion(params, grads, self._state_list(names, "m"), lr=h["lr"], beta1=h["beta1"],
                beta2=h["beta2"], foreach=self.foreach)
