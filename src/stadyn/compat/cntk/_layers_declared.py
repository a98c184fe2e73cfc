"""What a CNTK layer knows before it is applied: its parameters' declared shapes (``-1`` for an
axis its input decides, CNTK's inferred dimension) and the inputs it refuses up front.

Example:
    >>> import stadyn.compat.cntk as C
    >>> C.layers.Dense(3).W.shape
    (-1, 3)
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ... import layers as _L
from ...graph import Variable
from ._adapt import wrap
from ._seq_axes import free_steps


def _refuse_weights_over_steps(layer: Any, values: list) -> None:
    """CNTK 2.7 refuses a ``Dense`` whose weight would take its input dimensions from
    ``sequence.unpack``'s padded steps (a free dimension, -3): their number is the run's, so
    the weight would have none (a ValueError when applied); ``input_rank``/``map_rank`` that
    leave the steps out apply it to each step."""
    if not isinstance(layer, _L.Dense) or layer.parameters or len(values) != 1:
        return
    x = values[0]
    if not isinstance(x, Variable) or x.sequence_lengths is not None:
        return
    free = free_steps(x)
    if layer.input_rank is not None:
        base = x.ndim - int(layer.input_rank)
    else:
        base = 1 + int(layer.map_rank or 0)
    if any(a >= base for a in free):
        raise ValueError(f"Dense: its weight W cannot take its input dimensions from the "
                         f"steps of sequence.unpack (a free dimension, -3) of its input of "
                         f"shape {wrap(x).shape} (CNTK 2.7 refuses it too); apply it to each "
                         "step with input_rank=1 or map_rank=1")


_UIDS = itertools.count(1)


class _DeclaredParameter:
    """A parameter of a layer not applied yet, as CNTK shows it: ``shape`` with ``-1`` for each
    axis the input decides (CNTK's inferred dimension), ``value`` once the shape is known and
    the initial value is not drawn at random.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> d = C.layers.Dense(3)
        >>> d.W.shape, d.b.shape, d.b.value.tolist()
        ((-1, 3), (3,), [0.0, 0.0, 0.0])
    """

    is_placeholder = is_input = is_output = False

    def __init__(self, name: str, shape: tuple, init: Any, dtype: Any = np.float32,
                 constant: bool = False):
        self.name, self.shape, self._init = name, tuple(int(s) for s in shape), init
        # (an Embedding of given weights holds them as a constant)
        self.is_parameter, self.is_constant = not constant, constant
        self.dtype = np.float64 if np.dtype(dtype) == np.float64 else np.float32
        self.uid = f"Parameter{next(_UIDS)}"

    @property
    def value(self) -> np.ndarray:
        """The initial value (CNTK refuses it while an axis is not inferred yet)."""
        if -1 in self.shape:
            raise ValueError(f"parameter {self.name!r} of shape {self.shape}: its axes of -1 "
                             "come from the input, so it has no value until the layer is "
                             "applied (CNTK: 'unknown dimensions')")
        if isinstance(self._init, (int, float, np.ndarray)):
            return _L.initial_value(self._init, self.shape, 1, 1)
        raise ValueError(f"parameter {self.name!r}: its random initial value is drawn when the "
                         "layer is first applied")

    def __repr__(self) -> str:
        return f"Parameter('{self.name}', {list(self.shape)}) (not created yet)"


def _declared_parameter(layer: Any, name: str) -> "_DeclaredParameter | None":
    """``layer``'s parameter ``name`` before its first application (Dense, Embedding)."""
    if layer.parameters:
        return None
    dtype = getattr(layer, "dtype", np.float32)
    if isinstance(layer, _L.Dense):
        if name == "W":
            inferred = (-1,) * int(layer.input_rank or 1)
            return _DeclaredParameter(name, inferred + layer.shape, layer.init, dtype)
        if name == "b" and layer.bias:
            return _DeclaredParameter(name, layer.shape, layer.init_bias, dtype)
    if isinstance(layer, _L.Embedding) and name == "E":
        if layer.weights is not None:
            return _DeclaredParameter(name, layer.weights.shape, layer.weights, dtype,
                                      constant=True)
        return _DeclaredParameter(name, (-1,) + tuple(layer.shape or ()), layer.init, dtype)
    return None


# The layers without parameters (CNTK 2.7 lists none for them, applied or not)
_PARAMETERLESS = (_L.Activation, _L.MaxPooling, _L.AveragePooling, _L.GlobalMaxPooling,
                  _L.GlobalAveragePooling, _L.Dropout, _L.Label)


def declared_parameters(layer: Any) -> "list | None":
    """The parameters (and constants: an Embedding's given weights) CNTK 2.7 lists among the
    inputs of the native ``layer`` before it is applied, in its order (``W`` then ``b``;
    ``E``), their shapes with ``-1`` where the input decides; ``[]`` for a layer without
    parameters; None for the layers whose declared parameters Stadyn does not model
    (convolutions, recurrent steps, normalisations: their ``parameters`` are empty until
    applied).

    Example:
        >>> import stadyn.layers as L
        >>> [(p.name, p.shape) for p in declared_parameters(L.Dense(3))]
        [('W', (-1, 3)), ('b', (3,))]
    """
    if isinstance(layer, _L.Dense):
        names = ["W", "b"] if layer.bias else ["W"]
    elif isinstance(layer, _L.Embedding):
        names = ["E"]
    elif isinstance(layer, _PARAMETERLESS):
        return []
    else:
        return None
    return [_declared_parameter(layer, n) for n in names]


# The layers Stadyn does not declare parameters for (``declared_parameters``) that make some
_MAKING_PARAMETERS = (_L.Convolution, _L.ConvolutionTranspose, _L.BatchNormalization,
                      _L.LayerNormalization, _L.Stabilizer, _L.LSTM, _L.GRU, _L.RNNStep)


def makes_parameters(layer: Any) -> bool:
    """Whether CNTK 2.7 makes parameters when the layer is made (not applied): refused inside
    a ``@Function`` body (``_function_pure``)."""
    declared = declared_parameters(layer)
    if declared is not None:
        return any(p.is_parameter for p in declared)
    return isinstance(layer, _MAKING_PARAMETERS)
