"""CNTK v2 files Stadyn writes of slices with a negative stride: CNTK 2.7's one ``Slice`` with
the range's bounds and the negative ``sliceStrides`` (``sliceStridesVec`` along several axes),
as CNTK 2.7 writes it (before: Stadyn's format with a warning, "no CNTK v2 form for slice: the
writer has no rule for this op"; the compat showed the Slice reading its inner flip).

``tests/fixtures/cntk_negative_strides/``: CNTK 2.7's files of ``network.py``'s functions and
its outputs and gradients of them (``refs.npz``, ``make_refs.py``).
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

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_negative_strides")
network = fixture_network("cntk_negative_strides")

REFS = dict(np.load(os.path.join(FIXTURES, "refs.npz")))
CNTK_PYTHON = peers.CNTK_PYTHON


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cntk_negative_strides")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)       # CNTK v2 files, not Stadyn's
        for name, f in network.build(C).items():
            f.save(str(folder / (name + ".model")))
    return str(folder)


def _functions(path: str) -> list:
    with open(path, "rb") as f:
        top = _decode_file(path, f.read())
    return [(f["op"], f.get("name", ""), repr(sorted(f["attributes"].items())))
            for f in top["primitive_functions"]]


@pytest.mark.parametrize("name", network.NAMES)
def test_the_file_is_cntks_slice(written, name):
    assert _functions(os.path.join(written, name + ".model")) == \
        _functions(os.path.join(FIXTURES, name + ".model"))


def _check(got: dict, name: str) -> None:
    for k in ("out", "grad"):
        np.testing.assert_allclose(got[k], REFS[f"{name}/{k}"], rtol=1e-6, err_msg=k)


@pytest.mark.parametrize("name", network.NAMES)
def test_stadyn_reads_its_file_and_cntks_with_cntks_values(written, name):
    for folder in (written, FIXTURES):
        _check(network.evaluate(C, C.load_model(os.path.join(folder, name + ".model"))), name)


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
def test_cntk_computes_on_stadyns_files_what_it_computes_on_its_own(written, tmp_path):
    out = str(tmp_path / "cntk.npz")
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
    subprocess.run([CNTK_PYTHON, "-W", "ignore", os.path.join(FIXTURES, "make_refs.py"),
                    written, out], check=True, env=env, cwd=FIXTURES, capture_output=True)
    got = dict(np.load(out))
    assert sorted(got) == sorted(REFS)
    for name in network.NAMES:
        _check({k.split("/")[1]: v for k, v in got.items() if k.startswith(name + "/")}, name)
