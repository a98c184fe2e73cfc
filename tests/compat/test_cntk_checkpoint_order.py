"""A CNTK 2.7 checkpoint restored by the parameters' place in the graph, as CNTK's
``RestoreFromCheckpoint`` matches them (``Function.cpp``:1040-1051: the loaded graph's
``Inputs()`` order), not by the order its model file lists them in
(``tests/fixtures/cntk_checkpoint_order/make_order.py``; rmF36)."""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_checkpoint_order")


def _make():
    spec = importlib.util.spec_from_file_location(
        "cntk_checkpoint_order_make_order", os.path.join(FIXTURES, "make_order.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_checkpoint_listing_b_before_w_restores_each_into_its_own_parameter():
    # z = x * W + b: CNTK 2.7's file lists [b, x, W], its graph's parameters [W, b].  On
    # 4f7de761 the file's order was taken for the graph's: W got b's values and b
    # W's (both (2,): restored with no error), W [-0.0032, 1.5888], b [0.2334, -0.8129]
    make = _make()
    _, _, trainer = make.build(C)
    trainer.restore_from_checkpoint(os.path.join(FIXTURES, "order.model"))
    with open(os.path.join(FIXTURES, "values.json")) as f:
        want = json.load(f)
    got = {p.name: np.asarray(p.value) for p in trainer.model.parameters}
    assert sorted(got) == ["W", "b"]
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], np.asarray(value, np.float32))
