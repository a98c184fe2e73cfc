"""What CNTK shows of a Variable of Stadyn's graph, kept per Variable (held weakly, as
:mod:`._graph` says): the name of an input, a placeholder, a parameter or a constant; the CNTK
op that made an output and its unique id (``Plus31``; a block's root's); the outputs of one CNTK
function of several (``top_k``); the order CNTK lists an op's operands and a Function's
arguments in.  The nodes CNTK holds where Stadyn computes one op, and the inputs CNTK shows
for an op, are ``_graph_views``'s, above it.  Re-exported by ``_graph``, whose depth-first
search reads them.

Example:
    >>> import stadyn.compat.cntk as C
    >>> x = C.input_variable(3, name="x")
    >>> y = C.plus(x, 1, name="y")
    >>> name_of(x.variable), kind_of(x.variable), op_name_of(y.variable), uid_of(y.variable)[:4]
    ('x', 'input', 'Plus', 'Plus')
"""

from __future__ import annotations

import itertools
import re
import weakref

from ...graph import Variable, keep_with, kept_with
from ._graph_records import (BLOCKS, INNER_OPS, INPUTS, LEAF_NAMES, OUTPUT_INDEX, PLACEHOLDERS,
                             SEQUENCE_AXES, Block)
from ._spliced import seen_through

__all__ = ["name_sequence_axis", "ARGUMENT_ORDER", "record_argument_order",
           "record_parameter_order", "in_parameter_order", "carry_parameter_order",
           "has_parameter_order", "carry_loaded_graph", "met_before_loaded_graph",
           "show_operands_in_order", "operand_order", "in_argument_order", "cntk_name", "kind_of",
           "name_of", "set_op_name", "Combine", "mark_outputs", "link_outputs", "first_output",
           "outputs_of", "function_outputs", "mark_block", "made_by_cntk_op", "op_name_of",
           "primitive_op_name", "spelled_op_name", "uid_of", "new_uid", "set_uid",
           "set_root_uid", "root_uid_of", "recurrence_root_uid", "take_uid_numbers",
           "RECURRENCE_BLOCKS"]

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
# (from 3: a fresh CNTK 2.7 process's first uid is 3, `import cntk` having taken 0 to 2 --
# C.input_variable(1).uid is Input3 --, so a v1 file loaded first is numbered as CNTK numbers it)
_uid_counter = itertools.count(3)

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


# The order of a loaded CNTK file's parameters, as CNTK 2.7's loaded Function lists them, by
# each of those parameters: the parameters, held weakly (a value holds no key)
PARAMETER_ORDER: "weakref.WeakKeyDictionary[Variable, tuple]" = weakref.WeakKeyDictionary()
# A token per loaded file's graph (one per load, carried to its copies), by each of its
# parameters and each value its ops compute: where a walk enters that graph
_LOADED_GRAPH: "weakref.WeakKeyDictionary[Variable, object]" = weakref.WeakKeyDictionary()


def record_parameter_order(parameters: list[Variable], computed: list[Variable] = ()) -> None:
    """Record ``parameters`` (a loaded file's, all of them) as the order CNTK 2.7 lists them in
    wherever a Function's walk enters their graph: an op of ``computed`` (the values the
    file's ops compute)."""
    entry = tuple(weakref.ref(p) for p in parameters)
    token = object()
    for p in parameters:
        PARAMETER_ORDER[p] = entry
        _LOADED_GRAPH[p] = token
    for v in computed:
        _LOADED_GRAPH[v] = token


def carry_loaded_graph(old: Variable, new: Variable) -> None:
    """``new`` (a copy of the value ``old``) computed by an op of the loaded graph ``old`` is
    computed in (:func:`record_parameter_order`), if any."""
    token = _LOADED_GRAPH.get(old)
    if token is not None:
        _LOADED_GRAPH[new] = token


def has_parameter_order(parameters: list[Variable]) -> bool:
    """Whether an order is recorded for any of ``parameters`` (:func:`record_parameter_order`)."""
    return any(p in PARAMETER_ORDER for p in parameters)


def met_before_loaded_graph(walked: list[Variable]) -> set[int]:
    """The ids of the loaded files' parameters among ``walked`` (a walk's nodes, in order)
    that the walk meets before it enters their file's graph (an op of it): an op of the
    Function reading them itself (``times(h, H1)`` before ``m(x)``)."""
    entered, early = set(), set()
    for v in walked:
        token = _LOADED_GRAPH.get(v)
        if token is None:
            continue
        if v not in PARAMETER_ORDER:
            entered.add(token)
        elif token not in entered:
            early.add(id(v))
    return early


def in_parameter_order(parameters: list[Variable], early: "set[int]" = frozenset()
                       ) -> list[Variable]:
    """``parameters`` (a Function's, in the walk's order) with each loaded file's parameters
    (:func:`record_parameter_order`) in their recorded order, where the walk meets the first
    of them: CNTK 2.7's depth-first walk enters the loaded graph once and lists it as the
    loaded Function does (``m(x)``, ``m + 1``, ``m.clone(...)``).  A file's parameters the
    Function does not all read (a part of the loaded graph) are left in the walk's order; so
    are those whose ids are in ``early`` (:func:`met_before_loaded_graph`), met before the
    walk enters the loaded graph, and left out of their graph's order."""
    if not has_parameter_order(parameters):
        return parameters
    held = {id(p) for p in parameters}
    done: set[int] = set()
    order = []
    for p in parameters:
        if id(p) in done:
            continue
        group = [ref() for ref in PARAMETER_ORDER.get(p, ())]
        if id(p) in early or not group or \
                not all(g is not None and id(g) in held for g in group):
            group = [p]
        else:
            group = [g for g in group if id(g) not in early]
        for g in group:
            if id(g) not in done:
                done.add(id(g))
                order.append(g)
    return order


def carry_parameter_order(old: list[Variable], new: list[Variable],
                          computed: list[Variable] = ()) -> None:
    """Record for ``new`` (a clone's parameters, each made from the one of ``old`` at its
    place) the order recorded for ``old`` (:func:`record_parameter_order`), as a graph of its
    own: entered where the clone's ops are, those of ``computed`` (the values the clone's ops
    compute) that copy an op of ``old``'s graph (:func:`carry_loaded_graph`).  CNTK 2.7's
    ``plus(m(x), plus(times(h, c.H1), c(y)))`` (``c`` a clone of ``m``, parameters cloned)
    lists ``c``'s ``H1`` before ``c``'s others: ``c``'s graph is not ``m``'s."""
    made = dict(zip(map(id, old), new))
    for group in {PARAMETER_ORDER[p] for p in old if p in PARAMETER_ORDER}:
        members = [ref() for ref in group]
        if all(m is not None and id(m) in made for m in members):
            token = _LOADED_GRAPH.get(members[0])
            record_parameter_order([made[id(m)] for m in members],
                                   [v for v in computed
                                    if token is not None and _LOADED_GRAPH.get(v) is token])


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
        block = BLOCKS.get(first_output(v))     # (every output of a block: its name)
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


def first_output(v: Variable) -> Variable:
    """The first output of the function that made ``v`` (``v`` itself where it is)."""
    ref = _FIRST_OUTPUT.get(v)
    first = ref() if ref is not None else None
    return v if first is None else first


def outputs_of(v: Variable) -> list[Variable]:
    """The outputs of the function that made ``v`` (``v`` alone but for :func:`mark_outputs`)."""
    first = first_output(v)
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
    block = BLOCKS.get(first_output(v))
    return block.op_name if block is not None else primitive_op_name(v)


def primitive_op_name(v: Variable) -> str:
    """The CNTK op name of the op that made ``v`` (inside a block too); Stadyn's op name in
    CNTK's spelling where no CNTK op recorded one (``Plus`` for a layer's affine map with a
    bias: :func:`shown_product`)."""
    known = _OP_NAMES.get(v)
    if known is not None:
        return known
    layer_op = _layer_op(v)
    if layer_op is not None:
        return "Plus" if len(v.parent.inputs) == 3 else layer_op
    if v.parent is not None and v not in INNER_OPS and v.parent.spec.name in _LAYER_OPS:
        return _LAYER_OPS[v.parent.spec.name]
    return spelled_op_name(v)


# The CNTK 2.7 ops Stadyn's ops are where they compute a layer's inside (no CNTK op recorded
# its name): a layer normalisation's arithmetic, a batch normalisation, a recurrent step's
# gates (its 1 - z: Minus(1, z)); an affine map and a convolution are :func:`_layer_op`'s
# (checked on CNTK 2.7: tests/compat cntk_graph_walks, cntk_graph_views)
_LAYER_OPS = {"add2": "Plus", "sub2": "Minus", "mul2": "ElementTimes", "div2": "ElementDivide",
              "mean": "ReduceElements", "add_scalar": "Plus", "r_sub_scalar": "Minus",
              "sigmoid": "StableSigmoid", "cntk_batch_normalization": "BatchNormalization"}


# Stadyn's ops that compute a layer's product with its bias (x, W, b): CNTK 2.7's op of the
# product, which a Plus adds the bias to
_LAYER_PRODUCTS = {"affine": "Times", "convolution": "Convolution"}


def _layer_op(v: Variable) -> "str | None":
    """CNTK 2.7's op of the product (``Times``, ``Convolution``) where ``v`` is made by
    Stadyn's affine map or convolution inside a layer (a ``Dense``, an ``Embedding``, a
    ``Convolution``), which CNTK builds as that op (without a bias), or a ``Plus`` over it and
    the bias (with one); None where a CNTK op recorded its own name, where it is one of several
    Stadyn ops shown as one CNTK op, or for another op."""
    node = v.parent
    if node is None or v in _OP_NAMES or v in INNER_OPS:
        return None
    return _LAYER_PRODUCTS.get(node.spec.name)


def spelled_op_name(v: Variable) -> str:
    """The op name of the Stadyn op that made ``v`` in CNTK's spelling (``mul``: ``Mul``),
    ``""`` for a leaf: a CNTK op's name when it recorded none."""
    if v.parent is None:
        return ""
    return "".join(part.capitalize() for part in v.parent.spec.name.split("_"))


# layers CNTK 2.7 makes no block of: their root is a Combine of the step's output, a NoOp
# when the layer is named (its output's uid NoOp<n>_Output_0)
RECURRENCE_BLOCKS = ("Recurrence", "Fold", "RecurrenceFrom")


def uid_of(v: Variable) -> str:
    """A unique id for ``v`` in CNTK's style (``Parameter12``, ``Plus31``; a named
    recurrence's output ``NoOp<n>``, as CNTK 2.7's)."""
    uid = _UIDS.get(v)
    if uid is None:
        kind = kind_of(v)
        block = BLOCKS.get(v)
        named_loop = block is not None and block.op_name in RECURRENCE_BLOCKS and block.name
        prefix = ("NoOp" if named_loop else "Block" if block is not None else op_name_of(v)) \
            if kind == "output" else kind.capitalize()
        uid = _UIDS[v] = f"{prefix}{next(_uid_counter)}"
    return uid


_RECURRENCE_ROOT_UIDS: "weakref.WeakKeyDictionary[Variable, str]" = \
    weakref.WeakKeyDictionary()


def recurrence_root_uid(v: Variable, op_name: str) -> str:
    """The uid of the root of the recurrence whose output is ``v``: CNTK 2.7's ``Combine``
    (``NoOp`` when named, ``op_name``) of the step's output, numbered once; the output keeps
    its own uid (``uid_of``).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.Recurrence(C.plus)(C.sequence.input_variable(2))
        >>> z.root_function.uid[:7], z.root_function.uid == z.root_function.uid
        ('Combine', True)
    """
    uid = _RECURRENCE_ROOT_UIDS.get(v)
    if uid is None:
        uid = _RECURRENCE_ROOT_UIDS[v] = new_uid(op_name)
    return uid


def new_uid(prefix: str) -> str:
    """A new unique id ``<prefix><n>``, numbered as :func:`uid_of` numbers Variables' (for
    what has no Variable yet: a waiting Function's output)."""
    return f"{prefix}{next(_uid_counter)}"


def take_uid_numbers(numbers) -> int:
    """The number :func:`new_uid` would give next, taking it and as many after it as
    ``numbers(first)`` says (a CNTK v1 file's load numbers its nodes as CNTK 2.7 does, from
    the counter as it stands: ``numbers`` gives the count it took)."""
    first = next(_uid_counter)
    for _ in range(numbers(first) - 1):
        next(_uid_counter)
    return first


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

