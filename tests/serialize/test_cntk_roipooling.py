"""Reading CNTK 2.7's ``ROIPooling`` (``C.roipooling``, Fast R-CNN's max pooling over regions)
from a model file: ``tests/fixtures/cntk_roipooling/roipooling.model`` (a convolution's map
pooled over three regions per image, scale 1/2) and ``roipooling.npz`` (the inputs, CNTK 2.7's
output and gradients, how CNTK 2.7 shows the loaded file) were written by the real CNTK 2.7
(``make_model.py`` there).

Before (8105dcf2) the file was refused: "CNTK functions no Stadyn op maps: ROIPooling
(function 'ROIPooling44')".
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_roipooling")
MODEL = os.path.join(FIXTURES, "roipooling.model")
REFS = dict(np.load(os.path.join(FIXTURES, "roipooling.npz")))


def _feed(m):
    return {a: REFS[a.name] for a in m.arguments}


@pytest.mark.parametrize("load", [C.load_model, C.Function.load])
def test_compat_loads_roipooling_and_gives_cntks_output(load):
    m = load(MODEL)
    got = np.asarray(m.eval(_feed(m)))
    assert got.shape == REFS["output"].shape == (2, 3, 3, 3, 2)
    np.testing.assert_allclose(got, REFS["output"], rtol=1e-5, atol=1e-5)
    # the regions off the map's edge give empty bins: 0, as in CNTK
    assert (REFS["output"][0, 1, :, :, 1] == 0).all()


def test_roipooling_gradients_are_cntks():
    m = C.load_model(MODEL)
    image = next(a for a in m.arguments if a.name == "image")
    got = m.grad(_feed(m), wrt=[image] + list(m.parameters))
    np.testing.assert_allclose(np.asarray(got[image]), REFS["grad/image"], rtol=1e-5,
                               atol=1e-5)
    for p in m.parameters:
        np.testing.assert_allclose(np.asarray(got[p]), REFS["grad/" + p.name], rtol=1e-5,
                                   atol=1e-5)


def test_stadyns_own_loader_reads_roipooling():
    net = sd.load(MODEL)
    out = net(**{name: REFS[name] for name in net.inputs})
    np.testing.assert_allclose(out["roi"], REFS["output"], rtol=1e-5, atol=1e-5)


def test_the_loaded_roipooling_is_shown_as_cntk_shows_it():
    m = C.load_model(MODEL)
    assert [p.uid for p in m.parameters] == list(REFS["view/parameters"])
    assert [v.uid for v in m.root_function.inputs] == list(REFS["view/inputs"])
    assert m.root_function.op_name == "ROIPooling"
    # CNTK's order: the map's input, then the regions (shown reversed before the rule was
    # marked as reading its inputs in another order than the file's)
    assert [a.name for a in m.arguments] == list(REFS["view/arguments"])


def test_average_roipooling_is_refused_naming_the_function(tmp_path):
    # CNTK 2.7's node refuses it too ("Average ROI pooling is not supported"); the file's
    # poolingType (a DictionaryValue of type SizeT, 3, value 0) set to 1 in place
    from stadyn.serialize import UnsupportedModelError
    data = open(MODEL, "rb").read()
    old = b"poolingType\x12\x06\x08\x02\x10\x03(\x00"
    assert data.count(old) == 1
    path = tmp_path / "average.model"
    path.write_bytes(data.replace(old, old[:-1] + b"\x01"))
    with pytest.raises(UnsupportedModelError, match="ROIPooling44.*average ROI pooling|"
                                                     "average ROI pooling.*ROIPooling44"):
        C.load_model(str(path))


def test_nan_in_the_map_is_passed_by_as_cntk_does():
    # CNTK's scan (img > maxval) passes NaN by; a bin holding only NaN gives -FLT_MAX
    m = C.load_model(MODEL)
    got = np.asarray(m.eval({a: REFS["nan/image"] if a.name == "image" else REFS[a.name]
                             for a in m.arguments}))
    want = REFS["nan/output"]
    assert not np.isnan(want).any() and (want == -np.finfo(np.float32).max).sum() == 12
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
