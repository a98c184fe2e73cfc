"""CNTK Text Format (CTF): ``[seqId] |name v v v |name2 idx:val idx:val |# comment``.

- one line holds one sample of one or more inputs; values are separated by spaces or tabs;
- a line may start with a sequence id; consecutive lines with the same id form one sequence;
  in a file whose first text is a ``|`` (no ids) every line is a sequence of its own (its key
  is its line number);
- ``|#`` starts a comment that runs to the end of the line or to the next ``|`` not followed by
  ``#`` (so ``|#`` inside a comment is an escaped pipe);
- a dense input has at most ``dim`` values (fewer are filled up with zeros, with a warning, as
  CNTK does), a sparse one ``index:value`` pairs with ``0 <= index < dim`` (an index given
  twice adds up, as CNTK 2.7 gives); a value is a decimal number as CNTK's
  ``TextParser::TryReadRealNumber`` reads it: ``[+-]digits[.[digits]]`` with an optional
  ``e``/``E`` exponent ``[+-]digits`` after the digits or after a fraction (``1e5``, ``+3``,
  ``1.``, ``-1.5e+2``); ``.5``, ``1.e5``, ``1e``, ``nan``, ``inf``, ``0x10``, ``1,2`` are errors,
  and a value too large for float32 is ``inf``, as CNTK gives;
- white space at the start of the file and a UTF-8 byte order mark are skipped; after that
  every line is a row, as CNTK 2.7's indexer counts them: a blank or comment-only line (or, in
  a file with ids, a line without one) is a row of the sequence before it, or without ids a
  sequence of its own, without inputs (an error when read; CNTK's "Could not read a row"), and
  so is a line holding only an id; any other line without a ``|`` is an error, and so is a
  file without samples;
- lines end at ``\n`` only; a control character (a lone CR) ends an input's values, as CNTK's
  ``isNonPrintable`` does;
- a sequence id is the digits at the very start of a line, a number (``00`` and ``0`` are one
  id, ``1a`` is 1); a line not starting with digits (``abc |x 1``, `` 7 |x 1``) continues the
  sequence before it, and its text before the first ``|`` is an error maxErrors counts; a file
  whose first text is neither digits nor ``|`` is an error, as in CNTK 2.7;
- an input given twice on a line of a sequence leaves it with more samples than lines: one
  error maxErrors counts ("Input ('y') contains more samples than expected"), after which the
  samples are all kept; a file whose sequences are all one line is then read as sequences, that
  line's of two samples, as CNTK 2.7 does (so is a file with CR-only line ends, one long line).

The file is indexed when the deserializer is made (byte offsets of sequences, found with NumPy)
and parsed lazily, sequence by sequence, in whichever process reads it.
"""

from __future__ import annotations

import mmap
import os
import re
import warnings
from typing import Callable, Sequence

import numpy as np

from .._errors import DataError
from .._fileutil import refuse_special_file
from ._ctf_streams import bar_positions, input_counts
from ._ctf_chunks import WholeChunkParses
from ._ctf_errors import MaxErrors
from ._ctf_index import CTFIndex as _Index   # (tests count the files indexed through it)
from ._ctf_stored import stored_batch, stored_zeros
from ._ctf_values import InputField, parse_values, text_format_errors
from ._deserializer import Deserializer, StreamBatch, StreamSpec, byte_chunks, pad_sequences
from ._random import SampleRandom
from ._streams import StreamDef, iter_stream_defs

__all__ = ["CTFDeserializer"]

_COMMENT = re.compile(r"\|#(?:[^|]|\|#)*")
_LEADING_DIGITS = re.compile(r"[0-9]*", re.ASCII)
# below ' ' but not a tab or a newline: CNTK's isNonPrintable, which ends an input's values
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f]")


def _repeats_an_input(data, index: _Index, fields: dict[str, InputField]) -> bool:
    """Whether some line of a file whose sequences are all one line gives an input of the
    streams twice (``|x 1 |x 2``, or a file with CR-only line ends, one line to CNTK): CNTK 2.7
    then delivers that line as a sequence of both samples, so the file is read as sequences.
    Only lines with more '|' than there are streams are looked at."""
    if not len(index) or (index.line_counts > 1).any():
        return False
    bars = bar_positions(data)
    counts = np.searchsorted(bars, index.ends) - np.searchsorted(bars, index.starts)
    for k in np.flatnonzero(counts > len(fields)).tolist():
        line = bytes(data[int(index.starts[k]):int(index.ends[k])]).decode("utf-8", "replace")
        names = [segment.split(None, 1)[0] for segment in
                 _COMMENT.sub("", line).split("|")[1:] if segment[:1].strip()]
        named = [n for n in names if n in fields]
        if len(named) != len(set(named)):
            return True
    return False


def _parse_line(text: str, fields: dict[str, InputField], source: str,
                line: int, skip: Callable[[DataError], None] | None = None
                ) -> list[tuple[str, np.ndarray, "np.ndarray | None"]]:
    """(input name, value array, its stored zeros) for every known input on one line, in
    order (:func:`stored_zeros`).  A malformed
    input is a DataError, or, with ``skip``, handed to it and left out (CNTK's ``maxErrors``:
    ``TryReadSample`` fails, ``SkipToNextInput``)."""
    text = _COMMENT.sub("", text.rstrip("\r"))
    bar = text.find("|")
    head = text[:bar] if bar >= 0 else text
    # CNTK's TryReadRow skips the digits at the very start of a line (the id, in any file);
    # other text before the first '|' (a word, an id after spaces, "1.5", "-1") it counts
    # ("Unexpected character ... in place of a name prefix") and reads on from the next '|'
    head = head[_LEADING_DIGITS.match(head).end():].split()
    if head:
        err = DataError(f"unexpected text {' '.join(head)[:40]!r} before the first '|' (a "
                        "sequence id is the digits at the start of the line)", source, line)
        if skip is None:
            raise err
        skip(err)
    if bar < 0:
        return []
    samples = []
    for segment in text[bar + 1:].split("|"):
        parts = segment.split(None, 1)
        name = parts[0] if parts and not segment[0].isspace() else ""
        values = parts[1] if len(parts) > 1 else ""
        # CNTK ends an input's values at a control character (a lone CR, a form feed): what
        # follows it on the line must start with a '|' ("Unexpected character ... in place of a
        # name prefix"), not continue the values
        cut = _CONTROL.search(values)
        stray = ""
        if cut:
            values, stray = values[:cut.start()], _CONTROL.sub(" ", values[cut.start():]).strip()
        try:
            if not name:
                raise DataError("'|' must be followed by an input name", source, line)
            field = fields.get(name)
            if field is None:
                continue
            parsed = parse_values(field, name, values, source, line)
            samples.append((name, parsed, stored_zeros(field, values, parsed)))
            if stray:
                raise DataError(f"unexpected text {stray[:40]!r} after a control character "
                                f"(such as a lone carriage return) in input {name!r}: CNTK ends "
                                "the input's values there and expects a '|' next", source, line)
        except DataError as err:
            if skip is None:
                raise
            skip(err)
    return samples


# CNTK 2.7's CTF reader's own settings (TextConfigHelper.cpp:123-133), set on its deserializer
# as on a dict: those that only tune its engine are taken and change nothing here
_NO_EFFECT_KEYS = ("traceLevel", "keepDataInMemory", "cacheIndex",
                   "sampleBasedRandomizationWindow")
_REFUSED_KEYS = {"skipSequenceIds": "every line its own sequence, ids ignored",
                 "frameMode": "use MinibatchSource(frame_mode=True)"}


def _missing(name: str, text: str) -> str:
    """Why a line of a file whose sequences are all one line lacks an input."""
    if not _COMMENT.sub("", text).strip(" \t\r"):
        return (f"input {name!r} is missing from this line: it is blank or only a comment, and "
                "CNTK 2.7 counts every line as a sample, so it is a sample without inputs "
                "(remove the line)")
    return f"input {name!r} is missing from this line"


class CTFDeserializer(WholeChunkParses, MaxErrors, Deserializer):
    """Samples from a CNTK Text Format file (CNTK's ``CTFDeserializer``).

    Args:
        filename: the CTF file.
        streams: ``StreamDefs(features=StreamDef(field='x', shape=784),
            labels=StreamDef(field='y', shape=10, is_sparse=True))``; ``field`` is the input name
            after ``|`` (the stream name when omitted).

    When every sequence is one line, a stream delivers ``(N, *shape)`` float32. When a file has
    sequences (lines sharing an id, or a line giving an input twice), every stream delivers
    ``(N, T, *shape)`` padded with zeros plus per-sequence lengths. Sparse inputs are delivered
    dense. Inputs the streams do not name are skipped. A malformed line is a DataError (and
    RuntimeError, CNTK's type: ``TextFormatError``) naming the file and line (a line of text
    without any ``|`` when the deserializer is made, other lines when they are read); so is a
    file without samples, when the deserializer is made.

    ``max_errors`` (CNTK's ``maxErrors``, 0 by default) is how many malformed inputs (a value
    that is not a number, too many values, a bad sparse pair, a ``|`` without a name) are
    skipped, each with a warning, before the next one is an error ("Reached the maximum number
    of allowed errors"); an input is counted once however often its line is read.  As in CNTK,
    the rest of the line is read, so a sequence's streams may then have different lengths; an
    input left with no sample in its sequence (every line of a sequence of one line) is still an
    error, as is (counted) a sequence of which some line gave no sample at all, and (counted, once
    a sequence) a sequence with more samples of an input than lines (an input given twice on a
    line).

    Example:
        >>> from stadyn.io import StreamDef, StreamDefs
        >>> ctf = CTFDeserializer.from_bytes(b'|x 1 2 |y 1:1\\n|x 3 4 |# a note |y 0:1\\n',
        ...     StreamDefs(x=StreamDef(shape=2), y=StreamDef(shape=2, is_sparse=True)))
        >>> {k: v.tolist() for k, v in ctf.read(1).items()}
        {'x': [3.0, 4.0], 'y': [1.0, 0.0]}
    """

    #: (a source reads a copy: a key set later changes nothing under it, as in CNTK 2.7)
    copied_by_sources = True

    @text_format_errors
    def __init__(self, filename: str | os.PathLike, streams: dict[str, StreamDef],
                 max_errors: int = 0):
        self._given_file = os.fspath(filename)      # (d["file"]: the path as given)
        self.path = os.path.abspath(self._given_file)
        self._fields = self._make_fields(streams)
        self._set_max_errors(max_errors)
        refuse_special_file(self.path, DataError)
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size == 0:
                    data = b""
                    self._index = _Index(data, self.path)
                else:
                    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                        self._index = _Index(data, self.path)
                        self._repeats = _repeats_an_input(data, self._index, self._fields)
        except FileNotFoundError:
            raise DataError("CTF file does not exist", self.path) from None
        except IsADirectoryError:
            raise DataError("expected a CTF file, found a folder", self.path) from None
        except OSError as exc:
            raise DataError(f"cannot read the CTF file: {exc.strerror or exc}", self.path) from None
        self._bytes: bytes | None = None
        self._h_file = None
        self._finish_init()

    @classmethod
    @text_format_errors
    def from_bytes(cls, data: bytes, streams: dict[str, StreamDef],
                   source: str = "<bytes>", max_errors: int = 0) -> "CTFDeserializer":
        """A deserializer over CTF text held in memory; ``source`` names it in errors."""
        self = cls.__new__(cls)
        self.path = source
        self._fields = cls._make_fields(streams)
        self._set_max_errors(max_errors)
        self._bytes = bytes(data)
        self._index = _Index(self._bytes, source)
        self._repeats = _repeats_an_input(self._bytes, self._index, self._fields)
        self._h_file = None
        self._finish_init()
        return self

    def __setitem__(self, key: str, value) -> None:
        """CNTK 2.7's dict-style setting of its reader's keys, ``d["maxErrors"] = 2`` (see
        :attr:`max_errors`) and ``d["chunkSizeInBytes"] = n`` (:attr:`chunk_bytes`);
        ``traceLevel``, ``keepDataInMemory``, ``cacheIndex`` and
        ``sampleBasedRandomizationWindow`` are taken and change nothing; ``skipSequenceIds``
        and ``frameMode`` are not supported (a ValueError); another key, which CNTK's reader
        does not read either, is kept with a warning.

        Example:
            >>> from stadyn.io import StreamDef, StreamDefs
            >>> d = CTFDeserializer.from_bytes(b'0 |x 1 |y 1\\n0 |x a |y 2\\n',
            ...     StreamDefs(x=StreamDef(shape=1), y=StreamDef(shape=1)))
            >>> d["maxErrors"] = 1
            >>> d.max_errors, d["maxErrors"]
            (1, 1)
        """
        if key == "maxErrors":
            self._set_max_errors(int(value))
        elif key == "chunkSizeInBytes":
            if int(value) <= 0:
                raise ValueError(f"chunkSizeInBytes must be > 0, got {value}")
            self.chunk_bytes = int(value)
            self._drop_parses()
        elif key in _REFUSED_KEYS:
            raise ValueError(f"CTFDeserializer: {key!r} ({_REFUSED_KEYS[key]}) is not supported "
                             "by Stadyn")
        elif key not in _NO_EFFECT_KEYS:
            warnings.warn(f"CTFDeserializer: {key!r} is not a setting of CNTK's text format "
                          f"reader (it reads maxErrors, chunkSizeInBytes, "
                          f"{', '.join(_NO_EFFECT_KEYS)}); it is kept and does nothing",
                          stacklevel=2)
        self.__dict__.setdefault("_settings", {})[key] = value

    def __getitem__(self, key: str):
        """A setting as CNTK 2.7's deserializer dict gives it: ``file``, ``type``, one set with
        ``d[key] = value`` (``maxErrors`` also when given to the constructor), else ``None``
        (CNTK 2.7's dictionary holds no default: ``d["chunkSizeInBytes"]`` of a deserializer
        reading its 32 MB chunks is ``None`` there, case ``io40r__dict_unset_keys``)."""
        if key == "file":
            return self.__dict__.get("_given_file", self.path)
        if key == "type":
            return "CNTKTextFormatDeserializer"
        settings = self.__dict__.get("_settings", {})
        if key in settings:
            return settings[key]
        if key == "maxErrors" and self.max_errors:
            return self.max_errors
        return None

    @staticmethod
    def _make_fields(streams: dict[str, StreamDef]) -> dict[str, InputField]:
        fields: dict[str, InputField] = {}
        for name, definition in iter_stream_defs(streams):
            if definition.shape is None:
                raise ValueError(f"CTF stream {name!r} needs a shape (its dimension)")
            fld = definition.field or name
            if fld in fields:
                raise ValueError(f"two CTF streams read input {fld!r}")
            fields[fld] = InputField(name, definition.shape, definition.is_sparse)
        if not fields:
            raise ValueError("CTFDeserializer needs at least one stream")
        return fields

    def _finish_init(self) -> None:
        if not len(self._index):
            raise DataError("no samples (the CTF file is empty or holds only white space)",
                            self.path)
        # a file of one-line sequences is read one sample a line, unless a line gives an
        # input twice: then, as CNTK 2.7 does, as sequences (that line's of two samples)
        self._sequence_mode = bool((self._index.line_counts > 1).any()
                                   or self.__dict__.get("_repeats", False))
        # Validate the first sequence now, so a wrongly declared file fails at once; errors
        # maxErrors counts wait until it is read (maxErrors may still be set: d["maxErrors"])
        self._parse_sequence(0, counted=False)
        # (the file that read opened reopens lazily on the next read: a source reads its own
        # copy of this deserializer, so a handle kept here would stay open until collected)
        self._close_handles()

    def __len__(self) -> int:
        return len(self._index)

    def keys(self) -> list[str]:
        return self._index.keys

    #: CNTK 2.7's text-format chunk size (its ``chunkSizeInBytes`` default)
    chunk_bytes = 32 * 1024 * 1024

    def chunk_sizes(self) -> np.ndarray:
        """CNTK 2.7's chunks: sequences are added to a chunk while the chunk's bytes (from its
        first sequence's start to its last one's end) plus the next sequence's stay within
        :attr:`chunk_bytes`."""
        # (a sequence's bytes: its lines)
        return byte_chunks(self._index.starts, self._index.ends + 1, self.chunk_bytes)

    def sequence_lengths(self) -> np.ndarray | None:
        return self._index.line_counts if self._sequence_mode else None

    def stream_lengths(self) -> dict[str, np.ndarray]:
        """Samples of each sequence in each stream (a label given on a sequence's first line
        only: 1 each, beside its features' lines), as CNTK 2.7's reader lays each stream out;
        the file is scanned once (NumPy) when first asked."""
        if self.__dict__.get("_stream_lengths") is None:
            if self._bytes is not None:
                self._stream_lengths = input_counts(self._bytes, self._index.starts, self._fields)
            else:
                with open(self.path, "rb") as f, \
                        mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                    self._stream_lengths = input_counts(data, self._index.starts, self._fields)
        return dict(self._stream_lengths)

    def sequence_line(self, i: int) -> int:
        return int(self._index.first_lines[i])

    def stream_specs(self) -> dict[str, StreamSpec]:
        return {f.stream: StreamSpec(f.shape, np.dtype(np.float32), f.sparse, self._sequence_mode)
                for f in self._fields.values()}

    def _raw(self, i: int) -> bytes:
        start, end = int(self._index.starts[i]), int(self._index.ends[i])
        if self._bytes is not None:
            return self._bytes[start:end]
        if self._h_file is None:
            try:
                self._h_file = open(self.path, "rb")
            except OSError as exc:
                raise DataError(f"cannot open the CTF file: {exc.strerror or exc}",
                                self.path) from None
        data = os.pread(self._h_file.fileno(), end - start, start)
        if len(data) != end - start:
            raise DataError("the CTF file changed since it was indexed (it is shorter)",
                            self.path, int(self._index.first_lines[i]))
        return data

    def _parse_sequence(self, i: int, counted: bool = True,
                        zeros: "dict[str, list] | None" = None) -> dict[str, list[np.ndarray]]:
        """Each stream's samples of sequence ``i``; ``zeros``, where given, gets each
        stream's stored zeros (``(step, mask)`` of the samples storing any:
        :func:`stored_zeros`)."""
        raw = self._raw(i)
        first = int(self._index.first_lines[i])
        out: dict[str, list[np.ndarray]] = {f.stream: [] for f in self._fields.values()}
        line_no = first
        bare: list[int] = []        # lines of a sequence without any input of the streams
        twice: dict[str, int] = {}  # an input given twice on a line: the first such line
        ignored: list[DataError] = []
        skip = (self._skip if self.max_errors else None) if counted else ignored.append
        for raw_line in raw.split(b"\n"):
            # every line is a row (CNTK's indexer counts each, blank and comment-only too)
            try:
                text = raw_line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"not UTF-8 text (byte 0x{raw_line[exc.start]:02x})",
                                self.path, line_no) from None
            seen = set()
            samples = _parse_line(text, self._fields, self.path, line_no,
                                  skip)
            for name, values, stored in samples:
                # (one sample a line: _repeats_an_input found no line giving an input twice
                # with all the others, so another input is missing from this one, just below)
                if name in seen:
                    twice.setdefault(name, line_no)
                seen.add(name)
                out[self._fields[name].stream].append(values)
                if zeros is not None and stored is not None:   # (step, its stored zeros)
                    stream = self._fields[name].stream
                    zeros.setdefault(stream, []).append((len(out[stream]) - 1, stored))
            if self._sequence_mode and not samples:   # TryReadRow: "Could not read a row"
                bare.append(line_no)
            if not self._sequence_mode and not ignored:
                missing = [n for n in self._fields if n not in seen]
                if missing:
                    raise DataError(_missing(missing[0], text), self.path, line_no)
            line_no += 1
        # CNTK's TextParser::LoadSequence: an input with no sample in a sequence is an error
        # ("Input ('x') is empty in sequence ... Malformed input file"), not an empty sequence
        # (a tag misspelled in the file, or a stream the file does not have, read as nothing)
        if ignored:             # malformed inputs while checking: reading the sequence decides
            return out
        empty = [n for n, f in self._fields.items() if not out[f.stream]]
        if empty:
            stream = self._fields[empty[0]].stream
            named = "" if stream == empty[0] else f" (stream {stream!r})"
            raise DataError(f"input {empty[0]!r}{named} is empty in sequence "
                            f"{self._index.keys[i]!r} (no line of the sequence gives it; the "
                            f"file's inputs are named by their '|name' tags)", self.path, first)
        # counted errors, after that one (which names a misspelled tag): a line without any
        # input of the streams, and then the sequence falling short of its lines
        if not counted:
            return out
        for line_no in bare:
            self._skip(DataError("no input of the streams on this line (CNTK counts every line "
                                 "as a row, so a blank or comment-only line is a row of the "
                                 "sequence before it, without inputs)", self.path, line_no))
        lines = int(self._index.line_counts[i])
        over = [n for n, f in self._fields.items() if len(out[f.stream]) > lines]
        if over:
            # LoadSequence: "Input ('y') contains more samples than expected (3 vs. 2)", one
            # error a sequence; then it does not also check for too few samples
            name = over[0]
            self._skip(DataError(
                f"input {name!r} is given twice on this line, so sequence "
                f"{self._index.keys[i]!r} has {len(out[self._fields[name].stream])} samples of "
                f"it for {lines} lines (CNTK: contains more samples than expected)",
                self.path, twice.get(name, first)))
        elif self._sequence_mode and max(len(v) for v in out.values()) < lines:
            # LoadSequence: "Number of samples for sequence ... is less than expected"
            self._skip(DataError(f"sequence {self._index.keys[i]!r} has {lines} lines but at "
                                 f"most {max(len(v) for v in out.values())} samples of an input",
                                 self.path, first))
        return out

    @text_format_errors
    def read_batch(self, ids: Sequence[int],
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        zeros: list[dict[str, list]] = [{} for _ in ids]
        parsed = [self._take(int(i), z) for i, z in zip(ids, zeros)]
        out = {}
        for f in self._fields.values():
            if self._sequence_mode:
                arrays = [np.stack(p[f.stream]) if p[f.stream]
                          else np.zeros((0,) + f.shape, np.float32) for p in parsed]
                out[f.stream] = pad_sequences(arrays, f.shape, np.dtype(np.float32))
            else:
                out[f.stream] = StreamBatch(np.stack([p[f.stream][0] for p in parsed]))
            out[f.stream].stored = stored_batch(f, [z.get(f.stream, []) for z in zeros],
                                                 out[f.stream].data.shape,
                                                 self._sequence_mode)
        return out
