"""The ``edit`` action: CNTK's BrainScript variant (``DoEdit`` in Source/ActionsLib/
TrainActions.cpp: build ``BrainScriptNetworkBuilder``, save it as ``outputModelPath``, skip in make
mode when that file exists) runs; a MEL variant (``editPath``) whose script is missing stops the
run before anything runs, naming the key where it is written."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

import stadyn as sd
from stadyn import ConfigError
from stadyn.brainscript._runner import run

CONFIG = """command = COMMANDS
deviceId = -1
Edit = [
    action = "edit"
    outputModelPath = "$OutputDir$/edited"
    BrainScriptNetworkBuilder = {
        x = Input {2}
        W = ParameterTensor {(3:2), init = "fixedValue", value = 0.5}
        z = ReLU (W * x)
    }
]
MEL = [
    action = "edit"
    CurModel = "$OutputDir$/edited"
    NewModel = "$OutputDir$/new"
    editPath = "$OutputDir$/change.mel"
]
"""


def _run(tmp_path, commands: str) -> str:
    path = tmp_path / "edit.cntk"
    path.write_text(CONFIG.replace("COMMANDS", commands))
    log = io.StringIO()
    run(path, [f"OutputDir={tmp_path}"], out=log)
    return log.getvalue()


def test_brainscript_edit_saves_the_network_and_make_mode_skips_it(tmp_path):
    text = _run(tmp_path, "Edit")
    # CNTK's nodes: the Input, the parameter, Times and ReLU
    assert f"\nModel with 4 nodes saved as '{tmp_path}/edited'.\n" in text
    net = sd.load(tmp_path / "edited", batch_size=2)
    x = np.array([[1.0, -3.0], [2.0, 1.0]], np.float32)
    np.testing.assert_allclose(np.asarray(net(x=x)["z"]).reshape(2, 3),
                               np.maximum(x @ np.full((2, 3), 0.5), 0), rtol=1e-6)
    again = _run(tmp_path, "Edit")
    assert (f"'{tmp_path}/edited' exists, skipping. Specify makeMode=false to force executing "
            "the action.") in again


def test_a_missing_mel_script_stops_the_run_before_anything_runs_naming_editpath(tmp_path):
    # (MEL scripts themselves: test_bs_mel.py)
    with pytest.raises(ConfigError, match=r"edit: the MEL script '.*change.mel' \(editPath\) "
                       r"does not exist"):
        _run(tmp_path, "Edit:MEL")
    assert not os.path.exists(tmp_path / "edited")      # the Edit command did not run either
    with pytest.raises(ConfigError) as err:
        _run(tmp_path, "MEL")
    assert (os.path.basename(err.value.path), err.value.line) == ("edit.cntk", 16)
