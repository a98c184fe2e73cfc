"""Rebuilding a model file's op nodes from ``network.json`` (the reader, ``_model.py``, checks
the rest of the file): each node is one call of its catalog function, in its recorded scope,
with its outputs checked against the recorded shapes and dtypes.  An op whose attributes are
not plain values reads them through its ``model_import`` rule (``serialize/op_rules/``), which
receives a :class:`GraphReader`: a recurrence's step is a graph of its own, stored with the
same records and rebuilt by the same code.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from .._errors import StadynError
from ..graph import Variable, name_scope, set_sequence_axis
from ..ops import CATALOG, function_of
from ._model_format import _DTYPES, _NESTING_LIMIT, _check, _decode, _Invalid, _is_shape
from .op_rules import kept_in_model_files, rules_for

__all__ = ["GraphReader", "build_node"]


class GraphReader:
    """What a node's ``model_import`` rule reads its attributes with: :meth:`value` (a plain
    value), :meth:`graph` (a graph the op holds, written by ``GraphWriter.graph``) and
    :meth:`fail` (one error naming the file, node and problem).

    Example:
        >>> import numpy as np
        >>> r = GraphReader("network.json: node 0 (recurrence)")
        >>> g = {"variables": [{"kind": "leaf", "shape": [1, 2], "dtype": "float32",
        ...                     "need_grad": False, "persistent": False},
        ...                    {"kind": "op", "shape": [1, 2], "dtype": "float32",
        ...                     "need_grad": False, "persistent": False}],
        ...      "nodes": [{"op": "tanh", "scope": "", "inputs": [0], "outputs": [1],
        ...                 "attrs": {}}], "outputs": [1]}
        >>> leaves, outputs = r.graph(g, [None])
        >>> outputs[0].parent.spec.name, outputs[0].shape
        ('tanh', (1, 2))
    """

    def __init__(self, where: str, batch_size: int | None = None, depth: int = 0):
        self.where, self.batch_size, self.depth = where, batch_size, depth

    def fail(self, message: str) -> None:
        """Raise the model file's error for this node."""
        raise _Invalid(f"{self.where}: {message}")

    def value(self, value: Any, what: str) -> Any:
        """A plain attribute value stored as JSON."""
        return _decode(value, f"{self.where}: {what}")

    def graph(self, stored: Any, like: list) -> tuple[list[Variable], list[Variable]]:
        """``(leaves, outputs)`` of a graph stored in an attribute: a new placeholder per leaf
        record (``like[k]``, when not None, is the Variable leaf ``k`` stands for: its shape,
        dtype and sequence axis), the nodes rebuilt on them, the outputs by id."""
        where = self.where
        _check(self.depth < _NESTING_LIMIT, f"{where}: graphs nested more than "
                                            f"{_NESTING_LIMIT} deep")
        _check(isinstance(stored, dict) and set(stored) == {"variables", "nodes", "outputs"},
               f"{where}: a graph must be an object with variables, nodes and outputs")
        records, nodes, outputs = stored["variables"], stored["nodes"], stored["outputs"]
        _check(isinstance(records, list) and isinstance(nodes, list)
               and isinstance(outputs, list), f"{where}: a graph's variables, nodes and "
                                              "outputs must be lists")
        n_leaves = len(like)
        _check(len(records) >= n_leaves, f"{where}: the graph has {len(records)} variables, "
                                         f"fewer than its {n_leaves} leaves")
        allowed = {"kind", "shape", "dtype", "need_grad", "persistent", "batch"}
        values: list[Variable | None] = [None] * len(records)
        for k, rec in enumerate(records):
            at = f"{where}: graph variable {k}"
            _check(isinstance(rec, dict) and set(rec) <= allowed
                   and rec.get("kind") == ("leaf" if k < n_leaves else "op"),
                   f"{at}: must be a {'leaf' if k < n_leaves else 'op'} record")
            _check(_is_shape(rec.get("shape")) and rec.get("dtype") in _DTYPES,
                   f"{at}: bad shape or dtype")
            for flag in ("need_grad", "persistent", "batch"):
                _check(isinstance(rec.get(flag, False), bool), f"{at}: '{flag}' must be a bool")
            if k < n_leaves:
                values[k] = self._leaf(rec, like[k], at)
        inner = GraphReader(where, self.batch_size, self.depth + 1)
        for j, node in enumerate(nodes):
            build_node(f"{where}: graph node {j}", node, records, values, self.batch_size,
                       inner)
        result = []
        for ref in outputs:
            _check(isinstance(ref, int) and not isinstance(ref, bool)
                   and 0 <= ref < len(values) and values[ref] is not None,
                   f"{where}: a graph output {ref!r} is not one of its computed variables")
            result.append(values[ref])
        return list(values[:n_leaves]), result

    def _leaf(self, rec: dict, like: Variable | None, at: str) -> Variable:
        shape = list(rec["shape"])
        if like is not None:
            _check(_dtype_name(like.torch_dtype) == rec["dtype"] and len(like.shape) == len(shape),
                   f"{at}: stands for a {like.shape} {_dtype_name(like.torch_dtype)} value, "
                   f"the file says {tuple(shape)} {rec['dtype']}")
            if self.batch_size is None:
                _check(list(like.shape) == shape, f"{at}: stands for a {like.shape} value, "
                                                  f"the file says {tuple(shape)}")
            shape = list(like.shape)
        v = Variable(shape, need_grad=rec.get("need_grad", False), dtype=_np_or_torch(rec["dtype"]))
        v.persistent = rec.get("persistent", False)
        if like is not None:
            set_sequence_axis(v, like.sequence_lengths)
        return v


def build_node(where: str, node: Any, records: list[dict], values: list,
               batch_size: int | None, reader: GraphReader | None = None) -> None:
    """Rebuild one stored node (``network.json``'s form) on ``values`` (Variables by id), and
    record its outputs there."""
    _check(isinstance(node, dict) and set(node) == {"op", "scope", "inputs", "outputs", "attrs"},
           f"{where} must be an object with op, scope, inputs, outputs and attrs")
    name, scope = node["op"], node["scope"]
    # (an op declared unstorable is read only through a model_import rule of its own: a CNTK
    # user function, rebuilt from its module, class and state)
    _check(isinstance(name, str) and name in CATALOG and kept_in_model_files(CATALOG[name]),
           f"{where}: unknown op {name!r}")
    _check(isinstance(scope, str), f"{where}: scope must be a string")
    where = f"{where} ({name}{' in ' + repr(scope) if scope else ''})"
    spec = CATALOG[name]
    ins, outs, attrs = node["inputs"], node["outputs"], node["attrs"]
    _check(isinstance(ins, list) and isinstance(outs, list) and isinstance(attrs, dict),
           f"{where}: inputs and outputs must be lists, attrs an object")
    if not spec.variadic:
        _check(len(ins) == len(spec.inputs), f"{where}: {len(ins)} inputs, the op takes "
                                             f"{len(spec.inputs)}")
    args = []
    for j, ref in enumerate(ins):
        if ref is None:
            _check(not spec.variadic and spec.inputs[j] in spec.optional_inputs,
                   f"{where}: input {j} is required")
            args.append(None)
        elif isinstance(ref, dict):
            _check(set(ref) == {"value"}, f"{where}: input {j} is a bad literal")
            args.append(_decode(ref["value"], f"{where}: input {j}"))
        else:
            v = values[_id(ref, len(values), f"{where}: input {j}")]
            _check(v is not None, f"{where}: input {j} (variable {ref}) is not computed yet")
            args.append(v)
    unknown = sorted(set(attrs) - set(spec.attrs))
    _check(not unknown, f"{where}: unknown attribute(s) {unknown}")
    rules = rules_for(spec)
    read: Callable | None = rules.model_import if rules is not None and callable(
        rules.model_import) else None
    if read is not None:
        reader = GraphReader(where, batch_size, 0 if reader is None else reader.depth)
        kwargs = read(reader, attrs, args)
    else:
        kwargs = {a: _decode(v, f"{where}: attribute {a!r}") for a, v in attrs.items()}
    if name == "split" and args and isinstance(args[0], Variable):
        # The one op whose number of outputs follows its input's shape: a file listing two
        # outputs of a split of 2^28 rows would otherwise make 2^28 Variables before the
        # count is compared.
        axis = kwargs.get("axis", spec.attrs.get("axis", 0))
        ndim = args[0].ndim
        _check(isinstance(axis, int) and -ndim <= axis < ndim, f"{where}: bad axis {axis!r}")
        count = args[0].shape[axis]
        _check(count == len(outs), f"{where}: the op gives {count} outputs, the file lists "
                                   f"{len(outs)}")
    try:
        with name_scope(scope, absolute=True):
            result = function_of(name)(*args, **kwargs)
    except StadynError as exc:
        raise _Invalid(f"{where}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a bad attribute value reaching the op
        raise _Invalid(f"{where}: the op rejects its attributes ({type(exc).__name__}: "
                       f"{str(exc)[:200]})") from None
    results = [result] if isinstance(result, Variable) else list(result)
    _check(len(results) == len(outs), f"{where}: the op gives {len(results)} outputs, the "
                                      f"file lists {len(outs)}")
    for var, ref in zip(results, outs):
        if ref is None:
            continue
        vid = _id(ref, len(values), f"{where}: output")
        rec = records[vid]
        _check(rec["kind"] == "op" and values[vid] is None,
               f"{where}: output variable {vid} is not a fresh op output")
        want, got = list(rec["shape"]), list(var.shape)
        if batch_size is not None and (rec.get("batch") or reader is not None) and want and got:
            want[0] = got[0]
        if spec.value_shape and len(want) == len(got):
            want = got      # the shape its values gave the run before the save (spec.value_shape)
        _check(got == want and _dtype_name(var.torch_dtype) == rec["dtype"],
               f"{where}: the op gives shape {tuple(got)} {_dtype_name(var.torch_dtype)}, the "
               f"file says {tuple(rec['shape'])} {rec['dtype']}")
        var.persistent = rec.get("persistent", False)
        values[vid] = var


def _id(value: Any, n: int, where: str) -> int:
    _check(isinstance(value, int) and not isinstance(value, bool) and 0 <= value < n,
           f"{where}: bad variable id {value!r}")
    return value


def _np_or_torch(name: str) -> Any:
    return torch.bfloat16 if name == "bfloat16" else np.dtype(name)


def _dtype_name(dtype: torch.dtype) -> str:
    return "bfloat16" if dtype == torch.bfloat16 else torch.empty(0, dtype=dtype).numpy().dtype.name
