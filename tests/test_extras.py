"""Optional dependencies: a feature whose extra is not installed fails at once with one error that
names the package and the extra (``pip install 'stadyn[onnx]'``), before any work is done.

A missing package is simulated with ``sys.modules[name] = None`` (then ``import name`` raises
ImportError), so these tests run where every extra is installed.
"""

import sys

import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn._extras import MissingDependencyError


def _hide(monkeypatch, *names):
    for name in names:
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            monkeypatch.delitem(sys.modules, key)
        monkeypatch.setitem(sys.modules, name, None)


def _expect(extra, package):
    return pytest.raises(MissingDependencyError,
                         match=rf"needs the package '{package}', which is not installed: "
                               rf"pip install 'stadyn\[{extra}\]'")


def test_onnx_export_and_import_name_the_onnx_extra(monkeypatch, tmp_path):
    x = sd.Variable((1, 2))
    y = F.tanh(x)
    _hide(monkeypatch, "onnx")
    with _expect("onnx", "onnx"):
        sd.export_onnx(tmp_path / "m.onnx", {"y": y}, {"x": x})
    assert not (tmp_path / "m.onnx").exists()
    with _expect("onnx", "onnx"):
        sd.import_onnx(tmp_path / "m.onnx")


def test_the_error_is_an_import_error_and_a_stadyn_error(monkeypatch):
    _hide(monkeypatch, "onnx")
    with pytest.raises(ImportError):
        sd.export_onnx("never.onnx", {"y": F.tanh(sd.Variable((1, 2)))})
    with pytest.raises(sd.StadynError):
        sd.export_onnx("never.onnx", {"y": F.tanh(sd.Variable((1, 2)))})


def test_tensorboard_writer_names_the_tensorboard_extra(monkeypatch, tmp_path):
    from stadyn.train import TensorBoardProgressWriter
    _hide(monkeypatch, "tensorboard")
    with _expect("tensorboard", "tensorboard"):
        TensorBoardProgressWriter(log_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_digits_and_demo_name_the_demo_extra(monkeypatch, tmp_path):
    from stadyn.cli.demo import run_demo
    from stadyn.io import load_digits_source
    _hide(monkeypatch, "sklearn")
    with _expect("demo", "sklearn"):
        load_digits_source()
    _hide(monkeypatch, "matplotlib")
    with _expect("demo", "matplotlib"):             # before any training
        run_demo(epochs=1, out=str(tmp_path), log=lambda *a: pytest.fail("trained"))


def test_a_package_that_is_there_but_broken_is_not_reported_as_missing(monkeypatch, tmp_path):
    from stadyn._extras import require
    (tmp_path / "present_pkg.py").write_text("import absent_dependency_of_present_pkg\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as info:
        require("present_pkg", "demo", "x")
    assert not isinstance(info.value, MissingDependencyError)
    assert info.value.name == "absent_dependency_of_present_pkg"
