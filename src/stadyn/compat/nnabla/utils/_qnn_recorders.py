"""The range recorders of NNabla 1.39's quantisation-aware training (``nnabla.utils.qnn``):
functions that pass their input through unchanged while, in training, they widen a running
range kept in parameters of shape ``(1,) * ndim``:

* ``MinMaxMinMaxRecorder``: ``m = min(m, min(x))``, ``M = max(M, max(x))``;
* ``MinMaxMvaRecorder``: moving averages ``m = decay * m + (1 - decay) * min(x)``, same for ``M``;
* ``AbsMaxRecorder``: ``M = max(M, max(|x|))``;
* ``MaxMaxRecorder``: ``M = max(M, max(x))``;
* ``MaxMvaRecorder``: ``M = decay * M + (1 - decay) * max(x)``.

The parameters start at 0.  As in NNabla 1.39, no gradient goes back through a recorder
(its backward leaves the input's gradient as it was).  Each recorder has a
``...RecorderCallback`` that makes the parameters (``m-<name>``, ``M-<name>`` in the current
scope) and applies the recorder, and whose ``get_scale_zeropoint`` turns the recorded range
into an int8 scale (``(M - m) / 255`` or ``2 M / 255``; ``/ 254`` with ``narrow_range``;
rounded to a power of two unless ``round_method='NOTROUND'``) and a zero point of 0, kept as
the parameters ``scale-<name>`` and ``zeropoint-<name>``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._parameter import get_parameter_or_create
from ..function import PythonFunction
from ..initializer import ConstantInitializer
from ..parameter import get_parameter

__all__ = ["MinMaxMinMaxRecorder", "MinMaxMvaRecorder", "AbsMaxRecorder", "MaxMaxRecorder",
           "MaxMvaRecorder", "minmax_minmax_recorder", "minmax_mva_recorder", "abs_max_recorder",
           "max_max_recorder", "max_mva_recorder", "MinMaxMinMaxRecorderCallback",
           "MinMaxMvaRecorderCallback", "AbsMaxRecorderCallback", "MaxMaxRecorderCallback",
           "MaxMvaRecorderCallback"]

_ROUNDINGS = {"CEIL": np.ceil, "ROUND": np.round, "FLOOR": np.floor, "NOTROUND": None}


class _Recorder(PythonFunction):
    """A recorder: ``y = x``; in training, the range parameters are updated by
    :meth:`_updated` from ``x``'s value at every forward."""

    _stat_names: tuple = ()

    def __init__(self, ctx: Any = None, training: bool = True):
        super().__init__(ctx)
        self.training = training
        self._stats: tuple = ()

    @property
    def name(self) -> str:
        return type(self).__name__

    def min_outputs(self) -> int:
        return 1

    def __call__(self, x, *stats, **kw):
        n = len(self._stat_names)
        if len(stats) != n:
            raise ValueError(f"{self.name}: takes the data and {', '.join(self._stat_names)} "
                             f"({n + 1} inputs), got {len(stats) + 1}")
        for s, what in zip(stats, self._stat_names):
            if len(s.shape) != len(x.shape) or int(np.prod(s.shape)) != 1:
                raise ValueError(f"{self.name}: {what} must hold one value with the data's "
                                 f"{len(x.shape)} dimensions, got shape {tuple(s.shape)}")
        self._stats = stats
        return super().__call__(x, *stats, **kw)

    def setup_impl(self, inputs, outputs) -> None:
        outputs[0].reset_shape(inputs[0].shape, True)

    def forward_impl(self, inputs, outputs) -> None:
        x = np.asarray(inputs[0].d, np.float32)
        outputs[0].d = x
        if self.training:
            current = [np.asarray(i.d, np.float32) for i in inputs[1:]]
            for target, value in zip(self._stats, self._updated(x, *current)):
                target.d = np.asarray(value, np.float32).reshape(target.shape)

    def _updated(self, x: np.ndarray, *stats: np.ndarray) -> list:
        raise NotImplementedError

    def backward_impl(self, inputs, outputs, propagate_down, accum) -> None:
        # NNabla 1.39's recorders pass no gradient back: their backward first overwrites the
        # output's gradient with the input's, then gives the input that (it keeps the gradient
        # it had: zero after zero_grad).  The data's gradient is left as it is here too.
        if propagate_down[0] and not accum[0]:
            inputs[0].g = np.zeros(inputs[0].shape, np.float32)

    def grad_depends_output_data(self, i: int, o: int) -> bool:
        return False

    def grad_depends_input_data(self, i: int, j: int) -> bool:
        return False


def _mva(decay: float, old: np.ndarray, new) -> np.ndarray:
    """``decay * old + (1 - decay) * new`` in float32, as NNabla's scalar functions compute it."""
    return old * np.float32(decay) + np.float32(new) * np.float32(1 - decay)


class MinMaxMinMaxRecorder(_Recorder):
    """Records the smallest and largest values seen: inputs ``(x, m, M)``.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> x = nn.Variable.from_numpy_array(np.array([[-1.0, 3.0]]))
        >>> m, M = nn.Variable.from_numpy_array(np.zeros((1, 1))), nn.Variable((1, 1))
        >>> y = MinMaxMinMaxRecorder()(x, m, M); y.forward()
        >>> y.parent.info.type_name, m.d.item(), M.d.item()
        ('MinMaxMinMaxRecorder', -1.0, 3.0)
    """

    _stat_names = ("min", "max")

    def _updated(self, x, m, M):
        return [np.minimum(m, x.min()), np.maximum(M, x.max())]


class MinMaxMvaRecorder(_Recorder):
    """Records moving averages (``decay``) of the smallest and largest values: ``(x, m, M)``.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> x = nn.Variable.from_numpy_array(np.array([[-1.0, 3.0]]))
        >>> m, M = nn.Variable((1, 1)), nn.Variable((1, 1))
        >>> m.d, M.d = 0, 0
        >>> y = MinMaxMvaRecorder(decay=0.5)(x, m, M); y.forward(); m.d.item(), M.d.item()
        (-0.5, 1.5)
    """

    _stat_names = ("min", "max")

    def __init__(self, ctx: Any = None, decay: float = 0.99, training: bool = True):
        super().__init__(ctx, training)
        self.decay = decay

    def _updated(self, x, m, M):
        return [_mva(self.decay, m, x.min()), _mva(self.decay, M, x.max())]


class AbsMaxRecorder(_Recorder):
    """Records the largest absolute value: inputs ``(x, M)``.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> x, M = nn.Variable.from_numpy_array(np.array([[-4.0, 3.0]])), nn.Variable((1, 1))
        >>> M.d = 0
        >>> y = AbsMaxRecorder()(x, M); y.forward(); M.d.item()
        4.0
    """

    _stat_names = ("abs_max",)

    def _updated(self, x, M):
        return [np.maximum(M, np.abs(x).max())]


class MaxMaxRecorder(_Recorder):
    """Records the largest value: inputs ``(x, M)``.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> x, M = nn.Variable.from_numpy_array(np.array([[-4.0, 3.0]])), nn.Variable((1, 1))
        >>> M.d = 0
        >>> y = MaxMaxRecorder()(x, M); y.forward(); M.d.item()
        3.0
    """

    _stat_names = ("max",)

    def _updated(self, x, M):
        return [np.maximum(M, x.max())]


class MaxMvaRecorder(_Recorder):
    """Records a moving average (``decay``) of the largest value: inputs ``(x, M)``.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> x, M = nn.Variable.from_numpy_array(np.array([[-4.0, 3.0]])), nn.Variable((1, 1))
        >>> M.d = 1
        >>> y = MaxMvaRecorder(decay=0.5)(x, M); y.forward(); M.d.item()
        2.0
    """

    _stat_names = ("max",)

    def __init__(self, ctx: Any = None, decay: float = 0.99, training: bool = True):
        super().__init__(ctx, training)
        self.decay = decay

    def _updated(self, x, M):
        return [_mva(self.decay, M, x.max())]


def minmax_minmax_recorder(x, m, M, training=True):
    """:class:`MinMaxMinMaxRecorder` applied to ``x`` with the range ``m``, ``M``.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> x = nn.Variable.from_numpy_array(np.array([[2.0]]))
        >>> minmax_minmax_recorder(x, nn.Variable((1, 1)), nn.Variable((1, 1))).shape
        (1, 1)
    """
    return MinMaxMinMaxRecorder(None, training)(x, m, M)


def minmax_mva_recorder(x, m, M, decay=0.99, training=True):
    """:class:`MinMaxMvaRecorder` applied to ``x`` with the range ``m``, ``M``.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> x = nn.Variable.from_numpy_array(np.array([[2.0]]))
        >>> minmax_mva_recorder(x, nn.Variable((1, 1)), nn.Variable((1, 1))).shape
        (1, 1)
    """
    return MinMaxMvaRecorder(None, decay, training)(x, m, M)


def abs_max_recorder(x, M, training=True):
    """:class:`AbsMaxRecorder` applied to ``x`` with the range ``M``.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> abs_max_recorder(nn.Variable((1, 3)), nn.Variable((1, 1))).shape
        (1, 3)
    """
    return AbsMaxRecorder(None, training)(x, M)


def max_max_recorder(x, M, training=True):
    """:class:`MaxMaxRecorder` applied to ``x`` with the range ``M``.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> max_max_recorder(nn.Variable((1, 3)), nn.Variable((1, 1))).shape
        (1, 3)
    """
    return MaxMaxRecorder(None, training)(x, M)


def max_mva_recorder(x, M, decay=0.99, training=True):
    """:class:`MaxMvaRecorder` applied to ``x`` with the range ``M``.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> max_mva_recorder(nn.Variable((1, 3)), nn.Variable((1, 1))).shape
        (1, 3)
    """
    return MaxMvaRecorder(None, decay, training)(x, M)


class _RecorderCallback:
    """Makes a recorder's parameters in the current scope and applies it."""

    _stats: tuple = ()          # the parameters' prefixes, in the recorder's input order

    def name(self) -> str:
        """The recorder's type name (the class name less ``Callback``)."""
        n = type(self).__name__
        return n[:n.rfind("Callback")]

    def _function(self, x, *stats, training=True):
        raise NotImplementedError

    def __call__(self, x, axes=(1,), training=True, name=""):
        shape = [1] * len(x.shape)
        stats = [get_parameter_or_create(f"{p}-{name}", shape, ConstantInitializer())
                 for p in self._stats]
        return self._function(x, *stats, training=training)

    @classmethod
    def _range(cls, stats: list) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def get_scale_zeropoint(cls, x, axes=(1,), narrow_range=False, round_method="NOTROUND",
                            name=""):
        """The ``scale-<name>`` and ``zeropoint-<name>`` parameters of the current scope for
        the range recorded as ``<name>`` there: ``(None, None)`` when nothing was recorded.
        Made on the first call (later calls return them as they are)."""
        if all(get_parameter(f"{p}-{name}") is None for p in cls._stats):
            return None, None
        shape = [1] * len(x.shape)
        stats = [np.asarray(get_parameter_or_create(f"{p}-{name}", shape).d, np.float32)
                 for p in cls._stats]
        levels = 254 if narrow_range else 255
        scale = (cls._range(stats) / levels).astype(np.float32)
        rounding = _ROUNDINGS[getattr(round_method, "value", round_method)]
        if rounding is not None:
            scale = np.float32(2) ** rounding(np.log(scale) / np.float32(np.log(2)))
        zero = np.round((np.zeros_like(stats[0]) / scale).astype(np.int8))
        zp = get_parameter_or_create(f"zeropoint-{name}", zero.shape, zero, False)
        sc = get_parameter_or_create(f"scale-{name}", scale.shape, scale, False)
        return sc, zp


class _MinMaxCallback(_RecorderCallback):
    _stats = ("m", "M")

    @classmethod
    def _range(cls, stats):
        return np.maximum(stats[1] - stats[0], np.float32(1e-24))


class _MaxCallback(_RecorderCallback):
    _stats = ("M",)

    @classmethod
    def _range(cls, stats):
        return np.float32(2) * stats[0]


class MinMaxMinMaxRecorderCallback(_MinMaxCallback):
    """Records ``x``'s smallest and largest values in ``m-<name>``, ``M-<name>``.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> with nn.parameter_scope("doc_mmmm"):
        ...     y = MinMaxMinMaxRecorderCallback()(nn.Variable((2, 3)), name="x0")
        >>> y.parent.info.type_name, MinMaxMinMaxRecorderCallback().name()
        ('MinMaxMinMaxRecorder', 'MinMaxMinMaxRecorder')
        >>> nn.clear_parameters()
    """

    def _function(self, x, m, M, training=True):
        return minmax_minmax_recorder(x, m, M, training=training)


class MinMaxMvaRecorderCallback(_MinMaxCallback):
    """Records moving averages of ``x``'s smallest and largest values (decay 0.99).

    Example:
        >>> MinMaxMvaRecorderCallback().name()
        'MinMaxMvaRecorder'
    """

    def _function(self, x, m, M, training=True):
        return minmax_mva_recorder(x, m, M, training=training)


class AbsMaxRecorderCallback(_MaxCallback):
    """Records ``x``'s largest absolute value in ``M-<name>``.

    Example:
        >>> AbsMaxRecorderCallback().name()
        'AbsMaxRecorder'
    """

    def _function(self, x, M, training=True):
        return abs_max_recorder(x, M, training=training)


class MaxMaxRecorderCallback(_MaxCallback):
    """Records ``x``'s largest value in ``M-<name>``.

    Example:
        >>> MaxMaxRecorderCallback().name()
        'MaxMaxRecorder'
    """

    def _function(self, x, M, training=True):
        return max_max_recorder(x, M, training=training)


class MaxMvaRecorderCallback(_MaxCallback):
    """Records a moving average (decay 0.99) of ``x``'s largest value in ``M-<name>``.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> x = nn.Variable.from_numpy_array(np.array([[1.0, 100.0]]))
        >>> with nn.parameter_scope("doc_mva"):
        ...     y = MaxMvaRecorderCallback()(x, name="x0"); y.forward()
        ...     scale, zp = MaxMvaRecorderCallback.get_scale_zeropoint(
        ...         x, name="x0", round_method="ROUND")     # 2 / 255 rounded to 2 ** -7
        >>> nn.get_parameters()["doc_mva/M-x0"].d.item(), scale.d.item(), int(zp.d.item())
        (1.0, 0.0078125, 0)
        >>> nn.clear_parameters()
    """

    def _function(self, x, M, training=True):
        return max_mva_recorder(x, M, training=training)
