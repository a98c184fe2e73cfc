"""A walk into the blocks of a CNTK layer not applied yet (``depth_first_search(Dense(3),
visitor, depth=1)``), as CNTK 2.7 walks its Function over its placeholder: the block, the
placeholder its argument is, then the block's ops (``Plus``, ``Times``) and parameters.

Stadyn builds a layer's graph when the layer is applied, so the walk is that of a copy of
the layer (new parameters, in a registry of its own, the program's seeds kept) applied to a
stand-in input, each node mapped back to what the layer shows: the stand-in to the layer's
placeholder, the copy's parameters to the layer's declared ones (``W`` of ``(-1, 3)``), the
functions the walk at depth 0 meets (the layer's root, a ``Sequential``'s steps) to those;
the ops inside the blocks are the copy's (their shapes the stand-in's, where CNTK 2.7's are
unknown).  A layer of several arguments, or whose parameters Stadyn does not declare before
it is applied, is not walked so (None).

Example:
    >>> import stadyn.compat.cntk as C
    >>> search = C.logging.graph.depth_first_search
    >>> d = C.layers.Dense(3, name="d")
    >>> walked = applied_copy_walk(d, 1, search)
    >>> [(n.name, getattr(n, "op_name", None)) for n in walked]
    [('d', 'Dense'), ('x', None), ('', 'Plus'), ('', 'Times'), ('W', None), ('b', None)]
    >>> walked[4] is d.W
    True
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...parametric import ParameterRegistry, parameter_registry
from ..._random import auto_seeds_kept

__all__ = ["applied_copy_walk"]

# the length of the stand-in input's one axis (any: the layer's weight takes it)
_STAND_IN_LENGTH = 7


def applied_copy_walk(layer_fn: Any, depth: int, search: Callable) -> "list | None":
    """Every node of the walk of ``layer_fn`` (a ``LayerFunction`` never applied) ``depth``
    levels into its blocks, in CNTK 2.7's order, mapped back to the layer's own (see the
    module's text); None where the layer is not walked so.  ``search``: the walk
    (``logging.graph.depth_first_search``)."""
    from ._layer_clones import copied as copied_layer
    from ._variables import input_variable
    declared = layer_fn._known_parameters()
    if declared is None or len(layer_fn.arguments) != 1:
        return None
    try:
        shown = search(layer_fn, lambda n: True, 0)     # (its functions at depth 0)
        with auto_seeds_kept(), parameter_registry(ParameterRegistry()):
            memo: dict = {}
            natives = {id(p): p._layer() for p in declared if p._layer is not None}
            copied = copied_layer(layer_fn, memo)
            placeholder = layer_fn._own_placeholder()
            dtype = np.float64 if any(np.dtype(p.dtype) == np.float64 for p in declared) \
                else np.float32
            stand_in = input_variable(_STAND_IN_LENGTH, dtype=dtype, name=placeholder.name)
            out = copied(stand_in)
            walked = search(out, lambda n: True, depth)
            top = search(out, lambda n: True, 0)
    except Exception:       # (a layer the stand-in cannot be given: not walked so)
        return None
    mapped = {stand_in.uid: placeholder}
    for p in declared:
        native = memo.get(id(natives.get(id(p))))
        made = getattr(native, "_params", {}).get(p.name)
        if made is None:
            return None
        mapped[_uid(made)] = p
    functions = [n for n in top if _is_function(n)]
    own = [n for n in shown if _is_function(n)]
    if [f.op_name for f in functions] != [f.op_name for f in own]:
        return None
    mapped.update((f.uid, g) for f, g in zip(functions, own))
    return [mapped.get(n.uid, n) for n in walked]


def _uid(v: Any) -> str:
    from ._adapt import wrap
    return wrap(v).uid


def _is_function(node: Any) -> bool:
    return hasattr(node, "inputs") and hasattr(node, "op_name")
