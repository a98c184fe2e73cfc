"""Writing CNTK v1 model files (the format ``cntk.exe`` reads, and CNTK 2.7's
``save_as_legacy_model`` writes): the inverse of :func:`._cntk_v1_format.read_cntk_v1`.

Nodes are given as :class:`V1Node` -- a name, a v1 node type (``"LearnableParameter"``,
``"InputValue"``, ``"Times"``, ``"RectifiedLinear"`` ...), the precision, the node's payload as
the reader gives it (shapes in NumPy order) and its inputs by name -- and written at model
version 31, the version CNTK 2.7 writes, in CNTK's layout: the nodes sorted by name (CNTK
keeps them in a ``std::map``), each with its precision, type, name and payload, then the
relations in the same order, then the root groups.  The layout of each field is described in
:mod:`._cntk_v1_format`.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

__all__ = ["V1Node", "V1_VERSION", "cntk_v1_file_bytes", "V1_PAYLOAD_TYPES"]

V1_VERSION = 31
_PRECISION = {"float32": "float", "float64": "double", "float16": "half"}
_GROUPS = (("feature", "FeatureNodes"), ("label", "LabelNodes"),
           ("criterion", "CriterionNodes"), ("evaluation", "EvalNodes"),
           ("output", "OutputNodes"))


@dataclass
class V1Node:
    """One node of a v1 network: ``attrs`` is its payload as
    :func:`stadyn.serialize._cntk_v1_format.read_cntk_v1` gives it.

    Example:
        >>> V1Node("z", "RectifiedLinear", inputs=("x",)).type
        'RectifiedLinear'
    """

    name: str
    type: str
    precision: str = "float32"
    attrs: dict = field(default_factory=dict)
    inputs: tuple = ()


class _Out:
    """CNTK's ``File`` binary stream: little-endian numbers, UTF-16 strings ending in 0."""

    def __init__(self):
        self.parts: list[bytes] = []

    def pack(self, fmt: str, *values) -> None:
        self.parts.append(struct.pack("<" + fmt, *values))

    def u64(self, v: int) -> None: self.pack("Q", int(v))
    def i64(self, v: int) -> None: self.pack("q", int(v))
    def u32(self, v: int) -> None: self.pack("I", int(v))
    def i32(self, v: int) -> None: self.pack("i", int(v))
    def f32(self, v: float) -> None: self.pack("f", float(v))
    def f64(self, v: float) -> None: self.pack("d", float(v))
    def boolean(self, v: bool) -> None: self.pack("B", 1 if v else 0)

    def wstr(self, s: str) -> None:
        self.parts.append(s.encode("utf-16-le") + b"\0\0")

    def shape(self, dims) -> None:
        """A TensorShape, given in NumPy order, stored column-major."""
        dims = tuple(reversed(tuple(dims)))
        self.u32(len(dims))
        for d in dims:
            self.u32(d)

    def bools(self, values) -> None:
        values = list(values)[::-1]
        self.u64(len(values))
        for v in values:
            self.boolean(v)

    def matrix(self, value: np.ndarray, elem: str) -> None:
        """A dense matrix: ``rows`` is the first CNTK (last NumPy) dimension."""
        value = np.ascontiguousarray(value, dtype=elem)
        rows = value.shape[-1] if value.ndim else 1
        cols = value.size // rows if rows else 0
        self.parts.append(b"d")
        self.wstr("BMAT")
        self.u64(value.dtype.itemsize)
        self.wstr("unnamed")
        self.i32(0)
        self.u64(rows)
        self.u64(cols)
        self.parts.append(value.astype(value.dtype.newbyteorder("<")).tobytes())
        self.wstr("EMAT")


# ---------------------------------------------------------------------------------------------
# Payloads, by node type (the reader's attributes, written back at version 31)
# ---------------------------------------------------------------------------------------------
def _learnable(o: _Out, a: dict, elem: str) -> None:
    o.f32(a["learning_rate_multiplier"])
    o.shape(a["shape"])
    value = np.asarray(a["value"])
    if value.size != math.prod(a["shape"]):
        raise ValueError(f"a parameter of shape {a['shape']} holds {value.size} values")
    o.matrix(value.reshape(a["shape"]), elem)


def _input(o: _Out, a: dict, elem: str) -> None:
    o.u64(0)                                    # (rows and columns: unused since version 3)
    o.u64(0)
    o.shape(a["shape"])
    axis = a.get("dynamic_axis")
    o.u32(0 if axis is None else 1)
    if axis is not None:
        o.wstr(axis)
    o.f32(a.get("learning_rate_multiplier", 0.0))


def _conv_base(o: _Out, a: dict, elem: str) -> None:
    o.shape(a["kernel_shape"])
    o.shape(a["map_count"])
    o.shape(a["strides"])
    o.bools(a["sharing"])
    o.bools(a["auto_padding"])
    o.shape(a["lower_pad"])
    o.shape(a["upper_pad"])
    o.i32(a.get("pool_kind", 0))
    o.i32(a.get("image_layout", 1))
    o.u64(a.get("max_temp_mem_size_in_samples", 0))
    o.boolean(a.get("transpose", False))
    o.shape(a.get("output_shape", (0,)))
    o.boolean(a.get("ceil_out_dim", False))
    o.boolean(a.get("include_pad", False))


def _convolution(o: _Out, a: dict, elem: str) -> None:
    _conv_base(o, a, elem)
    o.boolean(a.get("convolution_2d", False))
    o.shape(a.get("dilation", (1,)))


def _batch_norm(o: _Out, a: dict, elem: str) -> None:
    o.boolean(a["spatial"])
    o.f64(a["normalization_time_constant"])
    o.f64(a["blend_time_constant"])
    o.i32(a.get("image_layout", 0))
    o.u64(a.get("run_count", 0))
    o.f64(a["epsilon"])
    o.boolean(a.get("use_cntk_engine", False))


def _times(o: _Out, a: dict, elem: str) -> None:
    o.u64(a["output_rank"])
    o.i32(a.get("infer_input_rank_to_map", -1))


def _dropout(o: _Out, a: dict, elem: str) -> None:
    o.u64(a.get("rng_seed", 0))
    o.u64(a.get("rng_offset", 0))


def _reshape(o: _Out, a: dict, elem: str) -> None:
    o.i32(a["begin_dim"])
    o.i32(a["end_dim"])
    o.shape(a["shape"])


def _slice(o: _Out, a: dict, elem: str) -> None:
    o.i32(len(a["begin_index"]))
    for b, e, axis, s in zip(a["begin_index"], a["end_index"], a["axis"],
                             a["stride_multiplier"]):
        o.i64(b)
        o.i64(e - b)
        o.i32(axis)
        o.i32(s)


def _row_stack(o: _Out, a: dict, elem: str) -> None:
    o.i32(a["splice_dim"])


def _transpose(o: _Out, a: dict, elem: str) -> None:
    perm = a.get("permutation")
    o.i32(0 if perm else a["axis1"])
    o.i32(0 if perm else a["axis2"])
    if perm:
        o.u64(len(perm))
        for p in perm:
            o.u64(p)


def _delay(o: _Out, a: dict, elem: str) -> None:
    o.i32(a["time_step"])
    o.shape(a["shape"])
    (o.f64 if elem == "float64" else o.f32)(a.get("initial_state", 0.0))


def _reduce(o: _Out, a: dict, elem: str) -> None:
    o.i32(len(a["axes"]))
    for axis in a["axes"]:
        o.i32(axis)
    o.wstr(a["operation"])
    o.boolean(a.get("keep_dimensions", True))


def _where(o: _Out, a: dict, elem: str) -> None:
    o.wstr(a["dynamic_axis_name"])


_PAYLOADS: dict[str, Callable[[_Out, dict, str], None]] = {
    "LearnableParameter": _learnable, "InputValue": _input, "SparseInputValue": _input,
    "Convolution": _convolution, "Pooling": _conv_base, "MaxUnpooling": _conv_base,
    "BatchNormalization": _batch_norm, "Times": _times, "TransposeTimes": _times,
    "Dropout": _dropout, "Reshape": _reshape, "Slice": _slice, "RowStack": _row_stack,
    "TransposeDimensions": _transpose, "PastValue": _delay, "FutureValue": _delay,
    "ReduceElements": _reduce, "Where": _where,
}
#: the node types whose payload this writer writes (others are written with none)
V1_PAYLOAD_TYPES = frozenset(_PAYLOADS)


def cntk_v1_file_bytes(nodes: list[V1Node], groups: "dict[str, list[str]] | None" = None
                       ) -> bytes:
    """The bytes of a v1 model file holding ``nodes`` (any order: the file sorts them by name,
    as CNTK does) and the root ``groups`` (``"feature"``, ``"label"``, ``"criterion"``,
    ``"evaluation"``, ``"output"``: node names).

    Example:
        >>> import numpy as np
        >>> from stadyn.serialize._cntk_v1_format import V1_MAGIC
        >>> data = cntk_v1_file_bytes([
        ...     V1Node("b", "LearnableParameter", attrs={"learning_rate_multiplier": 1.0,
        ...            "shape": (2,), "value": np.zeros(2, np.float32)}),
        ...     V1Node("z", "RectifiedLinear", inputs=("b",))])
        >>> data.startswith(V1_MAGIC)
        True
    """
    groups = groups or {}
    ordered = sorted(nodes, key=lambda n: n.name)
    o = _Out()
    o.wstr("BCN")
    o.wstr("BVersion")
    o.u64(V1_VERSION)
    o.wstr("EVersion")
    o.u64(len(ordered))
    o.wstr("BNodeList")
    for n in ordered:
        elem = np.dtype(n.precision).name
        o.wstr(_PRECISION[elem])
        o.wstr(n.type)
        o.wstr(n.name)
        write: Any = _PAYLOADS.get(n.type)
        if write is not None:
            write(o, n.attrs, elem)
    o.wstr("ENodeList")
    o.wstr("BRelation")
    for n in ordered:
        o.wstr(n.name)
        o.u64(len(n.inputs))
        for i in n.inputs:
            o.wstr(i)
    o.wstr("ERelation")
    o.wstr("BRootNodes")
    for key, marker in _GROUPS:
        names = list(groups.get(key, ()))
        o.wstr("B" + marker)
        o.u64(len(names))
        for name in names:
            o.wstr(name)
        o.wstr("E" + marker)
    o.wstr("ERootNodes")
    o.wstr("ECN")
    return b"".join(o.parts)
