"""``cntk.learners`` (and the 2017 betas' ``cntk.learner``) on Stadyn's CNTK learners."""

from __future__ import annotations

from ... import learners as _L
from ...learners import (IGNORE, UnitType, default_unit_gain_value, learning_parameter_schedule,
                         learning_parameter_schedule_per_sample, learning_rate_schedule,
                         momentum_as_time_constant_schedule, momentum_schedule,
                         momentum_schedule_per_sample, set_default_unit_gain_value,
                         training_parameter_schedule)
from ._function import unwrap

__all__ = ["sgd", "momentum_sgd", "nesterov", "adam", "adagrad", "adadelta", "rmsprop",
           "fsadagrad", "UnitType", "IGNORE", "learning_rate_schedule",
           "learning_parameter_schedule", "learning_parameter_schedule_per_sample",
           "training_parameter_schedule", "momentum_schedule", "momentum_schedule_per_sample",
           "momentum_as_time_constant_schedule", "default_unit_gain_value",
           "set_default_unit_gain_value"]


# CNTK 2.7 writes ``unit_gain=default_unit_gain_value()`` in its learners' signatures, so the
# default is the one in force when ``cntk.learners`` is imported: a later
# ``set_default_unit_gain_value`` does not reach a learner made without ``unit_gain``.
_UNIT_GAIN_AT_IMPORT = default_unit_gain_value()


def _learner(fn, unit_gain: bool = False):
    def make(parameters, *args, **kwargs):
        if unit_gain and len(args) < 3:
            kwargs.setdefault("unit_gain", _UNIT_GAIN_AT_IMPORT)
        return fn(list(unwrap(list(parameters))), *args, **kwargs)
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
