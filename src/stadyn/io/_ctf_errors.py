"""CNTK's ``maxErrors`` count of a text format reader: how many malformed inputs are skipped,
each with a warning, before the next one is an error ("Reached the maximum number of allowed
errors"), an input counted once however often its line is read.  CNTK 2.7 counts them in its
one reader per source; a source's worker processes parse their own copies of the
deserializer, so there the errors met are not counted but handed back with each job, and the
source's own deserializer counts them as it takes the job's rows (:meth:`MaxErrors.
defer_error_counts`, :meth:`MaxErrors.deferred_errors`, :meth:`MaxErrors.count_errors`), at
the minibatch one process counts them at.  :class:`MaxErrors` is the part of
:class:`~stadyn.io.CTFDeserializer` that does it."""

from __future__ import annotations

import warnings

from .._errors import DataError
from ._ctf_values import text_format_errors

__all__ = ["MaxErrors"]


class MaxErrors:
    """The ``maxErrors`` count of a text format deserializer (see the module docstring).

    Example:
        >>> from stadyn.io import CTFDeserializer, StreamDef, StreamDefs
        >>> text = b'0 |x 1 |y 1\\n0 |x a |y 2\\n1 |x 1 |y 1\\n1 |x b |y 2\\n'
        >>> d = CTFDeserializer.from_bytes(text, StreamDefs(
        ...     x=StreamDef(shape=1), y=StreamDef(shape=1)), "d.ctf", max_errors=1)
        >>> worker = d.copy_for_source()
        >>> worker.defer_error_counts()
        >>> _ = worker.read_batch([0, 1], [None, None])     # both skipped, none counted
        >>> met = worker.deferred_errors(); [line for _, _, line, _ in met]
        [2, 4]
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")             # (line 2: skipped, warned)
        ...     d.count_errors(met)                         # line 4: one too many
        Traceback (most recent call last):
        ...
        stadyn.io._ctf_values.TextFormatError: d.ctf:4: input 'x': value 'b' is not a number ...
    """

    #: the errors met and not counted (a worker process's copy), else None
    _deferred: list[tuple[str, str | None, int | None, int | None]] | None = None

    def _set_max_errors(self, max_errors: int) -> None:
        if int(max_errors) < 0:
            raise ValueError(f"max_errors must be >= 0, got {max_errors}")
        self.max_errors = int(max_errors)
        self._skipped: set[tuple[int | None, str]] = set()   # the malformed inputs met

    def copy_for_source(self):
        """As :meth:`Deserializer.copy_for_source`, the copy counting its own malformed
        inputs from none: CNTK 2.7 makes each source's reader, and its count of errors, anew
        (case ``io42__ctf_max_errors_per_source``).

        Example:
            >>> from stadyn.io import CTFDeserializer, StreamDef, StreamDefs
            >>> d = CTFDeserializer.from_bytes(b'0 |x 1 |y 1\\n0 |x a |y 2\\n',
            ...     StreamDefs(x=StreamDef(shape=1), y=StreamDef(shape=1)), max_errors=1)
            >>> d.copy_for_source()._skipped is d._skipped
            False
        """
        copy = super().copy_for_source()
        copy._skipped = set()
        return copy

    def _skip(self, err: DataError) -> None:
        """Count a malformed input against ``max_errors`` (once per line and message); in
        a worker's copy, keep it for :meth:`deferred_errors` instead."""
        if self._deferred is not None:      # (with the chunk being read whole, if any)
            record = (err.reason, err.path, err.line, self.__dict__.get("_loading"))
            if record not in self._deferred:
                self._deferred.append(record)
            return
        key = (err.line, err.reason)
        if key in self._skipped:
            return
        if len(self._skipped) >= self.max_errors:
            raise DataError(f"{err.reason} (more than maxErrors = {self.max_errors} malformed "
                            "inputs; CNTK: Reached the maximum number of allowed errors)",
                            err.path, err.line)
        self._skipped.add(key)
        warnings.warn(f"{err}; skipped ({len(self._skipped)} of maxErrors = "
                      f"{self.max_errors})", stacklevel=5)

    def defer_error_counts(self) -> None:
        """Skip every malformed input (where ``max_errors`` lets any be skipped) without
        counting it: a worker process's copy, whose errors the source counts."""
        self._deferred = []

    def deferred_errors(self) -> list[tuple[str, str | None, int | None, int | None]]:
        """The malformed inputs skipped since the last call, uncounted: (reason, file,
        line, chunk) each, in the order met; chunk: the one being read whole
        (:meth:`load_chunks`) when it was met, else None (a source counts those of a
        minibatch's chunks in CNTK 2.7's load order, ``WorkerPool.wait_all``)."""
        met, self._deferred = self._deferred or [], [] if self._deferred is not None else None
        return met

    @text_format_errors
    def count_errors(self, met) -> None:
        """Count malformed inputs another copy skipped (:meth:`deferred_errors`), in order,
        as if met here: a warning each, the DataError of the one past ``max_errors``."""
        for reason, path, line, *_ in met:
            self._skip(DataError(reason, path, line))
