"""Windows CNTK 2.7's auto-padding starts past the first cell (a stride of 3 or more whose first
centre lies more than half a window in: ``ConvolveGeometry::GetLowerPad`` negative) in model
files: CNTK's ``Convolution`` and ``Pooling`` skip those cells and a transposed convolution
leaves them zero; Stadyn's reader (``op_rules/_cntk_rules.window``) and the compat's
``convolution_transpose`` (``cntk_semantics.auto_padding``) put the first window on cell 0, and
the writer wrote that transposed convolution so that CNTK 2.7 computed it shifted.

``tests/fixtures/cntk_window_skip/``: CNTK 2.7's ``windows.model`` and ``transpose.model`` of
``network.py``'s networks, its outputs and gradients of them (``refs.npz``, ``make_refs.py``).
"""

from __future__ import annotations

import os
import subprocess
import warnings

import numpy as np
import pytest
import peers

import stadyn.compat.cntk as C
from stadyn.serialize._cntk_format import _decode_file
from fixture_network import fixture_network

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_window_skip")


network = fixture_network("cntk_window_skip")

REFS = dict(np.load(os.path.join(FIXTURES, "refs.npz")))
CNTK_PYTHON = peers.CNTK_PYTHON
BUILD = {"windows": network.build_windows, "transpose": network.build_transpose}


def _check(got: dict, name: str) -> None:
    assert sorted(got) == sorted(k for k in REFS if k.startswith(name + "/"))
    for k, v in got.items():
        np.testing.assert_allclose(v, REFS[k], rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("name", sorted(BUILD))
def test_stadyn_reads_cntks_file_with_cntks_values_and_gradients(name):
    g = C.load_model(os.path.join(FIXTURES, name + ".model"))
    _check(network.outputs_and_gradients(C, g, name + "/"), name)


@pytest.mark.parametrize("name", sorted(BUILD))
def test_the_compat_network_computes_cntks_values_and_gradients(name):
    _check(network.outputs_and_gradients(C, BUILD[name](C), name + "/"), name)


def _functions(path: str) -> list:
    """The file's functions: op and attributes, a Convolution's strides without the channel
    axis' (stored last: what the user's list broadcast to there, which CNTK keeps and the
    compat does not; the kernel spans every channel, so it moves no window)."""
    with open(path, "rb") as f:
        top = _decode_file(path, f.read())
    listed = []
    for f in top["primitive_functions"]:
        attributes = dict(f["attributes"])
        if f["op"] == 33:
            attributes["strides"] = attributes["strides"][:-1]
        listed.append((f["op"], {k: repr(v) for k, v in attributes.items()}))
    return listed


@pytest.fixture
def written(tmp_path):
    path = str(tmp_path / "transpose.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)     # a CNTK v2 file, not Stadyn's
        network.build_transpose(C).save(path)
    return path


def test_the_transposed_convolution_is_written_as_cntk_writes_it(written):
    # one Convolution with transpose set, autoPadding on the spatial axes, the output shape:
    # CNTK 2.7's own file's function, attribute by attribute
    assert _functions(written) == _functions(os.path.join(FIXTURES, "transpose.model"))
    _check(network.outputs_and_gradients(C, C.load_model(written), "transpose/"), "transpose")


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
def test_cntk_computes_on_stadyns_file_what_it_computes_on_its_own(written, tmp_path):
    out = str(tmp_path / "cntk.npz")
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
    subprocess.run([CNTK_PYTHON, "-W", "ignore", os.path.join(FIXTURES, "make_refs.py"),
                    written, out], check=True, env=env, cwd=FIXTURES, capture_output=True)
    got = dict(np.load(out))
    _check({"transpose/" + k: v for k, v in got.items()}, "transpose")
