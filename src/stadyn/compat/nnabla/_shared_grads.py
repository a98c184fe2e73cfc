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
input's gradient then as NNabla's; an op output between ``h`` and the leaves holds that second
backward's part only, where NNabla's holds the sum).  Readers of ``v`` falling in different
places of that order are taken as the last of them falls.

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
import weakref
from typing import Callable

import torch

from ...graph import Variable as _Core, data_of, grad_of, keep_own_grad, topological_nodes
from ...graph import backward_order, drop_own_grad
from ._shared_arrays import members

__all__ = ["note_sharing", "backward_sharing"]

# Leaves made to share an op output's arrays (get_unlinked_variable, reshape(unlink=True)):
# only a backward whose graph holds one of them looks further.
_SHARING: "weakref.WeakSet[_Core]" = weakref.WeakSet()


def note_sharing(leaf: _Core) -> None:
    """Record ``leaf`` as sharing another Variable's gradient array (a later backward through
    it follows NNabla's order: :func:`backward_sharing`).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> v = nn.Variable((2,)); note_sharing(v); v in _SHARING
        True
    """
    _SHARING.add(leaf)


def _partner(v: _Core, outputs: dict) -> _Core | None:
    """The op output of the graph (``outputs``: id -> Variable) whose arrays ``v`` shares."""
    target = v._alias
    while target is not None and target._alias is not None:
        target = target._alias
    if target is not None and id(target) in outputs:
        return target
    return next((m for m in members(v) if m is not v and id(m) in outputs), None)


def backward_sharing(root: _Core, run: Callable[[], None]) -> None:
    """Run ``run()`` (the backward from ``root``) and place what the leaves sharing an op
    output's gradient array got from it as NNabla 1.39 does (see the module docstring).

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
        run()
        return
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
        run()
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
            run()
    except BaseException:
        for v, _ in kept:
            _taken.pop(id(v), None)     # (the backward raised: nothing to place)
        raise
    for v, h in kept:
        part = _taken.pop(id(v), None)
        if part is None:
            continue
        readers = [pos[id(n)] for n in nodes if id(n) in pos and any(u is v for u in n.inputs)]
        first_h = min((pos[id(n)] for n in nodes if id(n) in pos
                       and any(u is h for u in n.inputs)), default=-1)
        parent = pos.get(id(h.parent)) if h.parent is not None else None
        last = max(readers, default=-1)
        if last < first_h:
            continue                    # wiped by the copy of h's first reader
        buffer = grad_of(h)
        if buffer is None:
            continue
        buffer += part.reshape(buffer.shape).to(buffer.dtype)
        if parent is not None and last < parent and h.need_grad:
            total = buffer.clone()
            h.backward(part.reshape(buffer.shape).numpy().copy())
            buffer = grad_of(h)
            buffer.copy_(total)


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
