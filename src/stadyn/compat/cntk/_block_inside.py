"""The output of a block's inside, as ``block_root.output`` shows it.

Stadyn computes a one-op block (a loss's ``CrossEntropyWithSoftmax``, a ``Dense``) by the one
Stadyn Variable the block outputs, so the op inside it (its ``block_root``) has no output of its
own.  CNTK 2.7's does: a Variable inside the block, whose owner is the primitive op (``Minus``,
``Plus``), and which a ``clone`` of the graph outside does not find, so a key naming it is
ignored (``l.clone(share, {l.root_function.block_root.output: C.constant(3)})`` evaluates the
loss unchanged: tests/compat case ``clone__a_key_inside_a_loss_block_is_ignored``).  The
:class:`InsideOutput` wrapper is that view: it reads as the block's output, its owner is the
block's root, and :func:`outside_keys` drops it from a clone's substitutions.
"""

from __future__ import annotations

from ._late import late
from ._mixins import GraphObject
from ._variables import Variable


class InsideOutput(Variable):
    """A one-op block's ``block_root.output`` (the block's output seen from inside it).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable(3); y = C.input_variable(3)
        >>> k = C.cross_entropy_with_softmax(x, y).root_function.block_root.output
        >>> k.owner.op_name, type(k).__name__
        ('Minus', 'InsideOutput')
    """

    __slots__ = ()
    _seen_from = "inside"      # (another Variable than the block's output, as in CNTK 2.7)

    @property
    def uid(self) -> str:
        """Its owner's uid and ``_Output_0`` (``ReduceElements21_Output_0``), as CNTK 2.7's;
        not the block's output's."""
        return f"{self.owner.uid}_Output_0"

    @property
    def owner(self):
        """The op inside the block (its ``block_root``), as CNTK 2.7's owner of this output."""
        return late("Function")(self.variable, view="op")


def inside_output(v) -> InsideOutput:
    """The Stadyn Variable ``v`` (a one-op block's output) as its block's inside shows it."""
    obj = InsideOutput.__new__(InsideOutput)
    GraphObject.__init__(obj, v)
    return obj


def outside_keys(substitutions: "dict | None") -> "dict | None":
    """``substitutions`` without the keys inside a block (:class:`InsideOutput`), which a
    clone ignores as CNTK 2.7's does (it finds no such Variable in the graph outside)."""
    if not substitutions:
        return substitutions
    return {k: v for k, v in substitutions.items() if not isinstance(k, InsideOutput)}
