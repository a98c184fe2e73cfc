"""Dense layers a user's step function applies beside a cell (rmD37): Stadyn writes each
as its Dense block inside the loop, as CNTK 2.7 does, so that CNTK 2.7 computes its numbers
from Stadyn's file and lists its parameters as it lists its own file's
(``tests/fixtures/cntk_step_dense37``, written by CNTK 2.7 with ``make_step_dense37.py``
there).
"""

from __future__ import annotations

import importlib.util
import json
import os
import warnings

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_step_dense37")
WANT = np.load(os.path.join(FIXTURES, "outputs.npz"))
with open(os.path.join(FIXTURES, "parameters.json")) as _f:
    LISTED = json.load(_f)


def _make():
    spec = importlib.util.spec_from_file_location(
        "cntk_step_dense37_make_step_dense37", os.path.join(FIXTURES, "make_step_dense37.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KINDS = list(_make().KINDS)


def _dense_blocks(file):
    """Each Dense block's inputs (a parameter's name, else the op making it), in file order."""
    from stadyn.serialize._cntk_format import OP_NAMES, _decode_file
    with open(file, "rb") as f:
        top = _decode_file(file, f.read())
    names = {v["uid"]: v.get("name") or "" for v in top["inputs"]}
    ops = {f["uid"]: f for f in top["primitive_functions"]}

    def kind_of(i):
        if i in names:
            return names[i] or i.rstrip("0123456789")
        f = ops[i.rpartition("_Output_")[0]]
        return f.get("block_function_op_name") or OP_NAMES[f["op"]]
    return [[kind_of(i) for i in f["inputs"]] for f in top["primitive_functions"]
            if f.get("block_function_op_name") == "Dense"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_dense_a_step_applies_is_written_as_cntk_writes_it(kind, tmp_path):
    # dense_first (cell(dense(h), x)): on cdddde34 the Dense block's Plus added its bias first,
    # b + times(x, W), as the GRU the recurrence's step is named after (_affine's step_kind):
    # its inputs [b, W, PastValue], CNTK 2.7 listed Stadyn's file [b, W, H, H1, b, W], its
    # own [b, W, H, H1, W, b] (the same numbers)
    make = _make()
    z = make.build(C, kind)
    make.MODELS.set_parameters(z)
    path = str(tmp_path / f"{kind}.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no fall back to Stadyn's format)
        z.save(path)
    cntk = os.path.join(FIXTURES, f"cntk_{kind}.model")
    assert _dense_blocks(path) == _dense_blocks(cntk)
    with open(path, "rb") as f, open(os.path.join(FIXTURES, f"stadyn_{kind}.model"), "rb") as g:
        assert f.read() == g.read()
    assert LISTED[f"stadyn_{kind}.model"] == LISTED[f"cntk_{kind}.model"]
    for s in range(2):
        np.testing.assert_allclose(WANT[f"{kind}/stadyn/{s}"], WANT[f"{kind}/{s}"], rtol=1e-6)
        np.testing.assert_allclose(make.run(z)[s], WANT[f"{kind}/{s}"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_cntks_file_of_a_step_dense_loads_to_its_numbers(kind):
    loaded = C.load_model(os.path.join(FIXTURES, f"cntk_{kind}.model"))
    for s, v in enumerate(_make().run(loaded)):
        np.testing.assert_allclose(v, WANT[f"{kind}/{s}"], rtol=1e-5, atol=1e-6)
