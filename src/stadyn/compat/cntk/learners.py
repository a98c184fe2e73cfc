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

import inspect

from ... import learners as _L
from ..._random import initializer_seed
from ...learners import (IGNORE, Learner, UnitType, default_unit_gain_value,
                         set_default_unit_gain_value)
from ._schedules import (learning_parameter_schedule, learning_parameter_schedule_per_sample,
                         learning_rate_schedule, momentum_as_time_constant_schedule,
                         momentum_schedule, momentum_schedule_per_sample,
                         training_parameter_schedule)
from ._layers_declared import learn_when_applied, refuse_declared, stand_ins
from ._custom_learners import UserLearner, unique_parameters, universal
from ._learner_api import CntkLearner, as_cntk_learner
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


def _learning_rate_unit(learner) -> str | None:
    """How CNTK's progress names ``learner``'s rate (``Learning rate per 1 samples``,
    ``Learning rate per minibatch``): by the reference minibatch size of its rate (0: per
    minibatch) kept as ``_rate_reference`` by the function that made it; None for a learner
    made elsewhere."""
    ref = learner._rate_reference if isinstance(learner, CntkLearner) else None
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


def _learner(fn, unit_gain: bool = False):
    def make(parameters, *args, **kwargs):
        if unit_gain and len(args) < 3:
            kwargs.setdefault("unit_gain", _UNIT_GAIN_AT_IMPORT)
        refuse_declared(parameters, fn.__name__)   # (a layer's before it is applied)
        given, waiting = stand_ins(list(parameters))
        learner = as_cntk_learner(fn(unique_parameters(given), *args, **kwargs))
        learn_when_applied(learner, waiting)
        # CNTK 2.7's built-in learners draw a seed as they are made (their noise injection's),
        # so the parameters made after one take the next seeds (CNTK 301's second model);
        # CNTK's checkpoints keep it (noise_injection_seed)
        learner._noise_injection_seed = initializer_seed()
        lr = args[0] if args else kwargs.get("lr")
        try:
            learner._rate_reference = _reference(lr, kwargs)
        except TypeError:
            pass
        given = inspect.signature(fn).bind_partial(parameters, *args, **kwargs).arguments
        learner._given_minibatch_size = given.get("minibatch_size")
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
