"""Maxima and minima by comparison, as CNTK 2.7 (and NNabla 1.39) compute them, where torch's
kernels differ at NaN and ties: the element-wise pick ``a > b ? a : b`` (``maximum2``,
``minimum2``), CNTK's reductions that pass NaN by and give every tie the gradient, and CNTK's
argmax (the first value no later one exceeds).  Each is a torch operator with its autograd
formula (:func:`._kernels.kernel_op`), so a static plan and a compiled step record it as one
call and every mode computes the same.  Imported by op modules only.
"""

from __future__ import annotations

import contextlib
import contextvars
import math

import torch

from ._kernels import kernel_op

# While set, each kernel here is traced as the torch ops it is made of (an autograd.Function
# with the same formula and the same backward), which inductor can fuse; else as one opaque
# call (whose eager kernel may take data-dependent shortcuts: the same numbers, faster).
_AS_TORCH_OPS = contextvars.ContextVar("stadyn_picks_as_torch_ops", default=False)


@contextlib.contextmanager
def kernels_as_torch_ops():
    """Within this context the CNTK-rule picks and reductions (``pick_max``, ``pick_min``,
    ``cntk_extreme``) are computed by plain torch ops with a :class:`torch.autograd.Function`
    for the gradient, so a trace records ops that inductor can fuse with their neighbours
    (``compile_step`` traces a compiled program so); outside, each is one torch operator,
    opaque to inductor.  Both give the same numbers, bit for bit, and so does inductor's code
    for them.  ``cntk_max_pool`` and ``cntk_sqrt`` stay operators: the pooling kernel skips
    its NaN pass where no maximum is NaN, which a traced form cannot (it measured slower
    compiled), and inductor's ``sqrt`` rounds otherwise than ATen's.

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> x = torch.tensor([[float("nan"), 1.0, 2.0, 0.0]])
        >>> with kernels_as_torch_ops():
        ...     gm = make_fx(lambda t: cntk_extreme(t, [1], False, False))(x)
        >>> "stadyn_kernels" in gm.code, gm(x).tolist()
        (False, [2.0])
    """
    token = _AS_TORCH_OPS.set(True)
    try:
        yield
    finally:
        _AS_TORCH_OPS.reset(token)


def _as_function(name: str, forward, setup, backward) -> type:
    """An autograd.Function of ``forward`` (traceable: no data-dependent branch) with the
    ``setup_context`` and ``backward`` a :func:`kernel_op` takes."""
    return type(name, (torch.autograd.Function,),
                {"forward": staticmethod(forward), "setup_context": staticmethod(setup),
                 "backward": staticmethod(backward)})


def _run(kernel, function: type, *args):
    """``kernel(*args)``, or within :func:`kernels_as_torch_ops` ``function.apply(*args)``.
    (The gradients' sums over broadcast axes are traced either way, the kernels' backward
    being torch ops: inductor adds them in its own order.)"""
    return function.apply(*args) if _AS_TORCH_OPS.get() else kernel(*args)


# CNTK 2.7 and NNabla 1.39 both compute maximum as ``a > b ? a : b`` (minimum ``a < b``): a NaN
# in ``a`` gives ``b``, one in ``b`` gives NaN, a tie gives ``b`` (the sign of a zero included),
# and the gradient goes to the operand picked -- ``torch.maximum`` propagates either NaN and
# splits a tie's gradient in halves.  ``torch.where`` on a comparison would say it directly but
# is ~15x slower than ``torch.maximum`` on AVX2 CPUs (its boolean-mask path is not vectorised in
# torch 2.13); a clamp of ``b`` by ``a`` with NaN read as -inf is as fast, and exact.


def _pick_impl(a: torch.Tensor, b: torch.Tensor, smaller: bool, cntk: bool,
               in_place: bool = True) -> torch.Tensor:
    dtype = torch.result_type(a, b)
    a, b = torch.broadcast_tensors(a.to(dtype), b.to(dtype))
    if not dtype.is_floating_point:
        return torch.clamp(b, max=a) if smaller else torch.clamp(b, min=a)
    # a NaN in ``a`` never wins the comparison: b is taken there.  The clamp writes over the
    # NaN-free copy of ``a`` (one allocation: a fresh one costs more than a pass here)
    out = torch.nan_to_num(a, nan=math.inf if smaller else -math.inf, posinf=math.inf,
                           neginf=-math.inf)
    if not in_place:        # (traced for inductor, which plans its own buffers)
        return torch.clamp(b, max=out) if smaller else torch.clamp(b, min=out)
    return torch.clamp(b, max=out, out=out) if smaller else torch.clamp(b, min=out, out=out)


def _pick_fake(a: torch.Tensor, b: torch.Tensor, smaller: bool, cntk: bool) -> torch.Tensor:
    shape = torch.broadcast_shapes(a.shape, b.shape)
    return a.new_empty(shape, dtype=torch.result_type(a, b))


def _pick_setup(ctx, inputs, output):
    a, b, smaller, cntk = inputs
    ctx.save_for_backward(a, b)
    ctx.smaller, ctx.cntk = smaller, cntk


def _pick_backward(ctx, g):
    a, b = ctx.saved_tensors
    took_a = (a < b) if ctx.smaller else (a > b)
    ga = (g * took_a).sum_to_size(a.shape) if ctx.needs_input_grad[0] else None
    gb = None
    if ctx.needs_input_grad[1]:
        # CNTK 2.7: b takes what a does not (unordered pairs included); NNabla 1.39: b takes
        # it where b <= a is ordered, so an unordered pair passes it to neither
        took_b = ~took_a if ctx.cntk else ((a >= b) if ctx.smaller else (a <= b))
        gb = (g * took_b).sum_to_size(b.shape)
    return ga, gb, None, None


_pick = kernel_op("stadyn_kernels::pick_max_min",
                  "(Tensor a, Tensor b, bool smaller, bool cntk) -> Tensor",
                  _pick_impl, _pick_fake, _pick_backward, _pick_setup)
_PickFunction = _as_function("_PickFunction",
                             lambda a, b, smaller, cntk: _pick_impl(a, b, smaller, cntk, False),
                             _pick_setup, _pick_backward)


def pick_max(a: torch.Tensor, b: torch.Tensor, cntk: bool = False) -> torch.Tensor:
    """``a > b ? a : b`` element-wise (broadcasting), CNTK 2.7's and NNabla 1.39's maximum: a
    NaN in ``a`` gives ``b``, one in ``b`` NaN, a tie ``b``.  The gradient goes to the operand
    taken; where the two are unordered (a NaN) to ``b`` with ``cntk``, else (NNabla's rule)
    to neither.

    Example:
        >>> import torch
        >>> pick_max(torch.tensor([float("nan"), 3.0]), torch.tensor([1.0, float("nan")]))
        tensor([1., nan])
    """
    return _run(_pick, _PickFunction, a, b, False, cntk)


def pick_min(a: torch.Tensor, b: torch.Tensor, cntk: bool = False) -> torch.Tensor:
    """``a < b ? a : b`` element-wise (see :func:`pick_max`).

    Example:
        >>> import torch
        >>> pick_min(torch.tensor([float("nan"), 3.0]), torch.tensor([1.0, float("nan")]))
        tensor([1., nan])
    """
    return _run(_pick, _PickFunction, a, b, True, cntk)


# -- CNTK 2.7's reductions: NaN passed by, every tie takes the gradient -------------------------


def _skip_nan(x: torch.Tensor, smaller: bool) -> torch.Tensor:
    """``x`` with NaN as the value that never wins (-inf for a maximum, inf for a minimum);
    ``nan_to_num`` is vectorised, a ``where`` on ``isnan`` is not on AVX2 CPUs."""
    return torch.nan_to_num(x, nan=math.inf if smaller else -math.inf, posinf=math.inf,
                            neginf=-math.inf)


def _cntk_extreme_impl(x: torch.Tensor, dims: list[int], keepdim: bool,
                       smaller: bool) -> torch.Tensor:
    extreme = torch.amin if smaller else torch.amax
    if not x.is_floating_point():
        return extreme(x, dim=dims, keepdim=keepdim)
    if not bool(torch.isnan(x).any()):
        return extreme(x, dim=dims, keepdim=keepdim)
    return _cntk_fold(x, dims, keepdim, smaller)


def _cntk_fold(x: torch.Tensor, dims: list[int], keepdim: bool, smaller: bool) -> torch.Tensor:
    """CNTK 2.7's fold, written for any ``x`` (without NaN it is ``amax``'s answer)."""
    extreme = torch.amin if smaller else torch.amax
    if not x.is_floating_point():
        return extreme(x, dim=dims, keepdim=keepdim)
    nan = torch.isnan(x)
    # CNTK 2.7 folds the reduced values in memory order (the last axis fastest) with
    # ``acc = acc > v ? acc : v``: a NaN resets the fold, so the result is the extreme of the
    # values after the last NaN, NaN where the last value is NaN
    dims = sorted(d % x.ndim for d in dims) if dims else list(range(x.ndim))
    kept = [d for d in range(x.ndim) if d not in dims]
    order, folded = kept + dims, [x.shape[d] for d in kept] + [-1]
    flat, flat_nan = x.permute(order).reshape(folded), nan.permute(order).reshape(folded)
    k = flat.shape[-1]
    position = torch.arange(k, device=x.device)
    last_nan = torch.where(flat_nan, position, -1).amax(dim=-1, keepdim=True)
    after = _skip_nan(flat, smaller).masked_fill(position <= last_nan, math.inf if smaller
                                                 else -math.inf)
    y = extreme(after, dim=-1)
    y = torch.where(last_nan.squeeze(-1) == k - 1, math.nan, y)
    if keepdim:
        for d in dims:
            y = y.unsqueeze(d)
    return y


def _cntk_extreme_fake(x, dims, keepdim, smaller):
    return (torch.amin if smaller else torch.amax)(x, dim=dims, keepdim=keepdim)


def _cntk_extreme_setup(ctx, inputs, output):
    x, dims, keepdim, _ = inputs
    ctx.save_for_backward(x, output)
    ctx.dims, ctx.keepdim = dims, keepdim


def _cntk_extreme_backward(ctx, g):
    x, y = ctx.saved_tensors
    if not ctx.keepdim:
        for d in sorted(ctx.dims):
            g, y = g.unsqueeze(d), y.unsqueeze(d)
    # every value equal to the result takes the whole gradient (CNTK 2.7's ReduceElements)
    return g * (x == y), None, None, None


_cntk_extreme = kernel_op("stadyn_kernels::cntk_reduce_extreme",
                          "(Tensor x, int[] dims, bool keepdim, bool smaller) -> Tensor",
                          _cntk_extreme_impl, _cntk_extreme_fake, _cntk_extreme_backward,
                          _cntk_extreme_setup)


_CntkExtremeFunction = _as_function("_CntkExtremeFunction", _cntk_fold, _cntk_extreme_setup,
                                    _cntk_extreme_backward)


def cntk_extreme(x: torch.Tensor, dims: list[int], keepdim: bool, smaller: bool) -> torch.Tensor:
    """CNTK 2.7's ``reduce_max`` (``smaller``: ``reduce_min``) over ``dims``: its fold in
    memory order, which a NaN restarts (the extreme of the values after the last NaN; NaN where
    the last value is NaN), and the gradient to every value equal to the result.

    Example:
        >>> import torch
        >>> x = torch.tensor([[float("nan"), 1.0, 2.0, 2.0]], requires_grad=True)
        >>> y = cntk_extreme(x, [1], False, False)
        >>> y.sum().backward()
        >>> y.tolist(), x.grad.tolist()
        ([2.0], [[0.0, 0.0, 1.0, 1.0]])
    """
    return _run(_cntk_extreme, _CntkExtremeFunction, x, list(dims), keepdim, smaller)


def first_extreme_index(x: torch.Tensor, axis: int, smaller: bool = False) -> torch.Tensor:
    """CNTK 2.7's argmax (``smaller``: argmin) along ``axis`` (kept, size 1): the first value
    that no later one exceeds, as its scan ``if (best < x[i])`` from ``x[0]`` finds it
    (``CPUMatrix::VectorMax``, Source/Math/CPUMatrixImpl.h:3808-3822, which
    ClassificationError and Hardmax call) -- a NaN in the first place wins, a later NaN is
    passed by, ties take the first.  ``torch.argmax`` takes the first NaN anywhere.

    Example:
        >>> import torch
        >>> nan = float("nan")
        >>> first_extreme_index(torch.tensor([[nan, 1.0, 2.0], [1.0, nan, 3.0]]), 1).tolist()
        [[0], [2]]
    """
    arg = torch.argmin if smaller else torch.argmax
    if not x.is_floating_point() or x.shape[axis] < 2:
        return arg(x, dim=axis, keepdim=True)
    head, tail = x.split([1, x.shape[axis] - 1], dim=axis)
    return arg(torch.cat([head, _skip_nan(tail, smaller)], dim=axis), dim=axis, keepdim=True)


# -- CNTK 2.7's max pooling: NaN passed by ----------------------------------------------------

_POOL = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d,
         3: torch.nn.functional.max_pool3d}


def _cntk_max_pool_impl(x, kernel, stride, pad):
    pool = _POOL[len(kernel)]
    y, index = pool(x, kernel, stride, pad, return_indices=True)
    # torch's pooling makes a NaN its window's maximum, so without a NaN among the maxima no
    # window holds one and its answer is CNTK's: the NaN pass is paid only where there is NaN
    if x.is_floating_point() and bool(torch.isnan(y).any()):
        y, index = pool(_skip_nan(x, False), kernel, stride, pad, return_indices=True)
    return y, index


def _cntk_max_pool_fake(x, kernel, stride, pad):
    return _POOL[len(kernel)](x, kernel, stride, pad, return_indices=True)


def _cntk_max_pool_setup(ctx, inputs, output):
    x, kernel, stride, pad = inputs
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(x, output[0], output[1])
    ctx.window = (list(kernel), list(stride), list(pad))


def _pool_grad(gy, x, index, kernel, stride, pad):
    """ATen's gradient of the pooling (what a compiled step keeps: compile/_kernels.py); the
    1-d one is the 2-d one over a plane of height 1."""
    n = len(kernel)
    if n == 1:
        return torch.ops.aten.max_pool2d_with_indices_backward(
            gy.unsqueeze(-2), x.unsqueeze(-2), [1] + list(kernel), [1] + list(stride),
            [0] + list(pad), [1, 1], False, index.unsqueeze(-2)).squeeze(-2)
    backward = (torch.ops.aten.max_pool2d_with_indices_backward if n == 2
                else torch.ops.aten.max_pool3d_with_indices_backward)
    return backward(gy, x, list(kernel), list(stride), list(pad), [1] * n, False, index)


# A window whose maximum is -inf (NaN and -inf only) took its first value, maybe a NaN: no
# gradient to a NaN.  (CNTK 2.7 gives it to the first value equal to the maximum: in
# [NaN, -inf] the -inf, which gets none here; measured, left as it was.)  The
# kernel clears them only where some window's maximum is -inf (else no NaN was taken): an
# operator of its own, as a static plan traces the backward.

def _cntk_max_pool_grad_impl(gy, x, y, index, kernel, stride, pad):
    gx = _pool_grad(gy, x, index, kernel, stride, pad)
    if x.is_floating_point() and bool(torch.isneginf(y).any()):
        gx = gx.masked_fill_(torch.isnan(x), 0.0)
    return gx


_cntk_max_pool_grad = kernel_op(
    "stadyn_kernels::cntk_max_pool_grad",
    "(Tensor gy, Tensor x, Tensor y, Tensor index, int[] kernel, int[] stride, int[] pad) "
    "-> Tensor", _cntk_max_pool_grad_impl,
    lambda gy, x, y, index, kernel, stride, pad: torch.empty_like(x))


def _cntk_max_pool_backward(ctx, gy, _gindex):
    x, y, index = ctx.saved_tensors
    return _cntk_max_pool_grad(gy, x, y, index, *ctx.window), None, None, None


_cntk_max_pool = kernel_op("stadyn_kernels::cntk_max_pool",
                           "(Tensor x, int[] kernel, int[] stride, int[] pad) -> (Tensor, Tensor)",
                           _cntk_max_pool_impl, _cntk_max_pool_fake, _cntk_max_pool_backward,
                           _cntk_max_pool_setup)


def cntk_max_pool(x: torch.Tensor, kernel, stride, pad) -> torch.Tensor:
    """CNTK 2.7's max pooling of ``x`` (``(N, C, *spatial)``, ``len(kernel)`` spatial axes):
    NaN passed by (a window of NaN only gives -inf and no gradient), the first of tied values
    takes the gradient; else ``torch.nn.functional.max_poolNd``'s arguments and answers.

    Example:
        >>> import torch
        >>> nan = float("nan")
        >>> cntk_max_pool(torch.tensor([[[nan, 1.0, nan, nan]]]), [2], [2], [0]).tolist()
        [[[1.0, -inf]]]
    """
    # always the kernel, compiled steps included: a traced form would pay the NaN pass the
    # kernel skips where no maximum is NaN (benchmarks/cntk_max_pool_ab.py: compiled ReLU +
    # 2x2 pooling 1.12x torch's traced, 1.00x with the kernel)
    return _cntk_max_pool(x, list(kernel), list(stride), list(pad))[0]


# -- CNTK 2.7's sqrt: sqrt(x > 0 ? x : 0) ------------------------------------------------------
# Source/Math/TensorOps.h:191-195 (Sqrt) and :326 (its gradient, g / (2 * output)): NaN and
# negative numbers give 0, whose gradient is inf.


def _cntk_sqrt_impl(x: torch.Tensor) -> torch.Tensor:
    # abs: clamp keeps -0.0, whose root is -0.0; CNTK's 0 is +0.0 (and its gradient +inf)
    return torch.sqrt(torch.nan_to_num(torch.clamp(x, min=0), nan=0.0, posinf=math.inf)).abs_()


def _cntk_sqrt_fake(x: torch.Tensor) -> torch.Tensor:
    # torch.sqrt of integers or bools gives the default float dtype (the kernel's output)
    return torch.empty_like(x, dtype=x.dtype if x.is_floating_point()
                            else torch.get_default_dtype())


def _cntk_sqrt_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _cntk_sqrt_backward(ctx, g):
    y, = ctx.saved_tensors
    return g / (2 * y)


_cntk_sqrt = kernel_op("stadyn_kernels::cntk_sqrt", "(Tensor x) -> Tensor", _cntk_sqrt_impl,
                       _cntk_sqrt_fake, _cntk_sqrt_backward, _cntk_sqrt_setup)
# (no traced form: inductor's vectorised sqrt is not ATen's, ~1 value in 6 differs in its
# last bit)


def cntk_sqrt(x: torch.Tensor) -> torch.Tensor:
    """CNTK 2.7's square root, ``sqrt(x > 0 ? x : 0)``: 0 for NaN and negative numbers, the
    gradient ``g / (2 * sqrt)`` (inf there).

    Example:
        >>> import torch
        >>> cntk_sqrt(torch.tensor([4.0, -1.0, float("nan")])).tolist()
        [2.0, 0.0, 0.0]
    """
    return _cntk_sqrt(x)
