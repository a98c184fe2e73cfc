"""``cntk.layers``: CNTK's layers (Stadyn's layers under CNTK's Function face), composition
(``Sequential``, ``For``, ``ResNetBlock``, ...), ``default_options`` and the names CNTK's
module re-exports, and the recurrent layers (``LSTM``, ``GRU``, ``RNNStep``, ``Recurrence``,
``RecurrenceFrom``, ``Fold``) over sequences (docs/sequences.md).

Example:
    >>> import stadyn.compat.cntk as C
    >>> with C.layers.default_options(activation=C.relu, pad=True):
    ...     model = C.layers.Sequential([C.layers.Convolution2D((3, 3), 8, name="conv1"),
    ...                                  C.layers.MaxPooling((2, 2), (2, 2)),
    ...                                  C.layers.Dense(10, activation=None)])
    >>> z = model(C.input_variable((3, 8, 8)))
    >>> z.shape, z.conv1.W.shape
    ((10,), (8, 3, 3, 3))
"""

from __future__ import division  # noqa: F401  (CNTK 2.7 hands it out: see __all__)

from types import FunctionType  # noqa: F401
from warnings import warn  # noqa: F401

import numpy as np

from . import typing
from .._axis import Axis
from .._defaults import default_override_or, get_default_override, is_default_override
from .._blocks import BlockFunction
from .._function import Function
from .._layers import (Activation, AveragePooling, BatchNormalization, Convolution1D,
                      Convolution2D, Convolution3D, ConvolutionTranspose, ConvolutionTranspose1D,
                      ConvolutionTranspose2D, ConvolutionTranspose3D, Dense, Dropout, Embedding,
                      For, GlobalAveragePooling, GlobalMaxPooling, Identity, Label,
                      LayerNormalization, LayerStack, MaxPooling, MaxUnpooling, ResNetBlock,
                      Sequential, SequentialClique, Stabilizer, default_options,
                      default_options_for, identity)
from .._attention import AttentionModel
from .._seq_conv import Convolution, SequentialConvolution
from .._recurrent import GRU, LSTM, Fold, Recurrence, RecurrenceFrom, RNNStep
from .._sequence_layers import (Delay, ForwardDeclaration, PastValueWindow, RNNUnit,
                               UnfoldFrom)
from .._signature import ParameterTensor, Signature, SparseTensor, Tensor, tensor
from .sequence import UntestedBranchError
from .typing import Sequence, SequenceOver, SequenceOverMeta
from .._variables import Constant, InferredDimension, Parameter, Record, Variable, placeholder
from ..initializer import glorot_uniform
from ..ops import (PoolingType_Average, PoolingType_Max, SentinelValueForAutoSelectRandomSeed,
                  alias, batch_normalization, combine, convolution, convolution_transpose,
                  dropout, pooling, reconcile_dynamic_axes, reduce_mean, reshape, sigmoid, slice,
                  softplus, splice, sqrt, tanh, times, unpooling)


class NDShape:
    """A tensor shape as CNTK's C++ keeps it (CNTK's ``NDShape``): built from the dimensions in
    column-major order, ``dimensions()`` gives them in Python's (row-major) order.

    Example:
        >>> s = NDShape([2, 3])
        >>> s.dimensions(), s.rank(), s.total_size(), s.is_unknown(), s.is_scalar()
        ((3, 2), 2, 6, False, False)
    """

    def __init__(self, dims=()):
        self._dims = tuple(int(d) for d in dims)

    def dimensions(self) -> tuple:
        """The dimensions, row-major (as CNTK's Python shows shapes)."""
        return tuple(reversed(self._dims))

    def rank(self) -> int:
        return len(self._dims)

    def total_size(self) -> int:
        size = 1
        for d in self._dims:
            size *= d
        return size

    def is_unknown(self) -> bool:
        return any(d < 0 for d in self._dims)

    def is_scalar(self) -> bool:
        return len(self._dims) == 0

    def __eq__(self, other) -> bool:
        return isinstance(other, NDShape) and other._dims == self._dims

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        return f"NDShape({list(self._dims)})"


__all__ = [
    "LSTM", "GRU", "RNNStep", "Recurrence", "RecurrenceFrom", "Fold",
    "typing", "Tensor", "SparseTensor", "ParameterTensor", "Signature", "tensor",
    "Activation", "AveragePooling", "BatchNormalization", "Convolution", "Convolution1D",
    "Convolution2D", "Convolution3D", "ConvolutionTranspose", "ConvolutionTranspose1D",
    "ConvolutionTranspose2D", "ConvolutionTranspose3D", "Dense", "Dropout", "Embedding", "For",
    "GlobalAveragePooling", "GlobalMaxPooling", "Identity", "Label", "LayerNormalization",
    "LayerStack", "MaxPooling", "MaxUnpooling", "ResNetBlock",
    "Sequential", "SequentialClique", "Stabilizer", "default_options", "default_options_for",
    "identity", "Axis", "BlockFunction", "Constant", "Function", "InferredDimension", "NDShape",
    "Parameter", "PoolingType_Average", "PoolingType_Max", "Record",
    "SentinelValueForAutoSelectRandomSeed", "UntestedBranchError", "Variable", "alias",
    "batch_normalization", "combine", "convolution", "convolution_transpose",
    "default_override_or", "dropout", "get_default_override", "glorot_uniform",
    "is_default_override", "placeholder", "pooling", "reconcile_dynamic_axes", "reduce_mean",
    "reshape", "sigmoid", "slice", "softplus", "splice", "sqrt", "tanh", "times", "unpooling",
    "Delay", "PastValueWindow", "RNNUnit", "UnfoldFrom", "Sequence", "SequenceOver",
    "SequenceOverMeta", "AttentionModel", "ForwardDeclaration", "SequentialConvolution",
    # CNTK 2.7's module has no __all__: ``from cntk.layers import *`` hands out what the
    # module imported too: its NumPy as ``np`` (CNTK's Examples/LanguageUnderstanding relies on
    # ``np.argmax``), the cntk package as ``C`` (set by the package when it has imported this
    # module: an import here would be a cycle), ``sequence`` (cntk.sequence), and the standard
    # library's FunctionType, division and warn
    "np", "C", "sequence", "FunctionType", "division", "warn",
]


from .. import sequence  # noqa: E402,F401,F811  (as in CNTK 2.7: cntk.sequence shadows the
#                            module cntk.layers.sequence, which stays importable by its path)
