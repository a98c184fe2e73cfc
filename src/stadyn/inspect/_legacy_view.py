"""The :class:`GraphView` of another framework's decoded model file (:class:`LegacyModel`: NNabla
``.nnp``/``.nntxt``, CNTK ``.model``/``.dnn``), drawn with the format's own op names -- before any
mapping onto Stadyn ops, so multiply-adds are not counted.

Scopes come from what the file records: NNabla names parameters by scope path
(``cnn/conv1/conv/W``), so an op sits in the scope of its parameters, and an op without any
follows the op that feeds it (into that op's enclosing scope if the feeding op has parameters);
CNTK's layers are block functions, drawn as one box each with the ops inside listed.
Parameters are what the format calls parameters (NNabla's running statistics among them); CNTK's
constants (its batch normalisation's running statistics too) are listed as constants, as
CNTK's own ``parameters`` leaves them out.
"""

from __future__ import annotations

import os
from collections import OrderedDict

from .._errors import StadynError
from ..serialize import LegacyFunction, LegacyModel, LegacyNetwork
from ._view import Box, Edge, GraphView, Param, Tensor, build_scopes

__all__ = ["legacy_view"]


def _pick(model: LegacyModel, network: str | None) -> LegacyNetwork:
    if not model.networks:
        raise StadynError(f"{model.path}: the file holds no network")
    if network is None:
        return next(iter(model.networks.values()))
    if network not in model.networks:
        raise StadynError(f"{model.path}: no network {network!r}; the file holds "
                          f"{list(model.networks)}")
    return model.networks[network]


def _attrs(f: LegacyFunction) -> dict:
    shown = {k: v for k, v in f.attrs.items() if v not in (None, (), [], {}, "")}
    if f.body is not None:
        shown["ops"] = ", ".join(g.type for g in f.body.functions)
    return shown


def legacy_view(model: LegacyModel, network: str | None = None) -> GraphView:
    """The view of one network of ``model`` (by default the first one).

    Example:
        >>> import numpy as np
        >>> from collections import OrderedDict
        >>> from stadyn.serialize import *
        >>> net = LegacyNetwork("main", [LegacyFunction("f", "Affine", ("x", "fc/W"), ("y",))],
        ...                     OrderedDict(x=LegacyVariable("x", "input", (-1, 3)),
        ...                                 y=LegacyVariable("y", "output", (-1, 2))),
        ...                     ["x"], ["y"])
        >>> m = LegacyModel("nnp", "m.nnp", OrderedDict(main=net),
        ...                 OrderedDict({"fc/W": LegacyParameter("fc/W", np.zeros((3, 2)))}))
        >>> v = legacy_view(m)
        >>> [(b.label, b.scope) for b in v.boxes.values()], v.n_parameters
        ([('x', ''), ('Affine', 'fc'), ('y', '')], 6)
    """
    net = _pick(model, network)
    cntk = model.format.startswith("cntk")

    def constant_of(name: str) -> Tensor | None:
        p, var = model.parameters.get(name), net.variables.get(name)
        if p is not None and p.kind != "parameter":
            return Tensor(tuple(p.value.shape), str(p.value.dtype))
        if p is None and var is not None and var.kind == "constant":
            return Tensor(tuple(var.shape) if var.shape is not None else None, var.dtype)
        return None

    def param_of(name: str) -> Param | None:
        p = model.parameters.get(name)
        if p is None:
            var = net.variables.get(name)
            if var is None or var.kind != "parameter":
                return None
            return Param(name, tuple(var.shape or ()), var.dtype, True)
        if p.kind != "parameter":
            return None
        full = f"{name}/{p.name}" if cntk and p.name != name else name
        return Param(full, tuple(int(d) for d in p.value.shape), str(p.value.dtype),
                     bool(p.need_grad))

    def tensor(name: str) -> Tensor:
        var = net.variables.get(name)
        return Tensor(tuple(var.shape) if var is not None and var.shape is not None else None,
                      var.dtype if var is not None else "float32")

    uses: dict[str, int] = {}
    for f in net.functions:
        for name in f.inputs:
            uses[name] = uses.get(name, 0) + 1
    produced = {o for f in net.functions for o in f.outputs}
    boxes: OrderedDict[str, Box] = OrderedDict()
    edges: list[Edge] = []
    source: dict[str, str] = {}
    for name in dict.fromkeys([*net.inputs, *(n for f in net.functions for n in f.inputs)]):
        if (name in produced or name in source or param_of(name) is not None
                or constant_of(name) is not None):
            continue
        key = f"i{len(source)}"
        label = (net.variables[name].meta.get("name") if name in net.variables else "") or name
        boxes[key] = Box(key, "input", label, outputs=[tensor(name)])
        source[name] = key
    scope_of: dict[str, str] = {}       # box key -> scope
    for k, f in enumerate(net.functions):
        key = f"n{k}"
        box = Box(key, "op", f.type, attrs=_attrs(f), all_attrs=dict(f.attrs),
                  outputs=[tensor(o) for o in f.outputs], macs=None)
        fed = None
        for name in f.inputs:
            if name in source:
                edges.append(Edge(source[name], key, tensor(name)))
                fed = fed or source[name]
                continue
            const = constant_of(name)
            if const is not None:
                box.constants.append(const)
                continue
            p = param_of(name)
            if p is None:
                continue
            if uses.get(name, 0) > 1:
                pkey = f"p{len(boxes)}"
                boxes[pkey] = Box(pkey, "parameter", p.short_name, p.name.rpartition("/")[0],
                                  params=[p], outputs=[tensor(name)])
                source[name] = pkey
                edges.append(Edge(pkey, key, tensor(name)))
            else:
                box.params.append(p)
        if box.params and not cntk:
            box.scope = box.params[0].name.rpartition("/")[0]
        elif f.meta.get("name"):
            box.scope = str(f.meta["name"])
        elif fed is not None and fed in scope_of:
            feeder = boxes[fed]
            box.scope = feeder.scope.rpartition("/")[0] if feeder.params else feeder.scope
        scope_of[key] = box.scope
        boxes[key] = box
        for o in f.outputs:
            source[o] = key
    for k, name in enumerate(net.outputs):
        key = f"o{k}"
        boxes[key] = Box(key, "output", name, outputs=[tensor(name)])
        if name in source:
            edges.append(Edge(source[name], key, tensor(name)))
    others = [n for n in model.networks if n != net.name]
    title = f"{os.path.basename(model.path)}: network {net.name!r}"
    if others:
        title += f" (also in the file: {', '.join(others)})"
    return GraphView(boxes, edges, build_scopes(boxes), title)
