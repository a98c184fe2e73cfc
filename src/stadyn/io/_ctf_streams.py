"""How many samples each sequence of a CTF file gives each of its streams, found with NumPy: a
label given on a sequence's first line only is one sample a sequence beside its features'
lines, as CNTK 2.7's text reader lays each stream out (each input its own count of samples);
and the chunked byte scan both this and the CTF index (its line ends) use.
"""

from __future__ import annotations

import numpy as np

from ._ctf_values import InputField

__all__ = ["input_counts", "bar_positions", "byte_positions"]

_CHUNK = 1 << 26
_WHITE = np.frombuffer(b" \t\r\n", np.uint8)


def byte_positions(data, byte: int) -> np.ndarray:
    """The offsets of every ``byte`` in ``data`` (bytes or a memory map), scanned ``_CHUNK``
    bytes at a time so that no copy of the file is made.

    >>> byte_positions(b"0 |x 1\\n1 |x 2\\n", ord("\\n")).tolist()
    [6, 13]
    """
    view = np.frombuffer(data, dtype=np.uint8)
    found = [np.flatnonzero(view[at:at + _CHUNK] == byte) + at
             for at in range(0, len(view), _CHUNK)]
    return np.concatenate(found) if found else np.zeros(0, np.int64)


def bar_positions(data) -> np.ndarray:
    """The byte offsets of every ``|`` in ``data`` (:func:`byte_positions`).

    >>> bar_positions(b"0 |x 1 |y 2\\n").tolist()
    [2, 7]
    """
    return byte_positions(data, ord("|"))


def _bytes_at(view: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``view[at]``, a line end where ``at`` is past the end of the file."""
    out = np.full(len(at), ord("\n"), np.uint8)
    inside = at < len(view)
    out[inside] = view[at[inside]]
    return out


def input_counts(data, starts: np.ndarray,
                 fields: dict[str, InputField]) -> dict[str, np.ndarray]:
    """Samples of each sequence (starting at byte ``starts[k]``) in each stream: the times its
    input is named (``|x`` before white space) in the sequence's lines.  A comment (``|#``)
    ends at the next ``|``, so it names none.

    >>> from stadyn.io._ctf_values import InputField
    >>> text = b"0 |x 1 |y 1\\n0 |x 2\\n1 |x 3 |# y\\n1 |x 4 |y 0\\n"
    >>> fields = {"x": InputField("a", (1,), False), "y": InputField("b", (1,), False)}
    >>> {k: v.tolist() for k, v in input_counts(text, np.array([0, 19]), fields).items()}
    {'a': [2, 2], 'b': [1, 1]}
    """
    view = np.frombuffer(data, dtype=np.uint8)
    bars = bar_positions(data)
    out = {}
    for name, f in fields.items():
        key = name.encode()
        ok = np.isin(_bytes_at(view, bars + 1 + len(key)), _WHITE)
        for k, byte in enumerate(key):
            ok &= _bytes_at(view, bars + 1 + k) == byte
        seq = np.searchsorted(starts, bars[ok], side="right") - 1
        out[f.stream] = np.bincount(seq[seq >= 0], minlength=len(starts)).astype(np.int64)
    return out
