"""What CNTK 2.7's ``Learner`` class offers beyond Stadyn's learners, mixed into the learners
``cntk.learners`` makes (and into ``UserLearner`` and ``universal``'s learner).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> w = C.parameter((2,), init=0.0)
    >>> learner = C.sgd([w], C.learning_parameter_schedule(0.5))
    >>> learner.update({w: np.array([1.0, -1.0], np.float32)}, 1)
    True
    >>> w.value.tolist(), learner.total_number_of_samples_seen()
    ([-0.5, 0.5], 1)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...graph import Variable
from ...schedules import Schedule
from ._adapt import unwrap
from ._values import asarray

__all__ = ["Count", "CntkCounts", "CntkLearner", "as_cntk_learner"]


class Count(int):
    """A count CNTK 2.7 gives both ways: ``Learner.total_number_of_samples_seen()`` is a method,
    ``DistributedLearner.total_number_of_samples_seen`` a property (the distributed learner
    hands on the learner's attribute), so the number may be called.

    >>> Count(3)(), Count(3) + 1
    (3, 4)
    """

    def __call__(self) -> int:
        return int(self)


class CntkCounts:
    """CNTK's counts: ``total_number_of_samples_seen`` (a :class:`Count`),
    ``total_number_of_minibatches_seen()`` and ``total_number_of_sweeps_seen()``."""

    @property
    def total_number_of_samples_seen(self) -> Count:
        return Count(self.samples_seen)

    def total_number_of_minibatches_seen(self) -> int:
        return self.minibatches_seen

    def total_number_of_sweeps_seen(self) -> int:
        return self.sweeps_seen


class CntkLearner(CntkCounts):
    """The counts, ``update(gradient_values, training_sample_count, is_sweep_end=False)`` keyed
    by CNTK parameters with NumPy arrays (or NDArrayViews) as values, and
    ``reset_learning_rate`` keeping the learner's unit.  Mixed in before the Stadyn learner's
    class, whose other methods (those the Trainer calls) are unchanged.  Such a learner pickles
    (and copies) as itself: it comes back with this API."""

    # the reference minibatch size of the rate CNTK's progress names ("Learning rate per 1
    # samples"), set by the function that made the learner (None: it reports no rate)
    _rate_reference: int | None = None

    def __reduce_ex__(self, protocol):
        # The mixed class is made at run time under the learner class's name, which pickle
        # would find as the learner class without this API (or refuse as another object):
        # rebuild the learner class's instance and mix the API in again.
        return _remixed, (type(self)._native_class,), dict(self.__dict__)

    def reset_learning_rate(self, learning_rate):
        """Replace the learning-rate schedule from the current position (samples, or sweeps
        for a schedule per sweep).  CNTK 2.7 keeps the unit the learner was made with: the new
        schedule's reference minibatch size (per sample, per minibatch, per N) is not used.
        Only a schedule is taken (``learning_parameter_schedule(0.1)``): a number or a list is
        CNTK's ValueError."""
        if not isinstance(learning_rate, Schedule):
            raise ValueError(f"learning_rate type ({type(learning_rate)}) not supported. "
                             "learning_rate must be a training schedule (output of "
                             "learning_rate_schedule() function)")
        learning_rate = learning_rate.with_minibatch_size(self._schedules["lr"].minibatch_size)
        super().reset_learning_rate(learning_rate)

    def update(self, gradient_values, training_sample_count=None, is_sweep_end=False):
        """CNTK's ``update({parameter: gradient}, training_sample_count, is_sweep_end)``
        (gradients summed over the minibatch, NumPy arrays or NDArrayViews of the parameter's
        data type: another is CNTK's RuntimeError, a list its TypeError); ``update(M)`` reads
        the ``.grad`` as Stadyn's.  False (nothing updated or counted) once the learning rate
        is 0."""
        if isinstance(gradient_values, Mapping):
            gradient_values = {unwrap(k): _gradient(self.name, k, v)
                               for k, v in gradient_values.items()}
        return super().update(gradient_values, training_sample_count, is_sweep_end)


def _gradient(learner: str, parameter, value) -> np.ndarray:
    """``value``, the gradient ``update`` was given for ``parameter``, as an array, checked as
    CNTK 2.7 checks it: an array (or NDArrayView) of the parameter's own data type."""
    name = getattr(parameter, "name", None)
    name = repr(name) if name else repr(parameter)
    if isinstance(value, (list, tuple)):
        raise TypeError(f"{learner}.update: the gradient of parameter {name} is a "
                        f"{type(value).__name__}; give a NumPy array (CNTK 2.7: data type "
                        f"\"{type(value)}\" is not supported)")
    array = asarray(value)
    variable = unwrap(parameter)
    if isinstance(variable, Variable):
        wanted = np.dtype(variable.dtype)
        if array.dtype != wanted:
            raise RuntimeError(f"{learner}.update: the gradient of parameter {name} is "
                               f"{array.dtype}, the parameter {wanted}; CNTK 2.7 takes a "
                               f"gradient of the parameter's own data type (convert it with "
                               f".astype(np.{wanted}))")
    return array


_CLASSES: dict = {}


def as_cntk_learner(learner):
    """``learner`` (a Stadyn learner) made an instance of its class with :class:`CntkLearner`
    mixed in (one such class per learner class; its name is the learner class's)."""
    cls = type(learner)
    if isinstance(learner, CntkLearner):
        return learner
    if cls not in _CLASSES:
        _CLASSES[cls] = type(cls.__name__, (CntkLearner, cls),
                             {"__module__": cls.__module__, "__doc__": cls.__doc__,
                              "_native_class": cls})
    learner.__class__ = _CLASSES[cls]
    return learner


def _remixed(cls):
    """An empty instance of the learner class ``cls`` with :class:`CntkLearner` mixed in (what
    an unpickled learner is made from; pickle then sets its attributes)."""
    return as_cntk_learner(cls.__new__(cls))
