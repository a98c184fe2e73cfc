"""Data tools behind ``stadyn data ...``: map files, mean files, CIFAR-10, im2rec, rec2img."""

from __future__ import annotations

import io
import lzma
import os
import pickle
import random
import sys
import tarfile
import zlib
from typing import Iterable, Iterator, Sequence, TypeVar

import numpy as np

from .._errors import DataError
from .._fileutil import refuse_special_file
from ._files import AtomicFile, atomic_write
from ._image import ImageReadError, ZipArchives, decode_image, encode_image, image_format, \
    read_file_bytes, require_cv2
from ._limits import over_limit
from ._map_file import (format_map_path, read_map_table, resolve_image_path, scan_image_folder,
                        walk_folder, write_map_file)
from ._mean_file import write_mean_file
from ._recordio import RecordIOReader
from ._recordio_images import (IRHeader, ListEntry, pack_image_record, read_list_file,
                               unpack_image_record, write_list_file)
from ._recordio_index import IndexedRecordIO, read_idx_entries

__all__ = ["make_map_file", "compute_mean", "convert_cifar10", "make_image_list", "pack_list",
           "dump_rec", "list_from_map"]

T = TypeVar("T")


def _progress(items: Iterable[T], total: int | None, desc: str,
              enabled: bool | None) -> Iterator[T]:
    """A tqdm bar on a terminal (``enabled=None``), else the items as they are."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return iter(items)
    from tqdm import tqdm
    return iter(tqdm(items, total=total, desc=desc, unit="img", leave=False))


class _Outputs:
    """The files and folders one run of a tool creates. Leaving the ``with`` block by an
    exception (a full disk, a bad record half-way) removes them again, so a failed run leaves the
    output folder as it found it; a file that existed before is only ever replaced whole.

    Example:
        >>> import tempfile
        >>> out = os.path.join(tempfile.mkdtemp(), 'out')
        >>> try:
        ...     with _Outputs() as made:
        ...         _ = open(made.file(os.path.join(made.folder(out), 'a.txt')), 'w')
        ...         raise OSError(28, 'No space left on device')
        ... except OSError:
        ...     pass
        >>> os.path.exists(out)
        False
    """

    def __init__(self) -> None:
        self._files: list[str] = []
        self._folders: list[str] = []

    def folder(self, path: str) -> str:
        """Make ``path`` (and missing parents); returns it."""
        missing, here = [], os.path.abspath(path)
        while not os.path.isdir(here) and os.path.dirname(here) != here:
            missing.append(here)
            here = os.path.dirname(here)
        os.makedirs(path, exist_ok=True)
        self._folders.extend(reversed(missing))
        return path

    def file(self, path: str) -> str:
        """Note that ``path`` is about to be written; returns it."""
        if not os.path.lexists(path):
            self._files.append(path)
        return path

    def __enter__(self) -> "_Outputs":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            return
        for path in reversed(self._files):
            try:
                os.unlink(path)
            except OSError:
                pass
        for path in reversed(self._folders):
            try:
                os.rmdir(path)
            except OSError:
                pass


# ------------------------------------------------------------------------------ map files


def make_map_file(folder: str | os.PathLike, out_map: str | os.PathLike,
                  labels_out: str | os.PathLike | None = None, relative: bool = False) -> list[str]:
    """Write a map file for a folder of class sub-folders; returns the class names.

    Label i is the i-th sub-folder in sorted order; ``labels_out`` gets one class name per line
    (line i is label i). ``relative`` writes ``...`` paths (relative to the map file's folder).

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> for cls in ('cat', 'dog'):
        ...     os.makedirs(os.path.join(d, 'img', cls))
        ...     _ = open(os.path.join(d, 'img', cls, '0.png'), 'wb').write(b'')
        >>> make_map_file(os.path.join(d, 'img'), os.path.join(d, 'map.txt'), relative=True)
        ['cat', 'dog']
        >>> open(os.path.join(d, 'map.txt')).read()
        '.../img/cat/0.png\\t0\\n.../img/dog/0.png\\t1\\n'
    """
    table, classes = scan_image_folder(folder)
    write_map_file(out_map, zip(table.paths, table.labels.tolist()), relative=relative)
    if labels_out is not None:
        atomic_write(labels_out, "".join(f"{name}\n" for name in classes))
    return classes


class _ImageBytes:
    """Reads the bytes of images named by map entries (files or zip members)."""

    def __init__(self) -> None:
        self._zips = ZipArchives()

    def read(self, path: str, member: str | None) -> bytes:
        return read_file_bytes(path) if member is None else self._zips.read(path, member)

    def close(self) -> None:
        self._zips.close()


def compute_mean(map_file: str | os.PathLike, out_xml: str | os.PathLike | None = None,
                 width: int | None = None, height: int | None = None, channels: int = 3,
                 progress: bool | None = None) -> np.ndarray:
    """The per-pixel mean (H, W, C) float32 BGR of a map file's images; written to ``out_xml``.

    Images are resized (linear) to ``width`` x ``height`` when given; otherwise they must all
    have the size of the first one. The file is what :func:`stadyn.io.transforms.mean` reads.

    Example:
        >>> import tempfile
        >>> from stadyn.io import encode_image
        >>> d = tempfile.mkdtemp()
        >>> for k, value in enumerate((10, 30)):
        ...     _ = open(os.path.join(d, f'{k}.png'), 'wb').write(
        ...         encode_image(np.full((2, 3, 3), value, np.uint8)))
        >>> _ = open(os.path.join(d, 'map.txt'), 'w').write('.../0.png\\t0\\n.../1.png\\t1\\n')
        >>> mean = compute_mean(os.path.join(d, 'map.txt'), os.path.join(d, 'mean.xml'))
        >>> mean.shape, float(mean[0, 0, 0])
        ((2, 3, 3), 20.0)
    """
    map_file = os.fspath(map_file)
    table = read_map_table(map_file)
    if not len(table):
        raise DataError("map file lists no images", map_file)
    cv = require_cv2()
    reader = _ImageBytes()
    total: np.ndarray | None = None
    try:
        for i in _progress(range(len(table)), len(table), "mean", progress):
            try:
                image = decode_image(reader.read(table.paths[i], table.members[i]), channels)
            except ImageReadError as exc:
                raise DataError(f"image {table.entry(i).location!r}: {exc}", map_file,
                                int(table.lines[i])) from None
            if width and height and image.shape[:2] != (height, width):
                image = cv.resize(image, (width, height), interpolation=cv.INTER_LINEAR)
                image = image.reshape(height, width, channels)
            if total is None:
                total = np.zeros(image.shape, np.float64)
            elif image.shape != total.shape:
                raise DataError(f"image is {image.shape[1]}x{image.shape[0]}, the first was "
                                f"{total.shape[1]}x{total.shape[0]}; pass width and height",
                                map_file, int(table.lines[i]))
            total += image
    finally:
        reader.close()
    mean = (total / len(table)).astype(np.float32)
    if out_xml is not None:
        write_mean_file(out_xml, mean)
    return mean


# ------------------------------------------------------------------------------- CIFAR-10


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles the CIFAR-10 batches (dicts, lists, NumPy arrays) and nothing else."""

    _ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
                ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
                ("numpy._core.multiarray", "scalar"), ("numpy.core.numeric", "_frombuffer"),
                ("numpy._core.numeric", "_frombuffer"), ("_codecs", "encode")}

    def find_class(self, module: str, name: str):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}")
        return super().find_class(module, name)


_CIFAR_BATCHES = tuple(f"data_batch_{k}" for k in range(1, 6)) + ("test_batch",)
_CIFAR_IMAGES = 10000                       # images per batch
_CIFAR_VALUES = 3 * 32 * 32
_TAR_ERRORS = (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError)


def _cifar_batches(tar: tarfile.TarFile,
                   archive: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The six batches (:func:`_load_cifar_batch`), reading the archive once in order and
    stopping when all are found. What the member headers declare is bounded before anything is
    read: one member by the ``archive_member_bytes`` limit, all members read or passed over by
    ``archive_total_bytes`` (a few kB of tar can declare gigabytes)."""
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    total = 0
    try:
        for member in iter(tar.next, None):
            total += max(member.size, 0)
            refused = over_limit("archive_total_bytes", total,
                                 f"its members declare {total:,} bytes up to {member.name!r}")
            name = os.path.basename(member.name)
            if name in _CIFAR_BATCHES and name not in found and member.isfile():
                refused = over_limit(
                    "archive_member_bytes", member.size,
                    f"member {member.name!r} declares {member.size:,} bytes (a CIFAR-10 batch "
                    f"is about {_CIFAR_IMAGES * (_CIFAR_VALUES + 3):,})") or refused
                if refused:
                    raise DataError(refused, archive)
                found[name] = _load_cifar_batch(tar.extractfile(member).read(), member.name,
                                                archive)
                if len(found) == len(_CIFAR_BATCHES):
                    break
            elif refused:
                raise DataError(refused, archive)
    except _TAR_ERRORS as exc:
        raise DataError(f"not a readable tar archive: {exc}", archive) from None
    missing = [n for n in _CIFAR_BATCHES if n not in found]
    if missing:
        raise DataError(f"the archive has no {missing[0]!r} (is it cifar-10-python.tar.gz?)",
                        archive)
    return found


def _load_cifar_batch(raw_bytes: bytes, name: str,
                      archive: str) -> tuple[np.ndarray, np.ndarray]:
    """A batch's images (N, 3, 32, 32) and labels. The unpickled objects are checked for the
    batch's types before NumPy converts them: ``data`` a uint8 array, ``labels`` a list of ints
    (a 250-byte pickle of shared nested lists would otherwise become a 1 GB array)."""
    try:
        raw = _ArrayUnpickler(io.BytesIO(raw_bytes), encoding="latin1").load()
    except (pickle.UnpicklingError, KeyError, ValueError, TypeError, EOFError, AttributeError,
            IndexError, MemoryError, RecursionError) as exc:
        raise DataError(f"{name}: not a CIFAR-10 batch ({type(exc).__name__}: "
                        f"{str(exc)[:120]})", archive) from None
    data = raw.get("data") if isinstance(raw, dict) else None
    labels = raw.get("labels") if isinstance(raw, dict) else None
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 \
            or data.shape[1] != _CIFAR_VALUES or len(data) > _CIFAR_IMAGES:
        what = (f"a {data.dtype} array of shape {data.shape}" if isinstance(data, np.ndarray)
                else type(data).__name__)
        raise DataError(f"{name}: not a CIFAR-10 batch ('data' is {what}, not uint8 rows of "
                        f"{_CIFAR_VALUES} values, at most {_CIFAR_IMAGES})", archive)
    if not isinstance(labels, list) or not all(type(v) is int for v in labels):
        raise DataError(f"{name}: not a CIFAR-10 batch ('labels' is not a list of ints)",
                        archive)
    labels = np.asarray(labels, dtype=np.int64) if labels else np.zeros(0, np.int64)
    if len(labels) != len(data) or labels.min(initial=0) < 0 or labels.max(initial=0) > 9:
        raise DataError(f"{name}: labels do not match the images", archive)
    return data.reshape(-1, 3, 32, 32), labels


def _write_png(path: str, chw_rgb: np.ndarray) -> None:
    bgr = np.ascontiguousarray(chw_rgb[::-1].transpose(1, 2, 0))
    with AtomicFile(path, sync=False) as f:     # flushed together before the map file
        f.write(encode_image(bgr, ".png"))


_CTF_VALUES = [f"{v}".encode() for v in range(256)]
_CTF_LABELS = [(" ".join("1" if k == c else "0" for k in range(10))).encode() for c in range(10)]


def _write_ctf(path: str, data: np.ndarray, labels: np.ndarray, progress: bool | None) -> None:
    with AtomicFile(path) as f:
        for i in _progress(range(len(data)), len(data), os.path.basename(path), progress):
            values = b" ".join(map(_CTF_VALUES.__getitem__, data[i].reshape(-1).tolist()))
            f.write(b"|labels " + _CTF_LABELS[labels[i]] + b" |features " + values + b"\n")


def convert_cifar10(archive: str | os.PathLike, out_dir: str | os.PathLike, ctf: bool = True,
                    progress: bool | None = None) -> dict[str, str]:
    """Convert ``cifar-10-python.tar.gz`` (a local file) into CNTK's CIFAR-10 layout.

    Writes into ``out_dir``: ``train/%05d.png`` (40x40: the 32x32 image padded by 4 pixels of
    value 128), ``test/%05d.png`` (32x32), ``train_map.txt`` and ``test_map.txt``
    (``absolute path<TAB>label``), ``CIFAR-10_mean.xml`` (mean of the 32x32 training images, in
    the H x W x C BGR layout the mean transform reads) and, with ``ctf``,
    ``Train_cntk_text.txt`` / ``Test_cntk_text.txt`` (``|labels <10 one-hot> |features <3072
    values, C x H x W, RGB>``). Returns the paths written, by name.

    A failure while writing (a full disk) removes the files and folders this call made. The
    archive is read once, up to its last batch; what its headers declare is bounded before
    anything is allocated (``archive_member_bytes`` per batch, ``archive_total_bytes`` in all:
    see :func:`stadyn.io.set_limits`), and each batch must hold a uint8 array and a list of int
    labels.
    """
    archive = os.fspath(archive)
    out_dir = os.path.abspath(os.fspath(out_dir))
    refuse_special_file(archive, DataError)
    try:
        tar = tarfile.open(archive, "r:*")
    except FileNotFoundError:
        raise DataError("archive does not exist", archive) from None
    except _TAR_ERRORS as exc:
        raise DataError(f"not a readable tar archive: {exc}", archive) from None
    with tar:
        batches = _cifar_batches(tar, archive)
    train = [batches[f"data_batch_{k}"] for k in range(1, 6)]
    test = batches["test_batch"]
    train_x = np.concatenate([x for x, _ in train])
    train_y = np.concatenate([y for _, y in train])
    test_x, test_y = test
    with _Outputs() as made:
        return _write_cifar10(made, out_dir, train_x, train_y, test_x, test_y, ctf, progress)


def _write_cifar10(made: _Outputs, out_dir: str, train_x: np.ndarray, train_y: np.ndarray,
                   test_x: np.ndarray, test_y: np.ndarray, ctf: bool,
                   progress: bool | None) -> dict[str, str]:
    written = {}
    for split, images, labels, pad in (("train", train_x, train_y, 4), ("test", test_x, test_y, 0)):
        folder = made.folder(os.path.join(out_dir, split))
        lines = []
        for i in _progress(range(len(images)), len(images), split, progress):
            image = images[i]
            if pad:
                image = np.pad(image, ((0, 0), (pad, pad), (pad, pad)), constant_values=128)
            path = os.path.join(folder, f"{i:05d}.png")
            _write_png(made.file(path), image)
            lines.append(f"{format_map_path(path, None, None)}\t{int(labels[i])}\n")
        written[f"{split}_map"] = os.path.join(out_dir, f"{split}_map.txt")
        os.sync()                   # the images reach the disk before the map naming them
        atomic_write(made.file(written[f"{split}_map"]), "".join(lines))
    mean_chw_rgb = train_x.astype(np.float64).mean(axis=0)
    written["mean"] = os.path.join(out_dir, "CIFAR-10_mean.xml")
    write_mean_file(made.file(written["mean"]), mean_chw_rgb[::-1].transpose(1, 2, 0))
    if ctf:
        written["train_ctf"] = os.path.join(out_dir, "Train_cntk_text.txt")
        written["test_ctf"] = os.path.join(out_dir, "Test_cntk_text.txt")
        _write_ctf(made.file(written["train_ctf"]), train_x, train_y, progress)
        _write_ctf(made.file(written["test_ctf"]), test_x, test_y, progress)
    return written


# ------------------------------------------------------------------------------- im2rec


def _list_folder(root: str, recursive: bool, exts: Sequence[str]) -> list[ListEntry]:
    """im2rec's list_image: with ``recursive`` every folder holding images is a label, in
    sorted walk order (a symbolic-link cycle is an error); otherwise the images directly in
    ``root``, label 0."""
    exts = tuple(e.lower() for e in exts)
    entries: list[ListEntry] = []
    if recursive:
        labels: dict[str, int] = {}
        for path, files in walk_folder(root):
            for fname in files:
                full = os.path.join(path, fname)
                if os.path.splitext(fname)[1].lower() in exts and os.path.isfile(full):
                    label = labels.setdefault(path, len(labels))
                    entries.append(ListEntry(len(entries), (float(label),),
                                             os.path.relpath(full, root)))
    else:
        for fname in sorted(os.listdir(root)):
            full = os.path.join(root, fname)
            if os.path.splitext(fname)[1].lower() in exts and os.path.isfile(full):
                entries.append(ListEntry(len(entries), (0.0,), os.path.relpath(full, root)))
    return entries


def list_from_map(map_file: str | os.PathLike) -> list[ListEntry]:
    """List entries for a map file: index = line order, its label, the resolved image location."""
    table = read_map_table(os.fspath(map_file))
    return [ListEntry(i, (float(table.labels[i]),), table.entry(i).location)
            for i in range(len(table))]


def make_image_list(source: str | os.PathLike, prefix: str | os.PathLike, recursive: bool = False,
                    train_ratio: float = 1.0, test_ratio: float = 0.0, shuffle: bool = True,
                    seed: int = 100, exts: Sequence[str] = (".jpeg", ".jpg", ".png")) -> list[str]:
    """Write im2rec ``.lst`` files for a folder (or a map file); returns their paths.

    As im2rec: shuffled with ``random.seed(seed)`` (100), then split: the first
    ``int(N * test_ratio)`` go to ``PREFIX_test.lst``, the next ``int(N * train_ratio)`` to
    ``PREFIX_train.lst``, the rest to ``PREFIX_val.lst``; with ``train_ratio == 1`` everything goes
    to ``PREFIX.lst``.

    Example (then :func:`pack_list` writes the records and :func:`dump_rec` reads them back):
        >>> import tempfile
        >>> from stadyn.io import encode_image, read_list_file
        >>> d = tempfile.mkdtemp()
        >>> for cls in ('cat', 'dog'):
        ...     os.makedirs(os.path.join(d, 'img', cls))
        ...     _ = open(os.path.join(d, 'img', cls, '0.png'), 'wb').write(
        ...         encode_image(np.zeros((4, 4, 3), np.uint8)))
        >>> [lst] = make_image_list(os.path.join(d, 'img'), os.path.join(d, 'data'),
        ...                         recursive=True, shuffle=False)
        >>> read_list_file(lst)[1]
        ListEntry(index=1, labels=(1.0,), path='dog/0.png')
        >>> rec, idx = pack_list(lst, root=os.path.join(d, 'img'), encoding='.png')
        >>> dump_rec(rec, os.path.join(d, 'dump'), idx)
        2
    """
    source, prefix = os.fspath(source), os.fspath(prefix)
    if not 0.0 <= train_ratio <= 1.0 or not 0.0 <= test_ratio <= 1.0:
        raise ValueError("train_ratio and test_ratio must be in [0, 1]")
    if os.path.isdir(source):
        entries = _list_folder(source, recursive, exts)
    else:
        entries = list_from_map(source)
    if not entries:
        raise DataError(f"no images ({', '.join(exts)}) found", source)
    if shuffle:
        random.Random(seed).shuffle(entries)
    n = len(entries)
    written = []
    if train_ratio == 1.0:
        written.append(prefix + ".lst")
        write_list_file(written[-1], entries)
        return written
    sep, sep_test = int(n * train_ratio), int(n * test_ratio)
    if test_ratio:
        written.append(prefix + "_test.lst")
        write_list_file(written[-1], entries[:sep_test])
    if train_ratio + test_ratio < 1.0:
        written.append(prefix + "_val.lst")
        write_list_file(written[-1], entries[sep_test + sep:])
    written.append(prefix + "_train.lst")
    write_list_file(written[-1], entries[sep_test:sep_test + sep])
    return written


def pack_list(lst: str | os.PathLike, root: str | os.PathLike | None = None,
              encoding: str = ".jpg", quality: int = 95, pass_through: bool = False,
              progress: bool | None = None) -> tuple[str, str]:
    """Pack the images of an im2rec ``.lst`` into ``.rec`` + ``.idx`` beside it (im2rec's second
    step); returns their paths.

    Each record is ``IRHeader(0, label, index, 0)`` (all labels, flag = their count, when a line
    has several) followed by the image re-encoded by OpenCV (``encoding`` '.jpg' with JPEG
    ``quality``, or '.png' with compression ``min(quality, 9)``), or the file's own bytes with
    ``pass_through``. Paths are relative to ``root`` (default: the list's folder) unless absolute;
    ``archive.zip@member`` paths read zip members.
    """
    lst = os.fspath(lst)
    base = os.path.splitext(lst)[0]
    rec_path, idx_path = base + ".rec", base + ".idx"
    root = os.path.abspath(os.fspath(root) if root is not None else os.path.dirname(lst))
    entries = read_list_file(lst)
    reader = _ImageBytes()
    try:
        with IndexedRecordIO(idx_path, rec_path, "w") as out:
            for line, entry in _progress(enumerate(entries, start=1), len(entries), "im2rec",
                                         progress):
                path, member = resolve_image_path(entry.path, root, root)
                try:
                    data = reader.read(path, member)
                    if not pass_through:
                        data = encode_image(decode_image(data, 3), encoding, quality)
                except ImageReadError as exc:
                    raise DataError(f"image {entry.path!r}: {exc}", lst, line) from None
                label = entry.labels[0] if len(entry.labels) == 1 else list(entry.labels)
                out.write_idx(entry.index, pack_image_record(IRHeader(0, label, entry.index, 0),
                                                             data))
    finally:
        reader.close()
    return rec_path, idx_path


# ------------------------------------------------------------------------------- rec2img


def dump_rec(rec: str | os.PathLike, out_dir: str | os.PathLike,
             idx: str | os.PathLike | None = None, progress: bool | None = None) -> int:
    """Write every image record of ``rec`` to ``out_dir`` as ``%05d.<ext>`` with its bytes as
    stored, plus ``images.lst`` (all labels) and, when every record has one integer label,
    ``map.txt`` (``...`` paths). Returns the number of records. A failure half-way (a bad
    record, a full disk) removes the files and folders this call made."""
    rec = os.fspath(rec)
    out_dir = os.path.abspath(os.fspath(out_dir))
    idx = None if idx is None else os.fspath(idx)
    indexed = None if idx is None else read_idx_entries(idx)
    entries: list[ListEntry] = []
    map_ok = True
    with RecordIOReader(rec) as reader, _Outputs() as made:
        made.folder(out_dir)
        records = (reader.read_at(offset, k, (idx, line, key))
                   for k, (key, offset, line) in enumerate(indexed)) if indexed is not None \
            else iter(reader)
        for k, payload in enumerate(_progress(records, len(indexed) if indexed else None,
                                              "rec2img", progress)):
            header, data = unpack_image_record(payload, rec, k)
            ext = image_format(data) or ".bin"
            name = f"{k:05d}{ext}"
            with AtomicFile(made.file(os.path.join(out_dir, name)), sync=False) as f:
                f.write(data)
            labels = tuple(float(v) for v in np.atleast_1d(header.label))
            if header.flag > 1 or not float(labels[0]).is_integer() or labels[0] < 0:
                map_ok = False
            entries.append(ListEntry(int(header.id), labels, name))
        os.sync()                   # the images reach the disk before the lists naming them
        write_list_file(made.file(os.path.join(out_dir, "images.lst")), entries)
        if map_ok:
            atomic_write(made.file(os.path.join(out_dir, "map.txt")),
                         "".join(f".../{e.path}\t{int(e.labels[0])}\n" for e in entries))
    return len(entries)
