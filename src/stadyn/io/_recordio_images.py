"""MXNet's image records (an :data:`IRHeader`, packed ``<IfQQ``, its extra float32 labels,
then the encoded image) and im2rec's ``.lst`` lists (:mod:`._recordio` has the format)."""

from __future__ import annotations

import os
import struct
from collections import namedtuple
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .._errors import DataError
from ._files import atomic_write, read_data_file
from ._image import ImageReadError, decode_image, encode_image

__all__ = ["IRHeader", "pack_image_record", "unpack_image_record", "pack_image", "unpack_image",
           "ListEntry", "read_list_file", "write_list_file"]

_IR_FORMAT = "<IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)

IRHeader = namedtuple("IRHeader", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """Header of an MXNet image record: ``flag`` (number of labels that follow, 0 for
one label held in ``label``), ``label`` (float, or an array when ``flag > 0``), ``id``, ``id2``."""


def pack_image_record(header: IRHeader | tuple, data: bytes) -> bytes:
    """An image-record payload: IRHeader, extra labels, then ``data`` (MXNet's ``pack``).

    A number as ``header.label`` is stored in the header with flag 0; a sequence of labels sets
    flag to their count, the header label to 0, and follows the header as float32.

    Example:
        >>> pack_image_record(IRHeader(0, 3.0, 7, 0), b'IMG').hex(' ')
        '00 00 00 00 00 00 40 40 07 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 49 4d 47'
        >>> unpack_image_record(pack_image_record(IRHeader(0, [1, 2], 7, 0), b'IMG'))[0].flag
        2
    """
    header = IRHeader(*header)
    if isinstance(header.label, (int, float, np.number)):
        head = struct.pack(_IR_FORMAT, 0, float(header.label), int(header.id), int(header.id2))
        return head + bytes(data)
    labels = np.asarray(header.label, dtype="<f4").reshape(-1)
    head = struct.pack(_IR_FORMAT, labels.size, 0.0, int(header.id), int(header.id2))
    return head + labels.tobytes() + bytes(data)


def unpack_image_record(payload: bytes, path: str = "<record>",
                        record: int | None = None) -> tuple[IRHeader, bytes]:
    """(IRHeader, image bytes) of an image-record payload; with ``flag > 0`` the header's label
    is a float32 array of ``flag`` labels. A payload too short is a DataError."""
    if len(payload) < _IR_SIZE:
        raise DataError(f"image record of {len(payload)} bytes is shorter than its "
                        f"{_IR_SIZE}-byte header", path, record=record)
    flag, label, rid, rid2 = struct.unpack_from(_IR_FORMAT, payload)
    rest = payload[_IR_SIZE:]
    if flag > 0:
        if len(rest) < 4 * flag:
            raise DataError(f"image record says it holds {flag} labels but has only "
                            f"{len(rest)} bytes after its header", path, record=record)
        label = np.frombuffer(rest, dtype="<f4", count=flag).astype(np.float32)
        rest = rest[4 * flag:]
    return IRHeader(flag, label, rid, rid2), rest


def pack_image(header: IRHeader | tuple, image: np.ndarray, quality: int = 95,
               img_fmt: str = ".jpg") -> bytes:
    """Encode an (H, W, C) BGR uint8 image with OpenCV and pack it (MXNet's ``pack_img``)."""
    return pack_image_record(header, encode_image(image, img_fmt, quality))


def unpack_image(payload: bytes, channels: int = 3, path: str = "<record>",
                 record: int | None = None) -> tuple[IRHeader, np.ndarray]:
    """(IRHeader, decoded (H, W, C) BGR uint8 image) of an image record."""
    header, data = unpack_image_record(payload, path, record)
    try:
        return header, decode_image(data, channels)
    except ImageReadError as exc:
        raise DataError(f"image record: {exc}", path, record=record) from None


@dataclass(frozen=True)
class ListEntry:
    """One line of an im2rec ``.lst`` file."""

    index: int
    labels: tuple[float, ...]
    path: str


def _format_label(value: float) -> str:
    return f"{value:f}"


def write_list_file(path: str | os.PathLike, entries: Sequence[ListEntry]) -> None:
    """Write ``index<TAB>label[<TAB>label...]<TAB>path`` lines, labels as ``%f`` (as im2rec)."""
    lines = []
    for e in entries:
        if "\t" in e.path or "\n" in e.path:
            raise ValueError(f"path {e.path!r} cannot be written in a list file")
        labels = "".join(_format_label(v) + "\t" for v in e.labels)
        lines.append(f"{int(e.index)}\t{labels}{e.path}\n")
    atomic_write(path, "".join(lines))


def read_list_file(path: str | os.PathLike) -> list[ListEntry]:
    """Read an im2rec ``.lst`` file; a malformed line is a DataError naming the line (an index
    that an image record header cannot hold, 0 to 2**64 - 1, a path with a NUL byte)."""
    path = os.fspath(path)
    data = read_data_file(path, "list file")
    entries = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise DataError("not UTF-8 text", path, number) from None
        if not line:
            continue
        fields = [f.strip() for f in line.split("\t")]
        if len(fields) < 3:
            raise DataError("expected 'index<TAB>label[<TAB>label...]<TAB>path'", path, number)
        try:
            index = int(fields[0])
            labels = tuple(float(v) for v in fields[1:-1])
        except ValueError:
            raise DataError(f"index must be an integer and labels numbers: {line[:60]!r}", path,
                            number) from None
        if not 0 <= index < 1 << 64:
            raise DataError(f"index {index} is outside 0..2**64-1 (an image record's id)", path,
                            number)
        if "\x00" in fields[-1]:
            raise DataError(f"image path {fields[-1][:80]!r} holds a NUL byte", path, number)
        entries.append(ListEntry(index, labels, fields[-1]))
    return entries
