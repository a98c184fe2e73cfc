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
if that does not help.  Inputs fed by different runs (a model evaluated on one query after
training, then a criterion built anew on it and the label input) are resized the same way:
CNTK's inputs hold nothing between runs; data a user put in an input is never resized.
Nothing changes for a graph whose ops accept their inputs, and an NNabla-style Variable (fixed
shape) is never resized.

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

__all__ = ["free_batch_input", "has_free_batch", "conform_unfed_inputs", "fed_for_a_run"]

# Leaves marked by free_batch_input -> the placeholder buffer they were marked with and its
# version: an input still holding that buffer, never written, was never fed.
_FREE: "weakref.WeakKeyDictionary[Variable, tuple[torch.Tensor, int]]" = \
    weakref.WeakKeyDictionary()
# Free inputs fed for a run (fed_for_a_run) -> the buffer fed and its version
_RUN_FED: "weakref.WeakKeyDictionary[Variable, tuple[torch.Tensor, int]]" = \
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


def fed_for_a_run(v: Variable) -> None:
    """Note that ``v``'s data was fed for one run (by :func:`stadyn.train.feed`, as CNTK's
    ``eval``, ``Trainer`` and readers feed their inputs): until something else writes it, a
    new graph that joins ``v`` with inputs fed by another minibatch may resize it (see
    :func:`conform_unfed_inputs`).  Data a user put there (``x.d = ...``) stays.

    Example:
        >>> import torch, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import fed_for_a_run, free_batch_input
        >>> x, t = free_batch_input(sd.Variable((1, 4))), free_batch_input(sd.Variable((1, 4)))
        >>> x.data, t.data = torch.ones(5, 4), torch.ones(2, 4)
        >>> fed_for_a_run(t)                          # t's 2 rows were one run's
        >>> F.cross_entropy_with_softmax(F.tanh(x), t).shape, t.shape
        ((5, 1), (5, 4))
    """
    if v in _FREE:
        _RUN_FED[v] = (v._data, v._data._version)


def _fed_for_a_run(v: Variable) -> bool:
    record = _RUN_FED.get(v)
    return record is not None and v._data is record[0] and v._data._version == record[1]


def conform_unfed_inputs(variables: Sequence[Variable]) -> bool:
    """Give the free-batch inputs behind ``variables`` that were never fed the batch (and
    sequence length) of those that were, and re-infer the values computed from them; returns
    whether anything changed (see the module docstring).  Nothing changes unless the inputs
    that were fed agree on their batch size, or those that disagree were fed for a run
    (:func:`fed_for_a_run`): those then take the size of the first input a user fed (or of
    the first of them)."""
    sub = Subgraph(list(variables))
    free = [v for v in sub.leaves if v in _FREE and v._shape]
    unfed = [v for v in free if _never_fed(v)]
    fed = [v for v in free if not _never_fed(v)]
    if not fed:
        return False
    batches = {v._shape[0] for v in fed}
    steps = {v._shape[1] for v in fed if v._seq is not None and len(v._shape) > 1}
    if len(batches) != 1 or len(steps) > 1:
        held = [v for v in fed if not _fed_for_a_run(v)]
        ref = (held or fed)[0]
        if any(v._shape[0] != ref._shape[0] for v in held):
            return False
        batches = {ref._shape[0]}
        steps = {ref._shape[1]} if ref._seq is not None and len(ref._shape) > 1 else set()
        unfed = [v for v in free if v is not ref and (v in unfed or _fed_for_a_run(v))]
    if not unfed:
        return False
    batch = batches.pop()
    before = [(v, v._shape, v._data, _FREE[v], data_of(v._seq) if v._seq is not None else None)
              for v in unfed]
    changed = False
    for v in unfed:
        lead = (batch,)
        if v._seq is not None and len(v._shape) > 1:
            lead += (next(iter(steps)) if steps else v._shape[1],)
        shape = lead + v._shape[len(lead):]
        if shape == v._shape:
            continue
        v.reset_shape(shape)
        _FREE[v] = (v._data, v._data._version)      # still a placeholder
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
