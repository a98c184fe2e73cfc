"""``stadyn convert`` and ``stadyn info``, and the docstring examples of the serialize modules."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn.cli import main


def _model(tmp_path):
    with sd.parameter_registry(sd.ParameterRegistry()):
        import stadyn.parametric_functions as PF
        x = sd.Variable((2, 3))
        y = F.softmax(PF.affine(x, 4, name="fc"))
    path = tmp_path / "m.stadyn"
    sd.save(path, {"probs": y}, {"x": x})
    return path


def test_convert_both_ways_and_info(tmp_path, capsys):
    src = _model(tmp_path)
    assert main(["convert", str(src), str(tmp_path / "m.onnx")]) == 0
    assert "ONNX opset 17" in capsys.readouterr().out
    assert main(["convert", "--dim", "batch=5", str(tmp_path / "m.onnx"),
                 str(tmp_path / "back.stadyn")]) == 0
    back = sd.load(tmp_path / "back.stadyn")
    assert back.inputs["x"].shape == (5, 3) and list(back.outputs) == ["probs"]
    data = np.random.default_rng(0).normal(size=(2, 3))
    np.testing.assert_allclose(back.run({"x": np.concatenate([data] * 3)[:5]})["probs"][:2],
                               sd.load(src)(x=data)["probs"], rtol=1e-6)
    capsys.readouterr()
    assert main(["info", str(tmp_path / "m.onnx")]) == 0
    out = capsys.readouterr().out
    assert "x: (batch, 3) float32" in out and "Gemm: 1" in out and "parameters: 16 in 2" in out
    assert main(["info", str(src)]) == 0
    out = capsys.readouterr().out
    assert "format version 1" in out and "affine: 1" in out and "probs: (2, 4) float32" in out


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["info", str(tmp_path / "missing.stadyn")]) == 1
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "bad.stadyn").write_bytes(b"PK\x03\x04garbage")
    assert main(["convert", str(tmp_path / "bad.stadyn"), str(tmp_path / "o.onnx")]) == 1
    assert "bad.stadyn" in capsys.readouterr().err
    src = _model(tmp_path)
    assert main(["convert", "--dim", "batch", str(src), str(tmp_path / "o.onnx")]) == 1
    assert "NAME=SIZE" in capsys.readouterr().err
    # the error names the file asked for, not the hidden temporary file of the atomic write
    out = tmp_path / "nodir" / "o.onnx"
    assert main(["convert", str(src), str(out)]) == 1
    err = capsys.readouterr().err
    assert f"cannot write {out}: folder {tmp_path / 'nodir'} does not exist" in err
    assert ".tmp-" not in err and not (tmp_path / "nodir").exists()
    assert main(["convert", str(tmp_path), str(tmp_path / "o.onnx")]) == 1
    assert "is a folder, not a model file" in capsys.readouterr().err


@pytest.mark.parametrize("argv,words", [
    (["demo", "--epochs", "-1"], "--epochs: must be >= 1, got -1"),
    (["demo", "--batch-size", "0"], "--batch-size: must be >= 1, got 0"),
    (["bench", "--rounds", "x"], "--rounds: expected a whole number, got 'x'"),
    (["bench", "--warmup", "-2"], "--warmup: must be >= 0, got -2"),
])
def test_bad_counts_are_usage_errors(argv, words, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2 and words in capsys.readouterr().err


@pytest.mark.parametrize("module", [
    "stadyn.serialize._model", "stadyn.serialize._model_save", "stadyn.serialize._network",
    "stadyn.serialize._onnx_export",
    "stadyn.serialize._onnx_import", "stadyn.serialize._parameters", "stadyn.cli.convert",
])
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
