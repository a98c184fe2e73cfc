"""CNTK v1 model files (BrainScript's ``cntk.exe``, and CNTK 2.x's ``save_as_legacy_model``),
decoded into the legacy form (:mod:`._legacy_ir`) without CNTK.

The file is CNTK's ``File`` binary stream: numbers little-endian (``size_t`` 8 bytes, ``int`` 4,
``bool`` 1), strings UTF-16LE ending in a 0 code unit, section markers written as such strings.
Its layout (``ComputationNetwork::Save``):

    BCN  BVersion <version: size_t> EVersion  <node count: size_t>
    BNodeList  per node: [precision "float"|"double"|"half" (version >= 7)] <type> <name> <payload>
    ENodeList
    BRelation  per node: <name> <input count: size_t> <input names>  ERelation
    BRootNodes  BFeatureNodes <n> <names> EFeatureNodes  BLabelNodes ... ELabelNodes
      BCriterionNodes (older: BCriteriaNodes) ... BEvalNodes ... BOutputNodes ...  ERootNodes
    ECN

A node's payload depends on its type and on the file's version (1-31; CNTK 2.7 writes 31,
BrainScript builds of 2016-2017 wrote 10-18): :data:`_PAYLOADS` reads the types of CNTK's image
and text examples -- parameters, inputs, convolution and pooling (ND and the old 2-D kinds),
batch normalisation in all its versions, times, reshape, slice, splice, transpose, reductions,
recurrence, dropout, precomputed mean/std -- and :data:`_PLAIN` lists the types that store
nothing.  A type outside both is refused, naming it.  A matrix is ``'d' BMAT <element size>
"unnamed" <format: int> <rows> <cols> <values, column-major> EMAT``; a tensor shape is ``<rank:
uint32> <dims: uint32...>`` with dimensions column-major (like CNTK 2's), so shapes and arrays
here are given reversed, in NumPy order, as CNTK 2's Python API shows them.
"""

from __future__ import annotations

import math
import os
import struct
from collections import OrderedDict
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from ._legacy_ir import (MAX_NAME_CHARS, MAX_RANK, LegacyFunction, LegacyModel, LegacyNetwork,
                         LegacyParameter, LegacyVariable, fail, read_limited, sort_functions)

__all__ = ["read_cntk_v1", "is_cntk_v1_file", "cntk_v1_roots", "V1_MAGIC"]

V1_MAGIC = "BCN".encode("utf-16-le") + b"\0\0"
_MAX_VERSION = 31
_ELEM = {"float": "float32", "double": "float64", "half": "float16"}


def is_cntk_v1_file(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts like a CNTK v1 model (``BCN`` in UTF-16)."""
    return head.startswith(V1_MAGIC)


class _Reader:
    """Bounded reads from the file's bytes; running past the end is a ModelFileError."""

    def __init__(self, data: bytes, path: str):
        self.data, self.path, self.pos = memoryview(data), path, 0

    def error(self, message: str):
        return fail(self.path, f"byte {self.pos}: {message}")

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise self.error(f"truncated (needs {n} more bytes, {len(self.data) - self.pos} left)")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str):
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))[0]

    def u64(self) -> int: return self.unpack("Q")
    def i64(self) -> int: return self.unpack("q")
    def u32(self) -> int: return self.unpack("I")
    def i32(self) -> int: return self.unpack("i")
    def f32(self) -> float: return self.unpack("f")
    def f64(self) -> float: return self.unpack("d")

    def boolean(self) -> bool:
        value = self.unpack("B")
        if value > 1:
            raise self.error(f"a bool holds {value}")
        return bool(value)

    def wstr(self) -> str:
        data, start = self.data, self.pos
        end = start
        limit = min(len(data) - 1, start + 2 * MAX_NAME_CHARS)
        while end < limit and (data[end] or data[end + 1]):
            end += 2
        if end >= limit:
            raise self.error("an unterminated string")
        self.pos = end + 2
        try:
            return bytes(data[start:end]).decode("utf-16-le")
        except UnicodeDecodeError:
            raise self.error("a string is not UTF-16") from None

    def peek_marker(self, marker: str) -> bool:
        """Consume ``marker`` if it is next (CNTK's TryGetMarker)."""
        raw = marker.encode("utf-16-le") + b"\0\0"
        if bytes(self.data[self.pos:self.pos + len(raw)]) == raw:
            self.pos += len(raw)
            return True
        return False

    def marker(self, *markers: str) -> str:
        at = self.pos
        for m in markers:
            if self.peek_marker(m):
                return m
        self.pos = at
        raise self.error(f"expected the marker {' or '.join(markers)}")

    def shape(self, legacy: bool = False) -> tuple[int, ...]:
        """A TensorShape, column-major as stored; ``legacy`` accepts the old size_t W,H,C form."""
        rank = self.u32()
        if rank == 0:
            return ()
        dim0 = self.u32()
        if legacy and dim0 == 0:                    # old format: size_t W, size_t, size_t
            third, first = self.u64(), self.u64()
            return (first, rank, third)
        if rank > MAX_RANK:
            raise self.error(f"a tensor of rank {rank}")
        dims = [dim0] + [self.u32() for _ in range(rank - 1)]
        return tuple(dims)

    def bools(self) -> list[bool]:
        n = self.u64()
        if n > len(self.data) - self.pos:
            raise self.error(f"a list of {n} bools is longer than the file")
        return [self.boolean() for _ in range(n)]

    def matrix(self) -> np.ndarray:
        """A dense matrix as an array of shape (cols, rows): its column-major values in order."""
        kind = bytes(self.take(1))
        if kind == b"s":
            raise self.error("a sparse matrix (not read)")
        if kind != b"d":
            raise self.error(f"a matrix of unknown kind {kind!r}")
        self.marker("BMAT")
        elsize = self.u64()
        dtype = {4: "<f4", 8: "<f8", 2: "<f2"}.get(elsize)
        if dtype is None:
            raise self.error(f"a matrix of {elsize}-byte elements")
        self.wstr()                              # the matrix name ("unnamed")
        self.i32()                               # format
        rows, cols = self.u64(), self.u64()
        if rows and cols > (len(self.data) - self.pos) // (rows * elsize):
            raise self.error(f"a {rows} x {cols} matrix is larger than the file")
        values = np.frombuffer(self.take(rows * cols * elsize), dtype=dtype)
        self.marker("EMAT")
        return values.astype(dtype[1:]).reshape(cols, rows)


def _row_major(dims) -> tuple[int, ...]:
    return tuple(int(d) for d in reversed(dims))


# ---------------------------------------------------------------------------------------------
# Payloads, by node type: each reads the node's fields and returns its attributes
# ---------------------------------------------------------------------------------------------
def _learnable(r: _Reader, v: int, elem: str) -> dict:
    if v >= 3:
        lrm = r.f32()
        dims = r.shape()
    else:
        lrm = float(r.boolean())
        rows, cols = r.u64(), r.u64()
        if rows:
            dims = (rows, cols)
        else:
            dims = r.shape(legacy=True)
            if cols > 1:
                dims = dims + (cols,)
    value = r.matrix()
    if value.size != math.prod(dims):
        raise r.error(f"a parameter of shape {_row_major(dims)} holds {value.size} values")
    return {"learning_rate_multiplier": lrm, "shape": _row_major(dims),
            "value": value.reshape(_row_major(dims))}


def _input(r: _Reader, v: int, elem: str) -> dict:
    rows, _ = r.u64(), r.u64()
    dims = r.shape(legacy=True)
    if rows and rows != math.prod(dims):
        dims = (rows,)
    attrs: dict[str, Any] = {"shape": _row_major(dims)}
    if v >= 8:
        n = r.u32()
        if n > 1:
            raise r.error(f"an input with {n} dynamic axes")
        if n == 1:
            attrs["dynamic_axis"] = r.wstr()
    if v >= 10:
        attrs["learning_rate_multiplier"] = r.f32()
    return attrs


def _conv_base(r: _Reader, v: int) -> dict:
    a: dict[str, Any] = {}
    if v >= 5:
        a["kernel_shape"] = _row_major(r.shape())
        a["map_count"] = _row_major(r.shape())
        a["strides"] = _row_major(r.shape())
        a["sharing"] = r.bools()[::-1]
        a["auto_padding"] = r.bools()[::-1]
        a["lower_pad"] = _row_major(r.shape())
        a["upper_pad"] = _row_major(r.shape())
        a["pool_kind"] = r.i32()
        a["image_layout"] = r.i32()
        a["max_temp_mem_size_in_samples"] = r.u64()
    if v >= 9:
        a["transpose"] = r.boolean()
    if v >= 20:
        a["output_shape"] = _row_major(r.shape())
    if v >= 21:
        a["ceil_out_dim"] = r.boolean()
    if v >= 23:
        a["include_pad"] = r.boolean()
    return a


def _convolution(r: _Reader, v: int, elem: str) -> dict:
    a = _conv_base(r, v)
    if v < 5:
        kw, kh, sw, sh = r.u64(), r.u64(), r.u64(), r.u64()
        a.update(kernel_shape=(1, kh, kw), map_count=(r.u32(),), strides=(1, sh, sw))
        a["image_layout"] = r.u32()
        a["auto_padding"] = [r.boolean()]
        a["max_temp_mem_size_in_samples"] = r.u64()
        a["convolution_2d"] = True
    else:
        a["convolution_2d"] = r.boolean()
        if v >= 18:
            a["dilation"] = _row_major(r.shape())
    return a


def _old_pooling(r: _Reader, v: int, elem: str) -> dict:
    width, layout = r.u32(), r.u32()
    return {"window_width": width, "image_layout": layout, "window_height": r.u64(),
            "horizontal_subsample": r.u64(), "vertical_subsample": r.u64()}


def _batch_norm(r: _Reader, v: int, elem: str) -> dict:
    a: dict[str, Any] = {}
    if v >= 6:
        a["spatial"] = r.boolean()
        a["normalization_time_constant"] = r.f64()
        a["blend_time_constant"] = r.f64()
        a["image_layout"] = r.i32()
        if v >= 13:
            if v == 19:
                a["run_count_is_zero"] = r.boolean()
            else:
                a["run_count"] = r.u64()
        else:
            a["minibatch_count"] = r.u64()
        a["epsilon"] = r.f64()
        a["use_cntk_engine"] = r.boolean()
    else:
        written, readable = r.i32(), r.i32()
        if readable > written:
            raise r.error("a corrupt batch-normalization version")
        a["eval"] = r.boolean()
        a["spatial"] = r.boolean()
        key = "normalization_time_constant" if written >= 0x00010004 else "exp_avg_factor"
        a[key] = r.f64()
        if written >= 0x00010002:
            a["image_layout"] = r.i32()
            a["minibatch_count"] = r.u64()
        if written >= 0x00010003:
            a["epsilon"] = r.f64()
            a["use_cntk_engine"] = r.boolean()
    if v < 13:
        # before version 13 the fourth statistic input held the running inverse standard
        # deviation, not the variance (CNTK converts it when it loads the model)
        a["running_inverse_std"] = True
    return a


def _times(r: _Reader, v: int, elem: str) -> dict:
    a = {"output_rank": r.u64() if v >= 3 else 1}
    if v >= 12:
        a["infer_input_rank_to_map"] = r.i32()
    return a


def _dropout(r: _Reader, v: int, elem: str) -> dict:
    if v < 16:
        return {}
    if v == 16:
        raise r.error("a Dropout node of model version 16 (its seed's size depends on the "
                      "platform that wrote it)")
    return {"rng_seed": r.u64(), "rng_offset": r.u64()}


def _reshape(r: _Reader, v: int, elem: str) -> dict:
    return {"begin_dim": r.i32(), "end_dim": r.i32(), "shape": _row_major(r.shape())}


def _slice(r: _Reader, v: int, elem: str) -> dict:
    n = r.i32() if v >= 22 else 1
    if not 1 <= n <= MAX_RANK:
        raise r.error(f"a Slice over {n} axes")
    begin, end, axis, strides = [], [], [], []
    for _ in range(n):
        b, height = r.i64(), r.i64()
        begin.append(b)
        end.append(b + height)
        axis.append(r.i32() if v >= 3 else 1)
        strides.append(r.i32() if v >= 27 else 1)
    return {"begin_index": begin, "end_index": end, "axis": axis, "stride_multiplier": strides}


def _row_stack(r: _Reader, v: int, elem: str) -> dict:
    return {"splice_dim": r.i32() if v >= 3 else 1}


def _transpose(r: _Reader, v: int, elem: str) -> dict:
    if v < 3:
        return {"axis1": 1, "axis2": 2}
    a: dict[str, Any] = {"axis1": r.i32(), "axis2": r.i32()}
    if v >= 25 and a["axis1"] == 0 and a["axis2"] == 0:
        n = r.u64()
        if n > MAX_RANK:
            raise r.error(f"a permutation of {n} axes")
        a["permutation"] = [r.u64() for _ in range(n)]
    return a


def _delay(r: _Reader, v: int, elem: str) -> dict:
    a: dict[str, Any] = {"time_step": r.i32()}
    if v > 3:
        a["shape"] = _row_major(r.shape())
    else:
        a["shape"] = (r.u64(),)
        r.u64()
    if v >= 2:
        a["initial_state"] = r.f64() if elem == "float64" else r.f32()
    return a


def _reduce(r: _Reader, v: int, elem: str) -> dict:
    n = r.i32() if v >= 27 else 1
    if not 0 <= n <= MAX_RANK:
        raise r.error(f"a reduction over {n} axes")
    a: dict[str, Any] = {"axes": [r.i32() for _ in range(n)], "operation": r.wstr()}
    if v >= 24:
        a["keep_dimensions"] = r.boolean()
    return a


def _where(r: _Reader, v: int, elem: str) -> dict:
    # (WhereNode::Save: the name of the dynamic axis it makes, from version 11)
    return {"dynamic_axis_name": r.wstr() if v >= 11 else "WhereNodeAxis"}


def _precomputed(r: _Reader, v: int, elem: str) -> dict:
    computed = r.boolean()
    value = r.matrix()
    return {"has_computed": computed, "value": value.reshape(-1)}


_PAYLOADS: dict[str, Callable[[_Reader, int, str], dict]] = {
    "LearnableParameter": _learnable, "InputValue": _input, "SparseInputValue": _input,
    "Convolution": _convolution,
    "Pooling": lambda r, v, e: _conv_base(r, v), "MaxUnpooling": lambda r, v, e: _conv_base(r, v),
    "MaxPooling": _old_pooling, "AveragePooling": _old_pooling,
    "BatchNormalization": _batch_norm, "Times": _times, "TransposeTimes": _times,
    "Dropout": _dropout, "Reshape": _reshape, "Slice": _slice, "RowStack": _row_stack,
    "TransposeDimensions": _transpose, "PastValue": _delay, "FutureValue": _delay,
    "ReduceElements": _reduce, "Mean": _precomputed, "InvStdDev": _precomputed,
    "Where": _where,
}
# node types whose payload is empty (no Save of their own or of a base class)
_PLAIN = frozenset(
    "Plus Minus ElementTimes DiagTimes SumElements SumColumnElements Negate Sigmoid Tanh "
    "RectifiedLinear Exp Log Abs Sqrt Reciprocal Floor Cosine Sin Sinh Cosh Asin Acos Asinh Atanh "
    "Softmax LogSoftmax Hardmax Clip Pow LogPlus CrossEntropyWithSoftmax CrossEntropy SquareError "
    "Logistic ClassificationError ErrorPrediction ExponentialLinearUnit StableSigmoid Pass "
    "StopGradient CosDistance KhatriRaoProduct MatrixL1Reg MatrixL2Reg PerDimMeanVarNormalization "
    "ReconcileDynamicAxis Cast Gather PackedIndex GatherPacked ScatterPacked DynamicAxis "
    # (ComparisonNode and IfNode save nothing of their own: NonlinearityNodes.h:563-632, 704-779)
    "Less Equal Greater GreaterEqual NotEqual LessEqual If".split())
_DELAYS = ("PastValue", "FutureValue")


# ---------------------------------------------------------------------------------------------
# The file
# ---------------------------------------------------------------------------------------------
def read_cntk_v1(path: str | os.PathLike) -> LegacyModel:
    """Decode a CNTK v1 model file (see the module docstring).

    The model is one network ``"main"``: ``LearnableParameter`` nodes are parameters (keyed by
    node name; ``need_grad`` when their learning-rate multiplier is not 0), ``InputValue`` and
    ``SparseInputValue`` nodes inputs, every other node a function named like the node with its
    type (``"Convolution"``, ``"RectifiedLinear"``...) and its payload as ``attrs``.  The root
    groups (feature, label, criterion, evaluation, output nodes) are in ``network.attrs``.
    """
    path = os.fspath(path)
    r = _Reader(read_limited(path), path)
    if not r.peek_marker("BCN"):
        raise fail(path, "not a CNTK v1 model file (no BCN marker)")
    version = 1
    if r.peek_marker("BVersion"):
        version = r.u64()
        r.marker("EVersion")
    if not 1 <= version <= _MAX_VERSION:
        raise fail(path, f"model version {version} (this reader knows versions 1-{_MAX_VERSION})")
    count = r.u64()
    if count > len(r.data) // 8:
        raise fail(path, f"declares {count} nodes, more than the file can hold")
    r.marker("BNodeList")
    nodes: OrderedDict[str, tuple[str, str, dict]] = OrderedDict()
    default_elem = "float32"
    for _ in range(count):
        elem = default_elem
        if version >= 7:
            precision = r.wstr()
            if precision not in _ELEM:
                raise r.error(f"unknown node precision {precision!r}")
            elem = _ELEM[precision]
        kind, name = r.wstr(), r.wstr()
        if name in nodes:
            raise r.error(f"node {name!r} is stored twice")
        if kind in _PAYLOADS:
            attrs = _PAYLOADS[kind](r, version, elem)
        elif kind in _PLAIN:
            attrs = {}
        else:
            raise r.error(f"node {name!r} has type {kind!r}, which this reader does not know")
        if version < 7 and "value" in attrs:
            default_elem = str(attrs["value"].dtype)
        nodes[name] = (kind, elem, attrs)
    r.marker("ENodeList")
    r.marker("BRelation")
    inputs: dict[str, tuple[str, ...]] = {}
    for _ in range(count):
        name, n = r.wstr(), r.u64()
        if name not in nodes or name in inputs:
            raise r.error(f"the relations name {name!r}, not a node (or twice)")
        if n > len(r.data) - r.pos:
            raise r.error(f"node {name!r} declares {n} inputs")
        children = tuple(r.wstr() for _ in range(n))
        for c in children:
            if c not in nodes:
                raise r.error(f"node {name!r} reads {c!r}, which is not a node")
        inputs[name] = children
    r.marker("ERelation")
    groups = _root_groups(r)
    r.marker("ECN")
    if r.pos != len(r.data):
        raise r.error(f"{len(r.data) - r.pos} bytes follow the end of the model")
    return _model(path, version, nodes, inputs, groups)


def _root_groups(r: _Reader) -> dict[str, list[str]]:
    r.marker("BRootNodes")
    groups: dict[str, list[str]] = {}

    def names() -> list[str]:
        n = r.u64()
        if n > len(r.data) - r.pos:
            raise r.error(f"a node group of {n} names")
        return [r.wstr() for _ in range(n)]

    if r.peek_marker("BFeatureNodes"):
        groups["feature"] = names()
        r.marker("EFeatureNodes")
    if r.peek_marker("BLabelNodes"):
        groups["label"] = names()
    r.marker("ELabelNodes")
    if r.peek_marker("BCriterionNodes") or r.peek_marker("BCriteriaNodes"):
        groups["criterion"] = names()
        r.marker("ECriteriaNodes", "ECriterionNodes")
    if r.peek_marker("BNodesReqMultiSeqHandling"):
        names()
        r.marker("ENodesReqMultiSeqHandling")
    for key, begin, end in (("evaluation", "BEvalNodes", "EEvalNodes"),
                            ("output", "BOutputNodes", "EOutputNodes")):
        if r.peek_marker(begin):
            groups[key] = names()
            r.marker(end)
    if r.peek_marker("BPairNodes"):
        if names():
            raise r.error("pair nodes (no longer supported by CNTK)")
        r.marker("EPairNodes")
    r.marker("ERootNodes")
    return groups


def _v2_names(name: str) -> dict:
    """CNTK 2's legacy writer names nodes ``__v2libuid__<uid>__v2libname__<name>``; CNTK's loader
    takes the uid and the name back from it."""
    head, sep, rest = name.partition("__v2libuid__")
    uid, sep2, v2name = rest.partition("__v2libname__")
    if head or not sep or not sep2:
        return {}
    return {"v2_uid": uid, "v2_name": v2name}


def _model(path: str, version: int, nodes: dict, inputs: dict, groups: dict) -> LegacyModel:
    variables: OrderedDict[str, LegacyVariable] = OrderedDict()
    params: OrderedDict[str, LegacyParameter] = OrderedDict()
    functions: list[LegacyFunction] = []
    for name, (kind, elem, attrs) in nodes.items():
        if kind == "LearnableParameter":
            value = attrs.pop("value")
            lrm = attrs["learning_rate_multiplier"]
            variables[name] = LegacyVariable(name, "parameter", attrs["shape"], elem,
                                             dict(_v2_names(name), learning_rate_multiplier=lrm))
            params[name] = LegacyParameter(name, value.astype(elem, copy=False), lrm != 0)
        elif kind in ("InputValue", "SparseInputValue"):
            meta = dict(attrs, sparse=kind == "SparseInputValue", **_v2_names(name))
            variables[name] = LegacyVariable(name, "input", meta.pop("shape"), elem, meta)
        else:
            functions.append(LegacyFunction(name, kind, inputs.get(name, ()), (name,), attrs,
                                            meta=dict(_v2_names(name), precision=elem)))
    for group, members in groups.items():
        for n in members:
            if n not in nodes:
                raise fail(path, f"the {group} nodes name {n!r}, which is not a node")
    # recurrence (PastValue/FutureValue) closes loops: order the rest, delays read later steps
    relaxed = [replace(f, inputs=()) if f.type in _DELAYS else f for f in functions]
    order = sort_functions(relaxed, list(variables), path, "the model")
    by_name = {f.name: f for f in functions}
    net = LegacyNetwork("main", [by_name[f.name] for f in order], variables,
                        attrs={"groups": groups})
    net.inputs = [n for n, v in variables.items() if v.kind == "input"]
    read = {i for f in functions for i in f.inputs}
    net.outputs = list(groups.get("output") or
                       groups.get("criterion", []) + groups.get("evaluation", []) or
                       [f.name for f in net.functions if f.name not in read and f.inputs])
    return LegacyModel("cntk-v1", path, OrderedDict(main=net), params,
                       {"version": version, "groups": groups})


# the nodes cntk.exe computes before training (PreComputedNodeBase): roots whoever reads them
_PRECOMPUTED = frozenset({"Mean", "InvStdDev"})


def cntk_v1_roots(net: LegacyNetwork) -> list[str]:
    """The nodes of a v1 network (as :func:`read_cntk_v1` gives it) that CNTK 2.7's
    ``load_model`` gives as the outputs of the ``Combine`` it returns: those no node reads, the
    criterion, evaluation and output nodes and the nodes computed before training
    (``Mean``, ``InvStdDev``), leaves left out, by name (``ComputationNetwork::
    DetermineSetOfAllRoots``; ``01_OneHidden.dnn``'s ``ce``, ``errs``, ``top5Errs``, ``z.z``).

    Example:
        >>> from stadyn.serialize import LegacyFunction, LegacyNetwork, cntk_v1_roots
        >>> net = LegacyNetwork("main", [LegacyFunction("z", "Plus", ("x", "b"), ("z",)),
        ...                              LegacyFunction("ce", "CrossEntropyWithSoftmax",
        ...                                             ("y", "z"), ("ce",))],
        ...                     attrs={"groups": {"output": ["z"], "criterion": ["ce"]}})
        >>> cntk_v1_roots(net)
        ['ce', 'z']
    """
    groups = net.attrs.get("groups") or {}
    read = {i for f in net.functions for i in f.inputs}
    computed = {f.name: f for f in net.functions if f.inputs}
    roots = {n for n in computed if n not in read}
    roots.update(n for key in ("criterion", "evaluation", "output") for n in groups.get(key, ()))
    roots.update(n for n, f in computed.items() if f.type in _PRECOMPUTED)
    return sorted(n for n in roots if n in computed)
