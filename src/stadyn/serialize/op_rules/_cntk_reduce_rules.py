"""The ``cntk_import`` rule of CNTK's ``ReduceElements`` (Sum, Mean, Max, Min, Prod, LogSum,
Argmax, Argmin): over sample axes, and over ``Axis.all_axes()`` -- every element of the
minibatch, a sequence's valid steps only, to one value without dynamic axes (what CNTK's
Trainer writes as its ``aggregateLoss``)."""

from __future__ import annotations

import math

import numpy as np

from ... import functions as F
from ...sequence import reshape_samples, unpack
from ._cntk_shape_rules import _ALL_AXES, _axes_attr, _sample, v1_axis

__all__ = ["reduce_cntk"]


def _over_all_axes(node) -> bool:
    """Whether a reduction's ``axis``/``axisVec`` is CNTK's ``Axis.all_axes()``."""
    axes = node.attr("axisVec")
    axes = axes if axes is not None else [node.attr("axis")]
    return any(int(getattr(a, "static_axis_idx", -1 if a is None else a)) == _ALL_AXES
               for a in axes)


# CNTK 2.7's reductions: a NaN is passed by in a max or min (F.max's rule="cntk")
_OPS = {"Sum": F.sum, "Mean": F.mean, "Prod": F.prod,
        "Max": lambda x, **kw: F.max(x, rule="cntk", **kw),
        "Min": lambda x, **kw: F.min(x, rule="cntk", **kw)}

_PADDING = {"Sum": 0.0, "Mean": 0.0, "Max": -math.inf, "Min": math.inf, "Prod": 1.0,
            "LogSum": -math.inf}


def _reduce_all_axes(node, name: str, keep: bool):
    """A reduction over ``Axis.all_axes()``: every element of the minibatch (a sequence's
    valid steps only) reduced to one value without dynamic axes (the sample axes kept as 1s
    when ``keep``), as CNTK's Trainer sums its ``aggregateLoss``."""
    lead, sample = _sample(node, 0)
    if name not in _PADDING:
        node.unsupported(f"reduction {name!r} over all axes")
    x = node.var(0)
    count = None
    if lead == 2:       # a sequence: the padded steps must not count
        x, mask = unpack(x, _PADDING[name])
        count = F.mul_scalar(F.sum(F.cast(mask, "float32")), float(math.prod(sample)))
    axis = tuple(range(len(x.shape)))
    if name == "LogSum":
        m = F.max(x, axis=axis, keepdims=True)
        y = F.add2(F.log(F.sum(F.exp(F.sub2(x, m)), axis=axis)), F.reshape(m, ()))
    elif name == "Mean" and count is not None:
        y = F.div2(F.sum(x, axis=axis), count)
    else:
        y = _OPS[name](x, axis=axis)
    if lead:
        node.reduces_dynamic_axes()
    return F.reshape(y, (1,) * len(sample)) if keep else y


def reduce_cntk(node):
    """CNTK's ``ReduceElements``: ``reductionOpName`` Sum, Mean, Max, Min, Prod, LogSum,
    Argmax or Argmin over ``axis``/``axisVec`` (all static axes by default), keeping the
    reduced axes unless ``reductionKeepDimensions`` is false.  Over ``Axis.all_axes()`` (the
    batch and sequence axes too) the output is one value with no dynamic axes."""
    if _over_all_axes(node):
        return _reduce_all_axes(node, node.attr("reductionOpName", "Sum"),
                                bool(node.attr("reductionKeepDimensions", True)))
    lead, sample = _sample(node, 0)
    axes = _axes_attr(node, len(sample))
    axes = tuple(range(len(sample))) if axes is None else axes
    axis = tuple(a + lead for a in axes)
    keep = bool(node.attr("reductionKeepDimensions", True))
    name = node.attr("reductionOpName", "Sum")
    x = node.var(0)
    if name in _OPS:
        return _OPS[name](x, axis=axis, keepdims=keep)
    if name == "LogSum":
        m = F.max(x, axis=axis, keepdims=True)
        y = F.add2(F.log(F.sum(F.exp(F.sub2(x, m)), axis=axis, keepdims=True)), m)
        return y if keep else reshape_samples(y, lead, tuple(d for k, d in enumerate(sample)
                                                             if k not in axes))
    if name in ("Argmax", "Argmin") and (len(axis) == 1 or sorted(axes) ==
                                         list(range(len(sample)))):
        # over several axes, all of the sample's (CNTK 2.7's argmax(x)): the index into the
        # sample flattened in Python's order
        pick = F.max if name == "Argmax" else F.min
        if len(axis) > 1:
            x = reshape_samples(x, lead, (math.prod(sample),))
        index = pick(x, axis=lead if len(axis) > 1 else axis[0], keepdims=keep,
                     only_index=True, rule="cntk")
        if keep and len(axis) > 1:
            index = reshape_samples(index, lead, (1,) * len(sample))
        return F.cast(index, np.dtype(x.dtype).name)
    node.unsupported(f"reduction {name!r} over {axes}")


def reduce_cntk_v1(node):
    """A v1 ``ReduceElements`` node: ``operation`` over ``axes`` (internal indices; 0 all the
    static axes), keeping
    them where ``keep_dimensions`` says, as CNTK 2's ``ReduceElements``."""
    a = node.attrs
    axes = [int(i) for i in a.get("axes", ())]
    if any(i < 0 for i in axes) or 0 in axes and len(axes) > 1:
        node.unsupported(f"a reduction over the internal axes {axes}")
    node.attrs = {"reductionOpName": a.get("operation", "Sum"),
                  "reductionKeepDimensions": bool(a.get("keep_dimensions", True))}
    if axes and axes != [0]:
        node.attrs["axisVec"] = [v1_axis(i) for i in axes]
        return reduce_cntk(node)
    # (none, or 0: all the static axes, to one value of shape (1,) as CNTK 2.7 loads it)
    return reshape_samples(reduce_cntk(node), node.lead(0), (1,))
