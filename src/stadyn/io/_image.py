"""Image bytes: reading them from files and zip members, decoding them with OpenCV.

OpenCV decodes to HWC uint8 in **BGR** order, which is what CNTK's ImageDeserializer delivered.
Measured here on 40x40 PNGs: ``cv2.imdecode`` 14 us/image, Pillow ``Image.open(...).convert``
38 us/image; with a crop and a resize 16 us against 46 us (see docs/readers.md).
"""

from __future__ import annotations

import os
import zipfile
import zlib

import numpy as np

try:
    import cv2
except ImportError:  # pragma: no cover - exercised only without OpenCV
    cv2 = None

__all__ = ["require_cv2", "decode_image", "encode_image", "ImageReadError", "read_file_bytes",
           "ZipArchives", "image_format"]


class ImageReadError(Exception):
    """Internal: why an image could not be read; callers turn it into a located DataError."""


def require_cv2():
    """The cv2 module, or an ImportError that says which package provides it."""
    if cv2 is None:
        raise ImportError("stadyn.io needs OpenCV for images: pip install opencv-python-headless")
    return cv2


def image_format(data: bytes) -> str | None:
    """'.jpg', '.png', '.bmp', ... from the first bytes, or None when unknown."""
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


def _looks_truncated(data: bytes, fmt: str | None) -> bool:
    """JPEG without an end-of-image marker after its last scan, PNG without IEND."""
    if fmt == ".jpg":
        last_scan = data.rfind(b"\xff\xda")
        return last_scan < 0 or data.find(b"\xff\xd9", last_scan) < 0
    if fmt == ".png":
        return data.rfind(b"IEND") < 0
    return False


def decode_image(data: bytes, channels: int = 3) -> np.ndarray:
    """Decode encoded image bytes to an (H, W, C) uint8 array, BGR for C = 3.

    Raises:
        ImageReadError: empty, unknown, corrupt or truncated data.

    Example:
        >>> png = encode_image(np.full((2, 3, 3), (1, 2, 3), np.uint8), '.png')
        >>> decode_image(png)[0, 0].tolist(), decode_image(png, channels=1).shape
        ([1, 2, 3], (2, 3, 1))
    """
    cv = require_cv2()
    if not data:
        raise ImageReadError("the image file is empty")
    fmt = image_format(data)
    if _looks_truncated(data, fmt):
        raise ImageReadError(f"the {fmt[1:].upper()} data is truncated ({len(data)} bytes)")
    flag = cv.IMREAD_GRAYSCALE if channels == 1 else cv.IMREAD_COLOR
    try:
        image = cv.imdecode(np.frombuffer(data, np.uint8), flag)
    except cv.error as exc:  # pragma: no cover - OpenCV raises only for empty buffers
        raise ImageReadError(f"OpenCV cannot decode it: {exc}") from None
    if image is None:
        kind = "an image OpenCV can decode" if fmt is None else f"a valid {fmt[1:].upper()} image"
        raise ImageReadError(f"not {kind} (corrupt or unknown format, {len(data)} bytes)")
    if image.ndim == 2:
        image = image[:, :, None]
    return image


def encode_image(image: np.ndarray, fmt: str = ".png", quality: int | None = None) -> bytes:
    """Encode an (H, W, C) BGR uint8 image; ``quality`` is JPEG 1-100 or PNG compression 0-9.

    Example:
        >>> encode_image(np.zeros((4, 4, 3), np.uint8), '.png')[:4]
        b'\\x89PNG'
    """
    cv = require_cv2()
    fmt = fmt.lower() if fmt.startswith(".") else "." + fmt.lower()
    params: list[int] = []
    if quality is not None:
        if fmt in (".jpg", ".jpeg"):
            params = [cv.IMWRITE_JPEG_QUALITY, int(min(max(quality, 1), 100))]
        elif fmt == ".png":
            params = [cv.IMWRITE_PNG_COMPRESSION, int(min(max(quality, 0), 9))]
    ok, buf = cv.imencode(fmt, image, params)
    if not ok:  # pragma: no cover - OpenCV fails only on bad arguments
        raise ValueError(f"OpenCV could not encode a {image.shape} image as {fmt}")
    return buf.tobytes()


def read_file_bytes(path: str) -> bytes:
    """The whole content of ``path``; a missing or unreadable file is an ImageReadError.

    Plain ``os`` calls: for small images ``open()``'s buffered file object costs as much as the
    read itself.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise ImageReadError(f"image file {path!r} does not exist") from None
    except OSError as exc:
        raise ImageReadError(f"cannot open image file {path!r}: {exc.strerror or exc}") from None
    try:
        size = os.fstat(fd).st_size
        chunks = [os.read(fd, size + 1)]
        while chunks[-1]:
            chunks.append(os.read(fd, 1 << 20))
        return b"".join(chunks) if len(chunks) > 2 else chunks[0]
    except IsADirectoryError:
        raise ImageReadError(f"{path!r} is a folder, not an image file") from None
    except OSError as exc:
        raise ImageReadError(f"cannot read image file {path!r}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


class ZipArchives:
    """Zip archives opened once per process and kept open (CNTK's ``archive.zip@/member``)."""

    def __init__(self) -> None:
        self._open: dict[str, zipfile.ZipFile] = {}

    def read(self, archive: str, member: str) -> bytes:
        zf = self._open.get(archive)
        if zf is None:
            try:
                zf = zipfile.ZipFile(archive)
            except FileNotFoundError:
                raise ImageReadError(f"zip archive {archive!r} does not exist") from None
            except (zipfile.BadZipFile, OSError) as exc:
                raise ImageReadError(f"cannot open zip archive {archive!r}: {exc}") from None
            self._open[archive] = zf
        try:
            return zf.read(member)
        except KeyError:
            raise ImageReadError(f"zip archive {archive!r} has no member {member!r}") from None
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError) as exc:
            raise ImageReadError(f"cannot read member {member!r} of {archive!r}: {exc}") from None

    def close(self) -> None:
        for zf in self._open.values():
            zf.close()
        self._open.clear()

    def __getstate__(self) -> dict:
        return {"_open": {}}

    def __setstate__(self, state: dict) -> None:
        self._open = {}
