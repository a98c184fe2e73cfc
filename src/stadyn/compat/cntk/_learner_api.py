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
from ._adapt import unwrap, wrap
from ._values import asarray

__all__ = ["Count", "CntkCounts", "CntkLearner", "Dictionary", "as_cntk_learner"]


class Count(int):
    """A count CNTK 2.7 gives both ways: ``Learner.total_number_of_samples_seen()`` is a method,
    ``DistributedLearner.total_number_of_samples_seen`` a property (the distributed learner
    hands on the learner's attribute), so the number may be called.

    >>> Count(3)(), Count(3) + 1
    (3, 4)
    """

    def __call__(self) -> int:
        return int(self)


class Dictionary(dict):
    """A CNTK ``Dictionary`` as CNTK 2.7's Python gives one (``Learner.create_checkpoint()``):
    ``d[key]``, ``d.keys()``, ``d.contains(key)``, ``d.size()``; its values Python's (arrays as
    NumPy arrays, nested Dictionaries as dicts, as CNTK 2.7 converts them).

    >>> d = Dictionary({"sample_count": 4})
    >>> d.contains("sample_count"), d.size(), d["sample_count"]
    (True, 1, 4)
    """

    def contains(self, key: str) -> bool:
        return key in self

    def size(self) -> int:
        return len(self)


class CntkCounts:
    """CNTK's counts: ``total_number_of_samples_seen`` (a :class:`Count`),
    ``total_number_of_minibatches_seen()`` and ``total_number_of_sweeps_seen()``; and the
    learner's checkpoint, :meth:`create_checkpoint` and :meth:`restore_from_checkpoint`."""

    @property
    def total_number_of_samples_seen(self) -> Count:
        return Count(self.samples_seen)

    def total_number_of_minibatches_seen(self) -> int:
        return self.minibatches_seen

    def total_number_of_sweeps_seen(self) -> int:
        return self.sweeps_seen

    def create_checkpoint(self) -> Dictionary:
        """The learner's state as CNTK 2.7's ``Learner.create_checkpoint()`` gives it (the
        Dictionary a trainer's ``.ckp`` holds for it): ``sample_count``, ``minibatchCount``,
        ``sweepCount``, ``learnig_rate_schedule`` (sic), ``noise_injection_seed``,
        ``smoothed_gradients`` (one array per parameter, CNTK's layout), ``smoothed_count``
        (adam, rmsprop, fsadagrad), ``master_parameter_updated``, ``type``, ``version``.  A
        learner without a CNTK form (a ``UserLearner``) is a ValueError.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> w = C.parameter((2, 3), init=0.5)
            >>> d = C.adam([w], C.learning_parameter_schedule(0.1),
            ...            C.momentum_schedule(0.9)).create_checkpoint()
            >>> [a.shape for a in d["smoothed_gradients"]], d["smoothed_count"]
            ([(4, 3)], 0.0)
        """
        from ...serialize import cntk_checkpoint_dictionary
        from ._learner_checkpoint import learner_entry
        entry = learner_entry(self)
        if isinstance(entry, str):
            raise ValueError(f"create_checkpoint: {entry}")
        return Dictionary(cntk_checkpoint_dictionary(entry))

    def restore_from_checkpoint(self, checkpoint) -> None:
        """Restore :meth:`create_checkpoint`'s Dictionary (CNTK 2.7's: the counts, the noise
        seed, the smoothed gradients and the learning-rate schedule; the momentum and other
        options stay the learner's); anything but such a Dictionary (a plain dict too) is a
        TypeError, None a ValueError, as in CNTK 2.7.  All of it is checked first: a
        Dictionary of another learner kind or of other parameters, or without a learner's
        keys, is a RuntimeError
        (CNTK 2.7's: "Shape ... of the smoothed gradient value restored from checkpoint ...
        does not match", "Required key ... is not found"), and nothing is changed.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> w = C.parameter((2,), init=0.0)
            >>> a = C.sgd([w], C.learning_parameter_schedule([0.5, 0.1], epoch_size=2))
            >>> _ = a.update({w: np.ones(2, np.float32)}, 2)
            >>> b = C.sgd([w], C.learning_parameter_schedule(0.9))
            >>> b.restore_from_checkpoint(a.create_checkpoint())
            >>> b.total_number_of_samples_seen(), b.learning_rate()
            (2, 0.1)
        """
        from ..._errors import ModelFileError
        from ._learner_checkpoint import learner_state, restore_learner
        swig = "in method 'Learner_restore_from_checkpoint', argument 2 of type " \
            "'CNTK::Dictionary const &'"
        if checkpoint is None:          # CNTK 2.7's errors, as its SWIG layer words them
            raise ValueError(f"invalid null reference {swig}")
        if not isinstance(checkpoint, Dictionary):
            raise TypeError(f"{swig}: restore_from_checkpoint takes the Dictionary "
                            f"create_checkpoint() gave, not a {type(checkpoint).__name__} "
                            "(as CNTK 2.7, which refuses a plain dict too)")
        entry = dict(checkpoint)
        for key in ("sample_count", "minibatchCount", "smoothed_gradients"):
            if key not in entry:
                raise RuntimeError(f"restore_from_checkpoint: the Dictionary has no {key!r} "
                                   "(not a learner's checkpoint)")
        try:
            state = learner_state(self, entry, "restore_from_checkpoint")
        except ModelFileError as exc:
            raise RuntimeError(str(exc)) from None
        restore_learner(self, state, entry)


class CntkLearner(CntkCounts):
    """The counts, ``update(gradient_values, training_sample_count, is_sweep_end=False)`` keyed
    by CNTK parameters with NumPy arrays (or NDArrayViews) as values, and
    ``reset_learning_rate`` keeping the learner's unit.  Mixed in before the Stadyn learner's
    class, whose other methods (those the Trainer calls) are unchanged.  Such a learner pickles
    (and copies) as itself: it comes back with this API."""

    # the reference minibatch size of the rate CNTK's progress names ("Learning rate per 1
    # samples"), set by the function that made the learner (None: it reports no rate)
    _rate_reference: int | None = None
    # the minibatch_size the learner was made with (None: not given)
    _given_minibatch_size: int | None = None
    # the minibatch_size set on the learner since (None: never set)
    _minibatch_size_set: int | None = None

    @property
    def minibatch_size(self) -> int:
        """The ``minibatch_size`` the learner was made with (0 where none was given, or
        ``IGNORE``), as CNTK 2.7 reports it; a schedule's own is not the learner's.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> z = C.layers.Dense(2)(C.input_variable(3))
            >>> lr = C.learning_parameter_schedule(0.1)
            >>> [(l.minibatch_size, l.is_minibatch_size_explicitly_specified)
            ...  for l in (C.sgd(z.parameters, lr), C.sgd(z.parameters, lr, minibatch_size=32))]
            [(0, False), (32, True)]
        """
        if self._minibatch_size_set is not None:
            return self._minibatch_size_set
        return int(self._given_minibatch_size or 0)

    @minibatch_size.setter
    def minibatch_size(self, value: int) -> None:
        """CNTK 2.7's ``Learner.minibatch_size = n`` (``SetMinibatchSize``): from the next
        update the learner is in compatible mode (the mean gradient, see
        :meth:`is_compatible_mode`) exactly when ``n`` is ``IGNORE`` (0); the schedules keep
        their own reference size and ``is_minibatch_size_explicitly_specified`` its answer.
        A Python ``int`` (``True`` is 1), as CNTK's ``size_t`` argument: anything else a
        TypeError, a negative one an OverflowError.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> w = C.parameter(shape=(1,))
            >>> learner = C.sgd([w], C.learning_parameter_schedule(0.1))
            >>> learner.minibatch_size = C.learners.IGNORE
            >>> learner.minibatch_size, learner.is_compatible_mode()
            (0, True)
        """
        value = _size_t(value, f"{self.name}: minibatch_size",
                        "'Learner_minibatch_size_set', argument 2 of type 'std::size_t'")
        self._minibatch_size_set = value
        self._reference = int(value)        # (what the learner's compatible mode reads)

    @property
    def is_minibatch_size_explicitly_specified(self) -> bool:
        """Whether the learner was made with a ``minibatch_size`` (``IGNORE`` too)."""
        return self._given_minibatch_size is not None

    @property
    def parameters(self) -> tuple:
        """The parameters it updates, as CNTK Parameters (named ``W``, as the model lists
        them; Stadyn's learner gives its Variables, named by their registry paths).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> z = C.layers.Dense(2)(C.input_variable(3))
            >>> [p.name for p in C.sgd(z.parameters, C.learning_parameter_schedule(0.1)).parameters]
            ['W', 'b']
        """
        return tuple(wrap(p) for p in self.named_parameters().values())   # (CNTK's tuple)

    def is_compatible_mode(self) -> bool:
        """Whether the learner gets the minibatch's mean gradient (made with
        ``use_mean_gradient=True`` or ``minibatch_size=C.learners.IGNORE``), CNTK 2.7's
        ``Learner::IsCompatibleMode``.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> w = C.parameter(shape=(1,))
            >>> [C.sgd([w], 0.1, use_mean_gradient=m).is_compatible_mode() for m in (0, 1)]
            [False, True]
        """
        return bool(self._mean_gradient)

    @property
    def _learning_rate_schedule(self):
        """The learner's own learning-rate schedule (CNTK 2.7's SWIG property), its
        ``minibatch_size`` the one the learner applies."""
        return self._schedules["lr"]

    @property
    def ignored_minibatch_size(self) -> int:
        """CNTK's ``IGNORE`` (0): the minibatch size that makes a rate per minibatch."""
        return 0

    def __reduce_ex__(self, protocol):
        # The mixed class is made at run time under the learner class's name, which pickle
        # would find as the learner class without this API (or refuse as another object):
        # rebuild the learner class's instance and mix the API in again.
        return _remixed, (type(self)._native_class,), dict(self.__dict__)

    def reset_learning_rate(self, learning_rate):
        """Replace the learning-rate schedule from the current position (samples, or sweeps
        for a schedule per sweep).  CNTK 2.7 keeps the unit the learner was made with: the new
        schedule's reference minibatch size (per sample, per minibatch, per N) is not used, but
        a schedule made without one is given the learner's ``minibatch_size`` (not ``IGNORE``),
        as CNTK's ``reset_learning_rate`` writes it.
        Only a schedule is taken (``learning_parameter_schedule(0.1)``): a number or a list is
        CNTK's ValueError."""
        if not isinstance(learning_rate, Schedule):
            raise ValueError(f"learning_rate type ({type(learning_rate)}) not supported. "
                             "learning_rate must be a training schedule (output of "
                             "learning_rate_schedule() function)")
        if not learning_rate.is_minibatch_size_explicitly_specified and self.minibatch_size:
            learning_rate.minibatch_size = self.minibatch_size   # (CNTK writes it, unused)
        learning_rate = learning_rate.with_minibatch_size(self._schedules["lr"].minibatch_size)
        super().reset_learning_rate(learning_rate)

    def update(self, gradient_values, training_sample_count=None, is_sweep_end=False):
        """CNTK's ``update({parameter: gradient}, training_sample_count, is_sweep_end)``
        (gradients summed over the minibatch, NumPy arrays or NDArrayViews of the parameter's
        data type: another is CNTK's RuntimeError, a list its TypeError; the count a Python
        ``int``, ``True`` counting 1, as CNTK 2.7 checks it); ``update(M)`` reads the
        ``.grad`` as Stadyn's.  False (nothing updated or counted) once the learning rate
        is 0.  As CNTK 2.7's, a learner begins an update before it checks the gradients'
        data types: one it refuses so moves its own state on (adam's bias-correction step,
        see :meth:`~stadyn.learners.Learner.count_refused_update`)."""
        if not isinstance(gradient_values, Mapping):
            return super().update(gradient_values, training_sample_count, is_sweep_end)
        spread = self.name in _SPREAD_ONE and not self.l2_regularization_weight
        arrays = {unwrap(k): _gradient(self.name, k, v, spread)
                  for k, v in gradient_values.items()}
        count = _sample_count(self.name, training_sample_count)
        if self.learning_rate() == 0:
            return False
        try:
            for k, v in gradient_values.items():
                _check_type(self.name, k, arrays[unwrap(k)])
        except (RuntimeError, ValueError):
            self.count_refused_update(count)
            raise
        return super().update(arrays, count, is_sweep_end)


def _size_t(value, what: str, swig: str) -> int:
    """``value`` checked as CNTK 2.7's SWIG wrapper checks a ``size_t`` argument: a Python
    ``int`` (``True`` is 1), else a TypeError; a negative one an OverflowError."""
    if not isinstance(value, int):
        raise TypeError(f"{what} must be a Python int, not {type(value).__name__} "
                        f"({value!r}); CNTK 2.7: in method {swig}")
    if value < 0:
        raise OverflowError(f"{what} {value} is negative; CNTK 2.7: in method {swig}")
    return int(value)


def _sample_count(learner: str, count) -> int:
    """``training_sample_count`` checked as CNTK 2.7's ``Learner.update`` checks it (a
    ``size_t`` argument, then an empty minibatch refused)."""
    count = _size_t(count, f"{learner}.update: training_sample_count",
                    "'Learner__update', argument 3 of type 'size_t'")
    if count == 0:
        raise ValueError(f"{learner}.update: training_sample_count is 0; CNTK 2.7: "
                         "Learner::Update() cannot perform an update with an empty minibatch.")
    return int(count)


def _name(parameter) -> str:
    name = getattr(parameter, "name", None)
    return repr(name) if name else repr(parameter)


#: The learners whose CNTK 2.7 update adds a one-element gradient to every element of its
#: parameter: their rule is ``ScaleAndAdd`` of the gradient, which takes a 1 x 1 matrix as a
#: scalar (``CPUMatrix::ScaleAndAdd``); with L2 (``g + l2 w`` into the 1 x 1 gradient) CNTK
#: raises ValueError, and the other learners' rules refuse one (or corrupt their state).
_SPREAD_ONE = frozenset({"sgd", "momentum_sgd", "nesterov"})


def _gradient(learner: str, parameter, value, spread: bool = False) -> np.ndarray:
    """``value``, the gradient ``update`` was given for ``parameter``, as an array, checked as
    CNTK 2.7 checks it before the update begins: an array (or NDArrayView) of floats; with
    ``spread`` a one-element array is the gradient of every element (:data:`_SPREAD_ONE`)."""
    if isinstance(value, (list, tuple)):
        raise TypeError(f"{learner}.update: the gradient of parameter {_name(parameter)} is a "
                        f"{type(value).__name__}; give a NumPy array (CNTK 2.7: data type "
                        f"\"{type(value)}\" is not supported)")
    array = asarray(value)
    if array.dtype.kind != "f":
        _refuse(learner, parameter, array)
    shape = tuple(getattr(unwrap(parameter), "shape", array.shape))
    if array.shape != shape and _matrix(array.shape) == _matrix(shape):
        array = array.reshape(shape)
    elif spread and array.size == 1 and array.shape != shape:
        array = np.full(shape, array.reshape(()), array.dtype)
    return array


def _matrix(shape: tuple) -> tuple[int, int]:
    """The matrix CNTK 2.7's learners see an array of NumPy ``shape`` as: its last axis the
    rows (CNTK's first), the others the columns (``(1, 2)`` and ``(2,)`` are one 2 x 1
    matrix): a gradient of the parameter's matrix is its elements in its order."""
    rows = shape[-1] if shape else 1
    return rows, int(np.prod(shape[:-1], dtype=np.int64))


def _check_type(learner: str, parameter, array: np.ndarray) -> None:
    """The gradient ``array`` of ``parameter`` checked as CNTK 2.7 checks it once the update
    has begun: of the parameter's own data type."""
    variable = unwrap(parameter)
    if isinstance(variable, Variable) and array.dtype != np.dtype(variable.dtype):
        _refuse(learner, parameter, array)


def _refuse(learner: str, parameter, array: np.ndarray):
    """CNTK 2.7's refusal of a gradient of another data type than its parameter's: a
    RuntimeError (a float16 one momentum_sgd and nesterov refuse with a ValueError)."""
    wanted = np.dtype(getattr(unwrap(parameter), "dtype", np.float32))
    error = ValueError if array.dtype == np.float16 and learner in ("momentum_sgd",
                                                                    "nesterov") else RuntimeError
    raise error(f"{learner}.update: the gradient of parameter {_name(parameter)} is "
                f"{array.dtype}, the parameter {wanted}; CNTK 2.7 takes a gradient of the "
                f"parameter's own data type (convert it with .astype(np.{wanted}))")


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
