"""CNTK's gather and scatter of a sequence's steps in a v1 file, each read as one function.

CNTK 2's v1 writer inlines the blocks ``sequence.first``, ``last``, ``slice`` and ``gather``
build: the steps of ``x`` where a condition ``c`` (one number per step) is nonzero are three
nodes, ``GatherPacked(PackedIndex(x, Where(c)), x)`` (``Where``'s payload the name of the axis
it makes: ``__noSequenceAxis`` where each sequence keeps one step).  The v1 reader gives them to
the importer as one ``GatherPacked`` of ``(x, c)`` with that name (``dynamic_axis_name``), as
the v2 reader gives a ``Sequence::Gather`` block with its body.  Likewise ``sequence.scatter``'s
``ScatterPacked(c, PackedIndex(c, Where(c)), y)`` (cntk.exe's ``ScatterPackedNode(layoutData,
packedIndex, sourceData)``, ``Source/ComputationNetworkLib/ReshapingNodes.h:1536``; CNTK 2's v2
``ScatterPacked(y, index, c)`` reversed, ``PrimitiveFunction.h:154``) is one ``ScatterPacked``
of ``(y, c)``.

Example:
    >>> from stadyn.serialize import LegacyFunction
    >>> fs = [LegacyFunction("w", "Where", ("c",), ("w",), {"dynamic_axis_name": "a"}),
    ...       LegacyFunction("i", "PackedIndex", ("x", "w"), ("i",)),
    ...       LegacyFunction("g", "GatherPacked", ("i", "x"), ("g",))]
    >>> [(f.type, f.inputs, f.attrs) for f in fold_step_gathers(fs)]
    [('GatherPacked', ('x', 'c'), {'dynamic_axis_name': 'a'})]
    >>> fs = [LegacyFunction("w", "Where", ("c",), ("w",), {"dynamic_axis_name": "a"}),
    ...       LegacyFunction("i", "PackedIndex", ("c", "w"), ("i",)),
    ...       LegacyFunction("s", "ScatterPacked", ("c", "i", "y"), ("s",))]
    >>> [(f.type, f.inputs) for f in fold_step_gathers(fs)]
    [('ScatterPacked', ('y', 'c'))]
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from ._legacy_ir import LegacyFunction

__all__ = ["fold_step_gathers", "fold_last_steps_v2"]


def fold_step_gathers(functions: list[LegacyFunction]) -> list[LegacyFunction]:
    """``functions`` with each ``GatherPacked(PackedIndex(x, Where(c)), x)`` whose index and
    positions nothing else reads made one ``GatherPacked`` of ``(x, c)``, and each
    ``ScatterPacked(c, PackedIndex(c, Where(c)), y)`` so one ``ScatterPacked`` of ``(y, c)``;
    the rest as given."""
    by_output = {o: f for f in functions for o in f.outputs}
    readers = Counter(i for f in functions for i in f.inputs)
    folded: dict[str, LegacyFunction] = {}
    gone: set[str] = set()
    for f in functions:
        if (f.type, len(f.inputs)) == ("GatherPacked", 2):
            at, layout, data = 0, f.inputs[1], f.inputs[1]         # (index, x)
        elif (f.type, len(f.inputs)) == ("ScatterPacked", 3):
            at, layout, data = 1, f.inputs[0], f.inputs[2]         # (c, index, y)
        else:
            continue
        index = by_output.get(f.inputs[at])
        if index is None or index.type != "PackedIndex" or len(index.inputs) != 2 or \
                index.inputs[0] != layout or readers[f.inputs[at]] != 1:
            continue
        where = by_output.get(index.inputs[1])
        if where is None or where.type != "Where" or readers[index.inputs[1]] != 1 or \
                (f.type == "ScatterPacked" and where.inputs[0] != layout):
            continue
        folded[f.name] = replace(f, inputs=(data, where.inputs[0]),
                                 attrs=dict(f.attrs, **where.attrs))
        gone.update((index.name, where.name))
    return [folded.get(f.name, f) for f in functions if f.name not in gone]


def fold_last_steps_v2(functions: list[LegacyFunction]) -> list[LegacyFunction]:
    """A CNTK v2 file's ``GatherPacked(x, PackedIndex(x, Where(c)))`` whose ``Where`` makes
    no new sequence axis (its ``newDynamicAxes`` the batch axis alone: one step of each
    sequence, as CNTK 2.7 writes the last steps of a cntk.exe network again) made one
    ``GatherPacked`` of ``(x, c)`` named for ``__noSequenceAxis``, as the v1 reader gives
    ``sequence.first`` and ``last`` (:func:`fold_step_gathers`); the rest as given."""
    by_output = {o: f for f in functions for o in f.outputs}
    readers = Counter(i for f in functions for i in f.inputs)
    folded: dict[str, LegacyFunction] = {}
    gone: set[str] = set()
    for f in functions:
        if (f.type, len(f.inputs)) != ("GatherPacked", 2):
            continue
        x, at = f.inputs
        index = by_output.get(at)
        if index is None or index.type != "PackedIndex" or len(index.inputs) != 2 or \
                index.inputs[0] != x or readers[at] != 1:
            continue
        where = by_output.get(index.inputs[1])
        axes = where.attrs.get("newDynamicAxes") if where is not None else None
        if where is None or where.type != "Where" or readers[index.inputs[1]] != 1 or \
                not axes or [getattr(a, "name", None) for a in axes] != ["defaultBatchAxis"]:
            continue
        folded[f.name] = replace(f, inputs=(x, where.inputs[0]),
                                 attrs={"dynamic_axis_name": "__noSequenceAxis"})
        gone.update((index.name, where.name))
    return [folded.get(f.name, f) for f in functions if f.name not in gone]
