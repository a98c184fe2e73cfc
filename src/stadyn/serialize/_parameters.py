"""Parameter files: Stadyn's safetensors format, and NNabla's ``.h5`` files (read and write).

A Stadyn parameter file is a safetensors file whose tensor names are the parameters' scope paths;
its metadata records the format, a version and each parameter's ``need_grad``.  Loading creates
missing parameters and overwrites existing ones in place (shapes must match).

NNabla's ``.h5`` layout (``nnabla.parameter.save_parameters``): one dataset per parameter at its
scope path (``cnn/conv1/conv/W``, so ``/`` makes HDF5 groups), holding the array in its own dtype,
with the attributes ``need_grad`` (bool) and ``index`` (the position in the registry, which
loading follows).  An NNabla ``.nnp`` archive is read for its ``.h5`` parameter member (NNabla's
``.protobuf`` parameter encoding is not read).

Reading is bounded: what a file declares (safetensors data, HDF5 datasets, ``.nnp`` members) must
fit the load limit (``max_bytes=``, see :mod:`stadyn.serialize._limits`) before anything is read,
and loading into a registry assigns nothing until every parameter has been checked.
"""

from __future__ import annotations

import io
import json
import math
import os
import zipfile
from collections import OrderedDict
from typing import Any, Iterable

import numpy as np
import torch

from .._errors import ModelFileError, ParameterError
from .._fileutil import atomic_write, refuse_special_file
from .._tensorfile import write_tensor_file
from ..graph import Variable, data_of
from ..parametric import ParameterRegistry, current_registry, get_parameters
from ._limits import LoadBudget, read_zip_member

__all__ = ["save_parameters", "load_parameters", "read_parameter_file"]

_FORMAT = "stadyn-parameters"


def save_parameters(path: str | os.PathLike, params: dict[str, Variable] | None = None, *,
                    arrays: dict[str, np.ndarray] | None = None) -> None:
    """Write parameters (default: all under the current scope) to ``path``.

    ``.safetensors`` (or any other suffix) writes Stadyn's format; ``.h5`` writes NNabla's.
    ``arrays`` (``.h5`` only) gives, by name, the arrays written for some of ``params`` in
    place of their values, in their own dtype (``stadyn.compat.nnabla``'s parameters that
    NNabla holds as float64).

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
        _save_h5(path, params, arrays or {})
        return
    write_tensor_file(path, {name: data_of(v) for name, v in params.items()}, format=_FORMAT,
                      fields={"need_grad": {name: bool(v.need_grad) for name, v in params.items()},
                              "order": list(params)})


def read_parameter_file(path: str | os.PathLike, *, max_bytes: int | None = None
                        ) -> "OrderedDict[str, tuple[np.ndarray, bool]]":
    """``{name: (array, need_grad)}`` from a Stadyn (safetensors) or NNabla (``.h5``, ``.nnp``)
    file, in the file's parameter order.  A damaged file, or one declaring more than
    ``max_bytes`` (the load limit), is a :class:`~stadyn.ModelFileError` naming it.

    Example:
        >>> import os, tempfile, stadyn as sd
        >>> path = os.path.join(tempfile.mkdtemp(), "p.safetensors")
        >>> sd.save_parameters(path, {"w": sd.Variable((2, 3), need_grad=True)})
        >>> {k: (a.shape, need) for k, (a, need) in read_parameter_file(path).items()}
        {'w': ((2, 3), True)}
        >>> read_parameter_file(path, max_bytes=16)
        Traceback (most recent call last):
        stadyn._errors.ModelFileError: ...p.safetensors: tensor 'w' (2, 3) float32 declares 24 ...
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ModelFileError(f"{path}: no such parameter file")
    if os.path.isdir(path):
        raise ModelFileError(f"{path}: is a folder, not a parameter file")
    budget = LoadBudget(path, max_bytes)
    refuse_special_file(path, ModelFileError)
    if path.endswith(".h5"):
        return _read_h5(path, budget)
    if path.endswith(".nnp"):
        return _read_nnp(path, budget)
    return _read_safetensors(path, budget)


def _read_safetensors(path: str, budget: LoadBudget
                      ) -> "OrderedDict[str, tuple[np.ndarray, bool]]":
    from safetensors import safe_open
    try:
        with safe_open(path, framework="np") as f:
            meta = f.metadata() or {}
            names = list(f.keys())
            for k in names:
                sl = f.get_slice(k)
                shape, code = tuple(sl.get_shape()), str(sl.get_dtype())
                name, size = _ST_DTYPES.get(code, (code, 8))
                budget.take(math.prod(shape) * size, f"tensor {k!r} {shape} {name}")
            arrays = {k: f.get_tensor(k) for k in names}
    except ModelFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - safetensors raises several types
        raise ModelFileError(f"{path}: not a readable parameter file ({exc})") from None
    if meta.get("format") not in (_FORMAT, None):
        raise ModelFileError(f"{path}: unexpected format {meta.get('format')!r}")
    need = _meta_json(path, meta, "need_grad", {})
    if not isinstance(need, dict) or not all(isinstance(v, bool) for v in need.values()):
        raise ModelFileError(f"{path}: metadata 'need_grad' must map names to true/false")
    order = _meta_json(path, meta, "order", [])
    if not isinstance(order, list) or not all(isinstance(k, str) for k in order):
        raise ModelFileError(f"{path}: metadata 'order' must be a list of names")
    if order and sorted(order) != sorted(arrays):
        raise ModelFileError(f"{path}: metadata 'order' does not list exactly the file's "
                             f"tensors ({len(order)} names for {len(arrays)} tensors)")
    return OrderedDict((k, (arrays[k], need.get(k, True))) for k in order or sorted(arrays))


# safetensors' dtype codes: (name, bytes per element); codes not listed count 8 bytes.
_ST_DTYPES = {"F64": ("float64", 8), "F32": ("float32", 4), "F16": ("float16", 2),
              "BF16": ("bfloat16", 2), "I64": ("int64", 8), "I32": ("int32", 4),
              "I16": ("int16", 2), "I8": ("int8", 1), "U64": ("uint64", 8), "U32": ("uint32", 4),
              "U16": ("uint16", 2), "U8": ("uint8", 1), "BOOL": ("bool", 1)}


def _meta_json(path: str, meta: dict, key: str, default: Any) -> Any:
    if key not in meta:
        return default
    try:
        return json.loads(meta[key])
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"{path}: metadata {key!r} is not valid JSON ({exc})") from None


def load_parameters(path: str | os.PathLike, registry: ParameterRegistry | None = None, *,
                    max_bytes: int | None = None,
                    content: "OrderedDict[str, tuple[np.ndarray, bool]] | None" = None) -> None:
    """Load parameters from ``path`` into the registry under the current scope.

    ``path`` is a Stadyn parameter file or an NNabla ``.h5`` (or ``.nnp``) file: names are kept
    as written (``cnn/conv1/conv/W``), so a model built with the same scopes picks them up.
    Existing parameters are overwritten in place (so graphs and solvers that hold them see the new
    values); a shape mismatch names the parameter; missing ones are created.  The load is all or
    nothing: every parameter is checked before any is assigned, so an error leaves the registry
    as it was.  ``max_bytes`` bounds what the file may declare (:func:`read_parameter_file`);
    ``content`` is what :func:`read_parameter_file` gave for ``path`` already (not read again).

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
    registry = registry if registry is not None else current_registry()
    scope = current_scope()
    new: list[tuple[str, Variable]] = []
    copies: list[tuple[Variable, np.ndarray]] = []
    if content is None:
        content = read_parameter_file(path, max_bytes=max_bytes)
    for name, (array, need_grad) in content.items():
        full = f"{scope}/{name}" if scope else name
        var = registry.get(full)
        if var is None:
            new.append((full, Variable.from_numpy_array(array, need_grad=need_grad)))
        elif tuple(array.shape) != var.shape:
            raise ParameterError(f"{os.fspath(path)}: parameter '{full}' has shape "
                                 f"{tuple(array.shape)} in the file but {var.shape} in the model")
        else:
            copies.append((var, array))
    with torch.no_grad():
        for var, array in copies:
            data_of(var).copy_(torch.from_numpy(np.ascontiguousarray(array)))
    for full, var in new:
        registry.set(full, var)


def _write_h5(f: Any, items: Iterable[tuple[str, np.ndarray, bool]]) -> None:
    """``items`` (name, array, need_grad) into the open ``h5py.File`` ``f`` in NNabla's layout:
    a dataset per parameter with ``need_grad`` and ``index`` (its position)."""
    for index, (name, array, need_grad) in enumerate(items):
        # as NNabla 1.39's saver writes it (``hd[k] = array``: h5py makes the dataset
        # anonymous, then links it), which lays the file out byte for byte as NNabla's
        # (create_dataset's came out 24 bytes shorter); it keeps the dtype
        f[name] = array
        ds = f[name]
        ds.attrs["need_grad"] = bool(need_grad)
        ds.attrs["index"] = index


def _save_h5(path: str, params: dict[str, Variable], arrays: dict[str, np.ndarray]) -> None:
    import h5py

    def write(tmp: str) -> None:
        with h5py.File(tmp, "w") as f:
            _write_h5(f, ((name, arrays[name] if name in arrays else np.asarray(var.d),
                           var.need_grad) for name, var in params.items()))
    atomic_write(path, write)


def _read_h5(path: str, budget: LoadBudget, source: Any = None
             ) -> "OrderedDict[str, tuple[np.ndarray, bool]]":
    """NNabla's layout (see the module docstring); datasets without ``index`` keep the file's
    order after the indexed ones, as NNabla's sort puts them.  Every dataset's declared size is
    counted against ``budget`` before any is read."""
    import h5py
    try:
        with h5py.File(path if source is None else source, "r") as f:
            datasets: list[tuple[str, Any]] = []
            f.visititems(lambda name, obj: datasets.append((name, obj))
                         if isinstance(obj, h5py.Dataset) else None)
            for name, obj in datasets:
                if obj.dtype.kind not in "biuf":
                    raise ModelFileError(f"{path}: dataset {name!r} holds {obj.dtype} data, "
                                         "not a parameter")
                budget.take(math.prod(obj.shape or ()) * obj.dtype.itemsize,
                            f"dataset {name!r} {tuple(obj.shape or ())} {obj.dtype}")
            found = []
            for position, (name, obj) in enumerate(datasets):
                index = _attribute(path, name, obj, "index", int)
                need_grad = _attribute(path, name, obj, "need_grad", bool)
                found.append((0 if index is not None else 1,
                              index if index is not None else position, name,
                              np.asarray(obj[()]), True if need_grad is None else need_grad))
    except ModelFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - h5py raises OSError, KeyError, ValueError...
        raise ModelFileError(f"{path}: not a readable HDF5 parameter file "
                             f"({type(exc).__name__}: {exc})") from None
    found.sort(key=lambda item: item[:2])
    return OrderedDict((name, (arr, need)) for _, _, name, arr, need in found)


def _attribute(path: str, name: str, obj: Any, key: str, kind: type) -> Any:
    """The attribute ``key`` of dataset ``name`` as an int or a bool (None when absent); any
    other value is a :class:`ModelFileError` naming the file, the dataset and the attribute."""
    if key not in obj.attrs:
        return None
    value = obj.attrs[key]
    arr = np.asarray(value)
    if arr.shape != ():
        ok = False
    elif kind is int:
        ok = arr.dtype.kind in "iu"
    else:                           # h5py gives a bool as numpy.bool_; 0 and 1 pass too
        ok = arr.dtype.kind == "b" or (arr.dtype.kind in "iu" and arr.item() in (0, 1))
    if not ok:
        shown = repr(value)[:60]
        raise ModelFileError(f"{path}: dataset {name!r}: attribute {key!r} must be "
                             f"{'an integer' if kind is int else 'true or false'}, not {shown}")
    return kind(arr.item())


def _read_nnp(path: str, budget: LoadBudget) -> "OrderedDict[str, tuple[np.ndarray, bool]]":
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            h5 = [i for i in infos if i.filename.endswith(".h5")]
            if not h5:
                other = [i for i in infos if i.filename.endswith(".protobuf")]
                hint = (" (its parameters are in NNabla's .protobuf encoding; save them with "
                        "nnabla's save_parameters('....h5') instead)") if other else ""
                raise ModelFileError(f"{path}: no .h5 parameter file in the archive{hint}")
            out: OrderedDict[str, tuple[np.ndarray, bool]] = OrderedDict()
            for info in h5:
                data = read_zip_member(zf, info, budget)
                out.update(_read_h5(f"{path}:{info.filename}", budget, io.BytesIO(data)))
            return out
    except (zipfile.BadZipFile, OSError) as exc:
        raise ModelFileError(f"{path}: not a readable .nnp archive ({exc})") from None
