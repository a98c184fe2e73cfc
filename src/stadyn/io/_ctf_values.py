"""CTF values: one input's text on a line (``1 2 3`` dense, ``0:1 4:2.5`` sparse) parsed as
CNTK 2.7's ``TextParser`` reads it, numbers by ``TryReadRealNumber``'s grammar."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np

from .._errors import DataError
from ._reader_errors import ReaderError, reader_errors

# CNTK's number grammar (TextParser::TryReadRealNumber): a sign, digits, then either a period
# with optional digits (an exponent only after at least one of them) or an exponent.
_NUM = r"[+-]?[0-9]+(?:\.(?:[0-9]+(?:[eE][+-]?[0-9]+)?)?|[eE][+-]?[0-9]+)?"
_NUMBER = re.compile(_NUM, re.ASCII)
_NUMBERS = re.compile(rf"\s*(?:{_NUM}(?:\s+|\Z))*", re.ASCII)
_GRAMMAR = "CNTK's CTF reads decimal numbers like 3, -1.5, 2.5e-3 (no nan, inf or .5)"


class TextFormatError(ReaderError):
    """A CTF file that cannot be read (malformed text, a value an input cannot hold, no
    file): a DataError naming the file and line, and a RuntimeError, the type CNTK 2.7's text
    reader raises (TextParser.cpp / Indexer.cpp RuntimeError)."""


#: ``method`` with every DataError it raises raised as a :class:`TextFormatError` (same
#: message, file and line).
text_format_errors = reader_errors(error=TextFormatError)


class InputField:
    """One CTF input the streams read: its stream, its shape, dense or sparse."""

    __slots__ = ("stream", "dim", "shape", "sparse")

    def __init__(self, stream: str, shape: tuple[int, ...], sparse: bool):
        self.stream, self.shape, self.sparse = stream, shape, sparse
        self.dim = int(np.prod(shape))


def parse_values(field: InputField, name: str, text: str, source: str,
                 line: int) -> np.ndarray:
    """The values ``text`` gives input ``name`` on ``line``, as an array of the field's shape
    (float32; sparse ones dense); a DataError names ``source`` and ``line`` otherwise.

    Example:
        >>> parse_values(InputField("y", (4,), True), "y", "1:2 3:0.5 1:1", "a.ctf", 1).tolist()
        [0.0, 3.0, 0.0, 0.5]
    """
    tokens = text.split()
    if field.sparse:
        out = np.zeros(field.dim, dtype=np.float32)
        for tok in tokens:
            index, sep, value = tok.partition(":")
            if not sep or not index.isdigit() or not index.isascii():
                raise DataError(f"input {name!r} is sparse: expected index:value, found "
                                f"{tok[:40]!r}", source, line)
            k = int(index)
            if k >= field.dim:
                raise DataError(f"input {name!r}: index {k} is outside 0..{field.dim - 1}",
                                source, line)
            if not _NUMBER.fullmatch(value):
                raise DataError(f"input {name!r}: value {value[:40]!r} is not a number "
                                f"({_GRAMMAR})", source, line)
            with np.errstate(over="ignore"):     # an index given twice: CNTK 2.7 adds them
                out[k] += np.float32(float(value))
        return out.reshape(field.shape)
    if len(tokens) > field.dim:
        raise DataError(f"input {name!r} is dense with dim {field.dim} but has {len(tokens)} "
                        f"value(s)", source, line)
    if len(tokens) < field.dim:     # CNTK: "A dense sample ... has a sparse suffix"
        warnings.warn(f"{source}:{line}: input {name!r} is dense with dim {field.dim} but has "
                      f"{len(tokens)} value(s); the rest are zeros, as CNTK fills them",
                      stacklevel=2)
        tokens = tokens + ["0"] * (field.dim - len(tokens))
        text = " ".join(tokens)
    if not _NUMBERS.fullmatch(text):
        bad = next(t for t in tokens if not _NUMBER.fullmatch(t))
        raise DataError(f"input {name!r}: value {bad[:40]!r} is not a number ({_GRAMMAR})",
                        source, line)
    with np.errstate(over="ignore"):  # 1e40 is inf in float32, as CNTK's cast gives it
        out = np.array(tokens, dtype=np.float32)
    if _FAR_EXPONENT.search(text):
        for k, tok in enumerate(tokens):
            if _FAR_EXPONENT.search(tok):
                out[k] = _cntk_real(tok)
    return out.reshape(field.shape)


# |exponent| >= 100: only there can CNTK's pow(10, exponent) in double differ from NumPy's
# parse (0e400 is NaN); e+007 / e-005 (MSVC's printf writes every exponent so) are not far
_FAR_EXPONENT = re.compile(r"[eE][+-]?0*[1-9][0-9]{2}")


def _cntk_real(token: str) -> np.float32:
    """A value with an exponent of three digits or more as TextParser::TryReadRealNumber
    computes it: ``coefficient * pow(10.0, exponent)`` in double, cast to float32, so ``0e400``
    is NaN (``0 * inf``, CNTK 2.7 gives nan) and ``1e-400`` is 0."""
    mantissa, _, exponent = token.lower().partition("e")
    coefficient, power = float(mantissa), int(exponent)
    scale = math.inf if power > 308 else 0.0 if power < -330 else 10.0 ** power
    with np.errstate(over="ignore", invalid="ignore"):
        return np.float32(np.float64(coefficient) * np.float64(scale))
