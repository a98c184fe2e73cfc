"""Reading Stadyn model files: a network and its parameters in one zip, loadable without the
Python that built it (the format: ``_model_format.py``; the writer: ``_model_save.py``).

Nothing in a model file is executed: it is JSON and safetensors only, every field is checked, and
the graph is rebuilt by calling catalog functions.  Loaders for every format version stay
(``_LOADERS``); writing always uses the newest.
"""

from __future__ import annotations

import json
import math
import os
import struct
import zipfile
from collections import Counter, OrderedDict
from typing import Any, Callable

import numpy as np
import torch

from .._errors import ModelFileError
from .._fileutil import refuse_special_file
from ..graph import (Variable, auto_forward, data_of, get_current_context, new_lengths,
                     set_sequence_axis)
from ..ops import CATALOG
from ..parametric import ParameterRegistry, parameter_registry
from ._limits import LoadBudget, read_zip_member
from ._model_format import (_DTYPES, _JSON_LIMIT, _OPTIONAL, _REQUIRED, FORMAT, VERSION, _check,
                            _Invalid, _is_shape)
from ._model_nodes import _dtype_name, _id, _np_or_torch, build_node
from ._network import ModelInfo, Network

__all__ = ["load", "model_info", "is_model_file", "FORMAT", "VERSION"]


# ---------------------------------------------------------------------------------------------
# Reading: every field is checked
# ---------------------------------------------------------------------------------------------
def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise _Invalid(f"duplicate key {next(k for k in keys if keys.count(k) > 1)!r}")
    return dict(pairs)


def _reject_constant(name: str) -> Any:
    raise _Invalid(f"non-standard JSON constant {name}")


def _parse_json(data: bytes, member: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates,
                          parse_constant=_reject_constant)
    except _Invalid as exc:
        raise _Invalid(f"{member}: {exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise _Invalid(f"{member} is not valid JSON ({type(exc).__name__}: "
                       f"{str(exc)[:120]})") from None


def _read_members(path: str, budget: LoadBudget) -> dict[str, bytes]:
    refuse_special_file(path, ModelFileError)
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise _Invalid(f"not a Stadyn model file: not a zip archive or truncated ({exc})") from None
    with zf:
        infos = zf.infolist()
        names = [i.filename for i in infos]
        _check(len(names) == len(set(names)), "the archive lists a member twice")
        unknown = sorted(set(names) - set(_REQUIRED) - set(_OPTIONAL))
        _check(not unknown, f"unexpected member(s) {unknown} (a model file holds only "
                            f"{', '.join(_REQUIRED + _OPTIONAL)})")
        missing = [n for n in _REQUIRED if n not in names]
        _check(not missing, f"missing member(s) {missing}")
        out = {}
        for info in infos:
            if info.filename.endswith(".json"):
                _check(info.file_size <= _JSON_LIMIT, f"{info.filename} declares "
                       f"{info.file_size:,} bytes; a model file's JSON holds at most "
                       f"{_JSON_LIMIT:,}")
            out[info.filename] = read_zip_member(zf, info, budget)
    return out


def _safetensors_meta(data: bytes, member: str) -> dict[str, str]:
    _check(len(data) >= 8, f"{member} is truncated")
    n, = struct.unpack("<Q", data[:8])
    _check(8 + n <= len(data), f"{member} is truncated")
    header = _parse_json(data[8:8 + n], member)
    _check(isinstance(header, dict), f"{member}: bad header")
    meta = header.get("__metadata__", {})
    _check(isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values()),
           f"{member}: bad metadata")
    return meta


def _load_tensors(data: bytes, member: str) -> dict[str, torch.Tensor]:
    from safetensors.torch import load as st_load
    _safetensors_meta(data, member)
    try:
        return st_load(data)
    except Exception as exc:  # noqa: BLE001 - safetensors raises several types
        raise _Invalid(f"{member} is not a valid safetensors file ({exc})") from None


def _format_of(members: dict[str, bytes]) -> int:
    fmt = _parse_json(members["format.json"], "format.json")
    _check(isinstance(fmt, dict), "format.json must hold an object")
    _check(fmt.get("format") == FORMAT, f"format.json: format is {fmt.get('format')!r}, "
                                        f"expected {FORMAT!r}")
    version = fmt.get("version")
    _check(isinstance(version, int) and not isinstance(version, bool) and version >= 1,
           f"format.json: bad version {version!r}")
    _check(version in _LOADERS, f"format version {version} was written by a newer Stadyn "
                                f"(this one reads versions {min(_LOADERS)}..{max(_LOADERS)})")
    return version


def _variables(network: dict, version: int) -> list[dict]:
    records = network.get("variables")
    _check(isinstance(records, list), "network.json: 'variables' must be a list")
    kinds = {"input", "parameter", "view", "constant", "op"}
    allowed = {"kind", "shape", "dtype", "need_grad", "persistent", "name", "batch"}
    if version >= 2:            # sequence inputs and their lengths
        kinds, allowed = kinds | {"lengths"}, allowed | {"sequence", "of"}
    for k, rec in enumerate(records):
        where = f"network.json: variable {k}"
        _check(isinstance(rec, dict), f"{where} must be an object")
        _check(set(rec) <= allowed, f"{where}: unknown field(s) {sorted(set(rec) - allowed)}")
        _check(rec.get("kind") in kinds, f"{where}: bad kind {rec.get('kind')!r}")
        _check(_is_shape(rec.get("shape")), f"{where}: bad shape {rec.get('shape')!r}")
        _check(rec.get("dtype") in _DTYPES, f"{where}: bad dtype {rec.get('dtype')!r}")
        for flag in ("need_grad", "persistent", "batch"):
            _check(isinstance(rec.get(flag, False), bool), f"{where}: '{flag}' must be a bool")
        if rec["kind"] != "op":
            _check(isinstance(rec.get("name"), str) and rec["name"],
                   f"{where}: a {rec['kind']} needs a name")
        if rec.get("sequence", False) is not False:
            _check(rec["kind"] == "input" and rec["sequence"] is True and len(rec["shape"]) >= 2,
                   f"{where}: only an input of at least two axes (batch, sequence) can be a "
                   "sequence")
        if rec["kind"] == "lengths" or "of" in rec:
            of = rec.get("of")
            _check(rec["kind"] == "lengths" and isinstance(of, int) and not isinstance(of, bool)
                   and 0 <= of < k and records[of].get("kind") == "input"
                   and records[of].get("sequence") is True
                   and records[of].get("name") == rec["name"],
                   f"{where}: lengths must name the sequence input they belong to ('of')")
            _check(rec["dtype"] == "int64" and len(rec["shape"]) == 1
                   and rec["shape"][0] == records[of]["shape"][0],
                   f"{where}: the lengths of a batch of {records[of]['shape'][0]} sequences "
                   f"are an int64 vector of that size, not {tuple(rec['shape'])} {rec['dtype']}")
    return records


def _named_ids(network: dict, role: str, n: int) -> list[tuple[str, int]]:
    """``network[role]`` ("inputs" or "outputs"): a list of ``[name, variable id]`` pairs."""
    pairs = network.get(role, [])
    _check(isinstance(pairs, list), f"network.json: '{role}' must be a list of [name, variable] "
                                    f"pairs, not {json.dumps(pairs)[:60]}")
    out = []
    for pair in pairs:
        _check(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str),
               f"network.json: bad entry in '{role}': {json.dumps(pair)[:60]}")
        out.append((pair[0], _id(pair[1], n, f"network.json: {role}")))
    return out


def _load_network(path: str, members: dict[str, bytes], registry: ParameterRegistry,
                  batch_size: int | None, budget: LoadBudget, version: int) -> Network:
    network = _parse_json(members["network.json"], "network.json")
    _check(isinstance(network, dict), "network.json must hold an object")
    allowed = {"variables", "nodes", "inputs", "outputs", "parameters"}
    _check(set(network) - {"tags"} == allowed, f"network.json: expected the keys "
           f"{sorted(allowed)} (and optionally 'tags'), got {sorted(network)}")
    tags = network.get("tags", {})
    _check(isinstance(tags, dict) and all(
        isinstance(v, list) and all(isinstance(t, str) for t in v) for v in tags.values()),
        "network.json: 'tags' must map input and output names to lists of strings")
    records = _variables(network, version)
    n = len(records)
    params = _load_tensors(members["parameters.safetensors"], "parameters.safetensors")
    constants = (_load_tensors(members["constants.safetensors"], "constants.safetensors")
                 if "constants.safetensors" in members else {})
    names = network["parameters"]
    _check(isinstance(names, list) and all(isinstance(s, str) for s in names),
           "network.json: 'parameters' must be a list of names")
    _check(sorted(names) == sorted(params), "parameters.safetensors does not hold exactly the "
                                            "parameters network.json lists")
    solver_state = members.get("solver.safetensors")
    if solver_state is not None:
        meta = _safetensors_meta(solver_state, "solver.safetensors")
        _check(meta.get("format") == "stadyn-solver-states", "solver.safetensors is not a "
                                                             "Stadyn solver state")

    # Nothing touches ``registry`` until the whole file has been checked and the graph built:
    # a failed load leaves the parameters it would have overwritten as they were.
    staged = _Staged(registry)
    values: list[Variable | None] = [None] * n
    inputs: OrderedDict[str, Variable] = OrderedDict()
    for k, rec in enumerate(records):
        if rec["kind"] == "input":
            shape = list(rec["shape"])
            if batch_size is not None and rec.get("batch") and shape:
                shape[0] = int(batch_size)
            budget.take(math.prod(shape) * _itemsize(rec["dtype"]),
                        f"network.json: variable {k} (input {rec['name']!r} of shape "
                        f"{tuple(shape)} {rec['dtype']})")
    for k, rec in enumerate(records):
        kind, shape, where = rec["kind"], list(rec["shape"]), f"variable {k} ({rec.get('name')})"
        if kind == "input":
            if batch_size is not None and rec.get("batch") and shape:
                shape[0] = int(batch_size)
            v = Variable(shape, need_grad=rec["need_grad"], dtype=_np_or_torch(rec["dtype"]))
            v.persistent = rec["persistent"]
            if rec.get("sequence"):    # fed with a list of sequences; full lengths until then
                set_sequence_axis(v, new_lengths([shape[1]] * shape[0]))
            _check(rec["name"] not in inputs, f"network.json: input name {rec['name']!r} twice")
            values[k] = inputs[rec["name"]] = v
        elif kind == "parameter":
            t = params.get(rec["name"])
            _check(t is not None, f"{where}: not in parameters.safetensors")
            _check(list(t.shape) == shape and _dtype_name(t.dtype) == rec["dtype"],
                   f"{where}: parameters.safetensors holds {tuple(t.shape)} "
                   f"{_dtype_name(t.dtype)}, network.json says {tuple(shape)} {rec['dtype']}")
            values[k] = staged.parameter(rec["name"], t, rec["need_grad"])
        elif kind == "constant":
            t = constants.get(rec["name"])
            _check(t is not None, f"{where}: not in constants.safetensors")
            _check(list(t.shape) == shape and _dtype_name(t.dtype) == rec["dtype"],
                   f"{where}: constants.safetensors holds {tuple(t.shape)}")
            values[k] = Variable.from_tensor(t.clone().to(get_current_context().device),
                                             need_grad=rec["need_grad"])
    for k, rec in enumerate(records):
        if rec["kind"] == "lengths":
            values[k] = values[rec["of"]].sequence_lengths
        if rec["kind"] == "view":
            base = staged.get(rec["name"])
            _check(base is not None, f"variable {k}: a view of unknown parameter "
                                     f"{rec['name']!r}")
            values[k] = base.unlinked(need_grad=rec["need_grad"])

    nodes = network["nodes"]
    _check(isinstance(nodes, list), "network.json: 'nodes' must be a list")
    with auto_forward(False), parameter_registry(registry):
        for k, node in enumerate(nodes):
            build_node(f"network.json: node {k}", node, records, values, batch_size)
    outputs: OrderedDict[str, Variable] = OrderedDict()
    for role, target in (("inputs", None), ("outputs", outputs)):
        for name, vid in _named_ids(network, role, n):
            var = values[vid]
            _check(var is not None, f"network.json: {role} {name!r} is never computed")
            if target is None:
                _check(inputs.get(name) is var, f"network.json: input {name!r} does not "
                                                "match its variable")
            else:
                _check(name not in target, f"network.json: output {name!r} twice")
                target[name] = var
    _check(len(network["inputs"]) == len(inputs), "network.json: 'inputs' does not list every "
                                                  "input variable")
    _check(outputs, "network.json: the model has no outputs")
    unknown = sorted(set(tags) - set(outputs) - set(inputs))
    _check(not unknown, f"network.json: 'tags' names {unknown}, which are neither inputs nor "
                        "outputs")
    staged.commit()
    return Network(inputs, outputs, registry, source=path, solver_state=solver_state,
                   info={"kind": f"Stadyn model file (format version {version})"}, tags=tags)


def _itemsize(dtype: str) -> int:
    return 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize


class _Staged:
    """The parameters a load gives ``registry``, held back until :meth:`commit`: new ones are
    added, existing ones (same shape) overwritten in place, only once the whole file is good."""

    def __init__(self, registry: ParameterRegistry):
        self.registry = registry
        self.new: OrderedDict[str, Variable] = OrderedDict()
        self.copies: list[tuple[Variable, torch.Tensor]] = []

    def get(self, name: str) -> Variable | None:
        var = self.new.get(name)
        return var if var is not None else self.registry.get(name)

    def parameter(self, name: str, t: torch.Tensor, need_grad: bool) -> Variable:
        have = self.registry.get(name)
        if have is None:
            var = Variable.from_tensor(t.clone().to(get_current_context().device),
                                       need_grad=need_grad)
            self.new[name] = var
            return var
        if have.shape != tuple(t.shape):
            raise _Invalid(f"parameter {name!r} has shape {tuple(t.shape)} in the file but "
                           f"{have.shape} in the registry it is loaded into")
        self.copies.append((have, t))
        return have

    def commit(self) -> None:
        with torch.no_grad():
            for have, t in self.copies:
                data_of(have).copy_(t)
        for name, var in self.new.items():
            self.registry.set(name, var)


def _load_v1(*args) -> Network:
    return _load_network(*args, version=1)


def _load_v2(*args) -> Network:
    return _load_network(*args, version=2)


def _load_v3(*args) -> Network:
    return _load_network(*args, version=3)


_LOADERS: dict[int, Callable[..., Network]] = {1: _load_v1, 2: _load_v2, 3: _load_v3}


def load(path: str | os.PathLike, registry: ParameterRegistry | None = None,
         batch_size: int | None = None, *, max_bytes: int | None = None) -> Network:
    """Load a Stadyn model file as a runnable :class:`Network` (no model code needed).

    The graph is rebuilt from catalog ops in static mode; parameters go to ``registry`` -- a new
    :class:`~stadyn.ParameterRegistry` by default (``net.registry``), so a loaded model never
    touches the current one; pass a registry to load into it (existing parameters of the same
    name are overwritten in place).  ``batch_size`` rebuilds the graph for another size of the
    inputs' first (batch) axis.  Files of every earlier format version load.  A truncated,
    damaged or tampered file, or one naming unknown ops or holding wrong types or shapes,
    raises :class:`stadyn.ModelFileError` naming the file and the problem, and leaves
    ``registry`` as it was: parameters are assigned only once the whole file has been checked.
    What the file declares (its members' sizes, its inputs' buffers) must fit ``max_bytes``
    (default 2 GiB or ``$STADYN_MAX_LOAD_BYTES``; see :mod:`stadyn.serialize._limits`).

    Example:
        >>> import os, tempfile, numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((1, 2))
        >>> path = os.path.join(tempfile.mkdtemp(), "twice.stadyn")
        >>> sd.save(path, F.mul_scalar(x, 2.0), x)
        >>> net = sd.load(path, batch_size=3)
        >>> net(x=np.ones((3, 2)))["y"].tolist()
        [[2.0, 2.0], [2.0, 2.0], [2.0, 2.0]]
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ModelFileError(f"{path}: no such model file")
    if os.path.isdir(path):
        raise ModelFileError(f"{path}: is a folder, not a model file")
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise ModelFileError(f"{path}: batch_size must be a positive int, got {batch_size!r}")
    registry = registry if registry is not None else ParameterRegistry()
    budget = LoadBudget(path, max_bytes)
    try:
        members = _read_members(path, budget)
        version = _format_of(members)
        return _LOADERS[version](path, members, registry, batch_size, budget)
    except _Invalid as exc:
        raise ModelFileError(f"{path}: {exc}") from None


def is_model_file(path: str | os.PathLike) -> bool:
    """Is ``path`` a Stadyn model file, by its first bytes (a zip's local header)?  A damaged or
    truncated model file still is one, so that :func:`load` reports what is wrong with it
    (``zipfile.is_zipfile`` reads the end of the archive and says no).  An unreadable file is a
    :class:`~stadyn.ModelFileError`.

    Example:
        >>> import os, tempfile, stadyn as sd
        >>> path = os.path.join(tempfile.mkdtemp(), "m.stadyn")
        >>> sd.save(path, sd.Variable((1, 2)) * 2.0)
        >>> is_model_file(path), is_model_file(__file__)
        (True, False)
    """
    refuse_special_file(path, ModelFileError)
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError as exc:
        raise ModelFileError(f"{os.fspath(path)}: cannot read the file ({exc.strerror})") from None


def model_info(path: str | os.PathLike) -> ModelInfo:
    """Inputs, outputs, op counts and parameter count of a model file or an ONNX file, read
    without building the graph.

    Example:
        >>> import os, tempfile, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((4, 3))
        >>> path = os.path.join(tempfile.mkdtemp(), "m.stadyn")
        >>> sd.save(path, F.relu(F.tanh(x)), x)
        >>> info = sd.serialize.model_info(path)
        >>> dict(info.op_counts), info.inputs["x"]
        ({'tanh': 1, 'relu': 1}, ((4, 3), 'float32'))
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ModelFileError(f"{path}: no such file")
    if not is_model_file(path):
        return _onnx_info(path)
    try:
        members = _read_members(path, LoadBudget(path))
        version = _format_of(members)
        network = _parse_json(members["network.json"], "network.json")
        _check(isinstance(network, dict), "network.json must hold an object")
        records = _variables(network, version)
        ins = _named_ids(network, "inputs", len(records))
        outs = _named_ids(network, "outputs", len(records))
        _check(outs, "network.json: the model has no outputs")
        nodes = network.get("nodes", [])
        _check(isinstance(nodes, list) and all(isinstance(n, dict) and isinstance(n.get("op"), str)
                                               for n in nodes),
               "network.json: 'nodes' must be a list of objects naming their op")
        unknown = sorted({n["op"] for n in nodes} - set(CATALOG))
        _check(not unknown, f"network.json: unknown op(s) {[u[:40] for u in unknown[:5]]} "
                            "(a newer Stadyn's, or not an op at all)")

        def described(pairs):
            return OrderedDict((name, (tuple(records[i]["shape"]), records[i]["dtype"]))
                               for name, i in pairs)
        params = [r for r in records if r["kind"] == "parameter"]
        info = ModelInfo(kind=f"Stadyn model file (format version {version})",
                         inputs=described(ins), outputs=described(outs),
                         op_counts=Counter(n["op"] for n in nodes),
                         n_parameters=sum(math.prod(r["shape"]) for r in params),
                         n_parameter_tensors=len(params))
        batch = [n for n, i in ins if records[i].get("batch")]
        if batch:
            info.details["batch axis"] = (f"the first axis of {', '.join(batch)} (load with "
                                          "batch_size=N to change it)")
        if "solver.safetensors" in members:
            meta = _safetensors_meta(members["solver.safetensors"], "solver.safetensors")
            info.details["solver state"] = meta.get("solver", "?")
        return info
    except _Invalid as exc:
        raise ModelFileError(f"{path}: {exc}") from None


def _onnx_info(path: str) -> ModelInfo:
    from .._extras import require
    onnx = require("onnx", "onnx", "reading an ONNX file")
    from onnx import helper
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - protobuf raises several types
        raise ModelFileError(f"{path}: neither a Stadyn model file nor a readable ONNX model "
                             f"({exc})") from exc
    graph = model.graph
    inits = {i.name for i in graph.initializer}

    def described(values):
        out = OrderedDict()
        for vi in values:
            if vi.name in inits:
                continue
            t = vi.type.tensor_type
            dims = tuple(d.dim_param if d.dim_param else int(d.dim_value) for d in t.shape.dim)
            try:
                dtype = np.dtype(helper.tensor_dtype_to_np_dtype(t.elem_type)).name
            except Exception:  # noqa: BLE001 - a type NumPy lacks
                dtype = str(t.elem_type)
            out[vi.name] = (dims, dtype)
        return out
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), "?")
    return ModelInfo(kind="ONNX model", inputs=described(graph.input),
                     outputs=described(graph.output),
                     op_counts=Counter(n.op_type for n in graph.node),
                     n_parameters=sum(math.prod(i.dims) for i in graph.initializer),
                     n_parameter_tensors=len(graph.initializer),
                     details={"opset": opset, "producer": model.producer_name or "?"})
