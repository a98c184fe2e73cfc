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

from .._deferred_operands import waiting_of
from .._function import Function
from ..logging.graph import depth_first_search

__all__ = ["Delayed", "source", "stop_order"]


def source(v):
    """The node a graph input comes from: a function's output's function, else the leaf."""
    return waiting_of(v) if v.is_output else v


def _sources(node) -> list:
    return [source(i) for i in node.inputs] if isinstance(node, Function) else []


def _cycles(nodes: list) -> dict:
    """``{uid: the uids of its cycle}`` for the nodes on a cycle of ``nodes``' inputs."""
    by_uid = {n.uid: n for n in nodes}
    above: dict = {}
    for n in nodes:
        found, stack = set(), _sources(n)
        while stack:
            m = stack.pop()
            if m.uid not in found:
                found.add(m.uid)
                stack.extend(_sources(by_uid.get(m.uid, m)))
        above[n.uid] = found
    return {u: frozenset({u} | {v for v in above[u] if u in above.get(v, ())})
            for u in above if u in above[u]}


def _fed_from(node, around: frozenset) -> list:
    """What feeds the graph under ``node`` from outside ``around``: the leaves and functions
    under it that no other function under it reads."""
    under = [n for n in depth_first_search(node, lambda n: True)
             if n.uid != node.uid and n.uid not in around]
    read, wrapping = set(), set()
    for n in under:
        if isinstance(n, Function):
            below = {m.uid for m in depth_first_search(n, lambda m: True) if m.uid != n.uid}
            if {m.uid for m in under} - {n.uid} <= below:
                wrapping.add(n.uid)     # (a function shown around this one: all it reads)
            else:
                read |= below
    return [n for n in under if n.uid not in read and n.uid not in wrapping]


def stop_order(root) -> list:
    """The stops under ``root`` in the order CNTK 2.7 evaluates them: ``(node, inputs)``,
    each after the stops of its inputs, which it takes in its own order
    (:func:`_operand_order`).  A recurrent loop (a cycle through a ``PastValue`` or
    ``FutureValue``) is one unit: its inputs from outside first, then its delayed values
    (:class:`Delayed`, stopped at once per step), then a stop after each of its nodes read
    outside it (its nodes inside are Stadyn's one recurrence); ``inputs`` are the loop's.
    Functions Stadyn shows reading each other with no delay between (a ``Fold``'s
    ``sequence.last`` and the combine around it) read what feeds the graph under them."""
    nodes = depth_first_search(root, lambda n: True)
    by_uid = {n.uid: n for n in nodes}
    walk = list(nodes)
    while walk:                 # (and the functions Stadyn's walk does not list but shows)
        for m in _sources(walk.pop()):
            if m.uid not in by_uid:
                by_uid[m.uid] = m
                nodes.append(m)
                walk.append(m)
    cycles = _cycles(nodes)
    loops, views = {}, {}
    for u, cycle in cycles.items():
        delayed = any(getattr(by_uid.get(v), "op_name", "") in ("PastValue", "FutureValue")
                      for v in cycle)
        (loops if delayed else views)[u] = cycle

    def operands(node) -> list:
        if node.uid in views:
            return _fed_from(node, views[node.uid])
        return [source(i) for i in _operand_order(node)] if isinstance(node, Function) else []

    read_outside = {root.uid}
    for n in nodes:
        for m in operands(n):
            if loops.get(m.uid) is not None and n.uid not in loops[m.uid]:
                read_outside.add(m.uid)
    order, seen = [], set()

    def visit(node) -> None:
        loop = loops.get(node.uid)
        if loop is None:
            seen.add(node.uid)
            for i in operands(node):
                if i.uid not in seen:
                    visit(i)
            order.append((node, operands(node)))
            return
        # a loop: its inputs from outside, met going through its nodes from this one, each
        # node's operands in order (the delayed value's initial state where it is read)
        members, inputs = [], []

        def through(m) -> None:
            seen.add(m.uid)
            members.append(m)
            for i in operands(m):
                if i.uid in loop:
                    if i.uid not in seen:
                        through(i)
                    continue
                inputs.append(i)
                if i.uid not in seen:
                    visit(i)

        through(node)
        delayed = [m for m in members if getattr(m, "op_name", "") in _DELAYED]
        if delayed:
            order.append((Delayed(delayed), inputs))
        order.extend((m, inputs) for m in members if m.uid in read_outside)

    visit(root)
    return order


_DELAYED = ("PastValue", "FutureValue")


class Delayed:
    """The delayed values (``PastValue``, ``FutureValue``) of one recurrent loop, a stop
    CNTK 2.7 makes at each of them once per step of the loop, after the loop's inputs and
    before its nodes read outside it, in both passes (Stadyn's loop is one recurrence op: the
    stops are written, the values they show are the loop's inputs').

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.sequence.input_variable(2, name="x")
        >>> m = C.layers.Sequential([C.layers.Recurrence(C.layers.RNNStep(2)),
        ...                          C.layers.Dense(1)])(x)
        >>> [n.name or getattr(n, "op_name", "") for n, _ in stop_order(m.root_function)]
        ['W', 'W', 'x', 'H', '', 'b', 'PastValue', 'RNNStep', 'b', 'Dense']
    """

    def __init__(self, nodes: list):
        self.nodes = list(nodes)
        self.uid = "Delayed_" + nodes[0].uid
        self.name = nodes[0].op_name


def _operand_order(fn) -> list:
    """The inputs of ``fn`` in the order CNTK 2.7 computes them.  Its ``Times`` (and
    ``TransposeTimes``) holds its operands the other way round (the weights first); a layer
    (a block: ``Dense``, ``Convolution``, ``Embedding``) computes its first parameter (its
    ``Times``' or convolution's weights), then its arguments, then its other parameters (the
    bias), an ``RNNStep`` its ``W``, input, ``H``, previous output, ``b``, a ``GRU`` its
    scalar constant, ``b``, ``W``, input, ``H``, previous output, its second ``H``; other functions
    take their inputs in order."""
    inputs = list(fn.inputs)
    if fn.is_block and fn.op_name == "RNNStep" and len(inputs) == 5:
        w, h, b, previous, x = inputs
        return [w, x, h, previous, b]
    if fn.is_block and fn.op_name == "GRU" and len(inputs) == 7:
        one, b, w, h, h1, previous, x = inputs
        return [one, b, w, x, h, previous, h1]
    if fn.op_name in ("Times", "TransposeTimes") and len(inputs) >= 2:
        return [inputs[1], inputs[0]] + inputs[2:]
    if fn.is_block:
        weights = [i for i in inputs if i.is_parameter or i.is_constant]
        rest = [i for i in inputs if not (i.is_parameter or i.is_constant)]
        return weights[:1] + rest + weights[1:]
    return inputs
