"""Argument checks the learners share."""

from __future__ import annotations

import math
import numbers
from typing import Any

from .._errors import ArgumentError, StadynError

__all__ = ["finite"]


def finite(value: Any, what: str, minimum: float = 0.0) -> float:
    """``value`` as a float, checked finite and ``>= minimum`` (``what`` names it in the error).

    Example:
        >>> finite(2, "lr")
        2.0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentError(f"{what} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < minimum:
        raise StadynError(f"{what} must be a finite number >= {minimum}, got {value}")
    return value
