"""The 2017 betas' ``cntk.models``: ``Sequential`` and ``LayerStack``."""

from .layers import LayerStack, Sequential

__all__ = ["Sequential", "LayerStack"]
