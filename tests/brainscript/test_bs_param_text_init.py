"""Parameters filled from text: ``init = "fromLiteral"`` with ``initFromLiteral`` and
``initFromFilePath``, read as cntk.exe's LearnableParameter reads them (InputAndParamNodes.cpp:
File::LoadMatrixFromStringLiteral, InitFromArray): the text's rows are the ``[rows x cols]``
matrix, dimensions of 0 inferred from it.  Expectations are hand-computed from the matrix."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import build_network
from stadyn.brainscript._stadyn_library import StadynLibrary
from stadyn.train import feed

M = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)       # the literal's rows
LITERAL = '"\n  1 2 3\r\n\n 4  5 6\n"'                              # blank lines skipped


def _run(text: str, x: np.ndarray) -> dict:
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ " + text + " }", StadynLibrary())
        feed(net.nodes["x"], x)
        net.nodes["y"].forward()
        return {"y": net.nodes["y"].d.copy(), "W": net.nodes["W"]}


@pytest.mark.parametrize("declare", [
    f"W = ParameterTensor {{0, init = 'fromLiteral', initFromLiteral = {LITERAL}}}",
    f"W = ParameterTensor {{(2:0), init = 'fromLiteral', initFromLiteral = {LITERAL}}}",
    f"W = Parameter {{0, 3, init = 'fromLiteral', initFromLiteral = {LITERAL}}}",
    f"W = Parameter {{2, 3, init = 'fromLiteral', initFromLiteral = {LITERAL}}}"])
def test_a_literal_is_the_matrix_of_its_rows(declare):
    # W is [2 x 3]: W * x is the literal's matrix times x
    x = np.array([[1.0, 0.5, -1.0], [0.0, 2.0, 1.0]], np.float32)
    out = _run(declare + " ; x = Input {3} ; y = W * x", x)
    np.testing.assert_allclose(out["y"], x @ M.T)
    assert out["W"].shape == (3, 2) and out["W"].need_grad


def test_a_literal_fills_a_tensor_column_major():
    # [2 x 3] matrix, column-major (1 4 2 5 3 6), read as a [2 x 3] tensor; with
    # learningRateMultiplier 0 it is a constant
    out = _run(f"W = ParameterTensor {{(2:3), init = 'fromLiteral', initFromLiteral = {LITERAL},"
               " learningRateMultiplier = 0} ; x = Input {(2:3)} ; y = x + W",
               np.zeros((1, 3, 2), np.float32))
    np.testing.assert_array_equal(out["y"][0], M.T)
    assert not out["W"].need_grad


def test_a_file_is_read_as_a_literal_and_taken_without_init(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w.txt").write_text("1 2 3\n\n4 5 6\n")
    x = np.array([[1.0, 0.5, -1.0]], np.float32)
    for declare in ("W = ParameterTensor {0, initFromFilePath = 'w.txt'}",
                    "W = Parameter {2, 0, init = 'fromFile', initFromFilePath = 'w.txt'}"):
        out = _run(declare + " ; x = Input {3} ; y = W * x", x)
        np.testing.assert_allclose(out["y"], x @ M.T)


@pytest.mark.parametrize("declare, message", [
    ("ParameterTensor {0, init = 'fromLiteral', initFromLiteral = '1 2\n3'}",
     "initFromLiteral: row 1 has 1 numbers, the rows before it 2"),
    ("ParameterTensor {0, init = 'fromLiteral', initFromLiteral = '1 2 x3'}",
     "initFromLiteral: malformed number 'x3' in row 0"),
    ("ParameterTensor {0, init = 'fromLiteral'}",
     'initFromLiteral parameter must be provided when using "fromLiteral"'),
    ("ParameterTensor {(3:0), init = 'fromLiteral', initFromLiteral = '1 2 3\n4 5 6'}",
     r"ParameterTensor: the shape \[3 x 0\] does not fit a \[2 x 3\] matrix"),
    ("ParameterTensor {(2:0:0), init = 'fromLiteral', initFromLiteral = '1 2'}",
     "too many unknown dimensions"),
    ("ParameterTensor {(2:2:0), init = 'fromLiteral', initFromLiteral = '1 2 3\n4 5 6'}",
     r"the shape \[2 x 2 x 0\] cannot hold a \[2 x 3\] matrix"),
    ("ParameterTensor {0, init = 'fromFile', initFromFilePath = 'missing.txt'}",
     "initFromFilePath 'missing.txt' cannot be read")])
def test_bad_text_is_one_error_at_the_users_line(declare, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=message) as info:
        _run("x = Input {3}\n W = " + declare + " ; y = W * x", np.zeros((1, 3), np.float32))
    assert str(info.value).startswith("<string>:2:22: ParameterTensor: ")


def test_a_literal_without_init_from_literal_is_not_read():
    # cntk.exe reads initFromLiteral only for init = "fromLiteral"; without init the parameter
    # is drawn ('uniform'), its dimensions as declared
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ W = ParameterTensor {(2:3), initFromLiteral = '1 2 3\n4 5 6', "
                            "randomSeed = 1} }", StadynLibrary())
        w = net.nodes["W"].d
    assert w.shape == (3, 2) and not np.array_equal(w, M.T)
