"""CNTK map files: one image per line, ``path<TAB>label`` or ``key<TAB>path<TAB>label``.

Path rules (CNTK's):

- a path that starts with ``...`` is relative to the map file's folder;
- another relative path is relative to the working directory (taken when the file is read);
- ``archive.zip@/dir/img.png`` is a member of a zip archive: split at the first ``@``, drop one
  leading separator from the member, turn ``\\`` into ``/``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np

from .._errors import DataError
from ._files import atomic_write, read_data_file

__all__ = ["MapEntry", "MapTable", "read_map_file", "parse_map_text", "parse_map_bytes",
           "resolve_image_path", "walk_folder",
           "scan_image_folder", "write_map_file", "IMAGE_EXTENSIONS"]

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp", ".ppm", ".pgm")
_LABEL = re.compile(r"^\s*([0-9]+)\s*$")
_MAX_LABEL = int(np.iinfo(np.int64).max)


@dataclass(frozen=True)
class MapEntry:
    """One map-file line: where the image is, its label, and where the line is."""

    line: int
    path: str
    label: int
    member: str | None = None
    key: str | None = None

    @property
    def location(self) -> str:
        """The image as CNTK would name it: ``path`` or ``archive@member``."""
        return self.path if self.member is None else f"{self.path}@{self.member}"


@dataclass
class MapTable:
    """The lines of a map file as columns (compact for a million images)."""

    source: str
    paths: list[str] = field(default_factory=list)
    members: list[str | None] = field(default_factory=list)
    keys: list[str | None] = field(default_factory=list)
    labels: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    lines: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __len__(self) -> int:
        return len(self.paths)

    def entry(self, i: int) -> MapEntry:
        return MapEntry(int(self.lines[i]), self.paths[i], int(self.labels[i]), self.members[i],
                        self.keys[i])

    def entries(self) -> list[MapEntry]:
        return [self.entry(i) for i in range(len(self))]


def resolve_image_path(raw: str, map_dir: str, cwd: str) -> tuple[str, str | None]:
    """(file or archive path, zip member or None) for a path written in a map file.

    Example:
        >>> resolve_image_path('.../a/b.png', '/data', '/home')
        ('/data/a/b.png', None)
        >>> resolve_image_path('imgs.zip@\\\\cat\\\\1.jpg', '/data', '/home')
        ('/home/imgs.zip', 'cat/1.jpg')
    """
    member = None
    at = raw.find("@")
    if at >= 0:
        raw, member = raw[:at], raw[at + 1:]
        if member[:1] in ("/", "\\"):
            member = member[1:]
        member = member.replace("\\", "/")
    if raw.startswith("..."):
        rest = raw[3:]
        if rest[:1] in ("/", "\\"):
            rest = rest[1:]
        raw = os.path.join(map_dir, rest)
    elif not os.path.isabs(raw):
        raw = os.path.join(cwd, raw)
    return os.path.normpath(raw), member


def parse_map_text(text: str, source: str, map_dir: str | None = None,
                   cwd: str | None = None) -> MapTable:
    """Parse map-file text; ``source`` names the file in errors. Blank lines are skipped, and so
    is a UTF-8 byte order mark at the start.

    Raises:
        DataError: a line without 2 or 3 tab-separated columns, an empty path or one holding a
            NUL byte, a label that is not a non-negative integer (or does not fit in int64); the
            error names the file and the 1-based line.
    """
    map_dir = map_dir if map_dir is not None else os.path.dirname(os.path.abspath(source))
    cwd = cwd if cwd is not None else os.getcwd()
    if text.startswith("\ufeff"):
        text = text[1:]
    table = MapTable(source)
    labels: list[int] = []
    lines: list[int] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.endswith("\r"):
            line = line[:-1]
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) == 2:
            key, raw, label = None, columns[0], columns[1]
        elif len(columns) == 3:
            key, raw, label = columns
        else:
            raise DataError(f"expected 'path<TAB>label' or 'key<TAB>path<TAB>label', found "
                            f"{len(columns)} tab-separated column(s): {line[:80]!r}", source,
                            number)
        if not raw.strip():
            raise DataError("empty image path", source, number)
        if "\x00" in raw:
            raise DataError(f"image path {raw[:80]!r} holds a NUL byte", source, number)
        match = _LABEL.match(label)
        if match is None:
            raise DataError(f"label {label[:40]!r} is not a non-negative integer", source, number)
        value = int(match.group(1))
        if value > _MAX_LABEL:
            raise DataError(f"label {match.group(1)[:40]} is too large (the largest is "
                            f"{_MAX_LABEL})", source, number)
        path, member = resolve_image_path(raw.strip(), map_dir, cwd)
        if member is not None and not member:
            raise DataError(f"zip path {raw!r} names no member after '@'", source, number)
        table.paths.append(path)
        table.members.append(member)
        table.keys.append(key)
        labels.append(value)
        lines.append(number)
    table.labels = np.array(labels, dtype=np.int64)
    table.lines = np.array(lines, dtype=np.int64)
    return table


def parse_map_bytes(data: bytes, source: str, map_dir: str | None = None,
                    cwd: str | None = None) -> MapTable:
    """:func:`parse_map_text` on raw file content (UTF-8; other bytes are a located DataError)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataError(f"not UTF-8 text (byte 0x{data[exc.start]:02x})", source, line) from None
    return parse_map_text(text, source, map_dir, cwd)


def read_map_file(path: str | os.PathLike) -> list[MapEntry]:
    """Read a map file into entries with resolved paths.

    Example:
        >>> import tempfile, os
        >>> d = tempfile.mkdtemp(); m = os.path.join(d, 'map.txt')
        >>> _ = open(m, 'w').write('.../img/0.png\\t3\\nk1\\t.../data.zip@/x/1.png\\t4\\n')
        >>> [(os.path.relpath(e.path, d), e.member, e.label, e.key) for e in read_map_file(m)]
        [('img/0.png', None, 3, None), ('data.zip', 'x/1.png', 4, 'k1')]
    """
    path = os.fspath(path)
    return parse_map_bytes(read_data_file(path, "map file"), path).entries()


def read_map_table(path: str) -> MapTable:
    """Like :func:`read_map_file`, as columns."""
    return parse_map_bytes(read_data_file(path, "map file"), path)


def walk_folder(top: str) -> Iterator[tuple[str, list[str]]]:
    """``(folder, sorted file names)`` for ``top`` and every folder below it, depth first in
    sorted order, following symbolic links to folders (as ``os.walk(followlinks=True)``).

    A link that leads back to a folder being walked (a cycle), or a second path to a folder
    already walked, is a DataError naming both: ``os.walk`` would list the same files again and
    again (one self-link turns 1 image into dozens of lines, two links into exponentially many).
    A folder that cannot be read is a DataError too, not a silent gap.

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp(); os.makedirs(os.path.join(d, 'a'))
        >>> _ = open(os.path.join(d, 'a', 'x.png'), 'wb')
        >>> os.symlink(d, os.path.join(d, 'a', 'loop'))
        >>> [(os.path.relpath(f, d), names) for f, names in walk_folder(d)]
        Traceback (most recent call last):
        ...
        stadyn._errors.DataError: .../a/loop: symbolic link cycle: this folder is ... (an ancestor)
    """
    seen: dict[tuple[int, int], str] = {}

    def key(path: str) -> tuple[int, int]:
        st = os.stat(path)
        return st.st_dev, st.st_ino

    def fail(exc: OSError) -> None:
        raise DataError(f"cannot list the folder: {exc.strerror or exc}",
                        exc.filename or top) from None

    seen[key(top)] = top
    for folder, dirs, files in os.walk(top, onerror=fail, followlinks=True):
        dirs.sort()
        for name in list(dirs):
            path = os.path.join(folder, name)
            try:
                k = key(path)
            except OSError:                  # a dangling link: nothing to walk
                dirs.remove(name)
                continue
            first = seen.get(k)
            if first is not None:
                inside = folder == first or folder.startswith(first.rstrip(os.sep) + os.sep)
                how = "symbolic link cycle" if inside else "a second path to one folder"
                raise DataError(f"{how}: this folder is {first} "
                                f"({'an ancestor' if inside else 'already listed'})", path)
            seen[k] = path
        yield folder, sorted(files)


def scan_image_folder(folder: str | os.PathLike,
                      extensions: Sequence[str] = IMAGE_EXTENSIONS) -> tuple[MapTable, list[str]]:
    """Images of a folder of class sub-folders: label i is the i-th sub-folder in sorted order.

    Files inside a class folder are taken recursively, in sorted order (:func:`walk_folder`: a
    symbolic-link cycle is an error).
    """
    folder = os.path.abspath(os.fspath(folder))
    if not os.path.isdir(folder):
        raise DataError("image folder does not exist", folder)
    exts = tuple(e.lower() for e in extensions)
    classes = sorted(e.name for e in os.scandir(folder) if e.is_dir())
    table = MapTable(folder)
    labels: list[int] = []
    for label, name in enumerate(classes):
        for root, files in walk_folder(os.path.join(folder, name)):
            for fname in files:
                if os.path.splitext(fname)[1].lower() in exts:
                    table.paths.append(os.path.join(root, fname))
                    table.members.append(None)
                    table.keys.append(None)
                    labels.append(label)
    if not table.paths:
        raise DataError(f"no images ({', '.join(exts)}) in class sub-folders", folder)
    table.labels = np.array(labels, dtype=np.int64)
    table.lines = np.zeros(len(labels), dtype=np.int64)
    return table, classes


def format_map_path(path: str, member: str | None, relative_to: str | None) -> str:
    """How an image path is written in a map file; ``relative_to`` gives ``...`` paths."""
    if relative_to is not None:
        rel = os.path.relpath(path, relative_to)
        if not rel.startswith(".."):
            path = ".../" + rel.replace(os.sep, "/")
    if "\t" in path or "\n" in path or (member is None and "@" in path):
        raise ValueError(f"path {path!r} cannot be written in a map file (tab, newline or '@')")
    return path if member is None else f"{path}@/{member}"


def write_map_file(path: str | os.PathLike, entries: Iterable[tuple[str, int]],
                   relative: bool = False) -> int:
    """Write ``(image path, label)`` lines; ``relative`` writes ``...`` paths where possible.

    Returns the number of lines. The file is written whole or not at all.
    """
    path = os.fspath(path)
    base = os.path.dirname(os.path.abspath(path)) if relative else None
    lines = [f"{format_map_path(os.path.abspath(p), None, base)}\t{int(label)}\n"
             for p, label in entries]
    atomic_write(path, "".join(lines))
    return len(lines)
