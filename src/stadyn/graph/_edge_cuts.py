"""Gradient edges left out of one differentiation: a reader's part of one input's gradient.

NNabla 1.39's ``nn.grad`` counts an input's gradient only at the functions it expands (those
below the graph Variables it binds the inputs to, python/src/nnabla/grad.py): where a
registered parameter is read by functions NNabla does not expand (another parametric
function call's Variable of it), their part is left out, while torch's autograd adds every
reader's part into the one tensor.  :func:`cut_edges` stops, for one differentiation, the
parts given ``(reader, input)`` pairs name: post-hooks on the reader's autograd nodes with an
edge into the input's tensor (or into the half copy the reader reads, in NNabla's
``cpu:half``) pass None on that edge.  :func:`cut_at` records such pairs for a static graph's
``grad`` node; :func:`~stadyn.graph.interpret` applies them around that node's run (so a
traced plan records the cut program), and the structure a plan is shared by keys them
(:func:`cut_key`).

Example (``w`` read by two functions; the first one's part left out):
    >>> import numpy as np, torch, stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     w = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
    ...     a = w * 2.0
    ...     y = F.sum(a) + F.sum(w * 3.0)
    >>> with cut_edges([(a.parent, w)], lambda v: v._data):
    ...     g, = torch.autograd.grad(y._data, w._data)
    >>> g.tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

import itertools
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import torch

from ._ordered_sums import _edges_into
from ._shared_values import value_holder
from ._variable import FunctionNode, Variable, topological_nodes

__all__ = ["cut_edges", "cut_at", "cuts_of", "cut_key", "run_cuts", "RunCuts", "dynamic_cuts",
           "CUTS", "read_as_one", "reading_group"]

Cut = tuple  # (reader FunctionNode, the Variable it reads)

# A static graph's grad node -> the (reader, input) parts its differentiation leaves out.
CUTS: "weakref.WeakKeyDictionary[FunctionNode, tuple]" = weakref.WeakKeyDictionary()


# A function reading a leaf -> the number of the group of functions that read it as one graph
# Variable (:func:`read_as_one`); an int, so no value holds its key.
_GROUPS: "weakref.WeakKeyDictionary[FunctionNode, int]" = weakref.WeakKeyDictionary()
_GROUP_NUMBERS = itertools.count()


def read_as_one(out: Variable, leaf: Variable) -> None:
    """Record that the functions below ``out`` reading ``leaf`` (or a view of its value) read
    it as one graph Variable:
    NNabla's parametric function hands ``apply_w`` one Variable of its parameter per call
    (``get_unlinked_variable``), which ``nn.grad`` binds or leaves out as a whole
    (:func:`reading_group`).  Called by a parametric function on what ``apply_w`` made.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> w = sd.Variable((2,), need_grad=True)
        >>> a, t = w * 2.0, F.tanh(w)
        >>> read_as_one(a + t, w)
        >>> reading_group(a.parent) == reading_group(t.parent) is not None
        True
    """
    if not isinstance(out, Variable) or out.parent is None:
        return
    group = next(_GROUP_NUMBERS)
    holder = value_holder(leaf)
    for node in topological_nodes([out]):
        if any(u is leaf or (u is not None and u.parent is None and value_holder(u) is holder)
               for u in node.inputs):
            _GROUPS[node] = group


def reading_group(node: FunctionNode) -> "int | None":
    """The group of functions ``node`` reads a leaf with as one graph Variable
    (:func:`read_as_one`), or None.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> reading_group(F.tanh(sd.Variable((2,))).parent) is None
        True
    """
    return _GROUPS.get(node) if _GROUPS else None


def cut_at(node: FunctionNode, cuts: Sequence[Cut]) -> None:
    """Have the static ``grad`` node ``node`` leave out the parts ``cuts`` names whenever it
    runs (:func:`~stadyn.graph.interpret`).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((2,), need_grad=True)
        >>> y = F.sum(x * 2.0)
        >>> d, = sd.grad(y, x)
        >>> cut_at(d.parent, [(y.parent.inputs[0].parent, x)])
        >>> len(cuts_of(d.parent))
        1
    """
    if cuts:
        CUTS[node] = tuple(cuts)


def cuts_of(node: FunctionNode) -> tuple:
    """The parts ``node`` leaves out (:func:`cut_at`), or ``()``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> cuts_of(F.tanh(sd.Variable((2,))).parent)
        ()
    """
    return CUTS.get(node, ()) if CUTS else ()


def cut_key(node: FunctionNode, where: dict) -> tuple:
    """``node``'s cuts by position (``where``: ``id`` of a node or leaf -> its position), for
    the structure a plan is shared by: two graphs alike but for their cuts run different
    programs.  A reader or input ``where`` does not hold keys as None.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> cut_key(F.tanh(sd.Variable((2,))).parent, {})
        ()
    """
    return tuple((where.get(id(r)), where.get(id(u))) for r, u in cuts_of(node))


@contextmanager
def cut_edges(cuts: Sequence[Cut], tensor_of: Callable[[Variable], "torch.Tensor | None"],
              copy_of: Callable[[Variable, torch.Tensor], "torch.Tensor | None"] | None = None
              ) -> Iterator[None]:
    """For the differentiations run inside: each ``(reader, u)`` of ``cuts`` gives no part of
    ``u``'s gradient (``tensor_of(v)``: ``v``'s tensor in the run; ``copy_of(u, t)``: the half
    copy of ``t`` the reader reads, if any).  A reader whose op ran without history, or
    has no edge of its own into the tensor, is passed over."""
    handles: list[Any] = []
    try:
        for reader, u in cuts:
            t = tensor_of(u)
            if t is None or not t.requires_grad:
                continue
            copy = copy_of(u, t) if copy_of is not None else None
            own = copy is not None and copy.requires_grad
            stops = {id(copy.grad_fn)} if own and copy.grad_fn is not None else set()
            for node, j in _edges_into(reader, copy if own else t, tensor_of, stops):
                handles.append(node.register_hook(_dropping(j)))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _dropping(j: int) -> Callable:
    def hook(grad_inputs, grad_outputs):
        return tuple(None if i == j else g for i, g in enumerate(grad_inputs))
    return hook


class RunCuts:
    """The cuts of the ``grad`` nodes of one static run (:func:`run_cuts`): the tensors of
    their readers kept as the run makes them (a run may let a value go once its last reader
    ran), and each such node run inside :func:`cut_edges`."""

    __slots__ = ("_readers", "_kept")

    def __init__(self, readers: set):
        self._readers = readers
        self._kept: dict = {}

    def cutting(self, node: FunctionNode) -> bool:
        """Whether ``node`` is a ``grad`` node with cuts."""
        return bool(cuts_of(node))

    def note(self, node: FunctionNode, env: dict) -> None:
        """Keep the tensors a reader of a cut read and made, from ``env`` (the run's, by
        :func:`~stadyn.graph.value_key`), as ``node`` ran."""
        if id(node) not in self._readers:
            return
        for u in node.inputs:
            if u is not None and (t := env.get(_key(u))) is not None:
                self._kept[_key(u)] = t
        for k, ref in enumerate(node._outputs):
            if (t := env.get((id(node), k))) is not None:
                self._kept[(id(node), k)] = t

    def run(self, node: FunctionNode, copies: Any, args: Sequence, kwargs: dict) -> Any:
        """``node``'s op run on ``args``, ``kwargs`` with its cuts (``copies``: the run's half
        copies, ``HalfCopies``)."""
        with cut_edges(cuts_of(node), lambda v: self._kept.get(_key(v)),
                       lambda v, t: copies.held(t)):
            return node.spec.impl(*args, **kwargs)


def _key(v: Variable) -> Any:
    return id(v) if v.parent is None else (id(v.parent), v._index)


def run_cuts(nodes: Sequence[FunctionNode]) -> RunCuts | None:
    """The cuts a static run of ``nodes`` applies, or None where no node of them has any.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> run_cuts([F.tanh(sd.Variable((2,))).parent]) is None
        True
    """
    if not CUTS:
        return None
    readers = {id(r) for n in nodes for r, _ in cuts_of(n)}
    return RunCuts(readers) if readers else None


def dynamic_cuts(cuts: Sequence[Cut]) -> Any:
    """:func:`cut_edges` for a dynamic graph: its Variables' own tensors (a view's, its
    holder's) and the half copies its ops read (``Variable._half_copy``, as
    ``_autograd_backward`` reads them).

    Example:
        >>> import numpy as np, torch, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     w = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
        ...     a = w * 2.0
        ...     y = F.sum(a) + F.sum(w * 3.0)
        ...     with dynamic_cuts([(a.parent, w)]):
        ...         g, = sd.grad(y, w)
        >>> g.d.tolist()
        [3.0, 3.0]
    """
    def copy_of(v: Variable, t: torch.Tensor) -> "torch.Tensor | None":
        entry = getattr(value_holder(v), "_half_copy", None)
        return entry[5] if entry is not None and entry[0] is t else None
    return cut_edges(cuts, lambda v: value_holder(v)._data, copy_of)
