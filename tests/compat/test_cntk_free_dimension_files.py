"""A Function of inputs with free dimensions (CNTK's ``FreeDimension``) saved as a Stadyn
model file (an op the CNTK v2 writer has no form for) keeps them.

Before, the file lost them: loaded, ``crop_manual(x, r, 0, 0)`` of two ``(1, -3, -3)`` inputs
had inputs and output of shape ``(1, 1, 1)`` and refused a ``2 x 3`` referent, where CNTK 2.7
(which writes a CNTK v2 file of it) keeps ``(1, -3, -3)`` and crops each run to the
referent's size.  The expected values are NumPy's slices of the input.
"""

from __future__ import annotations

import warnings

import numpy as np

import stadyn.compat.cntk as C

IMAGE = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)


def _saved_and_loaded(z, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)    # (a Stadyn model file: its warning)
        z.save(path)
    return C.load_model(path)


def test_a_crop_to_a_free_referent_keeps_the_free_dimensions(tmp_path):
    x = C.input_variable((1, C.FreeDimension, C.FreeDimension), name="x")
    r = C.input_variable((1, C.FreeDimension, C.FreeDimension), name="r")
    m = _saved_and_loaded(C.crop_manual(x, r, 0, 0), str(tmp_path / "crop.model"))
    assert [(a.name, a.shape) for a in m.arguments] == [("x", (1, -3, -3)), ("r", (1, -3, -3))]
    assert m.output.shape == (1, -3, -3)
    for h, w in ((2, 3), (3, 2)):
        ref = np.zeros((1, 1, h, w), np.float32)
        got = m.eval({a: IMAGE if a.name == "x" else ref for a in m.arguments})
        np.testing.assert_array_equal(got, IMAGE[:, :, :h, :w])


def test_a_free_input_of_a_stadyn_file_takes_each_runs_length(tmp_path):
    x = C.input_variable((1, C.FreeDimension, C.FreeDimension), name="x")
    m = _saved_and_loaded(C.pow(x, 2.0), str(tmp_path / "pow.model"))
    assert m.arguments[0].shape == (1, -3, -3)
    data = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    np.testing.assert_array_equal(m.eval({m.arguments[0]: data}), data ** 2)
