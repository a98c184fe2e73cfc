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

import functools
import math
import numbers
from collections import OrderedDict
from typing import Any, Mapping

import torch

from .._errors import ArgumentError, DeprecatedCallError, ParameterError, StadynError
from ..graph import Variable, data_of, grad_of, is_released, is_zeroing, value_holder
from . import _functional as Fn
from ._float32_kernels import clip_grad_by_norm_blocks, sgd_blocks, weight_decay_blocks
from ._functional_nnabla import (adam_nnabla, clip_grad_by_norm_nnabla, momentum_nnabla,
                                 nesterov_nnabla, weight_decay_nnabla)
from ._functional_nnabla_plain import sgd_nnabla
from ._hooks import hooked, updated
from ._optimizer import Optimizer
from ._param_order import MapOrder, initializer_list_order
from ._scalars import float32
from ._solver_states import (STATE_FILE_FORMAT, SolverState, SolverStates,  # noqa: F401
                             UnknownParameterError)
from ._state_layout import new_states

__all__ = ["Solver", "SolverState", "Sgd", "Momentum", "Nesterov", "Adam", "AdamW", "AMSGRAD",
           "AMSGrad"]


@functools.lru_cache(maxsize=None)
def _initializer_list_order(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(initializer_list_order(names))


def _as_float32(var: Variable) -> tuple[torch.Tensor, torch.Tensor]:
    """Cast the array ``var`` reads (its holder's, for a view) to float32 in place, its
    gradient too; returns both."""
    holder = value_holder(var)
    grad = grad_of(var)
    Variable.data.fset(holder, data_of(holder).detach().to(torch.float32))
    grad = grad.to(torch.float32)
    Variable.grad.fset(holder, grad)
    return data_of(var), grad


class Solver(SolverStates, Optimizer):
    """Base class: parameters by name, per-parameter state, NNabla's solver methods.

    Subclasses declare ``_state_names`` (NNabla's names for the state) and implement
    :meth:`apply_step`, which calls one function of :mod:`stadyn.solvers.functional` on the
    parameters that have a gradient.  A compiled step takes the values of
    :meth:`step_scalars` as 0-d tensors; the other hyperparameters (``_scalar_hypers`` lists
    the ones the scalars carry) are constants of its program.
    """

    _state_names: tuple[str, ...] = ()
    # State names files written before the names became NNabla's still load: {old: new}.
    _former_state_names: dict[str, str] = {}
    _lr_name = "lr"
    _scalar_hypers: tuple[str, ...] = ("lr",)
    _fused_weight_decay = False          # weight_decay(rate) acts inside the next update only
    _former_names: tuple[str, ...] = ()  # names this solver's state files were written under

    def __init__(self, **hyper: float):
        self.hyper: dict[str, float] = {key: self._checked_hyper(key, value)
                                        for key, value in hyper.items()}
        self._initial_lr = self.hyper.get(self._lr_name, 0.0)
        self.foreach = True
        self._params: OrderedDict[str, Variable] = OrderedDict()
        # NNabla's two unordered_maps (solver.hpp:113-116): their orders are get_parameters',
        # the hooks' and Lars' error's (params_), get_states' and the state files' (states_)
        self._map_order = MapOrder()
        self._state_order = MapOrder()
        self._states: dict[str, dict[str, Any]] = {}
        self._next_decay: float | None = None
        self._state_version = 0

    # -- parameters -----------------------------------------------------------------------------
    def set_parameters(self, param_dict: Mapping[str, Variable], reset: bool = True,
                       retain_state: bool = False) -> None:
        """Set the parameters to update.

        ``reset`` replaces the set, dropping all state; ``reset=False`` adds the given ones, but a
        known name keeps its Variable (NNabla 1.39's) and, with ``retain_state``, its state.
        Without ``retain_state`` a known name's state is erased and made again, as NNabla's
        ``Solver::set_parameters`` does (``src/nbla/solver.cpp:107-131``): it may move in
        :meth:`get_states`' order, not in :meth:`get_parameters`'.
        """
        if reset:
            self.clear_parameters()
        fresh: list[str] = []
        try:
            for name, var in param_dict.items():
                if not isinstance(var, Variable):
                    raise ParameterError(f"solver parameter '{name}' is a "
                                         f"{type(var).__name__}, not a Variable")
                old = self._params.get(name)
                if old is not None and retain_state and name in self._states:
                    if old.shape != var.shape:  # NNabla's check: the state must fit the new one
                        raise ParameterError(f"{self.name}.set_parameters: cannot retain the "
                                             f"state of '{name}': shape {var.shape} != "
                                             f"{old.shape}")
                    continue
                self._params[name] = var if old is None else old
                self._map_order.insert(name)
                if old is not None:
                    self._state_order.erase(name)
                self._state_order.insert(name)
                fresh.append(name)
        finally:                   # (those set before an error keep their state, as before)
            self._states.update(self._init_states(fresh))

    def remove_parameters(self, keys) -> None:
        for k in keys:
            self._params.pop(k, None)
            self._map_order.erase(k)
            self._state_order.erase(k)
            self._states.pop(k, None)

    def clear_parameters(self) -> None:
        self._params.clear()
        self._map_order.clear()
        self._state_order.clear()
        self._states.clear()

    def get_parameters(self) -> "OrderedDict[str, Variable]":
        """The parameters by name, in NNabla 1.39's order: its ``unordered_map``'s
        (:class:`~stadyn.solvers._param_order.MapOrder`; ``a, b, c`` set in a new solver are
        listed ``c, b, a``), not the order they were given in.

        Example:
            >>> import numpy as np, stadyn as sd, stadyn.solvers as S
            >>> s = S.Sgd()
            >>> s.set_parameters({k: sd.Variable.from_numpy_array(np.zeros(2)) for k in "abc"})
            >>> list(s.get_parameters())
            ['c', 'b', 'a']
        """
        return OrderedDict((name, self._params[name]) for name in self._map_order.order())

    def named_parameters(self) -> "OrderedDict[str, Variable]":
        """The parameters by name in the order they were set (the optimizer protocol's; the
        order an update works in): :meth:`get_parameters` lists them in NNabla's."""
        return OrderedDict(self._params)

    def _checked_hyper(self, key: str, value: Any) -> float:
        """``value`` of hyperparameter ``key`` as a float: a finite number.  The constructor's
        rule, also applied to every loaded state.  A negative learning rate is taken, as
        NNabla 1.39 takes it (gradient ascent: ``Sgd(-0.1)`` moves ``1`` with gradient ``0.5``
        to ``1.05``; ``set_learning_rate(-1.0)`` too)."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ArgumentError(f"{self.name}: {key} must be a number, got {value!r}")
        value = float(value)
        if not math.isfinite(value):
            raise StadynError(f"{self.name}: {key} must be finite, got {value}")
        return value

    def _init_states(self, names: list[str]) -> dict[str, dict[str, Any]]:
        """Fresh states (zeros, ``t`` 0) of parameters ``names``: float32 tensors shaped as
        each parameter, each state name's tensors of contiguous CPU parameters end to end in
        one buffer (:func:`~stadyn.solvers.new_states`: the exact blocks read a run of small
        ones as one array instead of copying them in and out).  Each state lists its names in
        NNabla 1.39's order (:meth:`_pstate_order`)."""
        fresh = new_states([data_of(self._params[n]) for n in names], self._pstate_order(),
                           dtype=torch.float32)
        return {n: {**state, "t": 0} for n, state in zip(names, fresh)}

    def _pstate_order(self) -> tuple[str, ...]:
        """The solver's state names in the order of NNabla 1.39's ``pstate`` map, made from an
        initializer list in its ``set_state_impl`` (Adam's ``['var', 'mean']``,
        RMSpropGraves' ``['g', 'd', 'n']``: :func:`~stadyn.solvers._param_order.
        initializer_list_order`)."""
        return _initializer_list_order(tuple(self._state_names))

    def _with_grad(self, allocate: bool = True
                   ) -> tuple[list[str], list[torch.Tensor], list[torch.Tensor]]:
        """The parameters to update: all but those whose gradient is ``zeroing`` (NNabla
        1.39's ``Solver::update``, ``weight_decay``, ``clip_grad_by_norm``, ``scale_grad`` and
        the checks skip a gradient zeroed -- ``zero_grad``, ``x.grad.zero()`` -- and not
        written since, ``src/nbla/solver.cpp:213-340``).  A gradient never written is not
        zeroing there (``SyncedArray``'s constructor, ``src/nbla/synced_array.cpp:68-69``):
        NNabla reads it as zeros, decays and updates with it (``Sgd(lr=1).weight_decay(0.5)``
        takes an untouched ``[1, 1]`` to ``[0.5, 0.5]``); ``allocate`` gives such a parameter
        its zero gradient here, else (the read-only checks, and clipping and scaling, which
        leave zeros as they are) it is left out.  A parameter holding integers
        (``PF.mean_subtraction``'s int32 ``t``) is cast to float32 in place first, as NNabla's
        solvers read it with ``cast_data_and_get_pointer<float>``."""
        names, params, grads = [], [], []
        for name, var in self._params.items():
            g = grad_of(var)
            if g is None:
                if not allocate or is_released(var):
                    continue
                g = torch.zeros_like(data_of(var), requires_grad=False)
                Variable.grad.fset(var, g)
                g = grad_of(var)
            elif is_zeroing(g):
                continue
            t = data_of(var)
            if t is not None and not (t.is_floating_point() or t.is_complex()):
                t, g = _as_float32(var)
            names.append(name)
            params.append(t.detach())
            grads.append(g)
        return names, params, grads

    def _hook_order(self) -> list[str]:
        """The parameters NNabla's loops visit, in their order (:func:`~stadyn.solvers._hooks.
        hooked`): those of its map whose gradient is not ``zeroing`` (one never written is
        visited)."""
        out = []
        for name in self._map_order.order():
            var = self._params[name]
            g = grad_of(var)
            if not (is_released(var) if g is None else is_zeroing(g)):
                out.append(name)
        return out

    # -- NNabla's solver methods ----------------------------------------------------------------
    @hooked(local=("update_pre_hook", "update_post_hook"))
    def update(self) -> None:
        """Apply one step to every parameter that has a gradient (:meth:`step` runs it without
        gradients; a second no_grad context here cost every update a few microseconds)."""
        self.step(1)

    @torch.no_grad()
    def step(self, sample_count: int = 1) -> bool:
        """:meth:`update` (the optimizer protocol's name; an NNabla solver applies its rate to
        whatever gradient the loss gave, so ``sample_count`` is not used).  Returns whether a
        parameter had a gradient."""
        names, params, grads = self._with_grad()
        if not names:
            self._next_decay = None     # NNabla resets a fused decay after every update
            return False                # (solver.cpp:230, "Always reset weight decay")
        scalars = self.step_scalars(names, sample_count)
        self.apply_step(params, grads, self.state_tensors(names), scalars)
        self.finish_step(names, sample_count, scalars)
        updated(self._params, names)
        return True

    # -- the optimizer protocol's three parts of a step -----------------------------------------
    def state_names(self) -> tuple[str, ...]:
        return tuple(self._state_names)

    def state_tensors(self, names: list[str]) -> dict[str, list[torch.Tensor]]:
        try:
            return {key: [self._states[n][key] for n in names] for key in self._state_names}
        except KeyError:            # set_states gave a parameter another solver's states
            for n in names:
                for key in self._state_names:
                    if key not in self._states[n]:
                        raise self._missing_state(n, key) from None
            raise

    def step_scalars(self, names: list[str], sample_count: int = 1) -> dict[str, Any]:
        """The values of this step (each parameter's ``t`` counts it) that may change between
        steps: the learning rate and what derives from it (floats, or lists with one value per
        parameter)."""
        return self._scalars([self._states[n]["t"] + 1 for n in names])

    def _scalars(self, steps: list[int]) -> dict[str, Any]:
        """:meth:`step_scalars` for parameters at step counts ``steps`` (counting this one)."""
        return {self._lr_name: self.hyper[self._lr_name]}

    def finish_step(self, names: list[str], sample_count: int, scalars: Mapping[str, Any]
                    ) -> None:
        """Count the step of each parameter updated; forget a fused weight decay."""
        for name in names:
            self._states[name]["t"] += 1
        self._next_decay = None

    @hooked(unless=lambda self, decay_rate: self._fused_weight_decay or decay_rate == 0)
    @torch.no_grad()
    def weight_decay(self, decay_rate: float) -> None:
        """Add ``decay_rate * w`` to each gradient (L2 regularisation).  Solvers whose decay is
        fused into the update (:meth:`weight_decay_is_fused`: AdamW, Lion) leave the gradients
        alone and decay the weights by ``decay_rate`` in the next :meth:`update` only."""
        if self._fused_weight_decay:
            self._next_decay = float(decay_rate)
            return
        _, params, grads = self._with_grad()
        if grads and decay_rate and not weight_decay_blocks(grads, params, rate=decay_rate):
            weight_decay_nnabla(grads, params, rate=decay_rate)

    def weight_decay_is_fused(self) -> bool:
        """Whether :meth:`weight_decay` acts inside the next update (NNabla's name)."""
        return self._fused_weight_decay

    @hooked
    @torch.no_grad()
    def scale_grad(self, scale: float) -> None:
        """Multiply every gradient by ``scale`` (NNabla's ``scale_grad``)."""
        _, _, grads = self._with_grad(allocate=False)
        if grads and scale != 1:
            torch._foreach_mul_(grads, float(scale))

    @hooked(unless=lambda self, clip_norm: clip_norm == 0)
    @torch.no_grad()
    def clip_grad_by_norm(self, clip_norm: float) -> None:
        """Rescale each parameter's gradient whose norm exceeds ``clip_norm`` (per parameter),
        to ``clip_norm * g / norm``, as NNabla compares: the sum of squares with
        ``clip_norm ** 2`` (a negative ``clip_norm`` leaves a shorter gradient alone and turns a
        longer one around).  ``clip_norm=0`` leaves the gradients as they are, as NNabla's
        ``Solver::clip_grad_by_norm`` does (src/nbla/solver.cpp:259, ``if (norm == 0)
        return;``): scripts pass 0 for "no clipping"."""
        _, _, grads = self._with_grad(allocate=False)
        if grads and clip_norm != 0 and not clip_grad_by_norm_blocks(grads, clip_norm=clip_norm):
            clip_grad_by_norm_nnabla(grads, clip_norm=clip_norm)

    @hooked
    @torch.no_grad()
    def check_inf_or_nan_grad(self) -> bool:
        """True if any gradient holds an inf or a NaN."""
        _, _, grads = self._with_grad(allocate=False)
        return any(not bool(torch.isfinite(g).all()) for g in grads)

    @hooked
    @torch.no_grad()
    def check_inf_grad(self) -> bool:
        """True if any gradient holds an inf (of either sign)."""
        _, _, grads = self._with_grad(allocate=False)
        return any(bool(torch.isinf(g).any()) for g in grads)

    @hooked
    @torch.no_grad()
    def check_nan_grad(self) -> bool:
        """True if any gradient holds a NaN."""
        _, _, grads = self._with_grad(allocate=False)
        return any(bool(torch.isnan(g).any()) for g in grads)

    def setup(self, params: Any = None) -> None:
        """Refused, as NNabla 1.39 refuses it: call :meth:`set_parameters`."""
        raise DeprecatedCallError(f"{self.name}.setup is deprecated (NNabla refuses it too); "
                                  "call set_parameters(param_dict)")

    @property
    def info(self) -> dict[str, Any]:
        """The hyperparameters by NNabla's names, as the float32 values NNabla 1.39 keeps
        (``{'alpha': 0.0010000000474974513, ...}``), with the solver's options."""
        return {**{k: float32(v) for k, v in self.hyper.items()}, **self._options()}

    def _options(self) -> dict[str, Any]:
        """The solver's non-numeric options, as :attr:`info` lists them."""
        return {}

    def learning_rate(self) -> float:
        """The learning rate as NNabla 1.39 gives it: a Python float of the float32 it keeps
        (``0.10000000149011612`` after ``set_learning_rate(0.1)``)."""
        return float32(self.hyper[self._lr_name])

    @property
    def lr_name(self) -> str:
        """The name of the learning rate among :attr:`hyper` (``lr``; Adam's ``alpha``)."""
        return self._lr_name

    @property
    def scalar_hypers(self) -> tuple[str, ...]:
        """The hyperparameters :meth:`step_scalars` carries, so a compiled step follows their
        changes; it holds the others as constants."""
        return self._scalar_hypers

    def set_learning_rate(self, learning_rate: float) -> None:
        self.hyper[self._lr_name] = self._checked_hyper(self._lr_name, learning_rate)

    @property
    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        hyper = ", ".join(f"{k}={v}" for k, v in self.hyper.items())
        return f"{self.name}({hyper}) with {len(self._params)} parameters"


# ---------------------------------------------------------------------------------------------
class Sgd(Solver):
    r"""Stochastic gradient descent: :math:`w \leftarrow w - \eta g`.

    Example: ``S.Sgd(lr=0.1)``.
    """

    def __init__(self, lr: float = 1e-3):
        super().__init__(lr=lr)

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        if sgd_blocks(params, grads, lr=scalars["lr"]):
            return                       # on CPU: NNabla's arithmetic, bit for bit
        sgd_nnabla(params, grads, lr=scalars["lr"], foreach=self.foreach)


class Momentum(Solver):
    r"""SGD with momentum: :math:`m \leftarrow \gamma m + \eta g;\ w \leftarrow w - m`.

    Example: ``S.Momentum(lr=0.01, momentum=0.9)``.
    """

    _state_names = ("m",)
    _former_state_names = {"v": "m"}      # before NNabla's names

    def __init__(self, lr: float = 1e-3, momentum: float = 0.9):
        super().__init__(lr=lr, momentum=momentum)

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        momentum_nnabla(params, grads, states["m"], lr=scalars["lr"],
                        momentum=self.hyper["momentum"], foreach=self.foreach)


class Nesterov(Solver):
    r"""Nesterov accelerated gradient: :math:`m \leftarrow \gamma m - \eta g;\
    w \leftarrow w - \gamma m_{old} + (1 + \gamma) m`, rounded as NNabla 1.39 rounds it; its
    state ``m`` is NNabla's (the same sign: ``get_states``, ``.h5`` files).

    Example: ``S.Nesterov(lr=0.01, momentum=0.9)``.
    """

    _state_names = ("m",)
    _former_state_names = {"v": "m"}      # before NNabla's names
    # 2: m as NNabla keeps it (since mendD33); format 1 (Stadyn's files and state dicts from
    # before) kept -m
    _state_format = 2

    def _upgraded_states(self, states, written):
        if written < 2:
            states = {name: {k: (-v if k == "m" else v) for k, v in state.items()}
                      for name, state in states.items()}
        return states

    def __init__(self, lr: float = 1e-3, momentum: float = 0.9):
        super().__init__(lr=lr, momentum=momentum)

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        nesterov_nnabla(params, grads, states["m"], lr=scalars["lr"],
                        momentum=self.hyper["momentum"], foreach=self.foreach)


class Adam(Solver):
    r"""Adam (NNabla's form): :math:`m \leftarrow \beta_1 m + (1-\beta_1) g;\
    v \leftarrow \beta_2 v + (1-\beta_2) g^2;\
    w \leftarrow w - \alpha \frac{\sqrt{1-\beta_2^t}}{1-\beta_1^t} \frac{m}{\sqrt v + \epsilon}`
    (its state: ``mean`` is :math:`m`, ``var`` is :math:`v`).

    The step is NNabla 1.39's float32 arithmetic, bit for bit (``1 - beta1`` rounded to
    float32, one rounding per C++ operation: :func:`~stadyn.solvers._functional_nnabla.
    adam_nnabla`; on CPU in cache-sized NumPy blocks, cheaper than the fused kernel on the
    demo's CNN: docs/performance.md).  ``solver.fused = True`` runs torch's fused Adam kernel
    instead on CPU and CUDA (one pass over memory, NNabla's formula to a few units in the last
    place).

    Example: ``S.Adam(alpha=1e-3)``.
    """

    _state_names = ("mean", "var")
    _former_state_names = {"m": "mean", "v": "var"}      # before NNabla's names
    _lr_name = "alpha"
    _scalar_hypers = ("alpha",)
    bias_correction = True

    def __init__(self, alpha: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8):
        super().__init__(alpha=alpha, beta1=beta1, beta2=beta2, eps=eps)
        self.fused = False

    def _scalars(self, steps):
        h = self.hyper
        sizes = []
        alpha, beta1, beta2 = float32(h["alpha"]), float32(h["beta1"]), float32(h["beta2"])
        for t in steps:
            if self.bias_correction:
                # NNabla's alpha_t: the correction in double (std::pow of its float betas),
                # rounded to float, times its float alpha (adam.cpp:63-66)
                correction = float32(math.sqrt(1.0 - beta2 ** t) / (1.0 - beta1 ** t))
                sizes.append(float32(alpha * correction))
            else:
                sizes.append(alpha)
        scalars: dict[str, Any] = {"step_size": sizes[0] if len(set(sizes)) == 1 else sizes}
        decay = self._decay()
        if decay:
            scalars["decay"] = decay
        return scalars

    def _decay(self) -> float:
        return 0.0

    def _second_moments(self, states):
        return states["mean"], states["var"], None

    @property
    def fused_update(self) -> bool:
        # Either path is an eager kernel a compiled step on CPU runs after its program: torch's
        # fused one, or NNabla's float32 arithmetic (which inductor's loop would not keep bit
        # for bit: it may contract a product into its sum, and takes torch's inexact sqrt).
        return True

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        h = self.hyper
        m, v, v_max = self._second_moments(states)
        step, decay = scalars["step_size"], scalars.get("decay", 0.0)
        one_step = isinstance(step, (float, torch.Tensor))       # not a per-parameter list
        if fused and self.fused and self.foreach and one_step and isinstance(decay, float) \
                and Fn.fused_adam_available(params):
            Fn.fused_adam(params, grads, m, v, step_size=step, beta1=h["beta1"],
                          beta2=h["beta2"], eps=h["eps"], v_max=v_max, decoupled_decay=decay)
            return
        adam_nnabla(params, grads, m, v, step_size=step, beta1=h["beta1"], beta2=h["beta2"],
                    eps=h["eps"], v_max=v_max, decay=decay, foreach=self.foreach)


class AdamW(Adam):
    r"""Adam with decoupled weight decay: Adam's step, then
    :math:`w \leftarrow w - \eta_t \lambda w_{old}` with :math:`\eta_t = \alpha / \alpha_0`.

    As in NNabla, :meth:`weight_decay` is fused into the update: it leaves the gradients alone
    and makes the next :meth:`update` decay by its rate instead of ``wd``.

    Example: ``S.AdamW(alpha=1e-3, wd=1e-4)``.
    """

    _scalar_hypers = ("alpha", "wd")
    _fused_weight_decay = True

    def __init__(self, alpha: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8, wd: float = 1e-4):
        Solver.__init__(self, alpha=alpha, beta1=beta1, beta2=beta2, eps=eps, wd=wd)
        self.fused = False

    def _decay(self) -> float:
        h = self.hyper
        # NNabla's float eta_t = alpha / init_alpha, then (eta_t * wd) in float (adamw.cpp)
        eta = float32(float32(h["alpha"]) / float32(self._initial_lr)) \
            if self._initial_lr else 1.0
        return float32(eta * float32(h["wd"] if self._next_decay is None else self._next_decay))


class AMSGRAD(Adam):
    r"""AMSGRAD (NNabla's name): Adam with :math:`\hat v \leftarrow \max(\hat v, v)` in the
    denominator; bias correction off by default (NNabla).  Its state: ``m``, ``v``, ``v_hat``.
    ``AMSGrad`` is the same class.

    Example: ``S.AMSGRAD(alpha=1e-3)``.
    """

    _state_names = ("m", "v", "v_hat")
    _former_state_names = {}      # before NNabla's names
    _former_names = ("AMSGrad",)

    def __init__(self, alpha: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8, bias_correction: bool = False):
        Solver.__init__(self, alpha=alpha, beta1=beta1, beta2=beta2, eps=eps)
        self.bias_correction = bias_correction
        self.fused = False

    def _options(self) -> dict[str, Any]:
        return {"bias_correction": bool(self.bias_correction)}

    def _second_moments(self, states):
        return states["m"], states["v"], states["v_hat"]


AMSGrad = AMSGRAD
