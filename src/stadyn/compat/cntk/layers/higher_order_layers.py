"""``cntk.layers.higher_order_layers``: the module CNTK 2.7 defines ``Sequential``, ``For``,
``SequentialClique`` and ``ResNetBlock`` in; the same objects as ``cntk.layers``.

Example:
    >>> import stadyn.compat.cntk as C
    >>> from stadyn.compat.cntk.layers.higher_order_layers import Sequential
    >>> Sequential is C.layers.Sequential
    True
"""

from types import FunctionType

from . import For, ResNetBlock, Sequential, SequentialClique, identity

__all__ = ["For", "FunctionType", "ResNetBlock", "Sequential", "SequentialClique", "identity"]
