"""Stadyn's error types.

Every error Stadyn raises on purpose derives from :class:`StadynError`, so callers (and the fuzz
tests) can tell "the input was bad" from "Stadyn has a bug".  Each subclass also derives from the
built-in exception a Python user would expect (``ValueError`` for bad values), so ``except
ValueError`` keeps working.
"""

from __future__ import annotations

__all__ = [
    "StadynError",
    "ShapeError",
    "EmptySequenceError",
    "UnrunnableError",
    "OpArgumentError",
    "ArgumentError",
    "ParameterError",
    "DataError",
    "ConfigError",
    "ModelFileError",
    "NumericsError",
    "DeprecatedCallError",
    "checked_count",
]


class StadynError(Exception):
    """Base class of every error Stadyn raises deliberately."""


class ShapeError(StadynError, ValueError):
    """An op was given inputs whose shapes or dtypes it cannot accept."""


class EmptySequenceError(RuntimeError, ShapeError):
    """A sequence of no step, given or computed (a ``sequence.slice`` that leaves a sequence
    none): CNTK 2.7's RuntimeError "Sequences must be a least one frame long"."""


class UnrunnableError(RuntimeError, ShapeError):
    """A graph the emulated framework builds (and loads from its files) but cannot run, raised
    when it runs, as that framework's RuntimeError: CNTK 2.7's ``random_sample`` of weights
    with the batch axis ("Minibatch data cannot be interpreted as a single 2D tensor").
    ``stadyn.UnrunnableError``; a ``RuntimeError`` and a :class:`ShapeError`.

    Example:
        >>> import stadyn as sd, stadyn.cntk_semantics as S
        >>> y = S.cannot_run(sd.Variable((2, 5)), (3, 5), "Node 'w' (InputValue operation)")
        >>> try:
        ...     y.forward()
        ... except sd.UnrunnableError as e:
        ...     print(isinstance(e, RuntimeError), "a single 2D tensor." in str(e))
        True True
    """


class OpArgumentError(StadynError, TypeError):
    """An op was called with arguments it does not take: an unknown or missing argument, or a
    NumPy array or tensor where it takes a Variable."""


class ArgumentError(StadynError, TypeError):
    """A function or class was given an argument of a type it cannot take (``lr=None`` for a
    solver, a string for a count, ...); the message names the argument."""


def checked_count(value, what: str, minimum: int) -> int:
    """``value`` as an ``int`` when it is an integer (not a bool) ``>= minimum``; otherwise a
    :class:`StadynError` saying ``what`` must be one (sample counts, epoch sizes, ...).

    >>> checked_count(3, "sample_count", 1)
    3
    """
    import numbers
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise StadynError(f"{what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


class DeprecatedCallError(StadynError, RuntimeError):
    """A call the emulated framework itself refuses as deprecated (NNabla's
    ``Solver.setup``); the message names what to call instead."""


class ParameterError(StadynError, ValueError):
    """A parameter was asked for inconsistently (another shape, a missing name, ...)."""


class DataError(StadynError, ValueError):
    """Bad input data: a malformed map/CTF line, a corrupt image or record, a missing file.

    ``path`` names the file, ``line`` (1-based) or ``record`` (0-based) the place in it, when known;
    they are part of the message too.
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None,
                 record: int | None = None):
        self.path = None if path is None else str(path)
        self.line = line
        self.record = record
        where = ""
        if self.path is not None:
            where = self.path
            if line is not None:
                where += f":{line}"
            elif record is not None:
                where += f" (record {record})"
            where += ": "
        super().__init__(where + message)
        self.reason = message


class ConfigError(StadynError, ValueError):
    """A configuration (BrainScript / .cntk) file is malformed; names file, line and column."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None,
                 column: int | None = None):
        self.path = path
        self.line = line
        self.column = column
        where = ""
        if path is not None or line is not None:
            where = f"{path or '<string>'}"
            if line is not None:
                where += f":{line}"
                if column is not None:
                    where += f":{column}"
            where += ": "
        super().__init__(where + message)
        self.reason = message


class ModelFileError(StadynError, ValueError):
    """A model or parameter file is truncated, tampered with or of an unknown version."""


class NumericsError(StadynError, FloatingPointError):
    """An op's output (forward) or the gradient it gives an input (backward) holds a NaN or an
    infinity, found by :func:`stadyn.check_numerics`; names the op, its scope, the line that
    created it and the phase.  ``op``, ``scope``, ``location`` and ``phase`` hold the parts."""

    def __init__(self, message: str, op: str = "", scope: str = "",
                 location: str | None = None, phase: str = "forward"):
        super().__init__(message)
        self.op, self.scope, self.location, self.phase = op, scope, location, phase
