"""``stadyn._proto_schemas.extend_packed`` fills a packed float/double field from the values'
bytes (NNabla's state and parameter ``.protobuf`` files, CNTK's NDArrayView values): the
message it makes is protobuf's own ``extend`` of the same values as Python floats, byte for
byte (protobuf's encoder is the independent expectation)."""

from __future__ import annotations

import numpy as np
import pytest

from stadyn._proto_schemas import cntk_messages, extend_packed, nnabla_messages


@pytest.mark.parametrize("values", [
    np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5,
    np.array([1e-40, -0.0, 3.4e38, np.inf, -np.inf], np.float32),      # subnormal, -0, inf
    np.linspace(-1, 1, 7),                                              # float64 -> float32
    np.arange(6, dtype=np.float16).reshape(2, 3)[:, ::2],               # not contiguous
    np.zeros((0, 3), np.float32),
    np.float32(2.5)])
def test_a_float_field_is_protobufs_extend_byte_for_byte(values):
    Parameter = nnabla_messages()["Parameter"]
    mine, theirs = Parameter(), Parameter()
    for m in (mine, theirs):
        m.variable_name = "w"
    extend_packed(mine, "data", values)
    theirs.data.extend(np.asarray(values).astype(np.float32).ravel().tolist())
    assert mine.SerializeToString() == theirs.SerializeToString()
    np.testing.assert_array_equal(np.asarray(mine.data, np.float32),
                                  np.asarray(values, np.float32).ravel())


def test_a_double_field_keeps_float64_and_a_second_call_appends():
    DoubleValues = cntk_messages()["NDArrayView"].DoubleValues
    values = np.array([0.1, 1 / 3, -2.0 ** -1074])
    mine, theirs = DoubleValues(), DoubleValues()
    extend_packed(mine, "value", values)
    extend_packed(mine, "value", values[:1])
    theirs.value.extend(values.tolist() + values[:1].tolist())
    assert mine.SerializeToString() == theirs.SerializeToString()


def test_a_oneof_member_filled_so_is_the_one_set():
    view = cntk_messages()["NDArrayView"]()
    extend_packed(view.float_values, "value", np.ones(2, np.float32))
    assert view.WhichOneof("values") == "float_values"


def test_a_field_that_is_not_packed_floats_is_refused():
    with pytest.raises(TypeError, match="Shape.dim is not a repeated float or double"):
        extend_packed(nnabla_messages()["Shape"](), "dim", np.ones(2))
    with pytest.raises(TypeError, match="Parameter.variable_name is not"):
        extend_packed(nnabla_messages()["Parameter"](), "variable_name", np.ones(2))
