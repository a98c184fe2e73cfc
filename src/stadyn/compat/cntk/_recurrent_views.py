"""How CNTK 2.7's graph holds the step of a recurrence Stadyn runs as one op (a fused kernel,
or its step graph): the view nodes the walks are shown in its place (``_graph_views.
note_step_view``), a cell's block over a ``PastValue`` of each state (:class:`StepView`), a
Fold's ``Sequence::Slice`` (:class:`FoldSlice`), a Python step's graph replayed
(:class:`FunctionStepView`).  None of them is run.

Example:
    >>> import stadyn.compat.cntk as C
    >>> x = C.sequence.input_variable(2)
    >>> gru = C.layers.Recurrence(C.layers.GRU(3))(x).root_function.inputs[0].owner
    >>> gru.op_name, [i.owner.op_name for i in gru.inputs if i.is_output]
    ('GRU', ['PastValue'])
"""

from __future__ import annotations

from ... import functions as F
from ..._errors import ShapeError
from ...graph import (Variable, auto_forward, keep_with, new_lengths, replayed_from,
                      set_sequence_axis, shown_only,
                      topological_nodes)
from ...ops import recurrence_states
from . import _graph as G
from ._clone import rebuild
from ._shown_constants import show_constants, shown_constants
from ._step_views import made_between, mark_step_inside

__all__ = ["StepView", "FoldSlice", "FunctionStepView", "VIEWED", "VIEWED_STEPS",
           "SLICE_SHOWN"]

# the recurrences (fused or of a step graph) whose step the walks show as CNTK 2.7's graph
# holds it: of a step of one state, without stabilisers or projection
VIEWED = ("cntk_gru_sequence", "cntk_rnn_sequence", "recurrence")
VIEWED_STEPS = ("gru", "rnnstep", "lstm")

# the key a Fold's last step keeps the Sequence::Slice its walks show under
SLICE_SHOWN = "compat.cntk: the Sequence::Slice a Fold's walks show over its recurrence"


class StepView:
    """What builds the graph CNTK 2.7 holds for the step of a recurrence Stadyn runs as one
    op (a fused kernel, or its step graph: ``_graph_views.note_step_view``): the step's block
    (``GRU``, ``RNNStep``) over a ``PastValue`` of its own output (``FutureValue``
    backwards) and the sequence, its ops Stadyn's written out as the step computes one
    position, none of them run.  It holds the step layer (for its parameters), not the
    graph's values."""

    def __init__(self, step, kind: str, name: str):
        self.step, self.kind, self.name = step, kind, name

    def __call__(self, out: Variable) -> Variable:
        node = out.parent
        states = recurrence_states(node)
        x = node.inputs[states.sequences[0]]
        op = "FutureValue" if states.go_backwards else "PastValue"
        pasts = [G.past_value_view(out, op, k, shape) for k, shape in enumerate(states.shapes)]
        with auto_forward(False):       # (nodes to show, never values to compute)
            made = self.step.apply(*pasts, x)
        inner = list(made) if isinstance(made, tuple) else [made]
        for v in made_between(inner, {id(p) for p in pasts} | {id(x)}):
            shown_only(v.parent)
        kind = G.STEP_BLOCKS[self.kind]
        if len(inner) > 1:              # (an LSTM's h and c: one block of two outputs)
            with auto_forward(False):
                outputs = list(G.block_of_outputs(tuple(inner), kind, self.name,
                                                  (*pasts, x)))
            for v in outputs:
                shown_only(v.parent)
            for v in made_between(outputs, {id(p) for p in pasts} | {id(x)}):
                G.mark_view(v)      # (its values are the loop's: not given out by name)
        else:
            outputs = inner
            G.BLOCKS[made] = G.Block(kind, self.name, (*pasts, x))
        mark_step_inside(kind, self.step, inner, [*pasts, x])
        for past, output in zip(pasts, outputs):
            G.read_by_past_value(past, output)
        return outputs[0]


class FoldSlice:
    """What builds the input a Fold's root shows (``_graph_views.note_step_view``): the
    ``Sequence::Slice`` block taking the recurrence's last (first) step, with its two scalar
    constants, a node over the recurrence that no run computes.  It holds nothing of the
    graph: the recurrence is the input of the Fold's ``sequence_last``."""

    def __call__(self, out: Variable) -> Variable:
        last = out
        while last.parent is not None and last.parent.spec.name == "identity":
            last = last.parent.inputs[0]
        states, lengths = last.parent.inputs[:2]
        take = F.sequence_last if last.parent.spec.name == "sequence_last" else \
            F.sequence_first
        with auto_forward(False):       # (a node to show, never a value to compute)
            sliced = take(states, lengths)
        shown_only(sliced.parent)
        if G.BATCH(last):
            G.BATCH.add(sliced)
        G.mark_block(sliced, "Sequence::Slice", "", [states], "GatherPacked")
        show_constants(sliced, shown_constants(last))
        keep_with(last, SLICE_SHOWN, sliced)       # (its scalars follow last's: float64)
        return sliced


class FunctionStepView:
    """What builds the graph CNTK 2.7 holds for the step of a recurrence of a Python function
    (``_graph_views.note_step_view``): the step's graph replayed (``_clone.rebuild``, its
    parameters shared, its blocks carried) on a ``PastValue`` (``FutureValue`` backwards) of
    each state and the sequences, none of it run.  Where the step's graph meets its
    arguments in another order than the function takes them (``tanh(times(x, W) + h)``
    meets ``x`` first), CNTK 2.7's ``@Function`` passes them through a ``Tuple`` block of an
    output each (``force_order_args``), which the view shows.  It holds nothing of the
    graph: the step is read from the recurrence's op."""

    def __call__(self, out: Variable) -> "Variable | None":
        node = out.parent
        states = recurrence_states(node)
        step = node.kwargs["step"]
        op = "FutureValue" if states.go_backwards else "PastValue"
        pasts = [G.past_value_view(out, op, k, shape) for k, shape in enumerate(states.shapes)]
        sequences = [node.inputs[k] for k in states.sequences]
        own = list(step.states) + list(step.inputs)
        # (values hoisted out of the step, a stabiliser's softplus(alpha): the view reads
        # what the loop is fed for them, as CNTK's step reads the outside graph)
        fed = list(node.inputs[len(node.inputs) - len(step.captured):]) if step.captured else []
        blocks = _replayed_blocks(step.outputs)
        made = None
        for stand_in in (False, True):
            try:
                made = _replayed(step, own, pasts + sequences, fed, blocks, stand_in)
                break
            except ShapeError:  # (the step's ops over a batch an earlier run left: over
                continue        # stand-ins of one step each, seen through)
            except Exception:   # (a step whose ops take no whole sequence: no view, the
                return None     # recurrence shown as one node, as before)
        if made is None:
            return None
        for v in made_between(made, {id(a) for a in pasts + sequences + fed}):
            shown_only(v.parent)
            G.mark_view(v)
        for past, output in zip(pasts, made):
            G.read_by_past_value(past, output)
        return made[0]


def _replayed(step, own: list, arguments: list, fed: list, blocks: dict,
              stand_in: bool) -> list:
    """The step's outputs replayed over ``arguments`` (its ``PastValue`` views, then its
    sequences) and ``fed`` (its captured values), none of it run.  ``stand_in``: each
    argument of a sequence axis read through a stand-in of one step of one sequence
    (:func:`_stand_in`) that the walks see through, its blocks shown over the argument, for
    a step whose ops cannot take the batch an earlier run left in an argument (a
    ``reduce_sum`` of a ``Dense`` once a sequence of 3 was evaluated: its axes are the
    step's)."""
    read = [_stand_in(a) for a in arguments] if stand_in else list(arguments)
    with auto_forward(False):       # (nodes to show, never values to compute)
        made = rebuild(list(step.outputs), dict(zip(own + step.captured, read + fed)),
                       blocks=blocks)
        # (the order the view's walk meets the arguments in, its blocks carried)
        if _met_out_of_order(made, arguments):
            tupled = G.block_of_outputs(tuple(read), "Tuple", "", tuple(arguments))
            G.show_combined(tupled[0], arguments)       # (not the stand-ins)
            made = rebuild(list(step.outputs), dict(zip(own + step.captured,
                                                        list(tupled) + fed)), blocks=blocks)
    if stand_in:        # (the blocks replayed over a stand-in show what it stands for)
        for v in made_between(made, {id(a) for a in arguments + fed}):
            block = G.BLOCKS.get(v)
            if block is not None and any(G.seen_through(a) is not a for a in block.arguments):
                G.BLOCKS[v] = G.Block(block.op_name, block.name,
                                      tuple(G.seen_through(a) for a in block.arguments),
                                      block.attributes, block.options)
    return made


def _stand_in(v: Variable) -> Variable:
    """A leaf of ``v``'s shape on one sequence of one step (``v`` itself where it has no
    sequence axis) that the walks, clones and saves see as ``v`` (``_graph.mark_spliced``):
    what a step's view reads for ``v``, whatever batch an earlier run left in it."""
    if v.sequence_lengths is None or v.ndim < 2 or tuple(v.shape[:2]) == (1, 1):
        return v
    one = Variable((1, 1) + tuple(v.shape[2:]), dtype=v.dtype)
    set_sequence_axis(one, new_lengths())
    G.mark_spliced(one, v)
    return one


def _replayed_blocks(outputs: list) -> dict:
    """``{id(value): Block}``: the blocks of one output (a ``Dense``, a ``GRU`` cell) that a
    step's graph, replayed without what it computes from no state (a self-stabilized cell's
    softplus of alpha: ``graph.hoist_invariants``), recorded on the values it replayed, each
    over the replayed arguments, for the view to show as the step with nothing hoisted shows
    them (CNTK 2.7 lists ``dense(gru(h, x))``'s parameters ``[W, b, b, W, H, alpha, H1]``,
    the Dense block's own first)."""
    replayed: dict = {}
    for node in topological_nodes(list(outputs)):
        for o in node.outputs:
            if o is not None and replayed_from(o) is not None:
                replayed[id(replayed_from(o))] = o
    found = {}
    for o in replayed.values():
        recorded = replayed_from(o)
        block = G.BLOCKS.get(recorded)
        if block is None or o in G.BLOCKS or len(G.outputs_of(recorded)) > 1:
            continue
        found[id(o)] = G.Block(block.op_name, block.name,
                               tuple(replayed.get(id(a), a) for a in block.arguments),
                               block.attributes, block.options)
    return found


def _met_out_of_order(outputs: list, arguments: list) -> bool:
    """Whether a walk of ``outputs`` (a step's view) meets ``arguments`` (its ``PastValue``
    views, then its sequences) in another order than theirs."""
    wanted = {id(a) for a in arguments}
    met = [v for v in G.walk_operands(list(outputs), list(arguments), stop=True)
           if id(v) in wanted]
    return [id(v) for v in met] != [id(a) for a in arguments]
