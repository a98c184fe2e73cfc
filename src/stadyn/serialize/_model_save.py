"""Writing Stadyn model files (the format: ``_model_format.py``); the reader is ``_model.py``."""

from __future__ import annotations

import json
import os
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np
import torch

from .._fileutil import atomic_write
from .._tensorfile import tensor_file_bytes
from .._version import __version__
from ..graph import Variable, output_key, value_key
from ._graph import collect_graph
from ._model_format import FORMAT, VERSION, _encode
from ._onnx_api import ExportError

__all__ = ["save"]


# ---------------------------------------------------------------------------------------------
# Saving
# ---------------------------------------------------------------------------------------------
def _batch_sizes(records: list[dict], ids: list) -> set[int]:
    return {records[i]["shape"][0] for i in ids
            if isinstance(i, int) and records[i].get("batch")}


def _network_json(parts) -> tuple[dict, "OrderedDict[str, torch.Tensor]", dict]:
    records: list[dict] = []
    ids: dict[Any, int] = {}

    def add(key, v: Variable, **extra) -> int:
        if not isinstance(v.dtype, np.dtype) and str(v.dtype) != "torch.bfloat16":
            raise ExportError(f"a {v.dtype} Variable cannot be saved")
        dtype = "bfloat16" if not isinstance(v.dtype, np.dtype) else np.dtype(v.dtype).name
        rec = {"shape": list(v.shape), "dtype": dtype, "need_grad": bool(v.need_grad),
               "persistent": bool(v.persistent)}
        rec.update(extra)
        ids[key] = len(records)
        records.append(rec)
        return ids[key]

    for name, v in parts.inputs.items():
        add(id(v), v, kind="input", name=name, batch=len(v.shape) > 0)
    params: OrderedDict[str, torch.Tensor] = OrderedDict()
    need_grad: dict[str, bool] = {}
    for name, v in parts.parameters.items():
        add(id(v), v, kind="parameter", name=name)
        params[name] = v.data.detach().to("cpu").contiguous()
        need_grad[name] = bool(v.need_grad)
    for name, view in parts.views:
        add(id(view), view, kind="view", name=name)
    constants: OrderedDict[str, torch.Tensor] = OrderedDict()
    for k, v in enumerate(parts.constants):
        add(id(v), v, kind="constant", name=f"constant_{k}")
        constants[f"constant_{k}"] = v.data.detach().to("cpu").contiguous()

    nodes = []
    for node in parts.nodes:
        where = f" in scope '{node.scope}'" if node.scope else ""
        ins, attrs = node.spec.split_arguments(node.args, node.kwargs)
        in_ids: list[Any] = []
        for v in ins:
            if v is None:
                in_ids.append(None)
            elif isinstance(v, Variable):
                in_ids.append(ids[value_key(v)])
            else:
                try:
                    in_ids.append({"value": _encode(v)})
                except TypeError as exc:
                    raise ExportError(f"op '{node.spec.name}'{where}: an input given as {exc} "
                                      "cannot be saved") from None
        enc = {}
        for name, value in attrs.items():
            try:
                enc[name] = _encode(value)
            except TypeError as exc:
                raise ExportError(f"op '{node.spec.name}'{where}: attribute '{name}' holds {exc}, "
                                  "which a model file cannot hold") from None
        batch = _batch_sizes(records, in_ids)
        out_ids: list[int | None] = []
        for i, ref in enumerate(node._outputs):
            v = ref()
            if v is None:
                out_ids.append(None)
                continue
            shape = list(v.shape)
            out_ids.append(add(output_key(node, i), v, kind="op",
                               batch=bool(shape) and shape[0] in batch))
        nodes.append({"op": node.spec.name, "scope": node.scope, "inputs": in_ids,
                      "outputs": out_ids, "attrs": enc})
    outputs = []
    for name, v in parts.outputs.items():
        outputs.append([name, ids[value_key(v)]])
    network = {"variables": records, "nodes": nodes,
               "inputs": [[n, ids[id(v)]] for n, v in parts.inputs.items()],
               "outputs": outputs, "parameters": list(parts.parameters)}
    return network, params, {"need_grad": need_grad, "constants": constants}


def save(path: str | os.PathLike, outputs: Any, inputs: Any = None, solver: Any = None) -> None:
    """Save the graph computing ``outputs`` with its parameters as a Stadyn model file.

    ``outputs`` and ``inputs`` are a Variable, a list or a dict (name -> Variable), or a
    :class:`Network`; without ``inputs`` the name-less leaves are the inputs (``x`` or ``x0``,
    ``x1``...) and the named leaves (registry parameters) are the parameters.  ``solver``
    optionally adds its state (``Solver.save_states``).  The file is written atomically.  Graphs
    holding ``sd.grad`` nodes are refused (:class:`~stadyn.serialize.ExportError`).

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
    parts = collect_graph(outputs, inputs)
    network, params, extra = _network_json(parts)
    members: list[tuple[str, bytes]] = [
        ("format.json", _json_bytes({"format": FORMAT, "version": VERSION,
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
