"""The nodes CNTK 2.7's graph holds where Stadyn computes one op, and the inputs CNTK shows
for the op that made a value (:func:`shown_inputs`), which ``_graph``'s depth-first search
walks: a ``Dense`` block's ``Times`` and a ``Convolution`` block's ``Convolution`` inside
their ``Plus`` with the bias, an ``RNNStep``'s ``Plus`` of its two products, a recurrence's
step output (the step's graph over ``PastValue`` views, for a step ``_recurrent`` writes
out).  Each is a node of Stadyn's graph that no run computes and that holds no value
(``graph.shown_only``), made when a walk first asks and kept on the value it shows
(:func:`shown_node`).  Above ``_graph_shown`` (names, op names, uids); re-exported by
``_graph``.

Example:
    >>> import stadyn.compat.cntk as C
    >>> z = C.layers.Dense(2)(C.input_variable(3, name="x"))
    >>> [op_name_of(i) or name_of(i) for i in shown_inputs(z.variable)]
    ['Times', 'b']
"""

from __future__ import annotations

from typing import Iterator

from ... import functions as F
from ...graph import Variable, auto_forward, is_lengths, keep_with, kept_with, shown_only
from ...ops import recurrence_states
from ._graph_blocks import combined_inside
from ._graph_records import INNER_OPS, PLACEHOLDERS
from ._graph_shown import (_in_operand_order, _layer_op, made_by_cntk_op, op_name_of,
                           primitive_op_name, set_op_name, show_operands_in_order)
from ._graph_shown import name_of  # noqa: F401  (the examples read names with it)
from ._shown_constants import shown_as, shown_constants
from ._spliced import seen_through

__all__ = ["shown_node", "shown_product", "show_bias_last", "hide_padding", "walk_between",
           "show_transposed",
           "STEP_BLOCKS",
           "note_step_op", "note_step_view", "has_step_view", "past_value_view",
           "read_by_past_value",
           "shown_step_output", "shown_inputs", "mark_view", "is_view", "step_output_of",
           "step_op_of", "note_unfold"]


_PRODUCT = "compat.cntk: the Times CNTK shows inside a layer's affine map"
_CONVOLVED = "compat.cntk: the Convolution CNTK shows inside a layer's convolution"
def shown_product(v: Variable) -> Variable:
    """The ``Times`` output CNTK 2.7's graph holds inside the affine map with a bias that made
    ``v`` (a ``Dense`` block's ``Plus(Times(x, W), b)``): a node of Stadyn's graph over the same
    ``x`` and ``W`` that no run computes (nothing reads it), made the first time a walk asks
    and kept on ``v``, so it is the same Variable (and uid) in every walk.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.Dense(2)(C.input_variable(3))
        >>> times = shown_product(z.variable)
        >>> op_name_of(times), [name_of(i) for i in shown_inputs(times)], times.shape[1:]
        ('Times', ['', 'W'], (2,))
    """
    node = v.parent
    return shown_node(v, _PRODUCT, lambda: F.affine(*node.inputs[:2], None,
                                                   base_axis=node.attrs["base_axis"]), "Times")


def _shown_convolution(v: Variable) -> Variable:
    """The ``Convolution`` output CNTK 2.7's graph holds inside a ``Convolution`` block with a
    bias (``Plus(Convolution(W, x), b)``), as :func:`shown_product` the ``Times`` of a Dense:
    Stadyn's convolution over the same ``x`` and ``W`` without the bias, listing ``W`` first
    as CNTK's op does."""
    node = v.parent
    x, w = node.inputs[:2]

    def make():
        out = F.convolution(x, w, None, **node.kwargs)
        show_operands_in_order(out, (w, x))
        return out
    return shown_node(v, _CONVOLVED, make, "Convolution")


def _shown_bias(b: Variable) -> Variable:
    """The bias a layer's product adds as CNTK 2.7 shows it: its parameter (Stadyn's
    convolution reads it reshaped to one value per channel)."""
    while b.parent is not None and b.parent.spec.name == "reshape" and not made_by_cntk_op(b):
        b = b.parent.inputs[0]
    return b


def hide_padding(out: Variable, operands) -> None:
    """The ``Pad`` ops between ``operands`` and ``out`` (what a convolution or a pooling made
    of them) walked through, as CNTK 2.7's graph holds none: Stadyn pads before the op where
    CNTK's ``Convolution`` and ``Pooling`` pad inside (an even kernel's centred
    auto-padding).  A ``Pad`` among the operands (the user's own) stays.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> c = C.layers.Convolution((2, 2), 3, pad=True)(C.input_variable((1, 5, 5)))
        >>> pads = [n for n in C.logging.graph.depth_first_search(c, lambda n: True, depth=-1)
        ...         if getattr(n, "op_name", "") == "Pad"]
        >>> pads
        []
    """
    stop = {id(o) for o in operands if isinstance(o, Variable)}
    for v in walk_between([out], stop):
        if v.parent.spec.name == "pad" and v is not out:
            INNER_OPS.add(v)


def walk_between(outputs: list, stop: set) -> Iterator[Variable]:
    """The values the ops between ``outputs`` (Variables) and the values whose ids are in
    ``stop`` make, ``outputs`` included, each once, depth first, down to the leaves (which it
    does not give); lazily, so a caller may stop at the first it wants.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((2,))
        >>> h = F.relu(x)
        >>> [v.parent.name for v in walk_between([F.tanh(h)], set())]
        ['tanh', 'relu']
        >>> [v.parent.name for v in walk_between([F.tanh(h)], {id(h)})]
        ['tanh']
    """
    stack, seen = list(outputs), set()
    while stack:
        v = stack.pop()
        if id(v) in seen or id(v) in stop or v.parent is None:
            continue
        seen.add(id(v))
        yield v
        stack.extend(v.parent.inputs)


_TRANSPOSED = "compat.cntk: a transposed convolution CNTK shows as Convolution(W, x) (+ b)"
_TRANSPOSED_PRODUCT = "compat.cntk: the Convolution CNTK shows inside a ConvolutionTranspose"


def show_transposed(out: Variable) -> None:
    """Show ``out``, the output of Stadyn's transposed convolution inside a
    ``ConvolutionTranspose`` layer (its deconvolution, the bias added in it, the slice of its
    padding: inner values already, ``_adapt.one_op``), as CNTK 2.7's graph holds it: a
    ``Convolution(W, x)`` (CNTK builds the transpose as its ``Convolution`` op), in a
    ``Plus`` with the bias where there is one.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.ConvolutionTranspose((2, 2), 3)(C.input_variable((1, 4, 4)))
        >>> walk = C.logging.graph.depth_first_search(z, lambda n: True, depth=-1)
        >>> [getattr(n, "op_name", n.name) for n in walk]
        ['ConvolutionTranspose', '', 'Plus', 'Convolution', 'W', 'b']
    """
    keep_with(out, _TRANSPOSED, True)
    set_op_name(out, "Plus" if _transposed_reads(out)[2] is not None else "Convolution")


def _transposed_reads(out: Variable) -> tuple:
    """``(x, W, bias or None)`` of Stadyn's deconvolution that made ``out`` (under the
    slice of its padding)."""
    v = out
    while v.parent.spec.name != "deconvolution":
        v = v.parent.inputs[0]
    inputs = v.parent.inputs
    return inputs[0], inputs[1], (_shown_bias(inputs[2]) if len(inputs) > 2 else None)


def _seen(v: Variable) -> list:
    """What CNTK 2.7 shows for ``v`` read by an op: what an inner value reads, else ``v``."""
    return shown_inputs(v) if v in INNER_OPS and v.parent is not None else \
        [shown_as(seen_through(v))]


def _transposed_inputs(v: Variable) -> "list | None":
    """The inputs CNTK 2.7 shows for ``v`` where it is (a view in) a transposed convolution
    :func:`show_transposed` marked; None for another value."""
    if kept_with(v, _TRANSPOSED) is None:
        return None
    if v.parent.spec.name == "identity" and kept_with(v.parent.inputs[0], _TRANSPOSED_PRODUCT) \
            is v:                         # (the Convolution view inside the Plus)
        x, w, _ = _transposed_reads(v.parent.inputs[0])
        return _seen(w) + _seen(x)
    x, w, b = _transposed_reads(v)
    if b is None:
        return _seen(w) + _seen(x)

    def make():
        product = F.identity(v)
        keep_with(product, _TRANSPOSED, True)
        return product
    return [shown_node(v, _TRANSPOSED_PRODUCT, make, "Convolution"), b]


def shown_node(v: Variable, key: str, make, op_name: str) -> Variable:
    """The output of a node CNTK 2.7's graph holds where Stadyn's holds none (a ``Dense``
    block's ``Times``: :func:`shown_product`), kept on ``v`` under ``key``: made by
    ``make()`` (Stadyn ops over Stadyn's values) the first time a walk asks, so it is the same
    Variable (and uid) in every walk, and shown as the CNTK op ``op_name``.  No run computes
    it (nothing reads it), and it holds no value: a value it reads is the program's no more
    than before (``graph.shown_only``), so a clearing backward frees it as it did.

    Example:
        >>> import stadyn.compat.cntk as C, stadyn.functions as F
        >>> x = C.input_variable(2).variable
        >>> y = shown_node(x, "doubled", lambda: x * 2.0, "Plus")
        >>> op_name_of(y), y is shown_node(x, "doubled", None, "Plus")
        ('Plus', True)
    """
    shown = kept_with(v, key)
    if shown is None:
        with auto_forward(False):       # (a node to show, never a value to compute)
            shown = make()
        set_op_name(shown, op_name)
        shown_only(shown.parent)
        keep_with(v, key, shown)
    return shown


_BIAS_LAST = "compat.cntk: a sum CNTK shows with its bias added last"
_SUMMED = "compat.cntk: the Plus of a sum's two products, without the bias"


def show_bias_last(v: Variable) -> None:
    """Show the sum ``v`` of ``x W + b`` (an affine map with a bias) and ``h H`` as CNTK 2.7's
    ``RNNStep`` computes it, ``Plus(Plus(Times(x, W), Times(h, H)), b)``: its inputs are then
    a ``Plus`` of the two products, a view node no run reads (:func:`shown_node`), and the
    bias.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.RNNStep(3)(C.input_variable(3), C.input_variable(2))
        >>> summed = z.variable.parent.inputs[0]
        >>> [primitive_op_name(i) for i in shown_inputs(summed)]
        ['Plus', '']
    """
    keep_with(v, _BIAS_LAST, True)


def _bias_last_inputs(v: Variable) -> list:
    product, recurrent = v.parent.inputs        # (x W + b, h H)
    return [shown_node(v, _SUMMED, lambda: F.add2(shown_product(product), recurrent), "Plus"),
            product.parent.inputs[2]]


_STEP_OUTPUT = "compat.cntk: the step's output CNTK shows as the recurrence root's input"
_STEP_OP = "compat.cntk: the CNTK op of the recurrence's step"
_UNFOLD = "compat.cntk: an UnfoldFrom's recurrence"
#: The recurrent steps of ``stadyn.layers`` (by their layer kind) -> CNTK 2.7's block of one.
STEP_BLOCKS = {"lstm": "LSTM", "gru": "GRU", "rnnstep": "RNNStep"}
# the ops that run a step along a whole sequence at once -> the step's kind
_FUSED_STEPS = {"cntk_lstm_sequence": "lstm", "cntk_gru_sequence": "gru",
                "cntk_rnn_sequence": "rnnstep"}


def note_step_op(out: Variable, op_name: str) -> None:
    """Record the CNTK op (``GRU``: the block of a layer given as the step) whose output the
    root of the recurrence ``out`` shows (:func:`shown_step_output`)."""
    keep_with(out, _STEP_OP, op_name)


def note_unfold(out: Variable) -> None:
    """Record that the recurrence ``out`` is ``UnfoldFrom``'s (its step reads its state alone,
    the sequence giving the steps' axis), which the CNTK writers write as CNTK 2.7 builds it
    (:func:`step_op_of`: ``"UnfoldFrom"``)."""
    keep_with(out, _UNFOLD, True)


def step_op_of(out: Variable) -> str:
    """The CNTK op of the step of the ``Recurrence`` whose output is ``out`` (``RNNStep``, or
    the op making a step function's output; ``"UnfoldFrom"``: :func:`note_unfold`), for the
    CNTK writers; '' for another value."""
    if out.parent is None or out.parent.spec.name != "recurrence":
        return ""
    return "UnfoldFrom" if kept_with(out, _UNFOLD) else _step_op(out, False)


def _step_op(out: Variable, fold: bool) -> str:
    """The CNTK op of the step of the recurrence whose output is ``out``: a ``Fold``'s
    ``Sequence::Slice``, the step layer's block (:func:`note_step_op`), a fused cell's, or the
    op that makes the step's output (``Plus``)."""
    if fold:
        return "Sequence::Slice"
    noted = kept_with(out, _STEP_OP)
    if noted is not None:
        return noted
    v = out
    while v.parent is not None and v.parent.spec.name == "identity":
        v = v.parent.inputs[0]
    if v.parent is None:
        return ""
    name = v.parent.spec.name
    if name == "recurrence":
        return op_name_of(v.parent.kwargs["step"].outputs[0])
    return STEP_BLOCKS[_FUSED_STEPS[name]] if name in _FUSED_STEPS else primitive_op_name(v)


_STEP_VIEW = "compat.cntk: what makes the view of the step of the fused recurrence"
_PAST = "compat.cntk: the step's output a PastValue view reads"
_PAST_STATE = "compat.cntk: the recurrence and the state a PastValue view delays"


def note_step_view(out: Variable, make) -> None:
    """Record ``make`` as what builds the graph CNTK 2.7 holds for the step of the recurrence
    ``out`` that Stadyn runs as one op (``cntk_gru_sequence``, ``recurrence``): ``make(out)``
    gives the step's
    block output (a view over :func:`past_value_view` values, the sequences and the
    parameters), which :func:`shown_step_output` shows and the walks enter, or None where it
    cannot (the recurrence is then walked as one node).  ``make`` must hold none of the
    graph's values (it is kept on ``out``)."""
    keep_with(out, _STEP_VIEW, make)


def has_step_view(out: Variable) -> bool:
    """Whether the recurrence ``out`` shows its step's graph (:func:`note_step_view`): made
    the first time it is asked for; a view its maker cannot build (it gives None) is
    forgotten, and the recurrence walked as one node."""
    return _step_view_output(out) is not None


_BUILDING: set = set()     # (the ids of the recurrences whose views are being built)


def _step_view_output(out: Variable) -> "Variable | None":
    make = kept_with(out, _STEP_VIEW)
    if make is None:
        return None
    made = kept_with(out, _STEP_OUTPUT)
    if made is None:
        if _fed_since_shaped(out) or id(out) in _BUILDING:
            # (walked as one node until the run gives it its shape; and while its view is
            # built, by the walks that building makes)
            return None
        _BUILDING.add(id(out))
        try:
            made = make(out)
        finally:
            _BUILDING.discard(id(out))
        if made is None:        # (a step the view cannot show)
            keep_with(out, _STEP_VIEW, None)
            return None
        keep_with(out, _STEP_OUTPUT, made)
    return made


def _fed_since_shaped(out: Variable) -> bool:
    """Whether the recurrence ``out`` (a Fold's: the states it takes the last step of) holds
    the batch of an earlier run while its sequences' lengths hold the data just fed for the
    next (a recurrence made after a run of 4 sequences, evaluated on 3: its view is asked for
    as the run's arguments are checked, before the run): a view built now would pair the two
    and fail, so it is built once the run has shaped the recurrence."""
    while out.parent is not None and out.parent.spec.name in ("identity", "sequence_last",
                                                              "sequence_first"):
        out = out.parent.inputs[0]
    lengths = out.sequence_lengths
    if lengths is None or len(lengths.shape) != 1 or len(out.shape) == 0:
        return False
    if lengths.shape[0] != out.shape[0]:
        return True
    # (as many sequences, of another longest length: a run of 2 steps, then 3)
    fed = lengths.data
    return len(out.shape) > 1 and fed is not None and fed.numel() > 0 and \
        int(fed.max()) != out.shape[1]


def past_value_view(out: Variable, op_name: str, state: int = 0,
                    shape: "tuple | None" = None) -> Variable:
    """A ``PastValue`` (``FutureValue``) of the state ``state`` of the recurrence ``out`` as
    CNTK 2.7's loop holds it: a view node over ``out`` no run reads, whose inputs show as the
    step's output (once :func:`read_by_past_value` names it) and that state's initial value;
    of the state's per-step ``shape`` where it is not ``out``'s (an LSTM's cell, of
    ``cell_shape``)."""
    states = recurrence_states(out.parent)
    own = shape is None or tuple(shape) == tuple(out.shape[2:])
    with auto_forward(False):       # (a node to show, never a value to compute)
        if own and out.sequence_lengths is not None:
            # the state delayed one step, as the loop reads it: the step's block over it
            # (given out by a lookup, evaluated) computes the recurrence's own values
            delay = F.future_value if states.go_backwards else F.past_value
            past = delay(out, out.sequence_lengths, states.inputs[states.positions[state]])
        else:
            past = F.identity(out)
        shown_only(past.parent)             # (the one node reading the program's value)
        if not own:
            lead = tuple(out.shape[:2])     # (a view of the state's shape: never computed)
            one = F.slice(past, (0,) * out.ndim, lead + (1,) * (out.ndim - 2))
            past = F.broadcast(F.reshape(one, lead + (1,) * len(shape)), lead + tuple(shape))
    set_op_name(past, op_name)
    keep_with(past, _PAST_STATE, (out, state))
    return past


def read_by_past_value(past: Variable, step_output: Variable) -> None:
    """Show ``step_output`` (a view: it holds no value) as the input ``past`` delays."""
    keep_with(past, _PAST, step_output)


_VIEW = "compat.cntk: a node of a view of a Python step's graph, never computed"


def mark_view(v: Variable) -> None:
    """Mark ``v`` as a node of a step's view that stands for a value computed inside the
    loop (a Python step's ops replayed over ``PastValue`` views): the walks show it, a
    lookup by name does not give it out (it computes no step's value; ``Function``'s
    attribute lookup finds the step's own, ``_step_values``)."""
    keep_with(v, _VIEW, True)


def is_view(v: Variable) -> bool:
    """Whether :func:`mark_view` marked ``v``."""
    return bool(kept_with(v, _VIEW))


def shown_step_output(out: Variable, fold: bool = False) -> Variable:
    """The output CNTK 2.7 shows as the one input of a recurrence's root (its ``Combine``;
    ``NoOp`` when named) whose output is ``out``: the step's output inside the loop, owned by
    the step's op (``Plus``, a ``GRU`` block; a ``Fold``'s ``Sequence::Slice``), of ``out``'s
    shape.  Stadyn's recurrence is one op, so it is a node over ``out`` that no run computes,
    named as that op, made the first time it is asked for and kept on ``out``.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.Recurrence(C.plus)(C.sequence.input_variable(2))
        >>> shown = shown_step_output(z.variable)
        >>> op_name_of(shown), shown.shape[2:]
        ('Plus', (2,))
    """
    made = _step_view_output(out)
    if made is None:
        made = shown_node(out, _STEP_OUTPUT, lambda: F.identity(out), _step_op(out, fold))
    keep_with(made, _STEP_OUTPUT_OF, out)
    return made


_STEP_OUTPUT_OF = "compat.cntk: the recurrence whose step output this view shows"


def step_output_of(v: Variable) -> "Variable | None":
    """The output of the recurrence (or ``Fold``) whose step output :func:`shown_step_output`
    showed as ``v``; None for another value.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.Recurrence(C.plus)(C.sequence.input_variable(2))
        >>> step_output_of(shown_step_output(z.variable)) is z.variable
        True
    """
    return kept_with(v, _STEP_OUTPUT_OF)


def shown_inputs(v: Variable) -> list[Variable]:
    """The inputs CNTK shows for the op that made ``v``: a sequence op's lengths input is
    Stadyn's layout, no input CNTK shows; a spliced value is seen through; the constants
    recorded by ``_shown_constants.show_constants`` come first (or last, where so recorded),
    and a constant cloned at the first run is shown in its cast's place (``shown_as``).  A
    recurrence shows the
    values its step reads, then its initial states, then its sequences (CNTK's walk meets a
    step's parameters before the delays that hold the initial states, and the sequences
    last)."""
    node = v.parent
    inputs = list(node.inputs)
    layer_op = _layer_op(v)
    past = kept_with(v, _PAST)
    transposed = _transposed_inputs(v)
    if transposed is not None:              # (CNTK's [Plus(]Convolution(W, x)[, b)])
        return transposed
    combined = combined_inside(v)
    if combined is not None:                # (the Combine inside a block of several outputs)
        return list(combined)
    if past is not None:                    # (a PastValue of the step's output, the state's
        out, state = kept_with(v, _PAST_STATE)                     # initial value)
        inputs = [past, recurrence_states(out.parent).initial[state]]
    elif kept_with(v, _BIAS_LAST):          # (an RNNStep's Plus(Plus(x W, h H), b))
        inputs = _bias_last_inputs(v)
    elif layer_op is not None and len(inputs) == 3:   # (CNTK's Plus(Times(x, W), b) and
        inputs = [shown_product(v) if layer_op == "Times"     # Plus(Convolution(W, x), b))
                  else _shown_convolution(v), _shown_bias(inputs[2])]
    elif layer_op == "Convolution":         # (CNTK's Convolution(W, x))
        inputs = inputs[1::-1]
    elif node.spec.name == "recurrence":      # (lengths, sequences..., states..., captured...)
        first = 1 + int(node.kwargs["n_sequences"])
        end = first + len(node.kwargs["step"].states)
        inputs = _in_walk_order(node.kwargs["step"], inputs[end:]) + inputs[first:end] + \
            inputs[:first]
    elif node.spec.name in _FUSED_STEPS:    # (x, lengths, states..., parameters...)
        end = 1 + max(recurrence_states(node).positions)
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
    return [*shown_constants(v), *_in_operand_order(v, shown), *shown_constants(v, last=True)]


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
