"""HTK feature files and the script (SCP) files that list them.

An HTK feature file is a 12-byte header, ``nSamples`` (int32), ``sampPeriod`` (int32, in 100 ns
units), ``sampSize`` (int16, bytes per frame) and ``parmKind`` (int16), followed by the frames.
HTK writes big-endian; like CNTK, the byte order is guessed from the sample period (a period
that reads smaller byte-swapped is taken as swapped). Frames are float32, or, with the
compression flag ``_C`` (``parmKind & 0o2000``), int16 values preceded by two float32 vectors
``A`` and ``B`` (counted as 4 frames in ``nSamples``): ``value = (short + B) / A``. The CRC flag
``_K`` only appends a checksum after the frames; VQ data is refused.

A script line is ``key=path[first,last]``: frames ``first..last`` (inclusive) of ``path``, an
utterance named ``key`` less its extension (CNTK's sequence reading needs the frame range). A
path that starts with ``...`` is relative to the script's folder; other relative paths to the
current folder, as in CNTK.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass

import numpy as np

from .._errors import DataError
from .._fileutil import refuse_special_file
from ._files import read_text_file

__all__ = ["HTKHeader", "ScriptEntry", "read_htk_header", "read_htk_features",
           "write_htk_features", "read_script_file", "decode_frames"]

_BASE_KINDS = {6: "MFCC", 7: "FBANK", 9: "USER", 11: "PLP", 12: "USER"}
_QUALIFIERS = [(0o100, "_E"), (0o400, "_D"), (0o200, "_N"), (0o1000, "_A"), (0o100000, "_T"),
               (0o4000, "_Z"), (0o20000, "_0")]
_COMPRESSED, _CRC, _VQ = 0o2000, 0o10000, 0o40000
_LINE = re.compile(r"^(?P<key>[^=]*)=(?P<path>[^\[]*)(?:\[(?P<first>[^,\]]*),(?P<last>[^\]]*)\])?$")


@dataclass(frozen=True)
class HTKHeader:
    """What an HTK feature file's header says, and where its frames start."""

    frames: int
    period: int
    dim: int
    kind: str
    big_endian: bool
    compressed: bool
    data_offset: int
    scale: np.ndarray | None = None   # A, for compressed files
    bias: np.ndarray | None = None    # B

    @property
    def frame_bytes(self) -> int:
        return self.dim * (2 if self.compressed else 4)


def _kind_name(kind: int, path: str) -> str:
    base = kind & 0o77
    if base not in _BASE_KINDS:
        raise DataError(f"HTK feature kind {base} is not supported (MFCC, FBANK, PLP or USER)",
                        path)
    if kind & _VQ:
        raise DataError("HTK features with VQ data are not supported", path)
    return _BASE_KINDS[base] + "".join(q for bit, q in _QUALIFIERS if kind & bit)


def read_htk_header(path: str | os.PathLike) -> HTKHeader:
    """The header of an HTK feature file (a DataError naming the file if it is not one).

    Example:
        >>> import os, tempfile, numpy as np
        >>> p = os.path.join(tempfile.mkdtemp(), 'u.htk')
        >>> write_htk_features(p, np.zeros((4, 3), np.float32))
        >>> h = read_htk_header(p); (h.frames, h.dim, h.kind, h.period)
        (4, 3, 'USER', 100000)
    """
    path = os.fspath(path)
    refuse_special_file(path, DataError)
    try:
        with open(path, "rb") as f:
            head = f.read(12)
            size = os.fstat(f.fileno()).st_size
            if len(head) < 12:
                raise DataError(f"not an HTK feature file: {len(head)} bytes, shorter than the "
                                f"12-byte header", path)
            big = struct.unpack(">iihh", head)
            little = struct.unpack("<iihh", head)
            # CNTK's guess: big-endian when the period reads smaller that way (unsigned)
            be = (big[1] & 0xFFFFFFFF) < (little[1] & 0xFFFFFFFF)
            frames, period, frame_bytes, kind = big if be else little
            frame_bytes &= 0xFFFF
            name = _kind_name(kind, path)
            compressed = bool(kind & _COMPRESSED)
            width = 2 if compressed else 4
            if frame_bytes == 0 or frame_bytes % width:
                raise DataError(f"HTK header: sample size {frame_bytes} bytes is not a multiple "
                                f"of the {width}-byte values", path)
            dim = frame_bytes // width
            order = ">" if be else "<"
            scale = bias = None
            offset = 12
            if compressed:
                ab = f.read(8 * dim)
                if len(ab) < 8 * dim:
                    raise DataError("HTK header: the file ends inside the decompression vectors",
                                    path)
                scale = np.frombuffer(ab[:4 * dim], order + "f4").astype(np.float32)
                bias = np.frombuffer(ab[4 * dim:], order + "f4").astype(np.float32)
                frames -= 4
                offset += 8 * dim
    except FileNotFoundError:
        raise DataError("HTK feature file does not exist", path) from None
    except IsADirectoryError:
        raise DataError("expected an HTK feature file, found a folder", path) from None
    except OSError as exc:
        raise DataError(f"cannot read the HTK feature file: {exc.strerror or exc}",
                        path) from None
    if frames < 0:
        raise DataError(f"HTK header: {frames} frames", path)
    need = offset + frames * dim * width
    if size < need:
        raise DataError(f"HTK file is truncated: the header declares {frames} frames of {dim} "
                        f"values ({need} bytes), the file has {size}", path)
    return HTKHeader(frames, period, dim, name, be, compressed, offset, scale, bias)


def read_htk_features(path: str | os.PathLike, first: int = 0, last: int | None = None,
                      header: HTKHeader | None = None) -> np.ndarray:
    """Frames ``first..last`` (inclusive; all by default) of an HTK file as float32 (T, dim).

    Example:
        >>> import os, tempfile, numpy as np
        >>> p = os.path.join(tempfile.mkdtemp(), 'u.htk')
        >>> write_htk_features(p, np.arange(8, dtype=np.float32).reshape(4, 2))
        >>> read_htk_features(p, 1, 2).tolist()
        [[2.0, 3.0], [4.0, 5.0]]
    """
    path = os.fspath(path)
    h = header or read_htk_header(path)
    last = h.frames - 1 if last is None else last
    if not 0 <= first <= last or last >= h.frames:
        raise DataError(f"frames [{first},{last}] are outside the file's {h.frames} frames", path)
    count = last - first + 1
    with open(path, "rb") as f:
        data = os.pread(f.fileno(), count * h.frame_bytes, h.data_offset + first * h.frame_bytes)
    if len(data) != count * h.frame_bytes:
        raise DataError("HTK file changed while it was read (it is shorter)", path)
    return decode_frames(data, h, count)


def decode_frames(data: bytes, header: HTKHeader, count: int) -> np.ndarray:
    """``count`` frames of raw file bytes as float32 (count, dim), decompressed if need be."""
    order = ">" if header.big_endian else "<"
    if header.compressed:
        values = np.frombuffer(data, order + "i2").reshape(count, header.dim).astype(np.float32)
        return (values + header.bias) / header.scale
    return np.frombuffer(data, order + "f4").reshape(count, header.dim).astype(np.float32)


def write_htk_features(path: str | os.PathLike, features: np.ndarray, period: int = 100000,
                       kind: int = 9) -> None:
    """Write (T, dim) features as an uncompressed big-endian HTK file (``kind`` 9 is USER).

    Example:
        >>> import os, tempfile, numpy as np
        >>> p = os.path.join(tempfile.mkdtemp(), 'u.htk')
        >>> write_htk_features(p, np.ones((2, 3), np.float32)); os.path.getsize(p)
        36
    """
    x = np.asarray(features, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"features must be (frames, dim), got shape {x.shape}")
    with open(path, "wb") as f:
        f.write(struct.pack(">iihh", x.shape[0], int(period), x.shape[1] * 4, int(kind)))
        f.write(x.astype(">f4").tobytes())


@dataclass(frozen=True)
class ScriptEntry:
    """One utterance of a script file: its key, file, frame range, and the script and line
    that name it."""

    key: str
    path: str
    first: int
    last: int
    script: str
    line: int

    @property
    def frames(self) -> int:
        return self.last - self.first + 1


def _utterance_key(logical: str) -> str:
    dot = logical.rfind(".")
    return logical if dot < 0 else logical[:dot]


def read_script_file(path: str | os.PathLike) -> list[ScriptEntry]:
    """The utterances of an HTK script file: ``key=path[first,last]`` lines.

    Example:
        >>> import os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), 'a.scp')
        >>> _ = open(p, 'w').write('u1.mfc=.../all.htk[0,9]\\n')
        >>> e = read_script_file(p)[0]; (e.key, os.path.basename(e.path), e.frames)
        ('u1', 'all.htk', 10)
    """
    path = os.path.abspath(os.fspath(path))
    text = read_text_file(path, "script (scp) file")
    folder = os.path.dirname(path)
    entries = []
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r").strip()
        if not line:
            continue
        m = _LINE.match(line)
        if m is None:
            raise DataError("expected key=path[first,last] (CNTK reads utterances with their "
                            "frame range)", path, number)
        if m.group("first") is None:
            raise DataError(f"'{line[:60]}' has no frame range: write key=path[first,last]",
                            path, number)
        try:
            first, last = int(m.group("first")), int(m.group("last"))
        except ValueError:
            raise DataError(f"frame range [{m.group('first')},{m.group('last')}] is not two "
                            f"integers", path, number) from None
        if first < 0 or last < first:
            raise DataError(f"frame range [{first},{last}]: the last frame is before the first",
                            path, number)
        file = m.group("path")
        if file.startswith("..."):
            file = os.path.join(folder, file[3:].lstrip("/\\"))
        entries.append(ScriptEntry(_utterance_key(m.group("key")), file, first, last, path,
                                   number))
    return entries
