"""Import rules of NNabla functions that are compositions of catalog ops: NNabla 1.39 writes
``F.reduce_mean``, ``F.reduce_sum``, ``F.binary_error``, ``F.epsilon_insensitive_loss`` and
``F.logical_*_scalar`` as functions of their own (``ReduceMean``, ...), while Stadyn's compat
layer composes them from catalog ops (``stadyn/compat/nnabla/_composed.py``), so a graph Stadyn
builds writes the composition and a file NNabla wrote imports through these rules.  Each
mapping is registered beside the catalog op it imports as (``ReduceMean`` with ``mean``)."""

from __future__ import annotations

from ... import functions as F

__all__ = ["REDUCE_MEAN", "REDUCE_SUM", "BINARY_ERROR", "EPSILON_INSENSITIVE_LOSS",
           "LOGICAL_SCALAR"]


def _reduce_mean(node):
    """``ReduceMean``: the mean of every element (a 0-d result)."""
    return F.mean(node.var(0))


def _reduce_sum(node):
    """``ReduceSum``: the sum of every element (a 0-d result)."""
    return F.sum(node.var(0))


def _binary_error(node):
    """``BinaryError``: 1 where ``x`` and ``target`` fall on different sides of 0.5."""
    return F.not_equal(F.greater_equal_scalar(node.var(0), 0.5),
                       F.greater_equal_scalar(node.var(1), 0.5))


def _epsilon_insensitive_loss(node):
    """``EpsilonInsensitiveLoss``: ``max(|x0 - x1| - epsilon, 0)``."""
    gap = F.add_scalar(F.abs(F.sub2(node.var(0), node.var(1))), -node.field("epsilon", float))
    return F.maximum_scalar(gap, 0.0)


def _logical_scalar(kind):
    def build(node):
        x, val = node.var(0), node.field("val", bool)
        nonzero = F.not_equal_scalar(x, 0.0)
        if kind == "and":
            return nonzero if val else F.mul_scalar(nonzero, 0.0)
        if kind == "or":
            return F.add_scalar(F.mul_scalar(nonzero, 0.0), 1.0) if val else nonzero
        return F.equal_scalar(x, 0.0) if val else nonzero
    build.__doc__ = f"``Logical{kind.capitalize()}Scalar``: ``x {kind} val`` as 0/1."
    return build


REDUCE_MEAN = {"ReduceMean": _reduce_mean}
REDUCE_SUM = {"ReduceSum": _reduce_sum}
BINARY_ERROR = {"BinaryError": _binary_error}
EPSILON_INSENSITIVE_LOSS = {"EpsilonInsensitiveLoss": _epsilon_insensitive_loss}
LOGICAL_SCALAR = {f"Logical{k.capitalize()}Scalar": _logical_scalar(k)
                  for k in ("and", "or", "xor")}
