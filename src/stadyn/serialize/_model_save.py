"""Writing Stadyn model files (the format: ``_model_format.py``); the reader is ``_model.py``."""

from __future__ import annotations

import json
import os
import zipfile
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from .._fileutil import atomic_write
from .._tensorfile import tensor_file_bytes
from .._version import __version__
from ..graph import Variable, data_of, output_key, value_key
from ..ops import RandomStream
from ._graph import collect_graph
from ._model_format import _NESTING_LIMIT, FORMAT, VERSION, _encode
from ._onnx_api import ExportError
from .op_rules import rules_for

__all__ = ["save", "GraphWriter"]


# ---------------------------------------------------------------------------------------------
# Saving
# ---------------------------------------------------------------------------------------------
def _batch_sizes(records: list[dict], ids: list) -> set[int]:
    return {records[i]["shape"][0] for i in ids
            if isinstance(i, int) and records[i].get("batch")}


class GraphWriter:
    """The variables and nodes of one graph as ``network.json`` holds them; a node's
    ``model_export`` rule (:class:`~stadyn.serialize.OpRules`) receives it to store attributes
    that are not plain values: :meth:`value` for plain ones, :meth:`graph` for a graph of the
    op's own (a recurrence's step), written with the same records.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import Subgraph
        >>> x = sd.Variable((1, 2))
        >>> y = F.tanh(x)
        >>> g = GraphWriter().graph([x], Subgraph([y]).nodes, [y])
        >>> [v["kind"] for v in g["variables"]], g["nodes"][0]["op"], g["outputs"]
        (['leaf', 'op'], 'tanh', [1])
    """

    def __init__(self, depth: int = 0):
        self.records: list[dict] = []
        self.ids: dict[Any, int] = {}
        self.depth = depth
        self.holds_graphs = False    # an attribute held a graph (format version 2)
        self.holds_streams = False   # an attribute held a random stream (format version 3)

    def add(self, key, v: Variable, **extra) -> int:
        """Record the Variable ``v`` under ``key``; returns its variable id."""
        if not isinstance(v.dtype, np.dtype) and str(v.dtype) != "torch.bfloat16":
            raise ExportError(f"a {v.dtype} Variable cannot be saved")
        dtype = "bfloat16" if not isinstance(v.dtype, np.dtype) else np.dtype(v.dtype).name
        rec = {"shape": list(v.shape), "dtype": dtype, "need_grad": bool(v.need_grad),
               "persistent": bool(v.persistent)}
        rec.update(extra)
        self.ids[key] = len(self.records)
        self.records.append(rec)
        return self.ids[key]

    def value(self, value: Any) -> Any:
        """A plain attribute value as JSON (``TypeError`` for one a file cannot hold)."""
        return _encode(value)

    def graph(self, leaves: list[Variable], nodes: list, outputs: list[Variable]) -> dict:
        """A graph of an op's own as JSON: ``leaves`` (its placeholders, in order) are the
        first variables (kind ``leaf``), then the outputs of ``nodes``; ``outputs`` by id."""
        if self.depth >= _NESTING_LIMIT:
            raise ExportError(f"graphs nested more than {_NESTING_LIMIT} deep cannot be saved")
        self.holds_graphs = True
        inner = GraphWriter(self.depth + 1)
        for v in leaves:
            inner.add(id(v), v, kind="leaf")
        encoded = [inner.node(node) for node in nodes]
        self.holds_streams = self.holds_streams or inner.holds_streams
        return {"variables": inner.records, "nodes": encoded,
                "outputs": [inner.ids[value_key(v)] for v in outputs]}

    def node(self, node) -> dict:
        """One op node as JSON, its outputs recorded."""
        where = f" in scope '{node.scope}'" if node.scope else ""
        ins, attrs = node.spec.split_arguments(node.args, node.kwargs)
        in_ids: list[Any] = []
        for v in ins:
            if v is None:
                in_ids.append(None)
            elif isinstance(v, Variable):
                in_ids.append(self.ids[value_key(v)])
            else:
                try:
                    in_ids.append({"value": _encode(v)})
                except TypeError as exc:
                    raise ExportError(f"op '{node.spec.name}'{where}: an input given as {exc} "
                                      "cannot be saved") from None
        self.holds_streams = self.holds_streams or any(
            isinstance(a, RandomStream) for a in attrs.values())
        rules = rules_for(node.spec)
        export = rules.model_export if rules is not None and callable(rules.model_export) \
            else None
        try:
            enc = export(self, attrs) if export is not None else {
                name: self._plain(name, value) for name, value in attrs.items()}
        except _BadAttribute as exc:
            raise ExportError(f"op '{node.spec.name}'{where}: attribute '{exc.args[0]}' holds "
                              f"{exc.args[1]}, which a model file cannot hold") from None
        except TypeError as exc:
            raise ExportError(f"op '{node.spec.name}'{where}: {exc}, which a model file "
                              "cannot hold") from None
        batch = _batch_sizes(self.records, in_ids)
        out_ids: list[int | None] = []
        for i, ref in enumerate(node._outputs):
            v = ref()
            if v is None:
                out_ids.append(None)
                continue
            shape = list(v.shape)
            out_ids.append(self.add(output_key(node, i), v, kind="op",
                                    batch=bool(shape) and shape[0] in batch))
        return {"op": node.spec.name, "scope": node.scope, "inputs": in_ids,
                "outputs": out_ids, "attrs": enc}

    @staticmethod
    def _plain(name: str, value: Any) -> Any:
        try:
            return _encode(value)
        except TypeError as exc:
            raise _BadAttribute(name, str(exc)) from None


class _BadAttribute(Exception):
    """(attribute name, what it holds): an attribute value a model file cannot hold."""


def _network_json(parts) -> tuple[dict, "OrderedDict[str, torch.Tensor]", dict]:
    w = GraphWriter()
    given = {id(v) for v in parts.inputs.values()}
    for name, v in parts.inputs.items():
        lengths = v.sequence_lengths      # (unless its lengths are an input of their own)
        extra = {"sequence": True} if lengths is not None and lengths.parent is None \
            and id(lengths) not in given else {}
        w.add(id(v), v, kind="input", name=name, batch=len(v.shape) > 0, **extra)
    for name, v in parts.lengths:
        w.add(id(v), v, kind="lengths", name=name, of=w.ids[id(parts.inputs[name])],
              batch=True)
    params: OrderedDict[str, torch.Tensor] = OrderedDict()
    need_grad: dict[str, bool] = {}
    for name, v in parts.parameters.items():
        w.add(id(v), v, kind="parameter", name=name)
        params[name] = data_of(v).detach().to("cpu").contiguous()
        need_grad[name] = bool(v.need_grad)
    for name, view in parts.views:
        w.add(id(view), view, kind="view", name=name)
    constants: OrderedDict[str, torch.Tensor] = OrderedDict()
    for k, v in enumerate(parts.constants):
        w.add(id(v), v, kind="constant", name=f"constant_{k}")
        constants[f"constant_{k}"] = data_of(v).detach().to("cpu").contiguous()
    nodes = [w.node(node) for node in parts.nodes]
    outputs = []
    for name, v in parts.outputs.items():
        outputs.append([name, w.ids[value_key(v)]])
    network = {"variables": w.records, "nodes": nodes,
               "inputs": [[n, w.ids[id(v)]] for n, v in parts.inputs.items()],
               "outputs": outputs, "parameters": list(parts.parameters)}
    # the lowest version that holds the graph, so older Stadyns read what they can
    version = VERSION if w.holds_streams else \
        2 if w.holds_graphs or any(r.get("sequence") for r in w.records) else 1
    return network, params, {"need_grad": need_grad, "constants": constants,
                             "version": version}


def save(path: str | os.PathLike, outputs: Any, inputs: Any = None, solver: Any = None, *,
         tags: Mapping[str, Sequence[str]] | None = None) -> None:
    """Save the graph computing ``outputs`` with its parameters as a Stadyn model file.

    ``outputs`` and ``inputs`` are a Variable, a list or a dict (name -> Variable), or a
    :class:`Network`; without ``inputs`` the name-less leaves are the inputs (``x`` or ``x0``,
    ``x1``...) and the named leaves (registry parameters) are the parameters.  ``solver``
    optionally adds its state (``Solver.save_states``); ``tags`` gives inputs and outputs (by
    name) lists of tags (strings: BrainScript's ``criterion``, ``evaluation``, ``output``),
    given back as ``Network.tags``.  The file is written atomically.  Graphs holding
    ``sd.grad`` nodes are refused (:class:`~stadyn.serialize.ExportError`).

    Example:
        >>> import os, tempfile, numpy as np, stadyn as sd, stadyn.functions as F
        >>> import stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     x = sd.Variable((2, 3))
        ...     y = F.softmax(PF.affine(x, 4, name="fc"))
        ...     path = os.path.join(tempfile.mkdtemp(), "net.stadyn")
        ...     sd.save(path, {"probs": y}, {"x": x})
        >>> net = sd.load(path)
        >>> list(net.inputs), list(net.outputs), list(net.parameters)
        (['x'], ['probs'], ['fc/affine/W', 'fc/affine/b'])
        >>> net(x=np.ones((2, 3)))["probs"].shape
        (2, 4)
    """
    parts = collect_graph(outputs, inputs, sequences=True, own_rules=True)
    network, params, extra = _network_json(parts)
    if tags:
        unknown = sorted(set(tags) - set(parts.outputs) - set(parts.inputs))
        if unknown:
            raise ExportError(f"tags given for {unknown}, which are neither inputs nor outputs")
        network["tags"] = {name: [str(t) for t in tags[name]]
                           for name in [*parts.inputs, *parts.outputs] if tags.get(name)}
    members: list[tuple[str, bytes]] = [
        ("format.json", _json_bytes({"format": FORMAT, "version": extra["version"],
                                     "producer": f"stadyn {_version()}"})),
        ("network.json", _json_bytes(network)),
        ("parameters.safetensors", tensor_file_bytes(params, format="stadyn-parameters", fields={
            "need_grad": extra["need_grad"], "order": list(params)})),
    ]
    if extra["constants"]:
        members.append(("constants.safetensors",
                        tensor_file_bytes(extra["constants"], format="stadyn-constants")))
    if solver is not None:
        members.append(("solver.safetensors", solver.state_file_bytes()))

    def write(tmp: str) -> None:
        with zipfile.ZipFile(tmp, "w") as zf:
            for name, data in members:
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                # JSON compresses well; parameters hardly do (the CRC guards both).
                info.compress_type = (zipfile.ZIP_DEFLATED if name.endswith(".json")
                                      else zipfile.ZIP_STORED)
                info.external_attr = 0o644 << 16
                zf.writestr(info, data)
    atomic_write(path, write)


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, allow_nan=False, separators=(",", ":")).encode("utf-8")


def _version() -> str:
    return __version__
