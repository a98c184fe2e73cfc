"""Models across tools: a model trained by ``stadyn train`` from a CNTK BrainScript config is
used for inference from Python and exported to ONNX with its predictions only (``features`` in,
no ``labels``), and the ONNX file imports back with the same outputs; overrides that no
command reads are named."""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest

import stadyn as sd
from stadyn.cli import main

ONE_HIDDEN = Path(__file__).resolve().parents[1] / "fixtures" / "brainscript" / "01_OneHidden.cntk"


def _write_ctf(path: Path, n: int, rng) -> None:
    """``|labels <10 one-hot> |features <784 values>`` lines: class k lights pixels 70k..70k+69."""
    rows = []
    for label in rng.integers(0, 10, n):
        image = rng.integers(0, 40, 784)
        image[70 * label:70 * label + 70] += 200
        onehot = " ".join("1" if k == label else "0" for k in range(10))
        rows.append(f"|labels {onehot} |features {' '.join(map(str, image))}\n")
    path.write_text("".join(rows))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """``stadyn train 01_OneHidden.cntk`` for one epoch of 64 samples; its stdout and stderr."""
    folder = tmp_path_factory.mktemp("one_hidden")
    rng = np.random.default_rng(3)
    _write_ctf(folder / "Train-28x28_cntk_text.txt", 64, rng)
    _write_ctf(folder / "Test-28x28_cntk_text.txt", 32, rng)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings():
        warnings.simplefilter("always")
        status = main(["train", str(ONE_HIDDEN), f"dataDir={folder}", f"outputDir={folder}",
                       "trainNetwork.SGD.maxEpochs=1", "maxEpochs=1",
                       "trainNetwork.SGD.epochSize=64", "trainNetwork.SGD.minibatchSize=32",
                       "trainNetwork.maxEpochs=7"])
    assert status == 0, err.getvalue()
    return folder / "Models" / "01_OneHidden", out.getvalue(), err.getvalue()


def test_overrides_no_command_reads_are_named(trained):
    _, out, err = trained
    assert "Finished Epoch[ 1 of 1]" in out
    assert err.splitlines() == [
        "stadyn: warning: override maxEpochs=1 is not used by any command of the config; it "
        "reads trainNetwork.SGD.maxEpochs",
        "stadyn: warning: override trainNetwork.maxEpochs=7 is not used by any command of the "
        "config; it reads trainNetwork.SGD.maxEpochs"]


def _features(n: int) -> np.ndarray:
    return np.random.default_rng(4).integers(0, 256, (n, 1, 28, 28)).astype(np.float32)


def _numpy_z(net, x: np.ndarray) -> np.ndarray:
    """01_OneHidden's z = W2 relu(W1 (x / 256) + b1) + b2, from the trained parameters."""
    p = {k: v.d.astype(np.float64) for k, v in net.parameters.items()}
    # CNTK's Dense keeps the input axes in W (1 x 28 x 28 x 200): flattened, the same product
    # (the parameters have cntk.exe's node names: out = model (features), h1 = DenseLayer...)
    w1 = p["out.h1.arrayOfFunctions[0].W"]
    w1 = w1.reshape(-1, w1.shape[-1])
    h = np.maximum(x.reshape(len(x), -1) / 256.0 @ w1 + p["out.h1.arrayOfFunctions[0].b"], 0)
    return h @ p["out.z.W"] + p["out.z.b"]


def test_a_loaded_model_predicts_without_labels(trained):
    model, _, _ = trained
    net = sd.load(model, batch_size=5)
    x = _features(5)
    got = net(features=x)
    assert list(got) == ["out.s1", "out.h1", "out.z"]          # not ce and errs: need labels
    np.testing.assert_allclose(got["out.z"], _numpy_z(net, x), rtol=1e-4, atol=1e-4)
    labels = np.eye(10, dtype=np.float32)[[0, 1, 2, 3, 4]]
    both = net(features=x, labels=labels)
    assert list(both) == ["out.s1", "out.h1", "out.z", "ce", "errs"]
    assert net.run({"features": x}, outputs="out.z").keys() == {"out.z"}
    with pytest.raises(sd.StadynError, match=r"the outputs \['ce'\] need the input\(s\) "
                                             r"\['labels'\]"):
        net.run({"features": x}, outputs=["ce"])


def test_a_brainscript_model_exports_its_predictions_and_imports_back(trained, tmp_path,
                                                                       capsys):
    model, _, _ = trained
    onnx_path = tmp_path / "one_hidden.onnx"
    assert main(["convert", str(model), str(onnx_path)]) == 0
    assert ("inputs features; outputs out.s1, out.h1, out.z; left out ce, errs: criteria"
            in capsys.readouterr().out)
    proto = onnx.load(str(onnx_path))
    assert [i.name for i in proto.graph.input] == ["features"]
    assert [o.name for o in proto.graph.output] == ["out.s1", "out.h1", "out.z"]
    x = _features(3)
    back = sd.import_onnx(onnx_path, dims={"batch": 3})
    assert list(back.inputs) == ["features"]
    got = back(features=x)
    want = sd.load(model, batch_size=3)(features=x)
    assert list(got) == list(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-6, err_msg=name)
    np.testing.assert_allclose(got["out.z"], _numpy_z(back, x), rtol=1e-4, atol=1e-4)


def test_the_outputs_a_user_names_are_exported(trained, tmp_path, capsys):
    model, _, _ = trained
    assert main(["convert", str(model), str(tmp_path / "z.onnx"), "--outputs", "out.z"]) == 0
    assert [o.name for o in onnx.load(str(tmp_path / "z.onnx")).graph.output] == ["out.z"]
    sd.export_onnx(tmp_path / "z_ce.onnx", sd.load(model), outputs=["out.z", "ce"])
    proto = onnx.load(str(tmp_path / "z_ce.onnx"))
    assert [i.name for i in proto.graph.input] == ["features", "labels"]
    assert [o.name for o in proto.graph.output] == ["out.z", "ce"]
    capsys.readouterr()
    assert main(["convert", str(model), str(tmp_path / "w.onnx"), "--outputs", "out.w"]) == 1
    assert "has no output(s) ['out.w']; its outputs are out.s1, out.h1, out.z, ce, errs" in \
        capsys.readouterr().err
    assert main(["convert", str(model), str(tmp_path / "z.stadyn"), "--outputs", "out.z"]) == 0
    small = sd.load(tmp_path / "z.stadyn")
    assert list(small.inputs) == ["features"] and list(small.outputs) == ["out.z"]
