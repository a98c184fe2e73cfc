"""Learners written by the user: ``UserLearner`` (a subclass's ``update`` on NumPy-backed
gradients) and ``universal`` (an update written as a graph of ``assign`` ops).

Both receive, as CNTK's do, each parameter's gradient summed over the minibatch, and the
minibatch's sample count; the Trainer calls them like any learner.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x, y = C.input_variable(3), C.input_variable(2)
    >>> z = C.layers.Dense(2, init=0.0)(x)
    >>> def plain_sgd(parameters, gradients):
    ...     return C.combine([C.assign(p, p - 0.5 * g) for p, g in zip(parameters, gradients)])
    >>> trainer = C.Trainer(z, C.squared_error(z, y), C.universal(plain_sgd, z.parameters))
    >>> trainer.train_minibatch({x: np.ones((1, 3), np.float32), y: [[1.0, 0.0]]})
    True
    >>> z.b.value.tolist()              # the gradient of (b - t)**2 at b = 0 is -2 * t
    [1.0, 0.0]
"""

from __future__ import annotations

import inspect

import numpy as np

from ..._random import initializer_seed
from ...learners import Learner
from ._adapt import unwrap, wrap
from ._inferred_parameters import pending_shape, unresolved_value_error
from ._learner_api import CntkCounts
from ._values import NDArrayView

__all__ = ["UserLearner", "universal"]


def _gradient(v) -> np.ndarray:
    """A parameter's gradient as a NumPy array (zeros where the loss does not reach it)."""
    return v.g.copy() if v.grad is not None else np.zeros(v.shape, np.float32)


class _Uncounted:
    """CNTK 2.7's C++ learner never sees a ``UserLearner``'s updates: it counts no samples,
    minibatches or sweeps."""

    def end_sweep(self) -> None:
        pass


def unique_parameters(parameters) -> list:
    """A learner's parameters as Stadyn's Variables, with CNTK 2.7's ValueError for a list
    holding one twice (its Learner constructor's: ``Learner's parameters list must not contain
    duplicates.``); one whose inferred axes no op has fixed is CNTK's ValueError for making
    its value (``Cannot create an NDArrayView ...``)."""
    parameters = list(parameters)
    for p in parameters:
        if pending_shape(p) is not None:
            raise unresolved_value_error(p)
    params = list(unwrap(parameters))
    if len({id(p) for p in params}) != len(params):
        raise ValueError("Learner's parameters list must not contain duplicates.")
    return params


class UserLearner(_Uncounted, CntkCounts, Learner):
    """Base class of learners written in Python: override
    ``update(gradient_values, training_sample_count, sweep_end)``, which gets
    ``{parameter: NDArrayView}`` (each gradient summed over the minibatch), writes the
    parameters (``p.value = ...`` or ``p.set_value(...)``) and returns True (False: learning
    has stopped).  As in CNTK 2.7, its counts (``total_number_of_samples_seen()``, ...) stay
    0, so ``self.learning_rate()`` gives the schedule's first value.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> class MySgd(C.learners.UserLearner):
        ...     def update(self, gradient_values, training_sample_count, sweep_end):
        ...         eta = self.learning_rate() / training_sample_count
        ...         for p, g in gradient_values.items():
        ...             p.value = p.value - eta * g.asarray()
        ...         return True
        >>> x, y = C.input_variable(1), C.input_variable(1)
        >>> z = C.layers.Dense(1, init=0.0, bias=False)(x)
        >>> trainer = C.Trainer(z, C.squared_error(z, y),
        ...                     MySgd(z.parameters, C.learning_parameter_schedule(0.5)))
        >>> trainer.train_minibatch({x: [[1.0], [1.0]], y: [[1.0], [1.0]]})
        True
        >>> z.W.value.tolist()          # 0 - 0.5 / 2 * (-2 - 2)
        [[1.0]]
    """

    def __init__(self, parameters, lr_schedule, as_numpy: bool = True):
        super().__init__(list(unwrap(list(parameters))), lr_schedule)
        self.as_numpy = as_numpy

    def parameters(self) -> list:
        """The parameters it updates, as CNTK Parameters: a method here, as on CNTK 2.7's
        ``UserLearner`` (a SWIG class; its built-in learners' ``parameters`` is a property).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> z = C.layers.Dense(1)(C.input_variable(2))
            >>> class Keep(C.UserLearner):
            ...     def update(self, gradient_values, training_sample_count, sweep_end):
            ...         return True
            >>> [p.name for p in Keep(z.parameters, C.learning_parameter_schedule(1)).parameters()]
            ['W', 'b']
        """
        return [wrap(p) for p in self._params]

    def update(self, gradient_values, training_sample_count, sweep_end):
        """Update the parameters from ``gradient_values`` (``{Parameter: NDArrayView}``);
        override it.  Return False to say that learning has stopped."""
        raise NotImplementedError("UserLearner.update must be overridden")

    def step(self, sample_count: int) -> bool:
        """One update (what the Trainer calls): the user's :meth:`update` with the parameters'
        gradients."""
        values = {wrap(v): NDArrayView(_gradient(v)) for v in self._params}
        # CNTK's C++ learner never sees a UserLearner's updates: its counts stay 0 (and its
        # learning_rate() at the schedule's start)
        return self.update(values, int(sample_count), False) is not False


class _UniversalLearner(CntkCounts, Learner):
    """The learner :func:`universal` makes: before each evaluation of the update graph, the
    gradient constants take the parameters' gradients."""

    name = "universal"

    def __init__(self, parameters, gradients, update_function):
        super().__init__(unique_parameters(parameters), 1.0)
        self._gradient_constants = list(gradients)
        self._update_function = update_function

    @property
    def parameters(self) -> list:
        """The parameters it updates, as CNTK Parameters (``p.value`` readable and settable,
        as Manual_How_to_use_learners does; they were Stadyn's Variables)."""
        return [wrap(p) for p in self._params]

    def update(self, gradient_values, training_sample_count=None, is_sweep_end=False):
        """CNTK's ``update({parameter: gradient}, training_sample_count)``: the gradient
        constants take the given gradients (keyed by the Parameters :attr:`parameters` gives),
        then the update graph runs (Manual_How_to_use_learners' ``inspect_update``)."""
        if not isinstance(gradient_values, dict):
            return super().update(gradient_values, training_sample_count, is_sweep_end)
        given = {id(unwrap(k)): v for k, v in gradient_values.items()}
        for constant, v in zip(self._gradient_constants, self._params):
            if id(v) not in given:
                raise ValueError(f"universal.update: no gradient for parameter {v.name!r}")
            g = given[id(v)]
            constant.value = np.asarray(g.asarray() if hasattr(g, "asarray") else g,
                                        dtype=np.float32)
        self._update_function.eval()
        self._advance(int(training_sample_count), {}, bool(is_sweep_end))
        return True

    def step(self, sample_count: int) -> bool:
        for constant, v in zip(self._gradient_constants, self._params):
            constant.value = _gradient(v)
        self._update_function.eval()          # its assign ops write the parameters
        self._advance(int(sample_count), {}, False)
        return True


def universal(update_func, parameters):
    """A learner whose update is a graph: ``update_func(parameters, gradients)`` returns a
    Function of ``assign`` ops writing the new values (``gradients`` are Constants holding each
    parameter's gradient, summed over the minibatch, when the update runs).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.Dense(2)(C.input_variable(3))
        >>> learner = C.universal(lambda ps, gs: C.combine([C.assign(p, p - 0.1 * g)
        ...                                                 for p, g in zip(ps, gs)]),
        ...                       z.parameters)
        >>> isinstance(learner, C.learners.Learner), len(learner.parameters)
        (True, 2)
    """
    from ._variables import constant
    params = list(parameters)
    if len(inspect.signature(update_func).parameters) != 2:
        raise ValueError("update_func must be a function that accepts two arguments "
                         "(parameters, gradients)")
    gradients = [constant(0, shape=p.shape, dtype=np.float32, name="grad") for p in params]
    result = update_func(params, gradients)
    learner = _UniversalLearner(params, gradients, result)
    initializer_seed()          # CNTK's universal learner draws a seed too (see learners.py)
    return learner
