"""``stadyn graph FILE -o OUT`` and ``stadyn info --summary FILE`` on model files."""

from __future__ import annotations

import os
import shutil

import pytest

import stadyn as sd
from stadyn.cli import main

LEGACY = os.path.join(os.path.dirname(__file__), "..", "fixtures", "legacy")
needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz's dot program is not installed (apt-get install graphviz; .ci/run installs "
           "it when it runs as root)")


@pytest.fixture
def cnn_file(tutorial_cnn, tmp_path):
    path = str(tmp_path / "cnn.stadyn")
    sd.save(path, {"logits": tutorial_cnn[0]})
    return path


@needs_dot
@pytest.mark.parametrize("ext", ["svg", "html"])
def test_graph_writes_the_picture(cnn_file, tmp_path, capsys, ext):
    out = str(tmp_path / f"cnn.{ext}")
    assert main(["graph", cnn_file, "-o", out, "--depth", "1"]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    text = open(out, encoding="utf-8").read()
    assert "conv_last" in text and "cnn.stadyn" in text     # the file name is the title


def test_graph_dot_and_errors(cnn_file, tmp_path, capsys):
    out = str(tmp_path / "cnn.dot")
    assert main(["graph", cnn_file, "-o", out, "--title", "my CNN"]) == 0
    assert 'label="my CNN"' in open(out, encoding="utf-8").read()
    assert main(["graph", cnn_file, "-o", str(tmp_path / "cnn.bmp")]) == 1
    assert "cannot tell the picture format from '.bmp'" in capsys.readouterr().err
    assert main(["graph", str(tmp_path / "none.onnx"), "-o", out]) == 1
    assert "none.onnx: no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["graph", cnn_file])                          # -o is required


def test_info_summary(cnn_file, tutorial_cnn, capsys):
    assert main(["info", "--summary", cnn_file]) == 0
    out = capsys.readouterr().out
    total = sum(v.size for _, v in tutorial_cnn[1].items())
    assert f"Total params: {total:,}" in out
    assert "cnn/conv1/conv" in out and "Mult-adds:" in out
    assert main(["info", "--summary", "--depth", "2", cnn_file]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()[3:17]]
    assert rows == ["cnn/conv1", *(f"cnn/conv{i}" for i in range(2, 12)), "cnn/conv_last",
                    "cnn/fc", "cnn/classifier"]
    assert main(["info", "--depth", "2", cnn_file]) == 2
    assert "--depth goes with --summary" in capsys.readouterr().err


def test_info_summary_of_a_cntk_file(capsys):
    assert main(["info", "--summary", os.path.join(LEGACY, "cntk_convnet_cifar10.dnn")]) == 0
    out = capsys.readouterr().out
    assert "Total params: 1,195,594" in out and "Dense" in out
