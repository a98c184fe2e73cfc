"""A backward through torch's autograd history: that of a dynamic graph (``auto_forward``) or
of an eager plan's run (:class:`~stadyn.graph.EagerPlan`), honouring the ``need_grad`` marks
set since the ops ran as NNabla does (a late leaf's ops run again: ``_late_leaves.py``; a stop
set since cuts the history: ``cut_stopped``), keeping the intermediates' gradients NNabla
keeps, and checking the gradients under ``check_numerics``.  A leaf written between the ops'
run and the backward (``w.d = ...``) is read with its new value, as NNabla 1.39's backward
reads it (``_written_leaves.py``); where torch's autograd still holds an old value it cannot
give back (a leaf written between two ops that read it) the backward is refused naming the
leaf and the op that read it (:func:`_written_leaf`).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> w = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
    >>> with sd.auto_forward():
    ...     y = F.sum(w * w)
    >>> autograd_backward(y, y.data, 1, False)
    >>> w.g.tolist()
    [2.0, 4.0]
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Sequence

import torch

from .._errors import StadynError
from ._backward_seed import backward_seed, input_seeds, is_unit_seed
from ._grad_marks import cut_stopped
from ._intermediate_grads import (intermediates_of, retain_intermediate_grads,
                                  take_retained_grads)
from ._late_leaves import run_again_for_late_leaves
from ._numerics import _depth as _checking
from ._ordered_sums import ordered_sums
from ._plan import check_gradients
from ._reader_order import readers_before
from ._shared_values import value_holder
from ._subgraph import Subgraph
from ._variable import topological_nodes, Variable
from ._written_leaves import written_leaves

__all__ = ["autograd_backward"]


def autograd_backward(var: Variable, data: torch.Tensor, grad: Any, clear_buffer: bool) -> None:
    """Backward from ``var`` (its value ``data``, which has autograd history) seeded with
    ``grad``, by torch's autograd (see the module docstring; the example there)."""
    seed = backward_seed(var, grad, data)
    nodes = topological_nodes([var])
    inters = intermediates_of(var, nodes)
    # a leaf set need_grad=True after an op that took part used it: that op runs again
    late = run_again_for_late_leaves(_nodes_of(var, inters), data)
    cuts = cut_stopped(inters)        # need_grad=False set after its consumers ran
    with contextlib.ExitStack() as stack:
        # NNabla's reader order, arranged before retain_intermediate_grads frees the values
        # (clear_buffer) it finds the readers' autograd nodes by; left last (the stack is last
        # in, first out), given the exception if any: the held-back readers' backwards run only
        # after a backward that ran through, and one raising leaves nothing below undone.  A
        # view's value (a registered parameter, ``x.data = y.data``) is its holder's tensor.
        try:
            stack.enter_context(readers_before(var.parent, nodes,
                                               lambda v: value_holder(v)._data))
            stack.enter_context(ordered_sums(var.parent, nodes,
                                             lambda v: value_holder(v)._data, _half_copy,
                                             accumulate=True))
        except BaseException:
            _undo(cuts, late)           # not registered yet: the cut hooks would stay
            raise
        stack.callback(_undo, cuts, late)
        # leaves written since the ops ran: read with their new values, as NNabla's backward
        stack.enter_context(written_leaves(nodes))
        kept = retain_intermediate_grads(inters, clear_buffer, nodes)
        # A scalar's seed of 1 is the one torch makes itself.  Passed as a tensor, it would
        # make the first backward import sympy (torch.autograd checks a given seed's shape with
        # symbolic_shapes): 0.7-1.7 s of a small program's start (docs/performance.md,
        # Start-up).
        extra = [(v, t) for v, t in input_seeds(var).values()  # (sink(one_input_grad=False))
                 if v._data is not None and v._data.requires_grad]
        try:
            if extra:
                torch.autograd.backward([data, *(v._data for v, _ in extra)],
                                        [seed, *(t for _, t in extra)],
                                        retain_graph=not clear_buffer)
            else:
                torch.autograd.backward(data, None if is_unit_seed(grad, data) else seed,
                                        retain_graph=not clear_buffer)
        except RuntimeError as exc:
            refused = _written_leaf(exc, nodes)
            if refused is None:
                raise
            raise refused from exc
    if late is not None:
        late.finish()
    take_retained_grads(kept)
    if _checking[0]:
        sub = Subgraph([var])
        grad_leaves = [v for v in sub.leaves if v._data is not None and v._data.requires_grad]
        check_gradients(sub.nodes, sub.leaves, grad_leaves,
                        [v._data.grad for v in grad_leaves], var, seed)


def _half_copy(v: Variable, t: torch.Tensor) -> torch.Tensor | None:
    """The half copy of ``t`` the dynamic ops made on ``v`` read (``Variable._half_copy``,
    kept by ``_precision.HalfCopies``), if any."""
    entry = getattr(v, "_half_copy", None)
    return entry[5] if entry is not None and entry[0] is t else None


def _undo(cuts: Sequence[Any], late: Any) -> None:
    """Remove the cut hooks of ``cut_stopped`` and close the late leaves' run again."""
    for handle in cuts:
        handle.remove()
    if late is not None:
        late.close()


def _nodes_of(var: Variable, inters: Sequence[Variable]) -> list:
    """The nodes that computed ``var`` and ``inters``, each once."""
    return list({id(v.parent): v.parent for v in (var, *inters)}.values())


# torch's words for a saved tensor changed in place since: its type, shape and version
_WRITTEN = re.compile(r"modified by an inplace operation: \[\S+ \[([0-9, ]*)\]\] is at version "
                      r"(\d+)")


def _written_leaf(exc: RuntimeError, nodes: Sequence) -> StadynError | None:
    """The error for torch's refusal ``exc`` of a backward whose saved tensor changed in place
    since the ops ran, where that tensor is a leaf of ``nodes`` (its shape and version as torch
    names them): it names the leaf (a parameter by its path), the op that read it and the
    user's line that made the op; None where ``exc`` is not that refusal or no leaf fits."""
    found = _WRITTEN.search(str(exc))
    if found is None:
        return None
    shape = tuple(int(n) for n in found.group(1).split(",") if n.strip())
    version = int(found.group(2))
    for node in nodes:
        for u in node.inputs:
            if not isinstance(u, Variable) or u.parent is not None:
                continue
            t = value_holder(u)._data
            if t is None or tuple(t.shape) != shape or t._version != version:
                continue
            return _refusal(u, node)
    return None


def _refusal(u: Variable, node: Any) -> StadynError:
    """The error for a backward through ``node`` that would read the old value of the leaf
    ``u``, written since ``node`` ran in dynamic mode."""
    name = repr(u.graph_name) if u.graph_name else f"of shape {tuple(u.shape)}"
    line = node.where
    return StadynError(
        f"backward: the leaf Variable {name} read by {node.spec.name}"
        + (f" (created at {line})" if line else "")
        + " was written (.d, .data) after that op ran in dynamic mode; the backward "
        "would need its new value, which NNabla 1.39 reads, and torch's autograd kept "
        "only the old: run the forward again after writing it")
