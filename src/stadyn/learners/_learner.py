"""The learner base class: CNTK's bookkeeping around the solver maths of ``solvers/_functional``.

A learner is handed the **summed** gradient of an ``M``-sample minibatch.  Per update it

1. looks every schedule up with the samples seen *before* this minibatch and turns the values
   into this step's scalars (:meth:`Learner.step_scalars`: ``lr / R`` or ``lr / M``,
   ``m ** (M / R)``, ``T * M``, ``l2 * M``, ...) — plain Python;
2. runs the maths (:meth:`Learner.apply_step`: clipping -> L2 -> the learner's rule -> Gaussian
   noise -> L1), a function of tensors and those scalars only, so a compiled training step can
   trace it with the scalars as 0-d tensors;
3. counts the samples and the minibatch (:meth:`Learner.finish_step`).

These are the three parts of a step of the optimizer protocol
(:class:`stadyn.solvers.Optimizer`), which NNabla's solvers implement too.
"""

from __future__ import annotations

import contextvars
import math
import weakref
from typing import Any, Iterable, Mapping

import torch

from .._errors import ParameterError, StadynError
from .._errors import checked_count as _count
from ..graph import Variable, data_of, grad_of
from ..schedules import IGNORE, Schedule
from ..solvers import Optimizer, end_to_end, new_states
from ..solvers import functional as Fn
from ._checks import finite as _finite
from ._learner_checkpoints import UPDATE_COUNT_OFFSET, LearnerCheckpoints
from ._learner_schedules import LearnerSchedules
from ._row_sparse import RowSparseUpdates

__all__ = ["Learner", "default_unit_gain_value", "set_default_unit_gain_value"]

_UNIT_GAIN: contextvars.ContextVar[bool] = contextvars.ContextVar("stadyn_unit_gain", default=True)


def default_unit_gain_value() -> bool:
    """Whether momentum is unit-gain (``v = m v + (1 - m) lr g``) unless a learner is told.

    Example:
        >>> from stadyn.learners import default_unit_gain_value
        >>> default_unit_gain_value()
        True
    """
    return _UNIT_GAIN.get()


def set_default_unit_gain_value(value: bool) -> None:
    """Set the default of ``unit_gain`` for learners created afterwards (in this context).

    Unlike CNTK, whose Python default was frozen when the module was imported, Stadyn's learners
    read the default when they are created (``unit_gain=None``).

    Example:
        >>> from stadyn.learners import default_unit_gain_value, set_default_unit_gain_value
        >>> set_default_unit_gain_value(False); default_unit_gain_value()
        False
        >>> set_default_unit_gain_value(True)
    """
    _UNIT_GAIN.set(bool(value))


def _parameter_list(parameters: Any, owner: str) -> tuple[list[str], list[Variable]]:
    if isinstance(parameters, Variable):
        parameters = [parameters]
    if isinstance(parameters, Mapping):
        names, params = [str(k) for k in parameters], list(parameters.values())
    elif isinstance(parameters, Iterable):
        params = list(parameters)
        names = [str(i) for i in range(len(params))]
    else:
        raise ParameterError(f"{owner}: parameters must be a list or dict of Variables, got "
                             f"{type(parameters).__name__}")
    if not params:
        raise ParameterError(f"{owner}: no parameters to learn")
    for name, p in zip(names, params):
        if not isinstance(p, Variable):
            raise ParameterError(f"{owner}: parameter {name} is a {type(p).__name__}, not a "
                                 "Variable")
        if not data_of(p).dtype.is_floating_point:
            raise ParameterError(f"{owner}: parameter {name} has dtype {data_of(p).dtype}; only "
                                 "floating-point parameters can be learned")
    if len({id(p) for p in params}) != len(params):
        raise ParameterError(f"{owner}: the parameters contain duplicates")
    return names, params


class Learner(RowSparseUpdates, LearnerSchedules, LearnerCheckpoints, Optimizer):
    """Base class of CNTK's learners (use the factories: :func:`~stadyn.learners.sgd`, ...).

    Subclasses name their per-parameter state tensors in ``_state_names`` (initial values in
    ``_state_init``, zero otherwise), add their scalars in :meth:`_method_scalars` and their
    update rule (one call of :mod:`stadyn.solvers.functional`) in :meth:`_apply`.

    Example:
        >>> import numpy as np, torch, stadyn as sd
        >>> from stadyn.learners import sgd
        >>> from stadyn.schedules import learning_parameter_schedule_per_sample
        >>> w = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
        >>> learner = sgd([w], learning_parameter_schedule_per_sample(0.1))
        >>> w.grad = torch.tensor([1.0, -1.0])          # summed over a 4-sample minibatch
        >>> learner.update(4)
        True
        >>> w.d, learner.total_number_of_samples_seen
        (array([0.9, 2.1], dtype=float32), 4)
    """

    name = "learner"
    _state_names: tuple[str, ...] = ()
    _state_init: dict[str, float] = {}
    _momentum_names: tuple[str, ...] = ()        # schedules whose values must lie in [0, 1]
    # the rule takes the L2 step itself (scalars["l2"], :meth:`_l2_for_rule`): the gradients
    # are not copied for it, nor changed by :meth:`_before_rule`
    _fused_l2 = False

    def __init__(self, parameters: Any, lr: Any, *, l1_regularization_weight: float = 0.0,
                 l2_regularization_weight: float = 0.0,
                 gaussian_noise_injection_std_dev: "float | Schedule" = 0.0,
                 gradient_clipping_threshold_per_sample: float = math.inf,
                 gradient_clipping_with_truncation: bool = True,
                 use_mean_gradient: bool | None = None, minibatch_size: int | None = None,
                 epoch_size: int | None = None):
        self._names, self._params = _parameter_list(parameters, self.name)
        if minibatch_size is not None:
            minibatch_size = _count(minibatch_size, f"{self.name}: minibatch_size", 0)
        # CNTK 2.2+: the learner's reference minibatch size; use_mean_gradient=True (deprecated)
        # means IGNORE when minibatch_size is not given.
        self._reference = minibatch_size if minibatch_size is not None else \
            (IGNORE if use_mean_gradient else None)
        self._use_mean_gradient = bool(use_mean_gradient)
        try:
            self._epoch_size = Schedule(0.0, epoch_size).epoch_size   # of lists as numbers
        except StadynError as exc:
            raise StadynError(f"{self.name}: {exc}") from None
        self._schedules: dict[str, Schedule] = {}
        self._set_schedule("lr", lr)
        self.l1_regularization_weight = _finite(l1_regularization_weight,
                                                f"{self.name}: l1_regularization_weight")
        self.l2_regularization_weight = _finite(l2_regularization_weight,
                                                f"{self.name}: l2_regularization_weight")
        threshold = gradient_clipping_threshold_per_sample
        if threshold != math.inf:
            threshold = _finite(threshold, f"{self.name}: gradient_clipping_threshold_per_sample")
            if threshold == 0:
                raise StadynError(f"{self.name}: gradient_clipping_threshold_per_sample must be "
                                  "> 0 (math.inf turns clipping off)")
        self.gradient_clipping_threshold_per_sample = float(threshold)
        self.gradient_clipping_with_truncation = bool(gradient_clipping_with_truncation)
        noise = gaussian_noise_injection_std_dev
        if isinstance(noise, Schedule):
            self._schedules["gaussian_noise_injection_std_dev"] = noise
            self._noise = True
        else:
            noise = _finite(noise, f"{self.name}: gaussian_noise_injection_std_dev")
            self._schedules["gaussian_noise_injection_std_dev"] = Schedule(noise)
            self._noise = noise > 0
        self.samples_seen = 0
        self.minibatches_seen = 0
        self.sweeps_seen = 0
        self._lr_offset = 0             # samples seen when the rate was last reset
        self._lr_sweep_offset = 0       # sweeps seen then (for a schedule per sweep)
        self._lr_reset = False
        self._sweep_size: int | None = None
        self._scalar_state: dict[str, float] = {}
        self._states = new_states([data_of(p).detach() for p in self._params],
                                  self._state_names, self._state_init)
        self.foreach = True
        self.generator: torch.Generator | None = None   # for the Gaussian noise (None: torch's)
        # CNTK's noise-injection seed (compat.cntk sets it): with no generator, each
        # parameter's noise is drawn from a generator seeded with it, counted up a draw
        self._noise_injection_seed: int | None = None
        # Where update() copies the gradients that clipping and L2 change: kept between steps
        # (a fresh copy of a large gradient costs page faults on every step).
        self._scratch: list[torch.Tensor | None] = [None] * len(self._params)
        # the gradient each buffer was last checked against (weakly: a gradient set to None
        # is not kept alive), so a step that reads the same gradients checks them no further
        self._scratch_sources: list[weakref.ref | None] = [None] * len(self._params)

    # -- one update: the optimizer protocol's three parts -------------------------------------
    def state_names(self) -> tuple[str, ...]:
        return tuple(self._state_names)

    def state_tensors(self, names: list[str]) -> dict[str, list[torch.Tensor]]:
        index = {n: i for i, n in enumerate(self._names)}
        return {k: [self._states[index[n]][k] for n in names] for k in self._state_names}

    @property
    def _mean_gradient(self) -> bool:
        """CNTK's "compatible mode" (``use_mean_gradient=True`` or ``minibatch_size=IGNORE``):
        the learner gets the minibatch's mean gradient, not its sum."""
        return self._reference == IGNORE

    def step_scalars(self, names: list[str] | None, sample_count: int) -> dict[str, float]:
        """This minibatch's scalars (looked up with the samples seen before it): ``lr`` is the
        effective rate applied to the summed gradient, ``lr / R`` (``R > 0``) or ``lr / M``.
        In CNTK's compatible mode (:attr:`_mean_gradient`) the gradient is first divided by
        ``M`` (``mean``) and ``lr`` is the rate applied to that mean, ``lr`` or ``lr * M / R``;
        clipping and L2 are then per sample, not scaled by ``M``: SGD's step is the same, an
        adaptive learner's (adam, adagrad, ...) sees the mean.
        (A learner updates all its parameters each step: ``names`` is not used.)"""
        M = sample_count
        lr = self.learning_rate()
        reference = self._schedules["lr"].minibatch_size
        mean = self._mean_gradient
        if mean:
            lr_eff = lr * M / reference if reference > 0 else lr
        else:
            lr_eff = lr / reference if reference > 0 else lr / M
        scalars = {"lr": lr_eff}
        if mean:
            scalars["mean"] = 1.0 / M
        per = 1 if mean else M
        if self.gradient_clipping_threshold_per_sample != math.inf:
            scalars["clip"] = self.gradient_clipping_threshold_per_sample * per
        if self.l2_regularization_weight > 0:
            scalars["l2"] = self.l2_regularization_weight * per
        if self._noise:
            scalars["noise"] = self._value("gaussian_noise_injection_std_dev", self.samples_seen)
        if self.l1_regularization_weight > 0:
            scalars["l1"] = lr_eff * self.l1_regularization_weight * per
        scalars.update(self._method_scalars(M, lr_eff))
        return scalars

    def _method_scalars(self, sample_count: int, lr: float) -> dict[str, float]:
        """The learner's own scalars for this step (momenta, bias-corrected step sizes)."""
        return {}

    def apply_step(self, params: list[torch.Tensor], grads: list[torch.Tensor],
                   states: dict[str, list[torch.Tensor]], scalars: Mapping[str, Any], *,
                   fused: bool = True) -> None:
        """The maths of one update, in CNTK's order: clipping -> L2 -> update -> noise -> L1.

        ``grads`` are modified (clipping, L2); ``scalars`` are floats from
        :meth:`step_scalars` or 0-d tensors fed by a compiled step.
        """
        self._before_rule(params, grads, scalars)
        self._apply(params, grads, states, scalars, self.foreach)
        self._after_rule(params, scalars)

    def _before_rule(self, params: list[torch.Tensor], grads: list[torch.Tensor],
                     scalars: Mapping[str, Any]) -> None:
        """The mean gradient, clipping and L2 (:meth:`apply_step`'s steps before the rule)."""
        foreach = self.foreach
        if "mean" in scalars:
            Fn.scale_gradients(grads, factor=scalars["mean"], foreach=foreach)
        if "clip" in scalars:
            if self.gradient_clipping_with_truncation:
                Fn.clip_by_value(grads, limit=scalars["clip"], foreach=foreach)
            else:
                Fn.clip_by_norm(grads, max_norm=scalars["clip"], foreach=foreach)
        if "l2" in scalars and not self._fused_l2:
            self._l2_step(params, grads, scalars)

    def _l2_step(self, params: list[torch.Tensor], grads: list[torch.Tensor],
                 scalars: Mapping[str, Any]) -> None:
        """CNTK's L2 step, ``g += l2 w``, into ``grads``."""
        if not Fn.l2_cntk(grads, params, rate=scalars["l2"]):
            Fn.add_weight_decay(grads, params, rate=scalars["l2"], foreach=self.foreach)

    def _rule_l2(self, scalars: Mapping[str, Any]) -> dict[str, Any]:
        """``{"l2": rate}`` for a rule's exact kernel that takes the L2 step itself
        (``_fused_l2``, L2 on), else ``{}``."""
        return {"l2": scalars["l2"]} if self._fused_l2 and "l2" in scalars else {}

    def _l2_for_rule(self, params: list[torch.Tensor], grads: list[torch.Tensor],
                     scalars: Mapping[str, Any]) -> list[torch.Tensor]:
        """For a rule that takes the L2 step itself (``_fused_l2``) but whose exact kernel
        could not run: the gradients with the L2 step taken, on copies (the gradients handed
        over may be the parameters' own ``.grad``), or ``grads`` as they are without L2."""
        if "l2" not in scalars or not self._fused_l2:
            return grads
        grads = [g.clone() for g in grads]
        self._l2_step(params, grads, scalars)
        return grads

    def _after_rule(self, params: list[torch.Tensor], scalars: Mapping[str, Any]) -> None:
        """Gaussian noise and L1 (:meth:`apply_step`'s steps after the rule)."""
        foreach = self.foreach
        noise = scalars.get("noise")
        if noise is not None and not (isinstance(noise, float) and noise <= 0):
            seed = self._noise_injection_seed
            if seed is None or self.generator is not None or torch.compiler.is_compiling():
                Fn.add_gaussian_noise(params, std=noise, generator=self.generator,
                                      foreach=foreach)
            else:
                # CNTK 2.7 draws each parameter's noise from an engine seeded with the learner's
                # noise-injection seed, counted up by one a draw (Learner.cpp:176-180), so a
                # learner restored from a checkpoint (which keeps the seed) draws the same noise
                for p in params:
                    generator = torch.Generator(p.device).manual_seed(seed)
                    Fn.add_gaussian_noise([p], std=noise, generator=generator, foreach=foreach)
                    seed = (seed + 1) % (1 << 64)
                self._noise_injection_seed = seed
        if "l1" in scalars:
            Fn.soft_threshold(params, threshold=scalars["l1"], foreach=foreach)

    def _apply(self, params: list[torch.Tensor], grads: list[torch.Tensor],
               states: dict[str, list[torch.Tensor]], scalars: dict[str, Any],
               foreach: bool) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def finish_step(self, names: list[str] | None, sample_count: int,
                    scalars: Mapping[str, Any]) -> None:
        """Bookkeeping after an update (:meth:`apply_step`): samples and minibatches seen."""
        self._advance(sample_count, scalars, False)

    def _advance(self, sample_count: int, scalars: Mapping[str, Any], is_sweep_end: bool) -> None:
        """Bookkeeping after an update: samples, minibatches, sweeps."""
        self.samples_seen += sample_count
        self.minibatches_seen += 1
        if is_sweep_end:
            self.sweeps_seen += 1
        self._advance_method(scalars)

    def _advance_method(self, scalars: Mapping[str, Any]) -> None:
        """The learner's own scalar state after an update begun with ``scalars``."""

    def _updates_begun(self) -> int:
        """Updates this learner's method has counted: the minibatches seen, and the updates
        CNTK 2.7 begins and then refuses (:meth:`count_refused_update`), less those before
        adam's or rmsprop's last ``reset_smoothed_gradients`` (the scalar
        ``update_count_offset`` holds the difference)."""
        return self.minibatches_seen + int(self._scalar_state.get(UPDATE_COUNT_OFFSET, 0))

    def _restart_update_count(self) -> None:
        """Count the updates begun from zero again (adam's and rmsprop's
        ``reset_smoothed_gradients``: CNTK's ResetSmoothedGradients zeroes their count)."""
        self._scalar_state[UPDATE_COUNT_OFFSET] = float(-self.minibatches_seen)

    @torch.no_grad()
    def count_refused_update(self, sample_count: int) -> None:
        """Move the learner's own per-update state on for an update of ``sample_count`` samples
        that was begun and then refused, as CNTK 2.7's learners do when a gradient has another
        data type than its parameter (they begin the update before they look at the
        gradients): adam's bias-correction step, FSAdaGrad's smoothed sample count and
        RMSProp's first step are one update further; the parameters, their state and the
        sample, minibatch and sweep counts are not.  The CNTK compat layer calls it.

        Example:
            >>> import numpy as np, stadyn as sd
            >>> from stadyn.learners import adam
            >>> w = sd.Variable.from_numpy_array(np.zeros(2), need_grad=True)
            >>> learner = adam([w], 0.1, 0.9)
            >>> learner.count_refused_update(4)
            >>> learner.minibatches_seen, learner.step_scalars(None, 4)["step_size"] < 0.1
            (0, True)
        """
        M = _count(sample_count, f"{self.name}.count_refused_update: sample_count", 1)
        scalars = self.step_scalars(None, M)
        self._scalar_state[UPDATE_COUNT_OFFSET] = float(self._updates_begun()
                                                        - self.minibatches_seen + 1)
        self._advance_method(scalars)

    def _gradients(self, gradient_values: Mapping | None,
                   params: list[torch.Tensor]) -> list[torch.Tensor]:
        grads = []
        if gradient_values is not None:
            by_key = {}
            for key, value in gradient_values.items():
                by_key[id(key) if isinstance(key, Variable) else str(key)] = value
            for name, var, p in zip(self._names, self._params, params):
                g = by_key.get(id(var), by_key.get(name))
                if g is None:
                    raise ParameterError(f"{self.name}.update: no gradient for parameter {name} "
                                         f"(shape {tuple(p.shape)})")
                grads.append(torch.as_tensor(g, dtype=p.dtype, device=p.device).clone())
        else:
            # clipping and L2 change the gradients in place: work on copies then
            copy = self.gradient_clipping_threshold_per_sample != math.inf or \
                (self.l2_regularization_weight > 0 and not self._fused_l2) or \
                self._mean_gradient
            sources, targets = [], []
            for k, (name, var, p) in enumerate(zip(self._names, self._params, params)):
                g = grad_of(var)
                # CNTK updates every parameter of a learner on every minibatch; one the loss
                # does not reach has a zero gradient (its momentum still decays).
                if g is None:
                    grads.append(torch.zeros_like(p))
                    continue
                if g.requires_grad:     # (a gradient with a graph of its own: create_graph)
                    g = g.detach()
                if g.shape != p.shape:
                    self._wrong_shape(name, g, p)
                if copy:
                    target = self._scratch_for(k, g)
                    sources.append(g)
                    targets.append(target)
                    g = target
                grads.append(g)
            if targets:
                torch._foreach_copy_(targets, sources)
            return grads
        for name, g, p in zip(self._names, grads, params):
            if g.shape != p.shape:
                self._wrong_shape(name, g, p)
        return grads

    def _wrong_shape(self, name: str, g: torch.Tensor, p: torch.Tensor) -> None:
        raise ParameterError(f"{self.name}.update: the gradient of parameter {name} has "
                             f"shape {tuple(g.shape)}, the parameter {tuple(p.shape)}")

    def _scratch_for(self, k: int, g: torch.Tensor) -> torch.Tensor:
        """Parameter ``k``'s scratch buffer for a copy of its gradient ``g`` (made, or remade
        when ``g`` changed shape, dtype, device or layout).  The buffer is checked against a
        gradient once: a step that copies the same tensor ``g`` again (a static plan's, or
        ``.grad`` accumulated in place) takes it as it is (1 us a parameter less)."""
        buffer = self._scratch[k]
        source = self._scratch_sources[k]
        if buffer is not None and source is not None and source() is g \
                and buffer.shape == g.shape and buffer.dtype == g.dtype:
            return buffer
        if buffer is None and not any(b is not None for b in self._scratch):
            # the first copies: all parameters' buffers end to end (the exact blocks' packs)
            self._scratch = end_to_end([data_of(v).detach() for v in self._params], None)
            buffer = self._scratch[k]
        if buffer is None or buffer.shape != g.shape or buffer.dtype != g.dtype \
                or buffer.device != g.device or buffer.stride() != g.stride():
            buffer = self._scratch[k] = torch.empty_like(g)
        self._scratch_sources[k] = weakref.ref(g)
        return buffer

    @torch.no_grad()
    def update(self, sample_count: "int | Mapping", training_sample_count: int | None = None,
               is_sweep_end: bool = False) -> bool:
        """Update the parameters from their ``.grad`` (the gradient summed over the minibatch).

        ``update(M)`` reads each parameter's ``.grad``; CNTK's
        ``update(gradient_values, training_sample_count)`` takes a dict from parameter (or
        name) to gradient array instead.  Returns ``False`` without updating or counting when
        the learning rate is 0 (CNTK: learning has stopped).  ``.grad`` is not modified.
        """
        if isinstance(sample_count, Mapping):
            gradient_values, count = sample_count, training_sample_count
        else:
            if training_sample_count is not None:
                raise StadynError(f"{self.name}.update: give update(sample_count) or "
                                  "update(gradient_values, training_sample_count)")
            gradient_values, count = None, sample_count
        M = _count(count, f"{self.name}.update: sample_count", 0)
        rows = self._take_rows()        # (set_row_sparse_gradients: for this update only)
        if self.learning_rate() == 0:
            return False
        if M == 0:
            raise StadynError(f"{self.name}.update: cannot update with an empty minibatch "
                              "(sample_count=0)")
        scalars = self.step_scalars(None, M)
        params = list(map(data_of, self._params))   # (written in place under no_grad)
        grads = self._gradients(gradient_values, params)
        states = {k: [s[k] for s in self._states] for k in self._state_names}
        if rows:
            self._apply_row_sparse(params, grads, states, scalars, rows, M)
        else:
            self.apply_step(params, grads, states, scalars)
        self._advance(M, scalars, bool(is_sweep_end))
        return True

    @torch.no_grad()
    def reset_smoothed_gradients(self) -> None:
        """Set the learner's per-parameter state (momentum, moment estimates) back to its
        initial value, as CNTK's ``reset_smoothed_gradients`` (block momentum does it after
        each block).

        Example:
            >>> import numpy as np, stadyn as sd, stadyn.learners as L
            >>> w = sd.Variable.from_numpy_array(np.zeros(2), need_grad=True)
            >>> learner = L.momentum_sgd([w], 0.1, 0.9)
            >>> w.g = np.ones(2); _ = learner.update(1); learner.reset_smoothed_gradients()
            >>> w.g = np.ones(2); _ = learner.update(1)
            >>> [round(float(v), 4) for v in w.d]      # two first steps: 0.1 * (1 - 0.9) each
            [-0.02, -0.02]
        """
        for state in self._states:
            for k, t in state.items():
                t.fill_(self._state_init.get(k, 0.0))

    def step(self, sample_count: int) -> bool:
        """:meth:`update` with the minibatch's sample count (the optimizer protocol's name)."""
        return self.update(sample_count)

    def replace_parameter(self, old: Variable, new: Variable) -> None:
        """Learn ``new`` in the place of ``old``, one of this learner's parameters of the same
        shape (its state starts afresh): CNTK's learner given a layer's parameter before the
        layer is applied learns the one the application makes.

        Example:
            >>> import numpy as np, stadyn as sd
            >>> from stadyn.learners import sgd
            >>> a = sd.Variable((2,), need_grad=True)
            >>> b = sd.Variable((2,), need_grad=True)
            >>> learner = sgd([a], 0.1)
            >>> learner.replace_parameter(a, b)
            >>> learner.parameters[0] is b
            True
        """
        index = next((k for k, p in enumerate(self._params) if p is old), None)
        if index is None:
            raise ParameterError(f"{self.name}: {old!r} is not one of its parameters")
        if tuple(new.shape) != tuple(old.shape):
            raise ParameterError(f"{self.name}: a parameter of shape {tuple(old.shape)} cannot be "
                                 f"replaced by one of shape {tuple(new.shape)}")
        self._params[index] = new
        self._states[index] = {k: torch.full_like(data_of(new).detach(),
                                                  self._state_init.get(k, 0.0))
                               for k in self._state_names}
        self._scratch[index] = None

    # -- introspection --------------------------------------------------------------------------
    def named_parameters(self) -> dict[str, Variable]:
        """The parameters by name (their registry names, or their positions as strings)."""
        return dict(zip(self._names, self._params))

    @property
    def parameters(self) -> list[Variable]:
        """The parameters this learner updates."""
        return list(self._params)

    @property
    def total_number_of_samples_seen(self) -> int:
        """Samples of all updates so far (CNTK's name)."""
        return self.samples_seen

    def __repr__(self) -> str:
        return (f"{self.name}({len(self._params)} parameters, lr={self._schedules['lr']!r}, "
                f"{self.samples_seen} samples seen)")
