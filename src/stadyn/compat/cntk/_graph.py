"""The CNTK view of Stadyn's graph.

CNTK sees a graph as Variables (inputs, placeholders, parameters, constants, outputs) and
Functions (primitive ops, and *blocks*: a layer applied to its arguments).  Stadyn's graph has
Variables and op nodes only, so this module keeps what CNTK adds, per Variable and held weakly:
the names of inputs and placeholders, the CNTK op name of an output, the block a layer
application made, a unique id (the registries themselves, by kind, are in
:mod:`._graph_records`; this module hands them out under the same names).  On that it builds
CNTK's depth-first search (what ``find_by_name`` and ``cntk.logging.graph`` walk, with its
``depth`` into blocks).  Cloning is :mod:`._clone`.

Nothing here holds a graph alive: what is kept per Variable is keyed weakly, and a value kept
for a Variable refers to other Variables only weakly where they are computed into it (a
block's arguments): a run of a graph makes each of its roots refer to every other (through
the run's plan), so a strong reference from an entry to a run's root would keep its key, and
the whole graph, alive for ever.
"""

from __future__ import annotations

import itertools
import re
import weakref
from typing import Callable, Iterator

from ...graph import Variable, is_lengths, keep_with, kept_with
from ._graph_records import (BATCH, BLOCKS, INFERRED_SHAPES, INNER_OPS, INPUTS, LEAF_NAMES,
                             OUTPUT_INDEX, PLACEHOLDERS, SEQUENCE_AXES, SHAPELESS, SPARSE,
                             SPARSE_OUTPUTS, STEP_VALUES, Block)
from ._graph_placeholders import (bind_placeholder, follow_sequence_axis, not_found,
                                  placeholder_like, reads, replace_placeholder)
from ._shown_constants import gru_constant, shown_as, shown_constants, with_stabilizer_constants
from ._spliced import is_splice_leaf, mark_spliced, seen_through

__all__ = ["INPUTS", "PLACEHOLDERS", "SHAPELESS", "INFERRED_SHAPES", "SPARSE", "SPARSE_OUTPUTS",
           "STEP_VALUES",
           "LEAF_NAMES", "BATCH", "Block",
           "INNER_OPS", "mark_outputs", "link_outputs", "outputs_of", "function_outputs",
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
           "record_argument_order", "in_argument_order"]

_OP_NAMES: "weakref.WeakKeyDictionary[Variable, str]" = weakref.WeakKeyDictionary()
_UIDS: "weakref.WeakKeyDictionary[Variable, str]" = weakref.WeakKeyDictionary()
_ROOT_UIDS: "weakref.WeakKeyDictionary[Variable, str]" = weakref.WeakKeyDictionary()
# The outputs of a CNTK function of several (``top_k``'s values and indices): each output
# after the first -> the first (weakly), which stands for the function in the walks.  The
# first keeps the others while it lives (CNTK lists an output no one reads, top_k's indices,
# among the function's), on itself (``keep_with``): a run of both makes each refer to the
# other, so a registry keyed by the first would keep it alive for ever.
_FIRST_OUTPUT: "weakref.WeakKeyDictionary[Variable, weakref.ref]" = weakref.WeakKeyDictionary()
_OTHER_OUTPUTS = "compat.cntk: the function's other outputs"
_uid_counter = itertools.count()

# Stadyn's names for batch normalisation's parameters and statistics, and CNTK's.
_BN_NAMES = {"beta": "bias", "gamma": "scale", "mean": "aggregate_mean",
             "var": "aggregate_variance", "count": "aggregate_count"}


def name_sequence_axis(var: Variable, axes) -> None:
    """Record the sequence axis among ``axes`` (CNTK's dynamic axes of the input ``var``, or
    one axis) as the axis of ``var``'s sequences, unless it is the default one."""
    for axis in axes if isinstance(axes, (list, tuple)) else (axes,):
        if getattr(axis, "is_sequence_axis", False) and var.sequence_lengths is not None and \
                axis.name != "defaultDynamicAxis":
            SEQUENCE_AXES[var.sequence_lengths] = axis


# The order of the arguments a Python function's signature gave the Function it made, by the
# Function's root: CNTK passes such arguments through a "Tuple" block, so they come out in the
# signature's order, not in the order a walk of the graph meets them (``loss(model(x), y)``
# meets y first).  The arguments are held weakly: an input can be a root of a run with the
# Function (``combine([z, x]).eval``), which makes it refer to ``z``, the entry's key.
ARGUMENT_ORDER: "weakref.WeakKeyDictionary[Variable, tuple[weakref.ref, ...]]" = \
    weakref.WeakKeyDictionary()


def record_argument_order(root: Variable, arguments: list[Variable]) -> None:
    """Record ``arguments`` as the order of the arguments of the Function ``root``."""
    ARGUMENT_ORDER[root] = tuple(weakref.ref(a) for a in arguments)


_OPERAND_ORDER = "compat.cntk: the order CNTK lists the op's operands in"


def show_operands_in_order(out: Variable, operands: tuple) -> None:
    """List ``operands`` (of the op that made ``out``) in this order, whatever order Stadyn's
    inner values read them in: ``Function.inputs`` and the walk for ``Function.arguments``
    (CNTK's ``gather(reference, indices)`` lists the reference first)."""
    keep_with(out, _OPERAND_ORDER, tuple(seen_through(o) for o in operands))


def operand_order(v: Variable) -> tuple:
    """The operands :func:`show_operands_in_order` gave the op that made ``v`` (empty when
    none were given)."""
    return kept_with(v, _OPERAND_ORDER) or ()


def _in_operand_order(v: Variable, found: list[Variable]) -> list[Variable]:
    order = kept_with(v, _OPERAND_ORDER) or ()
    if not order:
        return found
    first = [o for o in order if any(o is f for f in found)]
    return first + [f for f in found if not any(f is o for o in first)]


def in_argument_order(root: Variable, arguments: list[Variable]) -> list[Variable]:
    """``arguments`` (a Function's, in the walk's order) in the order recorded for ``root``:
    the recorded ones first, then the others as they were."""
    order = [a for a in (ref() for ref in ARGUMENT_ORDER.get(root, ())) if a is not None]
    if not order:
        return arguments
    present = {id(a) for a in arguments}
    first = [a for a in dict.fromkeys(order) if id(a) in present]
    taken = {id(a) for a in first}
    return first + [a for a in arguments if id(a) not in taken]


_UNNAMED_CONSTANT = re.compile(r"constant\d+")


def cntk_name(v: Variable) -> str:
    """A parameter's or constant's CNTK name: the last part of its scope path (``dense/W`` is
    ``W``), with batch normalisation's names as CNTK's layer gives them; a Constant made
    without a name (saved as ``constant<n>``) has none."""
    scope, _, last = (v.name or "").rpartition("/")
    if not scope and _UNNAMED_CONSTANT.fullmatch(last) and not v.need_grad:
        return ""
    if scope.rpartition("/")[2].startswith("batchnormalization"):
        return _BN_NAMES.get(last, last)
    return last


def kind_of(v: Variable) -> str:
    """``input``, ``placeholder``, ``parameter``, ``constant`` or ``output``."""
    if v in INPUTS:
        return "input"
    if v in PLACEHOLDERS:
        return "placeholder"
    if v.parent is not None:
        return "output"
    return "parameter" if v.need_grad else "constant"


def name_of(v: Variable) -> str:
    """The name CNTK shows for ``v`` ('' when it has none)."""
    kind = kind_of(v)
    if kind == "input":
        return INPUTS[v]
    if kind == "placeholder":
        return PLACEHOLDERS[v]
    if kind == "output":
        block = BLOCKS.get(v)
        if block is not None and block.name:
            return block.name
        return v.name or ""
    known = LEAF_NAMES.get(v)
    return known if known is not None else cntk_name(v)


def set_op_name(v: Variable, op_name: str) -> None:
    """Record the CNTK op that made the output ``v`` (``Plus``, ``Times``, ...)."""
    _OP_NAMES[v] = op_name


class Combine:
    """A CNTK Combine function (``C.combine``, a loaded model of several functions' outputs):
    its ``name`` and ``uid``.  The Function it is the root of holds it (combines of the same
    outputs are Combine functions of their own)."""

    __slots__ = ("name", "uid")

    def __init__(self, name: str):
        self.name = name
        self.uid = f"Combine{next(_uid_counter)}"


def mark_outputs(outputs: list[Variable], op_name: str, block: bool = False) -> None:
    """Record ``outputs`` as those of one CNTK function ``op_name`` (``TopK``): one uid,
    ``<uid>_Output_<k>`` (``Block<n>`` where CNTK makes a block of it), and one node of the
    walks, which lists them all."""
    first = outputs[0]
    set_op_name(first, op_name)
    if block:
        set_uid(first, f"Block{next(_uid_counter)}")
    uid = uid_of(first)
    for v in outputs[1:]:
        set_op_name(v, op_name)
        set_uid(v, uid)
    link_outputs(outputs)


def link_outputs(outputs: list[Variable]) -> None:
    """Record ``outputs`` (in order) as those of one CNTK function (a loaded file's ``TopK``):
    the walks see one node for them, :func:`outputs_of` lists them all."""
    first = outputs[0]
    for k, v in enumerate(outputs[1:], 1):
        OUTPUT_INDEX[v] = k
        _FIRST_OUTPUT[v] = weakref.ref(first)
    keep_with(first, _OTHER_OUTPUTS, tuple(outputs[1:]))


def _first_output(v: Variable) -> Variable:
    """The first output of the function that made ``v`` (``v`` itself where it is)."""
    ref = _FIRST_OUTPUT.get(v)
    first = ref() if ref is not None else None
    return v if first is None else first


def outputs_of(v: Variable) -> list[Variable]:
    """The outputs of the function that made ``v`` (``v`` alone but for :func:`mark_outputs`)."""
    first = _first_output(v)
    others = kept_with(first, _OTHER_OUTPUTS)
    return [v] if others is None else [first, *others]


def function_outputs(members) -> "tuple[Variable, ...] | None":
    """``members`` if they are all the outputs of one CNTK function, in order (``top_k``'s
    values and indices, an unpack's value and mask), else None (outputs of several)."""
    outs = outputs_of(members[0])
    same = len(outs) == len(members) and all(a is b for a, b in zip(outs, members))
    return tuple(outs) if same else None


def mark_block(out: Variable, op_name: str, name: str, arguments, root_op: str) -> None:
    """Show the op that made ``out`` as CNTK 2.7 builds it, as a block: of kind ``op_name``
    (``Sequence::Slice`` for ``sequence.first``), named ``name``, over ``arguments``, around
    the primitive op ``root_op`` (``GatherPacked``); the op inside has no name of its own."""
    BLOCKS[out] = Block(op_name, name, tuple(arguments))
    set_op_name(out, root_op)
    out.name = None


def made_by_cntk_op(v: Variable) -> bool:
    """``v`` is the output of a CNTK op (one :func:`set_op_name` recorded), not of one of the
    Stadyn ops a CNTK op is made of."""
    return v in _OP_NAMES


def op_name_of(v: Variable) -> str:
    """The CNTK op name of the function that made ``v`` (a block's is its layer's kind)."""
    block = BLOCKS.get(v)
    return block.op_name if block is not None else primitive_op_name(v)


def primitive_op_name(v: Variable) -> str:
    """The CNTK op name of the op that made ``v`` (inside a block too); Stadyn's op name in
    CNTK's spelling where no CNTK op recorded one."""
    known = _OP_NAMES.get(v)
    if known is not None:
        return known
    return spelled_op_name(v)


def spelled_op_name(v: Variable) -> str:
    """The op name of the Stadyn op that made ``v`` in CNTK's spelling (``mul``: ``Mul``),
    ``""`` for a leaf: a CNTK op's name when it recorded none."""
    if v.parent is None:
        return ""
    return "".join(part.capitalize() for part in v.parent.spec.name.split("_"))


def uid_of(v: Variable) -> str:
    """A unique id for ``v`` in CNTK's style (``Parameter12``, ``Plus31``)."""
    uid = _UIDS.get(v)
    if uid is None:
        kind = kind_of(v)
        prefix = ("Block" if v in BLOCKS else op_name_of(v)) if kind == "output" else \
            kind.capitalize()
        uid = _UIDS[v] = f"{prefix}{next(_uid_counter)}"
    return uid


def new_uid(prefix: str) -> str:
    """A new unique id ``<prefix><n>``, numbered as :func:`uid_of` numbers Variables' (for
    what has no Variable yet: a waiting Function's output)."""
    return f"{prefix}{next(_uid_counter)}"


def set_uid(v: Variable, uid: str) -> None:
    """Give ``v`` the unique id a file recorded for it (a loaded CNTK model keeps CNTK's)."""
    _UIDS[v] = uid


def set_root_uid(v: Variable, uid: str) -> None:
    """Give the op inside a block whose output is ``v`` (the block's root) the uid a file
    recorded for it; the block itself keeps ``v``'s."""
    _ROOT_UIDS[v] = uid


def root_uid_of(v: Variable) -> str:
    """The uid of the primitive op that made ``v`` -- inside a block, the block's root
    (``GatherPacked12`` in the block ``Block13``)."""
    uid = _ROOT_UIDS.get(v)
    if uid is None and v in BLOCKS:
        uid = _ROOT_UIDS[v] = f"{primitive_op_name(v)}{next(_uid_counter)}"
    return uid or uid_of(v)


def shown_inputs(v: Variable) -> list[Variable]:
    """The inputs CNTK shows for the op that made ``v``: a sequence op's lengths input is
    Stadyn's layout, no input CNTK shows; a spliced value is seen through; the constants
    recorded by ``_shown_constants.show_constants`` come first, and a constant cloned at the
    first run is shown in its cast's place (``shown_as``).  A recurrence shows the
    values its step reads, then its initial states, then its sequences (CNTK's walk meets a
    step's parameters before the delays that hold the initial states, and the sequences
    last)."""
    node = v.parent
    inputs = list(node.inputs)
    if node.spec.name == "recurrence":      # (lengths, sequences..., states..., captured...)
        first = 1 + int(node.kwargs["n_sequences"])
        end = first + len(node.kwargs["step"].states)
        inputs = _in_walk_order(node.kwargs["step"], inputs[end:]) + inputs[first:end] + \
            inputs[:first]
    elif node.spec.name in _FUSED_STATES:   # (x, lengths, states..., parameters...)
        end = 2 + _FUSED_STATES[node.spec.name]
        inputs = inputs[end:] + inputs[2:end] + inputs[:2]
    shown: list[Variable] = []
    inner = any(i in INNER_OPS and i.parent is not None for i in inputs)
    for i in inputs:
        if is_lengths(i):
            continue
        # an op with inner values (several of Stadyn's for one of CNTK's) shows what they
        # read, each once
        for j in (shown_inputs(i) if i in INNER_OPS and i.parent is not None
                  else [shown_as(seen_through(i))]):
            if not (inner and any(j is k for k in shown)):
                shown.append(j)
    return [*shown_constants(v), *_in_operand_order(v, shown)]


def _in_walk_order(step, fed: list) -> list:
    """The values ``fed`` for the captured values of the recurrence's ``step`` (in its order),
    in the order CNTK 2.7's depth-first walk from the step's outputs meets them (``b + W @ x``
    shows ``b`` before ``W``, whichever Python computed first)."""
    where = {id(c): k for k, c in enumerate(step.captured)}
    seen: set[int] = set()
    order: list[int] = []
    stack = list(reversed(step.outputs))
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if id(v) in where:
            order.append(where[id(v)])
        elif v.parent is not None and v not in PLACEHOLDERS:
            stack.extend(reversed(shown_inputs(v)))
    order += [k for k in range(len(fed)) if k not in order]
    return [fed[k] for k in order]


# the recurrent cells run along a whole sequence by one op: their number of states
_FUSED_STATES = {"cntk_lstm_sequence": 2, "cntk_gru_sequence": 1, "cntk_rnn_sequence": 1}


# -- CNTK's depth-first search -----------------------------------------------------------------
# A node of the walk: ("leaf", v) for an input, placeholder, parameter or constant; ("block", v)
# for the layer application whose output is v; ("op", v) for the primitive op that made v.


def classify(v: Variable) -> tuple[str, Variable]:
    """The walk's node for the function (or leaf) behind ``v``."""
    if v.parent is None or v in PLACEHOLDERS:
        return ("leaf", v)
    return ("block" if v in BLOCKS else "op", _first_output(v))


def node_name(node: tuple[str, Variable]) -> str:
    """The name CNTK shows for a node of the walk."""
    kind, v = node
    if kind == "block":
        return BLOCKS[v].name
    if kind == "op":
        return v.name or ""
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
    for _, v in search(("op", out), lambda n: n[0] == "leaf", 0, inside=out):
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
        stack.extend(reversed(shown_inputs(v)))
    return cntk_cell_order(leaves)


def node_inputs(node: tuple[str, Variable]) -> list[Variable]:
    """The inputs CNTK shows for a node: a block shows its parameters, then its arguments; an
    op its own inputs; a leaf none."""
    kind, v = node
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
    (a block's output) keeps the walk inside that block: its arguments are leaves, as the
    placeholders inside a CNTK block are; so are the values ``stop``.  ``stored``: each op's
    inputs in the order CNTK holds them (:func:`stored_inputs`), not Python's.  Returns the
    nodes for which ``visitor`` is true."""
    inputs_of = stored_inputs if stored else node_inputs
    if depth == -1:
        depth = 1 << 30
    boundary = {id(a) for a in BLOCKS[inside].arguments} if inside is not None else set()
    boundary |= {id(a) for a in stop}

    def classify_(v: Variable) -> tuple[str, Variable]:
        return ("leaf", v) if id(v) in boundary else classify(v)

    starts = root if isinstance(root, list) else [root]
    stack: list[tuple[tuple[str, Variable], int]] = [(r, depth) for r in starts]
    found, visited = [], set()
    while stack:
        node, d = stack.pop(0)
        kind, v = node
        if (kind, id(v)) in visited:
            continue
        visited.add((kind, id(v)))
        if kind == "op" and v in INNER_OPS:     # not a node of the file: walk through
            stack[:0] = [(classify_(i), d) for i in inputs_of(node)]
            continue
        if kind == "block" and d > 0:
            stack.extend((classify_(a), d - 1) for a in BLOCKS[v].arguments)
            stack.append((("op", v), d - 1))
        else:
            stack[:0] = [(classify_(i), d) for i in inputs_of(node)]
        if visitor(node):
            found.append(node)
    return found


def walk_operands(roots: list[Variable], leaves: list[Variable]) -> list[Variable]:
    """``leaves`` (those the roots depend on) in CNTK's order for ``Function.arguments``: depth
    first, each node before its operands, operands in (Python's) order, a block seen from
    outside (its operands are the variables bound to its arguments); then any reached only
    inside a block (a recurrence's step reading an outer value), in their given order."""
    found: list[Variable] = []
    seen: set[int] = set()
    stack = list(reversed(roots))
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        kind, _ = classify(v)
        if kind == "leaf":
            found.append(v)
        elif kind == "block":
            stack.extend(reversed(BLOCKS[v].arguments))
        elif v.parent is not None:
            stack.extend(reversed([*(kept_with(v, _OPERAND_ORDER) or ()),
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
    for depth in (0, -1):
        for root in roots:
            for _, v in search(classify(root), lambda n: n[0] == "leaf", depth, stop=stop,
                               stored=stored):
                if id(v) not in seen:
                    seen.add(id(v))
                    leaves.append(v)
    yield from cntk_cell_order(leaves)
