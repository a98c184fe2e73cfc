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
The messages are the leaf module ``stadyn._proto_schemas``'s, which ``serialize`` reads its
NNabla files with too.

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


def _names(state: Mapping[str, Any], state_names: tuple[str, ...] | None) -> Any:
    return state_names if state_names is not None else [k for k in state if k != "t"]


def write_h5_states(path: str | os.PathLike, states: Mapping[str, Mapping[str, Any]],
                    state_names: tuple[str, ...] | None = None) -> None:
    """Write ``{parameter: {state name: tensor, "t": steps}}`` in NNabla's layout: the states
    ``state_names`` (default: each parameter's own, in its order)."""
    import h5py

    def write(tmp: str) -> None:
        with h5py.File(tmp, "w") as f:
            for index, (name, state) in enumerate(states.items()):
                group = f.create_group(name)
                group.attrs["index"] = index
                for position, key in enumerate(_names(state, state_names)):
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


# -- .protobuf: NNabla's Optimizer message, through the schema of stadyn._proto_schemas ------


def _optimizer_class() -> Any:
    from .._proto_schemas import nnabla_messages
    return nnabla_messages()["Optimizer"]


def write_protobuf_states(path: str | os.PathLike, states: Mapping[str, Mapping[str, Any]],
                          state_names: tuple[str, ...] | None = None) -> None:
    """Write ``{parameter: {state name: tensor, "t": steps}}`` as NNabla's ``.protobuf`` state
    file (an ``Optimizer`` message; the values as float32, as NNabla's ``repeated float``): the
    states ``state_names`` (default: each parameter's own, in its order).

    Each entry is present even where its fields are all defaults (a solver state of ``t`` 0 and
    no state values, a 0-d value's empty shape), as NNabla 1.39 writes them; a solver without
    parameters is an empty message, no bytes at all (NNabla's: its ``solver`` field unset)."""
    from .._proto_schemas import extend_packed
    message = _optimizer_class()()
    for name, state in states.items():
        entry = message.solver.states.add()
        entry.key = name
        entry.value.SetInParent()
        entry.value.t = int(state["t"])
        for key in _names(state, state_names):
            value = state[key].detach().cpu().numpy()
            parameter = entry.value.state_parameter.add()
            parameter.key = key
            parameter.value.shape.SetInParent()
            parameter.value.shape.dim.extend(int(d) for d in value.shape)
            extend_packed(parameter.value, "data", value)
    data = message.SerializeToString()

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


def read_protobuf_states(path: str | os.PathLike, *,
                         name: str | None = None) -> "OrderedDict[str, dict[str, Any]]":
    """``{parameter: {state name: array, "t": steps}}`` from NNabla's ``.protobuf`` state file,
    in the file's order; a file that is not one is a :class:`ModelFileError` naming it.  An
    ``Optimizer`` with no states (an empty file: NNabla's for a solver without parameters)
    gives none, as NNabla 1.39 loads it; a message without the ``solver`` field (a parameter
    file) is refused.  Errors name ``name``, when given, instead of ``path``."""
    from google.protobuf.message import DecodeError
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    where = name or path
    try:
        message = _optimizer_class().FromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ModelFileError(f"{where}: not a readable NNabla solver state file ({exc})"
                             ) from None
    if data and not message.HasField("solver"):
        raise ModelFileError(f"{where}: no solver states (an NNabla Optimizer message with "
                             f"solver.states)")
    out: OrderedDict[str, dict[str, Any]] = OrderedDict()
    for entry in message.solver.states:
        state: dict[str, Any] = {"t": int(entry.value.t)}
        for parameter in entry.value.state_parameter:
            dims = [int(d) for d in parameter.value.shape.dim]
            flat = np.asarray(parameter.value.data, dtype=np.float32)
            if any(d < 0 for d in dims) or int(np.prod(dims)) != flat.size:
                raise ModelFileError(f"{where}: state {parameter.key!r} of {entry.key!r} has "
                                     f"{flat.size} values for shape {tuple(dims)}")
            state[parameter.key] = flat.reshape(dims)
        out[entry.key] = state
    return out
