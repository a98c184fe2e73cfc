"""Losses and metrics."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as TF

from ._registry import op
from ._util import norm_axis

_C = "loss"


def _class_axis(x, axis):
    return norm_axis(x.ndim - 1 if axis is None else axis, x.ndim)


# -- ONNX mappings (see OpSpec.onnx / OpSpec.onnx_import) -------------------------------------
def _onnx_class_axis(g, x, axis):
    n = g.ndim(x)
    return norm_axis(n - 1 if axis is None else axis, n)


def _ids(g, target):
    return target if g.dtype(target) == np.int64 else g.cast(target, np.int64)


def _softmax_cross_entropy_onnx(g, inputs, attrs):
    """LogSoftmax, GatherElements, Neg"""
    x, t = inputs
    a = _onnx_class_axis(g, x, attrs["axis"])
    logp = g.op("LogSoftmax", [x], axis=a)
    return g.op("Neg", [g.op("GatherElements", [logp, _ids(g, t)], axis=a)])


def _import_softmax_cross_entropy_loss(node):
    from ._activation import log_softmax
    from ._reduce import mean, sum
    from ._shape import reshape
    if node.n_inputs > 2 and node.has(2):
        node.unsupported("class weights")
    if node.attr("ignore_index") is not None:
        node.unsupported("ignore_index")
    ts = node.shape(1)
    x = node.var(0)
    loss = softmax_cross_entropy(x, reshape(node.var(1), (ts[0], 1) + tuple(ts[1:])), axis=1)
    loss = reshape(loss, tuple(ts))
    reduction = node.attr("reduction", "mean")
    if reduction == "mean":
        loss = mean(loss)
    elif reduction == "sum":
        loss = sum(loss)
    if node.n_outputs > 1:
        return loss, log_softmax(x, 1)
    return loss


def _categorical_cross_entropy_onnx(g, inputs, attrs):
    """GatherElements, Log, Neg"""
    x, t = inputs
    a = _onnx_class_axis(g, x, attrs["axis"])
    return g.op("Neg", [g.op("Log", [g.op("GatherElements", [x, _ids(g, t)], axis=a)])])


def _as_dtype_of(g, t, x):
    return t if g.dtype(t) == g.dtype(x) else g.cast(t, g.dtype(x))


def _sigmoid_cross_entropy_onnx(g, inputs, attrs):
    """max(x, 0) - x t + softplus(-|x|)"""
    x, t = inputs[0], _as_dtype_of(g, inputs[1], inputs[0])
    soft = g.op("Softplus", [g.op("Neg", [g.op("Abs", [x])])])
    return g.op("Add", [g.op("Sub", [g.op("Relu", [x]), g.op("Mul", [x, t])]), soft])


def _binary_cross_entropy_onnx(g, inputs, attrs):
    """-(t log x + (1 - t) log(1 - x)), logs clamped"""
    x, t = inputs[0], _as_dtype_of(g, inputs[1], inputs[0])
    tiny = g.scalar(np.finfo(g.dtype(x)).tiny, x)
    one = g.scalar(1.0, x)
    pos = g.op("Mul", [t, g.op("Log", [g.op("Max", [x, tiny])])])
    neg = g.op("Mul", [g.op("Sub", [one, t]),
                       g.op("Log", [g.op("Max", [g.op("Sub", [one, x]), tiny])])])
    return g.op("Neg", [g.op("Add", [pos, neg])])


def _squared_error_onnx(g, inputs, attrs):
    """Sub, Mul"""
    d = g.op("Sub", list(inputs))
    return g.op("Mul", [d, d])


def _absolute_error_onnx(g, inputs, attrs):
    """Sub, Abs"""
    return g.op("Abs", [g.op("Sub", list(inputs))])


def _huber_loss_onnx(g, inputs, attrs):
    """Where(|d| < delta, d^2, delta (2|d| - delta))"""
    x = inputs[0]
    delta = float(attrs["delta"])
    d = g.op("Sub", list(inputs))
    ad = g.op("Abs", [d])
    linear = g.op("Mul", [g.scalar(delta, x),
                          g.op("Sub", [g.op("Mul", [ad, g.scalar(2.0, x)]), g.scalar(delta, x)])])
    return g.op("Where", [g.op("Less", [ad, g.scalar(delta, x)]), g.op("Mul", [d, d]), linear])


def _top_n_error_onnx(g, inputs, attrs):
    """GatherElements, GreaterOrEqual, ReduceSum, Greater"""
    x, t = inputs
    a = _onnx_class_axis(g, x, attrs["axis"])
    score = g.op("GatherElements", [x, _ids(g, t)], axis=a)
    count = g.reduce("ReduceSum", g.cast(g.op("GreaterOrEqual", [x, score]), np.int64), [a],
                     True)
    out = g.op("Greater", [count, g.const(np.asarray(int(attrs["n"]), dtype=np.int64))])
    dtype = g.dtype(x) if g.dtype(x).kind == "f" else np.float32
    return g.cast(out, dtype)


def _one_hot_onnx(g, inputs, attrs):
    """flat ids, OneHot, Reshape"""
    x = inputs[0]
    shape = [int(s) for s in attrs["shape"]]
    strides = [int(np.prod(shape[k + 1:])) for k in range(len(shape))]
    ids = g.op("Mul", [_ids(g, x), g.ints(strides)])
    flat = g.reduce("ReduceSum", ids, [g.ndim(x) - 1], False)
    hot = g.op("OneHot", [flat, g.ints([int(np.prod(shape))]),
                          g.const(np.asarray([0.0, 1.0], dtype=np.float32))], axis=-1)
    if len(shape) == 1:
        return hot
    return g.reshape(hot, [0] * (g.ndim(x) - 1) + shape)


@op(2, category=_C, onnx=_softmax_cross_entropy_onnx,
    onnx_import={"SoftmaxCrossEntropyLoss": _import_softmax_cross_entropy_loss}, precision="float")
def softmax_cross_entropy(x, target, axis=None):
    """``-log softmax(x)[target]`` along ``axis`` (default: last) with integer class ids.

    ``target`` has ``x``'s shape with size 1 on ``axis`` (``(B, 1)`` for ``(B, C)`` logits), and
    so does the output.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array([[0.0, 0.0]])
        ...     y = F.softmax_cross_entropy(x, sd.Variable.from_numpy_array([[1]]))
        >>> np.round(y.d, 5)
        array([[0.69315]], dtype=float32)
    """
    a = _class_axis(x, axis)
    return -torch.gather(torch.log_softmax(x, a), a, target.long())


@op(2, category=_C, onnx=_categorical_cross_entropy_onnx, precision="float")
def categorical_cross_entropy(x, target, axis=None):
    """``-log(x[target])`` for probabilities ``x`` (see :func:`softmax_cross_entropy`).
    Example: ``F.categorical_cross_entropy(F.softmax(z), t)``."""
    a = _class_axis(x, axis)
    return -torch.log(torch.gather(x, a, target.long()))


@op(2, category=_C, onnx=_sigmoid_cross_entropy_onnx, precision="float")
def sigmoid_cross_entropy(x, target):
    """Element-wise ``-(t log s(x) + (1 - t) log(1 - s(x)))`` for logits ``x``, computed stably.
    Example: ``F.sigmoid_cross_entropy(logits, t)``."""
    return TF.binary_cross_entropy_with_logits(x, target.to(x.dtype), reduction="none")


@op(2, category=_C, onnx=_binary_cross_entropy_onnx, precision="float")
def binary_cross_entropy(x, target):
    """Element-wise ``-(t log x + (1 - t) log(1 - x))`` for probabilities ``x``.

    As in NNabla, the logs' arguments are clamped at the smallest normal number and the loss is
    differentiable w.r.t. a float ``target`` too.  Example: ``F.binary_cross_entropy(F.sigmoid(z),
    t)``."""
    t = target.to(x.dtype)
    tiny = torch.finfo(x.dtype).tiny
    return -(t * torch.log(torch.clamp(x, min=tiny))
             + (1 - t) * torch.log(torch.clamp(1 - x, min=tiny)))


@op(2, category=_C, onnx=_squared_error_onnx, precision="float")
def squared_error(x0, x1):
    """Element-wise ``(x0 - x1) ** 2``.  Example: ``F.mean(F.squared_error(y, t))``."""
    d = x0 - x1
    return d * d


@op(2, category=_C, onnx=_absolute_error_onnx, precision="float")
def absolute_error(x0, x1):
    """Element-wise ``|x0 - x1|``.  Example: ``F.absolute_error(y, t)``."""
    return torch.abs(x0 - x1)


@op(2, category=_C, onnx=_huber_loss_onnx, precision="float")
def huber_loss(x0, x1, delta=1.0):
    """NNabla's Huber loss: ``d ** 2`` where ``|d| < delta``, else ``delta * (2 |d| - delta)``,
    with ``d = x0 - x1``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.huber_loss(sd.Variable.from_numpy_array([0.5, 3.0]), sd.Variable.from_numpy_array([0.0, 0.0]))
        >>> y.d
        array([0.25, 5.  ], dtype=float32)
    """
    d = x0 - x1
    ad = torch.abs(d)
    return torch.where(ad < delta, d * d, delta * (2.0 * ad - delta))


@op(2, category="metric", onnx=_top_n_error_onnx, precision="float")
def top_n_error(x, target, axis=None, n=1):
    """1 where the target class is not among the ``n`` largest scores, else 0 (no gradient).

    NNabla's rule: count the scores ``>=`` the target's (the target's own included); the error
    is ``count > n``, so a target tied with other classes at the cut is an error.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     e = F.top_n_error(sd.Variable.from_numpy_array([[0.1, 0.7, 0.2]]), sd.Variable.from_numpy_array([[2]]), n=2)
        >>> e.d
        array([[0.]], dtype=float32)
    """
    a = _class_axis(x, axis)
    x = x.detach()
    score = torch.gather(x, a, target.long())
    count = (x >= score).sum(dim=a, keepdim=True)
    return (count > n).to(x.dtype if x.dtype.is_floating_point else torch.float32)


def _import_one_hot(node):
    from ._arith import add_scalar, mul_scalar
    from ._logical import less, where
    from ._misc import cast
    from ._shape import reshape, transpose
    depth = int(np.asarray(node.const(1)).reshape(-1)[0])
    off, on = (float(v) for v in np.asarray(node.const(2)).reshape(-1)[:2])
    dtype = node.dtype(2)
    shape = tuple(node.shape(0))
    ids = node.var(0)
    if node.dtype(0).kind not in "iu":        # ONNX casts non-integer indices to int64
        ids = cast(ids, "int64")
    zero = node.constant_variable(np.zeros((), dtype=np.int64))
    ids = where(less(ids, zero), add_scalar(ids, depth), ids)    # -1 is the last class
    hot = one_hot(reshape(ids, shape + (1,)), (depth,))
    if (off, on) != (0.0, 1.0):
        hot = add_scalar(mul_scalar(hot, on - off), off)
    if dtype != np.float32:
        hot = cast(hot, dtype.name)
    axis = int(node.attr("axis", -1)) % (len(shape) + 1)
    if axis != len(shape):
        order = list(range(len(shape)))
        hot = transpose(hot, tuple(order[:axis] + [len(shape)] + order[axis:]))
    return hot


@op(1, category="misc", onnx=_one_hot_onnx, onnx_import={"OneHot": _import_one_hot})
def one_hot(x, shape):
    """One-hot vectors from integer ids: ``x`` of shape ``(..., len(shape))`` becomes
    ``(..., *shape)``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.one_hot(sd.Variable.from_numpy_array([[2], [0]]), (3,))
        >>> y.d
        array([[0., 0., 1.],
               [1., 0., 0.]], dtype=float32)
    """
    shape = tuple(int(s) for s in shape)
    ids = x.long()
    flat = ids[..., 0]
    for k in range(1, len(shape)):
        flat = flat * shape[k] + ids[..., k]
    size = 1
    for s in shape:
        size *= s
    return TF.one_hot(flat, size).reshape(tuple(x.shape[:-1]) + shape).to(torch.float32)
