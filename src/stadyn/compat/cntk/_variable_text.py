"""How CNTK 2.7 writes a Variable's dynamic axes and shape in its text (``[#, *]``,
``[2 x 3]``): the pieces :func:`._variables.shown` and the other texts of Variables,
layers and fed data are made of."""

from __future__ import annotations

from ...graph import FREE_DIMENSION as FreeDimension

__all__ = ["axis_mark", "dims_text", "layout_text"]


def axis_mark(axis) -> str:
    """How CNTK 2.7 shows a dynamic axis in a Variable's text: ``#`` the batch axis, ``*`` the
    default sequence axis, else its name.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> [axis_mark(a) for a in C.sequence.input_variable(2).dynamic_axes]
        ['#', '*']
    """
    name = getattr(axis, "name", str(axis))
    return {"defaultBatchAxis": "#", "defaultDynamicAxis": "*"}.get(name, name)


def dims_text(shape: tuple) -> str:
    """A shape as CNTK 2.7's ``repr`` writes it: ``2 x 3``, ``? x 3`` (an inferred axis),
    ``* x 3`` (a free one), ``???`` (unknown).

    Example:
        >>> dims_text((-3, 3)), dims_text((-1, 2)), dims_text((-2,))
        ('* x 3', '? x 2', '???')
    """
    if shape == (-2,):
        return "???"
    return " x ".join("?" if d == -1 else "*" if d == FreeDimension else str(d) for d in shape)


def layout_text(shape) -> str:
    """A shape as CNTK 2.7's error messages write a tensor layout: its axes in reverse, in
    brackets (``[3 x 2]`` for ``(2, 3)``, ``[]`` for a scalar's).

    Example:
        >>> layout_text((2, 3)), layout_text(())
        ('[3 x 2]', '[]')
    """
    return "[" + " x ".join(str(d) for d in reversed(tuple(shape))) + "]"
