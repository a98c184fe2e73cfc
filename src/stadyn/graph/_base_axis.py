"""An op node called again on a first input of another rank: its ``base_axis`` (``affine``'s,
CNTK's ``times``; a convolution's) keeps its distance from the input's last axis, as CNTK maps
the leading axes of a value an op was not built for (it validates a cloned node again).  One
rule for the rebuilds that replay recorded op calls: CNTK's clone (``compat.cntk``),
BrainScript's network edits, the first inference pass (:mod:`._first_pass`)."""

from __future__ import annotations

from typing import Any

__all__ = ["base_axis_kept"]


def base_axis_kept(node: Any, args, kwargs: dict, first_shape: tuple,
                   checked: bool = True) -> tuple[tuple, dict]:
    """``(args, kwargs)`` of ``node``'s op (one with a ``base_axis``) called again with a first
    input of ``first_shape``: ``base_axis`` moved as many axes as the input gained (or lost),
    given in ``args`` where the call gives it by position, else in ``kwargs``.  ``checked``:
    only where the axes from the new base axis on are those the node read (a value whose
    reduced axes differ is left to the op to refuse); else whenever the rank differs.  A node
    of another op, or over an input of the same rank, keeps its arguments.

    Example:
        >>> from stadyn import functions as F
        >>> from stadyn.graph import Variable
        >>> y = F.affine(Variable((4, 3)), Variable((3, 2)), Variable((2,)))
        >>> args, kwargs = base_axis_kept(y.parent, tuple(y.parent.args), y.parent.kwargs,
        ...                               (5, 4, 3))
        >>> y.parent.spec.attributes(args, kwargs)["base_axis"]
        2
        >>> base_axis_kept(y.parent, (), {}, (5, 4, 7))       # (reduced axes of another size)
        ((), {})
    """
    if "base_axis" not in node.spec.attrs or not node.inputs:
        return tuple(args), kwargs
    old, new = tuple(node.inputs[0].shape), tuple(first_shape)
    if len(new) == len(old):
        return tuple(args), kwargs
    base = node.spec.attributes(node.args, node.kwargs)["base_axis"]
    moved = base + len(new) - len(old)
    if checked and (moved < 1 or moved >= len(new) or new[moved:] != old[base:]):
        return tuple(args), kwargs
    at = node.spec.position_of("base_axis")
    if at < len(args):
        return tuple(args[:at]) + (moved,) + tuple(args[at + 1:]), kwargs
    return tuple(args), dict(kwargs, base_axis=moved)
