"""CNTK's ``Record``: a read-only dict whose items are attributes too (what CNTK 2.7's layers
and ``Function`` helpers return: ``cntk.variables.Record``)."""

from __future__ import annotations

__all__ = ["Record"]


class Record(dict):
    """A read-only dict whose items are attributes too (``r.x`` is ``r['x']``).

    Example:
        >>> r = Record(x=1, y=2)
        >>> r.x + r["y"], r.updated_with(y=5).y
        (3, 5)
    """

    def __init__(self, **args_dict):
        super().__init__(args_dict)

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"record has no attribute {key!r}") from None

    def __setattr__(self, key, value):
        raise AttributeError("record is immutable")

    def updated_with(self, **kwargs) -> "Record":
        """A new Record with ``kwargs`` added or replaced."""
        d = dict(self)
        d.update(kwargs)
        return Record(**d)
