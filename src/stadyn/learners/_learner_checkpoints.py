"""A learner's checkpoint: :meth:`state_dict` and :meth:`load_state_dict`, everything needed to
resume exactly, checked whole before any of it is set (the Trainer checks every part of a
checkpoint before it restores any).  A mixin of :class:`~stadyn.learners.Learner`, whose
attributes (``_names``, ``_states``, ``_schedules``, the counts) it reads and sets.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import torch

from .._errors import ParameterError, StadynError
from .._errors import checked_count as _count
from ..schedules import Schedule
from ._checks import finite as _finite

# The scalar state's key for the difference between the updates adam's and rmsprop's methods
# have counted and the minibatches seen; states written before it was renamed call it
# ``refused_updates`` (read as the same value).
UPDATE_COUNT_OFFSET = "update_count_offset"
_OLD_UPDATE_COUNT_OFFSET = "refused_updates"

__all__ = ["LearnerCheckpoints"]


class LearnerCheckpoints:
    """The checkpoint methods of :class:`~stadyn.learners.Learner`.

    Example:
        >>> import stadyn as sd
        >>> from stadyn.learners import sgd
        >>> w = sd.Variable((2,), need_grad=True)
        >>> learner = sgd([w], lr=0.1)
        >>> state = learner.state_dict()
        >>> learner.load_state_dict(state); learner.samples_seen
        0
    """

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume exactly: the schedule position (samples, minibatches and
        sweeps seen, the learning-rate reset point and schedule), the known sweep size, the
        learner's scalar state, copies of the per-parameter state tensors (keyed
        ``"<parameter>/<state>"``, the parameter's name or its index) and the state of its own
        noise generator (:attr:`generator`, when it has one)."""
        return {"learner": self.name, "samples_seen": self.samples_seen,
                "minibatches_seen": self.minibatches_seen, "sweeps_seen": self.sweeps_seen,
                "lr_offset": self._lr_offset, "lr_sweep_offset": self._lr_sweep_offset,
                "lr_schedule": self._schedules["lr"].config() if self._lr_reset else None,
                "sweep_size": self._sweep_size, "scalars": dict(self._scalar_state),
                "tensors": {f"{n}/{k}": s[k].detach().clone()
                            for n, s in zip(self._names, self._states) for k in s},
                "generator_state": (None if self.generator is None
                                    else self.generator.get_state())}

    def check_state_dict(self, state: Mapping[str, Any]) -> None:
        """Raise the error :meth:`load_state_dict` would raise for ``state``; change nothing.
        (The Trainer checks every part of a checkpoint before it restores any.)"""
        self._checked_state_dict(state)

    def _checked_state_dict(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """``state`` checked against this learner (kind, state shapes, finite values, counts,
        the learning-rate schedule), as the values to assign; nothing is changed."""
        if not isinstance(state, Mapping):
            raise StadynError(f"{self.name}: a learner state must be a mapping, not "
                              f"{type(state).__name__}")
        if state.get("learner") != self.name:
            raise StadynError(f"cannot load the state of a {state.get('learner')!r} learner into "
                              f"a {self.name!r} learner")
        tensors = state.get("tensors", {})
        if not isinstance(tensors, Mapping):
            raise StadynError(f"{self.name}: the state's 'tensors' must be a mapping")
        values: dict[str, torch.Tensor] = {}
        for n, s in zip(self._names, self._states):
            for k, mine in s.items():
                key = f"{n}/{k}"
                if key not in tensors:
                    raise ParameterError(f"{self.name}.load_state_dict: no state '{key}'")
                value = torch.as_tensor(tensors[key])
                if tuple(value.shape) != tuple(mine.shape):
                    raise ParameterError(f"{self.name}.load_state_dict: state '{key}' has shape "
                                         f"{tuple(value.shape)}, expected {tuple(mine.shape)}")
                if not value.dtype.is_floating_point or not bool(torch.isfinite(value).all()):
                    raise StadynError(f"{self.name}.load_state_dict: state '{key}' is not "
                                      "finite floating-point numbers")
                values[key] = value
        what = f"{self.name}.load_state_dict"
        checked: dict[str, Any] = {"tensors": values}
        for key in ("samples_seen", "minibatches_seen"):
            if key not in state:
                raise StadynError(f"{what}: the state has no '{key}'")
            checked[key] = _count(state[key], f"{what}: {key}", 0)
        for key in ("sweeps_seen", "lr_offset", "lr_sweep_offset"):
            checked[key] = _count(state.get(key, 0), f"{what}: {key}", 0)
        schedule = None
        if state.get("lr_schedule") is not None:
            try:
                schedule = Schedule.from_config(state["lr_schedule"])
            except Exception as exc:  # noqa: BLE001 - any damage to the description
                raise StadynError(f"{what}: 'lr_schedule' is not a schedule ({exc})") from None
            for v in schedule.constant_values():
                self._check("lr", v)
        checked["lr_schedule"] = schedule
        scalars = state.get("scalars", {})
        if not isinstance(scalars, Mapping):
            raise StadynError(f"{what}: 'scalars' must be a mapping")
        checked["scalars"] = {k: _finite(v, f"{what}: scalar '{k}'", -math.inf)
                              for k, v in scalars.items()}
        if _OLD_UPDATE_COUNT_OFFSET in checked["scalars"]:     # a state from before the rename
            old = checked["scalars"].pop(_OLD_UPDATE_COUNT_OFFSET)
            checked["scalars"].setdefault(UPDATE_COUNT_OFFSET, old)
        sweep = state.get("sweep_size")
        checked["sweep_size"] = None if sweep is None else _count(sweep, f"{what}: sweep_size", 1)
        generator = state.get("generator_state")
        if generator is not None and self.generator is not None:
            try:
                torch.Generator().set_state(torch.as_tensor(generator))
            except (RuntimeError, TypeError) as exc:
                raise StadynError(f"{what}: 'generator_state' is not a generator's state "
                                  f"({exc})") from None
            checked["generator_state"] = torch.as_tensor(generator)
        return checked

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` (the same learner kind with parameters of the same
        shapes); all of it is checked before any of it is set."""
        checked = self._checked_state_dict(state)
        for n, s in zip(self._names, self._states):
            for k, mine in s.items():
                mine.copy_(checked["tensors"][f"{n}/{k}"])
        self.samples_seen = checked["samples_seen"]
        self.minibatches_seen = checked["minibatches_seen"]
        self.sweeps_seen = checked["sweeps_seen"]
        self._lr_offset = checked["lr_offset"]
        self._lr_sweep_offset = checked["lr_sweep_offset"]
        if checked["lr_schedule"] is not None:
            self._schedules["lr"] = checked["lr_schedule"]
            self._lr_reset = True
        self._scalar_state.update(checked["scalars"])
        if checked["sweep_size"] is not None:
            self.resolve_epoch_size(checked["sweep_size"])
        if "generator_state" in checked:
            self.generator.set_state(checked["generator_state"])
