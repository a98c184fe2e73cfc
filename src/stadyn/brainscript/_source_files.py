"""Reading the files a ``.cntk`` config names: the config files themselves and the files that
``include`` splices into a config or into BrainScript, for both languages alike.

Only a regular file of at most :data:`SIZE_LIMIT` bytes is read (a FIFO would block, a device
such as ``/dev/zero`` would never end), and a byte that is not UTF-8 is reported at its own
line and column, without quoting the file.

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "lib.bs"), "w") as f:
    ...     _ = f.write("x = 1")
    >>> target = resolve_include("lib.bs", [folder])
    >>> read_source(target, None, "BrainScript file")
    'x = 1'
    >>> read_source(folder, None, "BrainScript file")
    Traceback (most recent call last):
    stadyn._errors.ConfigError: cannot read BrainScript file ...: is a folder, not a regular file
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence

from stadyn._fileutil import special_file_kind

from ._ast import SourceLocation, config_error as _error

_LINE_BOM = re.compile("(^|\n)\ufeff")

__all__ = ["SIZE_LIMIT", "resolve_include", "read_source"]

#: The largest config or BrainScript file read, in bytes.
SIZE_LIMIT = 16 << 20


def resolve_include(name: str, folders: Sequence[str] = ()) -> str | None:
    """The file an ``include`` names, found as cntk.exe finds it (BrainScriptParser.cpp:398-419,
    FindSourceFile): the name as written (absolute, or relative to the working folder) first,
    else its file name in each of ``folders`` in order (the include folders: for BrainScript
    the folders of the files being included, innermost first, then of every config file,
    Config.cpp:66 and BrainScriptParser.cpp:487).  The file name is what follows the last
    ``/`` (File::FileNameOf, File.cpp:215-227: ``/`` alone separates there, so a log's
    ``"D:\\CNTK\\BrainScript/Macros.bs"`` is ``Macros.bs``).  Where cntk.exe would stop with
    "file not found", the name as written is last tried under each folder (``sub/lib.bs`` next
    to the including file).  None when no such file exists."""
    base = name.rsplit("/", 1)[-1]
    candidates = [name, *(os.path.join(d, base) for d in folders)]
    if not os.path.isabs(name):
        candidates += [os.path.join(d, name) for d in folders]
    for cand in candidates:
        if os.path.isfile(cand):
            return os.path.normpath(cand)
    return None


def read_source(path: str, loc: SourceLocation | None, what: str = "config file") -> str:
    """The text of ``path``; ``loc`` is where it was named (an ``include``), if anywhere."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            kind = special_file_kind(info.st_mode) or "a folder"
            raise _error(f"cannot read {what} {path}: is {kind}, not a regular file", loc)
        with open(path, "rb") as f:
            data = f.read(SIZE_LIMIT + 1)
    except OSError as err:
        raise _error(f"cannot read {what} '{path}': {err}", loc) from None
    if len(data) > SIZE_LIMIT:
        raise _error(f"{what} '{path}' is larger than {SIZE_LIMIT >> 20} MiB; not a {what}", loc)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line_start = data.rfind(b"\n", 0, err.start) + 1
        line = data.count(b"\n", 0, err.start) + 1
        column = len(data[line_start:err.start].decode("utf-8")) + 1
        bad = data[err.start:err.end].hex(" ")
        raise _error(f"the {what} is not UTF-8 text: byte {bad} ({err.reason})",
                     SourceLocation(path, line, column)) from None
    # cntk.exe reads config and BrainScript files line by line with File::GetLine, which drops a
    # UTF-8 byte order mark at the start of any line (File.cpp:331-336; Config.cpp:218-220,
    # BrainScriptParser.cpp:40): Tests/EndToEndTests/Image/Base64Write/EvalNetOnImages.cntk
    # starts with one
    return _LINE_BOM.sub(r"\1", text)
