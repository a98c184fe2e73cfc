"""Ops with CNTK's own semantics: losses and metrics with dense (e.g. one-hot) targets, and
CNTK's batch normalisation (flat statistics, a sample count, its running-average rule)."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..graph import is_training, raised_by_user_code
from ._kernels import kernel_op
from ._picks import first_extreme_index
from ._registry import op
from ._sequence import step_mask
from ._sequence_axis import unless_class_axis
from ._top_k_order import top_k_index
from ._util import norm_axis


def _dense_target(z, t, axis):
    """CNTK's rule: the target is dense (one-hot or soft), of the output's shape or of axes of
    1 where the output's are longer, but for its first (batch) and class axes (CNTK 2.7
    broadcasts a ``(V,)`` label over ``(R, V)`` scores: ``TransposeTimes`` of the label and
    every row; a target without the batch is an unfed input's stand-in, which takes the
    batch, :mod:`stadyn.graph._free_axes`); returns the class axis and the target expanded to
    the output's shape."""
    a = norm_axis(axis, z.ndim)
    fits = t.ndim == z.ndim and t.shape[a] == z.shape[a] and t.shape[:1] == z.shape[:1] and \
        all(n in (1, m) for n, m in zip(t.shape, z.shape))
    if not fits:
        ids = tuple(t.shape) == tuple(z.shape[:a]) + (1,) + tuple(z.shape[a + 1:])
        hint = ("; it takes one-hot rows, not class ids (those go to softmax_cross_entropy and "
                "top_n_error)" if ids else "")
        raise ValueError(f"the target has shape {tuple(t.shape)}; a dense (one-hot) target of "
                         f"the output's shape {tuple(z.shape)} (or of axes of 1 other than its "
                         f"batch and class axes) is needed{hint}")
    if t.dtype == torch.bool or t.is_complex():
        raise ValueError(f"the target has dtype {t.dtype}; a dense target holds numbers")
    return a, t.expand_as(z)


@op(2, category="loss", precision="float", sequence=unless_class_axis,
    frameworks=("stadyn", "cntk"))
def cross_entropy_with_softmax(output_vector, target_vector, axis=-1):
    """CNTK's cross entropy with softmax along ``axis``: ``log_sum_exp(z) - sum(t * z)``, which
    is ``-sum(t * log softmax(z))`` for a target ``t`` that sums to 1 (one-hot or soft); the
    reduced axis is kept with size 1 (``(B, 1)`` for ``(B, C)`` inputs).  The gradients are
    CNTK's: ``softmax(z) - t`` for ``z`` and ``-z`` for ``t``; with CNTK 2.7's softmax
    (``exp(z - max)`` over their sum) a row holding ``+inf`` once has NaN at the inf and 0 at
    the other logits, one holding it twice or more NaN for its whole ``z`` gradient.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     z = sd.Variable.from_numpy_array([[0.0, 0.0]])
        ...     y = F.cross_entropy_with_softmax(z, sd.Variable.from_numpy_array([[0.0, 1.0]]))
        >>> np.round(y.d, 5)
        array([[0.69315]], dtype=float32)
    """
    a, t = _dense_target(output_vector, target_vector, axis)
    z = output_vector
    t = t.to(z.dtype)
    y = torch.logsumexp(z, dim=a, keepdim=True) - torch.sum(t * z, dim=a, keepdim=True)
    if not z.is_floating_point():
        return y
    # torch's logsumexp gradient exp(z - lse) is 0 beside a +inf (exp(-inf)) and NaN at it,
    # as CNTK 2.7's softmax of a row holding one +inf; of a row holding two or more, CNTK's
    # is NaN throughout (their exp(inf - inf) in the sum): a term that is 0 (+0, added to the
    # value: no change but a -0.0's sign) in the other rows, and whose gradient is NaN at
    # every finite z of such a row (its value there NaN, where the loss is NaN already)
    poison = torch.where(torch.isposinf(z).sum(dim=a, keepdim=True) >= 2, math.nan, 0.0)
    finite = torch.nan_to_num(z, nan=0.0, posinf=0.0, neginf=0.0)
    return y + torch.sum(finite * poison, dim=a, keepdim=True)


@op(2, category="metric", precision="float", sequence=unless_class_axis,
    frameworks=("stadyn", "cntk"))
def classification_error(output_vector, target_vector, axis=-1, topN=1):
    """With ``topN`` 1, CNTK 2.7's ``1 - sum(t * hardmax(z))``: 1 where the highest output
    (the earlier class among equal ones: an all-zero output predicts class 0) is not the
    target's class, else 0; a soft target gives 1 minus its value there.  With ``topN`` > 1, 1
    where the target's class (its first largest value) is not among the ``topN`` classes CNTK
    2.7 takes, else 0: those of ``std::partial_sort`` by ``a > b`` (the highest outputs;
    among equal ones and around NaN outputs, which compare false with all, the ones its heap
    keeps, as ``top_k`` takes them).  The reduced axis is kept with size 1.  No gradient.  The
    target is dense (one-hot or soft), of the output's shape (or of axes of 1 there).  With
    ``topN`` 1 the prediction is CNTK 2.7's: the first output no later one exceeds, so a NaN
    is passed by unless it comes first, when it is the prediction (a row of NaN predicts
    class 0).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     e = F.classification_error(sd.Variable.from_numpy_array([[0.2, 0.5, 0.3]]),
        ...                                sd.Variable.from_numpy_array([[0.0, 0.0, 1.0]]))
        >>> e.d
        array([[1.]], dtype=float32)
    """
    a, target_vector = _dense_target(output_vector, target_vector, axis)
    z = output_vector.detach()
    dtype = z.dtype if z.dtype.is_floating_point else torch.float32
    if topN == 1:
        hit = torch.gather(target_vector.detach().to(dtype), a, first_extreme_index(z, a))
        return 1.0 - hit
    # CPUMatrix::VectorMax: the target's first largest; the outputs' partial_sort (its heap)
    target = first_extreme_index(target_vector.detach(), a).movedim(a, -1)
    taken = top_k_index(z.movedim(a, -1), int(topN), ties="cntk")
    hit = (taken == target).any(dim=-1, keepdim=True)
    return (~hit).to(dtype).movedim(-1, a)


def _cntk_bn_shape(x, scale, bias, mean, variance, count, lengths=None, spatial=False,
                   time_constant=5000.0, blend_time_constant=0.0, epsilon=1e-5, batch_stat=None):
    lead = 1 if lengths is None else 2
    size = x.shape[lead] if spatial else math.prod(x.shape[lead:])
    for what, t in (("scale", scale), ("bias", bias), ("running mean", mean),
                    ("running variance", variance)):
        if t.numel() != size:
            raise ValueError(f"{what} has {t.numel()} values; the input needs {size} "
                             f"({'one per channel' if spatial else 'one per element'})")
    return torch.empty_like(x)


def _packed_columns_impl(lengths: torch.Tensor) -> torch.Tensor:
    """The columns of CNTK's minibatch matrix for sequences of ``lengths`` (in their order):
    as many steps as the longest, each sequence put on the first row with room left after the
    ones before it (first fit; MBLayout::InitAsPackedSequences), so ``(3, 1, 5)`` packs into
    two rows of 5: 10 columns, one a gap."""
    rows: list[int] = []
    sizes = [int(n) for n in lengths.reshape(-1).tolist()]
    width = max(sizes, default=0)
    for n in sizes:
        for r, used in enumerate(rows):
            if used + n <= width:
                rows[r] += n
                break
        else:
            rows.append(n)
    return torch.tensor(width * len(rows), dtype=torch.float64, device=lengths.device)


def _packed_columns_fake(lengths):
    return lengths.new_empty((), dtype=torch.float64)


_packed_columns = kernel_op("stadyn_kernels::cntk_packed_columns", "(Tensor lengths) -> Tensor",
                            _packed_columns_impl, _packed_columns_fake)


def _bn_batch_statistics(x, lengths, reduce):
    """(biased variance, mean, samples M, elements per statistic) of ``x`` over the axes
    ``reduce``.  With ``lengths`` ``x`` is ``(B, T, ...)`` and the statistics are CNTK 2.7's:
    over the columns of its packed minibatch matrix (:func:`_packed_columns`), the steps of
    the sequences and the gaps between them, which hold 0 (a padded step of ``x``, whatever
    it holds, reaches nothing); M counts the steps.  M and the elements are then tensors (the
    lengths are values of the run)."""
    if lengths is None:
        var_b, mean_b = torch.var_mean(x, dim=reduce, keepdim=True, unbiased=False)
        return var_b, mean_b, x.shape[0], math.prod(x.shape[a] for a in reduce)
    mask = step_mask(lengths, x.shape[1], x.ndim)
    per_step = math.prod(x.shape[a] for a in reduce if a > 1)
    n = lengths.sum().to(x.dtype)
    elements = _packed_columns(lengths).to(x.dtype) * per_step
    gaps = elements - n * per_step
    zero = x.new_zeros(())
    mean_b = torch.where(mask, x, zero).sum(dim=reduce, keepdim=True) / elements
    centred = torch.where(mask, x - mean_b, zero)
    var_b = ((centred * centred).sum(dim=reduce, keepdim=True) + gaps * mean_b * mean_b) / \
        elements
    return var_b, mean_b, n, elements


@op(7, category="neural", shape=_cntk_bn_shape, precision="mixed")
def cntk_batch_normalization(x, scale, bias, mean, variance, count, lengths=None, spatial=False,
                             time_constant=5000.0, blend_time_constant=0.0, epsilon=1e-5,
                             batch_stat=None):
    """CNTK's batch normalisation: per channel (``spatial``: axis 1 of ``x``) or per element of a
    sample; ``scale``, ``bias`` and the running ``mean``/``variance`` are flat vectors with one
    value per channel or element, ``count`` (one number, shape ``()`` or ``(1,)``) the samples
    seen.  With the sequences' ``lengths`` ``x`` is a sequence ``(B, T, *sample)`` normalised
    step by step (the channel axis is 2): each step is a sample, and the minibatch's statistics
    are CNTK 2.7's, over the steps and the gaps (zeros) of the matrix CNTK packs the sequences
    into.

    Training (``batch_stat``, by default the phase) normalises with the minibatch's statistics
    and updates the running ones in place by CNTK's rule: the first minibatch (``count`` 0)
    replaces them; later ones blend in with ``1 - exp(-M / time_constant)`` for a minibatch of
    M samples (``time_constant`` 0: replace every time, this minibatch's statistics alone;
    infinite: keep the first; negative: the corpus-level average, weight ``M / (M + count)``,
    TrainingNodes.h:2603-2611); the variance is the unbiased one.  ``blend_time_constant`` b
    mixes the running statistics, once updated, into the normalisation with weight
    ``b / (b + M)`` (infinite: 1, the running ones alone; the first minibatch: 0), the mean and
    the inverse standard deviation each, as CNTK's GPU kernel does; they are constants for the
    gradient.  Inference normalises with the running ones.

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
    lead = 1 if lengths is None else 2
    axes = [lead] if spatial else list(range(lead, x.ndim))
    reduce = [a for a in range(x.ndim) if a not in axes]
    shape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
    s, b = scale.reshape(shape), bias.reshape(shape)
    if not batch_stat:
        m, v = mean.reshape(shape), variance.reshape(shape)
        return (x - m) * torch.rsqrt(v + epsilon) * s + b
    var_b, mean_b, n, elements = _bn_batch_statistics(x, lengths, reduce)
    # (before the update below counts this minibatch; a count of shape (1,), CNTK's
    # TensorShape(1), read as the one number it holds)
    first = count.reshape(()) == 0
    if time_constant < 0:
        # corpus-level statistics, no forgetting (TrainingNodes.h:2603-2611): weight
        # M / (M + samples seen before), 1 on the first minibatch
        factor = n / (n + count.reshape(()).to(torch.float64 if x.dtype == torch.float64
                                               else torch.float32))
    elif time_constant == 0:
        factor = 1.0
    elif math.isinf(time_constant):
        factor = 0.0
    elif isinstance(n, torch.Tensor):
        factor = -torch.expm1(-n / time_constant)
    else:
        factor = -math.expm1(-n / time_constant)
    # Few ATen calls (a build traces each; a conv network has one of these per layer), the
    # update's values unchanged: mean + f * (minibatch mean - mean) with f in x's dtype (1 on
    # the first minibatch, else the factor), the variance alike with the unbiased one.
    with torch.no_grad():
        if isinstance(elements, torch.Tensor):
            unbiased = var_b * (elements / torch.clamp(elements - 1, min=1))
        else:
            unbiased = var_b * (elements / max(elements - 1, 1))
        if isinstance(factor, torch.Tensor):
            f = first.to(x.dtype)
            f = f + (1 - f) * factor
        else:       # 1 + 0 * factor is 1; 0 + 1 * factor the factor in x's computing dtype
            wide = x.dtype if x.dtype == torch.float64 else torch.float32   # (half: float)
            f = x.new_full((), factor, dtype=wide)
            f = f.masked_fill_(first, 1.0).to(x.dtype)
        mean.add_(f * (mean_b.reshape(mean.shape).to(mean.dtype) - mean))
        variance.add_(f * (unbiased.reshape(variance.shape).to(variance.dtype) - variance))
        count.add_(n)
    inv_std = torch.rsqrt(var_b + epsilon)
    if not blend_time_constant:
        return (x - mean_b) * inv_std * s + b
    # CNTK's blend (CntkBatchNormalization.cuh, kComputeBatchMeanAndInvStdDev): the mean and
    # the inverse standard deviation mix the running ones just updated with weight w and the
    # minibatch's with 1 - w; w is 0 on the first minibatch
    w = 1.0 if math.isinf(blend_time_constant) else \
        blend_time_constant / (blend_time_constant + n)
    w = (1 - first.to(x.dtype)) * w
    run_mean, run_inv_std = mean.reshape(shape), torch.rsqrt(variance.reshape(shape) + epsilon)
    m_used = ((1 - w) * mean_b + w * run_mean.to(x.dtype)).detach()
    inv_used = ((1 - w) * inv_std + w * run_inv_std.to(x.dtype)).detach()
    # the gradient is CNTK's (kBackpropagateBatchNormGradients): the minibatch's statistics
    # count with weight 1 - w, around the blended values, the running ones not at all --
    #   dx = scale * inv * (dy - (1 - w) * (xhat * dScale + dBias) / M)
    # -- which is not the derivative of the blended forward for 0 < w < 1.  The values stay
    # m_used and inv_used; half the mean square around m_used has the gradient (x - m_used) / M
    k = 1 - w
    m_grad = m_used + k * (mean_b - mean_b.detach())
    spread = 0.5 * (var_b + (mean_b - m_used) ** 2)
    inv_grad = inv_used - k * inv_used ** 3 * (spread - spread.detach())
    return (x - m_grad) * inv_grad * s + b


class _PythonCall(torch.autograd.Function):
    """Runs a CNTK user function's NumPy ``forward``/``backward`` inside autograd (one output,
    or a tuple of several when ``forward_arrays`` gives a list)."""

    @staticmethod
    def forward(ctx, function, for_backward, *xs):
        arrays = [x.detach().cpu().numpy() for x in xs]
        try:
            state, out = function.forward_arrays(arrays, for_backward)
        except Exception as exc:        # the user's own error: to the caller as it is
            raise raised_by_user_code(exc)
        ctx.function, ctx.state = function, state
        ctx.devices = [(x.device, x.dtype) for x in xs]
        ctx.several = isinstance(out, list)
        outs = [torch.as_tensor(np.ascontiguousarray(o), device=xs[0].device).to(xs[0].dtype)
                for o in (out if ctx.several else [out])]
        return tuple(outs) if ctx.several else outs[0]

    @staticmethod
    def backward(ctx, *grads):
        given = [g.detach().cpu().numpy() for g in grads]
        grads = ctx.function.backward_arrays(ctx.state, given if ctx.several else given[0])
        out = [None if g is None else torch.as_tensor(np.ascontiguousarray(g), device=d)
               .to(t) for g, (d, t) in zip(grads, ctx.devices)]
        return (None, None, *out)


def _user_function_shape(*x, function=None):
    """The output's meta tensor, or a tuple of them (``output_shape`` giving a list of
    ``(shape, dtype)``)."""
    found = function.output_shape([tuple(t.shape) for t in x])
    grad = any(t.requires_grad for t in x)
    outs = [torch.empty(tuple(shape), dtype=torch.float32 if dtype is None else dtype,
                        device="meta").requires_grad_(grad)
            for shape, dtype in (found if isinstance(found, list) else [found])]
    return tuple(outs) if isinstance(found, list) else outs[0]


def _user_function_sequences(attrs: dict, inputs) -> "str | tuple":
    """The sequence axes of a user function's outputs: those its ``function`` names
    (``sequence_forms()``: a form per output, ``"of:K"`` for the axis of input K, ``"drop"``),
    else each kept as the shapes say."""
    forms = getattr(attrs["function"], "sequence_forms", None)
    return "keep" if forms is None else tuple(forms())


@op(category="misc", shape=_user_function_shape, traceable=False,
    sequence=_user_function_sequences,
    unstorable="a CNTK user function runs Python; ONNX and other formats hold only catalog ops "
               "(Stadyn's model file keeps its module, class and serialize() state)")
def cntk_user_function(*x, function=None):
    """A CNTK user function: ``function`` (a ``cntk.ops.functions.UserFunction``, or any object
    with ``forward_arrays(arrays, for_backward) -> (state, array)`` (``for_backward``: whether
    a gradient may follow: grad mode on and an input needing one, CNTK's outputs to retain
    state for), ``backward_arrays(state, gradient) -> [gradient per input]`` and
    ``output_shape(input_shapes) -> (shape, dtype)``) computes the output from the inputs as
    NumPy arrays, and the gradients.  A function of several
    outputs gives ``forward_arrays(arrays, for_backward) -> (state, [array per output])``,
    ``output_shape`` a list of ``(shape, dtype)`` and takes ``backward_arrays(state,
    [gradient per output])``; the op then returns a tuple.  ``function.sequence_forms()``, if
    it has one, says each output's sequence axis (``"of:K"``: input K's, ``"drop"``: none);
    sequences' lengths can be passed as further inputs (their gradient ``None``).  Graphs
    holding it run eagerly (its Python cannot be traced); Stadyn's model file keeps it by its
    ``saved_form()`` (module, class, name and state; ``serialize/op_rules/_user_function.py``),
    other formats not.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> class Twice:
        ...     def forward_arrays(self, a, for_backward): return None, 2 * a[0]
        ...     def backward_arrays(self, state, g): return [2 * g]
        ...     def output_shape(self, shapes): return shapes[0], None
        >>> with sd.auto_forward():
        ...     y = F.cntk_user_function(sd.Variable.from_numpy_array(np.ones(2)), function=Twice())
        >>> y.d.tolist()
        [2.0, 2.0]
    """
    for_backward = torch.is_grad_enabled() and any(t.requires_grad for t in x)
    return _PythonCall.apply(function, for_backward, *x)


def _eye_like_shape(x):
    if x.ndim != 2:
        raise ValueError(f"cntk_eye_like needs a matrix, got shape {tuple(x.shape)}")
    return torch.empty_like(x)


@op(1, category="misc", shape=_eye_like_shape)
def cntk_eye_like(x):
    """A matrix of ``x``'s shape and dtype with ones on the diagonal and zeros elsewhere (CNTK's
    ``eye_like``: for a batch of vectors, sample ``i`` is the ``i``-th unit vector).  No
    gradient.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.cntk_eye_like(sd.Variable.from_numpy_array(np.zeros((2, 3), np.float32)))
        >>> y.d.tolist()
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    return torch.eye(x.shape[0], x.shape[1], dtype=x.dtype, device=x.device)


class _MaxUnpooledGradient(torch.autograd.Function):
    """The unpooled values passed on; backward: the pooled values get the max pooling of the
    output's gradient, the unpooled values nothing."""

    @staticmethod
    def forward(ctx, unpooled, values, kernel, stride, lower_pad, upper_pad):
        ctx.geometry = (kernel, stride, lower_pad, upper_pad)
        ctx.values_shape = tuple(values.shape)
        return unpooled.clone()

    @staticmethod
    def backward(ctx, dy):
        kernel, stride, lower_pad, upper_pad = ctx.geometry
        n = len(kernel)
        # the windows over the padded grid, the padding never a maximum (a negative pad crops)
        sides = [p for lo, hi in zip(reversed(lower_pad), reversed(upper_pad)) for p in (lo, hi)]
        grid = torch.nn.functional.pad(dy, sides, value=-math.inf)
        pool = (torch.nn.functional.max_pool1d, torch.nn.functional.max_pool2d,
                torch.nn.functional.max_pool3d)[n - 1]
        flat = grid.reshape((-1, 1) + tuple(grid.shape[-n:]))
        pooled = pool(flat, tuple(kernel), tuple(stride))
        return None, pooled.reshape(ctx.values_shape), None, None, None, None


@op(2, category="neural", frameworks=("cntk",))
def cntk_max_unpooled(unpooled, values, kernel, stride, lower_pad, upper_pad):
    """``unpooled``, the max unpooling of ``values`` (put back at their windows' maxima),
    passed on with CNTK 2.7's gradient (``MaxUnpoolingNode::BackpropTo``): ``values`` get the
    max pooling of the output's gradient over each window -- ``kernel`` and ``stride`` over
    the trailing ``len(kernel)`` axes, padded by ``lower_pad``/``upper_pad`` (per axis;
    negative: positions cropped), the padding never a maximum -- whatever place the value went
    to; ``unpooled`` gets none.  Up to 3 pooled axes.  Where ``values`` also reach the loss
    another way their gradients add (CNTK 2.7's node overwrites the other path's: a known
    difference, docs/cntk-names.md).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> v = sd.Variable.from_numpy_array(np.array([[[[5.0]]]]), need_grad=True)
        >>> u = sd.Variable.from_numpy_array(np.array([[[[0.0, 5.0], [0.0, 0.0]]]]))
        >>> with sd.auto_forward():
        ...     y = F.cntk_max_unpooled(u, v, (2, 2), (2, 2), (0, 0), (0, 0))
        ...     F.sum(F.mul2(y, sd.Variable.from_numpy_array(np.array([[[[1.0, 2.0],
        ...                                                            [7.0, 3.0]]]])))).backward()
        >>> v.g.ravel().tolist()         # the largest output gradient of the window
        [7.0]
    """
    n = len(kernel)
    if not 1 <= n <= 3 or len(stride) != n or len(lower_pad) != n or len(upper_pad) != n:
        raise ValueError(f"cntk_max_unpooled: {n} pooled axes (kernel {tuple(kernel)}, stride "
                         f"{tuple(stride)}, pads {tuple(lower_pad)}/{tuple(upper_pad)}); 1 to 3 "
                         "axes, each given a stride and two pads")
    return _MaxUnpooledGradient.apply(unpooled, values, tuple(int(k) for k in kernel),
                                      tuple(int(s) for s in stride),
                                      tuple(int(p) for p in lower_pad),
                                      tuple(int(p) for p in upper_pad))
