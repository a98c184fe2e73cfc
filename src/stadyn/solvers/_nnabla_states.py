"""NNabla's solver-state files: ``.h5`` and ``.protobuf`` (``solver.save_states("states.h5")``
and ``solver.save_states("states.protobuf")`` in NNabla 1.39).

The layout, as NNabla 1.39 writes it: one group per parameter at the parameter's path
(``conv1/conv/W``) with an ``index`` attribute (the parameter's position), holding one float
dataset per state (Adam's ``mean`` and ``var``, ...; each with an ``index`` attribute) and the
step count ``t`` as a 0-d int64 dataset.  NNabla reads the states back by name.

The ``.protobuf`` form is one ``Optimizer`` message of NNabla's ``nnabla.proto`` (field 30,
``solver``), whose ``Solver`` holds ``map<string, SolverState> states = 40``; a
``SolverState`` is ``uint32 t = 1`` and ``map<string, SolverStateParameter> state_parameter =
2``, a ``SolverStateParameter`` ``Shape shape = 20`` (``repeated int64 dim = 1``, packed) and
``repeated float data = 100`` (packed float32).  NNabla 1.39's ``set_states_to_protobuf``
(``python/src/nnabla/solver.pyx``) writes the parameters and their states in the solver's order.
Solvers sit below ``serialize`` (whose ``_proto_schemas`` has these messages), so the few
fields are encoded and decoded here, by the protobuf wire format.

Example:
    >>> import os, tempfile, torch
    >>> from stadyn.solvers._nnabla_states import read_h5_states, write_h5_states
    >>> path = os.path.join(tempfile.mkdtemp(), "states.h5")
    >>> write_h5_states(path, {"fc/W": {"m": torch.ones(2), "t": 3}}, ("m",))
    >>> state = read_h5_states(path)["fc/W"]
    >>> state["m"].tolist(), state["t"]
    ([1.0, 1.0], 3)
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any, Mapping

import numpy as np

from .._errors import ModelFileError
from .._fileutil import atomic_write

__all__ = ["write_h5_states", "read_h5_states", "write_protobuf_states",
           "read_protobuf_states", "is_nnabla_protobuf_states"]


def write_h5_states(path: str | os.PathLike, states: Mapping[str, Mapping[str, Any]],
                    state_names: tuple[str, ...]) -> None:
    """Write ``{parameter: {state name: tensor, "t": steps}}`` in NNabla's layout."""
    import h5py

    def write(tmp: str) -> None:
        with h5py.File(tmp, "w") as f:
            for index, (name, state) in enumerate(states.items()):
                group = f.create_group(name)
                group.attrs["index"] = index
                for position, key in enumerate(state_names):
                    value = state[key].detach().cpu().numpy()
                    ds = group.create_dataset(key, data=value)
                    ds.attrs["index"] = position
                group.create_dataset("t", data=np.int64(state["t"]))
    atomic_write(os.fspath(path), write)


def read_h5_states(path: str | os.PathLike, *,
                   name: str | None = None) -> "OrderedDict[str, dict[str, Any]]":
    """``{parameter: {state name: array, "t": steps}}`` from an NNabla ``.h5`` state file, in
    the file's ``index`` order; a file that is not one is a :class:`ModelFileError` naming it
    (``name``, when given, instead of ``path``)."""
    import h5py
    path = os.fspath(path)
    where = name or path
    found = []
    try:
        with h5py.File(path, "r") as f:
            groups: list[tuple[str, Any]] = []
            f.visititems(lambda name, obj: groups.append((name, obj))
                         if isinstance(obj, h5py.Group) and "t" in obj else None)
            for position, (name, group) in enumerate(groups):
                state: dict[str, Any] = {}
                for key, obj in group.items():
                    if not isinstance(obj, h5py.Dataset):
                        continue
                    if key == "t":
                        t = np.asarray(obj[()])
                        if t.shape != () or t.dtype.kind not in "iu":
                            raise ModelFileError(f"{where}: '{name}/t' must be one integer, not "
                                                 f"{t.dtype} {t.shape}")
                        state["t"] = int(t)
                    else:
                        state[key] = np.asarray(obj[()])
                index = group.attrs.get("index", position)
                found.append((int(index), name, state))
    except ModelFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - h5py raises OSError, KeyError, ValueError...
        raise ModelFileError(f"{where}: not a readable NNabla solver state file "
                             f"({type(exc).__name__}: {exc})") from None
    if not found:
        raise ModelFileError(f"{where}: no solver states (no group holding a step count 't')")
    found.sort(key=lambda item: item[0])
    return OrderedDict((name, state) for _, name, state in found)


# -- .protobuf: NNabla's Optimizer message, by the wire format --------------------------------

_LEN, _VARINT, _I32, _I64 = 2, 0, 5, 1


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1                  # a negative int64 is ten bytes, as protobuf's
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | _LEN) + _varint(len(payload)) + payload


def _state_parameter(value: np.ndarray) -> bytes:
    dims = b"".join(_varint(int(d)) for d in value.shape)
    data = np.ascontiguousarray(value, dtype="<f4").tobytes()
    return _field(20, _field(1, dims) if dims else b"") + (_field(100, data) if data else b"")


def write_protobuf_states(path: str | os.PathLike, states: Mapping[str, Mapping[str, Any]],
                          state_names: tuple[str, ...]) -> None:
    """Write ``{parameter: {state name: tensor, "t": steps}}`` as NNabla's ``.protobuf`` state
    file (an ``Optimizer`` message; the values as float32, as NNabla's ``repeated float``)."""
    entries = []
    for name, state in states.items():
        body = _varint(1 << 3 | _VARINT) + _varint(int(state["t"])) if int(state["t"]) else b""
        for key in state_names:
            value = state[key].detach().cpu().numpy()
            entry = _field(1, key.encode("utf-8")) + _field(2, _state_parameter(value))
            body += _field(2, entry)
        entries.append(_field(40, _field(1, name.encode("utf-8")) + _field(2, body)))
    # no parameters: an empty message, no bytes at all (NNabla's; its solver field unset)
    data = _field(30, b"".join(entries)) if entries else b""

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(data)
    atomic_write(os.fspath(path), write)


def is_nnabla_protobuf_states(head: bytes, size: int) -> bool:
    """Whether a file of ``size`` bytes starting with ``head`` (its first 9 bytes, or all of a
    shorter one) is NNabla's ``.protobuf`` state file rather than Stadyn's safetensors
    container, which Stadyn wrote for any suffix but ``.h5`` before: an 8-byte little-endian
    header length, a JSON header of that length (``{`` first) within the file.  A ``{`` at
    byte 8 alone does not tell them apart: NNabla's message has one there when its first
    parameter's entry is 15744 to 15871 bytes long (the second byte of that length); its
    bytes 3 to 7 (field 40's key ``c2 02`` among them) make the "header length" far larger
    than any file."""
    if len(head) < 9 or head[8:9] != b"{":
        return True
    return 8 + int.from_bytes(head[:8], "little") > size


class _Reader:
    """The fields of one protobuf message body: ``(number, wire type, value)`` in order."""

    def __init__(self, data: bytes, where: str):
        self.data, self.where = data, where

    def fields(self, data: bytes | None = None):
        data = self.data if data is None else data
        pos = 0
        while pos < len(data):
            key, pos = self._varint(data, pos)
            number, wire = key >> 3, key & 7
            if wire == _VARINT:
                value, pos = self._varint(data, pos)
            elif wire == _LEN:
                size, pos = self._varint(data, pos)
                if pos + size > len(data):
                    raise self.bad("a field runs past the end of its message")
                value, pos = data[pos:pos + size], pos + size
            elif wire in (_I32, _I64):
                step = 4 if wire == _I32 else 8
                value, pos = data[pos:pos + step], pos + step
            else:
                raise self.bad(f"wire type {wire} of field {number}")
            yield number, wire, value

    def _varint(self, data: bytes, pos: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            if pos >= len(data) or shift > 63:
                raise self.bad("a truncated number")
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value, pos

    def packed_varints(self, wire: int, value: Any) -> list[int]:
        if wire == _VARINT:
            return [value if value < 1 << 63 else value - (1 << 64)]
        out, pos = [], 0
        while pos < len(value):
            number, pos = self._varint(value, pos)
            out.append(number if number < 1 << 63 else number - (1 << 64))
        return out

    def bad(self, what: str) -> ModelFileError:
        return ModelFileError(f"{self.where}: not a readable NNabla solver state file ({what})")


def _map_entry(reader: _Reader, data: bytes) -> tuple[str, bytes]:
    key, value = "", b""
    for number, wire, field in reader.fields(data):
        if number == 1 and wire == _LEN:
            key = bytes(field).decode("utf-8", "replace")
        elif number == 2 and wire == _LEN:
            value = field
    return key, value


def _read_state_parameter(reader: _Reader, data: bytes, where: str) -> np.ndarray:
    dims: list[int] = []
    values: list[np.ndarray] = []
    for number, wire, field in reader.fields(data):
        if number == 20 and wire == _LEN:
            for n, w, v in reader.fields(field):
                if n == 1:
                    dims += reader.packed_varints(w, v)
        elif number == 100 and wire == _LEN:
            values.append(np.frombuffer(bytes(field), dtype="<f4"))
        elif number == 100 and wire == _I32:
            values.append(np.frombuffer(bytes(field), dtype="<f4"))
    flat = np.concatenate(values) if values else np.zeros(0, np.float32)
    if any(d < 0 for d in dims) or int(np.prod(dims)) != flat.size:
        raise ModelFileError(f"{where} has {flat.size} values for shape {tuple(dims)}")
    return flat.astype(np.float32).reshape(dims)


def read_protobuf_states(path: str | os.PathLike, *,
                         name: str | None = None) -> "OrderedDict[str, dict[str, Any]]":
    """``{parameter: {state name: array, "t": steps}}`` from NNabla's ``.protobuf`` state file,
    in the file's order; a file that is not one is a :class:`ModelFileError` naming it.  An
    ``Optimizer`` with no states (an empty file: NNabla's for a solver without parameters)
    gives none, as NNabla 1.39 loads it; other fields and no states (a parameter file) are
    refused.  Errors name ``name``, when given, instead of ``path``."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    where = name or path
    reader = _Reader(data, where)
    out: OrderedDict[str, dict[str, Any]] = OrderedDict()
    other = False
    for number, wire, solver in reader.fields():
        if number != 30 or wire != _LEN:
            other = True
            continue
        for n, w, entry in reader.fields(solver):
            if n != 40 or w != _LEN:
                continue
            name, body = _map_entry(reader, entry)
            state: dict[str, Any] = {"t": 0}
            for sn, sw, sv in reader.fields(body):
                if sn == 1 and sw == _VARINT:
                    state["t"] = int(sv)
                elif sn == 2 and sw == _LEN:
                    key, value = _map_entry(reader, sv)
                    state[key] = _read_state_parameter(
                        reader, value, f"{where}: state {key!r} of {name!r}")
            out[name] = state
    if not out and other:
        raise ModelFileError(f"{where}: no solver states (an NNabla Optimizer message with "
                             f"solver.states)")
    return out
