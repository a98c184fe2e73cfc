"""The file's top-level ``inputs`` as CNTK 2.7 lists them, and its placeholders' names.

CNTK 2.7's ``CompositeFunction::Serialize`` (``Source/CNTKv2LibraryDll/CompositeFunction.cpp``
:99-160) lists the leaves as a pre-order walk from the root meets them
(``PreorderTraverseFunctions``, ``API/CNTKLibrary.h``:3565): each function's inputs in its
order, a leaf listed when first met, a function's output listed (as a placeholder of its uid)
only when met after the function itself; a block's composite walked, from its root, right
after the block is met.  A block's placeholder carries the name of the value the block is
applied to (a ``Dense`` over the input ``s``: ``s``; over a delayed state: ``''``).  Both
checked against every CNTK 2.7 v2 file under ``tests/fixtures``.

Example:
    >>> from stadyn.serialize import _cntk_write_proto as P
    >>> leaf = lambda uid, kind, name: {"uid": P.text(uid), "kind": P.size_t(kind),
    ...                                 "name": P.text(name)}
    >>> fn = lambda uid, ins: {"uid": P.text(uid), "inputs": P.vector(map(P.text, ins))}
    >>> leaves = [leaf("Parameter1", 2, "W"), leaf("Input2", 0, "x")]
    >>> [e["uid"].value for e in in_cntk_order(leaves, [fn("Times3", ["Input2", "Parameter1"])],
    ...                                        "Times3")]
    ['Input2', 'Parameter1']
"""

from __future__ import annotations

from typing import Sequence

from . import _cntk_write_proto as P

__all__ = ["in_cntk_order", "name_placeholders"]

_PLACEHOLDER = 4


def in_cntk_order(leaves: Sequence[dict], functions: Sequence[dict], root: str) -> list[dict]:
    """``leaves`` in the order CNTK 2.7 lists them for the graph of ``functions`` whose root
    function is ``root``; those its walk does not meet (a placeholder of an output met before
    its function) after them, in their order."""
    funcs = {f["uid"].value: f for f in functions}
    by_uid = {e["uid"].value: e for e in leaves}
    listed: dict[str, None] = {}
    called: set[str] = set()

    def owner(uid: str) -> "str | None":
        made_by = uid.rpartition("_Output_")[0]
        return made_by if made_by in funcs else None

    def inputs(fu: str) -> list[str]:
        return [i.value for i in funcs[fu]["inputs"].value]

    def call(fu: str) -> None:
        for u in inputs(fu):
            made_by = owner(u)
            if u not in listed and u in by_uid and (made_by is None or made_by in called):
                listed[u] = None
        called.add(fu)
        composite = funcs[fu].get("block_function_composite")
        if composite is not None:
            walk(composite.value["root"].value)

    def walk(start: str) -> None:
        seen = {start}
        call(start)
        stack = [iter(inputs(start))]
        while stack:
            for u in stack[-1]:
                made_by = owner(u)
                if made_by is not None and made_by not in seen:
                    seen.add(made_by)
                    call(made_by)
                    stack.append(iter(inputs(made_by)))
                    break
            else:
                stack.pop()
    if root in funcs:
        walk(root)
    return [by_uid[u] for u in listed] + [e for e in leaves if e["uid"].value not in listed]


def name_placeholders(leaves: Sequence[dict], functions: Sequence[dict]) -> None:
    """Name each block's placeholder of ``leaves`` as CNTK 2.7 does: after the value the block
    is applied to (a leaf's name, that of the function making an output, an outer block's
    placeholder's own, followed outwards)."""
    funcs = {f["uid"].value: f for f in functions}
    by_uid = {e["uid"].value: e for e in leaves}
    bound = {}
    for f in functions:
        keys = f.get("block_function_composite_arguments_map_keys")
        if keys is not None:
            values = f["block_function_composite_arguments_map_values"].value
            bound.update((k.value, v.value) for k, v in zip(keys.value, values))

    def name(uid: str) -> "str | None":
        for _ in range(len(bound) + 1):          # (an outer block's placeholder: its value)
            if uid not in bound:
                break
            uid = bound[uid]
        if uid in by_uid:
            return by_uid[uid]["name"].value
        made_by = funcs.get(uid.rpartition("_Output_")[0])
        if made_by is not None:
            return made_by["name"].value if "name" in made_by else ""
        return None
    for uid in bound:
        named = name(uid)
        if uid in by_uid and named is not None:
            by_uid[uid]["name"] = P.text(named)
