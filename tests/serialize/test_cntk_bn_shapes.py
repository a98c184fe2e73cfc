"""A per-element (non-spatial) batch normalisation's parameters in CNTK model files
(cntkfiles35): ``C.layers.BatchNormalization()`` on a ``(2, 5, 5)`` input infers its scale,
bias and running statistics flat, ``(50,)``, and CNTK 2.7 writes them so (v2 and v1); a
``C.batch_normalization`` given ``(2, 5, 5)`` parameters keeps that shape.

``tests/fixtures/cntk_bn_shapes/`` holds CNTK 2.7's and Stadyn's files, what CNTK 2.7
computes from each (``outputs.npz``) and the shapes it gives their parameters and constants
(``shapes.json``), written by ``make_bn.py`` there (its docstring gives the commands).
"""

from __future__ import annotations

import importlib.util
import json
import os
import warnings

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_bn_shapes")
with open(os.path.join(FIXTURES, "shapes.json")) as _f:
    SHAPES = json.load(_f)
WANT = np.load(os.path.join(FIXTURES, "outputs.npz"))


def _make():
    spec = importlib.util.spec_from_file_location(
        "cntk_bn_shapes_make_bn", os.path.join(FIXTURES, "make_bn.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("fmt", ["model", "dnn"])
def test_a_per_element_batch_normalization_is_written_with_cntks_flat_shapes(fmt, tmp_path):
    # CNTK 2.7 writes the layer's scale, bias, mean and variance (50,) (cntk_bn.<fmt>, listed
    # so by its load_model: shapes.json) and computes from Stadyn's committed file what its
    # own model does (outputs.npz: bn/<fmt>).  On c4441c04 Stadyn wrote them in the input's
    # shape, (2, 5, 5) (CNTK's [5 x 5 x 2]): CNTK 2.7 and Stadyn loaded Stadyn's file with
    # (2, 5, 5) parameters where the model saved had (50,)
    make = _make()
    z = make.build(C, "bn")
    make.set_values(z)
    np.testing.assert_allclose(make.run(z), WANT["bn"], rtol=1e-5, atol=1e-6)
    path = str(tmp_path / f"bn.{fmt}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no fall back to Stadyn's format)
        make.save(C, z, path)
    with open(path, "rb") as f, open(os.path.join(FIXTURES, f"stadyn_bn.{fmt}"), "rb") as g:
        assert f.read() == g.read()
    np.testing.assert_array_equal(WANT[f"bn/{fmt}"], WANT["bn"])
    assert SHAPES[f"stadyn_bn.{fmt}"] == SHAPES[f"cntk_bn.{fmt}"] == make.listed(z)
    loaded = C.load_model(path)
    assert make.listed(loaded) == SHAPES[f"cntk_bn.{fmt}"]
    np.testing.assert_allclose(make.run(loaded), WANT["bn"], rtol=1e-5, atol=1e-6)


def test_the_v2_files_leaves_have_cntks_shapes():
    # the leaves of Stadyn's and CNTK 2.7's v2 files, by name: the four of (50,), the count ()
    from stadyn.serialize._cntk_format import _decode_file

    def leaves(name):
        file = os.path.join(FIXTURES, name)
        with open(file, "rb") as f:
            top = _decode_file(file, f.read())
        return sorted((v.get("name") or "", tuple(v["shape"])) for v in top["inputs"]
                      if v["kind"] in (2, 3))
    assert leaves("stadyn_bn.model") == leaves("cntk_bn.model")
    assert {shape for name, shape in leaves("cntk_bn.model") if name != "aggregate_count"} == \
        {(50,)}


@pytest.mark.parametrize("name", ["cntk_bn.model", "cntk_bn.dnn", "cntk_bn_full.model"])
def test_cntks_files_of_either_shape_load(name):
    # the flat (50,) of the layer and the (2, 5, 5) of C.batch_normalization's own parameters
    # (what c4441c04 wrote for the layer too): read with CNTK 2.7's shapes and numbers
    make = _make()
    z = C.load_model(os.path.join(FIXTURES, name))
    assert make.listed(z) == SHAPES[name]
    np.testing.assert_allclose(make.run(z), WANT[name.split(".")[0][len("cntk_"):]],
                               rtol=1e-5, atol=1e-6)
