"""A CNTK layer applied to operands with no dynamic axes (an input made with
``dynamic_axes=[]``, a constant, a parameter): CNTK 2.7 applies it to the operand as one
sample, where Stadyn's layers take an operand's first axis for the batch.  So the operands are
given the batch of that one sample (an inner value of the layer's block, which CNTK's graph
does not show) and the layer's outputs lose it again.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.input_variable(3, dynamic_axes=[])
    >>> d = C.layers.Dense(4, init=0.5)(x)
    >>> d.shape, d.W.shape, d.eval({x: np.array([0, 1, 2], np.float32)}).tolist()
    ((4,), (3, 4), [1.5, 1.5, 1.5, 1.5])
"""

from __future__ import annotations

from typing import Any

from ... import functions as F
from ... import layers as L
from ...graph import Variable
from . import _graph as G

__all__ = ["apply_to_samples", "one_sample_values"]


def apply_to_samples(layer: Any, values: list) -> Any:
    """``layer`` (a Stadyn layer) applied to ``values``: as it is where they carry the batch
    axis; to a batch of one where they hold one sample (:func:`one_sample_values`), its
    outputs without that axis.

    Example:
        >>> import stadyn.layers as L
        >>> import stadyn.compat.cntk as C
        >>> w = C.constant([[1.0, 2.0, 3.0]]).variable
        >>> apply_to_samples(L.Dense(2), [w]).shape
        (2,)
    """
    tensors = [v for v in values if isinstance(v, Variable)]
    if not tensors or not one_sample_values(tensors):
        return layer(*values)
    if _maps_all_axes(layer, values):
        return _dense_of_one_sample(layer, values[0])
    out = layer(*[_batch_of_one(v) if isinstance(v, Variable) else v for v in values])
    outs = [F.reshape(o, tuple(o.shape[1:])) if isinstance(o, Variable) else o
            for o in (out if isinstance(out, tuple) else (out,))]
    return tuple(outs) if isinstance(out, tuple) else outs[0]


def one_sample_values(values: list) -> bool:
    """Whether ``values`` are known to hold one sample, no batch axis: none carries it, and
    each is computed from CNTK's leaves alone (inputs, placeholders, constants, parameters;
    not the states and steps of a recurrence Stadyn records, which have the batch axis).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> [one_sample_values([C.input_variable(3, dynamic_axes=d).variable])
        ...  for d in ([], None)]
        [True, False]
    """
    if any(G.BATCH(v) or v in G.STEP_VALUES for v in values):
        return False
    stack, seen = list(values), set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if v.parent is not None:
            stack.extend(v.parent.inputs)
        elif not (v.need_grad or v in G.INPUTS or v in G.PLACEHOLDERS or v in G.LEAF_NAMES):
            return False
    return True


def _maps_all_axes(layer: Any, values: list) -> bool:
    """Whether ``layer`` is a ``Dense`` that maps all of its one operand's axes (given neither
    ``input_rank`` nor ``map_rank``)."""
    return isinstance(layer, L.Dense) and layer.input_rank is None and \
        layer.map_rank is None and len(values) == 1 and isinstance(values[0], Variable)


def _dense_of_one_sample(layer: Any, x: Variable) -> Variable:
    """``layer`` (a Dense) over all the axes of the sample ``x`` (its ``input_rank`` all of
    them for this application): CNTK 2.7's ``Times`` and ``Plus`` over the sample itself, no
    batch of one around them, so its block's root is the ``Plus`` (or its activation) and a
    CNTK file written of it holds those two ops alone."""
    layer.input_rank = x.ndim
    try:
        return layer(x)
    finally:
        layer.input_rank = None


def _batch_of_one(v: Variable) -> Variable:
    """``v`` as a batch of one sample, an inner value of the layer's block."""
    one = F.reshape(v, (1, *v.shape))
    G.INNER_OPS.add(one)
    return one
