"""CNTK's CIFAR-10 ConvNet (its ConvNet_CIFAR10_DataAug example), written with Stadyn's layers."""

from __future__ import annotations

from .. import functions as F
from .. import layers as L
from ..graph import Variable

__all__ = ["cifar_convnet", "cifar_convnet_layers"]


def cifar_convnet_layers(num_classes: int = 10) -> L.Sequential:
    """The layer stack: 2 x (conv 3x3/64, conv 3x3/64, max-pool 3x3 stride 2), Dense 256 and 128
    with dropout 0.5, Dense ``num_classes``; ReLU and CNTK's auto-padding throughout.
    1,195,594 parameters in 14 tensors for 3x32x32 inputs.

    Example:
        >>> import stadyn as sd
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     net = cifar_convnet_layers()
        ...     y = net(sd.Variable((4, 3, 32, 32)))
        ...     y.shape, sum(p.size for p in net.parameters), len(net.parameters)
        ((4, 10), 1195594, 14)
    """
    with L.default_options(activation=L.relu, pad=True):
        return L.Sequential([
            L.For(range(2), lambda: [
                L.Convolution((3, 3), 64),
                L.Convolution((3, 3), 64),
                L.MaxPooling((3, 3), (2, 2)),
            ]),
            L.For(range(2), lambda i: [
                L.Dense([256, 128][i]),
                L.Dropout(0.5),
            ]),
            L.Dense(num_classes, activation=None),
        ])


def cifar_convnet(x: Variable, num_classes: int = 10) -> Variable:
    """Apply a new :func:`cifar_convnet_layers` stack to ``x`` scaled by 1/256 (as the seed)."""
    return cifar_convnet_layers(num_classes)(F.mul_scalar(x, 0.00390625))
