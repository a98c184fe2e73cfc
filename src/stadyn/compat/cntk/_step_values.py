"""Named values inside a recurrence's step, read from outside as sequences.

CNTK 204's and ``Sequence2Sequence.py``'s ``debug_attention`` reads
``model.attention_model.attention_weights``: a value computed inside the decoder's attention
``Recurrence`` step (itself inside the greedy decoder's ``UnfoldFrom`` loop), one per decoded
step.  Stadyn records a step as a graph of its own (``ops.StepFunction``), so such a value is
not in the model's graph.  Looked up by name (a ``Label``, a named op, or a layer's block
name), it is given out as the sequence of its values: the ``recurrence`` op holding it is
applied once more with the value as one more state (its previous value unused), which
returns it step by step; a step inside another loop's step (a decoder's recurrence in the
greedy loop) does the same at each level.  The copy computes what the model computes (the
same inputs and parameters), so ``C.combine([model, weights])`` gives both.  The sequence is
made once per recurrence and value: looked up again, it is the same Variable (CNTK gives the
same Function, uid included), and the copy is not built again (``Sequence2Sequence.py``'s
``debug_attention`` looks up ``model.attention_model.attention_weights`` on every call).

A step's blocks (``AttentionModel`` named ``attention_model``) are found through the graph
recorded before the step's invariant values were hoisted out of it (``FunctionStep`` keeps
their names per step, :func:`note_step_blocks`), matched op by op with the hoisted copy.
"""

from __future__ import annotations

import weakref

from ... import functions as F
from ... import sequence as S
from ...graph import Variable, auto_forward, keep_with, kept_with, topological_nodes
from ...ops import StepFunction
from . import _graph as G

__all__ = ["note_step_blocks", "step_value"]

# a step's first placeholder -> the named blocks its recorded graph held [(output, name)]
_STEP_BLOCKS: "weakref.WeakKeyDictionary[Variable, list]" = weakref.WeakKeyDictionary()
# kept with an output of the outermost recurrence node of a path (``keep_with``; not in a
# registry keyed by it, which a run of the model and the sequence together would keep alive
# for ever): {(the inner nodes' ids, the value's id): the sequence made for it} (the inner
# nodes and the value live in that node's step)
_EXPOSED = "compat.cntk: the step values given out as sequences"


def note_step_blocks(placeholders, outputs) -> None:
    """Keep the named blocks of a step recorded on ``placeholders`` (its states and inputs)
    whose graph gives ``outputs``, for :func:`step_value`."""
    if not placeholders:
        return
    found = [(o, G.BLOCKS[o].name) for n in topological_nodes(list(outputs))
             for o in n.outputs if o is not None and o in G.BLOCKS and G.BLOCKS[o].name]
    if found:
        _STEP_BLOCKS[placeholders[0]] = found


def step_value(roots: list, name: str):
    """The sequence of the value named ``name`` inside a recurrence step of the graph of
    ``roots`` (as a CNTK Function), or None.  ``Function.__getattr__`` looks there last.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.sequence.input_variable(1)
        >>> y = C.layers.Recurrence(lambda h, u: C.layers.Label("doubled")(h * 2.0) + u)(x)
        >>> doubled = y.doubled                     # 2 h(t-1) at each step t
        >>> out = C.combine([y, doubled]).eval({x: [np.ones((3, 1), np.float32)]})
        >>> [v[0].ravel().tolist() for v in out.values()]
        [[1.0, 3.0, 7.0], [0.0, 2.0, 6.0]]
        >>> y.doubled.uid == doubled.uid            # one sequence per value, as in CNTK
        True
    """
    path, target = _locate(roots, name, set())
    if target is None:
        return None
    from ._adapt import wrap
    holder = next(o for o in path[0].outputs if o is not None)
    made = kept_with(holder, _EXPOSED)
    if made is None:
        made = {}
        keep_with(holder, _EXPOSED, made)
    key = (tuple(id(n) for n in path[1:]), id(target))
    if key not in made:
        with auto_forward(False):
            made[key] = _expose(path, target)
    return wrap(made[key])


def _attrs(node) -> tuple[list, dict]:
    return node.spec.split_arguments(node.args, node.kwargs)


def _locate(roots: list, name: str, seen: set) -> tuple[list, Variable | None]:
    """``(path, value)``: the recurrence nodes (outermost first) whose steps hold the value
    named ``name``, and that value in the innermost step's graph."""
    for node in topological_nodes(list(roots)):
        if node.spec.name != "recurrence" or id(node) in seen:
            continue
        seen.add(id(node))
        step = _attrs(node)[1]["step"]
        target = _named_in(step, name)
        if target is not None:
            return [node], target
        path, target = _locate(step.outputs, name, seen)
        if target is not None:
            return [node] + path, target
    return [], None


def _named_in(step: StepFunction, name: str) -> Variable | None:
    """The value named ``name`` (an op's name, or a block's) in ``step``'s graph."""
    for node in step.nodes:
        for o in node.outputs:
            if o is not None and o.name == name:
                return o
    own = step.states + step.inputs
    for old, block_name in _STEP_BLOCKS.get(own[0], []) if own else []:
        if block_name == name:
            copy = _copy_in(old, step)
            if copy is not None:
                return copy
    return None


def _copy_in(old: Variable, step: StepFunction) -> Variable | None:
    """``old`` (recorded in the step before its invariants were hoisted) in ``step``'s graph:
    the value made by the same ops from the same step values and parameters (a hoisted value
    is a leaf of the same rank there)."""
    memo: dict = {}

    def same(o: Variable, n: Variable) -> bool:
        key = (id(o), id(n))
        if key not in memo:
            memo[key] = _same(o, n, same)
        return memo[key]
    for node in step.nodes:
        for o in node.outputs:
            if o is not None and same(old, o):
                return o
    return None


def _same(o: Variable, n: Variable, same) -> bool:
    if o is n:
        return True
    if n.parent is None:
        # a hoisted value (its batch and sequence axes sized by the last run)
        return o.parent is not None and len(o.shape) == len(n.shape)
    if o.parent is None or o.parent.spec is not n.parent.spec or \
            len(o.parent.inputs) != len(n.parent.inputs):
        return False
    if [x is o for x in o.parent.outputs] != [x is n for x in n.parent.outputs]:
        return False
    return all(same(a, b) for a, b in zip(o.parent.inputs, n.parent.inputs))


def _expose(path: list, target: Variable) -> Variable:
    """The sequence of ``target``'s values along the recurrence ``path[0]`` (through the
    nested recurrences ``path[1:]`` inside its step)."""
    if len(path) > 1:
        inner = _expose(path[1:], target)          # a step of the outer loop: length 1
        # (the sum over the one step drops that axis; a reshape would fix the sample's
        # shape, which may follow the data: 204's weights over the encoder's steps)
        target = F.sum(inner, axis=1)
    node = path[0]
    inputs, attrs = _attrs(node)
    step = attrs["step"]
    n_seq, n_states = int(attrs["n_sequences"]), len(step.states)
    captured = inputs[1 + n_seq + n_states:]
    given = {id(c): v for c, v in zip(step.captured, captured)}
    unused = Variable((1,) + tuple(target.shape[1:]), dtype=target.dtype)
    program = StepFunction(step.states + [unused], step.inputs, step.outputs + [target])
    out = F.recurrence(*inputs[:1 + n_seq + n_states], S.state_value(0.0),
                       *[given.get(id(c), c) for c in program.captured], step=program,
                       n_sequences=n_seq, go_backwards=bool(attrs.get("go_backwards", False)))
    return out[-1] if isinstance(out, tuple) else out
