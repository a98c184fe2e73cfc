"""stadyn._fileutil: temporary files (names, stale ones), permissions kept, special files."""

from __future__ import annotations

import os
import stat

import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn import _fileutil
from stadyn._fileutil import (TEMP_PREFIX, atomic_write, make_temp, refuse_special_file,
                              remove_stale_temps)

NEVER_A_PID = 4_194_305           # above the largest pid_max Linux allows (2**22)


def _temp_named(folder, host=None, boot=None, pid=None):
    name = (f"{TEMP_PREFIX}{host or _fileutil._HOST}-{boot or _fileutil._BOOT}-"
            f"{pid or os.getpid()}-0badf00d.safetensors")
    (folder / name).write_bytes(b"half a checkpoint")
    return name


def test_stale_temporary_files_are_those_of_gone_writers_of_this_host(tmp_path):
    dead = _temp_named(tmp_path, pid=NEVER_A_PID)
    old_boot = _temp_named(tmp_path, boot="00000000", pid=1)     # pid 1 is alive now
    alive = _temp_named(tmp_path)
    other_host = _temp_named(tmp_path, host="12345678", pid=NEVER_A_PID)
    (tmp_path / ".tmp-stadyn-garbled").write_bytes(b"?")
    (tmp_path / "model.stadyn").write_bytes(b"a user's file")
    assert sorted(remove_stale_temps(tmp_path)) == sorted([dead, old_boot])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [alive, other_host, ".tmp-stadyn-garbled", "model.stadyn"])


def test_the_first_write_into_a_folder_removes_stale_temporary_files(tmp_path):
    dead = _temp_named(tmp_path, pid=NEVER_A_PID)
    atomic_write(tmp_path / "a.txt", lambda tmp: open(tmp, "w").write("hello"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
    assert dead not in os.listdir(tmp_path)


def test_a_temporary_file_is_owner_only_until_it_is_published(tmp_path):
    fd, tmp = make_temp(str(tmp_path), ".bin")
    os.close(fd)
    assert stat.S_IMODE(os.stat(tmp).st_mode) == 0o600
    assert len(os.path.basename(tmp)) <= 64


def _model(path):
    x = sd.Variable((1, 2))
    sd.save(path, F.mul_scalar(x, 2.0), x)


def test_a_model_or_parameter_file_overwritten_keeps_its_mode(tmp_path):
    model, params = tmp_path / "m.stadyn", tmp_path / "p.safetensors"
    _model(model)
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.get_parameter_or_create("w", (2, 2))
        sd.save_parameters(params)
        os.chmod(model, 0o600)
        os.chmod(params, 0o600)
        _model(model)
        sd.save_parameters(params)
    assert stat.S_IMODE(os.stat(model).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(params).st_mode) == 0o600
    assert sd.load(model) is not None


def test_a_model_file_name_of_255_bytes_can_be_saved(tmp_path):
    path = tmp_path / ("m" * 248 + ".stadyn")
    _model(path)
    assert os.listdir(tmp_path) == [path.name]
    assert sd.load(path) is not None


def test_special_files_are_refused_with_their_name_and_kind(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(sd.DataError) as err:
        refuse_special_file(tmp_path / "pipe", sd.DataError)
    assert err.value.path == str(tmp_path / "pipe")
    assert str(err.value) == (f"{tmp_path / 'pipe'}: is a FIFO (named pipe), not a regular file "
                              f"(Stadyn reads only regular files)")
    with pytest.raises(sd.ModelFileError, match="^/dev/null: is a character device"):
        refuse_special_file("/dev/null", sd.ModelFileError)
    for fine in (__file__, tmp_path, tmp_path / "missing"):
        refuse_special_file(fine, sd.DataError)      # regular, folder, missing: the caller's
