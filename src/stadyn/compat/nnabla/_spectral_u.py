"""NNabla 1.39's spectral norm writes its ``u`` again in the backward.

NNabla's ``SpectralNorm`` keeps the ``u`` its forward started from (``u_orig_``) and, in its
backward, runs its forward again from that ``u``, which writes the iteration's result into ``u``
once more (src/nbla/function/generic/spectral_norm.cpp:294-311) -- only where ``w`` takes a
gradient (``propagate_down[0]``), and not for ``test=True``, which writes nothing.  The
functions' backwards run one by one in NNabla's order (highest rank first,
src/nbla/computation_graph/variable.cpp:870-930), so where one ``u`` is normalised by several
calls (a discriminator run on real and on fake images) the call NNabla runs last in the
backward -- the first made -- leaves its ``u``: after ``loss.forward(); loss.backward()`` the
``u`` is the first call's result where Stadyn's forward left the last call's.

:func:`record_starts` keeps, at a static ``forward()``, the ``u`` each spectral-norm node of the
graph starts from (the graph's ``u`` values walked in forward order, each node's result the
start of the next node on that ``u``); in a dynamic (``auto_forward``) graph each call keeps
the ``u`` it reads as it runs (``graph.run_before``), as NNabla's ``forward_impl`` does
(spectral_norm.cpp:255-263): a GAN's discriminator run on the real then the fake images, one
backward each, leaves after the real loss's backward the real call's ``u`` (case
``sn_u__dynamic_gan_backwards``).  :func:`write_after_backward` then writes each node's
``u`` again from its start, in NNabla's backward order, in either mode.

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> w = nn.Variable.from_numpy_array(np.array([[2.0, 1.0], [0.0, 1.0]]), need_grad=True)
    >>> u = nn.Variable.from_numpy_array(np.array([1.0, 0.0]))
    >>> loss = F.sum(F.spectral_norm(w, u) * 2) + F.sum(F.spectral_norm(w, u))
    >>> loss.forward(); np.round(u.d, 4)          # the second call's result
    array([0.9744, 0.2249], dtype=float32)
    >>> loss.backward(); np.round(u.d, 4)         # the first call's, as NNabla 1.39's
    array([0.9806, 0.1961], dtype=float32)
"""

from __future__ import annotations

import weakref
from typing import Sequence

from ...functions import spectral_norm
from ...graph import (FunctionNode, Variable, backward_order, data_of, get_auto_forward,
                      graph_version, run_before, topological_nodes)
from ...graph import IdentityKeyDict

__all__ = ["record_starts", "write_after_backward"]

_STARTS: "IdentityKeyDict[FunctionNode, object]" = IdentityKeyDict()
# roots' ids -> (their weak references, the graph version, their writing spectral-norm nodes):
# a graph's walk is paid once, not on every forward (a root's ancestors change only by a
# rewiring, which moves the graph version on)
_NODES_OF: dict = {}


def _writes_u(node: FunctionNode) -> bool:
    return node.spec is spectral_norm.spec and not node.attrs["test"]


def record_starts(roots: Sequence[Variable]) -> None:
    """Keep the ``u`` each writing spectral-norm node of ``roots``' graph starts from in the
    forward about to run (nothing in a dynamic graph, nor without such a node)."""
    if get_auto_forward():
        return
    nodes = _nodes_of(roots)
    if not nodes:
        return
    current: dict[int, object] = {}
    for n in nodes:
        w, u = n.inputs[0], n.inputs[1]
        start = current.get(id(u))
        if start is None:
            start = data_of(u).detach().clone()
        _STARTS[n] = start
        current[id(u)] = _iterated(n, data_of(w), start)


def _keep_dynamic_start(node: FunctionNode) -> None:
    """Keep the ``u`` a dynamic-mode spectral-norm call is about to read (and overwrite)."""
    if not node.attrs["test"]:
        _STARTS[node] = data_of(node.inputs[1]).detach().clone()


run_before(spectral_norm.spec, _keep_dynamic_start)


def _nodes_of(roots: Sequence[Variable]) -> list[FunctionNode]:
    """The writing spectral-norm nodes of ``roots``' graph, in forward order (cached)."""
    key = tuple(id(v) for v in roots)
    held = _NODES_OF.get(key)
    if held is not None and held[1] == graph_version() and all(
            r() is v for r, v in zip(held[0], roots)):
        return held[2]
    if len(_NODES_OF) > 256:                      # forget the graphs gone
        for k in [k for k, h in _NODES_OF.items() if any(r() is None for r in h[0])]:
            del _NODES_OF[k]
    nodes = [n for n in topological_nodes(roots) if _writes_u(n)]
    _NODES_OF[key] = (tuple(weakref.ref(v) for v in roots), graph_version(), nodes)
    return nodes


def _iterated(node: FunctionNode, w, start):
    """``u`` after ``node``'s power iteration from ``start`` (the op's own impl, on a copy)."""
    a = node.attrs
    u = start.clone()
    spectral_norm.spec.impl(w.detach(), u, a["dim"], a["itr"], a["eps"], False)
    return u


def _backward_order(root: Variable) -> list[FunctionNode]:
    """The functions a backward from ``root`` runs, in NNabla 1.39's order: highest rank first
    (one more than its inputs' parents' highest), among equal ranks the one found first."""
    if root.parent is None:
        return []
    return backward_order(root.parent, topological_nodes([root]),
                          lambda v: v.need_grad)


def write_after_backward(root: Variable) -> None:
    """Write each spectral-norm node's ``u`` again from the start its last forward kept (a
    static ``forward()``'s, or the dynamic call's), in the order NNabla 1.39's backward from
    ``root`` runs them (a node whose ``w`` takes no gradient writes nothing, as NNabla's)."""
    if not _STARTS:
        return
    # the nodes that could write (a start kept: only for a writing node, test=False; w taking
    # a gradient), found among the live spectral-norm nodes alone (not through ``attrs``, which
    # binds the call's arguments again: 0.5 ms): none, and the graph is not walked at all
    writing = {id(n) for n in list(_STARTS.keys()) if n.inputs[0].need_grad}
    if not writing:
        return
    for n in _backward_order(root):
        if id(n) not in writing:
            continue
        start = _STARTS.get(n)
        if start is None:
            continue
        w, u = data_of(n.inputs[0]), data_of(n.inputs[1])
        if w is None or u is None:      # (a buffer a clearing backward let go)
            continue
        u.copy_(_iterated(n, w, start).reshape(u.shape))
