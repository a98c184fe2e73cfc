"""Parameter files: Stadyn's safetensors format, and NNabla's ``.h5`` files (read and write).

A Stadyn parameter file is a safetensors file whose tensor names are the parameters' scope paths;
its metadata records the format, a version and each parameter's ``need_grad``.  Loading creates
missing parameters and overwrites existing ones in place (shapes must match).
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict

import numpy as np
import torch

from .._errors import ModelFileError, ParameterError
from .._fileutil import atomic_write
from ..graph import Variable
from ..parametric import current_registry, get_parameters
from ..parametric._registry import ParameterRegistry

__all__ = ["save_parameters", "load_parameters", "read_parameter_file"]

_FORMAT = "stadyn-parameters"


def save_parameters(path: str | os.PathLike, params: dict[str, Variable] | None = None) -> None:
    """Write parameters (default: all under the current scope) to ``path``.

    ``.safetensors`` (or any other suffix) writes Stadyn's format; ``.h5`` writes NNabla's.

    Example:
        >>> import os, tempfile, stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     _ = PF.affine(sd.Variable((2, 3)), 4)
        ...     path = os.path.join(tempfile.mkdtemp(), "p.safetensors")
        ...     sd.save_parameters(path)
        ...     sorted(sd.read_parameter_file(path))
        ['affine/W', 'affine/b']
    """
    if params is None:
        params = get_parameters(grad_only=False)
    path = os.fspath(path)
    if path.endswith(".h5"):
        _save_h5(path, params)
        return
    from safetensors.torch import save_file
    tensors = {name: v.data.detach().to("cpu").contiguous() for name, v in params.items()}
    meta = {"format": _FORMAT, "version": "1",
            "need_grad": json.dumps({name: bool(v.need_grad) for name, v in params.items()}),
            "order": json.dumps(list(params))}
    atomic_write(path, lambda tmp: save_file(tensors, tmp, metadata=meta))


def read_parameter_file(path: str | os.PathLike) -> "OrderedDict[str, tuple[np.ndarray, bool]]":
    """``{name: (array, need_grad)}`` from a Stadyn (safetensors) or NNabla (``.h5``) file."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ModelFileError(f"{path}: no such parameter file")
    if path.endswith(".h5"):
        return _read_h5(path)
    from safetensors import safe_open
    try:
        with safe_open(path, framework="np") as f:
            meta = f.metadata() or {}
            arrays = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as exc:
        raise ModelFileError(f"{path}: not a readable parameter file ({exc})") from exc
    if meta.get("format") not in (_FORMAT, None):
        raise ModelFileError(f"{path}: unexpected format {meta.get('format')!r}")
    need = json.loads(meta.get("need_grad", "{}"))
    order = json.loads(meta.get("order", "[]")) or sorted(arrays)
    return OrderedDict((k, (arrays[k], bool(need.get(k, True)))) for k in order)


def load_parameters(path: str | os.PathLike, registry: ParameterRegistry | None = None) -> None:
    """Load parameters from ``path`` into the registry under the current scope.

    Existing parameters are overwritten in place (so graphs and solvers that hold them see the new
    values); a shape mismatch names the parameter; missing ones are created.
    """
    from ..graph import current_scope
    registry = registry or current_registry()
    scope = current_scope()
    for name, (array, need_grad) in read_parameter_file(path).items():
        full = f"{scope}/{name}" if scope else name
        var = registry.get(full)
        if var is None:
            var = Variable.from_numpy_array(array, need_grad=need_grad)
            registry.set(full, var)
            continue
        if tuple(array.shape) != var.shape:
            raise ParameterError(f"{os.fspath(path)}: parameter '{full}' has shape "
                                 f"{tuple(array.shape)} in the file but {var.shape} in the model")
        with torch.no_grad():
            var.data.copy_(torch.from_numpy(np.ascontiguousarray(array)))


def _save_h5(path: str, params: dict[str, Variable]) -> None:
    import h5py

    def write(tmp: str) -> None:
        with h5py.File(tmp, "w") as f:
            for index, (name, var) in enumerate(params.items()):
                ds = f.create_dataset(name, data=var.d.astype(np.float32))
                ds.attrs["need_grad"] = bool(var.need_grad)
                ds.attrs["index"] = index
    atomic_write(path, write)


def _read_h5(path: str) -> "OrderedDict[str, tuple[np.ndarray, bool]]":
    import h5py
    found: list[tuple[int, str, np.ndarray, bool]] = []
    try:
        with h5py.File(path, "r") as f:
            def visit(name, obj):
                if isinstance(obj, h5py.Dataset):
                    found.append((int(obj.attrs.get("index", len(found))), name, obj[()],
                                  bool(obj.attrs.get("need_grad", True))))
            f.visititems(visit)
    except OSError as exc:
        raise ModelFileError(f"{path}: not a readable HDF5 parameter file ({exc})") from exc
    found.sort(key=lambda item: item[0])
    return OrderedDict((name, (np.asarray(arr), need)) for _, name, arr, need in found)
