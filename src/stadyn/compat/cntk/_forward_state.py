"""What a CNTK Function's ``forward(keep_for_backward=...)`` keeps for its ``backward``
(:class:`ForwardState`, the values of its graph it computed: :func:`kept_buffers`, put back
for the backward by :func:`put_back` and given back after it by :func:`restore_values`, as
CNTK 2.7's backward computes with its own forward's values whatever ran since), the check of
the Variables a gradient is asked for, and the Values ``as_numpy=False`` gives; used by
:mod:`._function_runs`.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.input_variable(1, needs_gradient=True)
    >>> f = C.sqrt(x)
    >>> state, _ = f.forward({x: np.array([[4.0]], np.float32)}, keep_for_backward={f.output})
    >>> type(state).__name__, state.run
    ('ForwardState', 1)
"""

from __future__ import annotations

import numpy as np
import torch

from ...graph import Variable, shapes_changed, topological_nodes
from . import _graph as G
from ._adapt import unwrap
from ._values import Value

__all__ = ["ForwardState", "as_values", "check_differentiable", "kept_buffers", "put_back",
           "restore_values"]


def as_values(arrays: dict, sparse=()) -> dict:
    """CNTK's Value objects for ``{variable: array or list of sequences}`` (``as_numpy=False``
    of ``forward``, ``backward`` and ``grad``): sequences padded, their lengths kept; those of
    the keys in ``sparse`` marked sparse (``is_sparse``, as CNTK 2.7 holds them)."""
    values = {o: Value._holding(v) if isinstance(v, np.ndarray) else
              Value._of_sequences(v) if isinstance(v, list) else v for o, v in arrays.items()}
    for o in sparse:
        if isinstance(values[o], Value):
            values[o]._sparse = True
    return values


def check_differentiable(variables, what: str) -> None:
    """CNTK 2.7 differentiates w.r.t. parameters and inputs made with ``needs_gradient=True``
    only; asking for another Variable's gradient is its ValueError."""
    for v in variables:
        var = unwrap(v)
        kind = G.kind_of(var)
        if kind == "output":
            raise ValueError(f"Function.{what}: a gradient asked for {v!r}, which the graph "
                             "computes: CNTK gives gradients w.r.t. the graph's leaves (inputs "
                             "and parameters) only")
        if not var.need_grad:
            made = "a constant" if kind == "constant" else \
                "an input made without needs_gradient=True"
            raise ValueError(f"Function.{what}: a gradient asked for {v!r}, {made}: CNTK gives "
                             "gradients w.r.t. parameters and inputs made with "
                             "needs_gradient=True only")


def kept_buffers(roots: list[Variable]) -> list:
    """The values a kept forward over ``roots`` leaves in its graph, for its backward:
    ``(Variable, tensor, its version, a copy or None)`` of every op's output (a later run of
    another Function over shared nodes puts new tensors there) and of every input's data and
    lengths, with a copy (a later run feeds them in place).  Parameters and constants are
    not kept."""
    kept = []
    seen: set = set()
    for node in topological_nodes(roots):
        for v in node.inputs:
            if v.parent is None and id(v) not in seen and v in G.INPUTS:
                seen.add(id(v))
                for leaf in (v, v.sequence_lengths):
                    if leaf is not None and leaf._data is not None:
                        t = leaf._data
                        kept.append((leaf, t, t._version, t.detach().clone()))
        for v in node.outputs:
            if v is not None and v._data is not None:     # (an output no one holds: None)
                kept.append((v, v._data, v._data._version, None))
    return kept


def put_back(kept: list, function) -> list:
    """Put a kept forward's values back into its graph (CNTK 2.7's backward computes with
    its own forward's values whatever ran since); returns what :func:`restore_values` takes to
    give the later run's values back after the backward.  An op's output written over in
    place since cannot be put back: a RuntimeError rather than a gradient of other values."""
    undo: list = []
    try:
        for v, t, version, copy in kept:
            if v._data is not t:
                undo.append((v, v._data, None))
                if v.shape != tuple(t.shape):
                    shapes_changed()        # (a later run's other batch size)
                v._data = t
            if t._version != version:
                if copy is None:
                    raise RuntimeError(
                        f"Function '{function}' Backward: the values its forward kept were "
                        "written over in place by a later run of another Function over the "
                        "same nodes; run forward again before backward")
                undo.append((v, t, t.detach().clone()))
                with torch.no_grad():
                    t.copy_(copy)
    except BaseException:
        restore_values(undo)
        raise
    return undo


def restore_values(undo: list) -> None:
    """Give back the values :func:`put_back` replaced, last first."""
    for v, t, later in reversed(undo):
        if later is None:
            if v.shape != tuple(t.shape):
                shapes_changed()
            v._data = t
        else:
            with torch.no_grad():
                t.copy_(later)


class ForwardState:
    """What ``forward(keep_for_backward=...)`` hands to ``backward``."""

    __slots__ = ("function", "assignments", "flags", "run", "kept")

    def __init__(self, function, assignments: list, flags: list[bool] | None,
                 run: int, kept: list):
        self.function = function
        self.kept = kept                     # the run's values its backward reads
        self.assignments = assignments       # assign ops' writes, made after the backward
        self.flags = flags                   # the run's sequence-begin flags, if given
        self.run = run                       # its number among the Function's runs
