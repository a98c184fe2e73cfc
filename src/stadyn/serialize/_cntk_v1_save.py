"""Saving a Stadyn graph as a CNTK v1 model file, as CNTK 2.7's
``cntk.debugging.save_as_legacy_model`` does.

CNTK 2.7 builds the v1 network from the v2 Function graph (``CompositeFunction::
CreateComputationNetwork``); so does this module: the graph is written as a CNTK v2 model
(:func:`._cntk_write.cntk_v2_bytes`), decoded (:mod:`._cntk_format`), and each v2 primitive
function becomes one v1 node (:mod:`._cntk_v1_write`) as CNTK maps it -- blocks (layers) are
inlined, ``NoOp`` and ``Combine`` make no node, the inputs of ``CrossEntropyWithSoftmax``,
``ClassificationError``, ``Logistic`` and ``Clip`` are put in the v1 node's order, every node is
named ``__v2libuid__<uid>__v2libname__<name>`` (which CNTK's loader reads the v2 uid and name
back from), an input gets a ``DynamicAxis`` node (``__noSequenceAxis``, or ``*`` on CNTK's
default sequence axis), and the outputs that other nodes read go to the ``output`` group.
An input with a free dimension is refused with CNTK 2.7's ``ValueError``; a v2 op that has no
v1 node type here (``TopK``, ``Gather``, ``Cast`` ...: CNTK 2.7 writes some of those, but its
own ``load_model`` cannot read them back) is refused with :class:`CntkWriteUnsupported`.
"""

from __future__ import annotations

import os
import re
from typing import Mapping, Sequence

import numpy as np

from .._fileutil import atomic_write
from ..graph import Variable
from ._cntk_format import _decode_file, _model
from ._cntk_v1_write import V1Node, cntk_v1_file_bytes
from ._cntk_write import cntk_v2_bytes
from ._cntk_write_graph import CntkWriteUnsupported

__all__ = ["save_cntk_v1", "cntk_v1_bytes"]

# v2 primitive op -> the v1 node type of no payload that CNTK 2.7 maps it to
_PLAIN = {
    "Negate": "Negate", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "ReLU": "RectifiedLinear",
    "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt", "Floor": "Floor", "Abs": "Abs",
    "Reciprocal": "Reciprocal", "Softmax": "Softmax", "LogSoftmax": "LogSoftmax",
    "Hardmax": "Hardmax", "StableSigmoid": "StableSigmoid", "Plus": "Plus", "Minus": "Minus",
    "ElementTimes": "ElementTimes", "LogPlus": "LogPlus", "Cos": "Cosine", "Sin": "Sin",
    "Sinh": "Sinh", "Cosh": "Cosh", "Asin": "Asin", "Acos": "Acos", "SumAll": "SumElements",
    "StopGradient": "StopGradient", "Pass": "Pass", "CosDistance": "CosDistance",
    "SquaredError": "SquareError", "CrossEntropyWithSoftmax": "CrossEntropyWithSoftmax",
    "ClassificationError": "ClassificationError", "Logistic": "Logistic", "Clip": "Clip",
    "ReconcileDynamicAxis": "ReconcileDynamicAxis", "PackedIndex": "PackedIndex",
    "GatherPacked": "GatherPacked", "ScatterPacked": "ScatterPacked",
}
# (CNTK 2.7 writes Pow, ELU, Asinh and Atanh too, as Pow, ExponentialLinearUnit, Asinh, Atanh,
# but its load_model refuses its own file: "Attempted to instantiate undefined operation Pow.")
# the v1 node's inputs, by the v2 function's (GetPrimitiveFunctionInputsToCNTKNodeInputsIndexMap)
_SWAPPED = {"CrossEntropyWithSoftmax": (1, 0), "ClassificationError": (1, 0, 2),
            "Logistic": (1, 0, 2), "Clip": (1, 2, 0), "GatherPacked": (1, 0),
            "ScatterPacked": (2, 1, 0)}
_POOL_KIND = {0: 1, 1: 2}           # v2 PoolingType Max, Average -> v1 PoolKind
_CHW = 1                            # v1 ImageLayoutKind::CHW


class _Unwritable(CntkWriteUnsupported):
    """A graph with something no v1 node is written for (``op``: what)."""

    def __init__(self, op: str, why: str):
        super().__init__(op, why)
        self.args = (f"no CNTK v1 form for {op}: {why}",)


def _node_name(uid: str, name: str) -> str:
    return f"__v2libuid__{uid}__v2libname__{name}"


def _padded(values, rank: int, fill) -> tuple:
    """A v2 attribute given for the last axes, for all ``rank`` axes (NumPy order)."""
    values = tuple(values)
    return (fill,) * (rank - len(values)) + values


def _v1_axis(axis, op: str) -> int:
    """CNTK's internal axis index of a v2 axis (AsCNTKInternalAxisIdx): a static axis' index
    (column-major) plus 1, 0 for all the static axes."""
    if axis.name == "AllStaticAxes":
        return 0
    if axis.is_dynamic or axis.static_axis_idx < 0:
        raise _Unwritable(op, f"an operation along the axis {axis.name}")
    return axis.static_axis_idx + 1


def _slice(a: dict) -> dict:
    if "axisVec" in a:
        axes, begins, ends = a["axisVec"], a["beginIndexVec"], a["endIndexVec"]
        strides = a.get("sliceStridesVec") or [1] * len(axes)
    else:
        axes, begins, ends = [a["axis"]], [a["beginIndex"]], [a["endIndex"]]
        strides = [a.get("sliceStrides", 1)]
    return {"begin_index": list(begins), "end_index": list(ends),
            "axis": [_v1_axis(x, "Slice") for x in axes], "stride_multiplier": list(strides)}


class _Converter:
    def __init__(self, model, shapes: dict, function: str):
        self.model, self.described = model, function
        self.shapes = dict(shapes)
        self.alias: dict[str, str] = {}        # v2 value name -> the v2 name it stands for
        self.named: dict[str, str] = {}        # v2 value name -> v1 node name
        self.nodes: dict[str, V1Node] = {}
        # (CNTK 2.7 builds the network in the element type of the root's output)
        self.precision = next((v.dtype for v in model.networks["main"].variables.values()
                               if v.kind == "input"), "float32")

    # -- names --------------------------------------------------------------------------------
    def resolve(self, name: str) -> str:
        seen = set()
        while name in self.alias and name not in seen:
            seen.add(name)
            name = self.alias[name]
        if name not in self.named:
            raise _Unwritable(name, "a value no v1 node computes")
        return self.named[name]

    def _resolved(self, name: str) -> str:
        """``name`` followed through the aliases to the first value with a known shape (or to
        the alias chain's end)."""
        seen = set()
        while name not in self.shapes and name in self.alias and name not in seen:
            seen.add(name)
            name = self.alias[name]
        return name

    def shape_of(self, name: str, op: str) -> tuple:
        name = self._resolved(name)
        if name not in self.shapes:     # (named by the op that makes it: a sequence op's)
            maker = re.sub(r"\d+_Output_\d+$", "", name) or name
            raise _Unwritable(maker, f"a sequence op's shape is not known: {name} (read by "
                                     f"{op}) has no shape in the v2 form")
        return self.shapes[name]

    # -- leaves -------------------------------------------------------------------------------
    def leaves(self, net) -> None:
        for key, v in net.variables.items():
            if v.shape is not None and key not in self.shapes:
                self.shapes[key] = tuple(v.shape)
            if v.kind in ("parameter", "constant"):
                node = _node_name(key, v.meta.get("name", ""))
                value = np.asarray(self.model.parameters[key].value)
                lrm = 1.0 if v.kind == "parameter" and v.meta.get("needs_gradient", True) \
                    else 0.0
                self.nodes[node] = V1Node(node, "LearnableParameter", v.dtype,
                                          {"learning_rate_multiplier": lrm, "shape": v.shape,
                                           "value": value})
                self.named[key] = node
            elif v.kind == "input":
                self.input(key, v)

    def input(self, key: str, v) -> None:
        if v.shape is None or any(d < 0 for d in v.shape):
            raise ValueError(f"Function '{self.described}': Cannot save as legacy format, a "
                             "model having inputs with free or inferred static axes.")
        axes = v.meta.get("dynamic_axes", [])
        node = _node_name(key, v.meta.get("name", ""))
        if axes:
            sequence = [a for a in axes if a != "defaultBatchAxis"]
            if len(sequence) > 1 or "defaultBatchAxis" not in axes:
                raise _Unwritable(f"input {v.meta.get('name', key)}",
                                           "dynamic axes other than CNTK's batch and default "
                                           "sequence axes")
            axis = "__noSequenceAxis" if not sequence else \
                "*" if sequence[0] == "defaultDynamicAxis" else sequence[0]
            if axis:        # (CNTK 2.7 makes no DynamicAxis node for a sequence axis named
                # '', a loaded cntk.exe file's input's: CompositeFunction.cpp:501-502)
                self.nodes.setdefault(axis, V1Node(axis, "DynamicAxis", v.dtype))
            kind = "SparseInputValue" if v.meta.get("is_sparse") else "InputValue"
            lrm = 1e-5 if v.meta.get("needs_gradient") else 0.0
            self.nodes[node] = V1Node(node, kind, v.dtype, {"shape": v.shape,
                                                            "dynamic_axis": axis,
                                                            "learning_rate_multiplier": lrm})
        else:                           # (CNTK 2.7: an input with no dynamic axes is a leaf)
            lrm = 1.0 if v.meta.get("needs_gradient") else 0.0
            self.nodes[node] = V1Node(node, "LearnableParameter", v.dtype,
                                      {"learning_rate_multiplier": lrm, "shape": v.shape,
                                       "value": np.zeros(v.shape, v.dtype)})
        self.named[key] = node

    # -- functions ----------------------------------------------------------------------------
    def network(self, net) -> None:
        self.leaves(net)
        for f in net.functions:
            if f.body is not None:
                for placeholder, outer in f.meta.get("arguments", {}).items():
                    self.alias[placeholder] = outer
                self.network(f.body)
                for out, inner in zip(f.outputs, f.body.outputs):
                    self.alias[out] = inner
            elif f.type in ("NoOp", "Combine"):
                for out, i in zip(f.outputs, f.inputs):
                    if out != i:
                        self.alias[out] = i
            else:
                self.function(f)

    def function(self, f) -> None:
        if len(f.outputs) > 1:
            raise _Unwritable(f.type, "an op of several outputs (v1 writes it with "
                                               "an OutputMultiplexer node, not written here)")
        node, t = _node_name(f.name, f.meta.get("name", "")), f.type
        if node in self.nodes:
            raise _Unwritable(t, f"two functions of uid {f.name}")
        kind, attrs = self.node_type(f)
        order = _SWAPPED.get(f.type)
        inputs = [f.inputs[k] for k in order[:len(f.inputs)]] if order else list(f.inputs)
        self.nodes[node] = V1Node(node, kind, self.precision, attrs, tuple(inputs))
        self.named[f.outputs[0]] = node
        if t == "ReconcileDynamicAxis":     # (its value's shape, on the other's axes: the
            value = self._resolved(f.inputs[0])     # delays of sequence.first's and
            if value in self.shapes:                # last's flags)
                self.shapes[f.outputs[0]] = self.shapes[value]

    def node_type(self, f) -> tuple[str, dict]:
        a, t = f.attrs, f.type
        if t in _PLAIN:
            return _PLAIN[t], {}
        if t in ("Times", "TransposeTimes"):
            return t, {"output_rank": a.get("outputRank", 1),
                       "infer_input_rank_to_map": a.get("inferInputRankToMap", -1)
                       if t == "Times" else -1}
        if t == "Convolution":
            return "Convolution", self.convolution(f)
        if t == "Pooling":
            return "Pooling", self.pooling(f)
        if t == "BatchNormalization":
            count = self.model.parameters.get(f.inputs[5]) if len(f.inputs) > 5 else None
            run_count = int(np.asarray(count.value).reshape(-1)[0]) if count is not None else 0
            return "BatchNormalization", {
                "spatial": a["spatial"],
                "normalization_time_constant": a["normalizationTimeConstant"],
                "blend_time_constant": a["blendTimeConstant"], "image_layout": _CHW,
                "run_count": run_count, "epsilon": a["epsilon"],
                # (CNTK's node falls back to its own engine on the CPU, where 2.7 saves)
                "use_cntk_engine": True}
        if t in ("PastValue", "FutureValue"):
            return t, {"time_step": a.get("offset", 1),
                       "shape": self.shape_of(f.inputs[0], t), "initial_state": 0.0}
        if t == "Dropout":
            return "Dropout", {"rng_seed": a.get("rngSeed", 0),
                               "rng_offset": a.get("rngOffset", 0)}
        if t == "Slice":
            return "Slice", _slice(a)
        if t == "ReduceElements":
            axes = a.get("axisVec") or [a["axis"]]
            return "ReduceElements", {"axes": [_v1_axis(x, t) for x in axes],
                                      "operation": a["reductionOpName"],
                                      "keep_dimensions": a.get("reductionKeepDimensions", True)}
        if t == "Splice":
            return "RowStack", {"splice_dim": _v1_axis(a["axis"], t)}
        if t == "Where":                    # (InternalDynamicAxisNameFromDynamicAxes)
            axes = [x.name for x in a["newDynamicAxes"]]
            return "Where", {"dynamic_axis_name": "__noSequenceAxis" if axes == [
                "defaultBatchAxis"] else "*" if axes == ["defaultDynamicAxis",
                                                         "defaultBatchAxis"] else axes[0]}
        if t == "Reshape":
            rank = len(self.shape_of(f.inputs[0], t))
            begin = _v1_axis(a["beginAxis"], t) if "beginAxis" in a else 1
            end = _v1_axis(a["endAxis"], t) if "endAxis" in a else rank + 1
            return "Reshape", {"begin_dim": begin, "end_dim": end,
                               "shape": tuple(0 if d < 0 else d for d in a["newShape"])}
        raise _Unwritable(t, "no CNTK v1 node type is written for it")

    def convolution(self, f) -> dict:
        a = f.attrs
        if a.get("groups", 1) != 1:
            # (v1's ConvolutionNode keeps no groups: CNTK 2.7 writes the node without them,
            # and its load_model refuses its own file)
            raise _Unwritable("Convolution", "a grouped convolution (CNTK 2.7 writes it without "
                                             "its groups, and its load_model refuses the file: "
                                             "'Mismatching outputShape and mapCount')")
        if a.get("sequential"):
            raise _Unwritable("Convolution", "a sequential convolution")
        w = self.shape_of(f.inputs[0], "Convolution")
        rank = len(a["kernelShape"])
        maps = w[:len(w) - rank]
        return {"kernel_shape": tuple(w[len(w) - rank:]),
                "map_count": tuple(maps) + (1,) * (rank - len(maps)),
                "strides": _padded(a["strides"], rank, 1),
                "sharing": list(_padded(a["sharing"], rank, True)),
                "auto_padding": list(_padded(a["autoPadding"], rank, False)),
                "lower_pad": _padded(a["lowerPad"], rank, 0),
                "upper_pad": _padded(a["upperPad"], rank, 0), "pool_kind": 0,
                "image_layout": _CHW,
                "max_temp_mem_size_in_samples": a.get("maxTempMemSizeInSamples", 0),
                "transpose": bool(a.get("transpose", False)),
                "output_shape": tuple(a.get("outputShape", (0,))),
                "ceil_out_dim": False, "include_pad": False, "convolution_2d": False,
                "dilation": tuple(a.get("dilation", (1,)))}

    def pooling(self, f) -> dict:
        a = f.attrs
        rank = len(self.shape_of(f.inputs[0], "Pooling"))
        return {"kernel_shape": _padded(a["poolingWindowShape"], rank, 1), "map_count": (1,),
                "strides": _padded(a["strides"], rank, 1),
                "sharing": [True] * rank,
                "auto_padding": list(_padded(a["autoPadding"], rank, False)),
                "lower_pad": _padded(a["lowerPad"], rank, 0),
                "upper_pad": _padded(a["upperPad"], rank, 0),
                "pool_kind": _POOL_KIND[a["poolingType"]], "image_layout": _CHW,
                "max_temp_mem_size_in_samples": 0, "transpose": False, "output_shape": (0,),
                "ceil_out_dim": a.get("ceilOutDim", False),
                "include_pad": a.get("includePad", False)}

    def finish(self, count: int) -> tuple[list[V1Node], dict]:
        """The nodes and root groups, ``count`` the number of outputs the caller gave (the
        first outputs of the file's root function, which may have more: an LSTM's h, c)."""
        for n in self.nodes.values():
            if n.inputs:
                n.inputs = tuple(self.resolve(i) for i in n.inputs)
        net = self.model.networks["main"]
        roots = [self.resolve(o) for o in net.outputs[:count]]
        read = {i for n in self.nodes.values() for i in n.inputs}
        output = [r for r in dict.fromkeys(roots) if r in read]
        return list(self.nodes.values()), {"output": output}


def cntk_v1_bytes(outputs: Sequence[Variable], inputs: Mapping[str, Variable],
                  function: str = "the model", **names) -> bytes:
    """The bytes of a CNTK v1 model file computing ``outputs`` from ``inputs``;
    ``names`` are those of :func:`._cntk_write.cntk_v2_bytes` (the graph's names, layers and
    CNTK ops).  Raises :class:`CntkWriteUnsupported` for a graph it cannot write and CNTK
    2.7's ``ValueError`` for an input with a free dimension (naming ``function``)."""
    shapes: dict = {}
    v2 = cntk_v2_bytes(outputs, inputs, shapes=shapes, **names)
    model = _model("<graph>", _decode_file("<graph>", v2))
    converter = _Converter(model, shapes, function)
    converter.network(model.networks["main"])
    return cntk_v1_file_bytes(*converter.finish(len(outputs)))


def save_cntk_v1(path: str | os.PathLike, outputs: Sequence[Variable],
                 inputs: Mapping[str, Variable], **names) -> None:
    """Write ``outputs`` (computed from ``inputs``) as a CNTK v1 model file at ``path`` (what
    CNTK 2.7's ``save_as_legacy_model`` writes and its ``load_model`` reads); see
    :func:`cntk_v1_bytes`.  Nothing is written when the graph cannot be.

    Example:
        >>> import os, tempfile, numpy as np, stadyn as sd, stadyn.functions as F
        >>> from stadyn.serialize._cntk_v1_format import read_cntk_v1
        >>> x = sd.Variable((1, 3))
        >>> w = sd.Variable.from_numpy_array(np.ones((3, 2), np.float32), need_grad=True)
        >>> path = os.path.join(tempfile.mkdtemp(), "m.dnn")
        >>> save_cntk_v1(path, [F.relu(F.affine(x, w))], {"x": x})
        >>> [f.type for f in read_cntk_v1(path).networks["main"].functions]
        ['DynamicAxis', 'Times', 'RectifiedLinear']
    """
    data = cntk_v1_bytes(outputs, inputs, **names)

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(data)
    atomic_write(os.fspath(path), write)
