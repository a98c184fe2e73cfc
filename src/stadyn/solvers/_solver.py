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
import numbers
import os
from collections import OrderedDict
from typing import Any, Mapping

import torch

from .._errors import ArgumentError, ModelFileError, ParameterError, StadynError
from .._fileutil import atomic_write
from ..graph import Variable, release_grads
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
        self.hyper: dict[str, float] = {key: self._checked_hyper(key, value)
                                        for key, value in hyper.items()}
        self._initial_lr = self.hyper.get(self._lr_name, 0.0)
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
            old = self._params.get(name)
            if old is not None and retain_state and name in self._states:
                if old.shape != var.shape:  # NNabla's check: the state must fit the new one
                    raise ParameterError(f"{self.name}.set_parameters: cannot retain the state "
                                         f"of '{name}': shape {var.shape} != {old.shape}")
            else:
                self._states[name] = self._init_state(var.data)
            self._params[name] = var

    def remove_parameters(self, keys) -> None:
        for k in keys:
            self._params.pop(k, None)
            self._states.pop(k, None)

    def clear_parameters(self) -> None:
        self._params.clear()
        self._states.clear()

    def get_parameters(self) -> "OrderedDict[str, Variable]":
        return OrderedDict(self._params)

    def _checked_hyper(self, key: str, value: Any) -> float:
        """``value`` of hyperparameter ``key`` as a float: a finite number, a learning rate not
        negative.  The constructor's rule, also applied to every loaded state."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ArgumentError(f"{self.name}: {key} must be a number, got {value!r}")
        value = float(value)
        if not math.isfinite(value):
            raise StadynError(f"{self.name}: {key} must be finite, got {value}")
        if key == self._lr_name and value < 0:
            raise StadynError(f"{self.name}: invalid learning rate {value}")
        return value

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
        """Forget the gradients (parameters whose gradient is not recomputed are not updated).

        Their buffers go back to the graph (:func:`stadyn.graph.release_grads`): the next
        backward may write into them, so a former gradient tensor must not be relied on.
        """
        release_grads(self._params.values())

    @torch.no_grad()
    def update(self) -> None:
        """Apply one step to every parameter that has a gradient."""
        names, params, grads = self._with_grad()
        if not names:
            return
        for name in names:
            self._states[name]["t"] += 1
        states = {key: self._state_list(names, key) for key in self._state_names}
        self._update(params, grads, states, self._step_scalars(names), self.foreach)
        self._end_step()

    def _end_step(self) -> None:
        """Bookkeeping after a step (also called by a compiled step, which bypasses update)."""

    def _step_scalars(self, names: list[str]) -> dict[str, Any]:
        """Hyperparameter values for this step that may change between steps (learning rates,
        bias-corrected step sizes): floats, or lists with one value per parameter."""
        return {self._lr_name: self.hyper[self._lr_name]}

    def _update(self, params: list[torch.Tensor], grads: list[torch.Tensor],
                states: dict[str, list[torch.Tensor]], scalars: dict[str, Any],
                foreach: bool) -> None:  # pragma: no cover - abstract
        """One step of the solver's maths.  ``scalars`` come from :meth:`_step_scalars`, or are
        0-d tensors when a compiled step feeds them."""
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
        self.hyper[self._lr_name] = self._checked_hyper(self._lr_name, learning_rate)

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
        """Set per-parameter state (``{name: {state: tensor, "t": steps}}``, as
        :meth:`get_states` gives); all of it is checked before any of it is set."""
        self._assign_states(self._checked_states(states))

    def _checked_states(self, states: Mapping[str, Mapping[str, Any]]
                        ) -> dict[str, dict[str, Any]]:
        """``states`` checked against the parameters (known names and states, shapes, finite
        values, step counts), as tensors; nothing is changed."""
        if not isinstance(states, Mapping):
            raise StadynError(f"{self.name}: the states must be a mapping, not "
                              f"{type(states).__name__}")
        checked: dict[str, dict[str, Any]] = {}
        for name, state in states.items():
            if name not in self._params:
                raise ParameterError(f"{self.name}.set_states: unknown parameter '{name}'")
            mine = self._states[name]
            out: dict[str, Any] = {}
            for key, value in state.items():
                where = f"{self.name} state '{name}/{key}'"
                if key == "t":
                    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
                            or value < 0:
                        raise StadynError(f"{where}: a step count must be an integer >= 0, got "
                                          f"{value!r}")
                    out["t"] = int(value)
                    continue
                if key not in mine:
                    raise ParameterError(f"{where}: {self.name} keeps no state '{key}' (it keeps "
                                         f"{list(self._state_names)})")
                tensor = torch.as_tensor(value)
                if tuple(tensor.shape) != tuple(mine[key].shape):
                    raise ParameterError(f"{where} has shape {tuple(tensor.shape)}, expected "
                                         f"{tuple(mine[key].shape)}")
                if not tensor.dtype.is_floating_point:
                    raise StadynError(f"{where} has dtype {tensor.dtype}, not a float type")
                if not bool(torch.isfinite(tensor).all()):
                    raise StadynError(f"{where} holds a NaN or an infinity")
                out[key] = tensor
            checked[name] = out
        return checked

    def _assign_states(self, checked: Mapping[str, Mapping[str, Any]]) -> None:
        for name, state in checked.items():
            mine = self._states[name]
            for key, value in state.items():
                if key == "t":
                    mine["t"] = value
                else:
                    mine[key].copy_(value)

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: hyperparameters, step counts and state tensors."""
        return {"solver": self.name, "hyper": dict(self.hyper),
                "t": {k: s["t"] for k, s in self._states.items()},
                "tensors": {f"{k}/{n}": s[n] for k, s in self._states.items()
                            for n in self._state_names}}

    def check_state_dict(self, state: Mapping[str, Any]) -> None:
        """Raise the error :meth:`load_state_dict` would raise for ``state``; change nothing.
        (The Trainer checks every part of a checkpoint before it restores any.)"""
        self._checked_state_dict(state)

    def _checked_state_dict(self, state: Mapping[str, Any]
                            ) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
        if not isinstance(state, Mapping):
            raise StadynError(f"{self.name}: a solver state must be a mapping, not "
                              f"{type(state).__name__}")
        if state.get("solver") not in (None, self.name):
            raise StadynError(f"cannot load {state.get('solver')} state into {self.name}")
        hyper = state.get("hyper", {})
        steps = state.get("t", {})
        tensors = state.get("tensors", {})
        for part, value in (("hyper", hyper), ("t", steps), ("tensors", tensors)):
            if not isinstance(value, Mapping):
                raise StadynError(f"{self.name}: the state's '{part}' must be a mapping, not "
                                  f"{type(value).__name__}")
        unknown = sorted(set(hyper) - set(self.hyper))
        if unknown:
            raise StadynError(f"{self.name}: the state has hyperparameters {unknown} this "
                              f"solver does not take (it takes {sorted(self.hyper)})")
        checked_hyper = {key: self._checked_hyper(key, value) for key, value in hyper.items()}
        merged: dict[str, dict[str, Any]] = {}
        for key, tensor in tensors.items():
            name, _, sub = str(key).rpartition("/")
            merged.setdefault(name, {})[sub] = tensor
        for name, t in steps.items():
            merged.setdefault(name, {})["t"] = t
        return checked_hyper, self._checked_states(merged)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`; the hyperparameters pass the constructor's checks and
        the state fits the parameters, or nothing is changed."""
        hyper, states = self._checked_state_dict(state)
        self.hyper.update(hyper)
        self._assign_states(states)

    def save_states(self, path: str | os.PathLike) -> None:
        """Write the state to a safetensors file (atomically: temporary name, then rename)."""
        from safetensors.torch import save_file
        state = self.state_dict()
        meta = {"format": "stadyn-solver-states", "version": "1",
                "solver": state["solver"], "hyper": json.dumps(state["hyper"]),
                "t": json.dumps(state["t"])}
        tensors = {k: v.detach().cpu().contiguous() for k, v in state["tensors"].items()}
        atomic_write(path, lambda tmp: save_file(tensors, tmp, metadata=meta))

    def load_states(self, path: str | os.PathLike, *, name: str | None = None) -> None:
        """Read a state file written by :meth:`save_states`; everything in it is checked (the
        constructor's rules for the hyperparameters, the parameters' shapes for the state)
        before anything is set.  Errors are :class:`~stadyn.ModelFileError` naming the file
        (``name``, when given, instead of ``path``)."""
        from safetensors import safe_open
        where = name or os.fspath(path)
        try:
            with safe_open(os.fspath(path), framework="pt") as f:
                meta = f.metadata() or {}
                tensors = {k: f.get_tensor(k) for k in f.keys()}
        except Exception as exc:  # safetensors raises several types for bad files
            raise ModelFileError(f"{where}: not a solver state file ({exc})") from exc
        if meta.get("format") != "stadyn-solver-states":
            raise ModelFileError(f"{where}: not a Stadyn solver state file")
        try:
            hyper, steps = json.loads(meta["hyper"]), json.loads(meta["t"])
        except (KeyError, ValueError) as exc:
            raise ModelFileError(f"{where}: damaged solver state metadata "
                                 f"({type(exc).__name__}: {exc})") from exc
        try:
            self.load_state_dict({"solver": meta.get("solver"), "hyper": hyper, "t": steps,
                                  "tensors": tensors})
        except StadynError as exc:
            raise ModelFileError(f"{where}: {exc}") from exc


# ---------------------------------------------------------------------------------------------
class Sgd(Solver):
    r"""Stochastic gradient descent: :math:`w \leftarrow w - \eta g`.

    Example: ``S.Sgd(lr=0.1)``.
    """

    def __init__(self, lr: float = 1e-3):
        super().__init__(lr=lr)

    def _update(self, params, grads, states, scalars, foreach):
        Fn.sgd(params, grads, lr=scalars["lr"], foreach=foreach)


class Momentum(Solver):
    r"""SGD with momentum: :math:`v \leftarrow \gamma v + \eta g;\ w \leftarrow w - v`.

    Example: ``S.Momentum(lr=0.01, momentum=0.9)``.
    """

    _state_names = ("v",)

    def __init__(self, lr: float = 1e-3, momentum: float = 0.9):
        super().__init__(lr=lr, momentum=momentum)

    def _update(self, params, grads, states, scalars, foreach):
        Fn.momentum(params, grads, states["v"], momentum=self.hyper["momentum"],
                    gain=scalars["lr"], foreach=foreach)


class Nesterov(Solver):
    r"""Nesterov accelerated gradient: :math:`v \leftarrow \gamma v - \eta g;\
    w \leftarrow w - \gamma v_{old} + (1 + \gamma) v` (stored with the opposite sign).

    Example: ``S.Nesterov(lr=0.01, momentum=0.9)``.
    """

    _state_names = ("v",)

    def __init__(self, lr: float = 1e-3, momentum: float = 0.9):
        super().__init__(lr=lr, momentum=momentum)

    def _update(self, params, grads, states, scalars, foreach):
        Fn.nesterov(params, grads, states["v"], momentum=self.hyper["momentum"],
                    gain=scalars["lr"], foreach=foreach)


class Adam(Solver):
    r"""Adam (NNabla's form): :math:`m \leftarrow \beta_1 m + (1-\beta_1) g;\
    v \leftarrow \beta_2 v + (1-\beta_2) g^2;\
    w \leftarrow w - \alpha \frac{\sqrt{1-\beta_2^t}}{1-\beta_1^t} \frac{m}{\sqrt v + \epsilon}`.

    On CPU and CUDA the step runs in torch's fused Adam kernel (one pass over memory, with
    ``eps`` rescaled so the formula is NNabla's); ``solver.fused = False`` selects the
    multi-tensor path.

    Example: ``S.Adam(alpha=1e-3)``.
    """

    _state_names = ("m", "v")
    _lr_name = "alpha"
    bias_correction = True

    def __init__(self, alpha: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8):
        super().__init__(alpha=alpha, beta1=beta1, beta2=beta2, eps=eps)
        self.fused = True

    def _step_scalars(self, names):
        h = self.hyper
        steps = []
        for n in names:
            t = self._states[n]["t"]
            if self.bias_correction:
                steps.append(h["alpha"] * math.sqrt(1.0 - h["beta2"] ** t)
                             / (1.0 - h["beta1"] ** t))
            else:
                steps.append(h["alpha"])
        ts = {self._states[n]["t"] for n in names}
        scalars: dict[str, Any] = {"step_size": steps[0] if len(set(steps)) == 1 else steps}
        if self._decay():
            scalars["decay"] = self._decay()
        if len(ts) == 1:
            scalars["t"] = ts.pop()
        return scalars

    def _decay(self) -> float:
        return 0.0

    def _update(self, params, grads, states, scalars, foreach):
        h = self.hyper
        v_max = states.get("v_hat")
        step, decay = scalars["step_size"], scalars.get("decay", 0.0)
        one_step = isinstance(step, (float, torch.Tensor))       # not a per-parameter list
        if self.fused and foreach and one_step and isinstance(decay, float) \
                and Fn.fused_adam_available(params):
            Fn.fused_adam(params, grads, states["m"], states["v"], step_size=step,
                          beta1=h["beta1"], beta2=h["beta2"], eps=h["eps"], v_max=v_max,
                          decoupled_decay=decay)
            return
        Fn.adam(params, grads, states["m"], states["v"], step_size=scalars["step_size"],
                beta1=h["beta1"], beta2=h["beta2"], eps=h["eps"], v_max=v_max,
                decoupled_decay=scalars.get("decay", 0.0), foreach=foreach)


class AdamW(Adam):
    r"""Adam with decoupled weight decay: Adam's step, then
    :math:`w \leftarrow w - \eta_t \lambda w_{old}` with :math:`\eta_t = \alpha / \alpha_0`.

    Example: ``S.AdamW(alpha=1e-3, wd=1e-4)``.
    """

    def __init__(self, alpha: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8, wd: float = 1e-4):
        Solver.__init__(self, alpha=alpha, beta1=beta1, beta2=beta2, eps=eps, wd=wd)
        self.fused = True

    def _decay(self) -> float:
        h = self.hyper
        eta = h["alpha"] / self._initial_lr if self._initial_lr else 1.0
        return eta * h["wd"]


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
        self.fused = True


class RMSprop(Solver):
    r"""RMSprop: :math:`v \leftarrow \gamma v + (1-\gamma) g^2;\
    w \leftarrow w - \eta g / (\sqrt v + \epsilon)`.

    Example: ``S.RMSprop(lr=1e-3)``.
    """

    _state_names = ("v",)

    def __init__(self, lr: float = 1e-3, decay: float = 0.9, eps: float = 1e-8):
        super().__init__(lr=lr, decay=decay, eps=eps)

    def _update(self, params, grads, states, scalars, foreach):
        h = self.hyper
        Fn.rmsprop(params, grads, states["v"], lr=scalars["lr"], decay=h["decay"], eps=h["eps"],
                   foreach=foreach)


class Adagrad(Solver):
    r"""AdaGrad: :math:`G \leftarrow G + g^2;\ w \leftarrow w - \eta g / (\sqrt G + \epsilon)`.

    Example: ``S.Adagrad(lr=1e-2)``.
    """

    _state_names = ("v",)

    def __init__(self, lr: float = 1e-2, eps: float = 1e-8):
        super().__init__(lr=lr, eps=eps)

    def _update(self, params, grads, states, scalars, foreach):
        Fn.adagrad(params, grads, states["v"], lr=scalars["lr"], eps=self.hyper["eps"],
                   foreach=foreach)


class Adadelta(Solver):
    r"""AdaDelta (Zeiler): updates scaled by :math:`RMS[\Delta w] / RMS[g]`.

    Example: ``S.Adadelta()``.
    """

    _state_names = ("e_g", "e_x")

    def __init__(self, lr: float = 1.0, decay: float = 0.95, eps: float = 1e-6):
        super().__init__(lr=lr, decay=decay, eps=eps)

    def _update(self, params, grads, states, scalars, foreach):
        h = self.hyper
        Fn.adadelta(params, grads, states["e_g"], states["e_x"], lr=scalars["lr"],
                    decay=h["decay"], eps=h["eps"], foreach=foreach)


class Lion(Solver):
    r"""Lion: :math:`w \leftarrow w - \eta\,(\mathrm{sign}(\beta_1 m + (1-\beta_1) g) +
    \lambda w);\ m \leftarrow \beta_2 m + (1-\beta_2) g`.

    As in NNabla, weight decay is fused into the update: :meth:`weight_decay` sets
    :math:`\lambda` for the next :meth:`update` only (added to the gradient, it would vanish in
    the sign).

    Example: ``S.Lion(lr=1e-4)``.
    """

    _state_names = ("m",)

    def __init__(self, lr: float = 1e-4, beta1: float = 0.9, beta2: float = 0.99):
        super().__init__(lr=lr, beta1=beta1, beta2=beta2)
        self._next_decay = 0.0

    def weight_decay(self, decay_rate: float) -> None:
        """Decay the weights by ``lr * decay_rate * w`` in the next :meth:`update`."""
        self._next_decay = float(decay_rate)

    def _end_step(self) -> None:
        self._next_decay = 0.0

    def _step_scalars(self, names):
        return {"lr": self.hyper["lr"], "weight_decay": self._next_decay}

    def _update(self, params, grads, states, scalars, foreach):
        h = self.hyper
        Fn.lion(params, grads, states["m"], lr=scalars["lr"], beta1=h["beta1"], beta2=h["beta2"],
                weight_decay=scalars["weight_decay"], foreach=foreach)
