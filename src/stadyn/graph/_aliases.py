"""Which memory an ATen node of a traced program reads and writes, from each op's schema.

An op's schema says which of its results share memory with which argument (``Tensor(a)``: a
view's input, an in-place op's ``self``, an ``out=`` op's ``out``) and which arguments it
writes (``Tensor(a!)``).  The split into forward and backward programs (``_partition.py``)
and the passes after it (``_passes.py``: which outputs may share memory, which values an op
may overwrite) ask the same questions here, so they judge a storage alike.

Some results share memory without their schema's ``Tensor(a)``: ``_unsafe_view`` (declared a
new tensor; ``matmul`` and a ``reshape`` of a copy return one over their fresh result) and the
pieces of ``unsafe_split``/``unsafe_chunk``; and an item of a multi-output view op's result
list (``split``, ``unbind``, ``chunk``: the list is annotated, the ``getitem`` that takes an
item out of it is no ATen op) is a view of that op's input.
"""

from __future__ import annotations

import operator

import torch
import torch.fx as fx

__all__ = ["argument", "aliasing", "viewed_source", "storage_owner"]

# ops whose result is a view of their first argument though their schema declares it new
_UNDECLARED_VIEWS = (torch.ops.aten._unsafe_view.default, torch.ops.aten.unsafe_split.Tensor,
                     torch.ops.aten.unsafe_split_with_sizes.default,
                     torch.ops.aten.unsafe_chunk.default)

# per op: its parameter whose storage its result is and the parameters it writes, as (k, formal)
_ALIASING: dict = {}


def argument(node: fx.Node, k: int, formal) -> object:
    """The value ``node`` passes for its schema's ``k``-th parameter ``formal``."""
    if not formal.kwarg_only and k < len(node.args):
        return node.args[k]
    return node.kwargs.get(formal.name)


def aliasing(target) -> tuple:
    """``(aliased, written)`` of the op ``target``: the ``(k, formal)`` of the parameter whose
    memory its result is (None: a new tensor), and those of the parameters it writes.

    Example:
        >>> import torch
        >>> aliased, written = aliasing(torch.ops.aten.mm.out)
        >>> aliased[1].name, [formal.name for _, formal in written]
        ('out', ['out'])
        >>> aliasing(torch.ops.aten._unsafe_view.default)[0][1].name
        'self'
    """
    known = _ALIASING.get(target)
    if known is not None:
        return known
    schema = getattr(target, "_schema", None)
    aliased, written = None, []
    if schema is not None:
        result = (schema.returns[0].alias_info.before_set
                  if schema.returns and schema.returns[0].alias_info is not None else set())
        for k, formal in enumerate(schema.arguments):
            info = formal.alias_info
            if info is None:
                continue
            # (a list of views, ``split``'s: ``Tensor(a -> *) self`` -> ``Tensor(a)[]``)
            if aliased is None and (info.before_set & result or "*" in info.after_set):
                aliased = (k, formal)
            if info.is_write:
                written.append((k, formal))
        if aliased is None and target in _UNDECLARED_VIEWS:
            aliased = (0, schema.arguments[0])
    _ALIASING[target] = known = (aliased, tuple(written))
    return known


def viewed_source(n) -> fx.Node | None:
    """The node whose memory ``n``'s result is (a view's input, an in-place op's ``self``, an
    ``out=`` op's ``out``, a view op's list for an item of it), else None (new memory)."""
    if not (isinstance(n, fx.Node) and n.op == "call_function"):
        return None
    if n.target is operator.getitem:
        source = n.args[0]
        return source if viewed_source(source) is not None else None
    aliased = aliasing(n.target)[0]
    if aliased is None:
        return None
    source = argument(n, *aliased)
    return source if isinstance(source, fx.Node) else None


def storage_owner(n):
    """The node whose result owns ``n``'s memory: ``n`` followed back through
    :func:`viewed_source` (a placeholder where the memory is an input's).

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> gm = make_fx(lambda a, b, buf: torch.mm(a, b, out=buf).t())(
        ...     torch.ones(2, 2), torch.ones(2, 2), torch.empty(2, 2))
        >>> storage_owner(list(gm.graph.nodes)[-2]).name
        'buf_1'
    """
    while (source := viewed_source(n)) is not None:
        n = source
    return n
