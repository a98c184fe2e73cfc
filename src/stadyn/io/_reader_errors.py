"""The error CNTK's readers raise: a :class:`ReaderError` is a ``RuntimeError``, the type CNTK
2.7 raises for bad reader input, and a :class:`~stadyn.DataError` (a ``ValueError`` naming
the file and line), the type Stadyn's readers raise, so code catching either keeps working.
:func:`reader_errors` turns the DataErrors a reader method raises into one."""

from __future__ import annotations

import functools
from typing import Callable

from .._errors import DataError

__all__ = ["ReaderError", "reader_errors"]


class ReaderError(RuntimeError, DataError):
    """Bad input to one of CNTK's readers (a missing or malformed file, an image that cannot
    be opened): a DataError naming the file and line, and a RuntimeError, the type CNTK 2.7
    raises for it.

    Example:
        >>> err = ReaderError("not a CNTK binary format (CBF) file", "a.cbf")
        >>> isinstance(err, RuntimeError), isinstance(err, DataError), str(err)
        (True, True, 'a.cbf: not a CNTK binary format (CBF) file')
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None,
                 record: int | None = None):
        DataError.__init__(self, message, path, line, record)


def reader_errors(method: Callable | None = None, *,
                  error: type[ReaderError] = ReaderError) -> Callable:
    """``method`` with every DataError it raises raised as ``error`` (same message, file,
    line and record; one that already is a ``error`` passes as it is).

    Example:
        >>> @reader_errors
        ... def read():
        ...     raise DataError("no such file", "a.txt")
        >>> try:
        ...     read()
        ... except RuntimeError as err:
        ...     print(type(err).__name__, err)
        ReaderError a.txt: no such file
    """
    if method is None:
        return functools.partial(reader_errors, error=error)

    @functools.wraps(method)
    def wrapped(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except error:
            raise
        except DataError as err:
            raise error(err.reason, err.path, err.line, err.record) \
                .with_traceback(err.__traceback__) from None
    return wrapped
