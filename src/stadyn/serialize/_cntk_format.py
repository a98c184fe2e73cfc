"""CNTK 2.x model files (what ``Function.save`` writes, ``.model``/``.dnn``), decoded into the
legacy form (:mod:`._legacy_ir`) without CNTK.

A file is one protobuf ``Dictionary`` (schema: :mod:`stadyn._proto_schemas`) describing a composite
function: ``inputs`` (every leaf: inputs, parameters and constants with their values,
placeholders), ``primitive_functions`` (every function, those inside blocks too, each with its
op id, uid, inputs by uid and an ``attributes`` dictionary) and ``root`` (the uid of the output
function).  A function's outputs are named ``<uid>_Output_<k>``.  A block (op id 57, what CNTK's
layers make) names its inner composite's root and maps the placeholders inside to the values
outside; its inner functions are listed beside it.

Models over 2 GB cannot be one protobuf message.  CNTK 2.7 then writes the magic number
``0x636e746b`` (little-endian, the bytes ``k t n c``), the metadata message's size (uint32
little-endian), the ``Dictionary`` with every array left empty, and after it the arrays' raw
little-endian values, one after the other, in the order the arrays occur in the message.

Shapes: CNTK stores dimensions column-major (fastest first), the reverse of NumPy's order, and
an array's values in that order -- so ``values.reshape(reversed(dims))`` is the array in NumPy
order, as CNTK's Python API shows it.  Every shape here (variables, parameters and ``NDShape``
attributes) is given in that Python order; attributes keep CNTK's Python view in full, so the
per-axis lists ``sharing`` and ``autoPadding`` are reversed too.  Static axis indices
(:class:`CntkAxis`) are kept as stored: column-major, so for a tensor of rank r a stored index
``i >= 0`` is Python axis ``r - 1 - i`` and ``i < 0`` is Python axis ``-i - 1``.
"""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._legacy_ir import (MAX_RANK, LegacyFunction, LegacyModel, LegacyNetwork, LegacyParameter,
                         LegacyVariable, fail, read_limited, sort_functions)

__all__ = ["read_cntk", "is_cntk_v2_file", "CntkAxis", "OP_NAMES", "LARGE_MAGIC",
           "cntk_output_name"]

LARGE_MAGIC = 0x636E746B
_SIZE_MAX = (1 << 64) - 1
# stored dimension -> the value CNTK's Python API shows
_SENTINELS = {_SIZE_MAX: -1, _SIZE_MAX - 1: -2, _SIZE_MAX - 2: -3}   # inferred, unknown, free
_KINDS = {0: "input", 1: "output", 2: "parameter", 3: "constant", 4: "placeholder"}
_DTYPES = {1: "float32", 2: "float64", 4: "float16", 5: "int8", 6: "int16"}

# PrimitiveOpType ids of CNTK 2.7 and the op names its Python API reports (``op_name``):
# 0-91 as CNTK's PrimitiveOpType enum numbers them, 92-97 as CNTK 2.7 writes them (found by
# saving each op with CNTK 2.7: tests/fixtures/legacy/make_cntk.py; 92, eye_like's, with
# tests/fixtures/cntk_write_fallbacks/make_refs.py).
OP_NAMES = dict(enumerate(
    "Negate Sigmoid Tanh ReLU Exp Log Sqrt Floor Abs Reciprocal Softmax Hardmax TransposeAxes "
    "Where Slice Dropout Reshape Pooling SumAll Plus Minus ElementTimes Equal NotEqual Less "
    "LessEqual Greater GreaterEqual PackedIndex GatherPacked ScatterPacked Times TransposeTimes "
    "Convolution SquaredError CrossEntropyWithSoftmax ClassificationError PastValue FutureValue "
    "ReduceElements BatchNormalization Clip Select Splice Combine RandomSample "
    "RandomSampleInclusionFrequency ROIPooling Logistic OptimizedRNNStack ReconcileDynamicAxis "
    "LogSoftmax LogPlus CosDistance Sin Cos Pass Block Unpooling LambdaRank NDCG "
    "EditDistanceError NoOp LabelsToGraph StopGradient ELU ForwardBackward "
    "CosDistanceWithNegativeSamples OneHotOp Pow ToSequenceOp ToSequenceLikeOp UnpackSequenceOp "
    "Assign Gather StableSigmoid RandomDistribution Sinh Cosh UnpackBatchAxis ToBatchAxis Asin "
    "Acos Pad Crop Atanh Asinh TopK Squeeze ConstantOp LatticeSequenceWithSoftmax Cast".split()))
OP_NAMES.update({92: "EyeLikeOp", 93: "CustomProxyOp", 94: "StraightThrough", 95: "Tan",
                 96: "Atan", 97: "ConvolutionSequenceShape"})
_BLOCK, _COMBINE = 57, 44
_USER = -1          # (not an op code: a Python user function, CNTK's UserDefinedFunction)
_N_OUTPUTS = {87: 2}                     # TopK: values and indices
_REVERSED_LISTS = ("sharing", "autoPadding")   # per-axis lists CNTK's Python API reverses
# the names CNTK 2.7 gives a function's second output: the function's name and this suffix
# (PrimitiveFunction::InferOutputs); a function without a name leaves it unnamed
_SECOND_OUTPUT = {"UnpackSequenceOp": "_UnpackSequenceMask", "TopK": "_TopKIndexMask"}


def cntk_output_name(op_type: str, name: str, k: int) -> str:
    """The name CNTK 2.7 shows for output ``k`` of a function of ``op_type`` named ``name``
    (``Variable.name`` of ``load_model(f).outputs``): the function's name for its first output;
    ``unpacked_UnpackSequenceMask`` for ``sequence.unpack``'s mask; '' otherwise.

    Example:
        >>> cntk_output_name("Plus", "out", 0), cntk_output_name("UnpackSequenceOp", "u", 1)
        ('out', 'u_UnpackSequenceMask')
    """
    if k == 0:
        return name
    return name + _SECOND_OUTPUT[op_type] if name and op_type in _SECOND_OUTPUT else ""


@dataclass(frozen=True)
class CntkAxis:
    """A CNTK ``Axis`` as stored: ``static_axis_idx`` column-major (see the module docstring;
    ``2147483647`` marks a dynamic axis, then ``name`` says which), ``ordered`` CNTK's
    ``is_ordered_dynamic_axis``.

    Example:
        >>> CntkAxis(0, "staticAxisIdx=0", True).python_axis(rank=3)
        2
    """

    static_axis_idx: int
    name: str
    ordered: bool

    @property
    def is_dynamic(self) -> bool:
        """Whether this is a dynamic (batch or sequence) axis."""
        return self.static_axis_idx == 2147483647

    def python_axis(self, rank: int) -> int:
        """The axis in NumPy order of a tensor of ``rank`` dimensions."""
        i = self.static_axis_idx
        return rank - 1 - i if i >= 0 else -i - 1


def is_cntk_v2_file(data: bytes) -> bool:
    """Whether ``data`` (a file's first bytes) can be a CNTK 2 model: the large-model magic, or
    a protobuf ``Dictionary`` (its first field, ``version`` or ``data``).

    Example:
        >>> from stadyn.serialize import is_cntk_v2_file
        >>> is_cntk_v2_file(b"\\x08\\x02\\x12"), is_cntk_v2_file(b"PK\\x03\\x04")
        (True, False)
    """
    if len(data) >= 4 and int.from_bytes(data[:4], "little") == LARGE_MAGIC:
        return True
    return len(data) > 0 and data[0] in (0x08, 0x12)


def read_cntk(path: str | os.PathLike) -> LegacyModel:
    """Decode a CNTK 2.x model file (see the module docstring).

    The model is one network named ``"main"``: CNTK's leaves are its variables (by uid, with the
    name, dynamic axes and gradient flag in ``meta``), its functions are named by uid with the
    op name as ``type`` (a block: its layer name, ``meta["block"]`` true and ``body`` the
    network inside).  Parameters and constants are keyed by uid.
    """
    path = os.fspath(path)
    data = read_limited(path)
    top = _decode_file(path, data)
    return _model(path, top)


# ---------------------------------------------------------------------------------------------
# The protobuf layer
# ---------------------------------------------------------------------------------------------
class _Deferred:
    """An array of the large-model layout whose values follow the metadata."""

    __slots__ = ("dtype", "dims", "count", "value")

    def __init__(self, dtype: str, dims: tuple[int, ...], count: int):
        self.dtype, self.dims, self.count, self.value = dtype, dims, count, None


def _decode_file(path: str, data: bytes) -> dict:
    from google.protobuf.message import DecodeError
    from .._proto_schemas import cntk_messages
    deferred: list[_Deferred] = []
    large = len(data) >= 8 and int.from_bytes(data[:4], "little") == LARGE_MAGIC
    if large:
        size = int.from_bytes(data[4:8], "little")
        if 8 + size > len(data):
            raise fail(path, f"the metadata declares {size} bytes but the file has "
                             f"{len(data) - 8} after its header")
        message, rest = data[8:8 + size], memoryview(data)[8 + size:]
    else:
        message, rest = data, memoryview(b"")
    if not message:
        raise fail(path, "empty file")
    try:
        proto = cntk_messages()["Dictionary"].FromString(message)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise fail(path, f"not a CNTK model file: the protobuf does not parse ({exc})") from None
    top = _dictionary(proto, path, deferred, large, 0)
    offset = 0
    for d in deferred:                       # the large layout's raw values, in message order
        nbytes = d.count * np.dtype(d.dtype).itemsize
        if offset + nbytes > len(rest):
            raise fail(path, f"truncated: the arrays after the metadata need more than the "
                             f"{len(rest)} bytes there")
        d.value = np.frombuffer(rest[offset:offset + nbytes], dtype="<" + np.dtype(
            d.dtype).str[1:]).astype(d.dtype).reshape(d.dims[::-1])
        offset += nbytes
    if offset != len(rest):
        raise fail(path, f"{len(rest) - offset} bytes follow the model's arrays")
    return _resolve(top)


def _resolve(value: Any) -> Any:
    if isinstance(value, _Deferred):
        return value.value
    if isinstance(value, dict):
        return {k: _resolve(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v) for v in value]
    return value


def _dims(shape, path: str) -> tuple[int, ...]:
    dims = tuple(_SENTINELS.get(int(d), int(d)) for d in shape.shape_dim)
    if len(dims) > MAX_RANK or any(d > (1 << 62) for d in dims):
        raise fail(path, f"invalid shape {[int(d) for d in shape.shape_dim]}")
    return dims


def _array(view, path: str, deferred: list, large: bool):
    dtype = _DTYPES.get(view.data_type)
    if dtype is None:
        raise fail(path, f"an array of unknown data type {view.data_type}")
    if view.storage_format != 0:
        raise fail(path, f"a sparse array (storage format {view.storage_format}) is not read")
    dims = _dims(view.shape, path)
    if any(d < 0 for d in dims):
        raise fail(path, f"an array of undetermined shape {dims}")
    count = math.prod(dims)
    which = view.WhichOneof("values")
    if which == "float_values":
        values = np.asarray(view.float_values.value, np.float32)
    elif which == "double_values":
        values = np.asarray(view.double_values.value, np.float64)
    elif which == "sint32_values":
        values = np.asarray(view.sint32_values.value, np.int32)
    elif which == "bytes_value":
        raw = view.bytes_value.value
        itemsize = np.dtype(dtype).itemsize
        if len(raw) != count * itemsize:
            raise fail(path, f"an array of shape {dims[::-1]} holds {len(raw)} bytes")
        return np.frombuffer(raw, dtype="<" + np.dtype(dtype).str[1:]).astype(dtype) \
            .reshape(dims[::-1])
    else:
        values = None
    if values is None or (values.size == 0 and count > 0):
        if not large:
            raise fail(path, f"an array of shape {dims[::-1]} holds no values")
        # the large layout writes float16 as 32-bit floats, like the small one
        d = _Deferred("float64" if dtype == "float64" else "float32", dims, count)
        deferred.append(d)
        return d
    if values.size != count:
        raise fail(path, f"an array of shape {dims[::-1]} holds {values.size} values")
    return values.astype(dtype, copy=False).reshape(dims[::-1])


def _value(v, path: str, deferred: list, large: bool, depth: int) -> Any:
    kind = v.value_type
    which = v.WhichOneof("value")
    expected = {0: None, 1: "bool_value", 2: "int_value", 3: "size_t_value", 4: "float_value",
                5: "double_value", 6: "string_value", 7: "nd_shape_value", 8: "axis_value",
                9: "vector_value", 10: "dictionary_value", 11: "nd_array_view_value"}
    if kind not in expected:
        raise fail(path, f"a dictionary value of unknown type {kind}")
    if kind == 0:
        return None
    if which is not None and which != expected[kind]:
        raise fail(path, f"a value tagged {expected[kind]} holds {which}")
    field = expected[kind]
    if kind == 7:
        return _dims(v.nd_shape_value, path)
    if kind == 8:
        a = v.axis_value
        return CntkAxis(int(a.static_axis_idx), a.name, bool(a.is_ordered_dynamic_axis))
    if kind == 9:
        return [_value(e, path, deferred, large, depth + 1) for e in v.vector_value.value]
    if kind == 10:
        return _dictionary(v.dictionary_value, path, deferred, large, depth + 1)
    if kind == 11:
        return _array(v.nd_array_view_value, path, deferred, large)
    return getattr(v, field)


def _dictionary(d, path: str, deferred: list, large: bool, depth: int) -> dict:
    if depth > 200:
        raise fail(path, "dictionaries nested too deeply")
    out: dict[str, Any] = {}
    for entry in d.data:
        if entry.key in out:
            raise fail(path, f"a dictionary holds the key {entry.key!r} twice")
        out[entry.key] = _value(entry.value, path, deferred, large, depth)
    return out


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------
def _python_view(value: Any, key: str = "") -> Any:
    """An attribute as CNTK's Python API shows it: shapes reversed, ``sharing`` and
    ``autoPadding`` reversed, nested values converted alike."""
    if isinstance(value, tuple):
        return value[::-1]
    if isinstance(value, list):
        items = [_python_view(v) for v in value]
        return items[::-1] if key in _REVERSED_LISTS else items
    if isinstance(value, dict):
        return {k: _python_view(v, k) for k, v in value.items()}
    return value


def _get(d: dict, key: str, kind: type, where: str, path: str, default: Any = ...) -> Any:
    if key not in d:
        if default is ...:
            raise fail(path, f"{where} has no {key!r}")
        return default
    value = d[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise fail(path, f"{where}: {key!r} is not a {kind.__name__}")
    return value


def _variable(v: Any, path: str) -> tuple[LegacyVariable, LegacyParameter | None]:
    if not isinstance(v, dict):
        raise fail(path, "an entry of 'inputs' is not a dictionary")
    uid = _get(v, "uid", str, "a variable", path)
    where = f"variable {uid!r}"
    kind = _KINDS.get(_get(v, "kind", int, where, path))
    if kind is None:
        raise fail(path, f"{where} has an unknown kind {v['kind']}")
    dims = _get(v, "shape", tuple, where, path)
    dtype = _DTYPES.get(_get(v, "data_type", int, where, path, 1), "unknown")
    # the file lists dynamic axes innermost first; CNTK's Python API (and this) batch first
    dynamic = [a for a in _get(v, "dynamic_axis", list, where, path, [])
               if isinstance(a, CntkAxis)][::-1]
    axes = [a.name for a in dynamic]
    meta = {"name": _get(v, "name", str, where, path, ""), "dynamic_axes": axes,
            "ordered_axes": [a.name for a in dynamic if a.ordered],
            "needs_gradient": bool(v.get("needs_gradient", False)),
            "is_sparse": bool(v.get("is_sparse", False))}
    var = LegacyVariable(uid, kind, dims[::-1], dtype, meta)
    param = None
    if kind in ("parameter", "constant"):
        value = v.get("value")
        if not isinstance(value, np.ndarray):
            raise fail(path, f"{kind} {uid!r} has no value")
        if value.shape != var.shape:
            raise fail(path, f"{kind} {uid!r}: its value's shape {value.shape} is not its "
                             f"declared shape {var.shape}")
        param = LegacyParameter(meta["name"], value, kind == "parameter" and
                                meta["needs_gradient"], kind)
    return var, param


def _function(f: Any, path: str) -> dict:
    if not isinstance(f, dict):
        raise fail(path, "an entry of 'primitive_functions' is not a dictionary")
    uid = _get(f, "uid", str, "a function", path)
    where = f"function {uid!r}"
    kind = f.get("type", "PrimitiveFunction")
    if kind == "UserDefinedFunction" and not f.get("native", False):
        return _user_function(f, uid, where, path)
    if kind != "PrimitiveFunction":
        raise fail(path, f"{where} is a {kind} (a user-defined function); only CNTK's own "
                         "functions and Python user functions can be read")
    op = _get(f, "op", int, where, path)
    inputs = _get(f, "inputs", list, where, path, [])
    if not all(isinstance(i, str) for i in inputs):
        raise fail(path, f"{where}: an input is not a uid")
    return {"uid": uid, "op": op, "name": _get(f, "name", str, where, path, ""),
            "inputs": tuple(inputs), "attrs": _get(f, "attributes", dict, where, path, {}),
            "raw": f}


def _user_function(f: dict, uid: str, where: str, path: str) -> dict:
    """A Python user function as CNTK 2.7 keeps it (``UserFunction._serialize``): its
    inputs, name and ``user_defined_state`` (the class's module and name, ``op_name`` and its
    ``serialize()`` state); read as the op ``UserFunction``, which rebuilds it."""
    inputs = _get(f, "inputs", list, where, path, [])
    if not all(isinstance(i, str) for i in inputs):
        raise fail(path, f"{where}: an input is not a uid")
    state = _get(f, "user_defined_state", dict, where, path)
    for key in ("module", "class"):
        if not isinstance(state.get(key), str):
            raise fail(path, f"{where}: its user_defined_state names no {key}")
    name = _get(f, "name", str, where, path, "")
    attrs = {"module": state["module"], "class": state["class"], "name": name,
             "op_name": state.get("op_name", ""), "state": state.get("state", {})}
    return {"uid": uid, "op": _USER, "name": name, "inputs": tuple(inputs), "attrs": attrs,
            "raw": f}


def _model(path: str, top: dict) -> LegacyModel:
    if top.get("type") != "CompositeFunction":
        raise fail(path, f"not a CNTK model: the top dictionary is a {top.get('type')!r}")
    variables: OrderedDict[str, LegacyVariable] = OrderedDict()
    params: OrderedDict[str, LegacyParameter] = OrderedDict()
    for v in _get(top, "inputs", list, "the model", path):
        var, param = _variable(v, path)
        if var.name in variables:
            raise fail(path, f"variable {var.name!r} is listed twice")
        variables[var.name] = var
        if param is not None:
            params[var.name] = param
    raw = [_function(f, path) for f in _get(top, "primitive_functions", list, "the model", path)]
    by_uid = {}
    for f in raw:
        if f["uid"] in by_uid or f["uid"] in variables:
            raise fail(path, f"uid {f['uid']!r} is used twice")
        by_uid[f["uid"]] = f
    referenced: dict[str, set[int]] = {}

    def producer(name: str) -> str | None:
        head, sep, k = name.rpartition("_Output_")
        if sep and head in by_uid and k.isdigit():
            referenced.setdefault(head, set()).add(int(k))
            return head
        return None

    for f in raw:
        for i in f["inputs"]:
            if i in variables:
                if variables[i].kind == "placeholder":
                    # (an output read a second time, saved as a placeholder of its uid: it is
                    # one of its function's outputs all the same -- a Tuple block's second)
                    producer(i)
            elif producer(i) is None:
                raise fail(path, f"function {f['uid']!r} reads {i!r}, which the model does not "
                                 "define")
    outputs = {}

    def count(f: dict, depth: int = 0) -> int:
        # a block has as many outputs as its body's root (TopK's block along another axis:
        # the Combine of the values and the indices)
        root = f["raw"].get("block_function_composite", {}).get("root") \
            if f["op"] == _BLOCK else None
        if root in by_uid and depth < 64:
            inner = by_uid[root]
            return len(inner["inputs"]) if inner["op"] == _COMBINE else count(inner, depth + 1)
        return _N_OUTPUTS.get(f["op"], 1)

    for f in raw:
        if f["op"] == _COMBINE:
            outputs[f["uid"]] = f["inputs"]
        else:
            # (the model's root gives all its outputs, a root block all of its body's: those
            # of another function are the ones read)
            n = count(f) if f["uid"] == top.get("root") else _N_OUTPUTS.get(f["op"], 1)
            ks = sorted(referenced.get(f["uid"], set()) | set(range(n)))
            outputs[f["uid"]] = tuple(f"{f['uid']}_Output_{k}" for k in ks)
    functions = {f["uid"]: _legacy_function(f, outputs[f["uid"]], path) for f in raw}
    inner: set[str] = set()
    rebuilt: dict[str, tuple] = {}

    def inputs_of(uid: str) -> tuple | None:
        # a function's inputs as CNTK 2.7 holds them once loaded: a block's rebuilt from its
        # composite (a nested block's first, memoized), another's as its file lists them;
        # None for a name that is no function's
        f = by_uid.get(uid)
        if f is None or f["op"] != _BLOCK:
            return None if f is None else f["inputs"]
        if uid not in rebuilt:
            rebuilt[uid] = f["inputs"]              # (while its own body is walked)
            _attach_body(functions[uid], f, functions, by_uid, variables, producer, path,
                         inner, inputs_of)
            rebuilt[uid] = functions[uid].inputs
        return rebuilt[uid]

    for f in raw:
        if f["op"] == _BLOCK:
            inputs_of(f["uid"])
    root = _get(top, "root", str, "the model", path)
    if root not in by_uid:
        raise fail(path, f"the root {root!r} is not one of the model's functions")
    top_level = [functions[f["uid"]] for f in raw if f["uid"] not in inner]
    leaves = [n for n, v in variables.items()]
    net = LegacyNetwork("main", _sort(top_level, leaves, path, "the model"), variables)
    net.inputs = [n for n, v in variables.items() if v.kind == "input"]
    net.outputs = list(outputs[root])
    extras = {"version": top.get("version"), "uid": top.get("uid"), "name": top.get("name", ""),
              "root": root}
    return LegacyModel("cntk-v2", path, OrderedDict(main=net), params, extras)


def _sort(functions: list[LegacyFunction], available: list[str], path: str,
           where: str) -> list[LegacyFunction]:
    """``functions`` in an order where each reads what is computed before it.

    CNTK 2.7 saves a function read a second time (a cycle's edge, but also the second output of
    a function read by another branch: ``top_k`` on a non-last axis) as a placeholder whose uid
    is that output's, and its loader puts the output back in place of the placeholder.  Such a
    stand-in counts here as computed only where the functions read each other in a cycle
    (a recurrence, whose delays read it); otherwise the function that computes it goes first.
    """
    produced = {o for f in functions for o in f.outputs}
    return sort_functions(functions, available, path, where,
                          cycle_breakers=[n for n in available if n in produced])


def _legacy_function(f: dict, outputs: tuple[str, ...], path: str) -> LegacyFunction:
    op = f["op"]
    raw = f["raw"]
    meta = {"op_id": op, "name": f["name"], "version": raw.get("version")}
    if op == _BLOCK:
        op_name = _get(raw, "block_function_op_name", str, f"block {f['uid']!r}", path)
        meta["block"] = True
    elif op == _USER:
        op_name = "UserFunction"
    else:
        op_name = OP_NAMES.get(op, f"PrimitiveOp{op}")
    return LegacyFunction(f["uid"], op_name, f["inputs"], outputs, _python_view(f["attrs"]),
                          meta=meta)


def _attach_body(block: LegacyFunction, f: dict, functions: dict, by_uid: dict, variables: dict,
                 producer, path: str, inner: set, inputs_of) -> None:
    raw = f["raw"]
    where = f"block {f['uid']!r}"
    composite = _get(raw, "block_function_composite", dict, where, path)
    root = _get(composite, "root", str, where, path)
    keys = _get(raw, "block_function_composite_arguments_map_keys", list, where, path, [])
    values = _get(raw, "block_function_composite_arguments_map_values", list, where, path, [])
    if len(keys) != len(values) or not all(isinstance(k, str) for k in keys + values):
        raise fail(path, f"{where}: its argument map is malformed")
    if root not in by_uid:
        raise fail(path, f"{where}: its root {root!r} is not one of the model's functions")
    arguments = dict(zip(keys, values))
    body, stack, seen = [], [root], set()
    while stack:                                   # the functions between the root and the
        uid = stack.pop()                          # block's placeholders and leaves
        if uid in seen:
            continue
        seen.add(uid)
        if uid == f["uid"]:
            raise fail(path, f"{where} contains itself")
        body.append(uid)
        for i in by_uid[uid]["inputs"]:
            if i in variables and variables[i].kind != "placeholder":
                continue
            # (a placeholder named by an output's uid stands for that output, read a second
            # time: CNTK 2.7's LSTM(3)(h, c, x) reads its gates' product so, the function
            # computing it is inside the block all the same)
            p = producer(i)
            if p is not None:
                stack.append(p)
    inner.update(body)
    members = [functions[u] for u in by_uid if u in seen]
    available = [n for n in variables] + list(arguments)
    root_outputs = functions[root].outputs
    read = [i for g in members for i in g.inputs if i in variables]
    leaves = OrderedDict((k, variables[k]) for k in list(arguments) + read if k in variables)
    net = LegacyNetwork(composite.get("uid", root), _sort(members, available, path, where),
                        leaves, inputs=list(arguments), outputs=list(root_outputs))
    block.body = net
    block.meta["arguments"] = arguments
    block.meta["root"] = root
    block.inputs = _block_inputs(root, inputs_of, variables, keys, values)


def _block_inputs(root: str, inputs_of, variables: dict, keys: list, values: list) -> tuple:
    """A block's inputs as CNTK 2.7 makes them when it loads the block, whatever order its
    file lists them in: the parameters and constants in the order a walk from the root meets
    them (each function's inputs in turn, depth first), then the values its placeholders are
    mapped to, in the map's order (``PrimitiveFunction.cpp:1255-1277`` builds the block from
    its composite; ``BlockFunction.h:98-146``'s ``DetermineInputs`` over ``composite->Inputs()``,
    ``CompositeFunction.h:150-174, 235-249``).  The file's list is not read: CNTK 2.7 loads
    Stadyn's file of ``GRU(3)(h, x)``, which lists ``[W, b, H, H1, h, x]`` without the
    constant 1 its body reads, as ``[1, b, W, H, H1, h, x]``.  ``inputs_of(uid)`` gives a
    function's inputs: a nested block's as rebuilt (CNTK 2.7 walks the nested block's own
    inputs, not its file's list), or ``None`` for a name that is no function's."""
    met = [i for i in read_order(root, inputs_of)
           if i in variables and variables[i].kind in ("parameter", "constant")]
    order = met + [values[k] for k in range(len(keys)) if values[k] not in met]
    return tuple(order)


def read_order(root: str, inputs_of) -> list[str]:
    """The leaves a walk from the function ``root`` (a uid) meets, each once in the order it
    first meets them: each function's inputs in turn, depth first, a function walked once
    (the order CNTK 2.7 gives a block's parameters and constants, ``CompositeFunction.h:
    150-174, 235-249``).  ``inputs_of(uid)``: the names a function reads (a nested block's as
    CNTK 2.7 rebuilds them), ``None`` where ``uid`` is no function's (a leaf; an output whose
    function is not written yet, a placeholder named by it, counts as a leaf).

    Example:
        >>> funcs = {"Plus1": ["Times2_Output_0", "b"], "Times2": ["W", "x", "W"]}
        >>> read_order("Plus1", funcs.get)
        ['W', 'x', 'b']
    """
    order, seen, walked, stack = [], set(), set(), [root + "_Output_0"]
    while stack:
        name = stack.pop()
        uid = name.rpartition("_Output_")[0]
        read = inputs_of(uid) if uid else None
        if read is not None:                    # (an output, or a placeholder named by one)
            if uid not in walked:
                walked.add(uid)
                stack.extend(reversed(list(read)))
        elif name not in seen:
            seen.add(name)
            order.append(name)
    return order
