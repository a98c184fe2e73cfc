"""``F.mean_subtraction``'s counter ``t`` as NNabla 1.39 keeps it: its ``MeanSubtraction``
casts ``t``'s array to int32 in place at each forward that updates the running mean
(``src/nbla/function/generic/mean_subtraction.cpp``, ``forward_impl_batch``:
``cast_data_and_get_pointer<int>``), so ``t.d`` reads float32 ``[0.]`` (``PF.mean_subtraction``'s
zeros) until the first forward and int32 after it, a float written into it later is truncated
(``t.d = 5.5`` reads ``[5]``), a float array given to it (``t.data = nd``) is cast again at the
next forward, the count is exact past 2**24 (a float32 counter stops at 16777216), and
``nn.save_parameters`` writes an int32 dataset (case
``nnabla_fidelity_26.mean_subtraction__int32_counter``).

Here the call (:func:`counting_in_int32`) casts ``t``'s array before the op runs in the dynamic
mode, where the call is the forward (an NdArray ``t`` of NNabla's imperative mode is cast
itself), and records the node in the static mode;
:func:`cast_counters` casts the ``t`` of each recorded node of a graph before its forward
(``Variable.forward``, ``nn.forward_all``).  The catalog op counts in ``t``'s dtype.  ``t``
given as a view (``PF.mean_subtraction``'s, NNabla's ``get_parameter_or_create`` hands one out)
is cast in the Variable holding its array, so the registered parameter reads int32 too.

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> x = nn.Variable.from_numpy_array(np.ones((2, 3), np.float32))
    >>> mean = nn.Variable.from_numpy_array(np.zeros(3, np.float32))
    >>> t = nn.Variable.from_numpy_array(np.array([2.7], np.float32))
    >>> y = F.mean_subtraction(x, mean, t)
    >>> t.d.dtype, y.forward(), t.d.dtype, t.d.tolist()
    (dtype('float32'), None, dtype('int32'), [3])
"""

from __future__ import annotations

import functools
import inspect
import weakref
from typing import Any, Callable, Sequence

import numpy as np
import torch

from ...graph import (Variable as _Core, data_of, get_auto_forward, graph_version,
                      topological_nodes, value_holder)
from ._ndarray import NdArray
from ._shared_arrays import follow
from ...graph import IdentityKeyDict

__all__ = ["counting_in_int32", "cast_counters"]

# Each static mean_subtraction node that updates its running mean -> its counter Variable.
_COUNTED: "IdentityKeyDict[Any, Any]" = IdentityKeyDict()
# How many nodes were recorded in _COUNTED so far (a graph may hold a new one after a record).
_RECORDED = [0]
# The roots of a graph cast_counters saw (their ids) -> weak references to them, the graph
# version and record count then, and weak references to the counted nodes in their graph.
_FOUND: dict = {}
_FOUND_MAX = 256


def _cast(t: Any) -> None:
    """Cast the array the Variable ``t`` reads to int32 in place, as NNabla's forward does (a
    fraction truncated toward zero, as a C cast)."""
    if isinstance(t, NdArray):          # (imperative: the NdArray itself, as NNabla's)
        if t.dtype != np.int32:
            t.cast(np.int32)
        return
    if not isinstance(t, _Core):
        return
    holder = value_holder(t)
    held = data_of(holder)
    if held is None or held.dtype == torch.int32 or holder.parent is not None:
        return
    _Core.data.fset(holder, held.detach().to(torch.int32))
    follow(holder)


def counting_in_int32(name: str, fn: Callable) -> Callable:
    """``fn`` (NNabla's function ``name``) whose counter ``t`` is cast to int32 when it runs,
    for ``mean_subtraction`` with ``update_running_mean`` (the module docstring); ``fn``
    itself for any other function.

    Example:
        >>> import stadyn.functions as sdF
        >>> counting_in_int32("relu", sdF.relu) is sdF.relu
        True
    """
    if name != "mean_subtraction":
        return fn
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        t = bound.arguments.get("t")
        updates = bool(bound.arguments.get("update_running_mean", True))
        if updates and (get_auto_forward() or isinstance(t, NdArray)):
            _cast(t)
        y = fn(*args, **kwargs)
        node = getattr(y, "parent", None)
        if updates and node is not None and isinstance(t, _Core):
            _COUNTED[node] = t
            _RECORDED[0] += 1
        return y
    return call


def cast_counters(roots: Sequence[Any]) -> None:
    """Before a forward of the graph of ``roots``: cast the counter of each ``mean_subtraction``
    in it to int32, as NNabla's forward of it does.

    Example:
        >>> cast_counters([])
    """
    if not _COUNTED:
        return
    roots = list(roots)
    key = tuple(id(r) for r in roots)
    state = (graph_version(), _RECORDED[0])
    hit = _FOUND.get(key)
    if hit is not None and hit[1] == state and all(
            ref() is r for ref, r in zip(hit[0], roots)):
        counted = [node() for node in hit[2]]
    else:
        # a graph's nodes change only by a rewiring (the graph version) and a counted node
        # only by a new record: the walk is done again after either, not at every forward
        nodes = {id(n) for n in topological_nodes(roots)}
        counted = [node for node in list(_COUNTED.keys()) if id(node) in nodes]
        try:
            refs = tuple(weakref.ref(r) for r in roots)
        except TypeError:       # (a root that takes no weak reference: walked every time)
            refs = None
        if refs is not None:
            if len(_FOUND) >= _FOUND_MAX:
                _FOUND.clear()
            _FOUND[key] = (refs, state, [weakref.ref(node) for node in counted])
    for node in counted:
        t = _COUNTED.get(node) if node is not None else None
        if t is not None:
            _cast(t)
