"""CNTK's option plumbing: ``default_override_or``, ``get_default_override``,
``is_default_override`` (the mechanism behind ``default_options``) and the global options."""

from __future__ import annotations

from typing import Any

from ...layers import default_override_or, is_default_override, resolve

__all__ = ["default_override_or", "is_default_override", "get_default_override",
           "set_global_option", "get_global_option"]

_GLOBAL: dict[str, Any] = {}


def get_default_override(function, **kwargs) -> Any:
    """The value of the one keyword argument given: itself when passed explicitly, else the
    innermost ``default_options`` value for ``function`` (a layer, or None for any), else the
    default it was declared with (``default_override_or(value)``).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> def layer(pad=C.default_override_or(False)):
        ...     return C.get_default_override(layer, pad=pad)
        >>> with C.layers.default_options(pad=True):
        ...     inside = layer()
        >>> inside, layer(), layer(pad=7)
        (True, False, 7)
    """
    if len(kwargs) != 1:
        raise TypeError("get_default_override: give exactly one keyword argument")
    ((key, value),) = kwargs.items()
    name = getattr(function, "__name__", None) if function is not None else None
    return resolve(name, key, value)


def set_global_option(key: str, value: Any) -> None:
    """Set a process-wide option (CNTK's ``align_axis``, ...); kept, not used by Stadyn."""
    _GLOBAL[key] = value


def get_global_option(key: str, default_value: Any) -> Any:
    """A process-wide option set by :func:`set_global_option`, or ``default_value``."""
    return _GLOBAL.get(key, default_value)
