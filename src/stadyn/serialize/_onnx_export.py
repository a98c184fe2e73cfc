"""ONNX export of static graphs built from catalog ops.

The exporter walks the graph in order and, for each node, calls the export rule registered
against the node's op (:mod:`.op_rules`) with an :class:`Emitter`.  The result is an
inference graph: batch normalisation uses the running statistics whatever ``batch_stat`` says,
dropout is the identity.  The first axis of every input is the dynamic ``batch`` dimension.
Parameters become initializers under their scope paths.  Of a :class:`Network` (a loaded model
file), the outputs named are exported, by default its predictions (:func:`inference_outputs`),
with only the inputs they need.
"""

from __future__ import annotations

import os
from collections import Counter, OrderedDict
from typing import Any

import numpy as np

from .._fileutil import atomic_write
from ..graph import Variable, output_key, topological_nodes, value_key
from ._graph import collect_graph
from ._network import Network
from ._onnx_api import Emitter, ExportError, OnnxUnsupported
from .op_rules import Unmapped, rules_for

__all__ = ["export_onnx", "to_onnx_model", "inference_outputs", "DEFAULT_OPSET",
           "SUPPORTED_OPSETS"]

#: Op categories whose result makes an output a criterion (a loss or a metric, which needs
#: labels) rather than a prediction.
CRITERION_CATEGORIES = frozenset({"loss", "metric"})

DEFAULT_OPSET = 17
SUPPORTED_OPSETS = range(17, 22)


class _Builder(Emitter):
    """The :class:`Emitter` behind :func:`to_onnx_model`: collects nodes and initializers."""

    def __init__(self, opset: int):
        import onnx
        self._onnx = onnx
        self.opset = opset
        self.nodes: list[Any] = []
        self.initializers: dict[str, np.ndarray] = {}
        self._shapes: dict[str, tuple[int, ...]] = {}
        self._dtypes: dict[str, np.dtype] = {}
        self._batch: dict[str, bool] = {}
        self._count = 0
        self.scope = ""
        self.stadyn_op = ""

    # -- Emitter --------------------------------------------------------------------------------
    def _fresh(self, stem: str) -> str:
        self._count += 1
        prefix = f"{self.scope}/" if self.scope else ""
        return f"{prefix}{stem}:{self._count}"

    def op(self, op_type, inputs, n_outputs=1, **attrs):
        outs = [self._fresh(op_type) for _ in range(n_outputs)]
        node = self._onnx.helper.make_node(op_type, [str(i) for i in inputs], outs,
                                           name=self._fresh(f"{self.stadyn_op}.{op_type}"))
        schema = self._schema(op_type)
        for key, value in attrs.items():
            if value is None:
                continue
            node.attribute.append(self._attribute(key, value, schema))
        self.nodes.append(node)
        return outs[0] if n_outputs == 1 else outs

    def const(self, value, dtype=None):
        arr = np.asarray(value)
        if dtype is not None:
            arr = arr.astype(dtype)
        elif arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        elif arr.dtype.kind in "iu" and arr.dtype != np.int64 and not isinstance(
                value, np.ndarray):
            arr = arr.astype(np.int64)
        name = self._fresh("const")
        self.initializers[name] = arr
        self.declare(name, arr.shape, arr.dtype, False)
        return name

    def shape(self, name):
        try:
            return self._shapes[name]
        except KeyError:
            raise OnnxUnsupported(f"internal: the shape of {name!r} is not known") from None

    def dtype(self, name):
        try:
            return self._dtypes[name]
        except KeyError:
            raise OnnxUnsupported(f"internal: the dtype of {name!r} is not known") from None

    def batch(self, name):
        return self._batch.get(name, False)

    # -- bookkeeping ----------------------------------------------------------------------------
    def declare(self, name: str, shape, dtype, batch: bool) -> None:
        self._shapes[name] = tuple(int(s) for s in shape)
        self._dtypes[name] = np.dtype(dtype)
        self._batch[name] = bool(batch) and len(shape) > 0

    def _schema(self, op_type: str):
        try:
            return self._onnx.defs.get_schema(op_type, self.opset)
        except Exception:  # noqa: BLE001 - unknown op: let the checker report it
            return None

    def _attribute(self, key: str, value: Any, schema):
        helper = self._onnx.helper
        A = self._onnx.AttributeProto
        want = None
        if schema is not None and key in schema.attributes:
            want = schema.attributes[key].type
        if isinstance(value, np.dtype) or (key == "to" and isinstance(value, type)):
            value = helper.np_dtype_to_tensor_dtype(np.dtype(value))
        if isinstance(value, np.ndarray) and want != A.INTS and want != A.FLOATS:
            return helper.make_attribute(key, self._onnx.numpy_helper.from_array(value))
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, (tuple, list, np.ndarray)):
            value = [v.item() if isinstance(v, np.generic) else v for v in list(value)]
            if want == A.FLOATS:
                value = [float(v) for v in value]
            elif want == A.INTS:
                value = [int(v) for v in value]
        elif want == A.FLOAT:
            value = float(value)
        elif want == A.INT:
            value = int(value)
        return helper.make_attribute(key, value)


def _literal_input(g: _Builder, value: Any) -> str:
    if isinstance(value, (bool, int, float, np.generic, np.ndarray)):
        return g.const(np.asarray(value, dtype=np.float32) if isinstance(value, float)
                       else value)
    raise OnnxUnsupported(f"an input given as a {type(value).__name__} (not a Variable)")


def inference_outputs(net: Network) -> list[str]:
    """The names of ``net``'s predictions: its outputs that no loss or metric op computes
    (a criterion such as BrainScript's ``ce`` or ``errs`` needs the labels); every output if
    all are criteria.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> x, t = sd.Variable((2, 3)), sd.Variable((2, 1), dtype="int64")
        >>> z = F.relu(x)
        >>> net = sd.Network({"x": x, "t": t}, {"z": z, "ce": F.softmax_cross_entropy(z, t)})
        >>> inference_outputs(net)
        ['z']
    """
    def is_criterion(v: Variable) -> bool:
        return any(n.spec.category in CRITERION_CATEGORIES for n in topological_nodes([v]))
    names = [n for n, v in net.outputs.items() if not is_criterion(v)]
    return names or list(net.outputs)


def _chosen(model: Any, inputs: Any, outputs: Any) -> tuple[Any, Any]:
    """What to export: ``model`` (Variables, or a Network with ``outputs`` naming some of its
    outputs) or, without a model, ``outputs`` (Variables)."""
    if model is None:
        if outputs is None:
            raise ExportError("nothing to export: give the model (a Network or output Variables)")
        return outputs, inputs
    if not isinstance(model, Network):
        if outputs is not None:
            raise ExportError("outputs= names outputs of a Network (a loaded model); pass "
                              "Variables as the model itself")
        return model, inputs
    names = inference_outputs(model) if outputs is None else (
        [outputs] if isinstance(outputs, str) else list(outputs))
    unknown = [n for n in names if n not in model.outputs]
    if unknown or not names:
        raise ExportError(f"{model.source or 'the network'} has no output(s) {unknown}; its "
                          f"outputs are {', '.join(model.outputs)}")
    chosen = OrderedDict((n, model.outputs[n]) for n in names)
    return Network(model.inputs if inputs is None else inputs, chosen, model.registry,
                   source=model.source), None


def to_onnx_model(model: Any = None, inputs: Any = None, opset: int = DEFAULT_OPSET,
                  dynamic_batch: bool = True, check: bool = True, *, outputs: Any = None):
    """The ``onnx.ModelProto`` of the graph of ``model`` (see :func:`export_onnx`)."""
    from .._extras import require
    onnx = require("onnx", "onnx", "ONNX export")
    from onnx import helper

    if opset not in SUPPORTED_OPSETS:
        raise ExportError(f"opset {opset} is not supported; choose one of "
                          f"{SUPPORTED_OPSETS.start}..{SUPPORTED_OPSETS.stop - 1}")
    parts = collect_graph(*_chosen(model, inputs, outputs), lengths="input")
    g = _Builder(opset)
    names: dict[int, str] = {}
    for name, v in parts.inputs.items():
        names[id(v)] = name
        g.declare(name, v.shape, _np_dtype(v, "input", f" {name!r}"), dynamic_batch)
    for name, v in parts.parameters.items():
        g.initializers[name] = _array(v)
        g.declare(name, v.shape, _np_dtype(v, "parameter", f" {name!r}"), False)
        names[id(v)] = name
    for name, view in parts.views:
        names[id(view)] = name
    for k, v in enumerate(parts.constants):
        cname = f"constant:{k}"
        g.initializers[cname] = _array(v)
        g.declare(cname, v.shape, v.dtype, False)
        names[id(v)] = cname

    produced: dict[Any, str] = {}
    for node in parts.nodes:
        spec = node.spec
        where = f" in scope '{node.scope}'" if node.scope else ""
        rules = rules_for(spec)
        export = rules.onnx_export if rules is not None else None
        if not callable(export):
            why = f": {export.reason}" if isinstance(export, Unmapped) else ""
            raise ExportError(f"op '{spec.name}'{where} has no ONNX export mapping{why}")
        ins, attrs = spec.split_arguments(node.args, node.kwargs)
        in_names = []
        g.scope, g.stadyn_op = node.scope, spec.name
        try:
            for v in ins:
                if v is None:
                    in_names.append("")
                elif isinstance(v, Variable):
                    in_names.append(names[id(v)] if v.parent is None else produced[value_key(v)])
                else:
                    in_names.append(_literal_input(g, v))
            result = export(g, in_names, attrs)
        except OnnxUnsupported as exc:
            raise ExportError(f"op '{spec.name}'{where} cannot be exported to ONNX: "
                              f"{exc}") from None
        out_names = [result] if isinstance(result, str) else list(result)
        if len(out_names) != len(node._outputs):
            raise ExportError(f"op '{spec.name}'{where}: its ONNX mapping gave {len(out_names)} "
                              f"outputs, the op has {len(node._outputs)}")
        batch_sizes = {g.shape(n)[0] for n in in_names if n and g.batch(n)}
        for i, (ref, oname) in enumerate(zip(node._outputs, out_names)):
            produced[output_key(node, i)] = oname
            v = ref()
            if v is not None and oname not in g.initializers and oname not in parts.inputs:
                shape = tuple(v._shape)
                g.declare(oname, shape, _np_dtype(v, spec.name, where),
                          bool(shape) and shape[0] in batch_sizes)
    g.scope = g.stadyn_op = ""

    graph_outputs = []
    renames: dict[str, str] = {}
    taken = set(parts.inputs) | set(g.initializers)
    for name, v in parts.outputs.items():
        internal = names[id(v)] if v.parent is None else produced[value_key(v)]
        if internal in taken or internal in renames:
            g.nodes.append(helper.make_node("Identity", [renames.get(internal, internal)], [name],
                                            name=f"output.{name}"))
        else:
            renames[internal] = name
        g.declare(name, v.shape, v.dtype, g.batch(internal))
        graph_outputs.append(name)
    for n in g.nodes:
        n.input[:] = [renames.get(i, i) for i in n.input]
        n.output[:] = [renames.get(o, o) for o in n.output]
    _fold_constants(g, set(graph_outputs))

    def value_info(name: str, batch: bool):
        shape = list(g.shape(name))
        if batch and shape:
            shape[0] = "batch"
        return helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(g.dtype(name)), shape)

    graph = helper.make_graph(
        list(g.nodes), "stadyn",
        [value_info(n, dynamic_batch) for n in parts.inputs],
        [value_info(n, dynamic_batch and g.batch(n)) for n in graph_outputs],
        [onnx.numpy_helper.from_array(np.array(a, order="C"), name)
         for name, a in g.initializers.items()])
    opsets = [helper.make_opsetid("", opset)]
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="stadyn",
                              ir_version=helper.find_min_ir_version_for(opsets))
    if check:
        try:
            onnx.checker.check_model(proto, full_check=True)
        except Exception as exc:  # noqa: BLE001 - a mapping emitted something invalid
            raise ExportError(f"the exported model does not pass onnx.checker: {exc}") from exc
    return proto


def _array(v: Variable) -> np.ndarray:
    return np.array(v.d, copy=True)


def _np_dtype(v: Variable, op: str, where: str) -> np.dtype:
    if not isinstance(v.dtype, np.dtype):
        raise ExportError(f"op '{op}'{where}: a {v.dtype} tensor has no ONNX export here")
    return v.dtype


def _fold_constants(g: _Builder, keep: set[str]) -> None:
    """Fold ``Reshape``/``Transpose`` of an initializer used only there into the initializer
    (a parameter keeps its name, now in the layout ONNX wants), then drop unused initializers."""
    uses = Counter(i for n in g.nodes for i in n.input)
    for name in keep:
        uses[name] += 1
    changed = True
    while changed:
        changed = False
        for node in list(g.nodes):
            src = node.input[0] if node.input else ""
            if src not in g.initializers or uses[src] != 1 or node.output[0] in keep:
                continue
            value = g.initializers[src]
            if node.op_type == "Reshape" and node.input[1] in g.initializers:
                target = [int(s) for s in g.initializers[node.input[1]]]
                target = [value.shape[i] if s == 0 else s for i, s in enumerate(target)]
                folded = value.reshape(target)
            elif node.op_type == "Transpose":
                perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), None)
                folded = np.transpose(value, perm)
            else:
                continue
            out = node.output[0]
            g.initializers[src] = np.array(folded, order="C")
            g.nodes.remove(node)
            for n in g.nodes:
                n.input[:] = [src if i == out else i for i in n.input]
            uses = Counter(i for n in g.nodes for i in n.input)
            for name in keep:
                uses[name] += 1
            changed = True
    for name in list(g.initializers):
        if uses[name] == 0:
            del g.initializers[name]


def export_onnx(path: str | os.PathLike, model: Any = None, inputs: Any = None,
                opset: int = DEFAULT_OPSET, dynamic_batch: bool = True, *,
                outputs: Any = None) -> None:
    """Write the graph of ``model`` as an ONNX model (inference mode).

    ``model`` and ``inputs`` are a Variable, a list or a dict (name -> Variable) of the outputs
    and inputs; without ``inputs`` the name-less leaves are the inputs and the named ones
    (registry parameters) become initializers.  (``outputs=`` may stand for ``model`` here.)
    ``model`` may also be a :class:`~stadyn.serialize.Network` (``sd.load(...)``): then
    ``outputs`` names the outputs to export (a name or a list), by default its predictions
    (:func:`inference_outputs`: a BrainScript model's ``z``, not its criteria ``ce`` and
    ``errs``), and the inputs are those they need (``features``, not ``labels``).
    Batch normalisation exports with
    its running statistics and dropout as the identity; with ``dynamic_batch`` the first axis of
    every input (and of outputs that follow it) is the symbolic dimension ``batch``.  The model
    passes ``onnx.checker.check_model(full_check=True)``.  An op without an export mapping, or
    a call its mapping cannot express, raises :class:`ExportError` naming the op and its scope.
    ONNX has no sequence axis: a sequence input ``x`` is its padded values ``(B, T, ...)`` and
    the graph's reads of its lengths are the int64 input ``x_lengths`` ``(B,)`` (unless
    ``inputs`` names them itself, e.g. ``{"x": x, "n": x.sequence_lengths}``); feed both.

    Example:
        >>> import os, tempfile, numpy as np, onnx, stadyn as sd, stadyn.functions as F
        >>> import stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     x = sd.Variable((2, 3))
        ...     y = F.relu(PF.affine(x, 4, name="fc"))
        ...     path = os.path.join(tempfile.mkdtemp(), "net.onnx")
        ...     sd.export_onnx(path, {"y": y}, {"x": x})
        >>> m = onnx.load(path)
        >>> [n.op_type for n in m.graph.node], sorted(i.name for i in m.graph.initializer)
        (['Gemm', 'Relu'], ['fc/affine/W', 'fc/affine/b'])
    """
    proto = to_onnx_model(model, inputs, opset=opset, dynamic_batch=dynamic_batch,
                          outputs=outputs)
    import onnx
    atomic_write(path, lambda tmp: onnx.save(proto, tmp))
