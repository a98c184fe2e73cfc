"""``cntk.ops``: CNTK's op names on Stadyn's catalog.

Per-sample axes follow CNTK: ``axis=0`` is the first axis of a sample (Stadyn's axis 1, after the
batch axis) for inputs and network outputs.
"""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ._function import (Constant, Function, Parameter, adapt, batched, binary, constant,
                        input_variable, named, parameter, unwrap, wrap)

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
binary_cross_entropy = adapt(F.binary_cross_entropy, "binary_cross_entropy")


def plus(left, right, name: str = ""):
    """``left + right`` (CNTK broadcasting: sample axes align on the right)."""
    return named(binary(F.add2, left, right), name)


def minus(left, right, name: str = ""):
    """``left - right``."""
    return named(binary(F.sub2, left, right), name)


def element_times(left, right, name: str = ""):
    """``left * right``, element-wise."""
    return named(binary(F.mul2, left, right), name)


def element_divide(left, right, name: str = ""):
    """``left / right``, element-wise."""
    return named(binary(F.div2, left, right), name)


def _sample_axes(x) -> list[int]:
    """Every axis of a sample (all axes of an unbatched operand)."""
    n = len(unwrap(x).shape)
    return list(range(1, n)) if batched(x) else list(range(n))


def squared_error(output, target, name: str = ""):
    """``sum((output - target) ** 2)`` over each sample's axes: one number per sample."""
    return named(wrap(F.sum(F.squared_error(unwrap(output), unwrap(target)),
                             axis=_sample_axes(output))), name)


def _axis(x, axis):
    """CNTK's per-sample axis as a Stadyn axis."""
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return [_axis(x, a) for a in axis]
    return axis + 1 if (axis >= 0 and batched(x)) else axis


def _over_sample(fn, x, axis):
    """``fn`` along ``axis``; with ``axis=None``, over all of a sample's axes at once."""
    if axis is not None:
        return wrap(fn(unwrap(x), axis=_axis(x, axis)))
    v = unwrap(x)
    if len(_sample_axes(x)) <= 1:
        return wrap(fn(v, axis=len(v.shape) - 1))
    lead = (-1,) if batched(x) else ()
    flat = F.reshape(v, lead + (int(np.prod(v.shape[len(lead):])),))
    return wrap(F.reshape(fn(flat, axis=len(flat.shape) - 1), lead + tuple(v.shape[len(lead):])))


def softmax(x, axis=None, name: str = ""):
    """Softmax along the per-sample ``axis`` (None: over all of a sample's axes)."""
    return named(_over_sample(F.softmax, x, axis), name)


def log_softmax(x, axis=None, name: str = ""):
    """Log-softmax along the per-sample ``axis`` (None: over all of a sample's axes)."""
    return named(_over_sample(F.log_softmax, x, axis), name)


def leaky_relu(x, alpha=0.01, name: str = ""):
    return named(wrap(F.leaky_relu(unwrap(x), alpha)), name)


def negate(x, name: str = ""):
    return named(wrap(F.mul_scalar(unwrap(x), -1.0)), name)


def times(left, right, output_rank=1, infer_input_rank_to_map=-1, name: str = ""):
    """The tensor product of ``left`` with ``right``: the last ``right.ndim - output_rank`` axes
    of ``left``'s samples are summed against ``right``'s first axes (a batched input times a
    parameter: ``x @ W``)."""
    a = unwrap(left)
    b = unwrap(right)
    if batched(left):
        inner = len(b.shape) - int(output_rank)
        return named(wrap(F.affine(a, b, None, len(a.shape) - inner)), name)
    return named(wrap(F.batch_matmul(a, b)), name)


def reshape(x, shape, begin_axis=None, end_axis=None, name: str = ""):
    """Reshape each sample (its axes ``begin_axis`` to ``end_axis``, all by default) to
    ``shape``; one entry may be -1."""
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    v = unwrap(x)
    lead = 1 if batched(x) else 0
    sample = tuple(v.shape[lead:])
    begin = 0 if begin_axis is None else begin_axis % (len(sample) + 1)
    end = len(sample) if end_axis is None else end_axis % (len(sample) + 1)
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1]))
        shape = tuple(int(np.prod(sample[begin:end])) // known if s == -1 else s for s in shape)
    new = sample[:begin] + shape + sample[end:]
    return named(wrap(F.reshape(v, ((-1,) if lead else ()) + new)), name)


def splice(*inputs, axis=-1, name: str = ""):
    return named(wrap(F.concatenate(*unwrap(inputs), axis=_axis(inputs[0], axis))), name)


def _reduce(fn, cntk_name):
    def reduce(x, axis=None, name: str = ""):
        """Reduce a sample over ``axis`` (an int or a list; the reduced axes stay, with size 1),
        or, with ``axis=None``, over all its axes to one number per sample."""
        if axis is None:
            return named(wrap(fn(unwrap(x), axis=_sample_axes(x), keepdims=False)), name)
        return named(wrap(fn(unwrap(x), axis=_axis(x, axis), keepdims=True)), name)
    reduce.__name__ = cntk_name
    return reduce


reduce_sum = _reduce(F.sum, "reduce_sum")
reduce_mean = _reduce(F.mean, "reduce_mean")
reduce_max = _reduce(F.max, "reduce_max")
reduce_min = _reduce(F.min, "reduce_min")


def cross_entropy_with_softmax(output_vector, target_vector, axis=-1, name: str = ""):
    """Per-sample ``-sum(t log softmax(z))`` with a dense (one-hot) target."""
    out = F.cross_entropy_with_softmax(unwrap(output_vector), unwrap(target_vector),
                                       _axis(output_vector, axis))
    return named(wrap(out), name)


def classification_error(output_vector, target_vector, axis=-1, topN=1, name: str = ""):
    """Per-sample 1 when the target class is not among the ``topN`` highest outputs."""
    out = F.classification_error(unwrap(output_vector), unwrap(target_vector),
                                 _axis(output_vector, axis), topN)
    return named(wrap(out), name)


def dropout(x, dropout_rate=0.0, seed=None, name: str = ""):
    """Zero each value with probability ``dropout_rate`` and scale the rest by
    ``1 / (1 - dropout_rate)`` in training; the identity in inference (CNTK 2.7's op has no
    ``keep_prob``: that is ``cntk.layers.Dropout``'s)."""
    return named(wrap(F.dropout(unwrap(x), dropout_rate, train_only=True)), name)


def clip(x, min_value, max_value, name: str = ""):
    """``x`` limited to ``[min_value, max_value]``."""
    out = F.clip_by_value_scalar(unwrap(x), float(min_value), float(max_value))
    return named(wrap(out), name)


def alias(x, name: str = ""):
    """The same values under another name (a new node)."""
    return named(wrap(F.identity(unwrap(x))), name)


identity = alias


def combine(*operands, name: str = ""):
    """Several outputs as one Function: ``.outputs`` lists them, ``eval`` returns
    ``{output: value}``."""
    flat = []
    for op in operands:
        for f in (op if isinstance(op, (list, tuple)) else [op]):
            flat.extend(wrap(f).outputs)
    return Function(flat[0].variable, name, "output", flat)
