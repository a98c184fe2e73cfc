"""The ``write`` action (CNTK's ``DoWriteOutput``): 01_OneHidden.cntk trained for one epoch, then
a write command for its output node, in CNTK's default text format and as categories; the
values are checked against an independent NumPy evaluation of the saved model file."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError, StadynError
from stadyn.brainscript._runner import run
from test_bs_runner import ONE_HIDDEN, _mnist_arrays, _write_mnist_ctf

WRITE = """
writeOutput = {
    action = "write"
    outputPath = "$outputDir$/written/z"
    outputNodeNames = (out.z)
    minibatchSize = 24
    reader = {
        readerType = "CNTKTextFormatReader"
        file = "$DataDir$/Test-28x28_cntk_text.txt"
        input = { features = { dim = 784 ; format = "dense" }
                  labels = { dim = 10 ; format = "dense" } }
    }
    %s
}
"""


def _config(tmp_path: Path, fmt: str = "") -> Path:
    path = tmp_path / "write.cntk"
    path.write_text(ONE_HIDDEN.read_text() + WRITE % fmt)
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    data = tmp_path_factory.mktemp("mnist")
    _write_mnist_ctf(data)
    out = tmp_path_factory.mktemp("out")
    run(_config(out), [f"dataDir={data}", f"outputDir={out}", "command=trainNetwork",
                       "trainNetwork.SGD.maxEpochs=1", "trainNetwork.SGD.epochSize=256"],
        out=io.StringIO())
    features, labels = _mnist_arrays(data / "Test-28x28_cntk_text.txt")
    net = sd.load(out / "Models" / "01_OneHidden", batch_size=64)
    with sd.training(False):
        z = net(features=features.reshape(64, 1, 28, 28), labels=labels)["out.z"]
    return data, out, z


def _write(trained, fmt=""):
    data, out, _ = trained
    log = io.StringIO()
    result = run(_config(out, fmt), [f"dataDir={data}", f"outputDir={out}",
                                     "command=writeOutput"], out=log)
    return result.commands["writeOutput"], log.getvalue(), out / "written" / "z.out.z"


def test_write_gives_one_line_per_sample_in_cntks_default_format(trained):
    result, log, path = _write(trained)
    assert result["samples"] == 64 and result["minibatches"] == 3      # 24 + 24 + 16
    assert "Minibatch[0]: ActualMBSize = 24\nMinibatch[1]: ActualMBSize = 24\n" \
           "Minibatch[2]: ActualMBSize = 16\n" in log
    assert f"Written to {path.parent / 'z'}*\nTotal Samples Evaluated = 64" in log
    lines = path.read_text().split("\n")
    assert lines[-1] == "" and len(lines) == 65
    assert all(re.fullmatch(r"(-?\d+\.\d{6} ){9}-?\d+\.\d{6}", line) for line in lines[:-1])
    written = np.array([[float(v) for v in line.split(" ")] for line in lines[:-1]])
    np.testing.assert_allclose(written, trained[2], atol=5.1e-7, rtol=0)


def test_write_categories_and_separators(trained, tmp_path):
    (tmp_path / "labels.txt").write_text("".join(f"digit{k}\n" for k in range(10)))
    fmt = ('format = { type = "category" ; labelMappingFile = "%s" ; prologue = "[" ; '
           'epilogue = "]" ; sequenceEpilogue = "\\n" ; sequenceSeparator = "" }'
           % (tmp_path / "labels.txt"))
    _, _, path = _write(trained, fmt)
    text = path.read_text()
    assert text.startswith("[") and text.endswith("]")
    labels = text[1:-1].split("\n")[:-1]
    assert labels == [f"digit{k}" for k in trained[2].argmax(1)]
    _, _, path = _write(trained, 'format = { type = "category" ; precisionFormat = "" }')
    assert path.read_text().split("\n")[:-1] == [str(k) for k in trained[2].argmax(1)]


def test_write_with_precision_and_without_transpose(trained):
    _, _, path = _write(trained, 'format = { precisionFormat = ".2" ; transpose = false ; '
                                 'elementSeparator = "," }')
    lines = path.read_text().split("\n")[:-1]      # one sample: its 10 values, one per row
    first = [float(v) for v in lines[:10]]
    np.testing.assert_allclose(first, trained[2][0], atol=0.0051)
    assert all(re.fullmatch(r"-?\d+\.\d\d", v) for v in lines[:10])


def test_write_needs_an_output_path(trained, tmp_path):
    data, out, _ = trained
    path = tmp_path / "bad.cntk"
    path.write_text(_config(out).read_text().replace('outputPath = "$outputDir$/written/z"', ""))
    with pytest.raises(ConfigError, match="needs 'outputPath'"):
        run(path, [f"dataDir={data}", f"outputDir={out}", "command=writeOutput"],
            out=io.StringIO())


@pytest.mark.filterwarnings("ignore:override outputDir")
def test_write_opens_its_reader_then_the_model_then_looks_for_an_output_path(trained,
                                                                            tmp_path):
    # cntk.exe's DoWriteOutput (EvalActions.cpp:221-265) makes its reader first (:227), then
    # loads the model (GetModelFromConfig, :239), then looks for 'writer' or 'outputPath'
    # (:257-263): of several faults the first in that order is the one reported.  Until rmA37
    # Stadyn looked for outputPath, then loaded the model, then opened the reader
    data, out, _ = trained
    text = _config(out).read_text().replace('outputPath = "$outputDir$/written/z"', "")
    path = tmp_path / "bad.cntk"
    args = [f"dataDir={data}", f"outputDir={out}", "command=writeOutput",
            f"modelPath={tmp_path}/no_model"]
    path.write_text(text.replace("Test-28x28_cntk_text.txt", "no_data.txt"))
    with pytest.raises(StadynError, match="no_data.txt"):         # the reader's data file
        run(path, args, out=io.StringIO())
    path.write_text(text)
    with pytest.raises(StadynError, match="no_model"):            # then the model file
        run(path, args, out=io.StringIO())
    with pytest.raises(ConfigError, match="needs 'outputPath'"):  # then the output path
        run(path, args[:3], out=io.StringIO())
