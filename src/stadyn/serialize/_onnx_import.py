"""ONNX import: an ONNX model rebuilt as a Stadyn static graph of catalog ops.

Which ONNX op types can be imported, and how, is registered against the catalog's ops
(:mod:`.op_rules`); this module only walks the ONNX graph.  Float initializers become
parameters (registry names = initializer names, so they can be trained further); other
initializers and ``Constant`` outputs are constants, and mappings may read them as arrays
(shapes, pads, axes).  Symbolic input dimensions are fixed when the graph is built (``dims``).
"""

from __future__ import annotations

import heapq
import math
import os
from collections import Counter, OrderedDict
from typing import Any, Mapping

import numpy as np
import torch

from .._errors import ModelFileError, StadynError
from .._fileutil import refuse_special_file
from ..graph import Variable, auto_forward, get_current_context, name_scope
from ..ops import CATALOG
from ..parametric import ParameterRegistry, parameter_registry
from ._network import Network
from ._onnx_api import ImportedNode, OnnxUnsupported
from .op_rules import Unmapped, rules_for

__all__ = ["import_onnx", "import_table", "onnx_mapping_table", "UnsupportedModelError"]


class UnsupportedModelError(ModelFileError):
    """The model uses ONNX ops, dtypes or attribute combinations that Stadyn does not map.

    ``needs_constant`` is set when the only problem is a graph input whose value a mapping
    needs at build time (see :func:`import_onnx`'s ``constants``)."""

    needs_constant: str | None = None


def _import_rules(spec) -> dict[str, Any]:
    rules = rules_for(spec)
    found = rules.onnx_import if rules is not None else None
    return {} if found is None or isinstance(found, Unmapped) else found


def import_table() -> dict[str, tuple[str, Any]]:
    """``{onnx_op_type: (catalog op name, build)}`` gathered from the catalog's op rules.

    Example:
        >>> import_table()["Conv"][0]
        'convolution'
    """
    table: dict[str, tuple[str, Any]] = {}
    for name, spec in CATALOG.items():
        for op_type, build in _import_rules(spec).items():
            if op_type in table:
                raise StadynError(f"ONNX op {op_type} is mapped by two catalog ops: "
                                  f"{table[op_type][0]} and {name}")
            table[op_type] = (name, build)
    return table


def _attribute_value(attr) -> Any:
    from onnx import AttributeProto, helper, numpy_helper
    if attr.type == AttributeProto.TENSOR:
        return numpy_helper.to_array(attr.t)
    if attr.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS, AttributeProto.SPARSE_TENSOR,
                     AttributeProto.SPARSE_TENSORS, AttributeProto.TENSORS,
                     AttributeProto.TYPE_PROTO, AttributeProto.TYPE_PROTOS):
        raise OnnxUnsupported(f"attribute {attr.name!r} of type "
                              f"{AttributeProto.AttributeType.Name(attr.type)}")
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
    return value


class _Node(ImportedNode):
    def __init__(self, importer: "_Importer", proto, opset: int):
        self._imp = importer
        self._proto = proto
        self.op_type = proto.op_type
        self.name = proto.name
        self.opset = opset
        self.attrs = {a.name: _attribute_value(a) for a in proto.attribute}
        outs = list(proto.output)
        while outs and not outs[-1]:
            outs.pop()
        self.n_outputs = len(outs)

    @property
    def n_inputs(self) -> int:
        return len(self._proto.input)

    def _name(self, i: int) -> str:
        if not self.has(i):
            raise OnnxUnsupported(f"input {i} is absent")
        return self._proto.input[i]

    def has(self, i):
        return i < len(self._proto.input) and bool(self._proto.input[i])

    def var(self, i, need_grad=None):
        return self._imp.variable(self._name(i), need_grad)

    def const(self, i, default=None):
        if not self.has(i):
            return default
        name = self._name(i)
        if name not in self._imp.consts:
            hint = (f"; pass constants={{{name!r}: ...}} to import_onnx"
                    if name in self._imp.graph_inputs else "")
            raise OnnxUnsupported(f"input {i} ({name!r}) must be known when the graph is built "
                                  f"(an initializer or a Constant){hint}", needs_constant=name)
        return self._imp.consts[name]

    def is_const(self, i):
        return self.has(i) and self._proto.input[i] in self._imp.consts

    def shape(self, i):
        name = self._name(i)
        if name in self._imp.env:
            return tuple(self._imp.env[name].shape)
        return tuple(self._imp.consts[name].shape)

    def dtype(self, i):
        name = self._name(i)
        if name in self._imp.env:
            d = self._imp.env[name].dtype
            if not isinstance(d, np.dtype):
                raise OnnxUnsupported(f"input {i} has dtype {d}")
            return d
        return self._imp.consts[name].dtype

    def constant_variable(self, value):
        return self._imp.constant(np.asarray(value))


class _Importer:
    def __init__(self, model, source: str, dims: Mapping[str, int], registry: ParameterRegistry,
                 constants: Mapping[str, Any]):
        self.model = model
        self.source = source
        self.dims = dict(dims)
        self.bound = {k: np.asarray(v) for k, v in constants.items()}
        self.graph_inputs = {vi.name for vi in model.graph.input}
        self.registry = registry
        self.env: dict[str, Variable] = {}
        self.consts: dict[str, np.ndarray] = {}
        self.const_of: dict[int, np.ndarray] = {}

    def fail(self, message: str, unsupported: bool = False) -> ModelFileError:
        cls = UnsupportedModelError if unsupported else ModelFileError
        return cls(f"{self.source}: {message}")

    # -- values ---------------------------------------------------------------------------------
    def constant(self, value: np.ndarray) -> Variable:
        v = _leaf(value, need_grad=False)
        self.const_of[id(v)] = value
        return v

    def variable(self, name: str, need_grad: bool | None) -> Variable:
        var = self.env.get(name)
        if var is not None:
            return var
        value = self.consts.get(name)
        if value is None:
            raise OnnxUnsupported(f"{name!r} is used before it is computed")
        if value.dtype not in _DTYPES:
            raise OnnxUnsupported(f"{name!r} has dtype {value.dtype}")
        if value.dtype.kind == "f":
            var = _leaf(value, need_grad=True if need_grad is None else need_grad)
            self.registry.set(name, var)
        else:
            var = self.constant(value)
        self.env[name] = var
        return var

    # -- the graph ------------------------------------------------------------------------------
    def run(self) -> Network:
        from onnx import numpy_helper
        graph = self.model.graph
        for name, size in self.dims.items():
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
                raise self.fail(f"dims[{name!r}] must be a positive whole number, got {size!r}")
        opset = self._opset()
        table = import_table()
        missing = Counter(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
                          for n in graph.node
                          if n.domain not in ("", "ai.onnx") or n.op_type not in table)
        if missing:
            listed = ", ".join(f"{op} ({k} node{'s' if k > 1 else ''})"
                               for op, k in sorted(missing.items()))
            raise self.fail(f"unsupported ONNX ops: {listed}", unsupported=True)
        for init in graph.initializer:
            try:
                self.consts[init.name] = numpy_helper.to_array(init)
            except Exception as exc:  # noqa: BLE001 - a malformed or external tensor
                raise self.fail(f"initializer {init.name!r} cannot be read ({exc})") from exc
        unknown = sorted(set(self.bound) - self.graph_inputs)
        if unknown:
            raise self.fail(f"constants given for {unknown}, which are not graph inputs")
        for name, value in self.bound.items():
            _check_dtype(value.dtype, f"constant {name!r}", self)
            self.consts[name] = value
        order = self._order(graph)
        declared = [(vi, self._input_type(vi)) for vi in graph.input if vi.name not in self.consts]
        self._check_size(declared)
        inputs: OrderedDict[str, Variable] = OrderedDict()
        for vi, (shape, dtype) in declared:
            inputs[vi.name] = self.env[vi.name] = _leaf(np.zeros(shape, dtype=dtype),
                                                        need_grad=False)
        for k in order:
            self._node(graph.node[k], k, opset, table)
        outputs: OrderedDict[str, Variable] = OrderedDict()
        for vi in graph.output:
            if vi.name not in self.env and vi.name not in self.consts:
                raise self.fail(f"output {vi.name!r} is not computed by the graph")
            outputs[vi.name] = self.variable(vi.name, None)
        info = {"kind": "ONNX model (imported)", "opset": opset,
                "producer": self.model.producer_name or "?"}
        return Network(inputs, outputs, self.registry, source=self.source, info=info)

    def _opset(self) -> int:
        for imp in self.model.opset_import:
            if imp.domain in ("", "ai.onnx"):
                return int(imp.version)
        raise self.fail("the model imports no version of the default ONNX domain")

    def _input_type(self, vi) -> tuple[list[int], np.dtype]:
        """The shape (symbolic dimensions sized by ``dims``) and dtype a graph input declares."""
        from onnx import helper
        t = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if t is None:
            raise self.fail(f"input {vi.name!r} is not a tensor", unsupported=True)
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(t.elem_type))
        except Exception as exc:  # noqa: BLE001 - an element type NumPy lacks
            raise self.fail(f"input {vi.name!r} has element type {t.elem_type}",
                            unsupported=True) from exc
        shape = []
        for d in t.shape.dim:
            if d.HasField("dim_value"):
                if d.dim_value < 0:
                    raise self.fail(f"input {vi.name!r} declares a negative size "
                                    f"{d.dim_value}")
                shape.append(int(d.dim_value))
            else:
                shape.append(int(self.dims.get(d.dim_param, 1)))
        _check_dtype(dtype, f"input {vi.name!r}", self)
        return shape, dtype

    def _check_size(self, declared: list) -> None:
        """Refuse inputs whose declared sizes add up to more than this machine's memory before
        allocating them (a file may declare any size)."""
        sizes = [(math.prod(shape) * dtype.itemsize, vi.name, shape, dtype)
                 for vi, (shape, dtype) in declared]
        total = sum(s[0] for s in sizes)
        limit = _memory_bytes()
        if total <= limit:
            return
        nbytes, name, shape, dtype = max(sizes)
        sized = [f"{k}={v}" for k, v in self.dims.items()]
        raise self.fail(f"the inputs declare {_bytes(total)}, more than this machine's memory "
                        f"({_bytes(limit)}): the largest, {name!r}, is {tuple(shape)} {dtype} "
                        f"({_bytes(nbytes)})"
                        + (f" with {', '.join(sized)}" if sized else ""))

    def _order(self, graph) -> list[int]:
        """The node indices in an order that computes every value before its use (ONNX files
        list them so; a file that does not is sorted).  A cycle, or a value nothing computes,
        is a :class:`ModelFileError` naming the nodes."""
        known = {i.name for i in graph.initializer} | {i.name for i in graph.input} | {""}
        producer: dict[str, int] = {}
        for k, proto in enumerate(graph.node):
            for name in proto.output:
                if name in producer or (name and name in known):
                    raise self.fail(f"{_label(proto, k)}: output {name!r} is already computed by "
                                    "another node or given as an input or initializer")
                if name:
                    producer[name] = k
        needs = []
        for k, proto in enumerate(graph.node):
            for name in proto.input:
                if name not in known and name not in producer:
                    raise self.fail(f"{_label(proto, k)}: input {name!r} is neither a graph "
                                    "input, an initializer nor any node's output")
            needs.append({producer[n] for n in proto.input if n in producer})
        users: dict[int, list[int]] = {k: [] for k in range(len(graph.node))}
        for k, deps in enumerate(needs):
            for d in deps:
                users[d].append(k)
        waiting = [len(deps) for deps in needs]
        ready = [k for k, n in enumerate(waiting) if n == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            k = heapq.heappop(ready)
            order.append(k)
            for u in users[k]:
                waiting[u] -= 1
                if waiting[u] == 0:
                    heapq.heappush(ready, u)
        if len(order) < len(graph.node):
            cycle = _a_cycle({k for k, n in enumerate(waiting) if n > 0}, needs)
            steps = " -> ".join(_label(graph.node[k], k) for k in cycle + cycle[:1])
            raise self.fail(f"the graph has a cycle (each node needs the next one's output): "
                            f"{steps}")
        return order

    def _node(self, proto, k: int, opset: int, table) -> None:
        label = _label(proto, k)
        op_name, build = table[proto.op_type]
        try:
            node = _Node(self, proto, opset)
            with name_scope(proto.name or f"{proto.op_type}_{k}", absolute=True):
                result = build(node)
        except OnnxUnsupported as exc:
            error = self.fail(f"{label}: cannot be mapped: {exc}", unsupported=True)
            error.needs_constant = exc.needs_constant
            raise error from None
        except StadynError as exc:
            raise self.fail(f"{label}: {exc}") from exc
        except (ValueError, TypeError, IndexError, KeyError, RuntimeError) as exc:
            raise self.fail(f"{label}: {type(exc).__name__}: {exc}") from exc
        results = [result] if isinstance(result, Variable) else list(result)
        names = list(proto.output)[:node.n_outputs]
        if len(results) != len(names):
            raise self.fail(f"{label}: the mapping to {op_name} gave {len(results)} outputs, "
                            f"the node has {len(names)}")
        for name, var in zip(names, results):
            if not name:
                continue
            self.env[name] = var
            if id(var) in self.const_of:
                self.consts[name] = self.const_of[id(var)]


def _label(proto, k: int) -> str:
    return f"node {k} ({proto.op_type}{' ' + repr(proto.name) if proto.name else ''})"


def _a_cycle(stuck: set[int], needs: list[set[int]]) -> list[int]:
    """One cycle among ``stuck`` nodes (each waits for another stuck one), in the order in which
    each node needs the next one's output."""
    k = min(stuck)
    path: list[int] = []
    seen: dict[int, int] = {}
    while k not in seen:
        seen[k] = len(path)
        path.append(k)
        k = min(needs[k] & stuck)
    return path[seen[k]:]


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):   # not on this platform
        return 1 << 40


def _bytes(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"   # pragma: no cover


_DTYPES = {np.dtype(t) for t in ("float32", "float64", "float16", "int8", "int16", "int32",
                                  "int64", "uint8", "bool")}


def _check_dtype(dtype: np.dtype, what: str, importer: "_Importer") -> None:
    if np.dtype(dtype) not in _DTYPES:
        raise importer.fail(f"{what} has dtype {dtype}, which Stadyn has no Variable type for",
                            unsupported=True)


def _leaf(value: np.ndarray, need_grad: bool) -> Variable:
    # from_tensor, not from_numpy_array: the latter turns 0-d arrays into shape (1,).
    t = torch.as_tensor(np.array(value, order="C")).to(get_current_context().device)
    return Variable.from_tensor(t, need_grad=need_grad)


def import_onnx(model: Any, dims: Mapping[str, int] | None = None,
                registry: ParameterRegistry | None = None,
                constants: Mapping[str, Any] | None = None) -> Network:
    """Rebuild an ONNX model (a path or an ``onnx.ModelProto``) as a Stadyn :class:`Network`.

    Each ONNX node becomes catalog ops, as the ops' own import mappings say.  Float
    initializers become parameters of ``registry`` (a new one by default) named as in the
    model; symbolic input dimensions take their sizes from ``dims`` (1 where not given).
    ``constants`` binds graph inputs to values known when the graph is built (ONNX models may
    pass shapes, axes or pads as inputs; a mapping that needs one names it in its error).
    Batch normalisation follows the phase (running statistics when the network is called).
    A model holding ops that no catalog op maps raises :class:`UnsupportedModelError` listing
    them; a malformed file raises :class:`stadyn.ModelFileError`.

    Example:
        >>> import os, tempfile, numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((2, 2))
        >>> path = os.path.join(tempfile.mkdtemp(), "m.onnx")
        >>> sd.export_onnx(path, {"y": F.tanh(x) * 2.0}, {"x": x})
        >>> net = sd.import_onnx(path, dims={"batch": 1})
        >>> net(x=np.array([[0.0, 1.0]]))["y"].round(4)
        array([[0.    , 1.5232]], dtype=float32)
    """
    from .._extras import require
    onnx = require("onnx", "onnx", "ONNX import")
    if isinstance(model, onnx.ModelProto):
        proto, source = model, f"<onnx model {model.graph.name or ''}>".replace(" >", ">")
    else:
        source = os.fspath(model)
        if not os.path.exists(source):
            raise ModelFileError(f"{source}: no such file")
        refuse_special_file(source, ModelFileError)
        try:
            proto = onnx.load(source)
        except Exception as exc:  # noqa: BLE001 - protobuf raises several types
            raise ModelFileError(f"{source}: not a readable ONNX model ({exc})") from exc
    registry = registry if registry is not None else ParameterRegistry()
    with auto_forward(False), parameter_registry(registry):
        return _Importer(proto, source, dims or {}, registry, constants or {}).run()


def onnx_mapping_table() -> str:
    """The catalog's ONNX mappings as a Markdown table (op, what it exports as, which ONNX op
    types import into it), one row per op in alphabetical order (not the order the op modules
    happen to be imported in), read from the op rules; ``docs/model-files.md`` holds it.

    Example:
        >>> print(next(row for row in onnx_mapping_table().splitlines() if "`relu`" in row))
        | `relu` | Relu | Relu |
    """
    lines = ["| catalog op | exported as | imported from |", "|---|---|---|"]
    for name, spec in sorted(CATALOG.items()):
        rules = rules_for(spec)
        export = rules.onnx_export if rules is not None else None
        doc = (((export.__doc__ or "").strip().splitlines() or ["?"])[0] if callable(export)
               else "(none)")
        imports = ", ".join(sorted(_import_rules(spec))) or "-"
        doc = (doc or "?").replace("|", "\\|")
        lines.append(f"| `{name}` | {doc} | {imports} |")
    return "\n".join(lines)
