"""``default_options``: override the defaults of layer arguments for a ``with`` block (CNTK).

A layer declares an argument overridable by giving it the default
``default_override_or(value)``; at construction the layer asks :func:`resolve`, which returns the
explicitly passed value, else the innermost ``default_options`` value for that argument (if the
layer declares it overridable), else ``value``.  ``default_options(pad=True)`` therefore pads
``Convolution`` and ``MaxPooling`` alike but leaves layers without a ``pad`` argument alone.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any

__all__ = ["default_override_or", "default_options", "default_options_for", "resolve",
           "is_default_override"]


class _DefaultOverrideOr:
    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        return f"default_override_or({self.value!r})"


def default_override_or(value: Any) -> Any:
    """Mark ``value`` as an argument default that ``default_options`` may override."""
    return _DefaultOverrideOr(value)


def is_default_override(value: Any) -> bool:
    return isinstance(value, _DefaultOverrideOr)


# Each frame: (layer name or None for every layer, {argument: value})
_stack: contextvars.ContextVar[tuple] = contextvars.ContextVar("stadyn_default_options",
                                                              default=())


@contextlib.contextmanager
def default_options(**kwargs: Any):
    """Override overridable layer defaults inside a ``with`` block.

    Example:
        >>> import stadyn.layers as L
        >>> with L.default_options(activation=L.relu, pad=True):
        ...     conv = L.Convolution((3, 3), 8)
        >>> conv.pad, conv.activation is L.relu
        (True, True)
    """
    token = _stack.set(_stack.get() + ((None, dict(kwargs)),))
    try:
        yield
    finally:
        _stack.reset(token)


@contextlib.contextmanager
def default_options_for(layer: Any, **kwargs: Any):
    """Like :func:`default_options`, for one layer type only (a class or its name)."""
    names = layer if isinstance(layer, (list, tuple)) else [layer]
    names = tuple(getattr(n, "__name__", n) for n in names)
    token = _stack.set(_stack.get() + ((names, dict(kwargs)),))
    try:
        yield
    finally:
        _stack.reset(token)


def resolve(layer: str | None, argument: str, value: Any) -> Any:
    """The value a layer should use for ``argument`` (see the module docstring); ``layer=None``
    reads only options given for every layer.

    Example:
        >>> with default_options(pad=True):
        ...     resolve("Convolution", "pad", default_override_or(False))
        True
    """
    if not isinstance(value, _DefaultOverrideOr):
        return value
    for names, options in reversed(_stack.get()):
        if argument in options and (names is None or (layer is not None and layer in names)):
            return options[argument]
    return value.value
