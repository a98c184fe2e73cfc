"""``cntk.metrics``."""

from .ops import classification_error

__all__ = ["classification_error"]
