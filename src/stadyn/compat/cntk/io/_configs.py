"""CNTK 2.7's built-in deserializers as configurations: the file is opened when a source is
made over one, as CNTK's C++ reader opens it.

CNTK 2.7's ``CTFDeserializer(...)`` (and its CBF, image, base64 image and HTK deserializers)
returns a dictionary naming the files; nothing is read until ``MinibatchSource(...)`` makes the
C++ deserializer, which raises there (a RuntimeError: "Input file 'a.ctf' is not open.").
Stadyn's deserializers index their files when made.  Here each is made at once as before, and
where that fails on the file (a :class:`~stadyn.DataError`: a missing, empty, cut or malformed
file) the error is kept for later: the call returns an :class:`Unopened` configuration, and
:func:`opened` (called by ``MinibatchSource``) makes the deserializer again and raises its error
then.  Errors in the arguments themselves (a stream without a shape, ...) raise at once, as
CNTK's Python side raises them.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from ...._errors import DataError

__all__ = ["Unopened", "deferring", "opened"]


class Unopened:
    """A deserializer whose file could not be read when it was made (CNTK's configuration
    dictionary): kept to be made again by the ``MinibatchSource`` over it, which raises the
    error then.  ``d[key] = value`` settings are kept and given to the deserializer when it is
    made; asking for anything else makes it (and raises the error if the file is still bad).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> d = C.io.CTFDeserializer('absent.ctf', C.io.StreamDefs(x=C.io.StreamDef(shape=1)))
        >>> d["maxErrors"] = 2
        >>> type(d).__name__
        'Unopened'
        >>> try:
        ...     C.io.MinibatchSource(d)
        ... except RuntimeError as err:
        ...     print(str(err).split('/')[-1])
        absent.ctf: CTF file does not exist
    """

    def __init__(self, make: Callable[..., Any], args: tuple, kwargs: dict):
        self._make, self._args, self._kwargs = make, args, kwargs
        self._settings: list[tuple[str, Any]] = []

    def open(self):
        """The deserializer, made now with the settings given since (its file's error, a
        RuntimeError naming the file and line, when the file is still bad)."""
        made = self._make(*self._args, **self._kwargs)
        for key, value in self._settings:
            made[key] = value
        return made

    def __setitem__(self, key: str, value) -> None:
        self._settings.append((key, value))

    def __getitem__(self, key: str):
        return self.open()[key]

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.open(), name)

    def __len__(self) -> int:
        return len(self.open())

    def __repr__(self) -> str:
        return f"<{getattr(self._make, '__name__', 'deserializer')} (not opened yet)>"


def deferring(cls: type) -> Callable[..., Any]:
    """``cls``'s constructor, returning an :class:`Unopened` configuration where the file is
    bad (a :class:`~stadyn.DataError`) instead of raising.

    Example:
        >>> from stadyn.io import CTFDeserializer, StreamDef, StreamDefs
        >>> make = deferring(CTFDeserializer)
        >>> make('absent.ctf', StreamDefs(x=StreamDef(shape=1)))
        <CTFDeserializer (not opened yet)>
    """
    @functools.wraps(cls, assigned=("__name__", "__qualname__", "__doc__"), updated=())
    def make(*args, **kwargs):
        try:
            return cls(*args, **kwargs)
        except DataError:
            return Unopened(cls, args, kwargs)
    make.__signature__ = inspect.signature(cls)
    make.__module__ = __name__
    return make


def opened(deserializers):
    """``deserializers`` (one or a list) with every :class:`Unopened` one made now; the first
    whose file is still bad raises its error.

    Example:
        >>> opened([1, 2])
        [1, 2]
    """
    if isinstance(deserializers, Unopened):
        return deserializers.open()
    if isinstance(deserializers, (list, tuple)):
        return type(deserializers)(d.open() if isinstance(d, Unopened) else d
                                   for d in deserializers)
    return deserializers
