"""Stadyn's one file container: named tensors plus metadata, in a safetensors file.

Solver states, the Trainer's checkpoints and parameter files are all this container.  Its
metadata (safetensors allows string values only) always holds ``format`` (what the file is, e.g.
``stadyn-checkpoint``) and ``version``; the writer's other fields are plain strings (``text``) or
any JSON-able value (``fields``, stored as JSON).  Writing is atomic
(:func:`stadyn._fileutil.atomic_write`: a temporary file in the target's folder, flushed, then
renamed), so a crash leaves the previous file.  Reading checks the container and its ``format``
and gives every problem as one :class:`~stadyn.ModelFileError` naming the file; a field is read
with :meth:`TensorFile.field`, which checks that it is JSON of the expected type.

Example:
    >>> import os, tempfile, torch
    >>> from stadyn._tensorfile import read_tensor_file, write_tensor_file
    >>> path = os.path.join(tempfile.mkdtemp(), "state.safetensors")
    >>> write_tensor_file(path, {"w": torch.ones(2)}, format="demo", fields={"steps": {"w": 3}})
    >>> f = read_tensor_file(path, format="demo", what="demo file")
    >>> f.field("steps", dict), f.tensors["w"].tolist()
    ({'w': 3}, [1.0, 1.0])
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ._errors import ModelFileError, StadynError
from ._fileutil import atomic_write

__all__ = ["write_tensor_file", "tensor_file_bytes", "read_tensor_file", "TensorFile",
           "json_default"]


def json_default(value: Any) -> Any:
    """``json.dumps``' ``default`` for the values states hold: NumPy scalars and arrays."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in a file's metadata")


def _metadata(format: str, version: str, text: Mapping[str, str] | None,
              fields: Mapping[str, Any] | None) -> dict[str, str]:
    meta = {"format": format, "version": version}
    meta.update({k: str(v) for k, v in (text or {}).items()})
    meta.update({k: json.dumps(v, default=json_default) for k, v in (fields or {}).items()})
    return meta


def _host(tensors: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v.detach().cpu().contiguous() if hasattr(v, "detach") else v
            for k, v in tensors.items()}


def write_tensor_file(path: str | os.PathLike, tensors: Mapping[str, Any], *, format: str,
                      version: str = "1", text: Mapping[str, str] | None = None,
                      fields: Mapping[str, Any] | None = None) -> None:
    """Write ``tensors`` (torch tensors, copied to the host) with the metadata to ``path``,
    atomically."""
    from safetensors.torch import save_file
    meta = _metadata(format, version, text, fields)
    host = _host(tensors)
    atomic_write(path, lambda tmp: save_file(host, tmp, metadata=meta))


def tensor_file_bytes(tensors: Mapping[str, Any], *, format: str, version: str = "1",
                      text: Mapping[str, str] | None = None,
                      fields: Mapping[str, Any] | None = None) -> bytes:
    """The container as bytes (a member of another file, such as a model file's zip)."""
    from safetensors.torch import save
    return save(_host(tensors), metadata=_metadata(format, version, text, fields))


@dataclass
class TensorFile:
    """A container read back: its metadata (strings) and tensors; ``where`` names it."""

    where: str
    meta: dict[str, str]
    tensors: dict[str, Any]

    def field(self, key: str, kind: type, optional: bool = False) -> Any:
        """The JSON field ``key`` as a ``kind`` (``None`` when ``optional`` and absent); a
        :class:`~stadyn.StadynError` saying what is wrong otherwise."""
        if key not in self.meta:
            if optional:
                return None
            raise StadynError(f"the metadata has no '{key}'")
        try:
            value = json.loads(self.meta[key])
        except ValueError as exc:
            raise StadynError(f"the metadata's '{key}' is not valid JSON ({exc})") from None
        if not isinstance(value, kind):
            raise StadynError(f"the metadata's '{key}' is a {type(value).__name__}, not a "
                              f"{kind.__name__}")
        return value


def read_tensor_file(path: str | os.PathLike, *, format: str, what: str, name: str | None = None,
                     framework: str = "pt", metadata_only: bool = False) -> TensorFile:
    """Read a container written with ``format``; ``what`` names the kind of file in errors
    (``checkpoint``), ``name`` the file (default: ``path``).  ``metadata_only`` reads no
    tensors."""
    from safetensors import safe_open
    where = name or os.fspath(path)
    try:
        with safe_open(os.fspath(path), framework=framework) as f:
            meta = dict(f.metadata() or {})
            tensors = {} if metadata_only else {k: f.get_tensor(k) for k in f.keys()}
    except Exception as exc:  # noqa: BLE001 - safetensors raises several types for bad files
        raise ModelFileError(f"{where}: not a readable {what} ({exc})") from exc
    if meta.get("format") != format:
        raise ModelFileError(f"{where}: not a Stadyn {what}")
    return TensorFile(where, meta, tensors)
