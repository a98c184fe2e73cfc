"""What a forward decided about gradients, and what a backward after it honours (NNabla's rule).

A plan is lowered for one set of *gradient marks*: which leaves need a gradient and which op
outputs were set ``need_grad=False`` (the gradient stops there) or ``True`` (it starts there).
NNabla 1.39 decides in the forward which functions take part in a backward (those with an
input needing a gradient, ``CgFunction::need_grad``) and reads each Variable's ``need_grad``
again when the backward runs.  So ``need_grad`` set between ``forward()`` and ``backward()``
counts: set ``False`` on an intermediate, no gradient goes through it; set on a leaf, the leaf
gets (or stops getting) one through the functions the forward made take part; but a function
none of whose inputs needed a gradient in the forward stays out of that backward.

:func:`gradient_marks` reads the marks of a plan's graph; :func:`marks_to_replay` says which
outputs a forward run again under the marks of now must also mark so that its backward is
NNabla's (the runner sets them for that forward only, ``_runner.py``).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
    >>> h = F.tanh(x)
    >>> e = F.exp(h)
    >>> y = F.sum(e)
    >>> y.forward()
    >>> h.need_grad = False              # after the forward: e still gets its gradient
    >>> plan = y._plan
    >>> now = gradient_marks(plan.nodes, plan.leaves)
    >>> marks_to_replay(plan.nodes, plan.leaves, plan.marks, now) == ([], [e])
    True
"""

from __future__ import annotations

from typing import Sequence

from ._variable import _layout, _marks, FunctionNode, Variable

__all__ = ["gradient_marks", "marks_to_replay", "mark_gradients_changed"]


def mark_gradients_changed() -> None:
    """Record that some gradient mark changed (the runner's own, for one forward and backward:
    plans are looked up again)."""
    _marks[0] += 1
    _layout[0] += 1


def gradient_marks(nodes: Sequence[FunctionNode], leaves: Sequence[Variable]) -> tuple:
    """The gradient marks of a graph: each leaf's ``need_grad``, then ``(node position, output
    position, stops, starts)`` for every op output set ``need_grad=False`` / ``True``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((2,), need_grad=True)
        >>> h = F.relu(x); h.need_grad = False
        >>> gradient_marks([h.parent], [x])
        ((True,), ((0, 0, True, False),))
    """
    outs = tuple((i, j, v._stops_grad, v._starts_grad)
                 for i, node in enumerate(nodes) for j, ref in enumerate(node._outputs)
                 if (v := ref()) is not None and (v._stops_grad or v._starts_grad))
    return tuple(v._need_grad for v in leaves), outs


def marks_to_replay(nodes: Sequence[FunctionNode], leaves: Sequence[Variable], built: tuple,
                    now: tuple) -> tuple[list[Variable], list[Variable]]:
    """The op outputs to mark for a forward under the marks ``now`` whose backward is NNabla's
    after a forward under ``built``: ``(stop, start)``.  An output none of whose node's inputs
    needed a gradient under ``built`` gets none (its node stays out of the backward: stopped
    where it would now take part), one whose node took part gets one even where its inputs
    need none now (started), unless it is marked itself now.

    Example (``c`` set ``need_grad=True`` after a forward: ``b``'s node took no part):
        >>> import stadyn as sd, stadyn.functions as F
        >>> x, c = sd.Variable((2,), need_grad=True), sd.Variable((2,))
        >>> a, b = F.relu(x), F.relu(c)
        >>> marks_to_replay([a.parent, b.parent], [x, c], ((True, False), ()),
        ...                 ((True, True), ())) == ([b], [])
        True
    """
    built_needs = {id(v): n for v, n in zip(leaves, built[0])}
    built_marks = {(i, j): (stops, starts) for i, j, stops, starts in built[1]}
    needs = {id(v): n for v, n in zip(leaves, now[0])}
    marked = {(i, j): (stops, starts) for i, j, stops, starts in now[1]}
    stop: list[Variable] = []
    start: list[Variable] = []
    for i, node in enumerate(nodes):
        took_part = any(built_needs.get(id(u), False) for u in node.inputs if u is not None)
        active = any(needs.get(id(u), False) for u in node.inputs if u is not None)
        for j, ref in enumerate(node._outputs):
            v = ref()
            if v is None:
                continue
            stops, starts = built_marks.get((i, j), (False, False))
            built_needs[id(v)] = not stops and (starts or took_part)
            if (i, j) in marked:
                stops, starts = marked[(i, j)]
                needs[id(v)] = not stops and (starts or active)
            elif took_part:
                if not active:
                    start.append(v)
                needs[id(v)] = True
            else:
                if active:
                    stop.append(v)
                needs[id(v)] = False
    return stop, start
