"""CNTK 2.7 model files Stadyn read otherwise than CNTK 2.7 does.

``tests/fixtures/cntk_files_16/`` holds the files and what CNTK 2.7 does with them, written by
the real CNTK 2.7 with the ``make_*.py`` scripts there (their docstrings give the command).
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_files_16")

with open(os.path.join(FIXTURES, "weighted_logistic.json")) as _f:
    LOGISTIC = json.load(_f)
# the shapes make_weighted_logistic.py gives each case: (output and target, weight)
_SHAPES = {"logistic_o3_wconst3": ((3,), (3,)), "logistic_o3_w3": ((3,), (3,)),
           "logistic_o1_wconst3": ((1,), (3,)), "logistic_o1_w1": ((1,), (1,)),
           "logistic_o3_w1": ((3,), (1,))}


def _logistic_feed(name):
    out_shape, weight_shape = _SHAPES[name]
    return {"x": np.full((2,) + out_shape, 0.3, np.float32),
            "t": np.ones((2,) + out_shape, np.float32),
            "w": np.array([1.0, 3.0], np.float32).reshape((2,) + (1,) * len(weight_shape))
            * np.ones((2,) + weight_shape, np.float32)}


@pytest.mark.parametrize("name", sorted(LOGISTIC))
def test_a_weighted_logistic_file_runs_or_is_refused_as_cntk(name):
    # CNTK 2.7 loads each file; evaluating it, it refuses a weight of another sample size than
    # the target's (its validation), a constant weight (no batch axis) and more than one value
    # per sample, in the words kept in weighted_logistic.json. Before, Stadyn evaluated all
    # five (7.22 for a (3,) constant weight).
    want = LOGISTIC[name]
    path = os.path.join(FIXTURES, name + ".model")
    data = _logistic_feed(name)
    if "value" in want:
        m = C.load_model(path)
        got = m.eval({a: data[a.name] for a in m.arguments})
        np.testing.assert_allclose(float(got), want["value"], rtol=1e-6)
        return
    kind, words = want["error"].split(": ", 1)
    words = re.sub(r"^Node '\w+' \(LearnableParameter operation\): ", "", words)
    with pytest.raises({"RuntimeError": RuntimeError, "ValueError": ValueError}[kind],
                       match=re.escape(words)):
        m = C.load_model(path)
        m.eval({a: data[a.name] for a in m.arguments})
