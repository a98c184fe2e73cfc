"""The CNTK view of Stadyn's graph.

CNTK sees a graph as Variables (inputs, placeholders, parameters, constants, outputs) and
Functions (primitive ops, and *blocks*: a layer applied to its arguments).  Stadyn's graph has
Variables and op nodes only, so this module keeps what CNTK adds, per Variable and held weakly:
the names of inputs and placeholders, the CNTK op name of an output, the block a layer
application made, a unique id (the registries themselves, by kind, are in
:mod:`._graph_records`, what CNTK shows of a Variable in :mod:`._graph_shown`; this module
hands them out under the same names).  On that it builds CNTK's depth-first search (what
``find_by_name`` and ``cntk.logging.graph`` walk, with its ``depth`` into blocks): this
module's own code.  Cloning is :mod:`._clone`.

Nothing here holds a graph alive: what is kept per Variable is keyed weakly, and a value kept
for a Variable refers to other Variables only weakly where they are computed into it (a
block's arguments): a run of a graph makes each of its roots refer to every other (through
the run's plan), so a strong reference from an entry to a run's root would keep its key, and
the whole graph, alive for ever.
"""

from __future__ import annotations

import re
from collections import deque
from contextlib import contextmanager
from typing import Callable, Iterator

from ...graph import Variable
from ._graph_blocks import (block_of_outputs, combined_inside, inner_placeholders, seen_inside,
                            show_combined, shown_block_order, typed_placeholder)
from ._graph_records import (BATCH, BLOCKS, CALLS, COMPOSITE_NAMES, FUNCTION_NAMES, INFERRED_SHAPES,
                             INNER_OPS, INPUTS, LEAF_NAMES,
                             OUTPUT_INDEX, PLACEHOLDERS, SEQUENCE_AXES, SHAPELESS, SPARSE,
                             SPARSE_OUTPUTS, STEP_VALUES, UNTYPED_INPUTS, Block)
from ._graph_placeholders import (bind_placeholder, follow_sequence_axis, not_found,
                                  placeholder_like, reads, replace_placeholder)
from ._graph_shown import (ARGUMENT_ORDER, Combine, carry_loaded_graph, carry_parameter_order,
                           cntk_name, met_before_loaded_graph,
                           has_parameter_order, first_output, function_outputs,
                           in_argument_order, in_parameter_order, kind_of, link_outputs,
                           made_by_cntk_op, mark_block, mark_outputs, name_of,
                           name_sequence_axis, new_uid, op_name_of, operand_order, outputs_of,
                           primitive_op_name, record_argument_order, record_parameter_order,
                           root_uid_of, set_op_name, set_root_uid, set_uid,
                           show_operands_in_order, spelled_op_name, uid_of,
                           recurrence_root_uid, take_uid_numbers, RECURRENCE_BLOCKS)
from ._graph_views import (STEP_BLOCKS, has_step_view, hide_padding, is_view, mark_view,
                           note_step_op,
                           note_step_view, show_transposed,
                           past_value_view, read_by_past_value, shown_inputs,
                           shown_step_output, step_op_of, step_output_of)
from ._shown_constants import gru_constant, with_stabilizer_constants
from ._spliced import is_splice_leaf, mark_spliced, seen_through

__all__ = ["INPUTS", "PLACEHOLDERS", "SHAPELESS", "INFERRED_SHAPES", "SPARSE", "SPARSE_OUTPUTS",
           "UNTYPED_INPUTS",
           "STEP_VALUES",
           "LEAF_NAMES", "BATCH", "Block", "COMPOSITE_NAMES", "FUNCTION_NAMES",
           "INNER_OPS", "mark_outputs",
           "link_outputs", "outputs_of", "function_outputs",
           "mark_block",
           "BLOCKS", "SEQUENCE_AXES", "OUTPUT_INDEX", "name_sequence_axis", "kind_of", "name_of",
           "op_name_of", "made_by_cntk_op",
           "Combine", "primitive_op_name", "spelled_op_name",
           "uid_of", "set_uid",
           "set_root_uid", "root_uid_of", "bind_placeholder", "placeholder_like",
           "replace_placeholder", "follow_sequence_axis", "reads", "not_found",
           "show_operands_in_order", "operand_order",
           "set_op_name", "cntk_name", "classify", "node_name",
           "node_inputs", "stored_inputs", "block_inner_leaves", "search", "walk_leaves",
           "mark_spliced",
           "seen_through", "shown_inputs", "is_splice_leaf",
           "record_argument_order", "in_argument_order", "ARGUMENT_ORDER", "new_uid",
           "record_parameter_order", "in_parameter_order", "carry_parameter_order", "one_walk",
           "has_parameter_order", "carry_loaded_graph", "parameters_met_first",
           "first_output", "cntk_cell_order", "walk_operands", "shown_step_output",
           "step_output_of",
           "note_step_op", "STEP_BLOCKS", "note_step_view", "past_value_view",
           "read_by_past_value", "recurrence_root_uid", "hide_padding",
           "show_transposed", "take_uid_numbers", "block_of_outputs", "combined_inside",
           "mark_view", "is_view", "show_combined", "inner_placeholders", "seen_inside",
           "typed_placeholder", "passed_on_value", "shown_block_order", "step_op_of", "CALLS",
           "RECURRENCE_BLOCKS"]


# -- CNTK's depth-first search -----------------------------------------------------------------
# A node of the walk: ("leaf", v) for an input, placeholder, parameter or constant; ("block", v)
# for the layer application whose output is v; ("op", v) for the primitive op that made v.


def classify(v: Variable) -> tuple[str, Variable]:
    """The walk's node for the function (or leaf) behind ``v``."""
    if v.parent is None or v in PLACEHOLDERS:
        return ("leaf", v)
    first = first_output(v)
    return ("block" if first in BLOCKS else "op", first)


def node_name(node: tuple[str, Variable]) -> str:
    """The name CNTK shows for a node of the walk."""
    kind, v = node
    if kind == "block":
        return BLOCKS[v].name
    if kind == "op":
        named = FUNCTION_NAMES.get(v)
        return (v.name or "") if named is None else named
    return name_of(v)


# The order in which CNTK 2.7 lists a recurrent cell's parameters: its depth-first walk of the
# cell's expression from the output (``times(x, W)`` is ``Times(W, x)`` inside CNTK, so a
# weight comes before the operand it multiplies), as CNTK's ``cntk/layers/blocks.py`` writes
# the cells.  A parameter is named by its path inside the cell's scope.  Checked against CNTK
# 2.7 for each kind with stabilizers, peepholes and projections (tests/compat
# ``recurrent_step_parameters``).
_CELL_ORDER = {
    "lstm": ("P", "P_stabilizer/alpha", "b", "W", "H", "dh_stabilizer/alpha", "Co",
             "c_stabilizer/alpha", "Cf", "dc_stabilizer/alpha", "Ci"),
    "gru": ("P", "P_stabilizer/alpha", "b", "W", "H", "dh_stabilizer/alpha", "H1"),
    "rnnstep": ("P", "P_stabilizer/alpha", "W", "H", "dh_stabilizer/alpha", "b"),
}
_CELL = re.compile(r"^(?P<cell>(?:.*/)?(?P<kind>lstm|gru|rnnstep)(?:_\d+)?)/(?P<rest>.+)$")


def _cell_rank(v: Variable) -> tuple[str, int] | None:
    """``(cell scope, position in CNTK's listing)`` of a recurrent cell's parameter."""
    m = _CELL.match(v.name or "")
    if m is None or m.group("rest") not in _CELL_ORDER[m.group("kind")]:
        return None
    return m.group("cell"), _CELL_ORDER[m.group("kind")].index(m.group("rest"))


def cntk_cell_order(leaves: list[Variable]) -> list[Variable]:
    """``leaves`` with each recurrent cell's (LSTM, GRU, RNNStep) parameters put in the order
    CNTK lists them (``_CELL_ORDER``), in the places that cell's parameters held; other
    leaves keep their places."""
    ranks = [_cell_rank(v) if kind_of(v) == "parameter" else None for v in leaves]
    out = list(leaves)
    firsts = {}
    for cell in {r[0] for r in ranks if r is not None}:
        places = [i for i, r in enumerate(ranks) if r is not None and r[0] == cell]
        for place, source in zip(places, sorted(places, key=lambda i: ranks[i][1])):
            out[place] = leaves[source]
        firsts[places[0]] = [leaves[i] for i in places]
    present = {id(v) for v in leaves}
    for place in sorted(firsts, reverse=True):      # a GRU's constant before its parameters
        if _CELL.match(firsts[place][0].name or "").group("kind") == "gru":
            one = gru_constant(firsts[place])
            if id(one) not in present:
                out.insert(place, one)
    return with_stabilizer_constants(out, present,
                                     lambda v: kind_of(v) == "parameter")


def block_inner_leaves(out: Variable) -> list[Variable]:
    """The parameters and constants a block uses inside it, in the order of CNTK's walk of the
    block's composite (:func:`walk_leaves`: a nested block's own parameters before those of
    its arguments' producers), then any reached only through the raw graph; a recurrent
    cell's parameters in CNTK's order: :func:`cntk_cell_order`."""
    block = BLOCKS[out]
    stop = {id(a) for a in block.arguments}
    seen: set[int] = set()
    leaves: list[Variable] = []
    for _, v in search(("op", out), lambda n: n[0] == "leaf", 0, inside=out, stored=True):
        if (id(v) not in seen and id(v) not in stop and v.parent is None
                and v not in INPUTS and v not in PLACEHOLDERS):
            seen.add(id(v))
            leaves.append(v)
    stack = [out]
    while stack:
        v = stack.pop()
        if id(v) in stop or (id(v) in seen and v.parent is None):
            continue
        if v.parent is None:
            seen.add(id(v))
            if v not in INPUTS and v not in PLACEHOLDERS:
                leaves.append(v)
            continue
        stop.add(id(v))                      # an op's output: walked once
        stack.extend(reversed(node_inputs(("op", v))))   # (its shown_inputs, once a walk)
    return cntk_cell_order(leaves)


# The inputs :func:`node_inputs` found during the walk under way, by node: ``(kind, id(v))``
# -> ``(v, inputs)`` (``v`` held, so its id is not reused while the walk lasts); None between
# walks.  A walk reads the graph without changing it, and :func:`walk_leaves` runs two searches
# from each root, each asking again for the nodes the other asked for, and a block's inner
# leaves (:func:`block_inner_leaves`) a search of their own, once per walk that meets the
# block; the graph can change between walks, so nothing is kept after one.
_WALK_MEMO: list = [None]


@contextmanager
def one_walk():
    """Keep :func:`node_inputs`' answers while the walks inside run (nested: the outermost's):
    for walks of a graph that does not change meanwhile (the searches of one
    ``Function.parameters``).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.Dense(2)(C.input_variable(3))
        >>> with one_walk():
        ...     [name_of(v) for v in walk_leaves([z.variable])]
        ['W', 'b', '']
    """
    if _WALK_MEMO[0] is not None:
        yield
        return
    _WALK_MEMO[0] = {}
    try:
        yield
    finally:
        _WALK_MEMO[0] = None


def node_inputs(node: tuple[str, Variable]) -> list[Variable]:
    """The inputs CNTK shows for a node: a block shows its parameters, then its arguments; an
    op its own inputs; a leaf none."""
    memo = _WALK_MEMO[0]
    if memo is None:
        return _node_inputs(node)
    key = (node[0], id(node[1]))
    kept = memo.get(key)
    if kept is None or kept[0] is not node[1]:
        kept = memo[key] = (node[1], _node_inputs(node))
    return list(kept[1])


def _node_inputs(node: tuple[str, Variable]) -> list[Variable]:
    kind, v = node
    if kind == "block" and has_step_view(v):     # (a recurrence: its Combine of the step's
        return [shown_step_output(v)]               # output)
    if kind == "block":
        return block_inner_leaves(v) + list(BLOCKS[v].arguments)
    if kind == "op" and v.parent is not None:
        return shown_inputs(v)
    return []


# CNTK holds these ops' two operands the other way round inside (``times(x, W)`` is
# ``Times(W, x)``, ``gather(reference, indices)`` is ``Gather(indices, reference)``, as its
# files store them): ``Function.inputs`` shows Python's order, ``parameters`` and
# ``constants`` walk the inner one (checked against CNTK 2.7: ``times(times(x, W1) + b1, W2)
# + b2`` has the parameters W2, W1, b1, b2)
_SWAPPED_INSIDE = frozenset({"Times", "TransposeTimes", "Gather"})


def stored_inputs(node: tuple[str, Variable]) -> list[Variable]:
    """:func:`node_inputs` in the order CNTK holds them inside (:data:`_SWAPPED_INSIDE`)."""
    inputs = node_inputs(node)
    if node[0] == "op" and len(inputs) == 2 and primitive_op_name(node[1]) in _SWAPPED_INSIDE:
        return inputs[::-1]
    return inputs


def search(root: "tuple[str, Variable] | list[tuple[str, Variable]]",
           visitor: Callable[[tuple[str, Variable]], bool],
           depth: int = 0, inside: Variable | None = None,
           stop: list[Variable] = (), stored: bool = False) -> list[tuple[str, Variable]]:
    """CNTK's depth-first search from the node ``root`` (or from a list of nodes in order, as
    from the outputs of a ``combine``): each node is visited before its inputs,
    inputs in order; a block is entered only while ``depth`` allows (-1: always), its
    arguments and its inner root then walked after the nodes already waiting.  ``inside``
    (a block's output) keeps the walk inside that block: its arguments are leaves, the
    block's placeholders for them (:func:`inner_placeholders`), as CNTK's walk inside a
    block meets them; so are the values ``stop``.  ``stored``: each op's
    inputs in the order CNTK holds them (:func:`stored_inputs`), not Python's.  Returns the
    nodes for which ``visitor`` is true."""
    inputs_of = stored_inputs if stored else node_inputs
    if depth == -1:
        depth = 1 << 30
    boundary = {id(a) for a in BLOCKS[inside].arguments} if inside is not None else set()
    boundary |= {id(a) for a in stop}

    def classify_(v: Variable) -> tuple[str, Variable]:
        if id(v) in boundary:
            return ("leaf", v if inside is None else seen_inside(inside, v))
        node = classify(v)
        if node[0] == "block" and node[1] is inside:    # (another output of the block read
            return ("op", v)                             # inside it: the op making it there)
        if node[0] == "block" and _passed_on(node[1]):   # (read by an op: CNTK's graph holds
            return classify(shown_step_output(node[1]))  # the step's output, no Combine)
        return node

    starts = root if isinstance(root, list) else [root]
    # (a deque: the next node is taken from the front, a node's inputs go to the front in
    # order, a block's arguments and inner root to the back)
    stack: deque[tuple[tuple[str, Variable], int]] = deque((r, depth) for r in starts)
    found, visited = [], set()
    with one_walk():
        while stack:
            node, d = stack.popleft()
            kind, v = node
            if (kind, id(v)) in visited:
                continue
            visited.add((kind, id(v)))
            if kind == "op" and v in INNER_OPS:     # not a node of the file: walk through
                stack.extendleft(reversed([(classify_(i), d) for i in inputs_of(node)]))
                continue
            if kind == "block" and d > 0 and not has_step_view(v):
                stack.extend((classify_(a), d - 1) for a in BLOCKS[v].arguments)
                stack.append((("op", v), d - 1))
            else:
                stack.extendleft(reversed([(classify_(i), d) for i in inputs_of(node)]))
            if visitor(node):
                found.append(node)
    return found


# the layers whose root CNTK 2.7 makes a Combine of the step's output, which the ops reading
# the layer's output read directly
_PASSING_ON = ("Recurrence", "RecurrenceFrom")


def _passed_on(v: Variable) -> bool:
    """Whether ``v`` is the output of an unnamed recurrence whose step the walks show: an op
    reading it reads the step's output in CNTK 2.7's graph (its Combine is only the root of
    the recurrence's own Function; a named one's ``NoOp`` is a function of the graph)."""
    block = BLOCKS[v]
    return block.op_name in _PASSING_ON and not block.name and has_step_view(v)


def passed_on_value(v: Variable) -> Variable:
    """``v`` as an op reading it shows it: the step's output where ``v`` is the output of an
    unnamed recurrence whose step the walks show (``sequence.last`` of a
    ``Recurrence(GRU(3, name='cell'))``, a ``Fold``'s ``Sequence::Slice``, read the ``GRU``
    block's output, named ``cell``), else ``v``."""
    if v.parent is not None and first_output(v) in BLOCKS and _passed_on(first_output(v)):
        return shown_step_output(first_output(v))
    return v


def walk_operands(roots: list[Variable], leaves: list[Variable],
                  stop: bool = False) -> list[Variable]:
    """``leaves`` (those the roots depend on) in CNTK's order for ``Function.arguments``: depth
    first, each node before its operands, operands in (Python's) order, a block seen from
    outside (its operands are the variables bound to its arguments); then any reached only
    inside a block (a recurrence's step reading an outer value), in their given order.
    ``stop``: ``leaves`` computed by ops are leaves too, not walked through (a step's view
    over ``PastValue`` views)."""
    found: list[Variable] = []
    seen: set[int] = set()
    stops = {id(v) for v in leaves} if stop else set()
    stack = list(reversed(roots))
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        kind, first = ("leaf", v) if id(v) in stops else classify(v)
        if kind == "leaf":
            found.append(v)
        elif kind == "block":
            stack.extend(reversed(BLOCKS[first].arguments))
        elif v.parent is not None:
            stack.extend(reversed([*operand_order(v),
                                   *(seen_through(i) for i in v.parent.inputs)]))
    return found + [v for v in leaves if id(v) not in seen]


def walk_leaves(roots: list[Variable], stop: list[Variable] = (),
                stored: bool = False) -> Iterator[Variable]:
    """The leaves the roots depend on (through every block), each once, in the order of CNTK's
    ``Function.inputs`` (and so of ``parameters``): depth first, each node's inputs in order,
    a block seen from outside (its own parameters, then its arguments), so that a nested
    block's parameters come right after those of the block holding it; then any leaf reached
    only inside a block (a recurrence's step reading an outer value) in the order of a walk
    through the blocks; a recurrent cell's parameters in CNTK's order
    (:func:`cntk_cell_order`).  ``stop``: values taken as leaves, the graphs that compute
    them not walked (a layer's operands).  ``stored``: in the order of CNTK's
    ``parameters`` and ``constants`` instead, each op's inputs as CNTK holds them
    (:func:`stored_inputs`)."""
    seen: set[int] = set()
    leaves = []
    with one_walk():
        for depth in (0, -1):
            for root in roots:
                for _, v in search(classify(root), lambda n: n[0] == "leaf", depth, stop=stop,
                                   stored=stored):
                    if id(v) not in seen:
                        seen.add(id(v))
                        leaves.append(v)
    yield from cntk_cell_order(leaves)


def parameters_met_first(roots: list[Variable]) -> set[int]:
    """The ids of the loaded files' parameters that the walk of :func:`walk_leaves` (its
    ``stored`` order) meets before it enters their file's graph, read by an op of the
    Function's own: CNTK 2.7's ``plus(times(h, H1), m(x))`` lists ``H1`` first, then the
    rest of ``m``'s in ``m``'s order (``G.in_parameter_order``)."""
    with one_walk():       # (the two searches ask for the same nodes' inputs, as walk_leaves')
        walked = [v for depth in (0, -1) for root in roots
                  for _, v in search(classify(root), lambda n: True, depth, stored=True)]
    return met_before_loaded_graph(walked)
