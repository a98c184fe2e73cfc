"""NNabla's ``image_utils``: read, save and resize images as NumPy arrays, in RGB order.

``imread`` returns ``(height, width, channels)`` uint8 (``(height, width)`` for grey images),
``imsave`` takes the same (or floats in ``[0, 1]``, scaled to 0-255), and ``imresize`` takes a
``size`` of ``(width, height)`` -- NNabla's conventions.  Two backends do the work, as in
NNabla: ``PilBackend`` (Pillow; NNabla's default, and ours when Pillow is installed: the same
library gives the same pixels for the same file and arguments) and ``Cv2Backend`` (OpenCV,
which Stadyn always has; it also reads and writes 16-bit images, which Pillow's backend hands
on to it).  ``set_backend(name)`` picks one for every call.

Files are written atomically (a temporary file renamed over the target), so an interrupted
``imsave`` never leaves half an image.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .._errors import DataError
from .._fileutil import atomic_write

__all__ = ["imread", "imsave", "imresize", "set_backend", "get_backend",
           "get_available_backends", "rescale_pixel_intensity", "minmax_auto_scale"]

_NUM_CHANNELS = (-1, 0, 1, 3, 4)


def _pil():
    try:
        from PIL import Image
    except ImportError:
        return None
    return Image


# -- pixel values ----------------------------------------------------------------------------


def _normalize(img: np.ndarray, low: Any, high: Any) -> np.ndarray:
    span = high - low
    if span == 0:
        return img if low == 0 else img / low
    return (img - low) / span


def rescale_pixel_intensity(img: np.ndarray, input_low: float = 0, input_high: float = 255,
                            output_low: float = 0, output_high: float = 255,
                            output_type: Any = None) -> np.ndarray:
    """Map ``[input_low, input_high]`` linearly onto ``[output_low, output_high]`` and cast to
    ``output_type`` (default: the input's dtype).

    Example:
        >>> import numpy as np
        >>> rescale_pixel_intensity(np.array([0.0, 0.5, 1.0]), 0, 1, 0, 255, np.uint8).tolist()
        [0, 127, 255]
    """
    if not isinstance(img, np.ndarray):
        raise DataError(f"rescale_pixel_intensity takes a numpy.ndarray, not "
                        f"{type(img).__name__}")
    output_type = img.dtype if output_type is None else output_type
    if input_low == output_low and output_low == output_high:
        return np.asarray(img, output_type)
    scaled = _normalize(img, input_low, input_high) * (output_high - output_low) + output_low
    return scaled.astype(output_type)


def minmax_auto_scale(img: np.ndarray, as_uint16: bool) -> np.ndarray:
    """Stretch ``img`` from its minimum and maximum to 0-255 (uint8) or 0-65535 (uint16).

    Example:
        >>> import numpy as np
        >>> minmax_auto_scale(np.array([2.0, 3.0, 4.0]), False).tolist()
        [0, 127, 255]
    """
    high, dtype = (65535, np.uint16) if as_uint16 else (255, np.uint8)
    return rescale_pixel_intensity(img, img.min(), img.max(), 0, high, dtype)


def _upscale(img: np.ndarray, as_uint16: bool) -> np.ndarray:
    """OpenCV's backend: float [0, 1] or uint8 up to the saved dtype's range."""
    if img.dtype == np.uint16:
        return img
    if img.dtype == np.uint8:
        return np.asarray(img, np.uint16) * 256 if as_uint16 else img
    return np.asarray(img * 65535, np.uint16) if as_uint16 else np.asarray(img * 255, np.uint8)


# -- argument checks shared by the backends ---------------------------------------------------


def _check_read(grayscale: bool, num_channels: int) -> None:
    if num_channels not in _NUM_CHANNELS:
        raise DataError(f"imread: num_channels must be one of {list(_NUM_CHANNELS)}, got "
                        f"{num_channels}")
    if not grayscale and num_channels in (0, 1):
        raise DataError(f"imread: num_channels={num_channels} needs grayscale=True (a colour "
                        f"image has 3 or 4 channels)")


def _finish_read(img: np.ndarray, size, interpolate: str, channel_first: bool,
                 resize) -> np.ndarray:
    if size is not None:
        img = resize(img, size, interpolate=interpolate)
    if channel_first and img.ndim == 3:
        img = img.transpose(2, 0, 1)
    return img


def _prepare_save(img: Any, channel_first: bool, auto_scale: bool, path: str) -> np.ndarray:
    if not isinstance(img, np.ndarray):
        raise DataError(f"imsave takes a numpy.ndarray, not {type(img).__name__}", path)
    if img.ndim not in (2, 3):
        raise DataError(f"imsave: an image has 2 or 3 dimensions, this one {img.shape}", path)
    if img.dtype not in (np.uint8, np.uint16):
        if not auto_scale:
            raise DataError("imsave: a float image needs auto_scale=True", path)
        if np.any(img < 0) or np.any(img > 1):
            raise DataError(f"imsave: float pixel values must lie in [0, 1]; these range over "
                            f"[{float(np.min(img)):g}, {float(np.max(img)):g}]", path)
        img = np.asarray(img, np.float32)
    if channel_first and img.ndim == 3:
        img = img.transpose(1, 2, 0)
    if img.ndim == 3 and img.shape[-1] not in (1, 2, 3, 4):
        raise DataError(f"imsave: an image has 1 to 4 channels, this one {img.shape[-1]} "
                        f"(shape {img.shape}; channel_first={channel_first})", path)
    return img


def _prepare_resize(img: Any, size, channel_first: bool, interpolate: str,
                    methods) -> np.ndarray:
    if not isinstance(img, np.ndarray):
        raise DataError(f"imresize takes a numpy.ndarray, not {type(img).__name__}")
    if not isinstance(size, (list, tuple)):
        raise DataError(f"imresize: size must be a (width, height) list or tuple, not {size!r}")
    if img.ndim not in (2, 3):
        raise DataError(f"imresize: an image has 2 or 3 dimensions, this one {img.shape}")
    if interpolate not in methods:
        raise DataError(f"imresize: unknown interpolation {interpolate!r}; this backend has "
                        f"{', '.join(methods)}")
    if img.dtype not in (np.uint8, np.uint16):
        img = np.asarray(img, np.float32)
    if channel_first and img.ndim == 3:
        img = img.transpose(1, 2, 0)
    if img.ndim == 3 and np.prod(img.shape[:-1]) == 1:
        img = (img * np.ones((2, 2, 1))).astype(img.dtype)
    return img


def _check_readable(path: Any) -> None:
    if isinstance(path, (str, os.PathLike)) and not os.path.isfile(path):
        if os.path.isdir(path):
            raise IsADirectoryError(f"imread: {os.fspath(path)} is a folder, not an image")
        raise FileNotFoundError(f"imread: no image file {os.fspath(path)}")


# -- the backends ------------------------------------------------------------------------------


class _Cv2Backend:
    name = "Cv2Backend"

    def __init__(self):
        from ._image import require_cv2
        self.cv = require_cv2()
        cv = self.cv
        self.methods = {"nearest": cv.INTER_NEAREST, "bilinear": cv.INTER_LINEAR,
                        "bicubic": cv.INTER_CUBIC, "lanczos": cv.INTER_LANCZOS4}

    def _channels(self, img: np.ndarray, num_channels: int) -> np.ndarray:
        cv = self.cv
        if img.ndim == 2:
            conv = {1: None, 3: cv.COLOR_GRAY2RGB, 4: cv.COLOR_GRAY2RGBA}
            if num_channels in (-1, 0):
                return img
            return img[..., None] if num_channels == 1 else cv.cvtColor(img, conv[num_channels])
        if img.shape[-1] not in (3, 4):
            raise DataError(f"imread: an image with {img.shape[-1]} channels")
        bgra = img.shape[-1] == 4
        if num_channels in (0, 1):
            img = cv.cvtColor(img, cv.COLOR_BGRA2GRAY if bgra else cv.COLOR_BGR2GRAY)
            return img[..., None] if num_channels == 1 else img
        if num_channels == 3 or (num_channels == -1 and not bgra):
            return cv.cvtColor(img, cv.COLOR_BGRA2RGB if bgra else cv.COLOR_BGR2RGB)
        return cv.cvtColor(img, cv.COLOR_BGRA2RGBA if bgra else cv.COLOR_BGR2RGBA)

    def imread(self, path, grayscale=False, size=None, interpolate="bilinear",
               channel_first=False, as_uint16=False, num_channels=-1, **_):
        cv = self.cv
        _check_read(grayscale, num_channels)
        mode = cv.IMREAD_GRAYSCALE if grayscale else cv.IMREAD_UNCHANGED
        if hasattr(path, "read"):
            img = cv.imdecode(np.frombuffer(path.read(), np.uint8), mode)
        else:
            _check_readable(path)
            img = cv.imdecode(np.fromfile(os.fspath(path), np.uint8), mode)
        if img is None:
            raise DataError("imread: not an image OpenCV can decode",
                            getattr(path, "name", None) if hasattr(path, "read") else path)
        if as_uint16 and img.dtype == np.uint8:
            img = img.astype(np.uint16) * 256
        img = self._channels(img, num_channels)
        return _finish_read(img, size, interpolate, channel_first, self.imresize)

    def imsave(self, path, img, channel_first=False, as_uint16=False, auto_scale=True):
        cv = self.cv
        img = _prepare_save(img, channel_first, auto_scale, path)
        if auto_scale:
            img = _upscale(img, as_uint16)
        if not as_uint16 and img.dtype == np.uint16:
            raise DataError("imsave: a uint16 image needs as_uint16=True (or cast it to uint8 "
                            "yourself)", path)
        if as_uint16 and img.dtype != np.uint16:
            img = np.asarray(img, np.uint16)
        if img.ndim == 3 and img.shape[-1] in (3, 4):
            img = cv.cvtColor(img, cv.COLOR_RGB2BGR if img.shape[-1] == 3 else
                              cv.COLOR_RGBA2BGRA)
        ext = os.path.splitext(os.fspath(path))[1] or ".png"

        def write(tmp: str) -> None:
            ok, data = cv.imencode(ext, img)
            if not ok:
                raise DataError(f"imsave: OpenCV cannot write {ext} files", path)
            with open(tmp, "wb") as f:
                f.write(data.tobytes())
        atomic_write(path, write)

    def imresize(self, img, size, interpolate="bilinear", channel_first=False):
        img = _prepare_resize(img, size, channel_first, interpolate, list(self.methods))
        dtype = img.dtype
        out = self.cv.resize(img, tuple(int(s) for s in size),
                             interpolation=self.methods[interpolate])
        if img.ndim == 3 and img.shape[-1] == 1:
            out = out[..., None]
        if channel_first and out.ndim == 3:
            out = out.transpose(2, 0, 1)
        return out.astype(dtype)


class _PilBackend:
    name = "PilBackend"

    def __init__(self):
        self.Image = Image = _pil()
        if Image is None:
            raise ImportError("Pillow is not installed")
        r = Image.Resampling
        self.methods = {"nearest": r.NEAREST, "bilinear": r.BILINEAR, "bicubic": r.BICUBIC,
                        "hamming": r.HAMMING, "box": r.BOX, "lanczos": r.LANCZOS}

    def imread(self, path, grayscale=False, size=None, interpolate="bilinear",
               channel_first=False, as_uint16=False, num_channels=-1,
               return_palette_indices=False):
        if as_uint16:                     # Pillow reads 8-bit colour only: OpenCV does this
            return _backend("Cv2Backend").imread(path, grayscale, size, interpolate,
                                                 channel_first, True, num_channels)
        _check_read(grayscale, num_channels)
        if not hasattr(path, "read"):
            _check_readable(path)
        try:
            image = self.Image.open(path)
        except self.Image.UnidentifiedImageError:
            raise DataError("imread: not an image Pillow can decode",
                            None if hasattr(path, "read") else path) from None
        if image.mode == "I":
            raise DataError("imread: a 32-bit integer image (read it with as_uint16=True)",
                            None if hasattr(path, "read") else path)
        if image.mode == "P" and not return_palette_indices:
            image = image.convert("RGBA" if "transparency" in image.info else "RGB")
        if grayscale:
            img = np.asarray(image.convert("L"))
            if num_channels > 0:
                img = np.broadcast_to(img[..., None], img.shape + (num_channels,))
        elif num_channels in (3, 4):
            img = np.asarray(image.convert("RGB" if num_channels == 3 else "RGBA"))
        else:
            img = np.asarray(image)
        img = img.astype(np.uint8)
        return _finish_read(img, size, interpolate, channel_first, self.imresize)

    def imsave(self, path, img, channel_first=False, as_uint16=False, auto_scale=True):
        img = _prepare_save(img, channel_first, auto_scale, path)
        if img.dtype == np.uint16 or as_uint16:       # Pillow writes 8-bit only
            return _backend("Cv2Backend").imsave(path, img, False, as_uint16, auto_scale)
        if auto_scale and img.dtype != np.uint8:
            img = (img * 255).astype(np.uint8)
        if img.ndim == 3 and img.shape[-1] == 1:
            img = img[..., 0]
        image = self.Image.fromarray(img)
        atomic_write(path, lambda tmp: image.save(tmp, format=_pil_format(self.Image, path)))

    def _resize_plane(self, plane: np.ndarray, size, method) -> np.ndarray:
        mode = "F" if plane.dtype == np.float32 else None
        image = self.Image.fromarray(plane, mode=mode) if mode else self.Image.fromarray(plane)
        return np.asarray(image.resize(tuple(int(s) for s in size), resample=method))

    def imresize(self, img, size, interpolate="bilinear", channel_first=False):
        img = _prepare_resize(img, size, channel_first, interpolate, list(self.methods))
        single = img.ndim == 3 and img.shape[-1] == 1
        if single:
            img = img[..., 0]
        method = self.methods[interpolate]
        if img.dtype == np.uint8:
            out = self._resize_plane(img, size, method)
        else:
            planes = np.asarray(img, np.float32)
            if planes.ndim == 3:
                out = np.stack([self._resize_plane(np.ascontiguousarray(planes[..., i]), size,
                                                   method) for i in range(planes.shape[-1])], 2)
            else:
                out = self._resize_plane(planes, size, method)
            out = np.asarray(out, img.dtype)
        if single:
            out = out[..., None]
        if channel_first and out.ndim == 3:
            out = out.transpose(2, 0, 1)
        return out


def _pil_format(Image, path) -> str:
    ext = os.path.splitext(os.fspath(path))[1].lower()
    Image.init()
    try:
        return Image.EXTENSION[ext]
    except KeyError:
        raise DataError(f"imsave: Pillow cannot tell the image format from the extension "
                        f"{ext or '(none)'!r}", path) from None


# -- choosing one ------------------------------------------------------------------------------

_BACKENDS = {"PilBackend": _PilBackend, "Cv2Backend": _Cv2Backend}
_instances: dict[str, Any] = {}
_state = {"chosen": None, "last": ""}


def _backend(name: str):
    if name not in _instances:
        _instances[name] = _BACKENDS[name]()
    return _instances[name]


def _current():
    name = _state["chosen"] or ("PilBackend" if _pil() is not None else "Cv2Backend")
    _state["last"] = name
    return _backend(name)


def get_available_backends() -> list[str]:
    """The backends whose library is installed.

    Example:
        >>> "Cv2Backend" in get_available_backends()
        True
    """
    return [name for name in _BACKENDS if name != "PilBackend" or _pil() is not None]


def set_backend(backend: str | None) -> None:
    """Use ``backend`` (``"PilBackend"`` or ``"Cv2Backend"``) for every call; an unknown name
    (or None) goes back to choosing per call, as NNabla does.

    Example:
        >>> set_backend("Cv2Backend"); get_backend()
        'Cv2Backend'
        >>> set_backend(None)
    """
    _state["chosen"] = backend if backend in get_available_backends() else None


def get_backend() -> str:
    """The backend chosen with :func:`set_backend`, else the one the last call used (``''``
    before any)."""
    return _state["chosen"] or _state["last"]


def imread(path, grayscale: bool = False, size=None, interpolate: str = "bilinear",
           channel_first: bool = False, as_uint16: bool = False, num_channels: int = -1,
           **kwargs) -> np.ndarray:
    """An image file (a path or a binary file object) as ``(H, W, C)`` uint8 RGB(A), or
    ``(H, W)`` for grey ones; ``size=(width, height)`` resizes it, ``grayscale`` converts it,
    ``num_channels`` (1, 3, 4) sets the channels, ``channel_first`` gives ``(C, H, W)`` and
    ``as_uint16`` reads 16-bit images as uint16 (8-bit ones scaled by 256).

    Example:
        >>> import numpy as np, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "a.png")
        >>> imsave(path, np.arange(12, dtype=np.uint8).reshape(2, 2, 3))
        >>> imread(path)[1, 0].tolist(), imread(path, channel_first=True).shape
        ([6, 7, 8], (3, 2, 2))
    """
    return _current().imread(path, grayscale=grayscale, size=size, interpolate=interpolate,
                             channel_first=channel_first, as_uint16=as_uint16,
                             num_channels=num_channels, **kwargs)


def imsave(path, img: np.ndarray, channel_first: bool = False, as_uint16: bool = False,
           auto_scale: bool = True, **kwargs) -> None:
    """Write ``img`` (``(H, W)``, ``(H, W, C)`` or with ``channel_first`` ``(C, H, W)``;
    uint8, uint16 or floats in ``[0, 1]`` scaled to 0-255) to ``path``; the extension picks
    the format.

    Example:
        >>> import numpy as np, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "grey.png")
        >>> imsave(path, np.array([[0.0, 1.0]]))
        >>> imread(path).tolist()
        [[0, 255]]
    """
    _current().imsave(os.fspath(path), img, channel_first=channel_first, as_uint16=as_uint16,
                      auto_scale=auto_scale, **kwargs)


def imresize(img: np.ndarray, size, interpolate: str = "bilinear", channel_first: bool = False,
             **kwargs) -> np.ndarray:
    """``img`` resized to ``size=(width, height)`` (``nearest``, ``bilinear``, ``bicubic``,
    ``lanczos``; Pillow also ``box`` and ``hamming``); uint8 and uint16 images keep their
    dtype, others are resized as float32 and cast back.

    Example:
        >>> import numpy as np
        >>> imresize(np.zeros((4, 6, 3), np.uint8), (3, 2)).shape
        (2, 3, 3)
    """
    return _current().imresize(img, size, interpolate=interpolate, channel_first=channel_first,
                               **kwargs)
