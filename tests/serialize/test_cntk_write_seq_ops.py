"""CNTK v2 files Stadyn writes of CNTK's sequence ops that make a new sequence axis --
``sequence.slice`` of several steps, ``sequence.where``, ``sequence.gather`` (also with
``new_sequence_axis_typeinfo``, and on a condition computed from the sequence: ``Greater`` of a
``Slice``) and ``sequence.scatter`` -- as CNTK 2.7 writes them, and comparisons and
``ReduceElements`` over a static axis on a sequence's steps: the
``Sequence::Slice`` / ``Gather`` / ``Scatter`` blocks and ``Where`` (before: Stadyn's format with
a warning, "no CNTK v2 form for sequence_slice: an op on a sequence ...", and a ShapeError for
``gather``, whose fallback file could not be written at all).

``tests/fixtures/cntk_seq_ops/``: CNTK 2.7's files of ``network.py``'s functions and its
outputs and gradients of them (``refs.npz``, ``make_refs.py``).
"""

from __future__ import annotations

import os
import re
import subprocess
import warnings

import numpy as np
import pytest
import peers

import stadyn.compat.cntk as C
from stadyn.serialize._cntk_format import _decode_file
from fixture_network import fixture_network

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_seq_ops")


network = fixture_network("cntk_seq_ops")

REFS = dict(np.load(os.path.join(FIXTURES, "refs.npz")))
CNTK_PYTHON = peers.CNTK_PYTHON


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cntk_seq_ops")
    made, _, _ = network.build(C)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)       # CNTK v2 files, not Stadyn's
        for name, f in made.items():
            f.save(str(folder / (name + ".model")))
    return str(folder)


def _listing(path: str) -> tuple:
    """The file's functions in order (op, block op name, name, input count, attributes) and
    its leaves (kind, shape, dynamic axes, value; placeholders without their names: CNTK names
    a block's placeholder after its argument, the writer does not), a Where's axis named by
    its condition's input name rather than its uid, or a computed condition's op without its
uid's number (the files number their uids apart)."""
    with open(path, "rb") as f:
        top = _decode_file(path, f.read())
    names = {i["uid"]: i.get("name") or "" for i in top["inputs"] if i.get("kind") == 0}

    def plain(value) -> str:
        text = re.sub(r"conditionVar_(Input\d+)", lambda m: "conditionVar_" + names[m.group(1)],
                      repr(value))
        # a condition computed in the graph: its function's uid without the number
        return re.sub(r"conditionVar_([A-Za-z]+)\d+_Output", r"conditionVar_\1_Output", text)
    functions = [(f["op"], f.get("block_function_op_name", ""), f.get("name", ""),
                  len(f["inputs"]), plain(sorted(f["attributes"].items())))
                 for f in top["primitive_functions"]]
    leaves = sorted((i.get("kind"), i.get("name") or "" if i.get("kind") != 4 else "",
                     i.get("shape"), plain(i.get("dynamic_axis")), repr(i.get("value")))
                    for i in top["inputs"])
    return functions, leaves


@pytest.mark.parametrize("name", network.NAMES)
def test_the_file_is_cntks_function_for_function(written, name):
    ours = _listing(os.path.join(written, name + ".model"))
    assert ours == _listing(os.path.join(FIXTURES, name + ".model"))


def _check(got: dict, name: str) -> None:
    for k in ("out", "lengths", "grad"):
        if name + "/" + k in REFS:
            np.testing.assert_allclose(got[k], REFS[f"{name}/{k}"], rtol=1e-6, err_msg=k)


@pytest.mark.parametrize("name", network.NAMES)
def test_stadyn_reads_its_file_and_cntks_with_cntks_values(written, name):
    for folder in (written, FIXTURES):
        _check(network.evaluate(C.load_model(os.path.join(folder, name + ".model"))), name)


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
