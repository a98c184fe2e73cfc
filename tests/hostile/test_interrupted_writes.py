"""A writer killed with SIGKILL in the middle of a write (a model file, a parameter file, a
record file) leaves its temporary file behind; the next write into that folder removes it, and
the target itself was never touched."""

from __future__ import annotations

import os
import signal

import pytest

from stadyn._fileutil import TEMP_PREFIX, atomic_write


def _killed_after(n_bytes: int):
    """A writer callback that writes ``n_bytes`` and then dies as ``kill -9`` would."""
    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(b"x" * n_bytes)
            f.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    return write


def killed_atomic_write(path):
    atomic_write(path, _killed_after(1 << 20))


def killed_record_file(path):
    from stadyn.io import RecordIOWriter
    with RecordIOWriter(path) as w:
        w.write(b"r" * 100_000)
        w._file.flush()
        os.kill(os.getpid(), signal.SIGKILL)


def killed_model_save(path):
    """``sd.save`` killed after the archive's first member is written."""
    import zipfile

    import stadyn as sd
    import stadyn.functions as F
    real = zipfile.ZipFile.writestr

    def writestr(self, info, data, *args, **kwargs):
        real(self, info, data, *args, **kwargs)
        self.fp.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    zipfile.ZipFile.writestr = writestr
    x = sd.Variable((1, 2))
    sd.save(path, F.mul_scalar(x, 2.0), x)


def model_save(path):
    import stadyn as sd
    import stadyn.functions as F
    x = sd.Variable((1, 2))
    sd.save(path, F.mul_scalar(x, 3.0), x)


def text_file(path):
    atomic_write(path, lambda tmp: open(tmp, "w").write("complete"))


def record_file(path):
    from stadyn.io import RecordIOWriter
    with RecordIOWriter(path) as w:
        w.write(b"complete")


def temps(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(TEMP_PREFIX))


@pytest.mark.parametrize("killed, rewrite, name", [
    (killed_atomic_write, text_file, "params.safetensors"),
    (killed_record_file, record_file, "train.rec"),
    (killed_model_save, model_save, "model.stadyn"),
])
def test_the_next_write_removes_what_a_killed_writer_left(killed, rewrite, name, tmp_path,
                                                         bounded):
    target = tmp_path / name
    target.write_bytes(b"the previous version")
    outcome = bounded(killed, str(target))
    assert outcome.kind == "died" and outcome.detail == "killed by signal SIGKILL", outcome
    assert target.read_bytes() == b"the previous version"        # never half-written
    [left] = temps(tmp_path)
    assert (tmp_path / left).stat().st_size > 0
    assert left.startswith(TEMP_PREFIX) and f"-{outcome.pid}-" in left     # whose it was
    outcome = bounded(rewrite, str(target))                      # a later run, same folder
    assert outcome.kind == "returned", outcome
    assert temps(tmp_path) == []
    assert target.read_bytes() != b"the previous version"


def test_a_live_writers_temporary_file_is_left_alone(tmp_path, bounded):
    from stadyn._fileutil import make_temp
    fd, mine = make_temp(str(tmp_path), ".bin")       # this (live) process is writing it
    os.close(fd)
    outcome = bounded(record_file, str(tmp_path / "other.rec"))
    assert outcome.kind == "returned", outcome
    assert temps(tmp_path) == [os.path.basename(mine)]
