"""NNabla's model files, decoded into the legacy form (:mod:`._legacy_ir`) without NNabla.

* ``.nnp`` -- a zip of ``nnp_version.txt``, ``*.nntxt``/``*.prototxt`` (an ``NNablaProtoBuf`` in
  protobuf text: networks, executors, optimizers, datasets, monitors, configs, possibly
  parameters) and ``parameter.h5`` or ``parameter.protobuf``; NNabla's own loader treats every
  ``.h5`` and ``.protobuf`` member as parameters, and so does this one (optimizer-state members,
  ``*_state*.h5``/``.protobuf``, are listed, not read).
* ``.nntxt``/``.prototxt`` -- the protobuf text alone (``save(..., include_params=True)`` puts the
  parameters in it as ``parameter { variable_name shape data... }``).
* ``.protobuf`` -- the binary ``NNablaProtoBuf``; like NNabla's loader, only its parameters are
  read.

Networks keep NNabla's names: function types (``"Convolution"``, ``"Affine"``...), the
variables' shapes with ``-1`` for the batch, and each function's ``<type>_param`` message as
``attrs`` (see :func:`_plain` for the value rules: proto3 text leaves out fields equal to 0,
false or empty, so an absent attribute means that, not NNabla's Python default).  Loop controls
(``RepeatStart``/``RepeatEnd``, ``RecurrentInput``/``RecurrentOutput``/``Delay``) are expanded
as NNabla 1.39's loader expands them (:mod:`._nnp_loops`).
"""

from __future__ import annotations

import io
import math
import os
import zipfile
import zlib
from collections import OrderedDict
from typing import Any

import numpy as np

from ._legacy_ir import (MAX_FILE_BYTES, MAX_RANK, MAX_TEXT_BYTES, LegacyFunction, LegacyModel,
                         LegacyNetwork, LegacyParameter, LegacyVariable, fail, read_limited,
                         sort_functions)
from ._nnp_loops import expand_loops
from ._pb_text import TextMessage, parse_text

__all__ = ["read_nnp", "is_nnp_file", "read_nnp_members"]

_MAX_MEMBERS = 10_000
_RATIO_LIMIT = 1_000           # uncompressed / compressed size of a zip member
# fields that are lists in NNabla's schema (repeated), for the sections kept as plain dicts
_REPEATED = frozenset({"data_variable", "generator_variable", "loss_variable", "output_variable",
                       "parameter_variable", "monitor_variable", "dataset_name", "variable",
                       "backends", "repeat_id", "states", "state_parameter"})


def is_nnp_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` names an NNabla model file by its suffix (``.nnp``, ``.nntxt``,
    ``.prototxt``)."""
    return os.fspath(path).lower().endswith((".nnp", ".nntxt", ".prototxt"))


def read_nnp(path: str | os.PathLike, expand: bool = True, kind: str | None = None
             ) -> LegacyModel:
    """Decode an NNabla ``.nnp``, ``.nntxt``/``.prototxt`` or ``.protobuf`` file.

    ``kind`` (``".nnp"``, ``".nntxt"``, ``".protobuf"``) overrides the suffix.
    ``expand=False`` keeps loop controls as the file states them (``attrs["repeat_info"]`` on
    the network, ``meta["repeat_id"]`` on functions and variables, the functions in the file's
    order).

    Example:
        >>> import os, tempfile
        >>> from stadyn.serialize._nnp_format import read_nnp
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.nntxt")
        >>> with open(path, "w") as f:
        ...     _ = f.write('''network { name: "net" batch_size: 1
        ...   variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 } }
        ...   variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } }
        ...   function { name: "Tanh" type: "Tanh" input: "x" output: "y" } }''')
        >>> net = read_nnp(path).networks["net"]
        >>> [(f.type, f.inputs, f.outputs) for f in net.functions], net.inputs, net.outputs
        ([('Tanh', ('x',), ('y',))], ['x'], ['y'])
    """
    path = os.fspath(path)
    lower = kind or path.lower()
    texts: list[tuple[str, bytes]] = []
    params: OrderedDict[str, LegacyParameter] = OrderedDict()
    extras: dict[str, Any] = {}
    if lower.endswith(".nnp"):
        members = _read_zip(path)
        other = []
        for name, data in members.items():
            low = name.lower()
            if low.endswith((".nntxt", ".prototxt")):
                texts.append((f"{path}:{name}", data))
            elif _is_state(low):
                extras.setdefault("solver_state_members", []).append(name)
            elif low.endswith(".h5"):
                params.update(_read_h5(f"{path}:{name}", data))
            elif low.endswith(".protobuf"):
                params.update(_read_protobuf(f"{path}:{name}", data))
            elif name == "nnp_version.txt":
                extras["nnp_version"] = data.decode("utf-8", "replace").strip()
            else:
                other.append(name)
        if other:
            extras["other_members"] = other
        if not texts:
            raise fail(path, "the archive holds no .nntxt network description")
    elif lower.endswith(".protobuf"):
        params.update(_read_protobuf(path, read_limited(path)))
        extras["note"] = "a .protobuf file: only its parameters are read, as NNabla does"
    else:
        texts.append((path, read_limited(path, MAX_TEXT_BYTES)))
    networks: OrderedDict[str, LegacyNetwork] = OrderedDict()
    for where, data in texts:
        message = parse_text(data, where, max_bytes=MAX_TEXT_BYTES)
        params.update(_text_parameters(message, where))
        for net in message.all("network"):
            network = _network(net, where)
            if network.name in networks:
                raise fail(where, f"network {network.name!r} is defined twice")
            networks[network.name] = network
        for section in ("executor", "optimizer", "dataset", "monitor"):
            for m in message.all(section):
                entry = _plain(m, _REPEATED)
                key = f"{section}s"
                extras.setdefault(key, OrderedDict())[str(entry.get("name", ""))] = entry
        for section in ("global_config", "training_config"):
            if message.get(section) is not None:
                extras[section] = _plain(message.get(section), _REPEATED)
    if not networks and not params:
        raise fail(path, "holds no network and no parameters")
    for name, network in list(networks.items()):
        if network.attrs.get("repeat_info"):
            if not expand:
                continue                 # loops close cycles: keep the file's order
            network = expand_loops(network, path)
        produced = {o for f in network.functions for o in f.outputs}
        leaves = [n for n in network.variables if n not in produced]
        network.functions = sort_functions(network.functions, leaves, path, f"network {name!r}")
        networks[name] = network
    return LegacyModel("nnp", path, networks, params, extras)


def read_nnp_members(path: str | os.PathLike) -> list[tuple[str, bytes]]:
    """The protobuf-text members of an ``.nnp`` (or the ``.nntxt`` file itself, as
    ``network.nntxt``), checked to hold no parameters of their own.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "n.nntxt")
        >>> with open(path, "w") as f:
        ...     _ = f.write('network { name: "n" }')
        >>> read_nnp_members(path)
        [('network.nntxt', b'network { name: "n" }')]
    """
    path = os.fspath(path)
    if path.lower().endswith(".nnp") or (os.path.isfile(path) and not path.lower().endswith(
            (".nntxt", ".prototxt"))):
        texts = [(n, d) for n, d in _read_zip(path).items()
                 if n.lower().endswith((".nntxt", ".prototxt"))]
    else:
        texts = [("network.nntxt", read_limited(path, MAX_TEXT_BYTES))]
    for name, data in texts:
        if parse_text(data, f"{path}:{name}", max_bytes=MAX_TEXT_BYTES).all("parameter"):
            raise fail(path, f"{name} holds parameters in its text; they would shadow the "
                             "parameter file")
    return texts


def _is_state(lower_name: str) -> bool:
    base = lower_name.rsplit("/", 1)[-1]
    return base.startswith("optimizer_") and "_state" in base


# ---------------------------------------------------------------------------------------------
# The zip and the parameter files
# ---------------------------------------------------------------------------------------------
def _read_zip(path: str) -> "OrderedDict[str, bytes]":
    if not os.path.isfile(path):
        read_limited(path)              # the missing-file / folder error
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise fail(path, f"not an .nnp archive: not a zip file or truncated ({exc})") from None
    out: OrderedDict[str, bytes] = OrderedDict()
    with zf:
        infos = zf.infolist()
        if len(infos) > _MAX_MEMBERS:
            raise fail(path, f"the archive lists {len(infos)} members")
        for info in infos:
            name = info.filename
            if name in out:
                raise fail(path, f"the archive lists {name!r} twice")
            if name.endswith("/"):
                continue
            if info.flag_bits & 0x1:
                raise fail(path, f"{name} is encrypted")
            limit = MAX_TEXT_BYTES if name.lower().endswith((".nntxt", ".prototxt")) \
                else MAX_FILE_BYTES
            if info.file_size > limit:
                raise fail(path, f"{name} declares {info.file_size} bytes (more than {limit})")
            if info.file_size > _RATIO_LIMIT * max(info.compress_size, 1 << 16):
                raise fail(path, f"{name}: implausible compression ratio")
            try:
                data = zf.read(info)
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError,
                    NotImplementedError, ValueError) as exc:
                raise fail(path, f"{name} is damaged ({type(exc).__name__}: {exc})") from None
            if len(data) != info.file_size:
                raise fail(path, f"{name} is truncated")
            out[name] = data
    return out


def _check_shape(dims, where: str, count: int | None = None) -> tuple[int, ...]:
    dims = tuple(int(d) for d in dims)
    if len(dims) > MAX_RANK or any(d < 0 for d in dims):
        raise fail(where, f"invalid parameter shape {dims}")
    if count is not None and math.prod(dims) != count:
        raise fail(where, f"shape {dims} does not match its {count} values")
    return dims


def _read_h5(where: str, data: bytes) -> "OrderedDict[str, LegacyParameter]":
    """NNabla's ``parameter.h5``: a dataset per parameter at its scope path, with ``need_grad``
    and ``index`` (the order) attributes.  Each dataset's declared size is checked against the
    member's size before it is read."""
    import h5py
    budget = 64 * len(data) + (1 << 20)      # filters may compress; refuse implausible sizes
    found: list[tuple] = []
    try:
        with h5py.File(io.BytesIO(data), "r") as f:
            def visit(name, obj):
                nonlocal budget
                if not isinstance(obj, h5py.Dataset):
                    return
                if obj.dtype.kind not in "biuf" or obj.ndim > MAX_RANK:
                    raise fail(where, f"dataset {name!r} ({obj.dtype}, rank {obj.ndim}) is not "
                                      "a parameter")
                nbytes = math.prod(obj.shape) * obj.dtype.itemsize
                budget -= nbytes
                if budget < 0:
                    raise fail(where, f"dataset {name!r} declares {nbytes} bytes, more than the "
                                      "file can hold")
                index = obj.attrs.get("index")
                value = np.asarray(obj[()])
                if value.dtype.kind == "f" and value.dtype != np.float32:
                    # NNabla keeps the dtype it was given (``p.d = rng.uniform(...)`` saves
                    # float64) and its networks compute in float32 (context ``cpu:float``), as
                    # a .protobuf member's float data are
                    value = value.astype(np.float32)
                found.append((index is None, int(index) if index is not None else len(found),
                              name, value, bool(obj.attrs.get("need_grad", True))))
            f.visititems(visit)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise fail(where, f"not a readable HDF5 parameter file ({exc})") from None
    found.sort(key=lambda t: t[:2])
    return OrderedDict((name, LegacyParameter(name, value, need))
                       for _, _, name, value, need in found)


def _read_protobuf(where: str, data: bytes) -> "OrderedDict[str, LegacyParameter]":
    from google.protobuf.message import DecodeError
    from .._proto_schemas import nnabla_messages
    try:
        message = nnabla_messages()["NNablaProtoBuf"].FromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise fail(where, f"not a readable NNabla protobuf file ({exc})") from None
    out: OrderedDict[str, LegacyParameter] = OrderedDict()
    for p in message.parameter:
        values = np.asarray(p.data, dtype=np.float32)
        dims = _check_shape(p.shape.dim, f"{where}: parameter {p.variable_name!r}", values.size)
        out[p.variable_name] = LegacyParameter(p.variable_name, values.reshape(dims),
                                               bool(p.need_grad))
    return out


def _text_parameters(message: TextMessage, where: str) -> "OrderedDict[str, LegacyParameter]":
    out: OrderedDict[str, LegacyParameter] = OrderedDict()
    for p in message.all("parameter"):
        if not isinstance(p, TextMessage):
            raise fail(where, f"line {message.line}: 'parameter' is not a message")
        name = _string(p, "variable_name", where)
        data = p.all("data")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in data):
            raise fail(where, f"line {p.line}: parameter {name!r} holds non-numeric data")
        values = np.asarray(data, dtype=np.float32)
        shape = p.get("shape")
        dims = shape.all("dim") if isinstance(shape, TextMessage) else []
        dims = _check_shape(dims, f"{where}: parameter {name!r}", values.size)
        out[name] = LegacyParameter(name, values.reshape(dims), bool(p.get("need_grad", False)))
    return out


# ---------------------------------------------------------------------------------------------
# Networks
# ---------------------------------------------------------------------------------------------
def _string(m: TextMessage, field: str, where: str, default: str | None = None) -> str:
    value = m.get(field, default)
    if not isinstance(value, str):
        raise fail(where, f"line {m.line}: {field!r} must be a string, got {value!r}")
    return value


def _strings(m: TextMessage, field: str, where: str) -> list[str]:
    values = m.all(field)
    if not all(isinstance(v, str) for v in values):
        raise fail(where, f"line {m.line}: every {field!r} must be a string")
    return [str(v) for v in values]


def _plain(value: Any, repeated: frozenset = frozenset()) -> Any:
    """A text value as plain Python: a message whose fields are all ``dim`` (a ``Shape``) is a
    tuple of ints; any other message a dict in which a field given once is a value and a field
    given more than once (or named in ``repeated``) a list; an empty message is ``{}``."""
    if not isinstance(value, TextMessage):
        return str(value) if isinstance(value, str) else value
    names = value.names()
    if names == ["dim"]:
        return tuple(value.all("dim"))
    out: dict[str, Any] = {}
    for name in names:
        items = [_plain(v, repeated) for v in value.all(name)]
        out[name] = items if (len(items) > 1 or name in repeated) else items[0]
    return out


def _shape(m: TextMessage, where: str) -> tuple[int, ...]:
    shape = m.get("shape")
    if shape is None:
        return ()
    dims = shape.all("dim") if isinstance(shape, TextMessage) else None
    if dims is None or not all(isinstance(d, int) and not isinstance(d, bool) and d >= -1
                               for d in dims) or len(dims) > MAX_RANK:
        raise fail(where, f"line {m.line}: invalid shape")
    return tuple(dims)


def _network(net: TextMessage, where: str) -> LegacyNetwork:
    if not isinstance(net, TextMessage):
        raise fail(where, "'network' is not a message")
    name = _string(net, "name", where, "")
    batch = net.get("batch_size", 0)
    if not isinstance(batch, int) or isinstance(batch, bool):
        raise fail(where, f"line {net.line}: batch_size must be an integer")
    here = f"{where}: network {name!r}"
    variables: OrderedDict[str, LegacyVariable] = OrderedDict()
    for v in net.all("variable"):
        vname = _string(v, "name", here)
        if vname in variables:
            raise fail(here, f"line {v.line}: variable {vname!r} is declared twice")
        kind = _string(v, "type", here, "Buffer")
        meta: dict[str, Any] = {}
        if v.all("repeat_id"):
            meta["repeat_id"] = _strings(v, "repeat_id", here)
        if isinstance(v.get("initializer"), TextMessage):
            meta["initializer"] = _plain(v.get("initializer"))
        variables[vname] = LegacyVariable(
            vname, "parameter" if kind == "Parameter" else "buffer", _shape(v, here), meta=meta)
    functions = []
    for f in net.all("function"):
        fname = _string(f, "name", here, "")
        ftype = _string(f, "type", here)
        attrs: dict[str, Any] = {}
        meta: dict[str, Any] = {}
        for key in f.names():
            if not key.endswith("_param"):
                continue
            value = _plain(f.get(key))
            if key in ("repeat_param", "recurrent_param"):
                meta["loop"] = value if isinstance(value, dict) else {}
            elif isinstance(value, dict):
                attrs.update(value)
            else:
                attrs[key] = value
        if f.all("repeat_id"):
            meta["repeat_id"] = _strings(f, "repeat_id", here)
        inputs, outputs = _strings(f, "input", here), _strings(f, "output", here)
        for v in inputs + outputs:
            if v not in variables:
                raise fail(here, f"line {f.line}: function {fname!r} uses undeclared variable "
                                 f"{v!r}")
        functions.append(LegacyFunction(fname, ftype, tuple(inputs), tuple(outputs), attrs,
                                        meta=meta))
    repeat_info = OrderedDict()
    for r in net.all("repeat_info"):
        rid, times = _string(r, "id", here), r.get("times", 0)
        if not isinstance(times, int) or isinstance(times, bool) or not 0 < times <= 1_000_000:
            raise fail(here, f"line {r.line}: repeat {rid!r} has invalid times {times!r}")
        repeat_info[rid] = times
    network = LegacyNetwork(name, functions, variables, batch_size=batch,
                            attrs={"repeat_info": repeat_info} if repeat_info else {})
    _set_ends(network)
    return network


def _set_ends(network: LegacyNetwork) -> None:
    """Inputs: buffers no function writes; outputs: what no function reads."""
    produced = {o for f in network.functions for o in f.outputs}
    consumed = {i for f in network.functions for i in f.inputs}
    network.inputs = [n for n, v in network.variables.items()
                      if v.kind == "buffer" and n not in produced and n in consumed]
    network.outputs = [n for n in network.variables if n in produced and n not in consumed]
