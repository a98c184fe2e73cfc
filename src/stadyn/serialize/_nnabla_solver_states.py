"""The solver states NNabla 1.39 saves beside an optimizer, read without NNabla.

``nnabla.utils.save.save(..., include_solver_state=True)`` writes them into the ``.nnp`` as
``<optimizer>_<Solver>_optimizer.h5.optimizer`` (the layout of ``solver.save_states``) or, with
``solver_state_format='.protobuf'``, as one ``optimizer.protobuf.optimizer`` member: an
``NNablaProtoBuf`` whose ``optimizer`` entries hold ``solver.states`` (parameter -> ``t`` and
``state_parameter``: state name -> ``shape``, ``data``).  Saved into a ``.nntxt`` (or
``.protobuf``), the same fields are part of the file's ``optimizer`` sections.

Both forms come back here as ``{parameter: {state name: array, "t": steps}}``, what a solver's
``set_states`` takes.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Mapping

import numpy as np

from ._legacy_ir import fail

__all__ = ["read_nnabla_optimizer_states", "optimizer_states"]


def read_nnabla_optimizer_states(data: bytes, where: str
                                 ) -> "OrderedDict[str, OrderedDict[str, dict[str, Any]]]":
    """The solver states of each optimizer of a binary ``NNablaProtoBuf`` (``data``; ``where``
    names it in errors): ``{optimizer name: {parameter: {state: array, "t": steps}}}``.

    Example:
        >>> from stadyn._proto_schemas import nnabla_messages
        >>> m = nnabla_messages()["NNablaProtoBuf"]()
        >>> o = m.optimizer.add(); o.name = "opt"; o.solver.type = "Momentum"
        >>> e = o.solver.states.add(); e.key = "w"; e.value.t = 2
        >>> p = e.value.state_parameter.add(); p.key = "m"
        >>> p.value.shape.dim.extend([2]); p.value.data.extend([0.5, -1.0])
        >>> states = read_nnabla_optimizer_states(m.SerializeToString(), "opt.protobuf")
        >>> states["opt"]["w"]["m"].tolist(), states["opt"]["w"]["t"]
        ([0.5, -1.0], 2)
    """
    from google.protobuf.message import DecodeError
    from .._proto_schemas import nnabla_messages
    try:
        message = nnabla_messages()["NNablaProtoBuf"].FromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise fail(where, f"not a readable NNabla protobuf file ({exc})") from None
    out: OrderedDict[str, OrderedDict[str, dict[str, Any]]] = OrderedDict()
    for o in message.optimizer:
        fields = {"states": [{"key": e.key, "value": {
            "t": e.value.t, "state_parameter": [
                {"key": p.key, "value": {"shape": {"dim": list(p.value.shape.dim)},
                                         "data": list(p.value.data)}}
                for p in e.value.state_parameter]}} for e in o.solver.states]}
        out[o.name] = optimizer_states({"solver": fields}, f"{where}: optimizer {o.name!r}")
    return out


def _list(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def optimizer_states(fields: Mapping[str, Any], where: str
                     ) -> "OrderedDict[str, dict[str, Any]]":
    """``{parameter: {state: array, "t": steps}}`` of one optimizer given as its file fields
    (an ``optimizer`` section as ``read_legacy_model`` keeps it: ``solver.states``); empty when
    the optimizer holds no states.  A state whose data does not fill its shape is an error
    naming ``where``.

    Example:
        >>> fields = {"solver": {"type": "Sgd", "states": [{"key": "w", "value": {
        ...     "t": 1, "state_parameter": []}}]}}
        >>> dict(optimizer_states(fields, "net.nntxt"))
        {'w': {'t': 1}}
    """
    solver = fields.get("solver") or {}
    out: OrderedDict[str, dict[str, Any]] = OrderedDict()
    for entry in _list(solver.get("states")):
        name = str(entry.get("key", ""))
        value = entry.get("value") or {}
        state: dict[str, Any] = {"t": int(value.get("t", 0) or 0)}
        for p in _list(value.get("state_parameter")):
            key = str(p.get("key", ""))
            body = p.get("value") or {}
            dims = [int(d) for d in _list((body.get("shape") or {}).get("dim"))]
            data = np.asarray(_list(body.get("data")), dtype=np.float32)
            if any(d < 0 for d in dims) or int(np.prod(dims)) != data.size:
                raise fail(where, f"state {key!r} of {name!r} has {data.size} values for "
                                  f"shape {tuple(dims)}")
            state[key] = data.reshape(dims)
        out[name] = state
    return out
