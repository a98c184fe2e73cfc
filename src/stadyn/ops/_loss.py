"""Losses and metrics."""

from __future__ import annotations

import torch
import torch.nn.functional as TF

from . import _half_elementwise as _HE
from ._registry import op
from ._sequence_axis import from_base_axis, unless_class_axis
from ._util import norm_axis

_C = "loss"


def _class_axis(x, axis):
    return norm_axis(x.ndim - 1 if axis is None else axis, x.ndim)


def _class_ids(x, target, axis, rule="torch"):
    """``target`` as int64 class ids for scores ``x`` with classes on ``axis``: NNabla's rule,
    ``x``'s shape with size 1 on the class axis, of an integer or floating dtype.  A float one
    holds whole numbers (``rule="torch"``), or (``rule="nnabla"``) is truncated toward zero as
    NNabla 1.39 reads it (its kernels take the target array as ``int``: 1.9 is class 1, -0.5
    class 0).  Returns ``(ids, axis)``.

    The shape and dtype are checked wherever the op runs (on meta tensors while a static graph
    is built); whole numbers only on the CPU, inside the op's own program (an asynchronous
    assert there would end the CUDA context, so on GPUs the Trainer checks what it feeds).
    """
    if rule not in ("torch", "nnabla"):
        raise ValueError(f"rule={rule!r}: 'torch' (float class ids must be whole numbers) or "
                         f"'nnabla' (truncated toward zero)")
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
    if rule == "torch" and target.is_floating_point() and target.device.type == "cpu":
        torch._assert_async(torch.all(target == torch.trunc(target)),
                            "the target holds class ids that are not whole numbers")
    return target.long(), a       # a float is truncated toward zero


def _same_shape_target(x, target) -> None:
    """NNabla's rule for element-wise targets: exactly ``x``'s shape (no broadcasting)."""
    if tuple(target.shape) != tuple(x.shape):
        raise ValueError(f"the target has shape {tuple(target.shape)}; it must have the "
                         f"input's shape {tuple(x.shape)}")


@op(2, category=_C, precision="float", sequence=unless_class_axis)
def softmax_cross_entropy(x, target, axis=None, rule="torch"):
    """``-log softmax(x)[target]`` along ``axis`` (default: last) with integer class ids.

    ``target`` has ``x``'s shape with size 1 on ``axis`` (``(B, 1)`` for ``(B, C)`` logits), and
    so does the output.  A negative class id is ignored, as in NNabla: its loss and gradient
    are 0.  A float ``target`` must hold whole numbers; ``rule="nnabla"`` truncates it toward
    zero instead, as NNabla 1.39 does (1.9 is class 1, -0.5 class 0, -1.5 is ignored).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array([[0.0, 0.0]])
        ...     y = F.softmax_cross_entropy(x, sd.Variable.from_numpy_array([[1]]))
        >>> np.round(y.d, 5)
        array([[0.69315]], dtype=float32)
    """
    ids, a = _class_ids(x, target, axis, rule)
    loss = -torch.gather(torch.log_softmax(x, a), a, ids.clamp(min=0))
    return torch.where(ids < 0, torch.zeros_like(loss), loss)


def _probabilities_in_half(attrs: dict) -> str:
    """``OpSpec.computes_in_half`` of ``categorical_cross_entropy``: NNabla 1.39 computes it
    in ``Half`` on its CPU (``CategoricalCrossEntropy<Half, int>``: function_types.yaml),
    the probabilities float16, the class ids read as integers (``"mixed"``: a float target
    stays float32, its ids above 2048 exact)."""
    return "mixed"


@op(2, category=_C, precision="float", sequence=unless_class_axis,
    computes_in_half=_probabilities_in_half)
def categorical_cross_entropy(x, target, axis=None, rule="torch"):
    """``-log(x[target])`` for probabilities ``x`` (see :func:`softmax_cross_entropy`).  As
    in NNabla, the log's argument is clamped at the smallest normal number, the gradient
    ``-dy / max(x, tiny)`` (not 0 below it), and a negative class id gives 0; ``rule``: as
    there.  Float16 probabilities (NNabla's ``cpu:half``) give a float16 loss, as NNabla's
    ``Half`` kernel (``-log`` of the value, ``-dy / max(x, tiny)``, each rounded once).
    Example: ``F.categorical_cross_entropy(F.softmax(z), t)``."""
    ids, a = _class_ids(x, target, axis, rule)
    p = torch.gather(x, a, ids.clamp(min=0))
    clamped = p.detach().clamp(min=torch.finfo(p.dtype).tiny)
    loss = -torch.log(clamped) - (p - p.detach()) / clamped  # the gradient -1 / clamped
    return torch.where(ids < 0, torch.zeros_like(loss), loss)


class _NnablaHalfSigmoidCE(torch.autograd.Function):
    """NNabla 1.39's CPU ``SigmoidCrossEntropy<Half, int>`` (sigmoid_cross_entropy.cpp): the
    formula ``-(x * (t - (x >= 0)) - log(1 + exp(x - 2 * x * (x >= 0))))`` in ``Half``, each
    operation rounded to float16 (half.cpp), and its backward ``dy * (1 / (1 + exp(-x)) -
    t)`` the same way; ``t`` the integer label."""

    @staticmethod
    def forward(ctx, x, t):
        ctx.save_for_backward(x, t)
        b = (x >= 0).to(x.dtype)
        inner = x - (2 * x) * b
        return -(x * (t - b) - torch.log(1 + torch.exp(inner)))

    @staticmethod
    def backward(ctx, dy):
        x, t = ctx.saved_tensors
        return dy * (1 / (1 + torch.exp(-x)) - t), None


def _integer_target(attrs: dict) -> bool:
    """``OpSpec.computes_in_half`` of ``sigmoid_cross_entropy``: NNabla's (an integer label),
    which NNabla 1.39 computes in ``Half`` on its CPU (function_types.yaml)."""
    return bool(attrs.get("integer_target"))


@op(2, category=_C, precision="float", computes_in_half=_integer_target)
def sigmoid_cross_entropy(x, target, integer_target=False):
    """Element-wise ``-(t log s(x) + (1 - t) log(1 - s(x)))`` for logits ``x``, computed stably.
    ``target`` has ``x``'s shape; a fractional one is a probability.  ``integer_target=True``
    reads it as NNabla 1.39 does: truncated toward zero to an integer label (0.7 is 0, -0.5 is 0,
    1.7 is 1), with no gradient to the target (NNabla's ``F.sigmoid_cross_entropy`` and an
    ``.nnp`` file's ``SigmoidCrossEntropy``), and of float16 logits NNabla's CPU formula in
    float16, rounded after each operation.  Example: ``F.sigmoid_cross_entropy(logits, t)``."""
    _same_shape_target(x, target)
    t = target.to(x.dtype)
    if integer_target:
        t = t.detach().trunc()
        if x.dtype == torch.float16:       # NNabla's in cpu:half: rounded at every step
            return _NnablaHalfSigmoidCE.apply(x, t)
    return TF.binary_cross_entropy_with_logits(x, t, reduction="none")


def _nnabla_half(attrs: dict) -> bool:
    """``OpSpec.computes_in_half`` of the losses NNabla 1.39 computes in ``Half`` on its CPU
    (build-tools/code_generator/function_types.yaml: ``SquaredError``, ``AbsoluteError``,
    ``BinaryCrossEntropy``, ``HuberLoss``)."""
    return True


@op(2, category=_C, precision="float", computes_in_half=_nnabla_half,
    nnabla_half=_HE.BINARY_CROSS_ENTROPY)
def binary_cross_entropy(x, target):
    """Element-wise ``-(t log x + (1 - t) log(1 - x))`` for probabilities ``x``.

    As in NNabla, the logs' arguments are clamped at the smallest normal number and the loss is
    differentiable w.r.t. a float ``target`` too, which has ``x``'s shape.  Of float16 CPU
    inputs (NNabla's ``cpu:half``) NNabla 1.39's ``Half`` formula, every step rounded
    (``ops/_half_elementwise.py``).  Example: ``F.binary_cross_entropy(F.sigmoid(z), t)``."""
    _same_shape_target(x, target)
    t = target.to(x.dtype)
    tiny = torch.finfo(x.dtype).tiny
    return -(t * torch.log(torch.clamp(x, min=tiny))
             + (1 - t) * torch.log(torch.clamp(1 - x, min=tiny)))


@op(2, category=_C, precision="float", computes_in_half=_nnabla_half)
def squared_error(x0, x1):
    """Element-wise ``(x0 - x1) ** 2``; of float16 inputs computed in float32 and rounded once,
    as NNabla 1.39's CPU ``SquaredError`` in ``cpu:half`` (its binary transform evaluates the
    formula in float: base_transform_binary.hpp, ``force_float``).  Example:
    ``F.mean(F.squared_error(y, t))``."""
    if x0.dtype == torch.float16 and x1.dtype == torch.float16:
        d = x0.float() - x1.float()
        return (d * d).half()
    d = x0 - x1
    return d * d


@op(2, category=_C, precision="float", computes_in_half=_nnabla_half)
def absolute_error(x0, x1):
    """Element-wise ``|x0 - x1|``.  Example: ``F.absolute_error(y, t)``."""
    return torch.abs(x0 - x1)


@op(2, category=_C, precision="float", computes_in_half=_nnabla_half,
    nnabla_half=_HE.HUBER_LOSS)
def huber_loss(x0, x1, delta=1.0):
    """NNabla's Huber loss: ``d ** 2`` where ``|d| < delta``, else ``delta * (2 |d| - delta)``,
    with ``d = x0 - x1``; of float16 CPU inputs (``cpu:half``) NNabla 1.39's binary transform,
    evaluated in float and rounded once (``ops/_half_elementwise.py``).

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


@op(2, category="metric", precision="float", sequence=unless_class_axis)
def top_n_error(x, target, axis=None, n=1, rule="torch"):
    """1 where the target class is not among the ``n`` largest scores, else 0 (no gradient).

    NNabla's rule: count the scores ``>=`` the target's (the target's own included); the error
    is ``count > n``, so a target tied with other classes at the cut is an error.  A NaN score
    counts as higher than any number (as ``torch.topk`` orders it), so a row of NaN is an error
    (NNabla counts it as right).  ``target`` holds class ids as for
    :func:`softmax_cross_entropy` (``rule`` too), each in ``[0, classes)``: NNabla 1.39 reads
    past the scores for one outside, Stadyn raises an index error.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     e = F.top_n_error(sd.Variable.from_numpy_array([[0.1, 0.7, 0.2]]), sd.Variable.from_numpy_array([[2]]), n=2)
        >>> e.d
        array([[0.]], dtype=float32)
    """
    ids, a = _class_ids(x, target, axis, rule)
    x = x.detach()
    score = torch.gather(x, a, ids)
    # the scores not below the target's: a NaN on either side counts (x < NaN is false)
    count = x.shape[a] - (x < score).sum(dim=a, keepdim=True)
    return (count > n).to(x.dtype if x.dtype.is_floating_point else torch.float32)


@op(1, category="misc")
def one_hot(x, shape):
    """One-hot vectors from integer ids: ``x`` of shape ``(..., len(shape))`` becomes
    ``(..., *shape)``.  As NNabla 1.39's ``OneHot``: an id in ``[-n, -1]`` counts from the end
    of its axis of ``n`` classes, and an id outside ``[-n, n - 1]`` on any axis makes its vector
    all zeros (no error, in the dynamic and the static mode alike).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.one_hot(sd.Variable.from_numpy_array([[2], [0], [-1], [3]]), (3,))
        >>> y.d
        array([[0., 0., 1.],
               [1., 0., 0.],
               [0., 0., 1.],
               [0., 0., 0.]], dtype=float32)
    """
    shape = tuple(int(s) for s in shape)
    ids = x.long()
    flat = torch.zeros(ids.shape[:-1], dtype=torch.long, device=ids.device)
    valid = torch.ones(ids.shape[:-1], dtype=torch.bool, device=ids.device)
    for k, n in enumerate(shape):
        i = ids[..., k]
        i = torch.where(i < 0, i + n, i)
        valid = valid & (i >= 0) & (i < n)
        flat = flat * n + i
    size = 1
    for s in shape:
        size *= s
    hit = (flat.unsqueeze(-1) == torch.arange(size, device=ids.device)) & valid.unsqueeze(-1)
    return hit.reshape(tuple(x.shape[:-1]) + shape).to(torch.float32)


@op(2, category=_C, precision="float", sequence=from_base_axis("p"))
def kl_multinomial(p, q, base_axis=1):
    """The Kullback-Leibler divergence ``sum p * (log p - log q)`` of two categorical
    distributions, summed over the axes from ``base_axis`` on (kept with size 1); the logs are
    of ``p + 1e-8`` and ``q + 1e-8``, as NNabla 1.39's, so zero probabilities give finite
    values.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     p = sd.Variable.from_numpy_array([[0.5, 0.5]])
        ...     y = F.kl_multinomial(p, sd.Variable.from_numpy_array([[0.25, 0.75]]))
        >>> np.round(y.d, 4)
        array([[0.1438]], dtype=float32)
    """
    if p.shape != q.shape:
        raise ValueError(f"kl_multinomial: p and q must have one shape, got {tuple(p.shape)} "
                         f"and {tuple(q.shape)}")
    axes = list(range(norm_axis(base_axis, p.ndim), p.ndim))
    # NNabla 1.39's KLMultinomial takes the logs of p + 1e-8 and q + 1e-8: a zero
    # probability (a one-hot p, a q with a zero) gives a finite value, not NaN or inf
    eps = 1e-8
    return (p * (torch.log(p + eps) - torch.log(q + eps))).sum(dim=axes, keepdim=True)
