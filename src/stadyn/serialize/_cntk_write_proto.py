"""The protobuf layer of the CNTK v2 model-file writer (:mod:`._cntk_write`): typed values
(:class:`Value`) turned into CNTK 2.7's ``Dictionary`` message (schema:
:mod:`stadyn._proto_schemas`), the layout CNTK 2.7 itself writes.

Facts about that layout (read off files CNTK 2.7's ``Function.save`` wrote, decoded with
:mod:`._cntk_format`): every ``DictionaryValue`` and every ``Dictionary`` carries version 2; a
shape is stored column-major (the reverse of NumPy's order) and an array's values in that same
order, which is NumPy's C order of the array in NumPy's shape; dense float32 arrays are
``float_values``, float64 ``double_values``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, NoReturn

import numpy as np

__all__ = ["Value", "text", "size_t", "integer", "boolean", "single", "double", "shape", "axis",
           "vector", "dictionary", "array", "none", "python_value", "encode",
           "STATIC_AXIS_DYNAMIC"]

_VALUE_VERSION = 2
STATIC_AXIS_DYNAMIC = 2147483647       # the static index CNTK stores for a dynamic axis
_TYPES = {"none": 0, "bool": 1, "int": 2, "size_t": 3, "float": 4, "double": 5, "string": 6,
          "shape": 7, "axis": 8, "vector": 9, "dictionary": 10, "array": 11}


@dataclass(frozen=True)
class Value:
    """One typed ``DictionaryValue``: ``kind`` one of ``none bool int size_t double string shape
    axis vector dictionary array``.

    Example:
        >>> size_t(3)
        Value(kind='size_t', value=3)
    """

    kind: str
    value: Any


def text(s: str) -> Value:
    return Value("string", str(s))


def size_t(n: int) -> Value:
    return Value("size_t", int(n))


def integer(n: int) -> Value:
    return Value("int", int(n))


def boolean(b: bool) -> Value:
    return Value("bool", bool(b))


def single(x: float) -> Value:
    """A float (CNTK's ``float`` DictionaryValue: EditDistanceError's penalties)."""
    return Value("float", float(x))


def double(x: float) -> Value:
    return Value("double", float(x))


def shape(dims_numpy_order) -> Value:
    """A shape given in NumPy's order (stored reversed); -1: a dimension CNTK infers."""
    return Value("shape", tuple(int(d) for d in dims_numpy_order))


def axis(static_idx: int, name: str, ordered: bool) -> Value:
    return Value("axis", (int(static_idx), name, bool(ordered)))


def static_axis(idx: int) -> Value:
    """A static axis as CNTK 2.7 writes it: ``staticAxisIdx=<k>``, marked ordered."""
    return axis(idx, f"staticAxisIdx={idx}", True)


def vector(items) -> Value:
    return Value("vector", list(items))


def dictionary(entries: dict) -> Value:
    return Value("dictionary", dict(entries))


def array(values: np.ndarray) -> Value:
    return Value("array", np.asarray(values))


def none() -> Value:
    return Value("none", None)


def python_value(value: Any, refuse: Callable[[Any], NoReturn]) -> Value:
    """A Python value as CNTK 2.7's Python makes it a ``DictionaryValue``
    (``_py_dict_to_cntk_dict``: a user function's ``serialize()`` state, a Trainer's external
    state): None; a bool; an int as Int where it fits 32 bits, else SizeT where it is not
    negative, else Double; a float as Double; a string; a dict (its keys as strings) as a
    Dictionary, a list or tuple as a vector; a float array (float64 kept, float32 otherwise).
    ``refuse(value)`` raises for anything else (CNTK 2.7 refuses an int64 array).

    Stadyn is more lenient than CNTK 2.7 here: it also takes NumPy scalars (``np.int64(5)``,
    ``np.int32``, ``np.float32(0.5)``, ``np.bool_``) as the Python number or bool of the same
    value, which CNTK 2.7's ``_py_dict_to_cntk_dict`` refuses ("Wrong number or type of
    arguments for overloaded function 'new_DictionaryValue'"; a ``np.float64`` it takes, being
    a float).  The file written is the one CNTK would write for the Python value, so CNTK loads
    it.

    Example:
        >>> python_value({"n": 1 << 40, "x": [None, 0.5]}, print)
        Value(kind='dictionary', value={'n': Value(kind='size_t', value=1099511627776), \
'x': Value(kind='vector', value=[Value(kind='none', value=None), \
Value(kind='double', value=0.5)])})
    """
    if value is None:
        return none()
    if isinstance(value, (bool, np.bool_)):
        return boolean(bool(value))
    if isinstance(value, (int, np.integer)):
        value = int(value)
        if -(1 << 31) <= value < (1 << 31):
            return integer(value)
        return size_t(value) if 0 <= value < (1 << 64) else double(float(value))
    if isinstance(value, (float, np.floating)):
        return double(float(value))
    if isinstance(value, str):
        return text(value)
    if isinstance(value, Mapping):
        return dictionary({str(k): python_value(v, refuse) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return vector([python_value(v, refuse) for v in value])
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return array(value if value.dtype == np.float64 else value.astype(np.float32))
    refuse(value)
    raise ValueError(f"no CNTK Dictionary form for {value!r}")     # (refuse returned)


def _fill_value(msg, v: Value) -> None:
    msg.version = _VALUE_VERSION
    msg.value_type = _TYPES[v.kind]
    k, x = v.kind, v.value
    if k == "none":
        pass
    elif k == "bool":
        msg.bool_value = x
    elif k == "int":
        msg.int_value = x
    elif k == "size_t":
        msg.size_t_value = x
    elif k == "float":
        msg.float_value = x
    elif k == "double":
        msg.double_value = x
    elif k == "string":
        msg.string_value = x
    elif k == "shape":
        # (-1: CNTK's InferredDimension, the largest size_t)
        msg.nd_shape_value.shape_dim.extend(d % 2 ** 64 for d in x[::-1])
        if not x:
            msg.nd_shape_value.SetInParent()
    elif k == "axis":
        msg.axis_value.static_axis_idx, msg.axis_value.name = x[0], x[1]
        msg.axis_value.is_ordered_dynamic_axis = x[2]
    elif k == "vector":
        msg.vector_value.SetInParent()
        for item in x:
            _fill_value(msg.vector_value.value.add(), item)
    elif k == "dictionary":
        _fill_dictionary(msg.dictionary_value, x)
    elif k == "array":
        _fill_array(msg.nd_array_view_value, x)
    else:                                       # pragma: no cover - the constructors above
        raise ValueError(f"unknown value kind {k!r}")


def _fill_array(msg, a: np.ndarray) -> None:
    from .._proto_schemas import extend_packed
    if a.dtype == np.float64:
        msg.data_type = 2
        extend_packed(msg.double_values, "value", a)
    else:
        msg.data_type = 1
        extend_packed(msg.float_values, "value", a)
        if a.size == 0:
            msg.float_values.SetInParent()
    msg.storage_format = 0
    msg.shape.shape_dim.extend(int(d) for d in a.shape[::-1])
    if a.ndim == 0:
        msg.shape.SetInParent()


def _fill_dictionary(msg, entries: dict) -> None:
    msg.version = _VALUE_VERSION
    for key, v in entries.items():
        entry = msg.data.add()
        entry.key = key
        _fill_value(entry.value, v)


def encode(entries: dict) -> bytes:
    """The serialized top ``Dictionary`` holding ``entries`` (name -> :class:`Value`).

    Example:
        >>> from stadyn.serialize._cntk_format import _decode_file
        >>> _decode_file("m", encode({"type": text("x"), "n": size_t(3)}))
        {'type': 'x', 'n': 3}
    """
    from .._proto_schemas import cntk_messages
    msg = cntk_messages()["Dictionary"]()
    _fill_dictionary(msg, entries)
    return msg.SerializeToString()
