"""Inputs whose batch axis takes its size from the data fed (CNTK's dynamic axes).

A static graph is built on example shapes: an input made by CNTK's ``input_variable`` is
``(1, *sample)`` until it is fed (a sequence input ``(1, 1, *sample)``), and a value computed
from an input that was fed carries the batch it was fed (its shapes are brought up to date
when a plan is built, ``refresh_shapes``).  A new graph that joins the two — a metric built
after a minibatch was trained, on the model's output and a new label input — would then ask an
op to combine ``(5, 5, 3)`` with ``(1, 1, 3)``.  CNTK's axes are free, so the build succeeds
there.  Here, when an op's shape inference fails (:func:`~stadyn.graph.apply`), the inputs of
this kind that were never fed take the batch (and sequence length) of the ones that were, the
values computed from them are re-inferred, and the op is inferred once more: the error stays
if that does not help.  An input a trainer or an evaluation fed (:func:`fed_by_call`: the
next call feeds it again) is resized too where the inputs fed disagree (a model evaluated on
one sample, then a loss built on it and a label input a trainer last fed a minibatch): all
take the first one's batch.  An input fed by hand (``x.d = ...``) is never resized, nor is an
NNabla-style Variable (fixed shape); nothing changes for a graph whose ops accept their
inputs.

Example:
    >>> import numpy as np, torch, stadyn as sd, stadyn.functions as F
    >>> from stadyn.graph import free_batch_input
    >>> x, t = free_batch_input(sd.Variable((1, 4))), free_batch_input(sd.Variable((1, 4)))
    >>> x.data = torch.ones(5, 4)                  # fed a batch of 5
    >>> h = F.tanh(x)
    >>> F.cross_entropy_with_softmax(h, t).shape, t.shape     # t, never fed, takes the batch
    ((5, 1), (5, 4))
"""

from __future__ import annotations

import weakref
from typing import Sequence

import torch

from ._interpret import refresh_shapes
from ._subgraph import Subgraph
from ._tensors import data_of
from ._variable import Variable

__all__ = ["free_batch_input", "has_free_batch", "conform_unfed_inputs", "fed_by_call"]

# Leaves marked by free_batch_input -> the placeholder buffer they were marked with and its
# version: an input still holding that buffer, never written, was never fed.
_FREE: "weakref.WeakKeyDictionary[Variable, tuple[torch.Tensor, int]]" = \
    weakref.WeakKeyDictionary()
# Free inputs a trainer or an evaluation fed -> the buffer it left and its version
_CALLED: "weakref.WeakKeyDictionary[Variable, tuple[torch.Tensor, int]]" = \
    weakref.WeakKeyDictionary()


def free_batch_input(v: Variable) -> Variable:
    """Mark the leaf ``v``, not fed yet, as an input whose batch axis (axis 0; and axis 1 for
    a sequence input) is sized by the data it is fed, as CNTK's inputs are; returns ``v``.
    CNTK's ``input_variable`` and ``sd.sequence.input_variable`` make such inputs.

    Example:
        >>> import stadyn as sd
        >>> from stadyn.graph import free_batch_input, has_free_batch
        >>> x, y = free_batch_input(sd.Variable((1, 3))), sd.Variable((1, 3))
        >>> has_free_batch(x), has_free_batch(y)
        (True, False)
    """
    if v.parent is not None:
        raise ValueError("free_batch_input: only a graph input (a leaf) has a free batch axis")
    data = data_of(v)
    _FREE[v] = (data, data._version)
    return v


def has_free_batch(v: Variable) -> bool:
    """Whether ``v`` is an input whose batch axis is sized by the data fed
    (:func:`free_batch_input`)."""
    return v in _FREE


def _never_fed(v: Variable) -> bool:
    placeholder, version = _FREE[v]
    return v._data is placeholder and placeholder._version == version


def fed_by_call(v: Variable) -> None:
    """Note that a call which feeds its inputs on every call (a trainer's minibatch, an
    evaluation) has just fed ``v``: if ``v`` is a free-batch input, a later build may resize it
    where inputs fed with different batches meet (see the module docstring); an input fed by
    hand keeps its data.  Does nothing for other Variables.

    Example:
        >>> import torch, stadyn as sd
        >>> from stadyn.graph import free_batch_input, fed_by_call
        >>> x = free_batch_input(sd.Variable((1, 3)))
        >>> x.data = torch.ones(5, 3); fed_by_call(x)
    """
    if v in _FREE:
        data = v._data
        _CALLED[v] = (data, data._version)


def _held(v: Variable) -> bool:
    """Fed, and not by a call that feeds it again (or written since)."""
    record = _CALLED.get(v)
    return record is None or v._data is not record[0] or record[0]._version != record[1]


def conform_unfed_inputs(variables: Sequence[Variable]) -> bool:
    """Give the free-batch inputs behind ``variables`` that were never fed the batch (and
    sequence length) of those that were, and re-infer the values computed from them; returns
    whether anything changed (see the module docstring).  Inputs fed by hand must agree on
    their batch, and set it; inputs fed by calls (:func:`fed_by_call`) that disagree all take
    the first one's."""
    sub = Subgraph(list(variables))
    free = [v for v in sub.leaves if v in _FREE and v._shape]
    fed = [v for v in free if not _never_fed(v)]
    if not fed:
        return False
    held = [v for v in fed if _held(v)]
    reference = held or fed
    batches = {v._shape[0] for v in reference}
    steps = {v._shape[1] for v in reference if v._seq is not None and len(v._shape) > 1}
    if len(steps) > 1:
        return False
    if len(batches) != 1:
        if held:
            return False
        batches = {fed[0]._shape[0]}    # fed by calls with different batches: the first's
    kept = set(map(id, held))
    unfed = [v for v in free if id(v) not in kept]     # and those fed by calls
    batch = batches.pop()
    before = [(v, v._shape, v._data, _FREE[v], data_of(v._seq) if v._seq is not None else None)
              for v in unfed]
    changed = False
    for v in unfed:
        lead = (batch,)
        if v._seq is not None and len(v._shape) > 1:     # one fed keeps its steps
            lead += (next(iter(steps)) if steps and _never_fed(v) else v._shape[1],)
        shape = lead + v._shape[len(lead):]
        if shape == v._shape:
            continue
        v.reset_shape(shape)
        _FREE[v] = (v._data, v._data._version)      # a placeholder (a fed value is dropped)
        if v._seq is not None:                 # every sequence as long as the padded axis
            lengths = v._seq
            lengths.data = torch.full((batch,), shape[1], dtype=torch.int64,
                                      device=data_of(lengths).device)
        changed = True
    if not changed:
        return False
    try:
        refresh_shapes(sub.nodes, sub.leaves)
    except Exception:  # noqa: BLE001 - an op upstream refuses the batch: leave things as they were
        for v, shape, data, record, lengths in before:
            v._shape, v._data, _FREE[v] = shape, data, record
            if lengths is not None:
                v._seq.data = lengths
        try:
            refresh_shapes(sub.nodes, sub.leaves)
        except Exception:  # noqa: BLE001 - as inconsistent as before the attempt
            pass
        return False
    return True
