"""NNabla's array-class preference and its list of available contexts (``nnabla._init``).

NNabla keeps, per device, an ordered list of array classes and allocates with the first;
``prefer_cached_array(True)`` (NNabla's import-time default) moves the caching allocator's
class to the front.  Stadyn's arrays are torch tensors, whose memory torch's own caching
allocator manages, so here the list is bookkeeping only: it answers as NNabla 1.39's CPU build
does (``array_classes()``), and changing the preference changes nothing else.
``available_contexts`` is the list of extension names loaded (``'cpu'`` from the start).

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> nn.array_classes()
    ['CpuCachedArray', 'CpuArray', 'CpuDlpackArray']
    >>> nn.prefer_cached_array(False); nn.array_classes()
    ['CpuArray', 'CpuDlpackArray', 'CpuCachedArray']
    >>> nn.prefer_cached_array(True)
"""

from __future__ import annotations

__all__ = ["available_contexts", "add_available_context", "array_classes",
           "prefer_cached_array", "reset_array_preference"]

#: The extension names loaded, in the order they were (NNabla's module-level list).
available_contexts: list = []

# NNabla's CPU build registers its array classes in this order; its import then prefers
# the cached one (``prefer_cached_array(True)`` below).
_ORIGINAL = ("CpuArray", "CpuCachedArray", "CpuDlpackArray")
_state: dict = {"classes": list(_ORIGINAL), "preferred": None}


def add_available_context(ctx: str) -> None:
    """Add the extension name ``ctx`` to :data:`available_contexts` unless it is there.

    Example:
        >>> add_available_context("cpu"); available_contexts.count("cpu"), available_contexts[0]
        (1, 'cpu')
    """
    if ctx not in available_contexts:
        available_contexts.append(ctx)


def array_classes() -> list[str]:
    """The CPU array classes, the preferred first (a copy).

    Example:
        >>> array_classes()[0]
        'CpuCachedArray'
    """
    return list(_state["classes"])


def prefer_cached_array(prefer: bool) -> None:
    """Move the cached array class to the front (``True``) or the back (``False``), keeping the
    others' order; asking for the preference already set does nothing.

    Example:
        >>> prefer_cached_array(True); array_classes()[0]
        'CpuCachedArray'
    """
    if _state["preferred"] == prefer:
        return
    _state["preferred"] = prefer
    ranked = sorted(enumerate(_state["classes"]),
                    key=lambda item: (bool(prefer) ^ ("Cached" in item[1]), item[0]))
    _state["classes"] = [name for _, name in ranked]


def reset_array_preference() -> None:
    """Back to the order the classes were registered in, with no preference set.

    Example:
        >>> reset_array_preference(); array_classes()
        ['CpuArray', 'CpuCachedArray', 'CpuDlpackArray']
        >>> prefer_cached_array(True)
    """
    _state["preferred"] = None
    _state["classes"] = list(_ORIGINAL)


add_available_context("cpu")
prefer_cached_array(True)
