"""A CNTK 2.7 v1 file of ``cross_entropy_with_softmax`` loaded and saved again (cntkfiles37):
CNTK 2.7 writes the loaded ``TransposeTimes`` and ``ReduceElements`` ``LogSum`` again as its
primitives, of the file's attributes (``outputRank`` 1; ``axisVec`` the static axis 0,
``reductionOpName`` ``LogSum``: ``BackCompat.cpp:297-301, 338-344``), in both formats.

``tests/fixtures/cntk_resave37/`` holds CNTK 2.7's files, Stadyn's re-saves, what CNTK 2.7
computes from each (``outputs.npz``) and what its ``load_model`` shows of them
(``listing.json``), written by ``make_resave37.py`` there (its docstring gives the commands).
"""

from __future__ import annotations

import importlib.util
import json
import os
import warnings

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_resave37")
WANT = np.load(os.path.join(FIXTURES, "outputs.npz"))
with open(os.path.join(FIXTURES, "listing.json")) as _f:
    LISTING = json.load(_f)


def _make():
    spec = importlib.util.spec_from_file_location(
        "cntk_resave37_make_resave37", os.path.join(FIXTURES, "make_resave37.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("fmt", ["model", "dnn"])
@pytest.mark.parametrize("src", ["dnn", "model"])
def test_a_loaded_v1_cross_entropy_is_saved_again_as_cntk_does(src, fmt, tmp_path):
    # src dnn: CNTK 2.7's v1 file of cross_entropy_with_softmax (cntk_ce.dnn); src model: CNTK
    # 2.7's v2 re-save of it (cntk_ce_resaved.model, its primitives TransposeTimes and
    # ReduceElements LogSum).  CNTK 2.7 saves both again in both formats; on 1154ef55 Stadyn
    # refused the .dnn (CntkWriteUnsupported "no CNTK v2 form for sum") and wrote its own
    # format for the .model with a warning (the reader's LogSum and TransposeTimes are catalog
    # ops the writer had no rule for).  Stadyn's committed re-saves: CNTK 2.7 computes its
    # model's numbers from them and lists them as its own re-save; the writer writes them
    # byte for byte
    make = _make()
    loaded = C.load_model(os.path.join(FIXTURES, make.SOURCES[src]))
    np.testing.assert_allclose(make.run(loaded), WANT["model"], rtol=1e-6)
    path = str(tmp_path / f"ce.{fmt}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no fall back to Stadyn's format)
        make.save(C, loaded, path)
    with open(path, "rb") as f, open(os.path.join(FIXTURES, f"stadyn_{src}.{fmt}"), "rb") as g:
        assert f.read() == g.read()
    np.testing.assert_allclose(WANT[f"stadyn_{src}.{fmt}"], WANT["model"], rtol=1e-6)
    assert LISTING[f"stadyn_{src}.{fmt}"] == LISTING[f"cntk_ce_resaved.{fmt}"]
    np.testing.assert_allclose(make.run(C.load_model(path)), WANT["model"], rtol=1e-6)


@pytest.mark.parametrize("src", ["dnn", "model"])
def test_the_resaved_primitives_have_the_files_attributes(src):
    # CNTK 2.7's re-save (cntk_ce_resaved.model): TransposeTimes(y, z) of outputRank 1 and
    # ReduceElements(z) of axisVec [staticAxisIdx=0] and LogSum, no block; Stadyn's alike
    from stadyn.serialize._cntk_format import OP_NAMES, _decode_file

    def shown(name):
        file = os.path.join(FIXTURES, name)
        with open(file, "rb") as f:
            top = _decode_file(file, f.read())
        names = {v["uid"]: v.get("name") or "" for v in top["inputs"]}
        ops = {f["uid"]: f for f in top["primitive_functions"]}
        found = {}
        for f in ops.values():
            op = OP_NAMES[f["op"]]
            if op in ("TransposeTimes", "ReduceElements"):
                read = [names.get(i) or OP_NAMES[ops[i.rpartition("_Output_")[0]]["op"]]
                        for i in f["inputs"]]
                a = f["attributes"]
                found[op] = (read, {k: [(x.static_axis_idx, x.name) for x in v]
                                    if k == "axisVec" else v for k, v in a.items()})
        assert not any(f.get("block_function_op_name") for f in ops.values())
        return found
    assert shown(f"stadyn_{src}.model") == shown("cntk_ce_resaved.model") == {
        "TransposeTimes": (["y", "Times"], {"outputRank": 1}),
        "ReduceElements": (["Times"], {"axisVec": [(0, "staticAxisIdx=0")],
                                       "reductionOpName": "LogSum"})}
