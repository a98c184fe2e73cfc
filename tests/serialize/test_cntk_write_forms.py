"""CNTK v2 files Stadyn writes with the ops its reader read and its writer did not write: ``Tan``,
``Atan``, ``Asin``, ``Acos``, ``Sinh``, ``Cosh``, ``Asinh``, ``Atanh``, ``Cast``,
``CosDistance``, ``ConstantOp`` (``zeros_like``, ``ones_like``), ``Crop`` (``crop_manual``),
``Clip`` with tensor or computed bounds, ``Logistic`` (``weighted_binary_cross_entropy``),
``LambdaRank``, ``EditDistanceError`` and a loaded file's ``ROIPooling``. Before (8105dcf2)
``Function.save`` wrote Stadyn's own format for them, with a warning ("no CNTK v2 form for Tan:
the writer has no rule for this op"), which CNTK 2.7 cannot read.

``tests/fixtures/cntk_write_forms/`` (``make_cntk_model.py``, ``make_forms.py``): CNTK 2.7's
``cntk_ops.model`` with its outputs (``cntk_ops.npz``), and CNTK 2.7's outputs and listing of
the files Stadyn wrote (``again``: that file loaded and saved again; ``built``: the network
built in the compat), with the files decoded.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_write_forms")
sys.path.insert(0, FIXTURES)
import make_forms  # noqa: E402

CNTK_OWN = dict(np.load(os.path.join(FIXTURES, "cntk_ops.npz")))
ROI = dict(np.load(os.path.join(FIXTURES, "..", "cntk_roipooling", "roipooling.npz")))
_EDIT = np.load(os.path.join(FIXTURES, "..", "cntk_read_unread", "refs.npz"))
EDIT = {k.split("/", 1)[1]: _EDIT[k] for k in _EDIT.files if k.startswith("edit_distance/")}
_MORE = np.load(os.path.join(FIXTURES, "cntk_more.npz"))     # (the inputs of the *_more files)
_NETS = np.load(os.path.join(FIXTURES, "cntk_nets.npz"))     # (the inputs of built_nets)
FEEDS = {**CNTK_OWN, **ROI, **EDIT, "xs": _MORE["xs"], "idx": _MORE["idx"],
         **{k: _NETS[k] for k in ("maps", "maps4", "vec", "mat", "pick",
                                              "planes", "steps")}}


def _feed(a):
    """Input ``a``'s data: an array, or a sequence input's list (``<name>/<k>``)."""
    if a.name in FEEDS:
        return FEEDS[a.name]
    return [FEEDS[f"{a.name}/{k}"] for k in range(len(FEEDS)) if f"{a.name}/{k}" in FEEDS]
ON_STADYNS = dict(np.load(os.path.join(FIXTURES, "cntk_outputs.npz")))
with open(os.path.join(FIXTURES, "written.json")) as _f:
    WRITTEN = json.load(_f)
NAMES = ["tan", "atan", "asin", "acos", "sinh", "cosh", "asinh", "atanh", "cast",
         "cos_distance", "zeros_like", "ones_like", "crop", "clip_scalar", "clip_tensor",
         "clip_input"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("cntk_write_forms"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)     # each is a CNTK v2 file
        make_forms.save_both(C, folder)
    return folder


@pytest.mark.parametrize("name", make_forms.FILES)
def test_the_written_file_is_the_one_cntk_read(written, name):
    assert make_forms.decoded(os.path.join(written, name + ".model")) == WRITTEN[name]["file"]


def test_cntk_computes_on_stadyns_file_what_it_computes_on_its_own():
    # a CNTK 2.7 file through Stadyn (load, save) and back into CNTK 2.7: the same outputs,
    # NaN where CNTK's own gave NaN; the ops as CNTK wrote them
    listed = WRITTEN["again"]["cntk"]
    assert [o[0] for o in listed["outputs"]] == NAMES
    ops = [f[0] for f in listed["functions"]]
    for op in ("Tan", "Atan", "Asin", "Acos", "Sinh", "Cosh", "Asinh", "Atanh", "Cast",
               "CosDistance", "ConstantOp", "Crop", "Clip"):
        assert op in ops
    for name in NAMES:
        np.testing.assert_allclose(ON_STADYNS["again/" + name], CNTK_OWN[name], rtol=1e-6,
                                   atol=1e-6, equal_nan=True, err_msg=name)
    # the criteria: Logistic (weighted_binary_cross_entropy), LambdaRank
    assert [f[0] for f in WRITTEN["again_criteria"]["cntk"]["functions"]] == \
        ["Combine", "Logistic", "StableSigmoid", "LambdaRank"]
    for name in ("wbce", "lr"):
        np.testing.assert_allclose(ON_STADYNS["again_criteria/" + name],
                                   CNTK_OWN["criteria/" + name], rtol=1e-6, atol=1e-6)
    # ROIPooling (Fast R-CNN's head: a convolution's map pooled over regions)
    assert ["ROIPooling", "roi"] in WRITTEN["again_roipooling"]["cntk"]["functions"]
    # (Stadyn's re-save keeps the file's convolution attributes now, automatic padding where
    # it wrote explicit pads before cntkwrite27, so CNTK 2.7 computes on it bit for bit what it
    # computes on roipooling.model itself in the same run (cntk_eval.py); both are 2.4e-7 from
    # roipooling.npz's output, an older run's)
    np.testing.assert_array_equal(ON_STADYNS["again_roipooling/roi"],
                                  ON_STADYNS["cntk_own_roipooling/roi"])
    np.testing.assert_allclose(ON_STADYNS["again_roipooling/roi"], ROI["output"], rtol=1e-6,
                               atol=1e-6)
    # EditDistanceError of sequences, its penalties, SquashInputs and TokensToIgnore
    assert [f[0] for f in WRITTEN["again_edit"]["cntk"]["functions"]] == \
        ["Combine", "EditDistanceError", "EditDistanceError"]
    for name in ("squashed", "plain"):
        np.testing.assert_allclose(ON_STADYNS["again_edit/" + name], EDIT[name], rtol=1e-6)


@pytest.mark.parametrize("name", make_forms.FILES)
def test_stadyn_reads_its_file_with_cntks_outputs(written, name):
    m = C.load_model(os.path.join(written, name + ".model"))
    assert [a.name for a in m.arguments] == WRITTEN[name]["cntk"]["arguments"]
    got = m.eval({a: _feed(a) for a in m.arguments})
    got = got if isinstance(got, dict) else {m.outputs[0]: got}
    for o in m.outputs:
        want = ON_STADYNS[f"{name}/{o.name}"]
        assert np.asarray(got[o]).dtype == want.dtype, o.name
        np.testing.assert_allclose(got[o], want, rtol=1e-6, atol=1e-6, equal_nan=True,
                                   err_msg=o.name)


@pytest.mark.parametrize("name", ["built", "built_criteria"])
def test_the_compat_network_computes_what_cntk_computes_on_its_file(name):
    f = make_forms.forms_network.build(C, all_ops=False) if name == "built" else \
        make_forms.forms_network.build_criteria(C)
    got = f.eval({a: CNTK_OWN[a.name] for a in f.arguments})
    assert [o.name for o in f.outputs] == [o[0] for o in WRITTEN[name]["cntk"]["outputs"]]
    for o in f.outputs:
        np.testing.assert_allclose(got[o], ON_STADYNS[f"{name}/{o.name}"], rtol=1e-6,
                                   atol=1e-6, equal_nan=True, err_msg=o.name)


def test_the_compats_zeros_like_fills_nan_and_is_written_as_cntks_constant_op(tmp_path):
    # the compat's zeros_like was x * 0 (NaN for NaN, -0 for negatives), which the writer
    # refused; CNTK's ConstantOp fills every element (CNTK 2.7: zeros_like([nan, inf, -1]) is
    # [0, 0, 0]), and so does the compat's now: written as ConstantOp (its fillValue), read back
    # with the same fill (the "built" file above: CNTK 2.7's outputs of it)
    x = C.input_variable(3, name="x")
    data = np.array([[np.nan, np.inf, -1.0]], np.float32)
    for make, fill in ((C.zeros_like, 0.0), (C.ones_like, 1.0)):
        f = make(x, name="z")
        got = f.eval({x: data})
        assert got.tolist() == [[fill] * 3] and not np.signbit(got).any()
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            f.save(str(tmp_path / "z.model"))
        assert "ConstantOp" in json.dumps(make_forms.decoded(str(tmp_path / "z.model")))
        loaded = C.load_model(str(tmp_path / "z.model"))
        assert loaded.eval({loaded.arguments[0]: data}).tolist() == [[fill] * 3]


def test_the_compats_crop_manual_is_written_with_its_reference(tmp_path):
    # CNTK's Crop takes its size from the reference, one of its inputs (and of a Function's
    # arguments); the compat's crop_manual reads it too, so it is written as CNTK's Crop of
    # both (CNTK 2.7 loads such a file and gives these values: checked by hand with its
    # load_model, [[9, 10, 11], [13, 14, 15]])
    x, ref = C.input_variable((1, 4, 4), name="x"), C.input_variable((1, 2, 3), name="ref")
    C.crop_manual(x, ref, 1, 2, name="c").save(str(tmp_path / "c.model"))
    loaded = C.load_model(str(tmp_path / "c.model"))
    assert [a.name for a in loaded.arguments] == ["x", "ref"]
    data = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    got = loaded.eval({a: data if a.name == "x" else np.zeros((1, 1, 2, 3), np.float32)
                       for a in loaded.arguments})
    assert got.tolist() == [[[[9.0, 10.0, 11.0], [13.0, 14.0, 15.0]]]]


@pytest.mark.parametrize("name", ["clip_scalar", "clip_tensor", "clip_input"])
def test_a_loaded_clips_gradient_is_cntks(name):
    # CNTK's ClipNode: to the input where the output equals it (bounds included, NaN not);
    # the loaded Clip keeps its bounds as inputs now (before: clip_by_value_scalar)
    m = C.load_model(os.path.join(FIXTURES, "cntk_ops.model"))
    o = next(o for o in m.outputs if o.name == name)
    one = C.combine([o])
    wrt = next(a for a in one.arguments if a.name == ("m" if name == "clip_tensor" else "x"))
    got = one.grad({a: CNTK_OWN[a.name] for a in one.arguments}, wrt=[wrt])
    np.testing.assert_array_equal(np.asarray(got), CNTK_OWN["grad/" + name])
