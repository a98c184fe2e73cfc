"""A CNTK 2.7 model file computes CNTK's NaN rules once loaded, as the same model built with
``stadyn.compat.cntk`` does: ``reduce_max``/``reduce_min`` (along an axis and over the whole
sample), ``argmax``/``argmin``, max pooling (windows with NaN, a window of NaN only, global
max pooling) pass NaN by, and ``sqrt`` is ``sqrt(x > 0 ? x : 0)`` (0 for NaN and negative
numbers), and ``relu`` is CNTK's ``x * (x > 0)`` (NaN for NaN and -inf).
``element_max``/``element_min`` and ``hardmax`` are checked alongside.

``tests/fixtures/cntk_model_nan/nan.model`` and ``nan.npz`` (its inputs, holding NaN, and CNTK
2.7's outputs) were written by the real CNTK 2.7 (``make_model.py`` there).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_model_nan")
DATA = np.load(os.path.join(FIXTURES, "nan.npz"))
NAMES = [str(n) for n in DATA["names"]]


@pytest.fixture(scope="module")
def outputs():
    m = C.load_model(os.path.join(FIXTURES, "nan.model"))
    got = m.eval({a: DATA[a.name] for a in m.arguments})
    assert [o.name for o in m.outputs] == NAMES
    return {o.name: np.asarray(got[o]) for o in m.outputs}


@pytest.mark.parametrize("k,name", list(enumerate(NAMES)))
def test_a_loaded_cntk_file_computes_cntks_nan_rules(outputs, k, name):
    # before (a7dbedc3): the file's ReduceElements, Pooling and Sqrt were built with torch's
    # rule -- reduce_max of [nan, 1, 2, 2, -4, 0.5] gave nan (CNTK: 2), argmax of
    # [3, nan, -1, 0, nan, 4] gave 1 (CNTK: 5), a max-pooling window holding a NaN gave nan
    # (CNTK: the max of the others; -inf for NaN only), sqrt(-4) and sqrt(nan) gave nan
    # (CNTK: 0); ReLU of NaN or -inf gave NaN or 0 by torch's rule (CNTK: NaN for both)
    expected = DATA[str(k)]
    got = outputs[name]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0)


def test_the_loaded_file_computes_what_compat_cntk_builds():
    # the same graph built with the compat layer gives the same numbers on the NaN inputs
    x = C.input_variable(6, name="x")
    m = C.input_variable((1, 4, 4), name="m")
    built = {"reduce_max": C.reduce_max(x, axis=0), "argmax": C.argmax(x, axis=0),
             "sqrt": C.sqrt(x), "max_pool": C.layers.MaxPooling((2, 2), strides=2)(m)}
    for name, f in built.items():
        got = np.asarray(f.eval({a: DATA[a.name] for a in f.arguments}))
        np.testing.assert_allclose(got, DATA[str(NAMES.index(name))], rtol=1e-6, atol=0)


def test_a_loaded_files_relu_and_abs_take_cntks_gradients():
    # the gradients of a loaded ReLU and Abs are those compat.cntk's ReLU and Abs take (CNTK's
    # rules, checked against CNTK 2.7 by the harness cases nan__unary): the gradient of |x| at
    # NaN is NaN and at -0.0 is -0.0 (torch's rule: 0 and 0)
    import tempfile

    x = C.input_variable(6, name="x", needs_gradient=True)
    data = np.array([[np.nan, -0.0, 0.0, -2.0, 3.0, -np.inf]], np.float32)
    for make in (C.relu, C.abs):
        built = make(x)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "f.model")
            built.save(path)
            loaded = C.load_model(path)
        want = built.grad({x: data}, wrt=[x])
        got = loaded.grad({loaded.arguments[0]: data}, wrt=[loaded.arguments[0]])
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        np.testing.assert_array_equal(got, want)
    assert np.isnan(want[0, 0]) and np.signbit(want[0, 1])       # Abs: CNTK's Sgn(x)
