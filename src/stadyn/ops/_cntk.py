"""Ops with CNTK's own semantics: losses and metrics with dense (e.g. one-hot) targets, and
CNTK's batch normalisation (flat statistics, a sample count, its running-average rule)."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..graph import is_training
from ._registry import op
from ._util import norm_axis


# -- ONNX mappings (see OpSpec.onnx) ----------------------------------------------------------
def _cross_entropy_with_softmax_onnx(g, inputs, attrs):
    """LogSoftmax, Sub, ReduceMean, Mul, ReduceSum"""
    z, t = inputs
    a = norm_axis(attrs["axis"], g.ndim(z))
    if g.dtype(t) != g.dtype(z):
        t = g.cast(t, g.dtype(z))
    # log_sum_exp(z) is z - log_softmax(z) at every position: their mean along the axis
    lse = g.reduce("ReduceMean", g.op("Sub", [z, g.op("LogSoftmax", [z], axis=a)]), [a], True)
    return g.op("Sub", [lse, g.reduce("ReduceSum", g.op("Mul", [t, z]), [a], True)])


def _classification_error_onnx(g, inputs, attrs):
    """ArgMax, GatherElements, Greater, ReduceSum, GreaterOrEqual"""
    z, t = inputs
    a = norm_axis(attrs["axis"], g.ndim(z))
    score = g.op("GatherElements", [z, g.op("ArgMax", [t], axis=a, keepdims=1)], axis=a)
    better = g.reduce("ReduceSum", g.cast(g.op("Greater", [z, score]), np.int64), [a], True)
    wrong = g.op("GreaterOrEqual", [better, g.const(np.asarray(int(attrs["topN"]), np.int64))])
    return g.cast(wrong, g.dtype(z) if g.dtype(z).kind == "f" else np.float32)


@op(2, category="loss", onnx=_cross_entropy_with_softmax_onnx, precision="float")
def cross_entropy_with_softmax(output_vector, target_vector, axis=-1):
    """CNTK's cross entropy with softmax along ``axis``: ``log_sum_exp(z) - sum(t * z)``, which
    is ``-sum(t * log softmax(z))`` for a target ``t`` that sums to 1 (one-hot or soft); the
    reduced axis is kept with size 1 (``(B, 1)`` for ``(B, C)`` inputs).  The gradients are
    CNTK's: ``softmax(z) - t`` for ``z`` and ``-z`` for ``t``.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     z = sd.Variable.from_numpy_array([[0.0, 0.0]])
        ...     y = F.cross_entropy_with_softmax(z, sd.Variable.from_numpy_array([[0.0, 1.0]]))
        >>> np.round(y.d, 5)
        array([[0.69315]], dtype=float32)
    """
    a = norm_axis(axis, output_vector.ndim)
    z = output_vector
    t = target_vector.to(z.dtype)
    return torch.logsumexp(z, dim=a, keepdim=True) - torch.sum(t * z, dim=a, keepdim=True)


@op(2, category="metric", onnx=_classification_error_onnx, precision="float")
def classification_error(output_vector, target_vector, axis=-1, topN=1):
    """1 where the target's class (its argmax) is not among the ``topN`` highest outputs, else 0;
    the reduced axis is kept with size 1.  No gradient.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     e = F.classification_error(sd.Variable.from_numpy_array([[0.2, 0.5, 0.3]]),
        ...                                sd.Variable.from_numpy_array([[0.0, 0.0, 1.0]]))
        >>> e.d
        array([[1.]], dtype=float32)
    """
    a = norm_axis(axis, output_vector.ndim)
    z = output_vector.detach()
    target = torch.argmax(target_vector, dim=a, keepdim=True)
    score = torch.gather(z, a, target)
    better = (z > score).sum(dim=a, keepdim=True)
    return (better >= topN).to(z.dtype if z.dtype.is_floating_point else torch.float32)


def _cntk_bn_onnx(g, inputs, attrs):
    """BatchNormalization (running statistics), or its formula for per-element statistics"""
    from ._nn import _batch_normalization_onnx
    x, scale, bias, mean, var, _count = inputs
    nd = len(g.shape(x))
    axes = [1] if attrs["spatial"] else list(range(1, nd))
    return _batch_normalization_onnx(g, [x, bias, scale, mean, var],
                                     {"axes": axes, "eps": attrs["epsilon"], "output_stat": False})


def _cntk_bn_shape(x, scale, bias, mean, variance, count, spatial=False, time_constant=5000.0,
                   blend_time_constant=0.0, epsilon=1e-5, batch_stat=None):
    size = x.shape[1] if spatial else math.prod(x.shape[1:])
    for what, t in (("scale", scale), ("bias", bias), ("running mean", mean),
                    ("running variance", variance)):
        if t.numel() != size:
            raise ValueError(f"{what} has {t.numel()} values; the input needs {size} "
                             f"({'one per channel' if spatial else 'one per element'})")
    return torch.empty_like(x)


@op(6, category="neural", shape=_cntk_bn_shape, onnx=_cntk_bn_onnx, precision="mixed")
def cntk_batch_normalization(x, scale, bias, mean, variance, count, spatial=False,
                             time_constant=5000.0, blend_time_constant=0.0, epsilon=1e-5,
                             batch_stat=None):
    """CNTK's batch normalisation: per channel (``spatial``: axis 1 of ``x``) or per element of a
    sample; ``scale``, ``bias`` and the running ``mean``/``variance`` are flat vectors with one
    value per channel or element, ``count`` (shape ``()``) the samples seen.

    Training (``batch_stat``, by default the phase) normalises with the minibatch's statistics
    and updates the running ones in place by CNTK's rule: the first minibatch (``count`` 0)
    replaces them; later ones blend in with ``1 - exp(-M / time_constant)`` for a minibatch of
    M samples (``time_constant`` 0: replace every time; infinite: keep the first); the variance
    is the unbiased one.  ``blend_time_constant`` mixes the running statistics into the
    normalisation with weight ``b / (b + M)``.  Inference normalises with the running ones.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward(), sd.training(True):
        ...     x = sd.Variable.from_numpy_array(np.array([[1.0], [3.0]]))
        ...     v = [sd.Variable.from_numpy_array(np.full(1, a)) for a in (1.0, 0.0, 0.0, 0.0)]
        ...     c = sd.Variable.from_numpy_array(np.float32(0))
        ...     y = F.cntk_batch_normalization(x, *v, c)
        >>> y.d.ravel().round(3).tolist(), v[2].d.tolist(), v[3].d.tolist(), float(c.d)
        ([-1.0, 1.0], [2.0], [2.0], 2.0)
    """
    if batch_stat is None:
        batch_stat = is_training()
    axes = [1] if spatial else list(range(1, x.ndim))
    reduce = [a for a in range(x.ndim) if a not in axes]
    shape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
    s, b = scale.reshape(shape), bias.reshape(shape)
    if not batch_stat:
        m, v = mean.reshape(shape), variance.reshape(shape)
        return (x - m) * torch.rsqrt(v + epsilon) * s + b
    n = x.shape[0]
    elements = math.prod(x.shape[a] for a in reduce)
    var_b, mean_b = torch.var_mean(x, dim=reduce, keepdim=True, unbiased=False)
    m_used, v_used = mean_b, var_b
    if blend_time_constant:
        w = 1.0 if math.isinf(blend_time_constant) else \
            blend_time_constant / (blend_time_constant + n)
        m_used = (1 - w) * mean_b + w * mean.reshape(shape)
        v_used = (1 - w) * var_b + w * variance.reshape(shape)
    if time_constant == 0:
        factor = 1.0
    elif math.isinf(time_constant):
        factor = 0.0
    else:
        factor = -math.expm1(-n / time_constant)
    with torch.no_grad():
        unbiased = var_b.detach() * (elements / max(elements - 1, 1))
        first = (count == 0).to(x.dtype)
        f = first + (1 - first) * factor
        mean.copy_((mean + f * (mean_b.detach().reshape(mean.shape).to(mean.dtype) - mean)))
        variance.copy_(variance + f * (unbiased.reshape(variance.shape).to(variance.dtype)
                                       - variance))
        count.add_(n)
    return (x - m_used) * torch.rsqrt(v_used + epsilon) * s + b


class _PythonCall(torch.autograd.Function):
    """Runs a CNTK user function's NumPy ``forward``/``backward`` inside autograd."""

    @staticmethod
    def forward(ctx, function, *xs):
        arrays = [x.detach().cpu().numpy() for x in xs]
        state, out = function.forward_arrays(arrays)
        ctx.function, ctx.state = function, state
        ctx.devices = [(x.device, x.dtype) for x in xs]
        return torch.as_tensor(np.ascontiguousarray(out), device=xs[0].device).to(xs[0].dtype)

    @staticmethod
    def backward(ctx, grad):
        grads = ctx.function.backward_arrays(ctx.state, grad.detach().cpu().numpy())
        out = [None if g is None else torch.as_tensor(np.ascontiguousarray(g), device=d)
               .to(t) for g, (d, t) in zip(grads, ctx.devices)]
        return (None, *out)


def _user_function_shape(*x, function=None):
    shape, dtype = function.output_shape([tuple(t.shape) for t in x])
    out = torch.empty(tuple(shape), dtype=torch.float32 if dtype is None else dtype,
                      device="meta")
    return out.requires_grad_(any(t.requires_grad for t in x))


@op(category="misc", shape=_user_function_shape, traceable=False)
def cntk_user_function(*x, function=None):
    """A CNTK user function: ``function`` (a ``cntk.ops.functions.UserFunction``, or any object
    with ``forward_arrays(arrays) -> (state, array)``, ``backward_arrays(state, gradient) ->
    [gradient per input]`` and ``output_shape(input_shapes) -> (shape, dtype)``) computes the
    output from the inputs as NumPy arrays, and the gradients.  Graphs holding it run eagerly
    (its Python cannot be traced) and cannot be saved.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> class Twice:
        ...     def forward_arrays(self, a): return None, 2 * a[0]
        ...     def backward_arrays(self, state, g): return [2 * g]
        ...     def output_shape(self, shapes): return shapes[0], None
        >>> with sd.auto_forward():
        ...     y = F.cntk_user_function(sd.Variable.from_numpy_array(np.ones(2)), function=Twice())
        >>> y.d.tolist()
        [2.0, 2.0]
    """
    return _PythonCall.apply(function, *x)
