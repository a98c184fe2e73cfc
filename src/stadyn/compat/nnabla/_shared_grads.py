"""A backward through a leaf sharing an op output's gradient array, as NNabla 1.39's.

``v = h.get_unlinked_variable()`` (``unlinked()``, ``h.reshape(shape, unlink=True)``) gives a
leaf holding ``h``'s data *and* gradient arrays (``Variable::view``).  NNabla's backward runs
function by function into those arrays (``CgVariable::visit_function_backward``,
src/nbla/computation_graph/variable.cpp:870-930: highest rank first, among equal ranks the one
found first), and writes a function's input gradient by copying it where the input is an op
output seen for the first time, adding it otherwise (``get_accum``, variable.cpp:427-459).  So
with ``h`` and ``v`` both in the graph of a loss:

* what ``v``'s readers give is added into ``h``'s array; run after ``h``'s first reader (whose
  copy would wipe it) and before ``h``'s own function, it goes on down ``h``'s graph, as if
  ``v`` were ``h``: ``h = x*2``, ``loss = sum(h*3) + sum(v*5)`` gives ``h.g = v.g = 8`` and
  ``x.g = 16`` (case ``nnabla_views_35.unlinked__gradient_shared``);
* run after ``h``'s function (``h`` deeper in the graph than ``v``'s readers), it stays in
  the array (``h.g = v.g = 8``) and goes no further (``x.g = 6``);
* run before ``h``'s first reader, it is wiped (``h.g = v.g = 3``).

Stadyn's backward keeps what ``v``'s readers give apart (the leaf gets a zero gradient of its
own for the backward, :func:`backward_sharing`), then puts it where NNabla's order leaves it:
into the shared array, and down ``h``'s graph by a backward from ``h`` seeded with it (every
input's gradient then as NNabla's; an op output between ``h`` and the leaves gets that second
backward's part added to what the first gave it, NNabla's sum: case
``nnabla_views_35.unlinked__part_down_a_deeper_graph``).  A backward clearing buffers
(``clear_buffer=True``) where such a part goes down ``h``'s graph keeps them through the first
backward and clears them in the second, so the part reaches the leaves as in NNabla's one
backward (``x.g`` 32, case ``unlinked__gradient_shared``).  Readers of ``v`` falling in
different places of that order are taken as the last of them falls.

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> x = nn.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
    >>> h = x * 2.0
    >>> v = h.get_unlinked_variable(need_grad=True)
    >>> loss = F.sum(h * 3.0) + F.sum(v * 5.0)
    >>> loss.forward(); x.g = 0; loss.backward()
    >>> x.g.tolist(), v.g.tolist()
    ([16.0, 16.0], [8.0, 8.0])
"""

from __future__ import annotations

import contextlib
from typing import Callable

import torch

from ...graph import Variable as _Core, data_of, grad_of, keep_own_grad, topological_nodes
from ...graph import backward_order, drop_own_grad, mark_zeroing
from ._shared_arrays import members
from ...graph import IdentityKeyDict, IdentitySet

__all__ = ["note_sharing", "backward_sharing", "share_grad", "unshare_grad", "relink_held"]

# Leaves made to share an op output's arrays (get_unlinked_variable, reshape(unlink=True)):
# only a backward whose graph holds one of them looks further.
_SHARING: "IdentitySet[_Core]" = IdentitySet()


def note_sharing(leaf: _Core) -> None:
    """Record ``leaf`` as sharing another Variable's gradient array (a later backward through
    it follows NNabla's order: :func:`backward_sharing`).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> v = nn.Variable((2,)); note_sharing(v); v in _SHARING
        True
    """
    _SHARING.add(leaf)


# ``v.grad = h.grad``: v -> h, whose gradient array v holds (its data its own)
_GRAD_OF: "IdentityKeyDict[_Core, _Core]" = IdentityKeyDict()


def share_grad(v: _Core, h: _Core) -> bool:
    """Make ``v`` hold ``h``'s gradient array, as NNabla 1.39's ``v.grad = h.grad``
    (``set_grad``): a write through either shows in the other, and a backward through ``v``
    places what its readers give as for an unlinked view of ``h``
    (:func:`backward_sharing`; case ``nnabla_views_35.data_shared__own_gradient``).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> h = nn.Variable.from_numpy_array(np.zeros(2), need_grad=True) * 2.0
        >>> v = nn.Variable((2,), need_grad=True)
        >>> v.grad = h.grad; h.g[0] = 5.0; v.g.tolist()
        [5.0, 0.0]

    Returns False, sharing nothing, where ``v``'s value is of another floating dtype than
    ``h``'s gradient (torch's gradient of a leaf has its value's dtype).
    """
    g, value = grad_of(h), data_of(v)
    if g is None or (value is not None and value.is_floating_point() and value.dtype != g.dtype):
        return False
    _Core.grad.fset(v, g)
    _GRAD_OF[v] = h
    note_sharing(v)
    return True


def unshare_grad(v: _Core) -> None:
    """End ``v``'s ``v.grad = h.grad`` sharing, if any (another array assigned to ``v.grad``):
    ``v`` keeps a copy of the array as its own.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> h = nn.Variable.from_numpy_array(np.zeros(2), need_grad=True) * 2.0
        >>> v = nn.Variable((2,), need_grad=True); v.grad = h.grad
        >>> v.grad = nn.NdArray.from_numpy_array(np.ones(2, np.float32)); h.g.tolist(), v.g.tolist()
        ([0.0, 0.0], [1.0, 1.0])
    """
    h = _GRAD_OF.pop(v, None)
    if h is not None:
        g = grad_of(v)
        if g is not None and g is grad_of(h):
            _Core.grad.fset(v, g.detach().clone())


def relink_held(h: _Core) -> None:
    """``h``'s gradient was dropped (a solver's ``zero_grad``): each ``v`` of ``v.grad =
    h.grad`` and ``h`` get one new zero gradient, marked ``zeroing`` as after NNabla's
    ``zero_grad``, which zeroes their one array (a write through ``v.g`` then reaches the
    solver's ``update``).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> from stadyn.graph import release_grads
        >>> w = nn.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
        >>> w.g = np.array([3.0, 4.0], np.float32)
        >>> z = nn.Variable((2,), need_grad=True); z.grad = w.grad
        >>> release_grads([w]); z.g[0] = 7.0; w.g.tolist()
        [7.0, 0.0]
    """
    holders = [v for v, held in list(_GRAD_OF.items()) if held is h]
    if not holders:
        return
    g = grad_of(h)
    if g is None:
        value = data_of(h)
        g = torch.zeros(value.shape, dtype=value.dtype if value.is_floating_point()
                        else torch.float32, device=value.device)
        _Core.grad.fset(h, g)
        mark_zeroing(g)
    for v in holders:
        _Core.grad.fset(v, g)


def _partner(v: _Core, outputs: dict) -> _Core | None:
    """The op output of the graph (``outputs``: id -> Variable) whose arrays ``v`` shares."""
    held = _GRAD_OF.get(v)
    if held is not None:
        return held if id(held) in outputs else None
    target = v._alias
    while target is not None and target._alias is not None:
        target = target._alias
    if target is not None and id(target) in outputs:
        return target
    return next((m for m in members(v) if m is not v and id(m) in outputs), None)


def backward_sharing(root: _Core, run: Callable[[bool], None], clears: bool = False) -> None:
    """Run ``run(clear_buffer)`` (the backward from ``root``; ``clears``: whether the caller
    asked it to clear buffers) and place what the leaves sharing an op output's gradient array
    got from it as NNabla 1.39 does (see the module docstring).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> x = nn.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
        >>> h = F.add_scalar(x * 2.0, 0.0)
        >>> v = h.get_unlinked_variable(need_grad=True)
        >>> loss = F.sum(h * 3.0) + F.sum(v * 5.0)
        >>> loss.forward(); x.g = 0; loss.backward()   # v*5 runs after h's function here
        >>> x.g.tolist(), h.g.tolist()
        ([6.0, 6.0], [8.0, 8.0])
    """
    if not _SHARING or root.parent is None:
        run(clears)
        return
    try:
        _place_parts(root, run, clears)
    finally:
        _follow_grads()


def _follow_grads() -> None:
    """Give each ``v`` of ``v.grad = h.grad`` ``h``'s gradient array again where a backward gave
    ``h`` a new one (one array, as NNabla's)."""
    for v, h in list(_GRAD_OF.items()):
        g = grad_of(h)
        if g is not None and grad_of(v) is not g and tuple(g.shape) == tuple(v.shape):
            _Core.grad.fset(v, g)


def _place_parts(root: _Core, run: Callable[[bool], None], clears: bool) -> None:
    """:func:`backward_sharing` past its quick exit."""
    nodes = list(topological_nodes([root]))
    outputs = {id(o): o for n in nodes for o in n.outputs if o is not None}
    pairs = []
    for n in nodes:
        for u in n.inputs:
            if (u is not None and u.parent is None and u in _SHARING and u.need_grad
                    and all(u is not p[0] for p in pairs)):
                h = _partner(u, outputs)
                if h is not None:
                    pairs.append((u, h))
    if not pairs:
        run(clears)
        return
    pos = {id(n): i for i, n in enumerate(backward_order(root.parent, nodes,
                                                                   lambda u: u.need_grad))}
    kept = []
    try:
        with contextlib.ExitStack() as undo:
            for v, h in pairs:
                value = data_of(v)
                own = torch.zeros(tuple(v.shape), device=value.device,
                                  dtype=value.dtype if value.is_floating_point()
                                  else torch.float32)
                keep_own_grad(v)
                _Core.grad.fset(v, own)
                undo.callback(_relink, v, h)
                kept.append((v, h))
            # (a part going down h's graph needs h's buffers: they are cleared by that
            # second backward instead)
            run(clears and not any(_goes_down(v, h, nodes, pos) for v, h in pairs))
    except BaseException:
        for v, _ in kept:
            _taken.pop(id(v), None)     # (the backward raised: nothing to place)
        raise
    for v, h in kept:
        part = _taken.pop(id(v), None)
        if part is None:
            continue
        last, first_h = _last_reader(v, nodes, pos), _first_reader(h, nodes, pos)
        if last < first_h:
            continue                    # wiped by the copy of h's first reader
        buffer = grad_of(h)
        if buffer is None:
            continue
        buffer += part.reshape(buffer.shape).to(buffer.dtype)
        if _goes_down(v, h, nodes, pos):
            total = buffer.clone()
            below = _inner_grads(h)
            h.backward(part.reshape(buffer.shape).numpy().copy(), clear_buffer=clears)
            for o, before in below:     # (NNabla's one backward: the sum of both parts)
                after = grad_of(o)
                if after is not None and after is not before and after.shape == before.shape:
                    after += before
            buffer = grad_of(h)
            buffer.copy_(total)


def _last_reader(v: _Core, nodes: list, pos: dict) -> int:
    return max((pos[id(n)] for n in nodes if id(n) in pos and any(u is v for u in n.inputs)),
               default=-1)


def _first_reader(h: _Core, nodes: list, pos: dict) -> int:
    return min((pos[id(n)] for n in nodes if id(n) in pos and any(u is h for u in n.inputs)),
               default=-1)


def _goes_down(v: _Core, h: _Core, nodes: list, pos: dict) -> bool:
    """Whether the part ``v``'s readers give goes on down ``h``'s graph in NNabla's order: it
    is not wiped by ``h``'s first reader and arrives before ``h``'s function runs."""
    parent = pos.get(id(h.parent)) if h.parent is not None else None
    last = _last_reader(v, nodes, pos)
    return (parent is not None and h.need_grad and last >= _first_reader(h, nodes, pos)
            and last < parent)


def _inner_grads(h: _Core) -> list:
    """The op outputs strictly below ``h`` holding a gradient, each with a copy of it."""
    found = []
    for n in topological_nodes([h]):
        for o in n.outputs:
            if o is not None and o is not h:
                g = grad_of(o)
                if g is not None:
                    found.append((o, g.detach().clone()))
    return found


_taken: dict[int, torch.Tensor] = {}


def _relink(v: _Core, h: _Core) -> None:
    """Give ``v`` back the gradient array of ``h``, keeping what the backward left in its own
    (for :func:`backward_sharing` to place)."""
    own = grad_of(v)
    if own is not None:
        _taken[id(v)] = own.detach().clone()
    shared = grad_of(h)
    if v._alias is not None:
        drop_own_grad(v)
        t = v._data
        if t is not None and t.requires_grad:
            t.grad = shared
    elif shared is not None:
        _Core.grad.fset(v, shared.view(tuple(v.shape)))
