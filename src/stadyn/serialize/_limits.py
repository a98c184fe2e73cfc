"""How much memory loading a file may take: a budget over everything a model or parameter file
makes a loader allocate, checked against what the file *declares* before anything is allocated.

A small file can declare a lot: a zip member of a few kilobytes that inflates to gigabytes, an
HDF5 dataset of 2^40 elements with no data stored, a model input of 2^28 float64 elements that
loading allocates.  Every loader in :mod:`stadyn.serialize` adds up those declarations (zip
members by their uncompressed size, HDF5 datasets and safetensors data by their bytes, model
inputs by shape and dtype) and refuses the file, naming it and what it declares, once the total
passes the limit:

* :data:`DEFAULT_LOAD_LIMIT` (2 GiB) unless
* the environment variable ``STADYN_MAX_LOAD_BYTES`` gives another number of bytes, or
* the loader is called with ``max_bytes=`` (``sd.load``, ``sd.load_parameters``,
  ``read_parameter_file``).

Zip members are also refused when they inflate more than :data:`RATIO_LIMIT` times (from at least
1 MiB), and a member's data must match its declared size.

Example:
    >>> budget = LoadBudget("m.stadyn", max_bytes=1000)
    >>> budget.take(600, "parameters.safetensors")
    >>> budget.take(600, "input 'x' (150 float32 elements)")
    Traceback (most recent call last):
    stadyn._errors.ModelFileError: m.stadyn: input 'x' ... load limit of 1,000 bytes (raise it ...)
"""

from __future__ import annotations

import os
import zipfile
import zlib

from .._errors import ModelFileError

__all__ = ["DEFAULT_LOAD_LIMIT", "RATIO_LIMIT", "ENV_VAR", "load_limit", "LoadBudget",
           "read_zip_member"]

DEFAULT_LOAD_LIMIT = 2 << 30     # bytes a load may allocate for what a file declares
RATIO_LIMIT = 200                # uncompressed/compressed size above which a zip member is refused
ENV_VAR = "STADYN_MAX_LOAD_BYTES"


def load_limit(max_bytes: int | None = None) -> int:
    """The limit in bytes: ``max_bytes`` if given, else ``$STADYN_MAX_LOAD_BYTES``, else
    :data:`DEFAULT_LOAD_LIMIT`.

    Example:
        >>> load_limit(), load_limit(1 << 20)
        (2147483648, 1048576)
    """
    if max_bytes is None:
        text = os.environ.get(ENV_VAR, "").strip()
        if not text:
            return DEFAULT_LOAD_LIMIT
        try:
            max_bytes = int(text.replace("_", ""))
        except ValueError:
            raise ModelFileError(f"{ENV_VAR}={text!r} is not a number of bytes") from None
        where = ENV_VAR
    else:
        where = "max_bytes"
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise ModelFileError(f"{where} must be a non-negative int (bytes), got {max_bytes!r}")
    return max_bytes


class LoadBudget:
    """What one load of ``path`` may still allocate; :meth:`take` refuses the file once the
    declared total passes the limit (see the module docstring)."""

    def __init__(self, path: str, max_bytes: int | None = None):
        self.path = path
        self.limit = load_limit(max_bytes)
        self.used = 0

    def take(self, nbytes: int, what: str) -> None:
        """Count ``nbytes`` that ``what`` (a member, a dataset, an input) declares."""
        if self.used + nbytes > self.limit:
            before = (f"; with the {self.used:,} bytes declared before, the file needs "
                      f"{self.used + nbytes:,} bytes," if self.used else ",")
            raise ModelFileError(
                f"{self.path}: {what} declares {nbytes:,} bytes{before} implausibly large: more "
                f"than the load limit of {self.limit:,} bytes (raise it with max_bytes= or "
                f"{ENV_VAR})")
        self.used += nbytes


def read_zip_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, budget: LoadBudget) -> bytes:
    """The data of one zip member, after checking what it declares (size against the budget,
    inflation ratio, encryption); a damaged or short member is a :class:`ModelFileError` naming
    the archive and the member."""
    name = info.filename

    def fail(problem: str) -> ModelFileError:
        return ModelFileError(f"{budget.path}: {name} {problem}")

    if info.flag_bits & 0x1:
        raise fail("is encrypted")
    if info.file_size > RATIO_LIMIT * max(info.compress_size, 1 << 20):
        raise fail(f"declares {info.file_size:,} bytes from {info.compress_size:,} compressed: "
                   "an implausible compression ratio")
    budget.take(info.file_size, f"member {name}")
    try:
        data = zf.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError,
            NotImplementedError, ValueError) as exc:
        raise fail(f"is damaged ({type(exc).__name__}: {exc})") from None
    if len(data) != info.file_size:
        raise fail("is truncated")
    return data
