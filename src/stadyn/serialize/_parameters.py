"""Parameter files: Stadyn's safetensors format, and NNabla's ``.h5`` files (read and write).

A Stadyn parameter file is a safetensors file whose tensor names are the parameters' scope paths;
its metadata records the format, a version and each parameter's ``need_grad``.  Loading creates
missing parameters and overwrites existing ones in place (shapes must match).

NNabla's ``.h5`` layout (``nnabla.parameter.save_parameters``): one dataset per parameter at its
scope path (``cnn/conv1/conv/W``, so ``/`` makes HDF5 groups), holding the array in its own dtype,
with the attributes ``need_grad`` (bool) and ``index`` (the position in the registry, which
loading follows).  An NNabla ``.nnp`` archive is read for its ``.h5`` parameter member (NNabla's
``.protobuf`` parameter encoding is not read).
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from typing import Any

import numpy as np
import torch

from .._errors import ModelFileError, ParameterError
from .._fileutil import atomic_write, refuse_special_file
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
    """``{name: (array, need_grad)}`` from a Stadyn (safetensors) or NNabla (``.h5``, ``.nnp``)
    file, in the file's parameter order."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ModelFileError(f"{path}: no such parameter file")
    refuse_special_file(path, ModelFileError)
    if path.endswith(".h5"):
        return _read_h5(path)
    if path.endswith(".nnp"):
        return _read_nnp(path)
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

    ``path`` is a Stadyn parameter file or an NNabla ``.h5`` (or ``.nnp``) file: names are kept
    as written (``cnn/conv1/conv/W``), so a model built with the same scopes picks them up.
    Existing parameters are overwritten in place (so graphs and solvers that hold them see the new
    values); a shape mismatch names the parameter; missing ones are created.

    Example:
        >>> import os, tempfile, numpy as np, h5py, stadyn as sd
        >>> path = os.path.join(tempfile.mkdtemp(), "nnabla_params.h5")
        >>> with h5py.File(path, "w") as f:      # the layout nnabla.save_parameters writes
        ...     f["fc/affine/W"] = np.ones((3, 2), np.float32)
        ...     f["fc/affine/W"].attrs["need_grad"] = True
        ...     f["fc/affine/W"].attrs["index"] = 0
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     sd.load_parameters(path)
        ...     {k: v.shape for k, v in sd.get_parameters().items()}
        {'fc/affine/W': (3, 2)}
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
                ds = f.create_dataset(name, data=np.asarray(var.d))  # NNabla keeps the dtype
                ds.attrs["need_grad"] = bool(var.need_grad)
                ds.attrs["index"] = index
    atomic_write(path, write)


def _read_h5(path: str, source: Any = None) -> "OrderedDict[str, tuple[np.ndarray, bool]]":
    """NNabla's layout (see the module docstring); datasets without ``index`` keep the file's
    order after the indexed ones, as NNabla's sort puts them."""
    import h5py
    found: list[tuple[int, int, str, np.ndarray, bool]] = []
    try:
        with h5py.File(path if source is None else source, "r") as f:
            def visit(name, obj):
                if not isinstance(obj, h5py.Dataset):
                    return
                value = obj[()]
                if not isinstance(value, np.ndarray):
                    value = np.asarray(value)
                if value.dtype.kind not in "biuf":
                    raise ModelFileError(f"{path}: dataset {name!r} holds {value.dtype} data, "
                                         "not a parameter")
                index = obj.attrs.get("index")
                found.append((0 if index is not None else 1,
                              int(index) if index is not None else len(found), name, value,
                              bool(obj.attrs.get("need_grad", True))))
            f.visititems(visit)
    except OSError as exc:
        raise ModelFileError(f"{path}: not a readable HDF5 parameter file ({exc})") from exc
    found.sort(key=lambda item: item[:2])
    return OrderedDict((name, (arr, need)) for _, _, name, arr, need in found)


def _read_nnp(path: str) -> "OrderedDict[str, tuple[np.ndarray, bool]]":
    import io
    import zipfile
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            h5 = [n for n in names if n.endswith(".h5")]
            if not h5:
                other = [n for n in names if n.endswith(".protobuf")]
                hint = (" (its parameters are in NNabla's .protobuf encoding; save them with "
                        "nnabla's save_parameters('....h5') instead)") if other else ""
                raise ModelFileError(f"{path}: no .h5 parameter file in the archive{hint}")
            out: OrderedDict[str, tuple[np.ndarray, bool]] = OrderedDict()
            for name in h5:
                out.update(_read_h5(f"{path}:{name}", io.BytesIO(zf.read(name))))
            return out
    except (zipfile.BadZipFile, OSError) as exc:
        raise ModelFileError(f"{path}: not a readable .nnp archive ({exc})") from exc
