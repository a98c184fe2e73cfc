"""ATen kernels a compiled step keeps on the CPU, where inductor's own code for an op is slower.

Inductor compiles most of a training step's elementwise work into fused C++ loops, which is what
a compiled step is for.  For max pooling it measurably loses on the CPU
(``torch.profiler`` with ``torch._inductor.config.cpp.enable_kernel_profile``, the CIFAR ConvNet
at batch 64 on one Zen 4 core, docs/performance.md):

* the gradient: inductor lowers ``max_pool2d_with_indices_backward`` to a scatter that walks the
  saved indices, adds each gradient into a zeroed NCHW buffer and transposes the result to
  channels-last: ~49 ms per step for the first pooling (64 x 64 x 32 x 32, 3x3 windows, stride
  2), against ~5.5 ms for ATen's kernel over both poolings;
* the pooling itself: ~14 ms per step in inductor's loops against ~5 ms in ATen's kernel.

:func:`keep_max_pooling` therefore hands those nodes to inductor as opaque custom ops that call
ATen's kernels, which the compiled program calls as it calls a convolution.  The values are
ATen's, as in a static plan.
"""

from __future__ import annotations

import torch
import torch.fx as fx

__all__ = ["keep_max_pooling"]

_aten = torch.ops.aten


@torch.library.custom_op("stadyn_kernels::max_pool2d", mutates_args=())
def _max_pool2d(x: torch.Tensor, kernel_size: list[int], stride: list[int],
                padding: list[int], dilation: list[int], ceil_mode: bool
                ) -> tuple[torch.Tensor, torch.Tensor]:
    values, indices = _aten.max_pool2d_with_indices(x, kernel_size, stride, padding, dilation,
                                                    ceil_mode)
    return values, indices


@_max_pool2d.register_fake
def _max_pool2d_fake(x, kernel_size, stride, padding, dilation, ceil_mode):
    # ATen's shape rule gives the sizes and the memory format (the input's)
    return _aten.max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode)


@torch.library.custom_op("stadyn_kernels::max_pool2d_backward", mutates_args=())
def _max_pool2d_backward(grad: torch.Tensor, x: torch.Tensor, kernel_size: list[int],
                         stride: list[int], padding: list[int], dilation: list[int],
                         ceil_mode: bool, indices: torch.Tensor) -> torch.Tensor:
    return _aten.max_pool2d_with_indices_backward(grad, x, kernel_size, stride, padding,
                                                  dilation, ceil_mode, indices)


@_max_pool2d_backward.register_fake
def _max_pool2d_backward_fake(grad, x, kernel_size, stride, padding, dilation, ceil_mode,
                              indices):
    return _aten.max_pool2d_with_indices_backward(grad, x, kernel_size, stride, padding,
                                                  dilation, ceil_mode, indices)


_KEPT = {
    _aten.max_pool2d_with_indices.default: torch.ops.stadyn_kernels.max_pool2d.default,
    _aten.max_pool2d_with_indices_backward.default:
        torch.ops.stadyn_kernels.max_pool2d_backward.default,
}


def _all_arguments(n: fx.Node) -> list | None:
    """``n``'s arguments in the schema's order with the defaults filled in (the custom ops
    spell every argument out); None if one is missing."""
    args = list(n.args)
    for a in n.target._schema.arguments[len(args):]:
        if a.name in n.kwargs:
            args.append(n.kwargs[a.name])
        elif a.has_default_value():
            args.append(a.default_value)
        else:
            return None
    return args


def keep_max_pooling(gm: fx.GraphModule) -> int:
    """Call ATen's kernels for every CPU 2-d max pooling and its gradient in ``gm``, opaque to
    inductor (see the module's docstring); returns the number of nodes changed.

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> from stadyn.compile._kernels import keep_max_pooling
        >>> def pool_grad(x):
        ...     x = x.detach().requires_grad_()
        ...     y = torch.nn.functional.max_pool2d(x, 3, 2, 1)
        ...     return torch.autograd.grad(y.sum(), x)[0]
        >>> x = torch.randn(2, 4, 8, 8)
        >>> gm = make_fx(pool_grad)(x)
        >>> keep_max_pooling(gm), torch.equal(gm(x), pool_grad(x))
        (2, True)
    """
    count = 0
    for n in gm.graph.nodes:
        kept = _KEPT.get(n.target) if n.op == "call_function" else None
        first = n.args[0] if kept is not None and n.args else None
        val = first.meta.get("val") if isinstance(first, fx.Node) else None
        if not (isinstance(val, torch.Tensor) and val.device.type == "cpu"):
            continue
        args = _all_arguments(n)
        if args is None:
            continue
        n.target, n.args, n.kwargs = kept, tuple(args), {}
        count += 1
    if count:
        gm.recompile()
    return count
