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
    # se_seq "cntk:SquaredError: an op on a sequence the writer has no sequence form for";
    # on 2d7f4600 CNTK 2.7's v1 files of se and se_seq (se_v1, se_seq_v1: ReduceElements of
    # the squares over all static axes) fell back / were refused too: "no CNTK v2 form for
    # ReduceElements: a reduction made of ['reshape', 'sum']" (CNTK 2.7 re-saves them as one
    # ReduceElements primitive, Sum over all static axes, kept)
    make = _make()
    z = C.load_model(make.SOURCES[kind])
    path = str(tmp_path / f"{kind}.{fmt}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no fall back to Stadyn's format)
        make.save(C, z, path)
    with open(path, "rb") as f, open(os.path.join(FIXTURES, f"stadyn_{kind}.{fmt}"),
                                     "rb") as g:
        assert f.read() == g.read()
    source = _source_index(kind, fmt)
    keys = sorted(k for k in WANT.files if k.startswith(f"{kind}/{fmt}/") and "names" not in k)
    assert keys and len(keys) == len(source)
    for k in keys:
        np.testing.assert_array_equal(WANT[k], WANT[f"{kind}/{source[int(k.rsplit('/', 1)[1])]}"])
    for k, v in make.run(C.load_model(path)).items():
        np.testing.assert_allclose(v, WANT[f"{kind}/{source[k]}"], rtol=1e-5, atol=1e-6)


def _source_index(kind, fmt):
    """The index of each output of Stadyn's re-save (as CNTK 2.7 lists them) among the
    source's: by name where both list the same distinct names (a v1 file lists them in its
    own order), else the same index (a v1 file of one block, ``se``, names its root's node
    '', CNTK 2.7's own v1 re-save too)."""
    names, got = list(WANT[f"{kind}/names"]), list(WANT[f"{kind}/{fmt}/names"])
    if all(names) and len(set(names)) == len(names) and sorted(got) == sorted(names):
        return [names.index(n) for n in got]
    return list(range(len(got)))


@pytest.mark.parametrize("fmt", ["model", "dnn"])
def test_a_loaded_element_divide_keeps_its_name_in_a_v1_resave(fmt, tmp_path):
    # cntk_zero_tie.model's element_divide (CNTK 2.7's ElementDivide block named 'div', whose
    # root ElementTimes CNTK names 'div' too): CNTK 2.7's own v1 re-save names the node 'div'
    # and CNTK 2.7 lists its outputs ['div', 'hm', 'rec'].  Stadyn's re-save does too, as CNTK
    # 2.7 reads it (outputs.npz) and as Stadyn reads it; on 2d7f4600 the v1 node was '' (the
    # block's root written unnamed), CNTK 2.7 and Stadyn listing ['', 'hm', 'rec']
    make = _make()
    want = {"model": ["rec", "div", "hm"], "dnn": ["div", "hm", "rec"]}[fmt]
    assert list(WANT[f"zero_tie/{fmt}/names"]) == want
    path = str(tmp_path / f"zero_tie.{fmt}")
    make.save(C, C.load_model(make.SOURCES["zero_tie"]), path)
    assert [o.name for o in C.load_model(path).outputs] == want


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
