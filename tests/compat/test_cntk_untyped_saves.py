"""Saving a ``@C.Function`` never applied (its arguments untyped).

CNTK 2.7 writes its graph over placeholders of unknown shape, a file that applies to operands
of any shape.  Stadyn builds the graph on stand-ins (sequences of one value each) and writes it
as CNTK does where its CNTK v2 writer can; before, where it could not (``times(x, w) +
gather(w, x)``: the gather over a sequence), the save fell back to a Stadyn model file of the
stand-ins' shapes, whose application to a (3, 3) table and 3 indices gave shape (3, 1, 1)
where CNTK 2.7's gives (3, 3).  Now that save is refused with a clear error (applied first, the
Function saves its graph for its operands' types, and the file gives CNTK's values).
"""

from __future__ import annotations

import numpy as np
import pytest

import stadyn.compat.cntk as C

TABLE = np.arange(9, dtype=np.float32).reshape(3, 3)
INDICES = np.array([[0, 1, 2]], np.float32)


def _function():
    @C.Function
    def h(w, x):
        return C.times(x, w) + C.gather(w, x)
    return h


def test_an_untyped_function_the_writer_cannot_write_is_refused(tmp_path):
    path = tmp_path / "h.model"
    with pytest.raises(ValueError, match=r"h\.model: the Function's arguments have no types.*"
                                         r"apply it to Functions or Variables first"):
        _function().save(str(path))
    assert not path.exists()


def test_an_untyped_function_is_not_saved_as_onnx(tmp_path):
    # (CNTK 2.7 crashes saving it; an ONNX file of the stand-ins' shapes would load wrong)
    with pytest.raises(ValueError, match="an ONNX file needs their shapes"):
        _function().save(str(tmp_path / "h.onnx"), format=C.ModelFormat.ONNX)


def test_applied_first_it_saves_a_file_that_applies_as_cntks(tmp_path):
    # what the refusal advises: applied, its file applies to other operands, as CNTK 2.7's
    # does: times(x, W) + W[x], (3,) + (3, 3), by NumPy
    h = _function()
    h(C.constant(TABLE), C.input_variable(3))
    path = str(tmp_path / "h.model")
    h.save(path)
    x = C.input_variable(3)
    z = C.load_model(path)(C.constant(TABLE), x)
    expected = INDICES[0] @ TABLE + TABLE[INDICES[0].astype(int)]
    assert z.output.shape == (3, 3)
    np.testing.assert_allclose(z.eval({x: INDICES})[0], expected)
