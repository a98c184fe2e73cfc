"""What an encoded image declares before it is decoded: its format and its width and height.

A decoder allocates the whole image from the header's width and height, so a 1 MB PNG that
declares 20000 x 20000 pixels costs 1.2 GB before a single pixel is checked. The header is read
here first (PNG, JPEG, BMP and PPM/PGM by hand, in microseconds; other formats by Pillow, which
reads only the header) so that the caller can refuse the image.
"""

from __future__ import annotations

import io
import re
import struct
import warnings

__all__ = ["image_format", "image_size"]

# Start-of-frame markers carry the size: C0-CF except DHT (C4), JPG (C8) and DAC (CC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_PNM = re.compile(rb"P[1-6](?:\s+|#[^\n]*\n)*(\d+)(?:\s+|#[^\n]*\n)+(\d+)")


def image_format(data: bytes) -> str | None:
    """'.jpg', '.png', '.bmp', ... from the first bytes, or None when unknown.

    Example:
        >>> image_format(b'\\x89PNG\\r\\n\\x1a\\n...'), image_format(b'hello')
        ('.png', None)
    """
    if data[:3] == b"\xff\xd8\xff":
        return ".jpg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return ".png"
    if data[:2] == b"BM":
        return ".bmp"
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return ".tif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ".webp"
    if data[:2] in (b"P5", b"P6"):
        return ".ppm"
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i, n = 2, len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:                      # fill byte
            i += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:
            i += 2
            continue
        if marker == 0xDA or marker == 0xD9:    # a scan (or the end) before any frame header
            return None
        if marker in _SOF:
            if i + 9 > n:
                return None
            height, width = struct.unpack_from(">HH", data, i + 5)
            return width, height
        i += 2 + struct.unpack_from(">H", data, i + 2)[0]
    return None


def _bmp_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 26:
        return None
    if struct.unpack_from("<I", data, 14)[0] == 12:       # BITMAPCOREHEADER
        return struct.unpack_from("<HH", data, 18)
    width, height = struct.unpack_from("<ii", data, 18)
    return abs(width), abs(height)


def _pillow_size(data: bytes) -> tuple[int, int] | None:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow is a dependency
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(data)) as image:     # reads the header only
                return image.size
    except Image.DecompressionBombError as exc:
        found = re.search(r"\((\d+) pixels\)", str(exc))
        return (int(found.group(1)), 1) if found else None
    except Exception:  # noqa: BLE001 - any other format or damage: the decoder will say
        return None


def image_size(data: bytes, fmt: str | None = None) -> tuple[int, int] | None:
    """(width, height) as the encoded image's header declares them, or None when it cannot be
    read (the decoder then reports the damage). ``fmt`` is :func:`image_format`'s answer.

    Example:
        >>> png = (b'\\x89PNG\\r\\n\\x1a\\n' + b'\\x00\\x00\\x00\\rIHDR'
        ...        + struct.pack('>II', 20000, 30000) + b'\\x08\\x02\\x00\\x00\\x00')
        >>> image_size(png)
        (20000, 30000)
    """
    fmt = image_format(data) if fmt is None else fmt
    if fmt == ".png":
        if len(data) < 24 or data[12:16] != b"IHDR":
            return None
        return struct.unpack_from(">II", data, 16)
    if fmt == ".jpg":
        return _jpeg_size(data)
    if fmt == ".bmp":
        return _bmp_size(data)
    if data[:1] == b"P":
        found = _PNM.match(data[:4096])
        if found:
            return int(found.group(1)), int(found.group(2))
    return _pillow_size(data)
