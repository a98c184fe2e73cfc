"""What CNTK knows of a Variable and Stadyn does not, by kind: the weak registries
:mod:`._graph` keeps (inputs' and placeholders' names, sparse inputs, the values of a
recurrence's step, ops that are no CNTK function, which output of its function a Variable is,
which Variables carry the batch axis, the blocks layer applications made, named sequence
axes).  :mod:`._graph` hands them out under the same names; the functions that read and
write them, and CNTK's walks over them, are there.

Nothing here holds a graph alive: every registry is keyed weakly, and a :class:`Block` refers
weakly to the arguments its output is computed from (see :mod:`._graph`).
"""

from __future__ import annotations

import weakref

from ...cntk_semantics import BatchAxes
from ...graph import Variable

__all__ = ["INPUTS", "PLACEHOLDERS", "SHAPELESS", "INFERRED_SHAPES", "SPARSE", "SPARSE_OUTPUTS",
           "STEP_VALUES",
           "LEAF_NAMES", "INNER_OPS", "OUTPUT_INDEX", "BATCH", "Block",
           "BLOCKS",
           "SEQUENCE_AXES", "UNTYPED_INPUTS", "COMPOSITE_NAMES", "FUNCTION_NAMES", "CALLS"]

# What CNTK knows of a Variable and Stadyn does not (weak: a Variable's entries die with it).
INPUTS: "weakref.WeakKeyDictionary[Variable, str]" = weakref.WeakKeyDictionary()
PLACEHOLDERS: "weakref.WeakKeyDictionary[Variable, str]" = weakref.WeakKeyDictionary()
SHAPELESS: "weakref.WeakSet[Variable]" = weakref.WeakSet()
# The shapes placeholders were made with that have an inferred axis (-1, CNTK's
# InferredDimension): shapeless until bound, as CNTK's, but reporting these
INFERRED_SHAPES: "weakref.WeakKeyDictionary[Variable, tuple]" = weakref.WeakKeyDictionary()
# The inputs made with is_sparse=True (fed sparse or one-hot data, held dense): CNTK's
# Variable.is_sparse
SPARSE: "weakref.WeakSet[Variable]" = weakref.WeakSet()
# The inputs of a Stadyn model file standing for the untyped arguments of a saved
# @C.Function (a graph CNTK 2.7's format has no form for; CNTK's file holds placeholders):
# a value put in their place is not type-checked, as a placeholder is not
UNTYPED_INPUTS: "weakref.WeakSet[Variable]" = weakref.WeakSet()
# The outputs of ops made with sparse_output=True (eye_like): eval gives them as SciPy CSR
# matrices, as CNTK 2.7 does
SPARSE_OUTPUTS: "weakref.WeakSet[Variable]" = weakref.WeakSet()
# One step of a sequence inside a recurrence's step function (and what is computed from it
# there): the sequence ops see a step, not a sequence.
STEP_VALUES: "weakref.WeakSet[Variable]" = weakref.WeakSet()
LEAF_NAMES: "weakref.WeakKeyDictionary[Variable, str]" = weakref.WeakKeyDictionary()
# The name given to the composite Function over an output (``z.name = "m"`` on an unnamed one):
# CNTK 2.7 names the composite, its root function and output keep theirs.
COMPOSITE_NAMES: "weakref.WeakKeyDictionary[Variable, str]" = weakref.WeakKeyDictionary()
# ops that are no function CNTK shows, so the walks pass through them: those an import rule
# made inside one of a loaded CNTK file's functions (a weight reshaped for a product), those
# one CNTK op is made of (the transposes of ``top_k`` along another axis than the last)
INNER_OPS: "weakref.WeakSet[Variable]" = weakref.WeakSet()
# The CNTK op call that made an output of several Stadyn ops whose shapes depend on all its
# operands' (``splice``: operands brought to one rank, broadcast, lined up):
# ``(op, operands, keywords)``; a clone calls the op again over the substitutes rather than
# replaying its Stadyn ops one by one, as CNTK 2.7 validates the one op again
CALLS: "weakref.WeakKeyDictionary[Variable, tuple]" = weakref.WeakKeyDictionary()
# Which output of its function a Variable is, where not the first (a loaded unpack's mask):
# its uid is ``<function uid>_Output_<k>``.
OUTPUT_INDEX: "weakref.WeakKeyDictionary[Variable, int]" = weakref.WeakKeyDictionary()
# The name of the function that made an output where it is not the output's own: a user
# function's (CNTK 2.7 names the function, its output and the composite around it are unnamed)
FUNCTION_NAMES: "weakref.WeakKeyDictionary[Variable, str]" = weakref.WeakKeyDictionary()
# Which Variables carry the batch axis: inputs (and batched placeholders) and what is computed
# from them.
BATCH = BatchAxes()


class Block:
    """A layer applied to ``arguments``: CNTK's block function (``op_name`` is the layer's kind,
    ``Dense``; ``name`` the name it was given; ``attributes`` the block's own where a CNTK file
    gave them, a loaded ``LocalResponseNormalization``'s ``depthRadius``, ``alpha``, ...;
    ``options`` what the layer was given that a CNTK file writes inside it, a ``Dense``'s
    ``inferInputRankToMap``).

    Kept in :data:`BLOCKS` under the block's output, it holds the arguments that output is
    computed from weakly (the output holds them), the others (an argument the layer ignores)
    as given: an argument can be a root of the same runs as the output, and so refer to it."""

    __slots__ = ("op_name", "name", "_arguments", "attributes", "options", "__weakref__")

    def __init__(self, op_name: str, name: str, arguments: tuple,
                 attributes: "dict | None" = None, options: "dict | None" = None):
        self.op_name = op_name
        self.name = name
        self._arguments = tuple(arguments)
        self.attributes = dict(attributes or {})
        # (what the layer was given that its graph does not show and a CNTK file writes: a
        # Dense's inferInputRankToMap, from its input_rank / map_rank)
        self.options = dict(options or {})

    @property
    def arguments(self) -> tuple:
        return tuple(a() if isinstance(a, weakref.ref) else a for a in self._arguments)

    def held_by(self, out: Variable) -> None:
        """Refer weakly to the arguments ``out`` is computed from."""
        args = self.arguments
        reached = _reached_from(out, [a for a in args if isinstance(a, Variable)])
        self._arguments = tuple(weakref.ref(a) if id(a) in reached else a for a in args)


def _reached_from(out: Variable, targets: list[Variable]) -> set[int]:
    """The ids of the ``targets`` that ``out`` is computed from (or is)."""
    wanted = {id(t) for t in targets}
    found, seen, stack = set(), set(), [out]
    while stack and found != wanted:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if id(v) in wanted:
            found.add(id(v))
            continue            # (what the argument is computed from is no concern here)
        if v.parent is not None:
            stack.extend(v.parent.inputs)
    return found


class _Blocks(weakref.WeakKeyDictionary):
    """Output -> :class:`Block`, each block holding its arguments as :meth:`Block.held_by`
    says."""

    def __setitem__(self, out: Variable, block: Block) -> None:
        block.held_by(out)
        super().__setitem__(out, block)


BLOCKS: "weakref.WeakKeyDictionary[Variable, Block]" = _Blocks()

# A named sequence axis (``C.Axis('inputAxis')``, by its ``cntk.Axis``), keyed by the sequences'
# lengths Variable: every value computed step by step from a sequence shares its lengths, so
# it is on the same axis; sequences without an entry are on CNTK's default dynamic axis.
SEQUENCE_AXES: "weakref.WeakKeyDictionary[Variable, object]" = weakref.WeakKeyDictionary()
