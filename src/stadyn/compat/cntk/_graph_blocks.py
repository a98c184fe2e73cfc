"""A block of several outputs, as CNTK 2.7 makes of an ``LSTM`` applied to values (its ``h``
and ``c``): one Function, the block, that owns every output (``Block12_Output_0``,
``Block12_Output_1``), whose inside is a ``Combine`` of the values its ops compute.

Stadyn's layer gives those values themselves; :func:`block_of_outputs` puts an ``identity``
after each, so that the block's outputs are Variables apart from the inner ones (the walks
meet the block, then, entering it, the ``Combine`` over the inner values), records the block
under the first and links the others to it (``_graph_shown.link_outputs``).

A Stadyn block reads its actual arguments inside; CNTK 2.7's reads a placeholder of its own
for each, named and shaped as the argument it is mapped to (``block_arguments_mapping``).
:func:`inner_placeholders` makes those placeholders (once per block) for what a walk inside
the block shows in place of its arguments (:func:`seen_inside`).  Above ``_graph_shown``;
re-exported by ``_graph``.

Example:
    >>> import stadyn.compat.cntk as C
    >>> h, c, x = (C.input_variable(n) for n in (3, 3, 2))
    >>> z = C.layers.LSTM(3, name="cell")(h, c, x)
    >>> [(o.uid[:5], o.uid[-9:], o.name, o.owner.op_name) for o in z.outputs]
    [('Block', '_Output_0', 'cell', 'LSTM'), ('Block', '_Output_1', 'cell', 'LSTM')]
    >>> z.root_function.block_root.op_name
    'Combine'
"""

from __future__ import annotations

import weakref

from ... import functions as F
from ...graph import Variable, keep_with, kept_with
from ...serialize import shown_block_order
from ._graph_placeholders import placeholder_like
from ._graph_records import BLOCKS, PLACEHOLDERS, Block
from ._graph_shown import link_outputs, name_of, set_op_name, set_uid, uid_of

__all__ = ["block_of_outputs", "combined_inside", "show_combined", "inner_placeholders",
           "seen_inside", "typed_placeholder", "shown_block_order"]

_COMBINED = "compat.cntk: the inner values a block of several outputs combines"
_INNER_PLACEHOLDERS = "compat.cntk: the placeholders a block's inside shows for its arguments"
# the placeholders inner_placeholders made: with a data type, unlike the user's own
_TYPED: "weakref.WeakSet[Variable]" = weakref.WeakSet()


def block_of_outputs(values: "tuple[Variable, ...]", op_name: str, name: str,
                     arguments: tuple, options: "dict | None" = None) -> tuple:
    """The outputs of the block ``op_name`` (``LSTM``) named ``name`` over ``arguments`` whose
    inside computes ``values`` (in order): a new Variable for each (their ``identity``), the
    first holding the :class:`Block` and the inner values its ``Combine`` shows
    (:func:`combined_inside`), the others linked to it, all with the block's uid."""
    outer = tuple(F.identity(v) for v in values)
    first = outer[0]
    BLOCKS[first] = Block(op_name, name, tuple(arguments), options=options)
    set_op_name(first, "Combine")           # (the block's root: what block_root shows)
    show_combined(first, values)
    uid = uid_of(first)
    for v in outer[1:]:
        set_op_name(v, "Combine")
        set_uid(v, uid)
    link_outputs(list(outer))
    return outer


def combined_inside(v: Variable) -> "tuple | None":
    """The inner values the ``Combine`` inside the block of several outputs whose first output
    is ``v`` shows as its inputs (:func:`block_of_outputs`); None for another value."""
    return kept_with(v, _COMBINED)


def show_combined(first: Variable, values) -> None:
    """Show ``values`` as what the ``Combine`` inside the block of several outputs whose first
    output is ``first`` combines (a clone's copy of one: the copies of the original's)."""
    keep_with(first, _COMBINED, tuple(values))


def inner_placeholders(out: Variable) -> tuple:
    """The placeholders the block whose output is ``out`` shows inside for its arguments, in
    their order, each named and shaped as its argument (an argument that is no Variable
    stands for itself); made once and kept with ``out``."""
    kept = kept_with(out, _INNER_PLACEHOLDERS)
    if kept is None:
        kept = tuple(_placeholder_for(a) if isinstance(a, Variable) else a
                     for a in BLOCKS[out].arguments)
        keep_with(out, _INNER_PLACEHOLDERS, kept)
    return kept


def _placeholder_for(argument: Variable) -> Variable:
    ph = placeholder_like(argument)
    PLACEHOLDERS[ph] = name_of(argument)
    _TYPED.add(ph)
    return ph


def typed_placeholder(v: Variable) -> bool:
    """Whether the placeholder ``v`` has a data type (a block's, :func:`inner_placeholders`):
    a run given data for it is CNTK 2.7's 'unbound Placeholder(s)' ValueError, not its
    'Unknown DataType.'."""
    return v in _TYPED


def seen_inside(out: Variable, v):
    """``v`` as a walk inside the block whose output is ``out`` sees it: the block's
    placeholder for it where it is one of the block's arguments, else itself."""
    for argument, ph in zip(BLOCKS[out].arguments, inner_placeholders(out)):
        if argument is v:
            return ph
    return v
