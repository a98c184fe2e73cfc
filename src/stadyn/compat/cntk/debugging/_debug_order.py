"""The order CNTK 2.7's debugger stops in (``debug_model``, :mod:`._debugger`): the nodes of
a graph at the depth of ``depth_first_search`` (functions, a layer as one; leaves), each after
the nodes it reads, in the order CNTK 2.7 computes an op's operands; a recurrent loop as one
unit.

Example:
    >>> import stadyn.compat.cntk as C
    >>> x = C.input_variable(2, name="x")
    >>> w = C.parameter((2, 1), name="w")
    >>> [n.name for n, _ in stop_order(C.times(x, w, name="t").root_function)]
    ['w', 'x', 't']
"""

from __future__ import annotations

from .._function import Function
from ..logging.graph import depth_first_search

__all__ = ["source", "stop_order", "all_inputs"]


def source(v):
    """The node a graph input comes from: a function's output's function, else the leaf."""
    return v.owner if v.is_output else v


def _inputs_of(node) -> list:
    return [source(i) for i in node.inputs] if isinstance(node, Function) else []


def _loops(nodes: list) -> dict:
    """``{uid: the uids of its recurrent loop}`` for the nodes on a loop (a ``PastValue`` and
    the step computed from it)."""
    by_uid = {n.uid: n for n in nodes}
    above: dict = {}
    for n in nodes:
        found, stack = set(), _inputs_of(n)
        while stack:
            m = stack.pop()
            if m.uid not in found:
                found.add(m.uid)
                stack.extend(_inputs_of(by_uid.get(m.uid, m)))
        above[n.uid] = found
    return {u: frozenset({u} | {v for v in above[u] if u in above.get(v, ())})
            for u in above if u in above[u]}


def stop_order(root) -> list:
    """The stops under ``root`` in the order CNTK 2.7 evaluates them: ``(node, inputs)``,
    each after the stops of its inputs, which it takes in its own order
    (:func:`_operand_order`).  A recurrent loop is one unit: its inputs from outside first,
    then a stop after each of its nodes read outside it (its nodes inside are Stadyn's one
    recurrence, and the delayed values in it have no stop); ``inputs`` are the loop's."""
    nodes = depth_first_search(root, lambda n: True)
    loops = _loops(nodes)
    read_outside = {root.uid}
    for n in nodes:
        for m in _inputs_of(n):
            if loops.get(m.uid) is not None and n.uid not in loops[m.uid]:
                read_outside.add(m.uid)
    order, seen = [], set()

    def visit(node) -> None:
        loop = loops.get(node.uid)
        if loop is None:
            seen.add(node.uid)
            for i in map(source, _operand_order(node)) if isinstance(node, Function) else ():
                if i.uid not in seen:
                    visit(i)
            order.append((node, _inputs_of(node)))
            return
        # a loop: its inputs from outside, met going through its nodes from this one, each
        # node's operands in order (the delayed value's initial state where it is read)
        members, inputs = [], []

        def through(m) -> None:
            seen.add(m.uid)
            members.append(m)
            for i in map(source, _operand_order(m)):
                if i.uid in loop:
                    if i.uid not in seen:
                        through(i)
                    continue
                inputs.append(i)
                if i.uid not in seen:
                    visit(i)

        through(node)
        order.extend((m, inputs) for m in members if m.uid in read_outside)

    visit(root)
    return order


def _operand_order(fn) -> list:
    """The inputs of ``fn`` in the order CNTK 2.7 computes them.  Its ``Times`` (and
    ``TransposeTimes``) holds its operands the other way round (the weights first); a layer
    (a block: ``Dense``, ``Convolution``, ``Embedding``) computes its first parameter (its
    ``Times``' or convolution's weights), then its arguments, then its other parameters (the
    bias), an ``RNNStep`` its ``W``, input, ``H``, previous output, ``b``; other functions
    take their inputs in order."""
    inputs = list(fn.inputs)
    if fn.is_block and fn.op_name == "RNNStep" and len(inputs) == 5:
        w, h, b, previous, x = inputs
        return [w, x, h, previous, b]
    if fn.op_name in ("Times", "TransposeTimes") and len(inputs) >= 2:
        return [inputs[1], inputs[0]] + inputs[2:]
    if fn.is_block:
        weights = [i for i in inputs if i.is_parameter or i.is_constant]
        rest = [i for i in inputs if not (i.is_parameter or i.is_constant)]
        return weights[:1] + rest + weights[1:]
    return inputs


def all_inputs(node, sources: list) -> list:
    """The graph inputs (Variables) through which ``node`` (or the loop it closes) reads
    ``sources``."""
    wanted = {s.uid for s in sources}
    found, seen, stack = [], set(), [node]
    while stack:
        n = stack.pop()
        if n.uid in seen or not isinstance(n, Function):
            continue
        seen.add(n.uid)
        for i in n.inputs:
            if source(i).uid in wanted:
                found.append(i)
            else:
                stack.append(source(i))
    return found
