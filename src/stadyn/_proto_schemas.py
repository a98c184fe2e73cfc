"""The protobuf schemas of the binary legacy formats, written here from the formats' facts and
built as message classes at import time -- no ``protoc``, no generated code.

* NNabla's ``parameter.protobuf`` (an ``NNablaProtoBuf`` of which NNabla's own loader reads only
  the parameters): ``NNablaProtoBuf.parameter = 200`` (repeated ``Parameter``);
  ``Parameter { variable_name = 1; Shape shape = 20; repeated float data = 100; bool need_grad =
  101 }``; ``Shape { repeated int64 dim = 1 }`` (proto3, so repeated numbers are packed); and
  the solvers' states NNabla saves with an optimizer (``NNablaProtoBuf.optimizer = 400``:
  ``Optimizer { name = 1; Solver solver = 30 }``, ``Solver { type = 2; map<string, SolverState>
  states = 40 }``, ``SolverState { uint32 t = 1; map<string, SolverStateParameter>
  state_parameter = 2 }``, ``SolverStateParameter { Shape shape = 20; repeated float data = 100
  }``, the maps as their repeated entries).  Other fields of ``NNablaProtoBuf`` (networks,
  executors ...) are skipped as unknown fields.
* CNTK 2.x's ``CNTK.proto`` (package ``CNTK.proto`` in CNTK 2.7's own binary): ``NDShape``,
  ``Axis``, ``NDArrayView`` (data type, storage format, shape, and one of float / double / bytes
  / sint32 values), ``Vector``, ``Dictionary`` and ``DictionaryValue`` (a type tag and one of
  bool / int32 / uint64 / float / double / string / shape / axis / vector / dictionary / array).
  ``Dictionary.data`` is a ``map<string, DictionaryValue>`` in CNTK; here it is declared as the
  wire-identical ``repeated DataEntry { key = 1; value = 2 }``, so entries come back in the order
  the file stores them and a key stored twice is seen (a map would keep one silently).

Why descriptors built in Python: the schemas are a handful of messages, the ``protobuf`` package
is a dependency of Stadyn's, and its C parser (upb) checks every length against the buffer, so a
hostile size cannot make it allocate more than the input holds.

A leaf module (it imports no other part of Stadyn), so both ``serialize`` (model and parameter
files) and ``solvers`` (NNabla's ``.protobuf`` solver-state files, an ``Optimizer`` message)
read and write through the same messages; ``google.protobuf`` is imported with this module,
which nothing imports until a protobuf file is read or written.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor

__all__ = ["nnabla_messages", "cntk_messages", "extend_packed"]

_F = descriptor_pb2.FieldDescriptorProto
_TYPES = {"string": _F.TYPE_STRING, "int64": _F.TYPE_INT64, "uint64": _F.TYPE_UINT64,
          "uint32": _F.TYPE_UINT32, "int32": _F.TYPE_INT32, "sint32": _F.TYPE_SINT32,
          "float": _F.TYPE_FLOAT, "double": _F.TYPE_DOUBLE, "bool": _F.TYPE_BOOL,
          "bytes": _F.TYPE_BYTES}


def _message(proto: descriptor_pb2.DescriptorProto, package: str, name: str,
             fields: list[tuple], oneof: str | None = None) -> descriptor_pb2.DescriptorProto:
    """Fill ``proto`` as message ``name``; each field is ``(name, number, type, repeated,
    in_oneof)`` where ``type`` is a scalar name or ``.Message``/``enum:.Enum`` (relative to
    ``package``)."""
    proto.name = name
    if oneof:
        proto.oneof_decl.add().name = oneof
    for fname, number, ftype, repeated, in_oneof in fields:
        f = proto.field.add()
        f.name, f.number = fname, number
        f.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
        if ftype in _TYPES:
            f.type = _TYPES[ftype]
            if repeated and ftype not in ("string", "bytes"):
                f.options.packed = True
        elif ftype.startswith("enum:"):
            f.type, f.type_name = _F.TYPE_ENUM, f".{package}{ftype[5:]}"
        else:
            f.type, f.type_name = _F.TYPE_MESSAGE, f".{package}{ftype}"
        if in_oneof:
            f.oneof_index = 0
    return proto


def _enum(parent: descriptor_pb2.DescriptorProto, name: str, values: dict[str, int]) -> None:
    e = parent.enum_type.add()
    e.name = name
    for vname, number in values.items():
        v = e.value.add()
        v.name, v.number = vname, number


def _classes(file: descriptor_pb2.FileDescriptorProto, names: list[str]) -> dict:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{file.package}.{n}"))
            for n in names}


def _file(name: str) -> tuple[str, descriptor_pb2.FileDescriptorProto]:
    pkg = f"stadyn_legacy.{name}"
    return pkg, descriptor_pb2.FileDescriptorProto(name=f"stadyn_legacy_{name}.proto",
                                                   package=pkg, syntax="proto3")


def _nnabla() -> dict:
    pkg, f = _file("nnabla")
    _message(f.message_type.add(), pkg, "Shape", [("dim", 1, "int64", True, False)])
    _message(f.message_type.add(), pkg, "Parameter", [
        ("variable_name", 1, "string", False, False), ("shape", 20, ".Shape", False, False),
        ("data", 100, "float", True, False), ("need_grad", 101, "bool", False, False)])
    # a solver's states (``*.protobuf.optimizer`` members, ``save_solver_in_proto``); NNabla's
    # maps are declared as their wire-identical repeated entries
    _message(f.message_type.add(), pkg, "SolverStateParameter", [
        ("shape", 20, ".Shape", False, False), ("data", 100, "float", True, False)])
    _message(f.message_type.add(), pkg, "StateParameterEntry", [
        ("key", 1, "string", False, False), ("value", 2, ".SolverStateParameter", False, False)])
    _message(f.message_type.add(), pkg, "SolverState", [
        ("t", 1, "uint32", False, False),
        ("state_parameter", 2, ".StateParameterEntry", True, False)])
    _message(f.message_type.add(), pkg, "StatesEntry", [
        ("key", 1, "string", False, False), ("value", 2, ".SolverState", False, False)])
    _message(f.message_type.add(), pkg, "Solver", [
        ("type", 2, "string", False, False), ("states", 40, ".StatesEntry", True, False)])
    _message(f.message_type.add(), pkg, "Optimizer", [
        ("name", 1, "string", False, False), ("solver", 30, ".Solver", False, False)])
    _message(f.message_type.add(), pkg, "NNablaProtoBuf", [
        ("version", 1, "string", False, False), ("parameter", 200, ".Parameter", True, False),
        ("optimizer", 400, ".Optimizer", True, False)])
    return _classes(f, ["NNablaProtoBuf", "Parameter", "Shape", "Optimizer"])


def _cntk() -> dict:
    pkg, f = _file("cntk")
    _message(f.message_type.add(), pkg, "NDShape", [("shape_dim", 1, "uint64", True, False)])
    _message(f.message_type.add(), pkg, "Axis", [
        ("static_axis_idx", 1, "int32", False, False), ("name", 2, "string", False, False),
        ("is_ordered_dynamic_axis", 3, "bool", False, False)])
    view = _message(f.message_type.add(), pkg, "NDArrayView", [
        ("data_type", 1, "enum:.NDArrayView.DataType", False, False),
        ("storage_format", 2, "enum:.NDArrayView.StorageFormat", False, False),
        ("shape", 3, ".NDShape", False, False),
        ("float_values", 4, ".NDArrayView.FloatValues", False, True),
        ("double_values", 5, ".NDArrayView.DoubleValues", False, True),
        ("bytes_value", 6, ".NDArrayView.BytesValue", False, True),
        ("sint32_values", 7, ".NDArrayView.IntValues", False, True)], oneof="values")
    _enum(view, "DataType", {"Unknown": 0, "Float": 1, "Double": 2, "Float16": 4, "Int8": 5,
                             "Int16": 6})
    _enum(view, "StorageFormat", {"Dense": 0, "SparseCSC": 1, "SparseBlockCol": 2})
    for name, ftype in (("FloatValues", "float"), ("DoubleValues", "double"),
                        ("IntValues", "sint32")):
        _message(view.nested_type.add(), pkg, name, [("value", 1, ftype, True, False)])
    _message(view.nested_type.add(), pkg, "BytesValue", [("value", 1, "bytes", False, False)])
    _message(f.message_type.add(), pkg, "Vector", [("value", 1, ".DictionaryValue", True, False)])
    d = _message(f.message_type.add(), pkg, "Dictionary", [
        ("version", 1, "uint64", False, False), ("data", 2, ".Dictionary.DataEntry", True, False)])
    _message(d.nested_type.add(), pkg, "DataEntry", [
        ("key", 1, "string", False, False), ("value", 2, ".DictionaryValue", False, False)])
    dv = _message(f.message_type.add(), pkg, "DictionaryValue", [
        ("version", 1, "uint64", False, False),
        ("value_type", 2, "enum:.DictionaryValue.Type", False, False),
        ("bool_value", 3, "bool", False, True), ("int_value", 4, "int32", False, True),
        ("size_t_value", 5, "uint64", False, True), ("float_value", 6, "float", False, True),
        ("double_value", 7, "double", False, True), ("string_value", 8, "string", False, True),
        ("nd_shape_value", 9, ".NDShape", False, True), ("axis_value", 10, ".Axis", False, True),
        ("vector_value", 11, ".Vector", False, True),
        ("dictionary_value", 12, ".Dictionary", False, True),
        ("nd_array_view_value", 13, ".NDArrayView", False, True)], oneof="value")
    _enum(dv, "Type", {"None": 0, "Bool": 1, "Int": 2, "SizeT": 3, "Float": 4, "Double": 5,
                       "String": 6, "NDShape": 7, "Axis": 8, "Vector": 9, "Dictionary": 10,
                       "NDArrayView": 11})
    return _classes(f, ["Dictionary", "DictionaryValue", "NDArrayView", "NDShape", "Axis",
                        "Vector"])


_CACHE: dict[str, dict] = {}


def nnabla_messages() -> dict:
    """Message classes of NNabla's parameter and solver-state protobuf: ``NNablaProtoBuf``,
    ``Parameter``, ``Shape``, ``Optimizer``.

    Example:
        >>> from stadyn.serialize import nnabla_messages
        >>> P = nnabla_messages()["NNablaProtoBuf"]
        >>> m = P(); p = m.parameter.add(); p.variable_name = "w"; p.data.extend([1.0, 2.0])
        >>> [q.variable_name for q in P.FromString(m.SerializeToString()).parameter]
        ['w']
    """
    if "nnabla" not in _CACHE:
        _CACHE["nnabla"] = _nnabla()
    return _CACHE["nnabla"]


def cntk_messages() -> dict:
    """Message classes of CNTK 2.x's ``CNTK.proto`` (``Dictionary``, ``DictionaryValue``,
    ``NDArrayView``, ``NDShape``, ``Axis``, ``Vector``)."""
    if "cntk" not in _CACHE:
        _CACHE["cntk"] = _cntk()
    return _CACHE["cntk"]


_PACKED_DTYPES = {FieldDescriptor.TYPE_FLOAT: "<f4", FieldDescriptor.TYPE_DOUBLE: "<f8"}


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def extend_packed(message: Any, name: str, values: Any) -> None:
    """Append ``values`` (an array-like, flattened, converted to the field's float32 or float64
    as NumPy's ``astype`` does) to the packed repeated ``float``/``double`` field ``name`` of
    ``message``: the same message as ``getattr(message, name).extend(values)`` would make, but
    through one parse of the values' little-endian bytes (the field's wire form: key, length,
    the bytes) instead of a Python float per value -- a 32 MB state file is written about 20
    times faster.

    Example:
        >>> import numpy as np
        >>> from stadyn._proto_schemas import extend_packed, nnabla_messages
        >>> p = nnabla_messages()["Parameter"]()
        >>> extend_packed(p, "data", np.array([[0.5, -1.0]])); list(p.data)
        [0.5, -1.0]
    """
    field = message.DESCRIPTOR.fields_by_name[name]
    dtype = _PACKED_DTYPES.get(field.type)
    repeated = field.is_repeated if hasattr(field, "is_repeated") else \
        field.label == FieldDescriptor.LABEL_REPEATED       # protobuf < 6 has no is_repeated
    if dtype is None or not repeated:
        raise TypeError(f"{message.DESCRIPTOR.name}.{name} is not a repeated float or double")
    raw = np.ascontiguousarray(values, dtype=dtype).tobytes()
    if raw:
        message.MergeFromString(_varint(field.number << 3 | 2) + _varint(len(raw)) + raw)
