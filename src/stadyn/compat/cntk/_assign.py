"""CNTK's ``assign``: a Parameter's or Constant's value replaced by another value, after the
evaluation that computed it.

CNTK's rule: every use of ``ref`` in the evaluation sees its old value; ``ref`` takes the new
one once the forward pass (inference) or the forward and backward passes (training) are done;
the ``assign`` node's own value is the new value, and its gradient flows to ``input``.  The
compat ``Function`` collects the new values after the forward pass (:func:`pending_assignments`)
and writes them (:func:`apply_assignments`) at those points.  (A Trainer's step runs the native
graph, not these points: an ``assign`` inside a trained model is not applied there.)

Example:
    >>> import stadyn.compat.cntk as C
    >>> dest = C.parameter(shape=(2,), init=0.0)
    >>> data = C.parameter(shape=(2,), init=2.0)
    >>> a = C.assign(dest, data)
    >>> y = dest + data
    >>> out = C.combine([y, a]).eval()
    >>> out[y.output].tolist(), out[a.output].tolist(), dest.value.tolist()
    ([2.0, 2.0], [2.0, 2.0], [2.0, 2.0])
"""

from __future__ import annotations

import weakref

from ... import functions as F
from ...graph import Variable, topological_nodes
from ._adapt import batched, float_arrays, named, operand, wrap

__all__ = ["assign", "assign_outputs", "pending_assignments", "apply_assignments"]

# The output of each assign node and the leaf it writes.
_ASSIGNS: "weakref.WeakKeyDictionary[Variable, Variable]" = weakref.WeakKeyDictionary()


@float_arrays("input")
def assign(ref, input, name: str = ""):  # noqa: A002 - CNTK's argument name
    """``input``'s value, written into ``ref`` (a Parameter or Constant of the same shape) after
    the evaluation; neither may have the batch axis.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> dest = C.constant(shape=(3,))
        >>> C.assign(dest, C.parameter((3,), init=2.0)).eval().tolist(), dest.value.tolist()
        ([2.0, 2.0, 2.0], [2.0, 2.0, 2.0])
    """
    target, value = operand(ref), operand(input)
    if batched(ref) or batched(input):
        raise ValueError("assign: neither ref nor input can have the batch axis (CNTK's "
                         "AssignNode)")
    if not isinstance(target, Variable) or target.parent is not None:
        raise ValueError("assign: ref must be a Parameter or a Constant")
    if not isinstance(value, Variable):
        from ._adapt import const
        value = const(value)
    if tuple(target.shape) != tuple(value.shape):
        raise ValueError(f"assign: ref has shape {tuple(target.shape)}, input "
                         f"{tuple(value.shape)}; they must be equal (no broadcasting)")
    out = F.identity(value)
    _ASSIGNS[out] = target
    return named(wrap(out), name, "Assign")


def assign_outputs(roots: list[Variable]) -> list[Variable]:
    """The outputs of the assign nodes the roots depend on: a forward pass computes them as
    roots too, so that their values are kept."""
    if not _ASSIGNS:
        return []
    nodes = {id(n) for n in topological_nodes(roots)}
    return [out for out in list(_ASSIGNS)
            if out.parent is not None and id(out.parent) in nodes]


def pending_assignments(outputs: list[Variable]) -> list:
    """``(ref, new value)`` of the assign nodes with these ``outputs``, right after the forward
    pass that computed them."""
    return [(_ASSIGNS[out], out.d.copy()) for out in outputs]


def apply_assignments(pending: list) -> None:
    """Write the values :func:`pending_assignments` collected into their refs."""
    for target, value in pending:
        target.d = value
