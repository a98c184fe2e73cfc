"""Image bytes: reading them from files and zip members, decoding them with OpenCV.

OpenCV decodes to HWC uint8 in **BGR** order, which is what CNTK's ImageDeserializer delivered.
Measured here on 40x40 PNGs: ``cv2.imdecode`` 14 us/image, Pillow ``Image.open(...).convert``
38 us/image; with a crop and a resize 16 us against 46 us (see docs/readers.md).

Before decoding, the header's width x height is checked against the ``image_pixels`` limit
(``stadyn.io.set_limits``). libjpeg decodes a JPEG whose data stops early (a truncated file with
an end marker appended) without an error, filling the rest with gray, and only prints a warning
on the C ``stderr``; :func:`decode_image` catches that warning and refuses the image.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import zipfile
import zlib

import numpy as np

from .._fileutil import refuse_special_file, special_file_kind
from ._image_header import image_format, image_size
from ._limits import over_limit

# OpenCV is imported on the first image decoded or encoded (:func:`require_cv2`), not with the
# package: importing it costs ~20-40 ms and ~30 shared libraries that programs without images
# never use (docs/performance.md, "Start-up").
_cv2 = None

__all__ = ["require_cv2", "decode_image", "encode_image", "ImageReadError", "read_file_bytes",
           "ZipArchives", "image_format"]


class ImageReadError(Exception):
    """Internal: why an image could not be read; callers turn it into a located DataError."""


def require_cv2():
    """The cv2 module (imported on the first call), or an ImportError that says which package
    provides it.

    Example:
        >>> require_cv2().__name__
        'cv2'
    """
    global _cv2
    if _cv2 is None:
        try:
            import cv2
        except ImportError:
            raise ImportError("stadyn.io needs OpenCV for images: "
                              "pip install opencv-python-headless") from None
        _cv2 = cv2
    return _cv2


def _looks_truncated(data: bytes, fmt: str | None) -> bool:
    """JPEG without an end-of-image marker after its last scan, PNG without IEND."""
    if fmt == ".jpg":
        last_scan = data.rfind(b"\xff\xda")
        return last_scan < 0 or data.find(b"\xff\xd9", last_scan) < 0
    if fmt == ".png":
        return data.rfind(b"IEND") < 0
    return False


# libjpeg's warnings that mean pixels were lost: its data ran out or did not decode.
_JPEG_DAMAGE = (b"Premature end of JPEG file", b"Corrupt JPEG data: premature end",
                b"Corrupt JPEG data: bad Huffman code", b"Corrupt JPEG data: found marker")
_stderr_lock = threading.Lock()
_capture: list = [None, None]           # [pid, fd] of this process's capture file


def _capture_fd() -> int:
    if _capture[0] != os.getpid():      # a forked child must not share its parent's file
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create("stadyn-libjpeg", getattr(os, "MFD_CLOEXEC", 0))
        else:  # pragma: no cover - non-Linux
            import tempfile
            fd = os.dup(tempfile.TemporaryFile().fileno())
        _capture[:] = [os.getpid(), fd]
    return _capture[1]


def _decode_jpeg(cv, buffer: np.ndarray, flag: int) -> tuple[np.ndarray | None, bytes]:
    """``cv2.imdecode`` of a JPEG and the warning libjpeg printed meanwhile (b'' when none).

    libjpeg prints (only) its first warning to file descriptor 2; for the length of the call
    that descriptor is a private file. Anything else written there meanwhile (another thread's
    output) is passed on to the real stderr afterwards.
    """
    with _stderr_lock:
        fd = _capture_fd()
        try:
            sys.stderr.flush()
        except (AttributeError, OSError, ValueError):
            pass
        try:
            saved = os.dup(2)
        except OSError:                 # no stderr at all: nothing to catch
            return cv.imdecode(buffer, flag), b""
        os.dup2(fd, 2)
        try:
            image = cv.imdecode(buffer, flag)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        size = os.fstat(fd).st_size
        if not size:
            return image, b""
        text = os.pread(fd, size, 0)
        os.ftruncate(fd, 0)
    damage = [line for line in text.splitlines() if line.startswith(_JPEG_DAMAGE)]
    other = b"".join(line + b"\n" for line in text.splitlines() if line not in damage)
    if other:
        os.write(2, other)
    return image, b"; ".join(damage)


def decode_image(data: bytes, channels: int = 3) -> np.ndarray:
    """Decode encoded image bytes to an (H, W, C) uint8 array, BGR for C = 3.

    Raises:
        ImageReadError: empty, unknown, corrupt or truncated data, or a header that declares
            more pixels than the ``image_pixels`` limit (checked before anything is allocated).

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
    size = image_size(data, fmt)
    if size is not None:
        width, height = size
        name = fmt[1:].upper() if fmt else "image"
        refused = over_limit("image_pixels", width * height,
                             f"the {name} header declares {width}x{height} = "
                             f"{width * height:,} pixels")
        if refused:
            raise ImageReadError(refused)
    flag = cv.IMREAD_GRAYSCALE if channels == 1 else cv.IMREAD_COLOR
    buffer = np.frombuffer(data, np.uint8)
    try:
        if fmt == ".jpg":
            image, damage = _decode_jpeg(cv, buffer, flag)
            if damage:
                raise ImageReadError(f"the JPEG data is truncated or corrupt ({len(data)} bytes; "
                                     f"libjpeg: {damage.decode('ascii', 'replace')})")
        else:
            image = cv.imdecode(buffer, flag)
    except cv.error as exc:  # OpenCV raises for empty buffers and failed allocations
        raise ImageReadError(f"OpenCV cannot decode it: {str(exc).strip()[-200:]}") from None
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
        # O_NONBLOCK: opening a FIFO must not wait for a writer (fstat refuses it next)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise ImageReadError(f"image file {path!r} does not exist") from None
    except ValueError:      # an embedded NUL byte
        raise ImageReadError(f"image path {path!r} holds a NUL byte") from None
    except OSError as exc:
        raise ImageReadError(f"cannot open image file {path!r}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        kind = special_file_kind(info.st_mode)
        if kind is not None:
            raise ImageReadError(f"{path!r} is {kind}, not a regular file (Stadyn reads only "
                                 f"regular files)")
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError
        size = info.st_size
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
    """Zip archives opened once per process and kept open (CNTK's ``archive.zip@/member``).

    Members must be stored or deflated (what CNTK's reader took; bzip2 and LZMA members inflate
    without a bound on the output of each step) and declare at most the ``archive_member_bytes``
    limit; they are read in bounded steps, never past their declared size.
    """

    def __init__(self) -> None:
        self._open: dict[str, zipfile.ZipFile] = {}

    def read(self, archive: str, member: str) -> bytes:
        zf = self._open.get(archive)
        if zf is None:
            refuse_special_file(archive, ImageReadError)
            try:
                zf = zipfile.ZipFile(archive)
            except FileNotFoundError:
                raise ImageReadError(f"zip archive {archive!r} does not exist") from None
            except (zipfile.BadZipFile, OSError) as exc:
                raise ImageReadError(f"cannot open zip archive {archive!r}: {exc}") from None
            self._open[archive] = zf
        try:
            info = zf.getinfo(member)
        except KeyError:
            raise ImageReadError(f"zip archive {archive!r} has no member {member!r}") from None
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ImageReadError(f"member {member!r} of {archive!r} is compressed with method "
                                 f"{info.compress_type}; only stored and deflated members are "
                                 f"read")
        refused = over_limit("archive_member_bytes", info.file_size,
                             f"member {member!r} of {archive!r} declares {info.file_size:,} "
                             f"bytes")
        if refused:
            raise ImageReadError(refused)
        try:
            with zf.open(info) as f:
                return f.read(info.file_size)
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
