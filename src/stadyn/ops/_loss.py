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


def _class_ids(x, target, axis):
    """``target`` as int64 class ids for scores ``x`` with classes on ``axis``: NNabla's rule,
    ``x``'s shape with size 1 on the class axis, of an integer or floating dtype (a float one
    holds whole numbers).  Returns ``(ids, axis)``.

    The shape and dtype are checked wherever the op runs (on meta tensors while a static graph
    is built); whole numbers only on the CPU, inside the op's own program (an asynchronous
    assert there would end the CUDA context, so on GPUs the Trainer checks what it feeds).
    """
    a = _class_axis(x, axis)
    expected = tuple(x.shape[:a]) + (1,) + tuple(x.shape[a + 1:])
    if tuple(target.shape) != expected:
        hint = ("; it takes class ids, not one-hot rows (those go to cross_entropy_with_softmax "
                "and classification_error)" if tuple(target.shape) == tuple(x.shape) else "")
        raise ValueError(f"the target has shape {tuple(target.shape)}; scores of shape "
                         f"{tuple(x.shape)} need class ids of shape {expected} (size 1 on the "
                         f"class axis {a}){hint}")
    if target.dtype == torch.bool or target.is_complex():
        raise ValueError(f"the target has dtype {target.dtype}; class ids are integers")
    if target.is_floating_point() and target.device.type == "cpu":
        torch._assert_async(torch.all(target == torch.trunc(target)),
                            "the target holds class ids that are not whole numbers")
    return target.long(), a


def _same_shape_target(x, target) -> None:
    """NNabla's rule for element-wise targets: exactly ``x``'s shape (no broadcasting)."""
    if tuple(target.shape) != tuple(x.shape):
        raise ValueError(f"the target has shape {tuple(target.shape)}; it must have the "
                         f"input's shape {tuple(x.shape)}")


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
    """GatherElements, Less, ReduceSum, Sub, Greater

    The scores not below the target's are counted as all minus those below, so a NaN counts."""
    x, t = inputs
    a = _onnx_class_axis(g, x, attrs["axis"])
    score = g.op("GatherElements", [x, _ids(g, t)], axis=a)
    below = g.reduce("ReduceSum", g.cast(g.op("Less", [x, score]), np.int64), [a], True)
    count = g.op("Sub", [g.const(np.asarray(g.shape(x)[a], dtype=np.int64)), below])
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
    ids, a = _class_ids(x, target, axis)
    return -torch.gather(torch.log_softmax(x, a), a, ids)


@op(2, category=_C, onnx=_categorical_cross_entropy_onnx, precision="float")
def categorical_cross_entropy(x, target, axis=None):
    """``-log(x[target])`` for probabilities ``x`` (see :func:`softmax_cross_entropy`).
    Example: ``F.categorical_cross_entropy(F.softmax(z), t)``."""
    ids, a = _class_ids(x, target, axis)
    return -torch.log(torch.gather(x, a, ids))


@op(2, category=_C, onnx=_sigmoid_cross_entropy_onnx, precision="float")
def sigmoid_cross_entropy(x, target):
    """Element-wise ``-(t log s(x) + (1 - t) log(1 - s(x)))`` for logits ``x``, computed stably.
    ``target`` has ``x``'s shape; a fractional one is a probability (NNabla truncates it to an
    integer label).  Example: ``F.sigmoid_cross_entropy(logits, t)``."""
    _same_shape_target(x, target)
    return TF.binary_cross_entropy_with_logits(x, target.to(x.dtype), reduction="none")


@op(2, category=_C, onnx=_binary_cross_entropy_onnx, precision="float")
def binary_cross_entropy(x, target):
    """Element-wise ``-(t log x + (1 - t) log(1 - x))`` for probabilities ``x``.

    As in NNabla, the logs' arguments are clamped at the smallest normal number and the loss is
    differentiable w.r.t. a float ``target`` too, which has ``x``'s shape.  Example:
    ``F.binary_cross_entropy(F.sigmoid(z), t)``."""
    _same_shape_target(x, target)
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
    is ``count > n``, so a target tied with other classes at the cut is an error.  A NaN score
    counts as higher than any number (as ``torch.topk`` orders it), so a row of NaN is an error
    (NNabla counts it as right).  ``target`` holds class ids as for
    :func:`softmax_cross_entropy`.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     e = F.top_n_error(sd.Variable.from_numpy_array([[0.1, 0.7, 0.2]]), sd.Variable.from_numpy_array([[2]]), n=2)
        >>> e.d
        array([[0.]], dtype=float32)
    """
    ids, a = _class_ids(x, target, axis)
    x = x.detach()
    score = torch.gather(x, a, ids)
    # the scores not below the target's: a NaN on either side counts (x < NaN is false)
    count = x.shape[a] - (x < score).sum(dim=a, keepdim=True)
    return (count > n).to(x.dtype if x.dtype.is_floating_point else torch.float32)


@op(1, category="metric", onnx=_one_hot_onnx)
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
