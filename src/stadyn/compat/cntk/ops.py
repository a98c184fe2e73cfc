"""``cntk.ops``: CNTK's op names on Stadyn's catalog.

Per-sample axes follow CNTK: ``axis=0`` is the first axis of a sample (Stadyn's axis 1, after the
batch axis) for inputs and network outputs.
"""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ._function import (Constant, Function, Parameter, adapt, constant, input_variable,
                        parameter, unwrap, wrap)

__all__ = ["input_variable", "input", "constant", "parameter", "Constant", "Parameter", "relu",
           "sigmoid", "tanh", "softmax", "log_softmax", "softplus", "leaky_relu", "elu", "selu",
           "exp", "log", "sqrt", "abs", "negate", "element_times", "element_divide", "plus",
           "minus", "times", "reshape", "splice", "reduce_sum", "reduce_mean", "reduce_max",
           "reduce_min", "cross_entropy_with_softmax", "classification_error", "squared_error",
           "binary_cross_entropy", "dropout", "clip", "alias", "combine", "identity"]

input = input_variable  # noqa: A001 - CNTK 2.x's name
relu = adapt(F.relu)
sigmoid = adapt(F.sigmoid)
tanh = adapt(F.tanh)
softplus = adapt(F.softplus)
elu = adapt(F.elu)
selu = adapt(F.selu)
exp = adapt(F.exp)
log = adapt(F.log)
sqrt = adapt(F.sqrt)
abs = adapt(F.abs)  # noqa: A001
element_times = adapt(F.mul2, "element_times")
element_divide = adapt(F.div2, "element_divide")
plus = adapt(F.add2, "plus")
minus = adapt(F.sub2, "minus")
squared_error = adapt(lambda o, t: F.sum(F.squared_error(o, t), axis=-1, keepdims=True),
                      "squared_error")
binary_cross_entropy = adapt(F.binary_cross_entropy, "binary_cross_entropy")


def _batched(x) -> bool:
    return isinstance(x, Function) and x.kind in ("input", "output")


def _axis(x, axis):
    """CNTK's per-sample axis as a Stadyn axis."""
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return [_axis(x, a) for a in axis]
    return axis + 1 if (axis >= 0 and _batched(x)) else axis


def softmax(x, axis=None, name: str = ""):
    return wrap(F.softmax(unwrap(x), axis=_axis(x, axis)))


def log_softmax(x, axis=None, name: str = ""):
    return wrap(F.log_softmax(unwrap(x), axis=_axis(x, axis)))


def leaky_relu(x, alpha=0.01, name: str = ""):
    return wrap(F.leaky_relu(unwrap(x), alpha))


def negate(x, name: str = ""):
    return wrap(F.mul_scalar(unwrap(x), -1.0))


def times(left, right, output_rank=1, infer_input_rank_to_map=-1, name: str = ""):
    """``x @ W`` over the sample axes of ``x`` (a batched input times a parameter)."""
    a = unwrap(left)
    b = unwrap(right)
    if _batched(left):
        return wrap(F.affine(a, b, None, 1))
    return wrap(F.batch_matmul(a, b))


def reshape(x, shape, begin_axis=None, end_axis=None, name: str = ""):
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if _batched(x):
        return wrap(F.reshape(unwrap(x), (-1,) + shape))
    return wrap(F.reshape(unwrap(x), shape))


def splice(*inputs, axis=-1, name: str = ""):
    return wrap(F.concatenate(*unwrap(inputs), axis=_axis(inputs[0], axis)))


def _reduce(fn):
    def reduce(x, axis=None, name: str = ""):
        if axis is None and _batched(x):
            axis = list(range(len(x.shape)))
        return wrap(fn(unwrap(x), axis=_axis(x, axis), keepdims=True))
    reduce.__name__ = fn.__name__
    return reduce


reduce_sum = _reduce(F.sum)
reduce_mean = _reduce(F.mean)
reduce_max = _reduce(F.max)
reduce_min = _reduce(F.min)


def cross_entropy_with_softmax(output_vector, target_vector, axis=-1, name: str = ""):
    """Per-sample ``-sum(t log softmax(z))`` with a dense (one-hot) target."""
    return wrap(F.cross_entropy_with_softmax(unwrap(output_vector), unwrap(target_vector),
                                             _axis(output_vector, axis)))


def classification_error(output_vector, target_vector, axis=-1, topN=1, name: str = ""):
    """Per-sample 1 when the target class is not among the ``topN`` highest outputs."""
    return wrap(F.classification_error(unwrap(output_vector), unwrap(target_vector),
                                       _axis(output_vector, axis), topN))


def dropout(x, dropout_rate=0.0, keep_prob=None, seed=None, name: str = ""):
    rate = dropout_rate if keep_prob is None else 1.0 - keep_prob
    return wrap(F.dropout(unwrap(x), rate, train_only=True))


def clip(x, min_value, max_value, name: str = ""):
    return wrap(F.clip_by_value_scalar(unwrap(x), float(min_value), float(max_value)))


def alias(x, name: str = ""):
    return wrap(F.identity(unwrap(x)))


identity = alias


def combine(*operands, name: str = ""):
    """Several outputs as one: Stadyn returns them as a tuple."""
    flat = []
    for op in operands:
        flat.extend(op if isinstance(op, (list, tuple)) else [op])
    return tuple(flat)
