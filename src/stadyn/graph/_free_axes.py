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

An input may have free dimensions besides (CNTK's ``FreeDimension``: ``input_variable((-3,
3))``): axes of the sample whose length each minibatch gives, marked by
:func:`mark_free_dimensions` and read by :func:`free_dimensions`.  Until it is fed such an axis
has length 1 (an op that needs more, a convolution or pooling window, doubles it until the op
takes it: :func:`widen_free_dimensions`); the data fed replaces it whole (every sample of a
minibatch of one length), and a static plan is made anew for each new length as for each new
batch size.  Lengths fed for a run are stand-ins again (1) for a new graph whose op refuses
them (:func:`conform_for_op`), as a batch fed for a run is.

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

from typing import Callable, Sequence

import torch

from ._interpret import refresh_shapes
from ._subgraph import Subgraph
from ._tensors import data_of
from ._variable import Variable
from ._versions import layout_changed, shapes_changed
from ._identity_keys import IdentityKeyDict

__all__ = ["FREE_DIMENSION", "free_batch_input", "has_free_batch", "conform_unfed_inputs",
           "fed_for_a_run", "mark_free_dimensions", "free_dimensions", "widen_free_dimensions",
           "conform_for_op", "holds_free_stand_ins", "behind_free_dimensions", "FeedUndo",
           "free_dimensions_marks"]

#: CNTK's ``FreeDimension``: how a sample's shape shows a free dimension (CNTK 2.7 writes it as
#: ``-3``; a v2 model file stores its ``SIZE_MAX - 2``).  Every front end spells it so.
FREE_DIMENSION = -3

# Leaves marked by free_batch_input -> the placeholder buffer they were marked with and its
# version: an input still holding that buffer, never written, was never fed.
_FREE: "IdentityKeyDict[Variable, tuple[torch.Tensor, int]]" = \
    IdentityKeyDict()
# Leaves fed for a run (fed_for_a_run) -> the buffer fed and its version
_RUN_FED: "IdentityKeyDict[Variable, tuple[torch.Tensor, int]]" = \
    IdentityKeyDict()
# Leaves with free dimensions (mark_free_dimensions) -> those axes of their shape
_FREE_DIMS: "IdentityKeyDict[Variable, frozenset[int]]" = IdentityKeyDict()
# ... and the placeholder buffer they hold until fed, with its version (as _FREE's)
_FREE_DIMS_UNFED: "IdentityKeyDict[Variable, tuple[torch.Tensor, int]]" = \
    IdentityKeyDict()
# how many times mark_free_dimensions marked a leaf (free_dimensions_marks)
_MARKS = [0]
_WIDEST = 4096      # widen_free_dimensions doubles an unfed free dimension up to this length


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


def mark_free_dimensions(v: Variable, axes: Sequence[int]) -> Variable:
    """Mark the axes ``axes`` of the leaf ``v``'s shape (the batch axis is axis 0) as free
    dimensions: each minibatch fed gives their lengths, as CNTK's ``FreeDimension`` in an
    input's shape; returns ``v``.  CNTK's ``input_variable((C.FreeDimension, 3))`` makes
    ``(1, 1, 3)`` with axis 1 free.

    Example:
        >>> import torch, stadyn as sd
        >>> from stadyn.graph import free_dimensions, mark_free_dimensions
        >>> x = mark_free_dimensions(sd.Variable((1, 1, 3)), [1])
        >>> x.data = torch.ones(2, 5, 3)             # a minibatch of 2 samples of 5 rows
        >>> free_dimensions(x), (x * 2).shape
        (frozenset({1}), (2, 5, 3))
    """
    if v.parent is not None:
        raise ValueError("mark_free_dimensions: only a graph input (a leaf) has free dimensions")
    if any(not -v.ndim <= int(a) < v.ndim for a in axes):
        raise ValueError(f"mark_free_dimensions: axes {sorted(axes)} beyond the shape {v.shape}")
    marked = frozenset(int(a) % v.ndim for a in axes)
    if marked:
        _FREE_DIMS[v] = marked
        _MARKS[0] += 1
        data = data_of(v)
        _FREE_DIMS_UNFED[v] = (data, data._version)
    return v


def free_dimensions(v: Variable) -> frozenset:
    """The axes of the leaf ``v``'s shape marked free (:func:`mark_free_dimensions`); empty
    for any other Variable.

    Example:
        >>> import stadyn as sd
        >>> from stadyn.graph import free_dimensions
        >>> free_dimensions(sd.Variable((2, 3)))
        frozenset()
    """
    return _FREE_DIMS.get(v, frozenset())


def free_dimensions_marks() -> int:
    """How many times :func:`mark_free_dimensions` has marked a leaf so far: what is worked out
    from the leaves' free dimensions and kept (``compat.cntk``'s free axes of a value) holds
    while it is unchanged.

    Example:
        >>> import stadyn as sd
        >>> from stadyn.graph import free_dimensions_marks, mark_free_dimensions
        >>> before = free_dimensions_marks()
        >>> _ = mark_free_dimensions(sd.Variable((1, 1, 3)), [1])
        >>> free_dimensions_marks() - before
        1
    """
    return _MARKS[0]


def _free_dims_unfed(v: Variable) -> bool:
    record = _FREE_DIMS_UNFED.get(v)
    return record is not None and v._data is record[0] and record[0]._version == record[1]


def widen_free_dimensions(variables: Sequence[Variable], fits: Callable[[], bool]) -> bool:
    """Where ``variables`` are computed from inputs with free dimensions that no run feeds (never
    fed: their length a stand-in, 1; or fed by an earlier run only), double those dimensions'
    lengths (from 1) until ``fits()`` holds (a window fits in the values), re-inferring the
    values between; returns whether it fits.
    Where doubling does not make it fit (the axis that is too short is no free one, or an op
    between refuses), everything is left as it was.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import mark_free_dimensions, widen_free_dimensions
        >>> x = mark_free_dimensions(sd.Variable((1, 1, 1)), [2])
        >>> h = F.tanh(x)
        >>> widen_free_dimensions([h], lambda: h.shape[-1] >= 3), h.shape, x.shape
        (True, (1, 1, 4), (1, 1, 4))
    """
    if fits():
        return True
    sub = Subgraph(list(variables))
    # lengths an earlier run fed are stand-ins too (CNTK's inputs hold nothing between runs):
    # widened with the unfed ones, all from 1 where one of them is such a length
    stale = _run_fed_free_dims(sub)
    leaves = [u for u in sub.leaves if _free_dims_unfed(u)] + stale
    if not leaves:
        return False
    before = _free_lengths_before(leaves)
    if stale:
        _set_free_lengths(leaves, 1)
    length = max(u._shape[a] for u in leaves for a in _FREE_DIMS[u])
    try:
        while length < _WIDEST:
            length *= 2
            _set_free_lengths(leaves, length)
            refresh_shapes(sub.nodes, sub.leaves)
            if fits():
                return True
    except Exception:  # noqa: BLE001 - an op between refuses the lengths: as before, below
        pass
    _restore_free_lengths(before)
    refresh_shapes(sub.nodes, sub.leaves)
    return False


def _free_lengths_before(leaves: list) -> list:
    """What :func:`_restore_free_lengths` puts back: each leaf's shape, value and records."""
    return [(v, v._shape, v._data, _FREE_DIMS_UNFED.get(v), _FREE.get(v)) for v in leaves]


def _set_free_lengths(leaves: list, length: int) -> None:
    """Give the free dimensions of ``leaves`` the stand-in ``length`` (their values unfed)."""
    for v in leaves:
        v.reset_shape(tuple(length if k in _FREE_DIMS[v] else d for k, d in enumerate(v._shape)))
        record = (v._data, v._data._version)
        _FREE_DIMS_UNFED[v] = record                 # a stand-in until fed
        if v in _FREE:
            _FREE[v] = record


def _restore_free_lengths(before: list) -> None:
    for v, shape, data, stand_in, batch_record in before:
        v._shape, v._data = shape, data
        shapes_changed()
        if stand_in is not None:
            _FREE_DIMS_UNFED[v] = stand_in
        else:
            _FREE_DIMS_UNFED.pop(v, None)
        if batch_record is not None:
            _FREE[v] = batch_record


def behind_free_dimensions(v: Variable) -> bool:
    """Whether ``v`` is computed from an input with free dimensions (fed or not).

    Example:
        >>> import stadyn as sd
        >>> from stadyn.graph import behind_free_dimensions, mark_free_dimensions
        >>> x = mark_free_dimensions(sd.Variable((1, 1, 3)), [1])
        >>> behind_free_dimensions(x + 1), behind_free_dimensions(sd.Variable((1, 3)) + 1)
        (True, False)
    """
    if not _FREE_DIMS:          # (no input has free dimensions: no graph to walk)
        return False
    return any(u in _FREE_DIMS for u in Subgraph([v]).leaves)


def holds_free_stand_ins(v: Variable) -> bool:
    """Whether ``v`` is computed from an input whose free dimensions were never fed (their
    lengths stand-ins: a shape computed from them says nothing of a run's).

    Example:
        >>> import stadyn as sd
        >>> from stadyn.graph import holds_free_stand_ins, mark_free_dimensions
        >>> x = mark_free_dimensions(sd.Variable((1, 1, 3)), [1])
        >>> holds_free_stand_ins(x * 2), holds_free_stand_ins(sd.Variable((1, 3)))
        (True, False)
    """
    if not _FREE_DIMS_UNFED:    # (no input has unfed free dimensions: no graph to walk)
        return False
    return any(_free_dims_unfed(u) for u in Subgraph([v]).leaves)


def conform_for_op(inputs: Sequence[Variable], infer: Callable[[], object]):
    """What a static build tries when an op refuses the shapes of ``inputs``: the op's
    shape inference ``infer()`` once more after :func:`conform_unfed_inputs` (or, where that
    changes nothing, after the free dimensions an earlier run fed are stand-ins again), else after
    :func:`widen_free_dimensions` (an unfed free dimension too short for a window); its
    result, or None where neither helps."""
    if not _FREE and not _FREE_DIMS:    # (no free batch, no free dimensions: nothing to try)
        return None
    if conform_unfed_inputs(inputs) or _forget_run_free_dims(inputs):
        try:
            return infer()
        except Exception:  # noqa: BLE001 - the first error is the one reported
            return None
    found: list = []

    def fits() -> bool:
        try:
            found[:] = [infer()]
        except Exception:  # noqa: BLE001 - still too short: widen further
            return False
        return True
    if not any(holds_free_stand_ins(v) for v in inputs):
        return None
    return found[0] if widen_free_dimensions(inputs, fits) and found else None


def _never_fed(v: Variable) -> bool:
    placeholder, version = _FREE[v]
    return v._data is placeholder and placeholder._version == version


def fed_for_a_run(v: Variable) -> None:
    """Note that ``v``'s data was fed for one run (by :func:`stadyn.train.feed`, as CNTK's
    ``eval``, ``Trainer`` and readers feed their inputs): until something else writes it, a
    new graph that joins ``v`` with inputs fed by another minibatch may resize it (see
    :func:`conform_unfed_inputs`), a window over its free dimensions may widen them (with or
    without a batch axis: :func:`widen_free_dimensions`), and :class:`FeedUndo` copies none of
    its values.  Data a user put there (``x.d = ...``) stays.

    Example:
        >>> import torch, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import fed_for_a_run, free_batch_input
        >>> x, t = free_batch_input(sd.Variable((1, 4))), free_batch_input(sd.Variable((1, 4)))
        >>> x.data, t.data = torch.ones(5, 4), torch.ones(2, 4)
        >>> fed_for_a_run(t)                          # t's 2 rows were one run's
        >>> F.cross_entropy_with_softmax(F.tanh(x), t).shape, t.shape
        ((5, 1), (5, 4))
    """
    if v._data is not None:     # (every input a run feeds: its free dimensions too, and
        _RUN_FED[v] = (v._data, v._data._version)   # FeedUndo copies none of its values)


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
    before = _free_lengths_before(unfed)
    lengths_before = [(v, data_of(v._seq)) for v in unfed if v._seq is not None]
    changed = False
    for v in unfed:
        lead = (batch,)
        if v._seq is not None and len(v._shape) > 1:
            lead += (next(iter(steps)) if steps else v._shape[1],)
        shape = lead + v._shape[len(lead):]
        if shape == v._shape:
            continue
        stand_in = _free_dims_unfed(v)
        v.reset_shape(shape)
        _FREE[v] = (v._data, v._data._version)      # still a placeholder
        if stand_in:                                # (and its free dimensions' lengths)
            _FREE_DIMS_UNFED[v] = (v._data, v._data._version)
        if v._seq is not None:                 # every sequence as long as the padded axis
            lengths = v._seq
            lengths.data = torch.full((batch,), shape[1], dtype=torch.int64,
                                      device=data_of(lengths).device)
        changed = True
    if not changed:
        return False
    def undo():     # (an op upstream refuses the batch: leave things as they were)
        _restore_free_lengths(before)
        for v, lengths in lengths_before:
            v._seq.data = lengths
    return _refreshed_or_undone(sub, undo)


def _forget_run_free_dims(variables: Sequence[Variable]) -> bool:
    """Give the inputs behind ``variables`` whose free dimensions hold the lengths of an
    earlier run (:func:`fed_for_a_run`) stand-in lengths (1) again, as CNTK's inputs hold
    nothing between runs, and re-infer the values computed from them; returns whether that
    was done (everything is left as it was where an op between refuses)."""
    sub = Subgraph(list(variables))
    stale = _run_fed_free_dims(sub)
    if not stale:
        return False
    before = _free_lengths_before(stale)
    _set_free_lengths(stale, 1)
    # (an op upstream refuses the lengths: as they were)
    return _refreshed_or_undone(sub, lambda: _restore_free_lengths(before))


def _run_fed_free_dims(sub: Subgraph) -> list:
    """The inputs of ``sub`` whose free dimensions hold the lengths of an earlier run
    (:func:`fed_for_a_run`; lengths other than the stand-in 1)."""
    return [v for v in sub.leaves if v in _FREE_DIMS and _fed_for_a_run(v)
            and any(v._shape[a] != 1 for a in _FREE_DIMS[v])]


def _refreshed_or_undone(sub: Subgraph, undo: Callable[[], None]) -> bool:
    """Re-infer the values of ``sub`` after its inputs' shapes changed: True, or where an op
    between refuses them, ``undo()`` the change, re-infer again and False."""
    try:
        refresh_shapes(sub.nodes, sub.leaves)
    except Exception:  # noqa: BLE001 - refused: the caller's change is undone
        undo()
        try:
            refresh_shapes(sub.nodes, sub.leaves)
        except Exception:  # noqa: BLE001 - as inconsistent as before the attempt
            pass
        return False
    return True


_RECORDS = (_FREE, _RUN_FED, _FREE_DIMS_UNFED)     # the records a feed may change


class FeedUndo:
    """What feeding a run's inputs changed, put back where the run is refused after some of
    them were fed (a later input's data, or minibatch layouts that differ): CNTK's inputs
    hold nothing between runs, so a refused run must leave them as they were (their shapes,
    whether they were ever fed, a placeholder's zeros and data a user put there; a run's data
    may hold the refused run's values, which nothing reads).  :meth:`keep` each input before
    feeding it, :meth:`undo` on a refusal.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.graph import FeedUndo, free_batch_input
        >>> x = free_batch_input(sd.Variable((1, 3)))
        >>> y = sd.Variable.from_numpy_array(np.full((1, 3), 5.0))       # a user's data
        >>> undo = FeedUndo()
        >>> undo.keep(x), undo.keep(y)
        (None, None)
        >>> x.d, y.d = np.ones((1, 3)), np.ones((1, 3))     # fed in place ...
        >>> x.data = x.data.new_ones(4, 3)                  # ... or replaced
        >>> undo.undo()
        >>> x.shape, x.d.tolist(), y.d.tolist()
        ((1, 3), [[0.0, 0.0, 0.0]], [[5.0, 5.0, 5.0]])
    """

    __slots__ = ("_kept",)

    def __init__(self):
        self._kept: list = []

    def keep(self, v: Variable, in_place: bool = True) -> None:
        """Note ``v`` (a leaf, and its sequences' lengths) as it is, before it is fed; with
        ``in_place`` (a feed of its very shape writes its buffer) what its values were: a
        placeholder's zeros, or a copy of data a user put there (a run's data need none:
        CNTK's inputs hold nothing between runs, so nothing can read them)."""
        for u in (v, v._seq) if v._seq is not None else (v,):
            data = u._data
            records = [r.get(u) for r in _RECORDS]
            values = None
            if in_place and data is not None:
                current = [r is not None and r[0] is data and r[1] == data._version
                           for r in records]
                values = "run" if current[1] else "zeros" if current[0] or current[2] else \
                    data.detach().clone()
            self._kept.append((u, data, None if data is None else data._version, values,
                               u._shape, u._dtype, records))

    def undo(self) -> None:
        """Put every input kept back as it was (the last kept first)."""
        for u, data, version, values, shape, dtype, records in reversed(self._kept):
            if u._data is data and (data is None or data._version == version):
                continue                    # untouched
            if u._data is not data:         # replaced: the old buffer back
                u._data, u._shape, u._dtype = data, shape, dtype
                layout_changed()
                shapes_changed()
            if values is not None and data._version != version:     # written in place
                with torch.no_grad():
                    if isinstance(values, torch.Tensor):
                        data.copy_(values)
                    elif values == "zeros":
                        data.zero_()
            for table, record in zip(_RECORDS, records):
                if record is None:
                    table.pop(u, None)
                elif record[0] is data and record[1] == version and data is not None:
                    table[u] = (data, data._version)    # (current before: current again)
                else:
                    table[u] = record
        self._kept.clear()
