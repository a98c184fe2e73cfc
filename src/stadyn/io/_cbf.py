"""CNTK Binary Format (CBF), CNTK 2.7's version 1, all numbers little-endian:

- ``uint64`` magic ``0x636e746b5f62696e`` (``cntk_bin``), ``uint32`` version 1;
- chunks, each: ``uint32`` samples of each of its sequences, then every input in header order,
  for each sequence of the chunk: dense: ``uint32`` samples, ``samples * dim`` values; sparse
  (CSC): ``uint32`` samples, ``uint32`` nnz, ``nnz`` values, ``nnz`` ``int32`` row indices
  (within the sample), ``samples`` ``int32`` non-zero counts a sample;
- the header: magic again, ``uint32`` chunks, ``uint32`` inputs; per input ``uint8`` encoding
  (0 dense, 1 sparse CSC), ``uint32`` name length and the name (ASCII), ``uint8`` element type
  (0 float32, 1 float64), ``uint32`` sample dimension;
- the chunk table: per chunk ``int64`` offset, ``uint32`` sequences, ``uint32`` samples;
- ``int64`` offset of the header, the file's last 8 bytes.

:func:`write_cbf` writes this layout (what CNTK's ``ctf2bin.py`` makes from a CTF file).
"""

from __future__ import annotations

import os
import struct
import warnings
from typing import Mapping, Sequence

import numpy as np

from .._errors import DataError
from .._fileutil import refuse_special_file
from ._deserializer import Deserializer, StreamBatch, StreamSpec, pad_sequences
from ._random import SampleRandom
from ._reader_errors import reader_errors
from ._settings import DictSettings
from ._streams import StreamDef, iter_stream_defs

__all__ = ["CBFDeserializer", "write_cbf", "CBF_MAGIC"]

CBF_MAGIC = 0x636E746B5F62696E
_VERSION = 1
_TYPES = {0: np.dtype("<f4"), 1: np.dtype("<f8")}
_MAX_DENSE = 1 << 28     # values of one sparse sequence delivered dense (1 GiB of float32)


class _Input:
    __slots__ = ("name", "stream", "sparse", "dtype", "dim")

    def __init__(self, name: str, sparse: bool, dtype: np.dtype, dim: int):
        self.name, self.stream, self.sparse, self.dtype, self.dim = name, name, sparse, dtype, dim


class _Reader:
    """Bounds-checked little-endian reads of a byte buffer, errors naming the file."""

    def __init__(self, data: bytes, path: str, at: int = 0, what: str = "header"):
        self.data, self.path, self.at, self.what = data, path, at, what

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize("<" + fmt)
        if self.at + size > len(self.data):
            raise DataError(f"CBF file ends inside the {self.what} (byte {self.at})", self.path)
        out = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += size
        return out

    def array(self, dtype: np.dtype, count: int) -> np.ndarray:
        size = np.dtype(dtype).itemsize * count
        if count < 0 or self.at + size > len(self.data):
            raise DataError(f"CBF file ends inside the {self.what} (byte {self.at})", self.path)
        out = np.frombuffer(self.data, dtype, count, self.at)
        self.at += size
        return out


class CBFDeserializer(DictSettings, Deserializer):
    """Sequences from a CNTK Binary Format file (CNTK's ``CBFDeserializer``).

    Args:
        filename: the CBF file.
        streams: optional ``StreamDefs(name=StreamDef(field='input_in_file', ...))``: renames the
            file's inputs (the streams not named keep the file's names).  As in CNTK 2.7 the
            file decides the rest: a stream naming an input the file lacks is left out, a
            ``shape`` other than the file's dimension gives way to it (a warning for each).

    Every input of the file is a stream of sequences, float32 ``(T, dim)`` padded (sparse inputs
    delivered dense). The chunk table is read when the deserializer is made, a chunk when one of
    its sequences is read. A file that is not CBF, of another version, or cut short is an error
    naming the file.

    Example:
        >>> import os, tempfile, numpy as np
        >>> p = os.path.join(tempfile.mkdtemp(), 'd.cbf')
        >>> write_cbf(p, {'x': [np.ones((2, 3)), np.zeros((1, 3))]})
        >>> des = CBFDeserializer(p)
        >>> len(des), des.read(0)['x'].shape
        (2, (2, 3))
    """

    cntk_type = "CNTKBinaryFormatDeserializer"   # (its configuration's, ``_settings.py``)

    @reader_errors
    def __init__(self, filename: str | os.PathLike, streams: Mapping[str, StreamDef] | None = None):
        self._given_file = os.fspath(filename)
        self.path = os.path.abspath(self._given_file)
        refuse_special_file(self.path, DataError)
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                start = f.read(12)
                if len(start) < 12 or struct.unpack("<Q", start[:8])[0] != CBF_MAGIC:
                    raise DataError("not a CNTK binary format (CBF) file: no magic number",
                                    self.path)
                version = struct.unpack("<I", start[8:])[0]
                if version != _VERSION:
                    raise DataError(f"CBF version {version}; Stadyn reads CNTK 2.7's version 1",
                                    self.path)
                if size < 20:
                    raise DataError("CBF file ends before its header offset", self.path)
                header_at = struct.unpack("<q", os.pread(f.fileno(), 8, size - 8))[0]
                if not 12 <= header_at < size - 8:
                    raise DataError(f"CBF header offset {header_at} is outside the file",
                                    self.path)
                tail = os.pread(f.fileno(), size - 8 - header_at, header_at)
        except FileNotFoundError:
            raise DataError("CBF file does not exist", self.path) from None
        except IsADirectoryError:
            raise DataError("expected a CBF file, found a folder", self.path) from None
        except OSError as exc:
            raise DataError(f"cannot read the CBF file: {exc.strerror or exc}", self.path) from None
        r = _Reader(tail, self.path)
        if r.take("Q")[0] != CBF_MAGIC:
            raise DataError(f"no magic number at the header (byte {header_at})", self.path)
        chunks, inputs = r.take("II")
        self._inputs: list[_Input] = []
        for _ in range(inputs):
            encoding, length = r.take("BI")
            name = bytes(r.array(np.uint8, length)).decode("ascii", "replace")
            kind, dim = r.take("BI")
            if encoding not in (0, 1):
                raise DataError(f"input {name!r}: unknown encoding {encoding}", self.path)
            if kind not in _TYPES:
                raise DataError(f"input {name!r}: unknown element type {kind}", self.path)
            self._inputs.append(_Input(name, encoding == 1, _TYPES[kind], dim))
        r.what = "chunk table"
        table = [r.take("qII") for _ in range(chunks)]
        if r.at != len(tail):
            raise DataError(f"{len(tail) - r.at} unexpected bytes after the chunk table",
                            self.path)
        self._chunk_starts = np.array([t[0] for t in table] + [header_at], dtype=np.int64)
        counts = np.array([t[1] for t in table], dtype=np.int64)
        self._first_seq = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        for k, (offset, _, _) in enumerate(table):
            if not 12 <= offset <= self._chunk_starts[k + 1]:
                raise DataError(f"chunk {k} starts at byte {offset}, outside the data", self.path)
        self._apply(streams or {})
        self._h_chunk: tuple[int, list[dict[str, np.ndarray]],
                             list[dict[str, np.ndarray]]] | None = None
        self._lengths = np.concatenate([self._sequence_lengths(k) for k in range(chunks)]) \
            if chunks else np.zeros(0, np.int64)

    def _apply(self, streams: Mapping[str, StreamDef]) -> None:
        """Rename the file's inputs as ``streams`` says.  As CNTK 2.7's reader, whose stream
        definitions only rename (BinaryConfigHelper.cpp:30-50; BinaryChunkDeserializer.cpp:
        105-117 takes every input, its name and dimension, from the file): a stream naming an
        input the file lacks is left out, and a declared shape other than the file's gives
        way to the file's dimension (each with a warning naming the file)."""
        by_name = {i.name: i for i in self._inputs}
        for name, definition in iter_stream_defs(streams):
            field = definition.field or name
            target = by_name.get(field)
            if target is None:
                warnings.warn(f"{self.path}: stream {name!r} reads input {field!r}, which the "
                              f"file does not have (it has {', '.join(sorted(by_name))}); left "
                              f"out, as CNTK 2.7 does", stacklevel=4)
                continue
            if definition.shape is not None and tuple(definition.shape) != (target.dim,):
                warnings.warn(f"{self.path}: stream {name!r} declares shape "
                              f"{definition.shape}, input {field!r} has dimension "
                              f"{target.dim}; the file's dimension is read, as CNTK 2.7 does",
                              stacklevel=4)
            target.stream = name
        names = [i.stream for i in self._inputs]
        if len(set(names)) != len(names):
            raise ValueError(f"two CBF streams have one name: {names}")

    def _chunk_bytes(self, k: int) -> bytes:
        start, end = int(self._chunk_starts[k]), int(self._chunk_starts[k + 1])
        with open(self.path, "rb") as f:
            data = os.pread(f.fileno(), end - start, start)
        if len(data) != end - start:
            raise DataError("the CBF file changed since it was opened (it is shorter)",
                            self.path)
        return data

    def _sequence_lengths(self, k: int) -> np.ndarray:
        count = int(self._first_seq[k + 1] - self._first_seq[k])
        start = int(self._chunk_starts[k])
        if 4 * count > int(self._chunk_starts[k + 1]) - start:
            raise DataError(f"chunk {k} declares {count} sequences, more than its "
                            f"{int(self._chunk_starts[k + 1]) - start} bytes can hold", self.path)
        with open(self.path, "rb") as f:
            data = os.pread(f.fileno(), 4 * count, start)
        return _Reader(data, self.path, what=f"chunk {k}").array(np.dtype("<u4"), count) \
            .astype(np.int64)

    def _parse_chunk(self, k: int) -> tuple[list[dict[str, np.ndarray]],
                                            list[dict[str, np.ndarray]]]:
        """Each sequence of chunk ``k``: its streams' dense samples, and the zeros a sparse
        stream's samples store (bool, the samples' shape; only where there are any), which
        CNTK 2.7's CBF reader keeps as entries of its sparse data, as its CTF reader does
        (a weight multiplied by it has a block of the row-sparse gradient for their rows)."""
        count = int(self._first_seq[k + 1] - self._first_seq[k])
        r = _Reader(self._chunk_bytes(k), self.path, 4 * count, f"chunk {k}")
        out: list[dict[str, np.ndarray]] = [{} for _ in range(count)]
        zeros: list[dict[str, np.ndarray]] = [{} for _ in range(count)]
        for inp in self._inputs:
            for s in range(count):
                samples = r.take("I")[0]
                if not inp.sparse:
                    values = r.array(inp.dtype, samples * inp.dim)
                    out[s][inp.stream] = values.reshape(samples, inp.dim).astype(np.float32)
                    continue
                nnz = r.take("I")[0]
                values = r.array(inp.dtype, nnz).astype(np.float32)
                rows = r.array(np.dtype("<i4"), nnz)
                per_sample = r.array(np.dtype("<i4"), samples)
                if per_sample.sum() != nnz or (per_sample < 0).any():
                    raise DataError(f"chunk {k}, sequence {int(self._first_seq[k]) + s}, input "
                                    f"{inp.name!r}: the non-zero counts do not add up to {nnz}",
                                    self.path)
                if nnz and (rows.min() < 0 or rows.max() >= inp.dim):
                    raise DataError(f"chunk {k}, sequence {int(self._first_seq[k]) + s}, input "
                                    f"{inp.name!r}: a row index is outside 0..{inp.dim - 1}",
                                    self.path)
                if samples * inp.dim > _MAX_DENSE:
                    raise DataError(f"chunk {k}, input {inp.name!r}: {samples} samples of "
                                    f"dimension {inp.dim} are too many values to deliver dense "
                                    f"(over {_MAX_DENSE})", self.path)
                dense = np.zeros((samples, inp.dim), dtype=np.float32)
                at = np.repeat(np.arange(samples), per_sample)
                dense[at, rows] = values
                out[s][inp.stream] = dense
                if (values == 0).any():
                    mask = np.zeros(dense.shape, bool)
                    mask[at[values == 0], rows[values == 0]] = True
                    zeros[s][inp.stream] = mask & (dense == 0)
        return out, zeros

    def _sequence(self, i: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Sequence ``i``'s streams and its sparse streams' stored zeros (:meth:`_parse_chunk`)."""
        k = int(np.searchsorted(self._first_seq, i, side="right")) - 1
        if self._h_chunk is None or self._h_chunk[0] != k:
            self._h_chunk = (k, *self._parse_chunk(k))
        j = i - int(self._first_seq[k])
        return self._h_chunk[1][j], self._h_chunk[2][j]

    def close(self) -> None:
        self._h_chunk = None

    def __len__(self) -> int:
        return int(self._first_seq[-1])

    def chunk_sizes(self) -> np.ndarray:
        """The chunks the file stores."""
        return np.diff(self._first_seq).astype(np.int64)

    def sequence_lengths(self) -> np.ndarray:
        return self._lengths

    def stream_specs(self) -> dict[str, StreamSpec]:
        return {i.stream: StreamSpec((i.dim,), np.dtype(np.float32), i.sparse, True)
                for i in self._inputs}

    @reader_errors
    def read_batch(self, ids: Sequence[int],
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        seqs = [self._sequence(int(i)) for i in ids]
        out = {}
        for inp in self._inputs:
            out[inp.stream] = pad_sequences([s[inp.stream] for s, _ in seqs], (inp.dim,),
                                            np.dtype(np.float32))
            if any(inp.stream in z for _, z in seqs):
                out[inp.stream].stored = pad_sequences(
                    [z.get(inp.stream, np.zeros(s[inp.stream].shape, bool)) for s, z in seqs],
                    (inp.dim,), np.dtype(bool)).data
        return out


def write_cbf(path: str | os.PathLike, streams: Mapping[str, Sequence[np.ndarray]],
              sparse: Sequence[str] = (), sequences_per_chunk: int = 1024) -> None:
    """Write sequences as a CBF file CNTK 2.7 reads: ``streams`` maps each input name to a
    list of (T_i, dim) arrays (one per sequence, the same count for every input); inputs named
    in ``sparse`` are stored sparse (their non-zeros).

    Example:
        >>> import os, tempfile, numpy as np
        >>> p = os.path.join(tempfile.mkdtemp(), 'd.cbf')
        >>> write_cbf(p, {'x': [np.eye(2)], 'y': [np.eye(3)[:1]]}, sparse=['y'])
        >>> CBFDeserializer(p).read(0)['y'].tolist()
        [[1.0, 0.0, 0.0]]
    """
    names = list(streams)
    seqs = {n: [np.atleast_2d(np.asarray(s, dtype=np.float32)) for s in streams[n]]
            for n in names}
    counts = {len(v) for v in seqs.values()}
    if len(counts) != 1:
        raise ValueError(f"every input needs the same number of sequences, got "
                         f"{ {n: len(v) for n, v in seqs.items()} }")
    dims = {}
    for n in names:
        ds = {s.shape[1] for s in seqs[n]}
        if len(ds) != 1:
            raise ValueError(f"input {n!r}: sequences of several dimensions {sorted(ds)}")
        dims[n] = ds.pop()
    total = counts.pop()
    out = bytearray(struct.pack("<QI", CBF_MAGIC, _VERSION))
    table = []
    for c0 in range(0, total, max(1, int(sequences_per_chunk))):
        ids = range(c0, min(total, c0 + sequences_per_chunk))
        offset = len(out)
        lengths = [max(seqs[n][i].shape[0] for n in names) for i in ids]
        out += np.asarray(lengths, "<u4").tobytes()
        for n in names:
            for i in ids:
                x = seqs[n][i]
                if n not in sparse:
                    out += struct.pack("<I", x.shape[0]) + x.astype("<f4").tobytes()
                    continue
                rows, cols = np.nonzero(x)
                out += struct.pack("<II", x.shape[0], len(rows))
                out += x[rows, cols].astype("<f4").tobytes() + cols.astype("<i4").tobytes()
                out += np.bincount(rows, minlength=x.shape[0]).astype("<i4").tobytes()
        table.append((offset, len(lengths), sum(lengths)))
    header = len(out)
    out += struct.pack("<QII", CBF_MAGIC, len(table), len(names))
    for n in names:
        encoded = n.encode("ascii")
        out += struct.pack("<BI", 1 if n in sparse else 0, len(encoded)) + encoded
        out += struct.pack("<BI", 0, dims[n])
    for offset, count, samples in table:
        out += struct.pack("<qII", offset, count, samples)
    out += struct.pack("<q", header)
    with open(path, "wb") as f:
        f.write(bytes(out))
