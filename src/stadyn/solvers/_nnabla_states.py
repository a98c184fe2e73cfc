"""NNabla's ``.h5`` solver-state files (``solver.save_states("states.h5")`` in NNabla 1.39).

The layout, as NNabla 1.39 writes it: one group per parameter at the parameter's path
(``conv1/conv/W``) with an ``index`` attribute (the parameter's position), holding one float
dataset per state (Adam's ``mean`` and ``var``, ...; each with an ``index`` attribute) and the
step count ``t`` as a 0-d int64 dataset.  NNabla reads the states back by name.

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

__all__ = ["write_h5_states", "read_h5_states"]


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


def read_h5_states(path: str | os.PathLike) -> "OrderedDict[str, dict[str, Any]]":
    """``{parameter: {state name: array, "t": steps}}`` from an NNabla ``.h5`` state file, in
    the file's ``index`` order; a file that is not one is a :class:`ModelFileError` naming it."""
    import h5py
    path = os.fspath(path)
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
                            raise ModelFileError(f"{path}: '{name}/t' must be one integer, not "
                                                 f"{t.dtype} {t.shape}")
                        state["t"] = int(t)
                    else:
                        state[key] = np.asarray(obj[()])
                index = group.attrs.get("index", position)
                found.append((int(index), name, state))
    except ModelFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - h5py raises OSError, KeyError, ValueError...
        raise ModelFileError(f"{path}: not a readable NNabla solver state file "
                             f"({type(exc).__name__}: {exc})") from None
    if not found:
        raise ModelFileError(f"{path}: no solver states (no group holding a step count 't')")
    found.sort(key=lambda item: item[0])
    return OrderedDict((name, state) for _, name, state in found)
