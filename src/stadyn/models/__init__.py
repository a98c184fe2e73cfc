"""Reference models used by the demo, the benchmarks and the tests."""

from ._digits import digits_cnn, digits_mlp

__all__ = ["digits_cnn", "digits_mlp"]
