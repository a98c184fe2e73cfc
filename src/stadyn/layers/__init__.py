"""CNTK-style layers (``stadyn.layers``): composable, parameter-creating callables.

Example:
    >>> import stadyn as sd, stadyn.layers as L
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     with L.default_options(activation=L.relu, pad=True):
    ...         model = L.Sequential([L.For(range(2), lambda: [L.Convolution((3, 3), 8),
    ...                                                        L.MaxPooling((3, 3), (2, 2))]),
    ...                               L.Dense(10, activation=None)])
    ...     model(sd.Variable((4, 3, 32, 32))).shape
    (4, 10)
"""

from .. import functions as _F
from ._init import (CNTKInitializer, bilinear, glorot_normal, glorot_uniform, he_normal,
                    he_uniform, initial_value, normal, truncated_normal, uniform, xavier)
from ._convolution import (Convolution, Convolution1D, Convolution2D, Convolution3D,
                           ConvolutionTranspose, ConvolutionTranspose1D, ConvolutionTranspose2D,
                           ConvolutionTranspose3D)
from ._layers import (Activation, AveragePooling, Dense, Dropout, Embedding, For,
                      GlobalAveragePooling, GlobalMaxPooling, Identity, Label, Layer, LayerStack,
                      MaxPooling, ResNetBlock, Sequential, SequentialClique, identity)
from ._normalization import BatchNormalization, LayerNormalization, Stabilizer
from ._options import (default_options, default_options_for, default_override_or,
                       is_default_override, resolve)
from ._recurrent import GRU, LSTM, Fold, Recurrence, RecurrenceFrom, RNNStep

relu = _F.relu
sigmoid = _F.sigmoid
tanh = _F.tanh
softmax = _F.softmax
leaky_relu = _F.leaky_relu
elu = _F.elu
selu = _F.selu

__all__ = [
    "Layer", "Sequential", "For", "LayerStack", "Dense", "Convolution", "Convolution1D",
    "Convolution2D", "Convolution3D", "ConvolutionTranspose", "ConvolutionTranspose1D",
    "ConvolutionTranspose2D", "ConvolutionTranspose3D", "MaxPooling", "AveragePooling",
    "GlobalMaxPooling", "GlobalAveragePooling", "Dropout", "BatchNormalization",
    "LayerNormalization", "Stabilizer", "ResNetBlock", "SequentialClique", "Embedding",
    "Activation", "Label", "Identity", "identity", "default_options", "default_options_for",
    "default_override_or", "is_default_override", "resolve", "glorot_uniform", "glorot_normal",
    "xavier", "he_uniform", "he_normal", "uniform", "normal", "truncated_normal", "bilinear",
    "CNTKInitializer", "initial_value", "relu", "sigmoid", "tanh", "softmax", "LSTM", "GRU",
    "RNNStep", "Recurrence", "RecurrenceFrom", "Fold",
    "leaky_relu", "elu", "selu",
]
