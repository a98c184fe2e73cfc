"""The CNTK v2 model-file writer's rules for ``depth_to_space`` and ``space_to_depth`` (see
:mod:`._cntk_write`): CNTK 2.7's ``DepthToSpace`` and ``SpaceToDepth`` blocks over a
``(channels, height, width)`` sample, as CNTK 2.7 writes them (learnt by saving the ops with
CNTK 2.7 and decoding the file, kept decoded in ``tests/fixtures/cntk_write_forms/
written.json``): attribute ``blockSize`` (size_t), no leaves, and a body of ``Reshape``s around
one ``TransposeAxes`` over the stored axes (``(width, height, channels)``, last first):

* ``DepthToSpace``: the channels split into ``(b, b, channels / b^2)`` (stored), the axes
  permuted ``[3, 0, 4, 1, 2]``, the two pairs ``(b, width)``, ``(b, height)`` merged;
* ``SpaceToDepth``: width and height split into ``(b, width / b)``, ``(b, height / b)``, the
  axes permuted ``[1, 3, 4, 0, 2]``, the last three merged into the channels.

Stadyn's compat computes each as a reshape, a transpose and a reshape (the same order of the
values); the writer reads the block size from the shapes.

Example:
    >>> sorted(RULES)
    ['cntk:DepthToSpace', 'cntk:SpaceToDepth']
"""

from __future__ import annotations

from . import _cntk_write_proto as P
from ._cntk_write_graph import CntkWriteUnsupported
from ._cntk_write_more import inner_nodes

__all__ = ["RULES"]


def _reshape(w, operand: str, numpy_shape: tuple, begin: int, end: int) -> str:
    return w.function("Reshape", [operand], {
        "newShape": P.shape(numpy_shape), "beginAxis": P.static_axis(begin),
        "endAxis": P.static_axis(end)}) + "_Output_0"


def _transpose(w, operand: str, perm: list) -> str:
    return w.function("TransposeAxes", [operand], {
        "axisVec": P.vector([P.static_axis(p) for p in perm])}) + "_Output_0"


def _block_size(op: str, w, ins, uids, out, into_space: bool) -> int:
    if len(uids) != 1:
        raise CntkWriteUnsupported(op, f"{len(uids)} inputs shown, CNTK's has 1")
    x = ins[0]
    kinds = sorted(n.spec.name for n in inner_nodes(out, ins))
    if w.static_rank(x) != 3 or w.static_rank(out) != 3 or \
            kinds != ["reshape", "reshape", "transpose"]:
        raise CntkWriteUnsupported(op, "an input other than (channels, height, width)")
    h, h_out = x.shape[-2], out.shape[-2]
    b = h_out // h if into_space else h // h_out
    if b < 1:
        raise CntkWriteUnsupported(op, "a block size the writer cannot read")
    return b


def _depth_to_space(w, ins, uids, attrs, out, name):
    b = _block_size("DepthToSpace", w, ins, uids, out, True)

    def body(w_, p, c, n):
        split = _reshape(w_, p[0], (b, b, -1), 2, 3)
        moved = _transpose(w_, split, [3, 0, 4, 1, 2])
        widths = _reshape(w_, moved, (-1,), 2, 4)
        return _reshape(w_, widths, (-1,), 0, 2)
    return w.fixed_block("DepthToSpace", name, ins[:1], uids[:1], (), body,
                         {"blockSize": P.size_t(b)})


def _space_to_depth(w, ins, uids, attrs, out, name):
    b = _block_size("SpaceToDepth", w, ins, uids, out, False)

    def body(w_, p, c, n):
        widths = _reshape(w_, p[0], (-1, b), 0, 1)
        heights = _reshape(w_, widths, (-1, b), 2, 3)
        moved = _transpose(w_, heights, [1, 3, 4, 0, 2])
        return _reshape(w_, moved, (-1,), 2, 5)
    return w.fixed_block("SpaceToDepth", name, ins[:1], uids[:1], (), body,
                         {"blockSize": P.size_t(b)})


RULES = {"cntk:DepthToSpace": _depth_to_space, "cntk:SpaceToDepth": _space_to_depth}
