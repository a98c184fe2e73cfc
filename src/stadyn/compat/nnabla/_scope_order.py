"""Where NNabla 1.39 places a parameter scope among its siblings: where it was entered.

NNabla's ``parameter_scope(name)`` makes the scope's dict in the current one as it is entered
(``OrderedDict.setdefault``, python/src/nnabla/parameter.py), so a scope entered before it
holds a parameter keeps that place: ``with parameter_scope("b"): pass``, then ``x``, then
``b/W`` are listed ``b/W``, ``x`` by ``nn.get_parameters()``.  Stadyn's registry is flat, in
creation order; :func:`parameter_scope` notes each scope path as it is entered, after which
parameter (``None``: before all), and :func:`ordered_keys` gives the registry's paths in
NNabla's order, the nested dicts walked depth-first, each scope placed where it was first
entered or got its first parameter, whichever came first (the scopes entered are noted by
:func:`stadyn.parameter_scope` itself, ``ParameterRegistry.entered``: a program mixing it
with NNabla's gets NNabla's order).  That order is kept per registry
and made again only when the registry's paths or the scopes entered changed (a comparison of
the path list), not at every call.  :func:`clear_parameters` forgets the scopes it clears, as
NNabla empties the current scope's dict.

Example:
    >>> import stadyn as sd
    >>> with sd.parameter_registry(sd.ParameterRegistry()) as reg:
    ...     with parameter_scope("b"):
    ...         pass
    ...     _ = sd.get_parameter_or_create("x", (1,))
    ...     with parameter_scope("b"):
    ...         _ = sd.get_parameter_or_create("W", (1,))
    ...     ordered_keys(reg)
    ['b/W', 'x']
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import Any

from ... import parametric as _parametric
from ...graph import current_scope
from ...graph import IdentityKeyDict

__all__ = ["parameter_scope", "clear_parameters", "ordered_keys"]


class _Order:
    """The order last made from one registry's paths and scopes entered (for the path list
    ``keys`` and ``entered_count`` scopes)."""

    __slots__ = ("keys", "entered_count", "order")

    def __init__(self) -> None:
        self.keys: list | None = None
        self.entered_count = -1
        self.order: list = []


_ORDERS: "IdentityKeyDict[Any, _Order]" = IdentityKeyDict()


def _order_of(registry) -> _Order:
    order = _ORDERS.get(registry)
    if order is None:
        order = _ORDERS[registry] = _Order()
    return order


@contextlib.contextmanager
def parameter_scope(name: str, scope: Any = None):
    """NNabla's ``nn.parameter_scope(name)``: Stadyn's (:func:`stadyn.parameter_scope`), which
    notes the scope as entered in the registry (``ParameterRegistry.entered``, read by
    :func:`ordered_keys`; ``'a/b'`` enters ``a`` and ``a/b``), Stadyn's own scopes too.

    Example:
        >>> import stadyn as sd
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     with parameter_scope("net/fc"):
        ...         sd.get_parameter_or_create("W", (1,)).name
        'net/fc/W'
    """
    with _parametric.parameter_scope(name, scope):
        yield


def clear_parameters() -> None:
    """NNabla's ``nn.clear_parameters()``: Stadyn's, the scopes entered under the current one
    forgotten too (NNabla empties the current scope's dict).

    Example:
        >>> import stadyn as sd
        >>> with sd.parameter_registry(sd.ParameterRegistry()) as reg:
        ...     with parameter_scope("k"):
        ...         pass
        ...     clear_parameters()
        ...     _ = sd.get_parameter_or_create("z", (1,))
        ...     with parameter_scope("k"):
        ...         _ = sd.get_parameter_or_create("w", (1,))
        ...     ordered_keys(reg)
        ['z', 'k/w']
    """
    _parametric.clear_parameters()
    entered = _parametric.current_registry().entered
    head = current_scope()
    for path in [p for p in entered if not head or p.startswith(head + "/")]:
        del entered[path]


def ordered_keys(registry) -> list:
    """The paths of ``registry``'s parameters in NNabla 1.39's order (see the module
    docstring; the example there)."""
    order = _order_of(registry)
    keys = list(registry)
    entered = registry.entered
    if keys == order.keys and len(entered) == order.entered_count:
        return order.order
    tree: OrderedDict = OrderedDict()
    after: dict = {}                # a parameter path -> the scopes entered right after it
    for path, last in entered.items():
        after.setdefault(last if last is None or last in registry else None, []).append(path)
    for path in after.get(None, ()):
        _node(tree, path.split("/"))
    for key in keys:
        *scopes, leaf = key.split("/")
        _node(tree, scopes)[leaf] = key
        for path in after.get(key, ()):
            _node(tree, path.split("/"))
    order.keys, order.entered_count = keys, len(entered)
    order.order = list(_walk(tree))
    return order.order


def _node(tree: OrderedDict, scopes: list) -> OrderedDict:
    """The nested dict of ``scopes`` in ``tree``, made where missing (a scope's entry is keyed
    ``name + "/"``, apart from a parameter of that name)."""
    node = tree
    for name in scopes:
        node = node.setdefault(name + "/", OrderedDict())
    return node


def _walk(tree: OrderedDict):
    for name, entry in tree.items():
        if name.endswith("/"):
            yield from _walk(entry)
        else:
            yield entry
