"""The Stadyn model file format's constants and the JSON form of op attribute values, shared
by the writer (``_model_save.py``) and the reader (``_model.py``).

A model file (``.stadyn``) is a zip archive of

* ``format.json`` -- ``{"format": "stadyn-model", "version": 2, "producer": ...}``;
* ``network.json`` -- the graph: variables, op nodes (catalog names and attributes), named inputs
  and outputs, parameter names (see ``docs/model-files.md`` for the schema).  Version 2 added
  sequence inputs with their ``lengths`` and graphs inside attributes (a recurrence's step);
  version 3 random streams (a ``RandomStream`` seed: its seed and its generator's state,
  ``$stream``);
* ``parameters.safetensors`` -- the parameters by scope path (with their ``need_grad``);
* ``constants.safetensors`` -- leaf values that are neither inputs nor parameters (if any);
* ``solver.safetensors`` -- optionally, solver state as ``Solver.save_states`` writes it.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from ..ops import RandomStream

__all__ = ["FORMAT", "VERSION"]

FORMAT = "stadyn-model"
VERSION = 3

_REQUIRED = ("format.json", "network.json", "parameters.safetensors")
_OPTIONAL = ("constants.safetensors", "solver.safetensors")
_JSON_LIMIT = 16 << 20           # bytes of JSON a model file may hold
_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
           "uint8", "bool")
_DEPTH_LIMIT = 32
_NESTING_LIMIT = 8               # graphs inside op attributes (a recurrence's step) inside ...


class _Invalid(Exception):
    """A problem in a model file (turned into ModelFileError naming the file)."""


def _check(condition: Any, message: str) -> None:
    if not condition:
        raise _Invalid(message)


def _is_shape(value: Any) -> bool:
    return isinstance(value, list) and len(value) <= 64 and all(
        isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2 ** 40 for d in value)


# ---------------------------------------------------------------------------------------------
# Attribute values <-> JSON
# ---------------------------------------------------------------------------------------------
def _encode(value: Any, depth: int = 0) -> Any:
    """An attribute value as JSON: tuples, non-finite floats and arrays are tagged objects."""
    if depth > _DEPTH_LIMIT:
        raise TypeError("nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, RandomStream):     # its seed and where it stands (format version 3)
        value.mark_saved()
        return {"$stream": {"seed": int(value), "state": value.state()}}
    if isinstance(value, np.generic):
        return _encode(value.item(), depth)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v, depth + 1) for v in value]}
    if isinstance(value, list):
        return [_encode(v, depth + 1) for v in value]
    if isinstance(value, np.ndarray):
        if value.dtype.name not in _DTYPES:
            raise TypeError(f"an array of dtype {value.dtype}")
        return {"$array": {"dtype": value.dtype.name, "shape": list(value.shape),
                           "data": [_encode(v) for v in value.reshape(-1).tolist()]}}
    raise TypeError(f"a {type(value).__name__} value")


def _decode(value: Any, where: str, depth: int = 0) -> Any:
    if depth > _DEPTH_LIMIT:
        raise _Invalid(f"{where}: nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_decode(v, where, depth + 1) for v in value]
    if isinstance(value, dict) and len(value) == 1:
        (tag, body), = value.items()
        if tag == "$tuple" and isinstance(body, list):
            return tuple(_decode(v, where, depth + 1) for v in body)
        if tag == "$float" and body in ("nan", "inf", "-inf"):
            return float(body)
        if tag == "$stream" and isinstance(body, dict) and set(body) == {"seed", "state"}:
            seed, state = body["seed"], body["state"]
            _check(isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2 ** 64
                   and isinstance(state, str), f"{where}: a random stream's seed must be an "
                                               "integer in 0..2**64-1 and its state a string")
            try:
                stream = RandomStream.restored(seed, state)
            except ValueError as exc:
                raise _Invalid(f"{where}: a random stream's state: {exc}") from None
            stream.mark_saved()     # (the file's save is its last: where a copy starts)
            return stream
        if tag == "$array" and isinstance(body, dict) and set(body) == {"dtype", "shape", "data"}:
            dtype, shape, data = body["dtype"], body["shape"], body["data"]
            _check(dtype in _DTYPES and dtype != "bfloat16", f"{where}: array dtype {dtype!r}")
            _check(_is_shape(shape), f"{where}: array shape {shape!r}")
            _check(isinstance(data, list) and len(data) == math.prod(shape),
                   f"{where}: array data does not match its shape")
            flat = [_decode(v, where, depth + 1) for v in data]
            _check(all(isinstance(v, (bool, int, float)) for v in flat),
                   f"{where}: array data must be numbers")
            return np.asarray(flat, dtype=dtype).reshape(shape)
    raise _Invalid(f"{where}: {json.dumps(value)[:80]} is not a valid attribute value")
