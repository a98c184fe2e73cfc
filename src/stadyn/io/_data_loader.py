"""NNabla's ``data_source_loader``: opening data set files and reading one value from each.

A CSV data set names its values' files (images, ``.csv``, ``.npy``, ``.wav``) relative to the
CSV file; :class:`FileReader` opens them and :func:`load` gives the reader for an extension.

Stadyn reads local files only.  NNabla also reads ``http(s)://`` and ``s3://`` addresses and
downloads data sets into ``~/nnabla_data``; here such an address, or a :func:`download` whose
file is not there yet, raises :class:`DownloadError`, which says where to put the file: a
download that finds its file in place returns it, exactly as NNabla's does, so a program that
downloads runs unchanged once the file is there.
"""

from __future__ import annotations

import contextlib
import csv
import os
import wave
from typing import Any, BinaryIO, Callable, Iterator

import numpy as np

from .._errors import DataError, StadynError
from .._logging import logger
from ._image_utils import imread, imresize

__all__ = ["FileReader", "ResourceFileReader", "DownloadError", "get_file_extension",
           "load_image_imread", "load_image", "load_csv", "load_npy", "load_wav", "load_audio",
           "load", "download", "get_data_home"]


class DownloadError(StadynError, OSError):
    """Stadyn does not download: a remote address, or a download whose file is not in place."""


def _remote(uri: str) -> bool:
    return uri[:5].lower() == "s3://" or uri[:7].lower() == "http://" \
        or uri[:8].lower() == "https://"


def _refuse_remote(uri: str, what: str) -> None:
    raise DownloadError(
        f"{what} {uri!r} is remote, and Stadyn reads local files only (it does not download). "
        f"Fetch the file yourself and pass its local path instead; a data set CSV names its "
        f"files relative to the CSV's own folder.")


class FileReader:
    """Opens a data set file, or files named relative to it (NNabla's ``FileReader``).

    Example:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> with open(os.path.join(folder, "a.csv"), "w") as f:
        ...     _ = f.write("x\\n1\\n")
        >>> with FileReader(os.path.join(folder, "a.csv")).open(textmode=True) as f:
        ...     f.read()
        'x\\n1\\n'
    """

    def __init__(self, base_uri: str):
        base_uri = os.fspath(base_uri)
        if _remote(base_uri):
            _refuse_remote(base_uri, "the data set")
        self._base_uri = base_uri
        self.base_ext = os.path.splitext(base_uri)[1].lower()

    def _resolve(self, filename: str | None) -> str:
        if filename is None:
            return self._base_uri
        if _remote(filename):
            _refuse_remote(filename, "the file")
        base = os.path.dirname(self._base_uri.replace("\\", "/"))
        return os.path.abspath(os.path.join(base, filename.replace("\\", "/")))

    @contextlib.contextmanager
    def open(self, filename: str | None = None, textmode: bool = False,
             encoding: str = "utf-8-sig") -> Iterator[Any]:
        """``filename`` (relative to the base file's folder; the base file itself if None),
        opened for reading; the file object carries ``ext``, its lower-case extension."""
        path = self._resolve(filename)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no file {path}" + (
                f" (named in {self._base_uri})" if filename is not None else ""))
        f = open(path, "rt", encoding=encoding) if textmode else open(path, "rb")
        try:
            f.ext = os.path.splitext(path)[1].lower()  # type: ignore[attr-defined]
        except AttributeError:
            f = _WithExt(f, os.path.splitext(path)[1].lower())
        with f:
            yield f

    @contextlib.contextmanager
    def open_cache(self, cache_name: str) -> Iterator[Any]:
        """An ``.h5`` cache file in the base folder, opened with h5py."""
        import h5py
        path = os.path.abspath(os.path.join(self._base_uri, cache_name))
        with h5py.File(path, "r") as h5:
            yield h5

    def listdir(self) -> list[str]:
        """The ``.h5`` files of the base folder, sorted."""
        return [f for f in sorted(os.listdir(self._base_uri))
                if os.path.splitext(f)[1].lower() == ".h5"]


class _WithExt:
    """A file object that cannot take attributes, with ``ext``."""

    def __init__(self, f, ext: str):
        self._f, self.ext = f, ext

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


_SIGNATURES = {
    ".bmp": ([b"BM"], 0), ".pgm": ([b"P5\n"], 0), ".jpg": ([b"\xff\xd8\xff"], 0),
    ".png": ([b"\x89PNG\r\n\x1a\n"], 0), ".tif": ([b"I I"], 0),
    ".eps": ([b"\xc5\xd0\xd3\xc6"], 0), ".gif": ([b"GIF87a", b"GIF89a"], 0),
    ".ico": ([b"\x00\x00\x01\x00"], 0), ".dcm": ([b"DICM"], 0x80), ".wav": ([b"RIFF"], 0),
}


def get_file_extension(source: Any) -> str:
    """A path's lower-case extension; for a file object, its name's, or else the one its first
    bytes announce (``.png``, ``.jpg``, ``.bmp``, ...; ``''`` when unknown).

    Example:
        >>> import io
        >>> get_file_extension("a/B.PNG"), get_file_extension(io.BytesIO(b"\\x89PNG\\r\\n\\x1a\\n"))
        ('.png', '.png')
    """
    if hasattr(source, "read"):
        if hasattr(source, "name"):
            return os.path.splitext(source.name)[1].lower()
        found = ""
        for ext, (signatures, offset) in _SIGNATURES.items():
            source.seek(offset)
            head = source.read(16)
            source.seek(0)
            if any(head.startswith(s) for s in signatures):
                found = ext
        return found
    if isinstance(source, (str, os.PathLike)):
        return os.path.splitext(os.fspath(source))[1].lower()
    return ""


class ResourceFileReader:
    """A path, or a binary file object, with its extension (``ext``), opened the same way.

    Example:
        >>> import io
        >>> r = ResourceFileReader(io.BytesIO(b"GIF89a..."))
        >>> r.ext
        '.gif'
    """

    def __init__(self, source: Any):
        self._source = source
        if isinstance(source, (str, os.PathLike)):
            self.handler: Any = FileReader(os.fspath(source))
            self.ext = self.handler.base_ext
            if not self.ext:
                with self.handler.open() as f:
                    self.ext = get_file_extension(f)
        elif hasattr(source, "read") and hasattr(source, "seek") and \
                isinstance(_peek(source), bytes):
            self.handler = source
            self.ext = get_file_extension(source)
        else:
            raise DataError("ResourceFileReader takes a path or a binary file object, not "
                            f"{type(source).__name__}")

    @contextlib.contextmanager
    def open(self) -> Iterator[Any]:
        if isinstance(self.handler, FileReader):
            with self.handler.open() as f:
                yield f
        else:
            self.handler.seek(0)
            yield self.handler
            self.handler.seek(0)


def _peek(f: BinaryIO) -> Any:
    f.seek(0)
    head = f.read(1)
    f.seek(0)
    return head


# -- readers by extension -----------------------------------------------------------------------


def load_image_imread(file: Any, shape: tuple[int, int, int] | None = None,
                      max_range: float = 1.0) -> np.ndarray:
    """An image as ``(C, H, W)``: resized to ``shape = (C, H, W)`` when given, scaled to
    ``[0, max_range]`` (``max_range < 0``: the raw uint8 values).

    As in NNabla 1.39, the resize passes ``(H, W)`` where ``imresize`` takes ``(width,
    height)``, so a non-square ``shape`` comes out with its height and width swapped before
    the reshape; square shapes are what NNabla's own data sets use.

    Example:
        >>> import numpy as np, os, tempfile
        >>> from stadyn.io._image_utils import imsave
        >>> path = os.path.join(tempfile.mkdtemp(), "a.png")
        >>> imsave(path, np.full((2, 2, 3), 255, np.uint8))
        >>> load_image_imread(path).shape, float(load_image_imread(path).max())
        ((3, 2, 2), 1.0)
    """
    img = imread(file)
    if img.ndim == 2:
        height, width = img.shape
        channels, out_h, out_w = (1, height, width) if shape is None else shape
        if channels != 1:
            raise DataError(f"a grey image cannot have {channels} channels (shape {shape})",
                            getattr(file, "name", None))
        if (out_h, out_w) != (height, width):
            img = imresize(img, (out_h, out_w))
        img = img.reshape(channels, out_h, out_w)
    else:
        height, width, n = img.shape
        channels, out_h, out_w = (n, height, width) if shape is None else shape
        if channels != n:
            raise DataError(f"an image with {n} channels, where {channels} are wanted "
                            f"(shape {shape})", getattr(file, "name", None))
        if (out_h, out_w) != (height, width):
            img = imresize(img, (out_h, out_w, channels))
        img = img.transpose(2, 0, 1)
    if max_range < 0:
        return img
    full = 65535.0 if img.dtype == np.uint16 else 255.0
    return img if max_range == full else img * (max_range / full)


def load_image(file: Any, shape=None, normalize: bool = False) -> np.ndarray:
    """An image as ``(C, H, W)``: floats in ``[0, 1]`` with ``normalize``, else raw uint8."""
    return load_image_imread(file, shape, 1.0 if normalize else -1)


def load_csv(file: BinaryIO, shape=None, normalize: bool = False) -> np.ndarray:
    """A CSV file of numbers (no header) as a float64 array, reshaped to ``shape`` if given.

    Example:
        >>> import io
        >>> load_csv(io.BytesIO(b"1,2\\n3,4\\n")).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    rows = [list(map(float, row)) for row in csv.reader(
        line.decode("utf-8") for line in file.readlines()) if row]
    values = np.array(rows)
    if shape is None:
        return values
    try:
        return values.reshape(shape)
    except ValueError:
        raise DataError(f"cannot reshape the values {values.shape} to {tuple(shape)}",
                        getattr(file, "name", None)) from None


def load_npy(path: Any, shape=None, normalize: bool = False) -> np.ndarray:
    """A ``.npy`` array, reshaped to ``shape`` if given."""
    values = np.load(path, allow_pickle=False)
    return values if shape is None else values.reshape(shape)


def load_wav(path: Any, shape=None, normalize: bool = False) -> np.ndarray:
    """A PCM ``.wav`` file's samples as ``(frames, channels)`` (uint8, int16 or int32, as
    ``scipy.io.wavfile`` reads them), reshaped to ``shape`` if given."""
    source = path if hasattr(path, "read") else os.fspath(path)   # wave closes what it opens
    with contextlib.closing(wave.open(source, "rb")) as w:
        width, channels = w.getsampwidth(), w.getnchannels()
        frames = w.readframes(w.getnframes())
    if width == 3:
        raw = np.frombuffer(frames, np.uint8).reshape(-1, 3)
        values = (raw[:, 0].astype(np.int32) << 8 | raw[:, 1].astype(np.int32) << 16
                  | raw[:, 2].astype(np.int32) << 24)
    else:
        dtypes = {1: np.uint8, 2: np.int16, 4: np.int32}
        if width not in dtypes:
            raise DataError(f"a .wav file with {width}-byte samples", getattr(path, "name", path))
        values = np.frombuffer(frames, dtypes[width])
    values = values.reshape(-1, channels) if channels > 1 else values.reshape(-1, 1)
    return values if shape is None else values.reshape(shape)


def load_audio(file: Any, shape=None, normalize: bool = False) -> np.ndarray:
    """An audio file: ``.wav`` through :func:`load_wav` (NNabla's path without pydub)."""
    return load_wav(file, shape, normalize)


_LOADERS: dict[str, Callable[..., np.ndarray]] = {
    ".bmp": load_image, ".jpg": load_image, ".jpeg": load_image, ".png": load_image,
    ".gif": load_image, ".tif": load_image, ".tiff": load_image, ".csv": load_csv,
    ".npy": load_npy, ".wav": load_audio,
}


def load(ext: str) -> Callable[..., np.ndarray]:
    """The reader for files with extension ``ext`` (``'.png'``, ``'.csv'``, ...).

    Example:
        >>> load(".png").__name__, load(".csv").__name__
        ('load_image', 'load_csv')
    """
    try:
        return _LOADERS[ext.lower()]
    except KeyError:
        raise DataError(f"no reader for files with the extension {ext!r} (there are readers "
                        f"for {', '.join(sorted(_LOADERS))})") from None


# -- downloads ------------------------------------------------------------------------------


def get_data_home() -> str:
    """NNabla's data folder, ``~/nnabla_data`` (made if missing), where :func:`download` looks
    for its files."""
    folder = os.path.expanduser("~/nnabla_data")
    if folder == "/nnabla_data":
        folder = "./nnabla_data"
    os.makedirs(folder, exist_ok=True)
    return folder


def download(url: str, output_file: str | None = None, open_file: bool = True,
             allow_overwrite: bool = False) -> BinaryIO | None:
    """NNabla's ``download``, without the network: the file ``url`` would be saved as
    (``output_file``, or the last part of ``url`` in :func:`get_data_home`), opened for
    reading when ``open_file``.  If it is not there, :class:`DownloadError` says where to put
    it.

    Example:
        >>> import os, tempfile
        >>> target = os.path.join(tempfile.mkdtemp(), "train.csv")
        >>> download("https://example.org/data/train.csv", target)
        Traceback (most recent call last):
        ...
        stadyn.io._data_loader.DownloadError: Stadyn does not download ...
        >>> open(target, "w").close()
        >>> download("https://example.org/data/train.csv", target).name == target
        True
    """
    target = output_file if output_file is not None else \
        os.path.join(get_data_home(), url.split("/")[-1])
    if not os.path.exists(target) or allow_overwrite:
        raise DownloadError(
            f"Stadyn does not download files, and {url} is not at {target}"
            + (" (allow_overwrite=True asks for a fresh copy)" if os.path.exists(target) else "")
            + f". Fetch it yourself (on a machine with network access) and save it as "
              f"{target}; the program then reads it from there.")
    logger.info("%s already exists (Stadyn reads it; it does not download).", target)
    return open(target, "rb") if open_file else None

