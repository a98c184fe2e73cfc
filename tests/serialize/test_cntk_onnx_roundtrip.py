"""Small CNTK networks Stadyn's CNTK compat layer saves as ONNX (``Function.save(path,
format=ModelFormat.ONNX)``) load in the real CNTK 2.7 (``cntk.Function.load(...,
format=ModelFormat.ONNX)``) and compute Stadyn's outputs.

``tests/fixtures/cntk_onnx_roundtrip/`` holds the networks (``cntk_nets.py``), the script that
wrote the references (``make_references.py``) and CNTK 2.7's outputs for the files Stadyn
wrote (``references.npz``).  Without CNTK, the tests build each network again (parameters
from a fixed seed) and check that Stadyn computes CNTK's outputs, evaluating the Function and
running the ONNX file with ``stadyn.import_onnx``.  Where CNTK 2.7's venv is here, CNTK runs today's
files too.

CNTK 2.7's ONNX reader is of opset 9 (CNTK 2.7 writes opset 9); Stadyn writes opsets 17 to 21,
so a network whose ONNX ops changed their signature since opset 9 does not load in CNTK 2.7
(``CNTK_CANNOT_LOAD``).  The default ``ModelFormat.CNTKv2`` is a Stadyn model file, which
CNTK 2.7's ``load_model`` cannot parse at all (docs/model-files.md).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import peers

import stadyn as sd

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "fixtures", "cntk_onnx_roundtrip")
sys.path.insert(0, FIXTURE)
from cntk_nets import NETS, build_network  # noqa: E402

REF = dict(np.load(os.path.join(FIXTURE, "references.npz")))
CNTK = peers.CNTK_PYTHON
CNTK_LIBS = peers.CNTK_LIBS
needs_cntk = pytest.mark.skipif(
    not os.path.exists(CNTK),
    reason=f"the real CNTK 2.7 venv is not here ({CNTK}; set STADYN_CNTK_PYTHON)")

# What CNTK 2.7's opset-9 ONNX reader refuses in Stadyn's opset-17 files, per network.
CNTK_CANNOT_LOAD = {
    "elementwise": "Equal of floats (opset 11 on; floor's export compares)",
    "reductions": "ReduceSum with its axes as an input (opset 13 on)",
    "shapes": "Slice with starts/ends as inputs (opset 10 on)",
}
LOADED = sorted(set(NETS) - set(CNTK_CANNOT_LOAD))


def test_the_references_cover_the_networks_and_the_known_refusals():
    assert sorted(NETS) == sorted({k.split("/")[0] for k in REF}), (
        "run tests/fixtures/cntk_onnx_roundtrip/make_references.py")
    assert sorted(k.split("/")[0] for k in REF if k.endswith("/error")) == \
        sorted(CNTK_CANNOT_LOAD)


@pytest.mark.parametrize("name", LOADED)
def test_stadyn_computes_what_cntk_computed_from_stadyns_onnx_file(name, tmp_path):
    import stadyn.compat.cntk as C
    x, z, feed = build_network(name)
    np.testing.assert_array_equal(feed, REF[f"{name}/in"])
    want = REF[f"{name}/out"]
    np.testing.assert_allclose(z.eval({x: feed}), want, rtol=1e-4, atol=1e-5)
    path = tmp_path / f"{name}.onnx"
    z.save(str(path), format=C.ModelFormat.ONNX)
    net = sd.import_onnx(path, dims={"batch": len(feed)})
    (got,) = net(**{list(net.inputs)[0]: feed}).values()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@needs_cntk
def test_cntk_runs_todays_onnx_files_to_the_references(tmp_path):
    import stadyn.compat.cntk as C
    inputs = {}
    for name in NETS:
        x, z, feed = build_network(name)
        z.save(str(tmp_path / f"{name}.onnx"), format=C.ModelFormat.ONNX)
        inputs[name] = feed
    np.savez(tmp_path / "in.npz", **inputs)
    proc = subprocess.run([CNTK, "-W", "ignore", os.path.join(FIXTURE, "run_in_cntk.py"),
                           str(tmp_path), str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, LD_LIBRARY_PATH=CNTK_LIBS))
    assert proc.returncode == 0, proc.stderr[-3000:]
    ran = dict(np.load(tmp_path / "out.npz"))
    for name in NETS:
        if name in CNTK_CANNOT_LOAD:
            assert f"{name}/error" in ran, f"{name}: CNTK 2.7 loads it now; regenerate"
            continue
        assert f"{name}/error" not in ran, f"{name}: CNTK 2.7 says {ran.get(name + '/error')}"
        np.testing.assert_allclose(ran[name], REF[f"{name}/out"], rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def test_cntks_log_is_one_onnx_log_as_cntk_writes_it(tmp_path):
    """CNTK 2.7's ``C.log(x).save(path, format=ONNX)`` writes one ``Log`` node, and its ONNX
    reader reads ``Log`` as its own floored log.  Before, Stadyn wrote the floor as 20 nodes
    (Less, Where, Exp...), which CNTK 2.7's reader refuses ("ONNX (Where) is not supported")."""
    import onnx
    import stadyn.compat.cntk as C
    x = C.input_variable(3, name="x")
    y = C.log(x, name="y")
    y.save(str(tmp_path / "log.onnx"), format=C.ModelFormat.ONNX)
    assert [n.op_type for n in onnx.load(str(tmp_path / "log.onnx")).graph.node] == ["Log"]
    assert y.root_function.op_name == "Log"


def test_cntks_log_is_floored_below_1e_37_with_cntks_gradient():
    """CNTK 2.7's Log (Math/TensorOps.h:200, CommonMatrix.h:34-35): -85.1f below 1e-37f (0 and
    negative numbers too), and the gradient exp(-y): 1/x, exp(85.1) where floored."""
    import stadyn.compat.cntk as C
    v = np.array([[0, -1, 1e-38, 1e-30, 0.5, 3.0]], np.float32)
    x = C.input_variable(6, needs_gradient=True)
    y = C.log(x)
    want = np.where(v < np.float32(1e-37), np.float32(-85.1),
                    np.log(np.where(v < np.float32(1e-37), 1, v))).astype(np.float32)
    np.testing.assert_array_equal(y.eval({x: v}), want)
    np.testing.assert_allclose(y.grad({x: v}), np.exp(-want.astype(np.float64)), rtol=1e-6)
