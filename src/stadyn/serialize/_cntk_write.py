"""Writing a Stadyn graph as a CNTK v2 model file (``.model``, what CNTK 2.7's
``Function.save`` writes by default and ``C.load_model`` and CNTK's C++/C# evaluators read).

The graph is written op by op: each catalog op the writer knows becomes one or a few CNTK
primitive functions (``affine`` is ``Times`` then ``Plus``; the rules are in the
``_cntk_write_*`` modules, :mod:`._cntk_write_basic` the first ops', this one puts their tables
together and walks the graph); a graph holding any other op, or an input on a sequence axis
it has no form for, is refused with :class:`CntkWriteUnsupported` naming the op, before
anything is written.  Layers (CNTK's block functions, ``Dense``) are written as blocks, as
CNTK writes them: a placeholder for each argument, the body's functions reading the
placeholders, and the block function mapping them to the values outside.  The file's
layout -- versions, uids, ``<uid>_Output_0`` names, reversed shapes, the attributes of each op
-- is the one CNTK 2.7 writes (see :mod:`._cntk_write_proto` and ``docs/model-files.md``).

Example:
    >>> import os, tempfile, numpy as np, stadyn as sd, stadyn.functions as F
    >>> from stadyn.serialize import _cntk_format
    >>> x = sd.Variable((1, 3))
    >>> w = sd.Variable.from_numpy_array(np.ones((3, 2), np.float32), need_grad=True)
    >>> path = os.path.join(tempfile.mkdtemp(), "m.model")
    >>> save_cntk_v2(path, [F.relu(F.affine(x, w))], {"x": x})
    >>> [f.type for f in _cntk_format.read_cntk(path).networks["main"].functions]
    ['Times', 'ReLU']
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Callable, Mapping, Sequence

from .._fileutil import atomic_write
from ..graph import Variable
from . import _cntk_write_proto as P
from ._cntk_write_basic import RULES as _BASIC_RULES
from ._cntk_write_exe import RULES as _EXE_RULES
from ._cntk_write_more import RULES as _LATER_RULES, WRITTEN_WHERE as _WRITTEN_WHERE
from ._cntk_write_ops import RULES as _MORE_RULES
from ._cntk_write_acts import RULES as _ACT_RULES
from ._cntk_write_gather import RULES as _GATHER_RULES
from ._cntk_write_lrn import RULES as _LRN_RULES
from ._cntk_write_seq import NEW_AXES as _NEW_AXES, RULES as _SEQ_RULES
from ._cntk_write_space import RULES as _SPACE_RULES
from ._cntk_write_topk import RULES as _TOPK_RULES, SEVERAL_OUTPUTS as _SEVERAL_OUTPUTS
from ._cntk_write_user import RULES as _USER_RULES
from ._cntk_write_recurrence import SEVERAL_OUTPUTS as _STATES, STEP_BLOCKS as _STEP_BLOCKS, \
    STEP_RULES, bias_last_sum, bias_last_sums, per_sequence_initials, recurrence_rule
from ._cntk_write_graph import Block, CntkWriteUnsupported, find_blocks, fold_shapes, \
    held_output, key, several_outputs, walk, write_block_of_outputs
from ._cntk_write_writer import COMPOSITE_VERSION, Writer
from ._cntk_write_order import in_cntk_order, name_placeholders
from ._cntk_write_on_sequences import _SEQUENCE_AND_ONE, _SEQUENCE_ENDS, _SEQUENCE_OPS, \
    _gathers_steps, _on_sequences

__all__ = ["save_cntk_v2", "cntk_v2_bytes", "CntkWriteUnsupported", "WRITABLE_OPS",
           "WRITTEN_WHERE", "ONE_OP_BLOCKS", "ATTRIBUTE_BLOCKS", "ATTRIBUTE_OPS"]

#: the blocks CNTK 2.7 builds for one op, which the caller shows as that op (its cntk_op_of)
#: and whose rules write the block, so they are not written as layers (compat.cntk reads it
#: from here): gather's, sequence.is_first's and is_last's, the reductions' (reduce_sum's
#: ReduceElements, reduce_l2's ReduceL2, ..., written by the rule for cntk:ReduceElements),
#: the losses' (squared_error's SquaredError, ..., each written by its own rule) and a loaded
#: file's Softplus (C.softplus's, a Stabilizer's: LogPlus(x, 0), by the rule of cntk:Softplus)
ONE_OP_BLOCKS = frozenset({"GatherOp", "Sequence::IsFirst", "Sequence::IsLast",
                           "ReduceElements", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                           "SquaredError", "CrossEntropyWithSoftmax", "ClassificationError",
                           "Softplus"})
#: the blocks of a loaded CNTK file the caller shows as one op with the block's attributes (its
#: cntk_op_of gives ``(kind, arguments, attributes)``), which the rule of that kind writes from
#: them, not as a layer of the ops the reader made of its body (and the compat's hard_sigmoid,
#: a HardSigmoid block of alpha and beta as CNTK 2.7's)
ATTRIBUTE_BLOCKS = frozenset({"LocalResponseNormalization", "HardSigmoid"})
#: the CNTK ops the caller gives with the attributes CNTK shows, which the writer writes (the
#: third element of ``cntk_op_of``'s answer): random_sample_inclusion_frequency's seed
ATTRIBUTE_OPS = frozenset({"RandomSampleInclusionFrequency"})
# the blocks whose root function CNTK 2.7 names as the block (element_divide's ElementTimes:
# a loaded file's ElementDivide block written as a layer; CNTK 2.7's v1 writer names the
# node by that root, cntk_zero_tie.model's 'div')
_ROOT_NAMED_BLOCKS = frozenset({"ElementDivide"})
# the blocks the caller marks on a value that the rule of the op making it writes itself
# (not as layers), by that op: sequence.last's and first's Sequence::Slice, broadcast_as's,
# sequence.slice's, gather's and scatter's (_cntk_write_seq.NEW_AXES)
_RULE_BLOCKS = {**dict.fromkeys(_SEQUENCE_ENDS, "Sequence::Slice"),
                **dict.fromkeys(_SEQUENCE_AND_ONE, "Sequence::BroadcastAs"), **_NEW_AXES}


_RULES = dict(_BASIC_RULES)     # (_cntk_write_basic's: the first ops written)
_RULES.update(_MORE_RULES)
_RULES.update(_LATER_RULES)
_RULES.update(_ACT_RULES)
_RULES.update(_LRN_RULES)
_RULES.update(_GATHER_RULES)
_RULES.update(_SPACE_RULES)
_RULES.update(_SEQ_RULES)
_RULES.update(_TOPK_RULES)
_RULES.update(_USER_RULES)           # a Python user function (its module, class, state)
_RULES.update(_EXE_RULES)            # a loaded cntk.exe file's criteria (primitives), reshapes
# Catalog ops whose CNTK namesakes compute otherwise: refused (so Function.save falls back to
# Stadyn's format); the compat's own ops (cntk_log, the ElementDivide and Reciprocal it marks)
# are CNTK's and written
_DIFFERENT = {
    "log": "CNTK's Log gives -85.1 at 0, not -inf (stadyn.compat.cntk's log is CNTK's)",
}
# (an LSTM layer's gates sliced from its one product, as CNTK 2.7's LSTM block writes them
# whether the layer is a recurrence's step or applied to values: LSTM(3)(h, c, x))
_RULES.update(STEP_RULES)
_RULES["recurrence"] = recurrence_rule(_RULES, _DIFFERENT)    # (its step's ops by these)
#: The catalog ops a CNTK v2 model file can be written with (``cntk:<Op>``: CNTK ops the caller
#: shows as one op, whatever catalog ops compute them, written as that one op); the ops of
#: :data:`WRITTEN_WHERE` are written only where their condition holds.
WRITABLE_OPS = tuple(sorted(set(_RULES) - set(_WRITTEN_WHERE)))
#: Ops CNTK 2.7 computes otherwise than Stadyn at some inputs, written only where the graph
#: shows those inputs cannot occur: op -> where it is written.
WRITTEN_WHERE = dict(_WRITTEN_WHERE)


def _input_axis_names(inputs: Mapping[str, Variable], sequence_axis_of, untyped: bool) -> dict:
    """id(input) -> the name of its sequence axis, for the inputs on a named one (CNTK 2.7
    writes an input on ``C.Axis('words')``, or a cntk.exe file's input on ``''``, with an
    ordered dynamic axis of that name first: ``InternalDynamicAxisNameFromDynamicAxes``,
    ``Utils.cpp``:522-533); an untyped graph's inputs are written with no axes."""
    if sequence_axis_of is None or untyped:
        return {}
    named = {id(v): sequence_axis_of(v) for v in inputs.values() if v.sequence_lengths is not None}
    return {k: axis for k, axis in named.items() if axis is not None}


def cntk_v2_bytes(outputs: Sequence[Variable], inputs: Mapping[str, Variable],
                  name_of: Callable[[Variable], str] | None = None,
                  leaf_name_of: Callable[[Variable], str] | None = None,
                  combine_name: str | None = None,
                  block_of: Callable[[Variable], "tuple | None"] | None = None,
                  input_names: Sequence[str] | None = None,
                  cntk_op_of: Callable[[Variable], "tuple | None"] | None = None,
                  leaf_order: Sequence[Variable] | None = None,
                  sequence_axis_of: Callable[[Variable], "str | None"] | None = None,
                  batched_input: Callable[[Variable], bool] | None = None,
                  sparse_input: Callable[[Variable], bool] | None = None,
                  untyped_inputs: bool = False, shapes: "dict | None" = None,
                  composite_name: str | None = None,
                  step_op_of: Callable[[Variable], str] | None = None,
                  loaded_attributes_of: Callable[[Variable], "tuple | None"] | None = None
                  ) -> bytes:
    """The bytes of a CNTK v2 model file computing ``outputs`` from ``inputs`` (name ->
    input Variable, batch axis first).  ``name_of``: the name of the function that computes a
    Variable (default its ``name``); ``leaf_name_of``: a parameter's or constant's name
    (default its ``name``); ``combine_name``: the name of the Combine function of the
    outputs, to write one even for one output (None: a Combine only for several);
    ``block_of``: ``(op name, name, arguments)`` of the layer (CNTK block) whose output a
    Variable is, or None (and a fourth, a dict of what the layer was given that its graph does
    not show: a Dense's ``inferInputRankToMap``); ``input_names``: the names the file gives
    the inputs (default the keys of ``inputs``); ``cntk_op_of``: the CNTK op the caller shows
    as making a Variable, ``(op name, its inputs)``, or None: one the writer has a
    ``cntk:<op>`` rule for (``Floor``, ``Log``, ``Negate``, ``Less``, ``ElementDivide``,
    ``And``, ... see :data:`WRITABLE_OPS`) is
    written as that CNTK op over those inputs, whatever catalog ops compute it;
    ``leaf_order``: the graph's leaves in the order the caller lists them (CNTK's ``Inputs()``
    order, that of CNTK's ``parameters``), by which untyped arguments are met and the leaves
    CNTK 2.7's serializer's walk does not reach are listed, after the others (every other
    leaf is listed in that walk's order, :func:`._cntk_write_order.in_cntk_order`, as CNTK 2.7
    lists them; default: the order they are met); ``sequence_axis_of``: the name of an
    input's sequence axis where the caller gave it one (None: CNTK's default axis), written as
    CNTK 2.7 writes it (an
    ordered dynamic axis of that name before the batch axis; ``''`` too, a cntk.exe file's
    input), as are the values computed from it; ``batched_input``: whether an input
    that is no sequence has the batch axis first (default: every one does; one without is
    written with no dynamic axes, CNTK's ``dynamic_axes=[]``); ``sparse_input``: whether an
    input was declared sparse (CNTK's ``is_sparse=True``, written so; default: none);
    ``untyped_inputs``: write the inputs as CNTK 2.7 writes the arguments of a Function not
    given types (an untyped ``@C.Function``): placeholders of unknown shape named by
    ``input_names``, the graph being the one built for the inputs' types; ``shapes``: a dict
    the writer fills with the shape (NumPy order, no dynamic axes) of each value it writes
    for a Stadyn value, by its name in the file (``Times5_Output_0``); ``composite_name``:
    the name of the model itself (CNTK's composite, renamed by ``z.name = ...``; default: its
    root function's); ``step_op_of``: the op name of a recurrence's step (``RNNStep``);
    ``loaded_attributes_of``: ``(op, attributes)`` of the function a loaded file computed a
    Variable with (CNTK's op name and attributes, as CNTK 2.7 shows them), or None: the ops of
    :data:`._cntk_write_loaded.LOADED_OPS` are written with those, as CNTK 2.7 writes a model
    it loaded again.  Raises
    :class:`CntkWriteUnsupported` for a graph with an op or input it cannot write."""
    name_of = name_of or (lambda v: v.graph_name or "")
    leaf_name_of = leaf_name_of or (lambda v: v.graph_name or "")
    input_axes = _input_axis_names(inputs, sequence_axis_of, untyped_inputs)
    batched = {id(v) for v in inputs.values() if batched_input is None
               or v.sequence_lengths is not None or batched_input(v)}
    sequences = {id(v) for v in inputs.values() if v.sequence_lengths is not None}
    lengths = {id(v.sequence_lengths) for v in inputs.values() if v.sequence_lengths is not None}
    nodes = walk(outputs, cntk_op_of, frozenset(_RULES))
    for node in nodes:
        if any(id(i) in batched for i in node.inputs):
            batched.update(id(o) for o in node.outputs if o is not None)
        if any(id(i) in sequences for i in node.inputs):
            if _on_sequences(node) not in _SEQUENCE_OPS and \
                    not _gathers_steps(node, sequences, untyped_inputs):
                raise CntkWriteUnsupported(node.spec.name, "an op on a sequence the writer has "
                                                           "no sequence form for")
            initial = per_sequence_initials(node)     # (RecurrenceFrom's: a delay's input)
            if _on_sequences(node) not in _SEQUENCE_AND_ONE and \
                    any(id(i) in batched and id(i) not in sequences and id(i) not in initial
                        for i in node.inputs):
                raise CntkWriteUnsupported(node.spec.name, "a sequence and a value without "
                                                           "its sequence axis")
            if _on_sequences(node) not in _SEQUENCE_ENDS:
                sequences.update(id(o) for o in node.outputs if o is not None)
        # (the lengths of a sequence an op makes -- a slice's, gather's -- are no value written)
        lengths.update(id(o.sequence_lengths) for o in node.outputs
                       if o is not None and o.sequence_lengths is not None)
    w = Writer(batched, name_of)
    w.sequences = sequences
    w.cntk_op_of, w.step_op_of = cntk_op_of, step_op_of or (lambda v: "")
    w.sparse = {id(v) for v in inputs.values() if sparse_input is not None and sparse_input(v)}
    w.untyped = {id(v) for v in inputs.values()} if untyped_inputs else set()
    if sequence_axis_of is not None:
        w.named_axis = sequence_axis_of
    w.axis_names.update(input_axes)
    w.made_by = {id(n.outputs[0]): (n.spec.name[len("cntk:"):], n.inputs) for n in nodes
                 if n.spec.name.startswith("cntk:")}
    w.note_readers(nodes, outputs)
    skipped = fold_shapes(w, nodes)               # (the nodes written as part of another)
    for node in nodes:                            # refuse before writing anything
        if id(node) in skipped:
            continue
        op = w.fused.get(id(node), node).spec.name
        if op in _DIFFERENT:
            raise CntkWriteUnsupported(op, _DIFFERENT[op])
        if op not in _RULES:
            raise CntkWriteUnsupported(op, "the writer has no rule for this op")
        if len([o for o in node.outputs if o is not None and id(o) not in lengths]) > 1 and \
                op not in _SEVERAL_OUTPUTS | _STATES:
            raise CntkWriteUnsupported(node.spec.name, "an op of several outputs")
    recurrences: dict[int, str] = {}              # id(a Recurrence's output) -> its name
    # (a loaded block written by its rule from its attributes: not a layer)
    from_attributes = {id(n.outputs[0]) for n in nodes if n.spec.name.startswith("cntk:") and
                       n.spec.name[len("cntk:"):] in ATTRIBUTE_BLOCKS}

    def layer_of(v):
        # (CNTK 2.7 writes no block for Recurrence, RecurrenceFrom and Fold: the LSTM / GRU
        # block and delays (and Fold's last step) as they are, then a NoOp with the layer's
        # name if it has one)
        found = block_of(v) if block_of is not None else None
        if found is not None and found[0] in ("Recurrence", "Fold", "RecurrenceFrom"):
            recurrences[id(v)] = found[1]
            return None
        if found is not None and found[0] in _STEP_BLOCKS and v.parent is not None and \
                v.parent.spec.name == "recurrence":
            # (a loaded file's recurrence, shown as the step's LSTM block the file holds inside
            # its loop: the recurrence's rule writes that block, as for a Recurrence(LSTM))
            w.step_blocks[id(v.parent)] = found[0]
            recurrences[id(v)] = found[1]
            return None
        if found is not None and (found[0] in ONE_OP_BLOCKS or (
                v.parent is not None and found[0] == _RULE_BLOCKS.get(v.parent.spec.name)) or
                id(v) in from_attributes):
            return None             # (the rule writes the block CNTK 2.7 builds)
        return found
    blocks, scope = find_blocks(nodes, layer_of)
    w.block_of = layer_of                         # (a cell a step function applies)
    w.shown_blocks = {id(held_output(n)[1]) for n in nodes
                      if block_of is not None and block_of(held_output(n)[1]) is not None}
    names = list(input_names) if input_names is not None else \
        [k.partition("#")[0] for k in inputs]
    for name, v in zip(names, inputs.values()):
        w.leaf(v, "input", name)
    met = [id(v) for v in leaf_order or () if id(v) in w.untyped]
    if untyped_inputs and met != [id(v) for v in inputs.values()] and \
            sorted(met) == sorted(id(v) for v in inputs.values()):
        # (the graph meets the arguments in another order than the signature's: CNTK 2.7's
        # @C.Function puts them through a Tuple block, the order its file's walk meets)
        w.tuple_block(list(inputs.values()))
    produced: dict[int, tuple[str, "Block | None"]] = {}    # id -> (uid, the block it is in)

    def read(i: Variable, here: "Block | None", op: str) -> str:
        i = w.folded.get(id(i), i)
        if here is not None and id(i) in here.argument_ids:
            if id(i) not in here.placeholders:
                here.placeholders[id(i)] = w.placeholder(i)
            return here.placeholders[id(i)]
        if id(i) in produced:
            uid, where = produced[id(i)]
            if where is not here:
                raise CntkWriteUnsupported(op, "a value read across a layer's boundary")
            return uid
        if i.parent is not None:                  # pragma: no cover - topological order
            raise CntkWriteUnsupported(op, "an input computed after it")
        if id(i) in w.uids:
            uid = w.uids[id(i)]
        else:
            uid = w.leaf(i, "parameter" if i.need_grad else "constant", leaf_name_of(i))
        if id(i) in batched and here is not None:
            raise CntkWriteUnsupported(op, "a layer reading an input it is not applied to")
        if here is not None and uid not in here.leaves:
            here.leaves.append(uid)
        return uid

    by_size = sorted(blocks.values(), key=lambda b: len(b.inside))
    sizes = {} if shapes is None else shapes      # (uid -> its sample's shape, if asked)

    def enclosing(b, node):     # (the smallest block other than b that node sits in, or None)
        return next((o for o in by_size if o is not b and key(node) in o.inside), None)

    members = several_outputs(blocks)
    # (RNNStep applied to values: its sum written as CNTK 2.7's, the bias added last)
    sums = {k: n for k, n in bias_last_sums(nodes).items()
            if getattr(scope.get(key(n)), "op_name", "") == "RNNStep" and
            not any(n.inputs[0] is v for v in outputs)}
    biases: dict[int, str] = {}                   # id(such a sum's node) -> its bias's uid
    for node in nodes:
        if id(node) in skipped:
            continue
        # (the op's first output something holds: a loaded LSTM recurrence read for h alone
        # has let its first go, which is written all the same, as the op's output 0)
        first, out = held_output(node)
        here = scope.get(key(node))
        if id(out) in members:      # (a block of several outputs: written once, whole)
            b = members[id(out)]
            ready = all(id(o.parent.inputs[0]) in produced or
                        id(o.parent.inputs[0]) in b.argument_ids for o in b.outputs)
            if ready and id(out) not in produced:
                outer = enclosing(b, node)
                for o, uid in zip(b.outputs, write_block_of_outputs(w, b, read, outer)):
                    produced[id(o)] = (uid, outer)
                    sizes[uid] = tuple(o.shape[w.lead(o):])
            continue
        src = w.fused.get(id(node), node)         # (a crop's deconvolution: written as one)
        ins, attrs = src.spec.split_arguments(src.args, src.kwargs)
        ins = [i for i in ins if i is not None and id(i) not in lengths]
        uids = [read(i, here, src.spec.name) for i in ins]
        rule = _RULES[src.spec.name]
        block = blocks.get(id(out))
        name = "" if block is not None or id(out) in recurrences else name_of(out)
        if block is not None and block.op_name in _ROOT_NAMED_BLOCKS:
            name = block.name
        w.layer_name = block.name if block is not None else ""   # (the layer it makes)
        w.layer = here                            # (the layer it is inside)
        w.loaded = loaded_attributes_of(out) if loaded_attributes_of is not None else None
        if id(node) in sums:                      # (x W alone, its bias added after h H)
            biases[id(sums[id(node)])], ins, uids = uids[2], ins[:2], uids[:2]
        if id(node) in biases:
            made = bias_last_sum(w, uids, biases[id(node)], name)
        else:
            made = rule(w, ins, uids, attrs, out, name)
        w.loaded = None
        uid = uids[0] if made is None else made + "_Output_0"   # (None: nothing written)
        if recurrences.get(id(out)):
            uid = w.function("NoOp", [uid], name=recurrences[id(out)]) + "_Output_0"
        if block is None:
            if first:
                uid = w.output_uid(made, first)
            produced[id(out)] = (uid, here)
            sizes[uid] = tuple(out.shape[w.lead(out):])
            for k, other in enumerate(node.outputs[first + 1:], first + 1):   # (TopK's indices)
                if other is not None:
                    produced[id(other)] = (w.output_uid(made, k), here)
            continue
        if len(node.outputs) > 1:
            raise CntkWriteUnsupported(node.spec.name, "an op of several outputs in a layer")
        outer = enclosing(block, node)
        if "_Output_" not in uid or uid in block.placeholders.values():
            raise CntkWriteUnsupported(block.op_name, "a layer whose output is its input")
        produced[id(out)] = (w.block(block, uid, [read(a, outer, block.op_name)
                                                  for a in block.arguments]), outer)
        sizes[produced[id(out)][0]] = tuple(out.shape[w.lead(out):])
    ends = []
    for k, v in enumerate(outputs):
        v = w.folded.get(id(v), v)                # (top_k's values swapped back: its own)
        if id(v) not in produced or produced[id(v)][1] is not None or \
                "_Output_" not in produced[id(v)][0]:
            raise CntkWriteUnsupported(f"output {k}", "an output that is an input, a "
                                                      "parameter or a value inside a layer")
        ends.append(produced[id(v)][0])
    made = w.whole(ends)
    if len(outputs) == 1 and recurrences.get(id(outputs[0])) == "":
        # (an unnamed Recurrence, RecurrenceFrom or Fold: CNTK 2.7 writes the layer's Combine
        # of its output as the root, not the step's last op; a named one's NoOp is its root)
        made = None
    if combine_name is None and made is not None:
        root = made                 # (one function's outputs, TopK's two: it is the root)
    else:
        root = w.function("Combine", ends, name=combine_name or "")
    if leaf_order is not None:        # (a stable sort: leaves the caller does not list last)
        rank = {w.uids[id(v)]: k for k, v in enumerate(leaf_order) if id(v) in w.uids}
        w.leaves.sort(key=lambda e: rank.get(e["uid"].value, len(rank)))
    # (listed and named as CNTK 2.7's serializer lists and names them)
    w.leaves = in_cntk_order(w.leaves, w.functions, root)
    name_placeholders(w.leaves, w.functions)
    root_name = composite_name if composite_name is not None else \
        next((f["name"].value for f in w.functions if f["uid"].value == root and "name" in f),
             "")
    top = OrderedDict([
        ("version", P.size_t(COMPOSITE_VERSION)), ("type", P.text("CompositeFunction")),
        ("name", P.text(root_name)), ("uid", P.text(f"CompositeFunction{next(w.count)}")),
        ("root", P.text(root)), ("inputs", P.vector(P.dictionary(e) for e in w.leaves)),
        ("primitive_functions", P.vector(P.dictionary(f) for f in w.functions))])
    return P.encode(top)


def save_cntk_v2(path: str | os.PathLike, outputs: Sequence[Variable],
                 inputs: Mapping[str, Variable], **names) -> None:
    """Write ``outputs`` (computed from ``inputs``) as a CNTK v2 model file at ``path``; see
    :func:`cntk_v2_bytes`.  Nothing is written when the graph cannot be."""
    data = cntk_v2_bytes(outputs, inputs, **names)

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(data)
    atomic_write(os.fspath(path), write)
