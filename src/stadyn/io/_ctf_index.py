"""The index of a CNTK Text Format file: where each sequence's lines are (byte range, first
line number, line count) and its key, found with NumPy when a
:class:`~stadyn.io.CTFDeserializer` is made, as CNTK 2.7's ``TextInputIndexBuilder`` groups
lines (IndexBuilder.cpp): white space at the start of the file is skipped, then every line is
a row; in a file whose first text is a ``|`` every line is a sequence keyed by its line
number from 0, otherwise a line starting with an id other than the current sequence's starts
a sequence and any other line is a row of the current one.

"""

from __future__ import annotations

import codecs
import re

import numpy as np

from .._errors import DataError
from ._ctf_streams import _CHUNK, byte_positions

__all__ = ["CTFIndex"]

# a sequence id is the digits at the very start of a line, read as a number (CNTK's
# TextInputIndexBuilder::TryGetNumericSequenceId, IndexBuilder.cpp:384-411): "abc", " 7", "-1"
# give none, "1a" gives 1, "00" and "0" are the same id
_ID = re.compile(rb"[0-9]+")
_MAX_ID = (1 << 64) - 1         # a size_t; a longer id is CNTK's "Overflow while reading ..."


def _bytes_at(data, offsets: np.ndarray) -> np.ndarray:
    """The bytes of ``data`` at ``offsets``, copied: no view outlives the call (an mmap with a
    view cannot be closed, which would hide a DataError raised while indexing it)."""
    return np.frombuffer(data, dtype=np.uint8)[offsets]


_SPACES = np.frombuffer(b" \t\r\n\v\f", np.uint8)


def _first_text(data, start: int) -> int:
    """The offset of the first byte at or after ``start`` that is not white space (the
    length of ``data`` when there is none)."""
    view = np.frombuffer(data, dtype=np.uint8)
    for at in range(start, len(view), _CHUNK):
        found = np.flatnonzero(~np.isin(view[at:at + _CHUNK], _SPACES))
        if found.size:
            return at + int(found[0])
    return len(view)


class CTFIndex:
    """Where each sequence's lines are: byte range, first line number, line count, key.

    Example:
        >>> index = CTFIndex(b"0 |x 1\\n0 |x 2\\n7 |x 3\\n", "d.ctf")
        >>> index.keys, index.line_counts.tolist(), index.first_lines.tolist()
        (['0', '7'], [2, 1], [1, 3])
    """

    def __init__(self, data, source: str):
        ends = byte_positions(data, ord("\n"))
        size = len(data)
        bom = len(codecs.BOM_UTF8) if bytes(data[:3]) == codecs.BOM_UTF8 else 0
        starts = np.concatenate([[bom], ends + 1]).astype(np.int64)
        ends = np.concatenate([ends, [size]]).astype(np.int64)
        numbers = np.arange(1, len(starts) + 1, dtype=np.int64)
        if len(starts) and starts[-1] == ends[-1]:      # nothing after the last newline
            starts, ends, numbers = starts[:-1], ends[:-1], numbers[:-1]
        # CNTK's indexer (TextInputIndexBuilder) skips the white space at the start of the file;
        # after that every line is a row: a blank or comment-only line is a row without inputs
        skip_to = _first_text(data, bom)
        keep = ends > skip_to
        starts, ends, numbers = starts[keep], ends[keep], numbers[keep]
        if len(starts):
            starts[0] = max(int(starts[0]), skip_to)   # the first line is read from its text
        seq_start, seq_end, seq_line, seq_count, keys = [], [], [], [], []
        if len(starts) and bytes(data[skip_to:skip_to + 1]) == b"|":
            # no sequence ids (the first text is a '|'): every line is a sequence of its own
            first = _bytes_at(data, starts)
            for k in np.flatnonzero(first != ord("|")).tolist():
                line = bytes(data[starts[k]:ends[k]])
                if b"|" not in line and line.strip():
                    text = line.strip().decode("utf-8", "replace")
                    raise DataError(f"unexpected text {text[:40]!r} on a line without '|' "
                                    f"(not a sample, not a '|#' comment)", source,
                                    int(numbers[k]))
            seq_start, seq_end, seq_line = starts, ends, numbers
            seq_count = np.ones(len(seq_start), np.int64)
            # each line's key is its number counted from 0, as CNTK's index keys it (the line
            # count of its reader, IndexBuilder.cpp:273; BufferedFileReader.h:35-45): the key
            # an image map file's line has too (ImageDataDeserializer.cpp:163-174)
            self.keys: list[str] = [str(n - 1) for n in seq_line.tolist()]
            self.explicit_ids = False
        else:
            # a line starting with an id other than the current sequence's starts a sequence;
            # any other line (same id, no id, blank, comment only) is a row of the current one
            prev_id = None
            for s, e, n in zip(starts.tolist(), ends.tolist(), numbers.tolist()):
                line = bytes(data[s:e])
                # text without a '|' is an error, except an id alone ("0   "): a row without
                # inputs (CNTK reads the id, then counts "Could not read a row")
                if b"|" not in line and len(line.split()) > 1:
                    text = line.strip().decode("utf-8", "replace")
                    raise DataError(f"unexpected text {text[:40]!r} on a line without '|' "
                                    f"(not a sample, not a '|#' comment)", source, n)
                # a line without digits at its start continues the sequence before it
                m = _ID.match(line)
                seq_id = int(m.group(0)) if m else None
                if seq_id is not None and seq_id > _MAX_ID:
                    raise DataError(f"sequence id {m.group(0)[:30].decode()} is too large (CNTK: "
                                    "Overflow while reading a numeric sequence id)", source, n)
                if seq_start and (seq_id is None or seq_id == prev_id):
                    seq_end[-1] = e
                    seq_count[-1] += 1
                    continue
                if seq_id is None:
                    text = line.strip().decode("utf-8", "replace")[:40]
                    raise DataError(f"expected a sequence id (digits) at the start of the file's "
                                    f"first line, found {text!r}: CNTK 2.7 reads only numeric "
                                    "ids (CNTK: Expected a sequence id)", source, n)
                prev_id = seq_id
                seq_start.append(s)
                seq_end.append(e)
                seq_line.append(n)
                seq_count.append(1)
                keys.append(str(seq_id))
            self.keys = keys
            self.explicit_ids = True
        self.starts = np.asarray(seq_start, dtype=np.int64)
        self.ends = np.asarray(seq_end, dtype=np.int64)
        self.first_lines = np.asarray(seq_line, dtype=np.int64)
        self.line_counts = np.asarray(seq_count, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.starts)
