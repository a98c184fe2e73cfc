"""``clone`` of a CNTK layer not applied yet (``C.layers.Dense(3).clone(C.CloneMethod.share)``).

CNTK 2.7's layer is a Function over placeholders from the start, so its ``clone`` copies
that Function: ``share`` keeps the layer's parameters (the copy applied to an input of
``(2,)`` gives the layer's weight ``(2, 3)`` too), ``clone`` makes new ones of the same
declared shapes (the layer's stay of unknown shape), and ``freeze`` refuses a parameter of
an axis still unknown, which has no value to make a constant of (a ValueError,
``NDArrayView`` of a view shape ``[? x 3]``).  A substitution of the layer's placeholder
applies the copy to what replaces it (one without a shape: a copy still waiting, of shape
``(-2,)``; one of ``(4,)``: the weight ``(4, 3)``).

Example:
    >>> import stadyn.compat.cntk as C
    >>> d = C.layers.Dense(3)
    >>> g = d.clone(C.CloneMethod.share)
    >>> g.shape, [p.shape for p in g.parameters], g.W is d.W
    ((-2,), [(-1, 3), (3,)], True)
    >>> [p.shape for p in d.clone(C.CloneMethod.share, {d.arguments[0]: C.placeholder(4)})
    ...  .parameters]
    [(4, 3), (3,)]
"""

from __future__ import annotations

import copy
from typing import Any

from ._function_rebuild import CloneMethod
from ._variable_text import dims_text

__all__ = ["clone_unapplied", "copied"]

# what the copy of a layer forgets of the one it is made from: its own placeholder and output
# (made when first asked), its declared parameters (a clone's are new), its applications
_FORGOTTEN = ("_keep", "_waiting", "_declared", "_uid", "_signature")


def clone_unapplied(layer_fn: Any, method: Any, substitutions: "dict | None") -> Any:
    """``layer_fn`` (a ``LayerFunction`` never applied) cloned as CNTK 2.7 clones its Function
    (see the module's text)."""
    method = CloneMethod(getattr(method, "value", method))
    known = layer_fn._known_parameters()
    if method is CloneMethod.freeze:
        unknown = [p for p in known or () if -1 in tuple(p.shape)]
        if unknown or known is None:
            shape = dims_text(tuple(unknown[0].shape)) if unknown else "?"
            raise ValueError(f"Cannot create an NDArrayView using a view shape '[{shape}]' that "
                             "has unknown dimensions for any of its axes.\nclone(freeze) of "
                             f"{layer_fn.kind or 'a layer'} not applied yet: its parameters "
                             "have no values to freeze until it is applied")
    other = copy.copy(layer_fn)
    for key in _FORGOTTEN:
        other.__dict__.pop(key, None)
    other._signature, other._applied, other._order = None, [], []
    if method is CloneMethod.share:
        if known is not None:       # (the same parameters: CNTK's, shared)
            other.__dict__["_declared"] = known
    else:
        other.layer = _copied_native(layer_fn, {})
        made = other._known_parameters()
        for p, q in zip(known or (), made or ()):   # (the values set on the layer's: CNTK's
            if p.__dict__.get("_set") is not None:  # clone copies its parameters' values)
                q.value = p._set
    if not substitutions:
        return other
    own = list(layer_fn.arguments)
    bound = list(own)
    for old, new in substitutions.items():
        found = [k for k, a in enumerate(own) if a is old or
                 getattr(a, "variable", a) is getattr(old, "variable", old)]
        if not found:
            continue            # (not in the layer's graph: nothing to replace)
        bound[found[0]] = new
    return other if all(b is a for a, b in zip(own, bound)) else other(*bound)



def copied(layer_fn: Any, memo: dict) -> Any:
    """A copy of ``layer_fn`` (never applied) over a deep copy of its native layer, new
    parameters (``memo``: the deep copy's, each original's id to its copy)."""
    other = clone_unapplied(layer_fn, CloneMethod.share, None)
    other.layer = _copied_native(layer_fn, memo)
    other.__dict__.pop("_declared", None)
    return other


def _copied_native(layer_fn: Any, memo: dict) -> Any:
    """A deep copy of the native layer of ``layer_fn``; a composite's steps that are layers
    (which refuse a deep copy, as CNTK 2.7's SWIG objects) copied so first (:func:`copied`)."""
    from ._layers_composite import CompositeLayer
    native = layer_fn.layer
    if isinstance(native, CompositeLayer):
        for step in native.composite.steps:
            for member in step if isinstance(step, tuple) else (step,):
                if hasattr(member, "layer") and hasattr(member, "_known_parameters") and \
                        id(member) not in memo:
                    memo[id(member)] = copied(member, memo)
    return copy.deepcopy(native, memo)
