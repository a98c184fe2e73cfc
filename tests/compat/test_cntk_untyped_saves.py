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


def _squared_product():
    # pow of a base that may be 0 has no CNTK v2 form: the save falls back to Stadyn's format,
    # its inputs typed as the operands the Function was applied to
    @C.Function
    def h(w, x):
        return C.pow(C.times(x, w), C.constant(2.0))
    return h


def _saved_applied(tmp_path, function, *operands):
    function(*operands)
    path = str(tmp_path / "h.model")
    with pytest.warns(UserWarning, match="written as a Stadyn model file"):
        function.save(path)
    return C.load_model(path)


def test_a_stadyn_file_of_an_applied_untyped_function_applies_to_the_same_types(tmp_path):
    # the constant operand (no dynamic axes) loads without them, and the arguments keep the
    # signature's order, (w, x) as CNTK 2.7's; before, w loaded batched ([#] [2]) after x and
    # the application raised a ShapeError; values by NumPy
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    loaded = _saved_applied(tmp_path, _squared_product(), C.constant(w), C.input_variable(3))
    assert [(a.name, a.shape, len(a.dynamic_axes)) for a in loaded.arguments] == \
        [("w", (3, 2), 0), ("x", (3,), 1)]
    x = C.input_variable(3)
    data = np.array([[1.0, -2.0, 0.5]], np.float32)
    np.testing.assert_allclose(loaded(C.constant(w), x).eval({x: data}), (data @ w) ** 2)


def test_a_stadyn_file_of_an_applied_untyped_function_refuses_other_types(tmp_path):
    # its graph was built for the saved operand (reshape to (2, 3)): an operand of another
    # size, a sequence too, is refused naming the argument and both types (CNTK 2.7's file,
    # of placeholders, takes any); before, a ShapeError from inside the reshape
    @C.Function
    def h(x):
        return C.pow(C.reshape(x, (2, -1)), C.constant(2.0))
    loaded = _saved_applied(tmp_path, h, C.input_variable(6))
    x = C.input_variable(6)
    np.testing.assert_allclose(loaded(x).eval({x: np.arange(6, dtype=np.float32)[None]}),
                               (np.arange(6, dtype=np.float32) ** 2).reshape(1, 2, 3))
    for other in (C.input_variable(8), C.sequence.input_variable(4)):
        with pytest.raises(TypeError, match=r"argument x: this Stadyn model file holds .* "
                                            r"Tensor\[6\]; it cannot take .*Tensor\[(8|4)\]"):
            loaded(other)
