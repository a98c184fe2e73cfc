"""NaN, infinities and ties through BrainScript's ``ReduceMax``, ``ReduceMin``, ``Hardmax`` and
``Sqrt``: as CNTK 2.7's Python ops for the same nodes compute them (their references: cases
``nan__reduce``, ``nan__argmax_hardmax`` and ``nan__unary`` of
``tests/compat/compat_cases/cntk_nan.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import stadyn as sd
from stadyn.brainscript import build_network
from stadyn.brainscript._stadyn_library import StadynLibrary
from stadyn.train import feed

REFS = Path(__file__).parent.parent / "compat" / "refs" / "cntk"
NAN, INF = np.nan, np.inf
# the cases' rows: NaN first / inside / all, ties, infinities, signed zeros
ROWS = np.array([[NAN, 1, 2, 2], [1, NAN, 3, 0], [2, 2, 1, 0], [-INF, -INF, -INF, -INF],
                 [INF, 1, INF, 0], [NAN, NAN, NAN, NAN], [-INF, 0, 1, -INF], [3, 3, NAN, 3],
                 [-0.0, 0.0, -1, -1]], np.float32)


def _ref(case: str, key: str) -> np.ndarray:
    with np.load(REFS / (case + ".npz")) as data:
        return data[key]


def _run(text: str, names: str, x: np.ndarray) -> dict:
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ " + text + " }", StadynLibrary())
        feed(net.nodes["x"], x)
        out = {}
        for name in names.split():
            net.nodes[name].forward()
            out[name] = net.nodes[name].d.copy()
        return out


def test_reduce_max_and_min_pass_nan_by_and_hardmax_takes_the_first_unexceeded():
    out = _run("x = Input {4} ; mx = ReduceMax (x) ; mn = ReduceMin (x) ; h = Hardmax (x)",
               "mx mn h", ROWS)
    for name, key in (("mx", "reduce_max"), ("mn", "reduce_min")):
        np.testing.assert_array_equal(out[name].ravel(), _ref("nan__reduce", key).ravel())
    np.testing.assert_array_equal(out["h"], _ref("nan__argmax_hardmax", "hardmax"))


def test_sqrt_of_nan_and_negative_numbers_is_zero():
    a = np.array([[NAN, INF, -INF, 1, -0.0, 0, 2, NAN, 3, -INF, INF, 5]], np.float32)
    out = _run("x = Input {12} ; r = Sqrt (x)", "r", a)
    np.testing.assert_array_equal(out["r"], _ref("nan__unary", "sqrt"))
