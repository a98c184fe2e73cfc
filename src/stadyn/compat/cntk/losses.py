"""``cntk.losses``."""

from .ops import binary_cross_entropy, cross_entropy_with_softmax, squared_error

__all__ = ["cross_entropy_with_softmax", "squared_error", "binary_cross_entropy"]
