"""CNTK 2.7's checked mode (``cntk.debugging.set_checked_mode``): while a graph runs, each
op's output is checked for NaN (forward) and so is the gradient it gives each input that needs
one (backward); the first op found is CNTK's RuntimeError
``"<uid> <OpType> operation unexpectedly produced NaN values."`` (``... NaN gradients on its
input <uid>.`` in the backward pass), raised before any parameter is updated.  Infinities pass;
so do NaNs in a sequence's padding (CNTK zeroes its gaps before looking).

Where CNTK checks: ``Source/ComputationNetworkLib/ComputationNode.cpp:701-716``
(``EndForwardProp``) and ``:756-772`` (``EndBackprop``), both under the network's
``trackGapNans``, which ``Source/CNTKv2LibraryDll/CompositeFunction.cpp:1431`` sets from the
checked mode when a Function's network is built.  So the switch is read once per Function, at
its first run (and again where a Function that only evaluated is first run for a backward,
which builds its network anew: ``CompositeFunction.cpp:1470``), and once per Trainer, at its
first minibatch: a Function that ran before ``set_checked_mode(True)`` is not checked, one that
ran under it stays checked after ``set_checked_mode(False)``.  :class:`CheckedLatch` keeps
that reading.

Stadyn adds, on the lines after CNTK's message, the user's line that built the op.  Off (the
default), a run costs one attribute test.
"""

from __future__ import annotations

import contextlib

import torch

from ...graph import check_numerics
from . import _graph as G

__all__ = ["CheckedModeError", "set_checked_mode", "checked_mode", "CheckedLatch"]

_ON = [False]

# The ops whose node in CNTK's network has another type name than the op's ``op_name`` (the
# message names the node's type): CompositeFunction.cpp:623-1160 makes each op's node, whose
# TypeName() is in Source/ComputationNetworkLib/*Nodes.h
_NODE_TYPES = {"Cos": "Cosine", "ReLU": "RectifiedLinear", "ELU": "ExponentialLinearUnit",
               "TransposeAxes": "TransposeDimensions", "Unpooling": "MaxUnpooling",
               "SumAll": "SumElements", "UnpackBatch": "UnpackBatchAxis",
               "SquaredError": "SquareError", "NDCG": "NDCG1Eval", "Select": "If",
               "Splice": "RowStack", "Pad": "Padding"}


class CheckedModeError(RuntimeError):
    """An op made a NaN value (or a NaN gradient for one of its inputs) while CNTK 2.7's
    checked mode was on: CNTK's RuntimeError.  ``op`` is the op's uid, ``phase``
    ``'forward'`` or ``'backward'``, ``location`` the user's line that built it."""

    def __init__(self, message: str, op: str, phase: str, location: str | None):
        super().__init__(message)
        self.op, self.phase, self.location = op, phase, location


def set_checked_mode(enable: bool) -> None:
    """Turn CNTK's checked mode on or off for the Functions and Trainers that run first from
    here on (see :mod:`stadyn.compat.cntk._checked_mode`).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(2)
        >>> C.debugging.set_checked_mode(True)
        >>> f = C.plus(x, 1.0)
        >>> try:
        ...     f.eval({x: np.array([[np.nan, 1.0]], np.float32)})
        ... except RuntimeError as error:
        ...     print(str(error).splitlines()[0].split(" ", 1)[1])
        Plus operation unexpectedly produced NaN values.
        >>> C.debugging.set_checked_mode(False)
    """
    _ON[0] = bool(enable)


def checked_mode() -> bool:
    """Whether checked mode is on now."""
    return _ON[0]


class CheckedLatch:
    """Whether one Function's (or Trainer's) runs are checked: the mode read when its network
    would be built in CNTK 2.7 -- its first run, and its first run for a backward after runs
    that only evaluated."""

    __slots__ = ("on", "for_backward")

    def __init__(self):
        self.on: bool | None = None
        self.for_backward = False

    def read(self, backward: bool) -> bool:
        """Whether this run is checked (``backward``: it keeps what a backward needs)."""
        if self.on is None or (backward and not self.for_backward):
            self.on, self.for_backward = _ON[0], backward
        return self.on

    def run(self, backward: bool = False):
        """A context the run goes in: the checks when this run is checked, else nothing."""
        if not self.read(backward):
            return contextlib.nullcontext()
        return checking()

    def again(self):
        """A context for a later part of the same run (``Function.backward`` after a
        ``forward``): the checks where the run was checked."""
        return checking() if self.on else contextlib.nullcontext()


def checking():
    """The checks of checked mode, as a context (NaN only, CNTK's errors)."""
    return check_numerics(nan_only=True, error=_error, op_by_op=True)


def _shown(v) -> bool:
    """Whether CNTK shows ``v`` as an op of its own (not a value inside one of its ops)."""
    return v is not None and v not in G.INNER_OPS


def _uid(v) -> str:
    """The uid of the node CNTK's network has for ``v``: a block's is the op at its root."""
    return G.root_uid_of(v) if v.parent is not None else G.uid_of(v)


def _in_padding_only(v, t: torch.Tensor) -> bool:
    """Whether every NaN of ``t`` (the value of ``v``) lies in the padding of its sequences."""
    lengths = getattr(v, "sequence_lengths", None)
    data = getattr(lengths, "_data", None) if lengths is not None else None
    if data is None or t.dim() < 2 or data.dim() != 1 or data.shape[0] != t.shape[0]:
        return False
    steps = torch.arange(t.shape[1], device=t.device)
    inside = steps[None, :] < data.to(t.device)[:, None]
    inside = inside.reshape(inside.shape + (1,) * (t.dim() - 2))
    return not bool((torch.isnan(t) & inside).any())


def _error(node, output, index, tensor):
    """The error for ``node`` (see :func:`stadyn.graph.check_numerics`), or None to pass."""
    outs = node.outputs
    v = outs[output if output is not None else 0] if outs else None
    if not _shown(v):
        return None
    op = _uid(v)
    kind = G.primitive_op_name(v)
    kind = _NODE_TYPES.get(kind, kind)
    where = node.where
    if output is not None:
        if _in_padding_only(v, tensor):
            return None
        message = f"{op} {kind} operation unexpectedly produced NaN values."
        phase = "forward"
    else:
        source = node.inputs[index] if index < len(node.inputs) else None
        if source is None or source in G.INNER_OPS:
            return None
        if _in_padding_only(source, tensor):
            return None
        message = (f"{op} {kind} operation unexpectedly produced NaN gradients on its input "
                   f"{_uid(source)}.")
        phase = "backward"
    if where:
        message += f"\n\n(checked mode: the op was built at {where})"
    return CheckedModeError(message, op, phase, where)
