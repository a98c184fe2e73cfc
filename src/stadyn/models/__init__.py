"""Reference models used by the demo, the benchmarks and the tests."""

from ._cifar import cifar_convnet, cifar_convnet_layers
from ._digits import digits_cnn, digits_mlp

__all__ = ["digits_cnn", "digits_mlp", "cifar_convnet", "cifar_convnet_layers"]
