"""Output files written whole or not at all: AtomicFile's permissions, fsync and errors."""

from __future__ import annotations

import os
import stat

import pytest

from stadyn.io import RecordIOWriter
from stadyn.io._files import AtomicFile


@pytest.fixture
def umask():
    """Set the process umask for one test; the old one comes back after."""
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002], ids=["022", "027", "002"])
def test_committed_file_has_the_mode_open_would_give(tmp_path, umask, mask):
    umask(mask)
    with AtomicFile(tmp_path / "atomic.bin") as f:
        f.write(b"abc")
    with open(tmp_path / "plain.bin", "wb") as f:
        f.write(b"abc")
    assert mode(tmp_path / "atomic.bin") == mode(tmp_path / "plain.bin") == 0o666 & ~mask
    with RecordIOWriter(tmp_path / "a.rec") as w:
        w.write(b"record")
    assert mode(tmp_path / "a.rec") == 0o666 & ~mask


def test_data_reaches_the_disk_before_the_rename(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append(("fsync", fd)), real_fsync(fd)))
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append(("replace", b)),
                                                     real_replace(a, b)))
    out = AtomicFile(tmp_path / "out.bin")
    out.write(b"payload")
    fd = out.file.fileno()
    out.commit()
    assert events == [("fsync", fd), ("replace", out.path)]
    assert (tmp_path / "out.bin").read_bytes() == b"payload"


def test_missing_folder_names_the_target_not_the_temporary_file(tmp_path):
    target = tmp_path / "nowhere" / "data.rec"
    with pytest.raises(FileNotFoundError) as err:
        AtomicFile(target)
    assert str(err.value) == f"cannot write {target}: folder {tmp_path / 'nowhere'} does not exist"
    with pytest.raises(FileNotFoundError, match="cannot write .*data.rec: folder"):
        RecordIOWriter(target)
    assert list(tmp_path.iterdir()) == []


def test_failed_commit_leaves_neither_target_nor_temporary(tmp_path, monkeypatch):
    def no_space(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(OSError, match="No space left"):
        with AtomicFile(tmp_path / "out.bin") as f:
            f.write(b"payload")
    assert list(tmp_path.iterdir()) == []
