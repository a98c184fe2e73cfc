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
import os
from typing import Any, Callable

from ...._errors import DataError

__all__ = ["Unopened", "deferring", "opened"]


class Unopened:
    """A deserializer whose file could not be read when it was made (CNTK's configuration
    dictionary): kept to be made again by the ``MinibatchSource`` over it, which raises the
    error then.  ``d[key] = value`` settings are kept and given to the deserializer when it is
    made; ``d[key]`` gives them back (``None`` for a key never set, as CNTK's dictionary), and
    asking for anything else makes it (and raises the error if the file is still bad).
    Once made it is kept (the sources made over this configuration get it), and a setting
    given later reaches it too, as a later key of CNTK's dictionary reaches the sources made
    after it.

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

    def __init__(self, make: Callable[..., Any], args: tuple, kwargs: dict, cntk_type: str,
                 file_arg: str | None):
        self._make, self._args, self._kwargs = make, args, kwargs
        self._settings: list[tuple[str, Any]] = []
        self._opened: Any = None     # the deserializer, once made
        # what CNTK 2.7's configuration dictionary holds without reading the file
        self._known: dict[str, Any] = {"type": cntk_type}
        if file_arg is not None:
            bound = inspect.signature(make).bind_partial(*args, **kwargs).arguments
            if file_arg in bound:
                self._known["file"] = os.fspath(bound[file_arg])

    def open(self):
        """The deserializer, made now with the settings given since (its file's error, a
        RuntimeError naming the file and line, when the file is still bad)."""
        if self._opened is None:
            made = self._make(*self._args, **self._kwargs)
            for key, value in self._settings:
                made[key] = value
            self._opened = made
        return self._opened

    def __setitem__(self, key: str, value) -> None:
        if self._opened is not None:
            self._opened[key] = value
        self._settings.append((key, value))

    def __getitem__(self, key: str):
        """A setting given since (``d["maxErrors"]``), or ``"file"`` and ``"type"`` as CNTK
        2.7's dictionary gives them (the path as given, its deserializer's type name), else
        ``None`` as there (a key never set), all without opening the file."""
        for name, value in reversed(self._settings):
            if name == key:
                return value
        return self._known.get(key)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.open(), name)

    def __len__(self) -> int:
        return len(self.open())

    def __repr__(self) -> str:
        what = getattr(self._make, "__name__", "deserializer")
        where = f" of {self._known['file']!r}" if "file" in self._known else ""
        return (f"<{what}{where} (not opened yet: its file could not be read when it was made; "
                f"stadyn.compat.cntk.io.MinibatchSource opens it, or its .open())>")


def deferring(cls: type, cntk_type: str, file_arg: str | None) -> Callable[..., Any]:
    """``cls``'s constructor, returning an :class:`Unopened` configuration where the file is
    bad (a :class:`~stadyn.DataError`) instead of raising; ``cntk_type`` is the ``"type"`` of
    CNTK 2.7's configuration, ``file_arg`` the argument its ``"file"`` holds (None: it has
    none).

    Example:
        >>> from stadyn.io import CTFDeserializer, StreamDef, StreamDefs
        >>> make = deferring(CTFDeserializer, "CNTKTextFormatDeserializer", "filename")
        >>> d = make('absent.ctf', StreamDefs(x=StreamDef(shape=1)))
        >>> d["file"], d["type"]
        ('absent.ctf', 'CNTKTextFormatDeserializer')
    """
    @functools.wraps(cls, assigned=("__name__", "__qualname__", "__doc__"), updated=())
    def make(*args, **kwargs):
        try:
            return cls(*args, **kwargs)
        except DataError:
            return Unopened(cls, args, kwargs, cntk_type, file_arg)
    make.__signature__ = inspect.signature(cls)
    make.__module__ = __name__
    # the static methods stay reachable through the name (CNTK 2.0's
    # ``cntk.io.ImageDeserializer.crop(...)``, which CNTK's own CIFAR-10 ConvNet script calls)
    for name in dir(cls):
        if not name.startswith("_") and isinstance(inspect.getattr_static(cls, name),
                                                   staticmethod):
            setattr(make, name, getattr(cls, name))
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
