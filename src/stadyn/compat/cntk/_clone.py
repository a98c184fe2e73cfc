"""Cloning a CNTK graph: its op calls replayed with substitutions, its parameters shared, copied
or frozen (``Function.clone``, calling a Function on other Functions, ``as_block``), CNTK's
names, op names, blocks and the attributes CNTK shows carried over to the copy."""

from __future__ import annotations

import numpy as np

from ..._errors import ShapeError
from ...cntk_semantics import reshape_sample
from ...graph import (Variable, apply, base_axis_kept, format_location, free_batch_input,
                      free_dimensions, has_free_batch, mark_free_dimensions, name_scope,
                      new_lengths, set_sequence_axis, topological_nodes, user_location)
from ...ops import RandomStream
from ...sequence import input_variable as sequence_input_variable
from ._cntk_attributes import CNTK_ATTRIBUTES, CNTK_ROOT_ATTRIBUTES
from ._run_checks import refusal_carried
from ._shown_constants import show_constants, shown_constants
from ._variable_text import layout_text
from ._graph import (BATCH, BLOCKS, CALLS, INNER_OPS, INPUTS, LEAF_NAMES,
                     PLACEHOLDERS, SEQUENCE_AXES,
                     SHAPELESS, SPARSE, Block, carry_loaded_graph, combined_inside, kind_of,
                     link_outputs,
                     made_by_cntk_op,
                     operand_order, outputs_of, primitive_op_name, seen_through, set_op_name,
                     set_uid, show_combined, show_operands_in_order, uid_of)

__all__ = ["rebuild", "CloneShapeError"]


class CloneShapeError(RuntimeError, ShapeError):
    """An op of a clone refusing the shapes its substitutes give it: CNTK 2.7's RuntimeError,
    raised by ``clone`` itself as it validates the copy (a ValueError too, as Stadyn's other
    shape errors)."""


# CNTK 2.7's binary element-wise ops (BinaryElementwiseOpOutputShape's words)
_ELEMENTWISE = {"Plus", "Minus", "ElementTimes", "ElementDivide", "ElementMax", "ElementMin",
                "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "Pow",
                "LogPlus", "Atan2"}


# the binary ops CNTK 2.7 builds of others over placeholders for their operands
# (Function.cpp:1606-1631): their constants keep their type in a clone (the placeholders
# stand between them and the op that compares the types, named here), so a float32 constant
# over a float64 substitute is refused, not widened (ops.refuse_typed_operands: called
# directly)
_UNWIDENED = {"ElementMax": "Greater", "ElementMin": "Less", "ElementDivide": "ElementTimes"}


def _dims(v: Variable) -> str:
    """``v``'s sample shape (without the batch axis and a sequence's axis) as CNTK writes it
    (``[3 x 2]``: axes in reverse)."""
    lead = 0 if not BATCH(v) else 2 if v.sequence_lengths is not None else 1
    return layout_text(tuple(v.shape)[lead:])


def _refused(op: str, inputs: list, error: ShapeError) -> ShapeError:
    """``error`` of a replayed op ``op`` (CNTK's name) over ``inputs`` as CNTK 2.7's clone
    raises it: for a binary element-wise op its RuntimeError in its words less the operands'
    descriptions (Function.cpp's ``BinaryElementwiseOpOutputShape``: ``Left operand
    'Input('x', [#], [3])' shape '[3]'``; Stadyn's leaves are no placeholders of CNTK's
    numbering); for ``Times`` its plain ValueError in its words (``TimesOutputShape``: the
    right operand, the weight, by its leading dimensions); Stadyn's words otherwise; at the
    user's line."""
    line = format_location(user_location())
    where = f" (clone at {line})" if line else " (clone)"
    if op in _ELEMENTWISE and len(inputs) == 2:
        return CloneShapeError(
            f"Binary elementwise operation {op}: Left operand shape '{_dims(inputs[0])}' is "
            f"not compatible with right operand shape '{_dims(inputs[1])}'.{where}")
    if op == "Times" and len(inputs) == 2:
        left = _dims(inputs[0])         # (the operand's sample axes: its trailing ones)
        rank = left.count(" x ") + 1 if left != "[]" else 0
        weight = tuple(inputs[1].shape)[:rank]
        right = layout_text(weight)
        return ShapeError(f"Times: The {rank} leading dimensions of the right operand with "
                          f"shape '{right}' do not match the left operand's trailing "
                          f"dimensions with shape '{left}'{where}")
    return CloneShapeError(f"{op}: {error}{where}")


def _copy_leaf(v: Variable, method: str) -> Variable:
    """A parameter or constant for a clone: ``share`` keeps it, ``clone`` copies it,
    ``freeze`` makes a constant of its value; a constant the user made (``C.constant``, a
    layer's) is copied by both, as CNTK 2.7 deep-copies it (Function.cpp:755-779: "constants
    can also be updated via non-sgd means"), so setting the original's ``value`` afterwards
    leaves the clone's (a BatchNormalization's running statistics too: training the clone
    moves its own).  A copy gets a path of its own in the registry's name space
    (``dense_1/W`` for ``dense/W``) and the same CNTK name.  Unnamed leaves (sequence
    lengths) are kept."""
    if method == "share" or (not v.need_grad and v not in LEAF_NAMES and not v.name):
        return v
    from ...parametric import current_registry
    from ._parameters import cntk_parameters
    new = Variable.from_numpy_array(v.d.copy(), need_grad=method == "clone" and v.need_grad,
                                    dtype=v.dtype)
    scope, _, last = (v.name or "parameter").rpartition("/")
    with cntk_parameters():
        claimed = current_registry().claim(scope or last)
    new.name = f"{claimed}/{last}" if scope else claimed
    if v in LEAF_NAMES:
        LEAF_NAMES[new] = LEAF_NAMES[v]
    elif not scope:
        LEAF_NAMES[new] = last
    return new


def _copy_input(v: Variable) -> Variable:
    """A new input (or placeholder) like ``v`` (a sequence input: on a sequence axis too),
    not fed: where ``v``'s batch axis (and free dimensions) are sized by the data fed, the
    copy's are too, their lengths stand-ins (1) until fed -- not the lengths an earlier run
    fed ``v`` (CNTK 2.7's inputs hold nothing between runs: ``splice(z, y)`` cloned onto a new
    ``w`` after ``y`` was fed a batch of 2 is of (1, 6) on one sample each)."""
    free = free_dimensions(v)
    if v.sequence_lengths is not None and v in INPUTS:
        new = sequence_input_variable(tuple(v.shape[2:]), dtype=v.dtype, need_grad=v.need_grad)
        if v.sequence_lengths in SEQUENCE_AXES:     # (on a named axis: C.Axis('words'))
            SEQUENCE_AXES[new.sequence_lengths] = SEQUENCE_AXES[v.sequence_lengths]
    else:
        lead = (2 if v.sequence_lengths is not None else 1) if has_free_batch(v) else 0
        shape = (1,) * lead + tuple(v.shape[lead:])
        new = Variable(shape, need_grad=v.need_grad, dtype=v.dtype)
        if lead:
            free_batch_input(new)
        if v.sequence_lengths is not None:
            set_sequence_axis(new, new_lengths())
    if free:
        new.reset_shape(tuple(1 if k in free else d for k, d in enumerate(new.shape)))
        mark_free_dimensions(new, sorted(free))
        if has_free_batch(new):     # (its new stand-in buffer is the one not fed yet)
            free_batch_input(new)
    if v in INPUTS:
        INPUTS[new] = INPUTS[v]
        if v in SPARSE:
            SPARSE.add(new)
    else:
        PLACEHOLDERS[new] = PLACEHOLDERS[v]
        if v in SHAPELESS:
            SHAPELESS.add(new)
    if BATCH(v):
        BATCH.add(new)
    return new


def rebuild(roots: list[Variable], substitutions: dict, method: str = "share",
            clone_inputs: bool = False, own_streams: bool = False,
            blocks: "dict | None" = None, user_clones: bool = False) -> list[Variable]:
    """The graph computing ``roots`` made again with each op call replayed: Variables in
    ``substitutions`` (``{old: new}``) replaced, parameters shared, cloned or frozen
    (``method``), inputs kept or (``clone_inputs``) cloned, names, op names and blocks carried
    over, values the sequence-begin flags spliced in (:func:`~._graph.mark_spliced`) left out;
    with ``own_streams`` each random op made again with a stream of its own, from where its
    stream stood when last saved (``RandomStream.restarted``: CNTK 2.7's clone).  ``blocks``
    (``{id(old value): Block}``): blocks to carry over besides those :data:`BLOCKS` records.
    With ``user_clones`` each user function is made again by its own ``clone(cloned_inputs)``
    (:func:`_user_function_cloned`: CNTK 2.7's clone), its inputs changed or not.
    Returns the new roots."""
    mapping: dict[int, Variable] = {id(old): new for old, new in substitutions.items()}
    for old, new in substitutions.items():
        # ops that read a substituted sequence input's lengths (a recurrence loaded from a
        # file takes them as an input) read the substitute's
        lengths = old.sequence_lengths
        if (old.parent is None and lengths is not None and lengths.parent is None
                and new.sequence_lengths is not None):
            mapping.setdefault(id(lengths), new.sequence_lengths)
    keep = [old for old in substitutions]   # ids stay valid while the map is used
    widened: dict = {}          # {(id of a constant, dtype): (its wider copy, the constant)}
    substituted = {id(old) for old in substitutions}

    def new_of(v: Variable) -> Variable:
        original = seen_through(v)
        if original is not v:       # a sequence-begin splice: the copy reads what it stood for
            return new_of(original)
        mapped = mapping.get(id(v))
        if mapped is None:
            if v.parent is not None:
                mapped = v
            elif v in INPUTS or v in PLACEHOLDERS:
                mapped = _copy_input(v) if clone_inputs else v
                if mapped is not v and v.sequence_lengths is not None:
                    # ops reading the input's lengths read the copy's
                    mapping[id(v.sequence_lengths)] = mapped.sequence_lengths
            else:
                mapped = _copy_leaf(v, method)
            mapping[id(v)] = mapped
        return mapped

    if clone_inputs:        # inputs first: their copies' lengths stand for theirs
        for node in topological_nodes(roots):
            for i in node.inputs:
                if i.parent is None and (i in INPUTS or i in PLACEHOLDERS):
                    new_of(i)
    nodes = list(topological_nodes(roots))
    inside, calls = _inside_calls(nodes)
    for at, node in enumerate(nodes):
        outputs = node.outputs
        if all(o is not None and id(o) in mapping for o in outputs):
            continue   # a substituted output: nothing upstream of it is needed
        if id(node) in calls:
            _called_again(outputs[0], CALLS[outputs[0]], new_of, mapping, calls[id(node)],
                          widened)
            continue
        if id(node) in inside:
            continue   # (made again by the call it is part of)
        inputs = [new_of(i) for i in node.inputs]
        streams = own_streams and any(isinstance(a, RandomStream)
                                      for a in list(node.args) + list(node.kwargs.values()))
        user = _user_function_cloned(node, inputs) if user_clones else None
        if not streams and user is None and all(a is b for a, b in zip(inputs, node.inputs)):
            for o in outputs:
                if o is not None:
                    mapping.setdefault(id(o), o)
            continue
        first = next((o for o in outputs if o is not None), None)
        if first is None or primitive_op_name(first) not in _UNWIDENED:
            inputs = _constants_widened(inputs, widened)
        _same_dtype(nodes, at, inputs)
        swap = {id(a): b for a, b in zip(node.inputs, inputs)}
        args = tuple(_copied(a, swap, streams) for a in node.args)
        kwargs = {k: _copied(a, swap, streams) for k, a in node.kwargs.items()}
        if inputs:      # (CNTK validates the node again: times maps new leading axes)
            args, kwargs = base_axis_kept(node, args, kwargs, inputs[0].shape)
        if node.spec.name == "recurrence":
            args = tuple(_as_recorded_steps(new, old) for new, old in zip(args, node.args))
        try:
            with name_scope(node.scope, absolute=True):
                # (a user function's clone built its op over ``inputs`` as it was made)
                made = tuple(user.outputs) if user is not None else apply(node.spec, args,
                                                                          kwargs)
        except ShapeError as error:
            if isinstance(error, RuntimeError):
                raise
            first = next((o for o in outputs if o is not None), None)
            op = primitive_op_name(first) if first is not None else node.spec.name
            raise _refused(op, inputs, error) from error
        made = made if isinstance(made, tuple) else (made,)
        for old, new in zip(outputs, made):
            if old is None:
                continue
            new.name = old.name
            if made_by_cntk_op(old):
                set_op_name(new, primitive_op_name(old))
            carry_loaded_graph(old, new)
            if BATCH.unmarked(old):     # (one number for the minibatch: a v1 criterion, ...)
                BATCH.unmark(new)
            mapping[id(old)] = new
    for node in topological_nodes(roots):
        for old in node.outputs:
            if old is not None and id(old) in substituted:
                continue        # (a substitute is what it is: not labelled as what it replaces)
            block = BLOCKS.get(old) if old is not None else None
            if block is None and blocks and old is not None:
                block = blocks.get(id(old))
            new = mapping.get(id(old)) if old is not None else None
            if block is not None and new is not None and new is not old and \
                    _arguments_carried(block, mapping):
                BLOCKS[new] = Block(block.op_name, block.name,
                                    tuple(new_of(a) for a in block.arguments), block.attributes,
                                    block.options)
                inside = combined_inside(old)
                if inside is not None and all(id(v) in mapping for v in inside):
                    show_combined(new, [mapping[id(v)] for v in inside])
            if new is not None and new is not old:
                _outputs_carried(old, new, mapping)
                _attributes_carried(old, new)
                _constants_carried(old, new)
                # (CNTK 2.7's copy refused at run as it is, or as its operands' copies are)
                refusal_carried(old, new, lambda v: mapping.get(id(v), v))
    del keep
    return [new_of(r) if r.parent is None or r in PLACEHOLDERS else mapping.get(id(r), r)
            for r in roots]


def _inside_calls(nodes: list) -> tuple[set, dict]:
    """The ids of the nodes (of ``nodes``) that a recorded CNTK op call (:data:`CALLS`:
    ``splice``) made on the way from its operands to its output, which a clone makes again by
    calling the op (:func:`_called_again`); and ``{id(call's node): those nodes}``."""
    inside: set = set()
    calls: dict = {}
    for node in nodes:
        outs = node.outputs
        if len(outs) != 1 or outs[0] is None or outs[0] not in CALLS:
            continue
        stops = {id(v) for v in CALLS[outs[0]][1] if isinstance(v, Variable)}
        mine, stack, seen = [], list(node.inputs), set()
        while stack:
            v = stack.pop()
            if id(v) in seen or id(v) in stops or v.parent is None:
                continue
            seen.add(id(v))
            mine.append(v.parent)
            stack.extend(v.parent.inputs)
        inside.update(id(n) for n in mine)
        calls[id(node)] = mine
    return inside, calls


def _called_again(old: Variable, call: tuple, new_of, mapping: dict, inner: "list | None",
                  widened: dict) -> None:
    """The copy of ``old``, made by the CNTK op call ``call`` (``(op, operands, keywords)``),
    put in ``mapping``: the op called again over its operands' copies where one differs, as
    CNTK 2.7 validates a clone's op again over its substitutes' shapes and types
    (``splice(x, c3)`` with ``c3`` swapped for an input of 5 is of 3 + 5); ``old`` itself
    (and the values it was made of) where none does."""
    op, operands, keywords = call
    copies = [new_of(v) if isinstance(v, Variable) else v for v in operands]
    if all(a is b for a, b in zip(copies, operands)):
        mapping.setdefault(id(old), old)
        for node in inner or ():
            for o in node.outputs:
                if o is not None:
                    mapping.setdefault(id(o), o)
        return
    _same_type(old, [v for v in copies if isinstance(v, Variable)], widened)
    try:
        with name_scope(old.parent.scope, absolute=True):
            made = op(*copies, **keywords)
    except ShapeError as error:     # (as a replayed op's: CNTK's words, at the clone)
        if isinstance(error, RuntimeError):
            raise
        raise _refused(primitive_op_name(old), copies, error) from error
    new = made.variable if hasattr(made, "variable") else made
    new.name = old.name
    if BATCH.unmarked(old):
        BATCH.unmark(new)
    mapping[id(old)] = new


_DTYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Float16"}


def _same_type(old: Variable, copies: list, widened: dict) -> None:
    """Refuse the recorded call making ``old`` again over the Variables ``copies`` where,
    its narrower constants widened (:func:`_constants_widened`), they are of two types: a
    float64 constant swapped in among float32 operands (CNTK 2.7 cannot narrow a constant);
    its ValueError, naming the CNTK op."""
    have = [str(v.dtype) for v in _constants_widened(copies, widened)]
    if len(set(have)) < 2:
        return
    kept = str(old.dtype)
    raise _types_refused(primitive_op_name(old), kept,
                         next((d for d in have if d != kept), have[-1]))


def _types_refused(op: str, kept: str, other: str) -> ValueError:
    """CNTK 2.7's ValueError for the CNTK op ``op`` of a clone whose operands are of the
    dtypes ``kept`` (the graph's) and ``other`` (a substitute's), at the user's line."""
    line = format_location(user_location())
    where = f" (clone at {line})" if line else " (clone)"
    return ValueError(f"Primitive op '{op}' passed operands with different DataTypes "
                      f"'{_DTYPE_NAMES.get(kept, kept)}' and "
                      f"'{_DTYPE_NAMES.get(other, other)}'.{where}")


def _constants_widened(inputs: list, widened: dict) -> list:
    """``inputs`` with each constant operand (a leaf constant: ``C.constant``, the ``1`` of
    ``x + 1``) of a float type narrower than the widest of the other operands replaced by a
    copy of that type: CNTK 2.7 checks the dtypes of non-constant operands only and converts
    Float constants to Double as it validates a clone over a float64 substitute
    (PrimitiveFunction.cpp:36-60, CompositeFunction.cpp:1236-1252, Variable.cpp:564), so
    ``(x + 1).clone(share, {x: input_variable(3, dtype=np.float64)})`` is float64.  A constant
    reached through another op (``x + c * 2``) is no operand of this one: still refused, as
    in CNTK; so is a wider constant among narrower operands (CNTK cannot narrow one)."""
    def constant(v) -> bool:
        return v.parent is None and kind_of(v) == "constant"
    others = [np.dtype(str(v.dtype)) for v in inputs if not constant(v)]
    others = [d for d in others if d.kind == "f"]
    if not others:
        return inputs
    wide = max(others, key=lambda d: d.itemsize)
    out = []
    for v in inputs:
        have = np.dtype(str(v.dtype))
        if not constant(v) or have.kind != "f" or have.itemsize >= wide.itemsize:
            out.append(v)
            continue
        key = (id(v), wide.name)
        if key not in widened:
            copy = Variable.from_numpy_array(np.asarray(v.d).astype(wide), need_grad=False,
                                              dtype=wide)
            copy.name = v.name
            if v in LEAF_NAMES:
                LEAF_NAMES[copy] = LEAF_NAMES[v]
            widened[key] = (copy, v)
        out.append(widened[key][0])
    return out


def _same_dtype(nodes: list, at: int, inputs: list) -> None:
    """Refuse ``nodes[at]`` replayed over ``inputs`` where its operands, of one dtype in the
    graph cloned, are of two now (a float32 constant swapped for ``C.constant(np.ones(4))``'s
    float64): CNTK 2.7's ValueError, raised by ``clone`` as it validates the copy, naming the
    CNTK op (the first downstream where the node is one of the Stadyn ops a CNTK op is made
    of) and the dtypes, the graph's before the substitute's."""
    node = nodes[at]
    old = {str(i.dtype) for i in node.inputs}
    new = [str(i.dtype) for i in inputs]
    if len(old) != 1 or len(set(new)) == 1:
        return
    kept = old.pop()
    other = next(d for d in new if d != kept)
    reached = {id(o) for o in node.outputs if o is not None}
    op = node.spec.name
    for later in nodes[at:]:
        if later is not node and not any(id(i) in reached for i in later.inputs):
            continue
        first = next((o for o in later.outputs if o is not None), None)
        reached.update(id(o) for o in later.outputs if o is not None)
        if first is not None and made_by_cntk_op(first):
            op = primitive_op_name(first)
            op = _UNWIDENED.get(op, op)
            break
    raise _types_refused(op, kept, other)


def _arguments_carried(block: Block, mapping: dict) -> bool:
    """Whether the copy of ``block`` has its arguments in the clone: each a leaf or a value
    of the graph cloned.  (A recurrent cell applied to placeholders bound to its own delayed
    outputs reads them inside the loop a first run closed, which is no part of the graph
    cloned: its copy is no block, rather than one over the original's values.)"""
    return all(not isinstance(a, Variable) or a.parent is None or id(a) in mapping
               or a in PLACEHOLDERS for a in block.arguments)


def _user_function_cloned(node, inputs: list):
    """The user function ``node`` computes (its ``function`` argument: ``ops.functions``'s
    ``_Call``) made again on ``inputs`` by the user's ``clone(cloned_inputs)``, as CNTK 2.7's
    clone makes every user function of the graph (``PrimitiveFunction.h``'s ``Clone`` calls
    the Python ``clone`` through its SWIG director): the new call, its ``outputs`` built;
    ``None`` for any other node."""
    again = getattr(node.kwargs.get("function"), "cloned", None)
    return again(inputs) if again is not None else None


def _copied(a, swap: dict, streams: bool):
    """An op's argument for its copy: a Variable swapped, a random stream restarted where the
    copy's streams are its own."""
    if isinstance(a, Variable):
        return swap.get(id(a), a)
    if streams and isinstance(a, RandomStream):
        return a.restarted()
    return a


def _outputs_carried(old: Variable, new: Variable, mapping: dict) -> None:
    """What makes ``old`` part of one CNTK function, given to its copy ``new``: an op the
    walks pass through stays one (its operands in the order shown), and the copies of the
    outputs of one function of several (``top_k``'s values and indices) are the outputs of
    one function again (one uid)."""
    if old in INNER_OPS:
        INNER_OPS.add(new)
    order = operand_order(old)
    if order:                  # (roipooling's feature map before its regions, as CNTK lists them)
        show_operands_in_order(new, tuple(mapping.get(id(o), o) for o in order))
    outs = outputs_of(old)
    if len(outs) > 1 and outs[0] is old:
        copies = [mapping.get(id(o)) for o in outs]
        if all(c is not None for c in copies):
            link_outputs(copies)
            for c in copies[1:]:
                set_uid(c, uid_of(copies[0]))


def _attributes_carried(old: Variable, new: Variable) -> None:
    """The attributes CNTK shows for ``old``'s function (and its block's root), given to its
    copy: a clone keeps them, as CNTK 2.7's does (a loaded file's ``Slice`` keeps
    ``axis``/``beginIndex``/..., not the Stadyn op's ``start``/``stop``)."""
    for shown in (CNTK_ATTRIBUTES, CNTK_ROOT_ATTRIBUTES):
        if old in shown and new not in shown:
            shown[new] = dict(shown[old])


def _constants_carried(old: Variable, new: Variable) -> None:
    """The constants CNTK shows among the inputs of ``old``'s function where Stadyn's op needs
    none (:func:`~._shown_constants.show_constants`: LayerNormalization's epsilon,
    classification_error's 1, sequence.first's 0 and 1), shown for its copy too: CNTK 2.7's
    clone copies the function with them (a constant is kept by every clone method)."""
    for last in (False, True):
        shown = shown_constants(old, last)
        if shown and not shown_constants(new, last):
            show_constants(new, shown, last)


def _as_recorded_steps(new, old):
    """A recurrence's sequence input ``new`` for a step recorded on steps of ``old``'s shape
    that only adds leading axes of 1 (a decoder saved for a history of ``(1, 1, 69)`` given
    labels of ``(69,)``): reshaped to it, as CNTK's ops broadcast the leading axes of 1 (its
    splice with the attention's ``(1, 1, H)`` gives ``(1, 1, E + H)`` either way)."""
    if not isinstance(new, Variable) or not isinstance(old, Variable) or new is old or \
            new.sequence_lengths is None or old.sequence_lengths is None:
        return new
    have, want = tuple(new.shape[2:]), tuple(old.shape[2:])
    extra = len(want) - len(have)
    if extra <= 0 or want[extra:] != have or any(d != 1 for d in want[:extra]):
        return new
    return reshape_sample(new, want, batched=True, sequence=True)
