"""Output files written whole or not at all: AtomicFile's permissions, fsync and errors, a full
disk, temporary names."""

from __future__ import annotations

import errno
import io
import os
import re
import stat

import numpy as np
import pytest
from _io_helpers import fake_cifar, write_image

from stadyn._fileutil import TEMP_PREFIX
from stadyn.cli import main
from stadyn.io import RecordIOWriter
from stadyn._errors import DataError
from stadyn.io import read_map_file, read_mean_file, read_script_file, read_state_list
from stadyn.io._files import AtomicFile, atomic_write, read_text_file


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


# ------------------------------------------------------------------------ a full disk


class _DiskWithRoom(io.FileIO):
    """A file on a disk with ``room`` bytes left (shared by all files): a write past it fails
    with ENOSPC, as the kernel's does, and so does every later flush of the same data."""

    room = 0

    def write(self, data):
        if len(data) > _DiskWithRoom.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        _DiskWithRoom.room -= len(data)
        return super().write(data)


@pytest.fixture
def full_disk(monkeypatch):
    """Binary files opened for writing with ``os.fdopen`` (how AtomicFile opens its temporary
    file) land on a disk with the room the test sets: ``full_disk(room_in_bytes)``."""
    real = os.fdopen

    def fdopen(fd, mode="r", *args, **kwargs):
        if "w" in mode and "b" in mode:
            return io.BufferedWriter(_DiskWithRoom(fd, "wb", closefd=True))
        return real(fd, mode, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", fdopen)
    _DiskWithRoom.room = 1 << 40

    def set_room(room: int) -> None:
        _DiskWithRoom.room = room
    return set_room


def everything_under(folder) -> list[str]:
    return sorted(os.path.relpath(os.path.join(root, name), folder)
                  for root, dirs, files in os.walk(folder) for name in dirs + files)


def test_a_full_disk_leaves_no_temporary_file_even_when_closing_fails_again(tmp_path, full_disk):
    full_disk(1000)
    out = AtomicFile(tmp_path / "big.rec")
    out.write(b"x" * 5000)                  # buffered: the disk says no at the flush
    with pytest.raises(OSError, match="No space left"):
        out.commit()
    assert list(tmp_path.iterdir()) == []
    full_disk(0)
    with pytest.raises(OSError, match="No space left"):
        with AtomicFile(tmp_path / "big.rec") as f:
            f.write(b"x" * 100_000)         # past the buffer: fails in write, and in close
    assert list(tmp_path.iterdir()) == []


def _images(folder, count=4):
    rng = np.random.default_rng(0)
    for k in range(count):
        write_image(str(folder / f"{k}.png"), rng.integers(0, 256, (16, 16, 3), dtype=np.uint8))


def test_im2rec_on_a_full_disk_fails_and_leaves_only_its_complete_list(tmp_path, full_disk,
                                                                      capsys):
    _images(tmp_path / "imgs")
    full_disk(3000)
    assert main(["data", "im2rec", str(tmp_path / "imgs"), str(tmp_path / "data"),
                 "--encoding", ".png", "-q"]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert everything_under(tmp_path) == ["data.lst", "imgs"] + [f"imgs/{k}.png" for k in range(4)]


def test_cifar10_on_a_full_disk_removes_what_it_wrote(tmp_path, full_disk, capsys):
    fake_cifar(tmp_path / "cifar.tar.gz", per_batch=3)
    full_disk(20_000)                       # a few of the 18 PNGs fit
    assert main(["data", "cifar10", str(tmp_path / "cifar.tar.gz"), "--out",
                 str(tmp_path / "out"), "-q"]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert everything_under(tmp_path) == ["cifar.tar.gz"]


def test_rec2img_on_a_full_disk_removes_what_it_wrote(tmp_path, full_disk, capsys):
    _images(tmp_path / "imgs")
    assert main(["data", "im2rec", str(tmp_path / "imgs"), str(tmp_path / "data"),
                 "--encoding", ".png", "-q"]) == 0
    before = everything_under(tmp_path)
    full_disk(1500)
    assert main(["data", "rec2img", str(tmp_path / "data.rec"), "--out", str(tmp_path / "dump"),
                 "-q"]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert everything_under(tmp_path) == before


# ------------------------------------------------------ temporary names, permissions, lengths


def test_overwriting_keeps_the_mode_of_the_file_it_replaces(tmp_path, umask):
    umask(0o022)
    for name, write in (("a.bin", lambda p: _commit(p, b"new")),
                        ("b.txt", lambda p: atomic_write(p, "new")),
                        ("c.rec", lambda p: _one_record(p))):
        path = tmp_path / name
        path.write_bytes(b"old secret")
        os.chmod(path, 0o600)
        write(path)
        assert mode(path) == 0o600, name
        os.chmod(path, 0o640)
        write(path)
        assert mode(path) == 0o640, name
    assert (tmp_path / "a.bin").read_bytes() == b"new"


def _commit(path, data):
    with AtomicFile(path) as f:
        f.write(data)


def _one_record(path):
    with RecordIOWriter(path) as w:
        w.write(b"record")


@pytest.mark.parametrize("length", [200, 242, 250, 255])
def test_a_target_name_of_up_to_255_bytes_can_be_written(tmp_path, length):
    name = "m" * (length - 4) + ".rec"
    with AtomicFile(tmp_path / name) as f:
        f.write(b"abc")
    atomic_write(tmp_path / ("t" * (length - 4) + ".txt"), "abc")
    assert sorted(len(p.name) for p in tmp_path.iterdir()) == [length, length]


def test_temporary_names_are_short_recognisable_and_keep_the_extension(tmp_path):
    out = AtomicFile(tmp_path / ("x" * 250 + ".safetensors"))
    name = os.path.basename(out.tmp_path)
    out.discard()
    assert name.startswith(TEMP_PREFIX) and name.endswith(".safetensors")
    assert f"-{os.getpid()}-" in name and len(name) <= 64


def test_text_files_read_line_ends_as_text_mode_does(tmp_path):
    """The label list, the script file and the MLF read their text through one reader: Windows
    and old-Mac line ends count as Python's text mode counts them."""
    p = tmp_path / "states.list"
    p.write_bytes(b"sil\r\na_s2\ra_s3\n")
    assert read_text_file(str(p), "label mapping file") == "sil\na_s2\na_s3\n"
    assert read_state_list(p) == {"sil": 0, "a_s2": 1, "a_s3": 2}
    s = tmp_path / "u.scp"
    s.write_bytes(b"u1.mfc=all.htk[0,9]\r\nu2.mfc=all.htk[10,19]\r\n")
    assert [(e.key, e.first, e.last) for e in read_script_file(s)] == [("u1", 0, 9), ("u2", 10, 19)]


@pytest.mark.parametrize("reader, what", [
    (read_state_list, "label mapping file"), (read_script_file, "script (scp) file"),
    (read_map_file, "map file"), (read_mean_file, "mean file")])
def test_a_folder_or_bad_bytes_where_a_data_file_goes_is_one_error_naming_it(tmp_path, reader,
                                                                             what):
    with pytest.raises(DataError, match=f"expected a {re.escape(what)}, found a folder") as err:
        reader(tmp_path)
    assert str(tmp_path) in str(err.value)
    bad = tmp_path / "bad"
    bad.write_bytes(b"\xff\xfe<x>\n")
    with pytest.raises(DataError) as err:
        reader(bad)
    assert str(bad) in str(err.value)
