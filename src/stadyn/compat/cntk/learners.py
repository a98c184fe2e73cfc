"""``cntk.learners`` (and the 2017 betas' ``cntk.learner``) on Stadyn's CNTK learners.

Example:
    >>> import stadyn.compat.cntk as C
    >>> z = C.layers.Dense(2)(C.input_variable(3))
    >>> learner = C.learners.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.1),
    ...                                   C.momentum_schedule(0.9))
    >>> isinstance(learner, C.learners.Learner), learner.learning_rate()
    (True, 0.1)
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping

from ... import learners as _L
from ... import schedules as _S
from ...learners import (IGNORE, Learner, UnitType, default_unit_gain_value,
                         learning_parameter_schedule,
                         learning_parameter_schedule_per_sample, learning_rate_schedule,
                         momentum_as_time_constant_schedule, momentum_schedule,
                         momentum_schedule_per_sample, set_default_unit_gain_value,
                         training_parameter_schedule)
from ._adapt import unwrap
from ._custom_learners import UserLearner, universal
from ._values import NDArrayView, asarray

__all__ = ["Learner", "NDArrayView", "asarray", "sgd", "momentum_sgd", "nesterov", "adam",
           "adagrad", "adadelta", "rmsprop",
           "fsadagrad", "UnitType", "IGNORE", "learning_rate_schedule",
           "learning_parameter_schedule", "learning_parameter_schedule_per_sample",
           "training_parameter_schedule", "momentum_schedule", "momentum_schedule_per_sample",
           "momentum_as_time_constant_schedule", "default_unit_gain_value",
           "set_default_unit_gain_value", "UserLearner", "universal"]


# CNTK 2.7 writes ``unit_gain=default_unit_gain_value()`` in its learners' signatures, so the
# default is the one in force when ``cntk.learners`` is imported: a later
# ``set_default_unit_gain_value`` does not reach a learner made without ``unit_gain``.
_UNIT_GAIN_AT_IMPORT = default_unit_gain_value()


# Each learner's reference minibatch size for its learning rate (0: per minibatch), which the
# Trainer reports as CNTK does ("Learning rate per 1 samples: 0.1").
_REFERENCE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _learning_rate_unit(learner) -> str | None:
    """How CNTK's progress names ``learner``'s rate (``Learning rate per 1 samples``,
    ``Learning rate per minibatch``), or None for a learner made elsewhere."""
    ref = _REFERENCE.get(learner)
    if ref is None:
        return None
    return "Learning rate per minibatch" if ref == 0 else f"Learning rate per {ref} samples"


def _reference(lr, kwargs) -> int:
    given = kwargs.get("minibatch_size")
    if hasattr(lr, "minibatch_size"):
        if given is None or lr.is_minibatch_size_explicitly_specified:
            return int(lr.minibatch_size)
        return int(given)
    return int(given or 0)


class _Count(int):
    """A count CNTK 2.7 gives both ways: ``Learner.total_number_of_samples_seen()`` is a method,
    ``DistributedLearner.total_number_of_samples_seen`` a property (the distributed learner
    hands on the learner's attribute)."""

    def __call__(self) -> int:
        return int(self)


class _CntkLearner:
    """What CNTK 2.7's ``Learner`` does beyond Stadyn's: the counts as methods,
    ``update(gradient_values, training_sample_count, is_sweep_end=False)`` keyed by CNTK
    parameters with NumPy arrays (or NDArrayViews) as values, and ``reset_learning_rate``
    keeping the learner's unit.  Mixed in before the Stadyn
    learner's class, so the Trainer's calls (``step_scalars``, ``apply_step``, ...) are its."""

    @property
    def total_number_of_samples_seen(self) -> _Count:
        return _Count(self.samples_seen)

    def total_number_of_minibatches_seen(self) -> int:
        return self.minibatches_seen

    def total_number_of_sweeps_seen(self) -> int:
        return self.sweeps_seen

    def reset_learning_rate(self, learning_rate):
        # CNTK 2.7 keeps the unit the learner was made with: the new schedule's reference
        # minibatch size (per sample, per minibatch, per N samples) is not used.
        if isinstance(learning_rate, _S.Schedule):
            learning_rate = learning_rate.with_minibatch_size(
                self._schedules["lr"].minibatch_size)
        super().reset_learning_rate(learning_rate)

    def update(self, gradient_values, training_sample_count=None, is_sweep_end=False):
        if isinstance(gradient_values, Mapping):
            gradient_values = {unwrap(k): asarray(v) for k, v in gradient_values.items()}
        return super().update(gradient_values, training_sample_count, is_sweep_end)


_CLASSES: dict = {}


def _as_cntk_learner(learner):
    """``learner`` (a Stadyn learner) as an instance of its class with :class:`_CntkLearner`
    mixed in (one such class per learner class)."""
    cls = type(learner)
    if cls not in _CLASSES:
        _CLASSES[cls] = type(cls.__name__, (_CntkLearner, cls),
                             {"__module__": cls.__module__, "__doc__": cls.__doc__})
    learner.__class__ = _CLASSES[cls]
    return learner


def _learner(fn, unit_gain: bool = False):
    def make(parameters, *args, **kwargs):
        if unit_gain and len(args) < 3:
            kwargs.setdefault("unit_gain", _UNIT_GAIN_AT_IMPORT)
        learner = _as_cntk_learner(fn(list(unwrap(list(parameters))), *args, **kwargs))
        lr = args[0] if args else kwargs.get("lr")
        try:
            _REFERENCE[learner] = _reference(lr, kwargs)
        except TypeError:
            pass
        return learner
    make.__name__ = fn.__name__
    make.__doc__ = fn.__doc__
    return make


sgd = _learner(_L.sgd)
momentum_sgd = _learner(_L.momentum_sgd, unit_gain=True)
nesterov = _learner(_L.nesterov, unit_gain=True)
adam = _learner(_L.adam, unit_gain=True)
adagrad = _learner(_L.adagrad)
adadelta = _learner(_L.adadelta)
rmsprop = _learner(_L.rmsprop)
fsadagrad = _learner(_L.fsadagrad, unit_gain=True)
