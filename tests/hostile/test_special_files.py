"""FIFOs and devices given to the readers outside io: model files, parameter files, ONNX, the
``stadyn info`` command and BrainScript configs. Each refuses the file by name (one shared check,
``stadyn._fileutil.refuse_special_file``) instead of blocking on the FIFO for ever or reading
``/dev/zero`` until memory runs out; each run is bounded (tests/hostile/_hostile.py)."""

from __future__ import annotations

import os

import pytest


def model_load(path):
    import stadyn as sd
    return sd.load(path)


def model_info(path):
    from stadyn.serialize import model_info
    return str(model_info(path))


def load_parameters(path):
    import stadyn as sd
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.load_parameters(path)


def import_onnx(path):
    import stadyn as sd
    return sd.import_onnx(path)


def stadyn_info(path):
    """``stadyn info PATH``: exit status and the error line, or the error the CLI let through."""
    import contextlib
    import io

    from stadyn.cli import main
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["info", path])
    from stadyn import ModelFileError
    raise ModelFileError(f"exit status {status}: {err.getvalue().strip()}")


def brainscript_config(path):
    from stadyn.brainscript import load_config
    return load_config(path)


def brainscript_members(path):
    from stadyn.brainscript import parse_file
    return parse_file(path)


# (loader, the file name it is given: a suffix some loaders choose their reader by)
LOADERS = {
    "sd.load": (model_load, "model.stadyn"),
    "model_info": (model_info, "model.stadyn"),
    "stadyn info": (stadyn_info, "model.onnx"),
    "load_parameters (safetensors)": (load_parameters, "params.safetensors"),
    "load_parameters (.h5)": (load_parameters, "params.h5"),
    "load_parameters (.nnp)": (load_parameters, "params.nnp"),
    "import_onnx": (import_onnx, "model.onnx"),
    "load_config": (brainscript_config, "run.cntk"),
    "parse_file": (brainscript_members, "net.bs"),
}


@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize("loader", list(LOADERS))
def test_model_parameter_and_config_readers_refuse_fifos_and_devices(loader, kind, tmp_path,
                                                                     refused):
    function, name = LOADERS[loader]
    path = tmp_path / name
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    what = "a FIFO (named pipe)" if kind == "fifo" else "a character device"
    refused(function, str(path), names=[f"{path}: is {what}, not a regular file"],
            watch=tmp_path)
