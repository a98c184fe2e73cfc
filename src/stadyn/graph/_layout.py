"""Memory-layout planning for static plans: channels-last convolution chains on CPU.

oneDNN's CPU convolutions work in a channels-last (NHWC) layout.  Given NCHW tensors, every
convolution (forward and both backward products) reorders its input, its output and its weight
and back again, and max pooling runs ATen's slower NCHW kernel.  A static plan sees the whole
network before it runs, so it can choose the layout once: :func:`plan_layout` picks the
convolutions whose inputs the plan gives in channels-last strides, :func:`channels_last_arguments`
converts them while the plan is traced (a no-op for a tensor already in that layout, so only a
chain's first convolution and the weights convert), and what follows a convolution — ReLU,
pooling, batch normalisation, the dropout mask, the backward — stays channels-last because ATen
keeps the layout of its inputs.  A chain ends where an op needs another layout (a reshape to a
dense layer copies once, as it would in NCHW order).  Only strides change: shapes, and so every
Variable, are NCHW as before; the gradients a plan hands out are restored to the standard
layout (:func:`standard_layout`), while the values it gives Variables stay channels-last until
their first reader converts them (``_deferred_layout.py``).

The rule (:func:`plan_layout`) is measured, per convolution: docs/performance.md has the
figures.  A plan with a batch normalisation or average pooling stays NCHW (their CPU kernels
gained nothing on the digits CNN, which keeps its bit-identical static and dynamic runs), and so
does a plan with a convolution over a single input channel (a grayscale image: LeNet on MNIST
ran 5-25% slower channels-last, whether that first convolution ran channels-last or only the
ones after it, where the same nets on three channels gained 1.3-1.5x), and anything off the CPU.
"""

from __future__ import annotations

from typing import Sequence

import torch

from ._deferred_layout import channels_last_only
from ._variable import FunctionNode

__all__ = ["plan_layout", "channels_last_arguments", "standard_layout"]

_CL = torch.channels_last
#: Ops whose presence keeps a plan NCHW (measured: no gain, see the module docstring).
_KEEP_NCHW = frozenset({"batch_normalization", "fused_batch_normalization",
                        "sync_batch_normalization", "average_pooling"})
_MIN_IN_CHANNELS = 2
_TYPES = (torch.float32, torch.bfloat16)


def _planar_convolution(node: FunctionNode) -> bool:
    """A 2-d, channel-first convolution over a ``(N, C, H, W)`` input (``base_axis`` 1) of at
    least two channels."""
    return _channel_first_2d(node) and node.inputs[1].shape[1] >= _MIN_IN_CHANNELS


def _single_channel_convolution(node: FunctionNode) -> bool:
    return _channel_first_2d(node) and node.inputs[1].shape[1] < _MIN_IN_CHANNELS


def _channel_first_2d(node: FunctionNode) -> bool:
    """A 2-d, channel-first convolution over a ``(N, C, H, W)`` input (``base_axis`` 1)."""
    if node.spec.name != "convolution" or len(node.inputs) < 2:
        return False
    # node.args holds the call's arguments after the two inputs: bias (an input, or None),
    # then base_axis, pad, stride, dilation, group, channel_last (F.convolution's order)
    kw = dict(zip(("base_axis", "pad", "stride", "dilation", "group", "channel_last"),
                  node.args[3:]))
    kw.update(node.kwargs or {})
    x, w = node.inputs[0], node.inputs[1]
    return (not kw.get("channel_last", False) and kw.get("base_axis", 1) == 1
            and len(x.shape) == 4 and len(w.shape) == 4)


def plan_layout(nodes: Sequence[FunctionNode], leaf_tensors: Sequence[torch.Tensor]
                ) -> frozenset[int]:
    """The ids (``id(node)``) of the convolution nodes a plan runs on channels-last inputs
    (empty: the plan stays NCHW).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import Subgraph
        >>> x, w = sd.Variable((8, 16, 12, 12)), sd.Variable((32, 16, 3, 3), need_grad=True)
        >>> y = F.relu(F.convolution(x, w, pad=(1, 1)))
        >>> sub = Subgraph([y])
        >>> len(plan_layout(sub.nodes, sub.leaf_tensors()))
        1
    """
    if any(t.device.type != "cpu" for t in leaf_tensors):
        return frozenset()
    if any(n.spec.name in _KEEP_NCHW or _single_channel_convolution(n) for n in nodes):
        return frozenset()
    return frozenset(id(n) for n in nodes if _planar_convolution(n))


def channels_last_arguments(node: FunctionNode, args: list, kwargs: dict
                            ) -> tuple[list, dict]:
    """``node``'s input and weight tensors (its first two arguments) in channels-last strides.

    Example:
        >>> import torch, stadyn as sd, stadyn.functions as F
        >>> y = F.convolution(sd.Variable((2, 4, 5, 5)), sd.Variable((3, 4, 3, 3)))
        >>> args, _ = channels_last_arguments(y.parent, [torch.ones(2, 4, 5, 5),
        ...                                              torch.ones(3, 4, 3, 3)], {})
        >>> [a.is_contiguous(memory_format=torch.channels_last) for a in args]
        [True, True]
    """
    args = list(args)
    for i in (0, 1):
        t = args[i]
        if isinstance(t, torch.Tensor) and t.dtype in _TYPES and t.ndim == 4:
            args[i] = t.contiguous(memory_format=_CL)
    return args, kwargs


def standard_layout(t):
    """``t`` in the standard (row-major) layout: a channels-last tensor a plan would hand out
    is copied once; anything else is returned as it is.

    Example:
        >>> import torch
        >>> t = torch.ones(2, 3, 4, 4).contiguous(memory_format=torch.channels_last)
        >>> standard_layout(t).is_contiguous(), standard_layout(t).shape
        (True, torch.Size([2, 3, 4, 4]))
    """
    return t.contiguous() if channels_last_only(t) else t
