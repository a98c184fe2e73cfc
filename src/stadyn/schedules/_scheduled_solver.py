"""Schedules for NNabla solvers: a wrapper that sets hyperparameters by samples seen."""

from __future__ import annotations

import math
import numbers
from typing import Any, Mapping

from .._errors import StadynError
from .._errors import checked_count as _count
from ..solvers import Optimizer, Solver
from ._schedule import Schedule


class ScheduledSolver(Optimizer):
    """Drive an NNabla solver's hyperparameters (``stadyn.solvers``) from schedules.

    ``ScheduledSolver(solver, lr=schedule, momentum=...)`` takes one schedule (or number) per
    hyperparameter name of ``solver.hyper``; ``lr`` also names the solver's learning rate when it
    is called otherwise (Adam's ``alpha``).  Call :meth:`update` with the number of samples in the
    minibatch: it sets each hyperparameter to its value at the samples seen *before* this
    minibatch, runs ``solver.update()`` and counts the samples.  The solver itself is unchanged
    (its own ``update()`` still takes no argument); every other attribute (``weight_decay``,
    ``set_parameters``, ...) is the solver's.  It is an optimizer
    (:class:`~stadyn.solvers.Optimizer`): a :class:`~stadyn.train.Trainer` and a compiled
    step (``Trainer(compile=...)``, :func:`~stadyn.compile_step`) advance its schedules as
    :meth:`update` does.

    Values are used as they are: an NNabla solver applies its learning rate to whatever gradient
    the loss produced, so a schedule's reference minibatch size is not used here.  A schedule
    given per data sweep (``epoch_size=None``) moves on once per sweep: at each
    :meth:`end_sweep`, which a Trainer calls after a minibatch that ends a sweep of its reader
    (unless :meth:`resolve_epoch_size` told it the sweep's size in samples).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.solvers as S
        >>> from stadyn.schedules import ScheduledSolver, piecewise
        >>> w = sd.Variable.from_numpy_array(np.array([1.25]), need_grad=True)
        >>> solver = ScheduledSolver(S.Sgd(), lr=piecewise([8], [0.5, 0.25]))
        >>> solver.set_parameters({"w": w})
        >>> for _ in range(3):          # 4-sample minibatches, gradient 1: lr 0.5, 0.5, 0.25
        ...     w.g = np.ones(1)
        ...     solver.update(4)
        >>> w.d, solver.samples_seen, solver.learning_rate()
        (array([0.], dtype=float32), 12, 0.25)
    """

    def __init__(self, solver: Any, **schedules: "float | Schedule"):
        if not isinstance(solver, Solver):
            raise StadynError(f"ScheduledSolver: {solver!r} is not a stadyn.solvers solver")
        if not schedules:
            raise StadynError("ScheduledSolver: give at least one schedule, e.g. lr=...")
        self.solver = solver
        lr_name = solver.lr_name
        self._lr_name = lr_name
        self.schedules: dict[str, Schedule] = {}
        for name, value in schedules.items():
            key = lr_name if name == "lr" and "lr" not in solver.hyper else name
            if key not in solver.hyper:
                raise StadynError(f"ScheduledSolver: {type(solver).__name__} has no "
                                  f"hyperparameter '{name}' (it has {sorted(solver.hyper)})")
            if isinstance(value, Schedule):
                self.schedules[key] = value
            elif isinstance(value, numbers.Real) and not isinstance(value, bool):
                self.schedules[key] = Schedule(float(value))
            else:
                raise StadynError(f"ScheduledSolver: '{name}' must be a Schedule or a number, "
                                  f"got {value!r}")
        self.samples_seen = 0
        self.sweeps_seen = 0
        self.apply()

    def __getattr__(self, name: str) -> Any:
        if name == "solver":        # not set yet (during construction or unpickling)
            raise AttributeError(name)
        return getattr(self.solver, name)

    def apply(self) -> None:
        """Set every scheduled hyperparameter to its value at :attr:`samples_seen` (a schedule
        per data sweep whose size was never told: at :attr:`sweeps_seen`).

        :meth:`update` and :meth:`step_scalars` call it.
        """
        for key, schedule in self.schedules.items():
            try:
                if schedule.epoch_size is None and schedule.needs_epoch_size:
                    value = schedule.value_at_sweep(self.sweeps_seen)
                else:
                    value = schedule.value_at(self.samples_seen)
            except StadynError as exc:
                raise StadynError(f"ScheduledSolver: hyperparameter '{key}': {exc}") from None
            if not math.isfinite(value):
                raise StadynError(f"ScheduledSolver: hyperparameter '{key}' is {value} at "
                                  f"{self.samples_seen} samples")
            if key == self._lr_name and value < 0:
                raise StadynError(f"ScheduledSolver: the learning rate '{key}' is {value} (< 0) "
                                  f"at {self.samples_seen} samples")
            self.solver.hyper[key] = value

    def advance(self, sample_count: int) -> None:
        """Count ``sample_count`` more samples seen."""
        self.samples_seen += _count(sample_count, "ScheduledSolver: sample_count", 1)

    def update(self, sample_count: int) -> None:
        """``apply()``, ``solver.update()``, then ``advance(sample_count)``."""
        self.step(sample_count)

    # -- the optimizer protocol -----------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.solver.name

    def named_parameters(self):
        return self.solver.named_parameters()

    def zero_grad(self) -> None:
        self.solver.zero_grad()

    def learning_rate(self) -> float:
        """The schedule's rate now, as set (the NNabla-style solver's own ``learning_rate()``
        gives it rounded to float32, as NNabla does)."""
        hyper = getattr(self.solver, "hyper", None)
        if hyper is not None and self._lr_name in hyper:
            return float(hyper[self._lr_name])
        return self.solver.learning_rate()

    def step(self, sample_count: int) -> bool:
        """:meth:`update` (the optimizer protocol's name); returns whether it updated."""
        _count(sample_count, "ScheduledSolver.update: sample_count", 1)
        self.apply()
        updated = self.solver.step(sample_count)
        self.advance(sample_count)
        return updated

    def state_names(self) -> tuple[str, ...]:
        return self.solver.state_names()

    def state_tensors(self, names):
        return self.solver.state_tensors(names)

    @property
    def state_version(self) -> int:
        """The solver's (a compiled step rebuilds when ``set_states`` gave it new tensors)."""
        return getattr(self.solver, "state_version", 0)

    def step_scalars(self, names, sample_count):
        """The solver's scalars with every hyperparameter at its value now.  A hyperparameter a
        compiled program holds as a constant (``eps``, Momentum's ``momentum``, ...) cannot
        follow a schedule there: scheduling one that changes is an error."""
        self.apply()
        carried = self.solver.scalar_hypers
        for key, schedule in self.schedules.items():
            if key not in carried and not schedule.is_constant:
                raise StadynError(f"ScheduledSolver: a compiled step holds {self.solver.name}'s "
                                  f"'{key}' as a constant, so it cannot follow a schedule (only "
                                  f"{', '.join(carried)} can); train without compile")
        return self.solver.step_scalars(names, sample_count)

    def apply_step(self, params, grads, states, scalars, *, fused=True):
        self.solver.apply_step(params, grads, states, scalars, fused=fused)

    def finish_step(self, names, sample_count, scalars) -> None:
        self.solver.finish_step(names, sample_count, scalars)
        self.advance(sample_count)

    @property
    def fused_update(self) -> bool:
        return self.solver.fused_update

    def resolve_epoch_size(self, samples_per_sweep: int) -> None:
        """Give every schedule with ``epoch_size=None`` the sweep size (it then moves on by
        samples)."""
        for schedule in self.schedules.values():
            schedule.resolve_epoch_size(samples_per_sweep)

    def end_sweep(self) -> None:
        """Count a data sweep that ended with the minibatch just stepped on: a schedule per
        sweep whose size was never told moves on.

        Example:
            >>> import numpy as np, stadyn as sd, stadyn.solvers as S
            >>> from stadyn.schedules import Schedule, ScheduledSolver
            >>> solver = ScheduledSolver(S.Sgd(), lr=Schedule([0.5, 0.25]))     # per sweep
            >>> solver.set_parameters({"w": sd.Variable.from_numpy_array(np.zeros(1))})
            >>> before = solver.learning_rate(); solver.end_sweep(); solver.apply()
            >>> before, solver.learning_rate()
            (0.5, 0.25)
        """
        self.sweeps_seen += 1

    def state_dict(self) -> dict[str, Any]:
        """The solver's state plus the schedule position (samples and sweeps seen)."""
        return {"solver_state": self.solver.state_dict(), "samples_seen": self.samples_seen,
                "sweeps_seen": self.sweeps_seen}

    def check_state_dict(self, state: Mapping[str, Any]) -> None:
        """Raise the error :meth:`load_state_dict` would raise; change nothing."""
        if not isinstance(state, Mapping) or "solver_state" not in state:
            raise StadynError("ScheduledSolver: the state has no 'solver_state'")
        _count(state.get("samples_seen"), "ScheduledSolver: samples_seen", 0)
        _count(state.get("sweeps_seen", 0), "ScheduledSolver: sweeps_seen", 0)
        self.solver.check_state_dict(state["solver_state"])

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`, or change nothing."""
        self.check_state_dict(state)
        self.solver.load_state_dict(state["solver_state"])
        self.samples_seen = int(state["samples_seen"])
        self.sweeps_seen = int(state.get("sweeps_seen", 0))
        self.apply()

    def __repr__(self) -> str:
        scheduled = ", ".join(f"{k}={v!r}" for k, v in self.schedules.items())
        return f"ScheduledSolver({self.solver!r}; {scheduled}; {self.samples_seen} samples seen)"
