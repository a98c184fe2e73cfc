"""A CNTK v2 file's functions that reduce the dynamic axes -- the primitive
``ClassificationError`` of ``topN`` > 1 (``cntk_criteria.model``'s ``top5Errs``), a
``ReduceElements`` over ``Axis.all_axes()`` -- give outputs with no dynamic axes, as CNTK 2.7
shows them (``PrimitiveFunction.cpp``:108-122); before, Stadyn showed ``['defaultBatchAxis']``
(only a v1 file's criteria were shown without).  CNTK 2.7's answers:
``tests/fixtures/cntk_reduced_axes/axes.json`` (``make_axes.py``)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import stadyn.compat.cntk as C

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "fixtures", "cntk_reduced_axes")
with open(os.path.join(FIXTURE, "axes.json")) as _f:
    REF = json.load(_f)
PATHS = {"cntk_criteria.model": os.path.join(HERE, "..", "fixtures", "legacy",
                                             "cntk_criteria.model"),
         "reduce_all.model": os.path.join(FIXTURE, "reduce_all.model")}


def outputs(model) -> list:
    return [{"name": o.name, "shape": list(o.shape),
             "dynamic_axes": [a.name for a in o.dynamic_axes]} for o in model.outputs]


@pytest.mark.parametrize("name", sorted(PATHS))
def test_reducing_outputs_have_cntks_dynamic_axes(name):
    assert outputs(C.load_model(PATHS[name])) == REF[name]


def test_reductions_over_all_axes_give_cntks_values():
    model = C.load_model(PATHS["reduce_all.model"])
    got = model.eval({model.arguments[0]: np.arange(6, dtype=np.float32).reshape(2, 3)},
                     outputs=list(model.outputs))
    np.testing.assert_allclose([float(np.asarray(got[o])) for o in model.outputs],
                               REF["reduce_all.values"], rtol=1e-6)
