"""Loaded CNTK files saved again (cntkfiles35): CNTK 2.7's v1 file of a full-state ``Fold``
(its last steps as CNTK 2.7 converts them: ``ReconcileDynamicAxis``, ``FutureValue``,
``Where``, ``PackedIndex``, ``GatherPacked``) and CNTK 2.7's v2 files of ``squared_error``
(its ``SquaredError`` block, on values and on sequences), written again by Stadyn as CNTK
files that CNTK 2.7 loads and evaluates to the numbers of the files they were loaded from.

``tests/fixtures/cntk_resave35/`` (``make_resave.py`` there; its docstring gives the
commands) holds CNTK 2.7's sources, Stadyn's re-saves and CNTK 2.7's outputs of both.
"""

from __future__ import annotations

import importlib.util
import os
import warnings

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_resave35")
WANT = np.load(os.path.join(FIXTURES, "outputs.npz"))


def _make():
    spec = importlib.util.spec_from_file_location(
        "cntk_resave35_make_resave", os.path.join(FIXTURES, "make_resave.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KINDS = sorted(_make().SOURCES)


@pytest.mark.parametrize("fmt", ["model", "dnn"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_loaded_file_saved_again_gives_cntk_its_numbers(kind, fmt, tmp_path):
    # Stadyn's re-save (committed stadyn_<kind>.<fmt>, written byte for byte) evaluates in
    # CNTK 2.7 to the numbers of the file it was loaded from (outputs.npz), and in Stadyn
    # too.  On c4441c04 each fell back to Stadyn's format with a warning (.model) or was
    # refused (.dnn): fold_full "no CNTK v2 form for sequence_unpack: an op on a sequence the
    # writer has no sequence form for", se "SquaredError: 1 inputs shown, CNTK's has 2",
    # se_seq "cntk:SquaredError: an op on a sequence the writer has no sequence form for"
    make = _make()
    z = C.load_model(make.SOURCES[kind])
    path = str(tmp_path / f"{kind}.{fmt}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no fall back to Stadyn's format)
        make.save(C, z, path)
    with open(path, "rb") as f, open(os.path.join(FIXTURES, f"stadyn_{kind}.{fmt}"),
                                     "rb") as g:
        assert f.read() == g.read()
    keys = sorted(k for k in WANT.files if k.startswith(f"{kind}/{fmt}/"))
    assert keys
    for k in keys:
        np.testing.assert_array_equal(WANT[k], WANT[f"{kind}/{k.rsplit('/', 1)[1]}"])
    for k, v in make.run(C.load_model(path)).items():
        np.testing.assert_allclose(v, WANT[f"{kind}/{k}"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_the_sources_load_with_cntks_numbers(kind):
    make = _make()
    for k, v in make.run(C.load_model(make.SOURCES[kind])).items():
        np.testing.assert_allclose(v, WANT[f"{kind}/{k}"], rtol=1e-5, atol=1e-6)


def test_cntks_own_resave_of_the_v1_fold_reads_back():
    # CNTK 2.7's re-save of cntk_fold_full.dnn (cntk_fold_full_resaved.model) holds each
    # state's last step as top-level GatherPacked(x, PackedIndex(x, Where(flag))), the Where
    # to the batch axis alone: read as sequence.last, CNTK's numbers.  On c4441c04 Stadyn
    # refused it ("CNTK functions no Stadyn op maps: PackedIndex ...; GatherPacked ...")
    make = _make()
    z = C.load_model(os.path.join(FIXTURES, "cntk_fold_full_resaved.model"))
    for k, v in make.run(z).items():
        np.testing.assert_allclose(v, WANT[f"fold_full/{k}"], rtol=1e-5, atol=1e-6)
