"""Bounds on what a small input file may make the readers allocate.

A few bytes of a file can declare a huge size: a 1 MB zip member that inflates to gigabytes, a
PNG header that declares 20000 x 20000 pixels, a tar member header that declares a 1 GB batch.
The readers check what a file declares against these limits *before* they allocate, and a file
over a limit is a :class:`~stadyn.DataError` that names the file, what it declares and the limit.

======================== ================ ==========================================================
name                     default          what it bounds
======================== ================ ==========================================================
``image_pixels``         2**27 (134 M)    width x height of one decoded image (402 MB as 8-bit BGR)
``archive_member_bytes`` 2**28 (256 MiB)  the uncompressed size of one member read from a zip
                                          (``archive.zip@member`` map entries) or a tar archive
``archive_total_bytes``  2**30 (1 GiB)    the uncompressed bytes read or passed over in one tar
                                          archive (``convert_cifar10``: the real one is 180 MB)
======================== ================ ==========================================================

A user who legitimately needs more raises a limit with :func:`set_limits` (worker processes
started afterwards get the new values) or, before Stadyn is imported, with the environment
variable ``STADYN_LIMIT_<NAME>`` (``STADYN_LIMIT_IMAGE_PIXELS=400000000``), which also reaches the
``stadyn data`` commands.
"""

from __future__ import annotations

import os

__all__ = ["get_limits", "set_limits", "limit", "over_limit", "DEFAULT_LIMITS"]

DEFAULT_LIMITS = {
    "image_pixels": 1 << 27,
    "archive_member_bytes": 1 << 28,
    "archive_total_bytes": 1 << 30,
}


def _from_environment() -> dict[str, int]:
    values = dict(DEFAULT_LIMITS)
    for name in values:
        text = os.environ.get(f"STADYN_LIMIT_{name.upper()}")
        if text:
            try:
                values[name] = _checked(name, int(text.replace("_", "")))
            except ValueError:
                raise ValueError(f"environment variable STADYN_LIMIT_{name.upper()}={text!r} is "
                                 f"not a positive integer") from None
    return values


def _checked(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"limit {name!r} must be a positive int, got {value!r}")
    return value


_LIMITS = _from_environment()


def get_limits() -> dict[str, int]:
    """The limits in force, by name (a copy).

    Example:
        >>> get_limits()["image_pixels"] == 2 ** 27
        True
    """
    return dict(_LIMITS)


def set_limits(**values: int) -> dict[str, int]:
    """Change limits by name; returns the previous values of those named (pass them back to
    restore). Readers and worker processes started afterwards use the new values.

    Example:
        >>> old = set_limits(image_pixels=10_000)
        >>> limit("image_pixels"), old == {"image_pixels": 2 ** 27}
        (10000, True)
        >>> _ = set_limits(**old)
    """
    unknown = sorted(set(values) - set(_LIMITS))
    if unknown:
        raise ValueError(f"unknown limit(s) {unknown}; the limits are {sorted(_LIMITS)}")
    checked = {name: _checked(name, value) for name, value in values.items()}
    old = {name: _LIMITS[name] for name in checked}
    _LIMITS.update(checked)
    return old


def limit(name: str) -> int:
    """The value of one limit."""
    return _LIMITS[name]


def over_limit(name: str, declared: int, what: str) -> str | None:
    """Why ``declared`` is refused when it exceeds the limit ``name`` (None when it does not):
    ``what`` says what the file declares, e.g. ``"declares 20000x20000 = 400,000,000 pixels"``.

    Example:
        >>> over_limit("image_pixels", 4, "declares 2x2 pixels") is None
        True
        >>> over_limit("image_pixels", 20000 * 20000, "declares 20000x20000 pixels")[:64]
        'declares 20000x20000 pixels, over the limit of 134,217,728 (rais'
    """
    bound = _LIMITS[name]
    if declared <= bound:
        return None
    return (f"{what}, over the limit of {bound:,} (raise it with "
            f"stadyn.io.set_limits({name}=...) or STADYN_LIMIT_{name.upper()})")
