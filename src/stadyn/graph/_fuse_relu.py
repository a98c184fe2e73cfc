"""Fusing a channels-last CPU convolution and NNabla's ReLU into one oneDNN call (a pass of
:func:`~stadyn.graph.plan_passes`): the ReLU then costs no pass over memory of its own.
"""

from __future__ import annotations

import functools

import torch
import torch.fx as fx

from ._deferred_layout import channels_last_only
from ._fx_nodes import output_values

__all__ = ["fuse_convolution_relu"]

_aten = torch.ops.aten


_CONVOLUTION_RELU = getattr(getattr(torch.ops, "mkldnn", None), "_convolution_pointwise", None)


def _fusable_convolution(n) -> bool:
    """A 2-d CPU convolution (not transposed) over a channels-last fp32/bf16 input."""
    if not (isinstance(n, fx.Node) and n.target is _aten.convolution.default
            and len(n.args) == 9 and not n.kwargs):
        return False
    x, w, _, stride, _, _, transposed, _, _ = n.args
    xv, wv = (a.meta.get("val") if isinstance(a, fx.Node) else None for a in (x, w))
    return (not transposed and len(stride) == 2 and channels_last_only(xv)
            and isinstance(wv, torch.Tensor) and xv.device.type == "cpu"
            and xv.dtype in (torch.float32, torch.bfloat16) and wv.dtype == xv.dtype
            and (xv.dtype != torch.bfloat16 or _bf16_fusion_runs()))


@functools.cache
def _bf16_fusion_runs() -> bool:
    """Whether oneDNN's fused convolution runs in bfloat16 on this CPU: it needs avx512bw/vl/dq
    or avx_ne_convert, and raises on an AVX2-only CPU (an AMD EPYC here), where the unfused
    bfloat16 convolution runs.  Tried once on a tiny convolution."""
    x = torch.ones(1, 2, 3, 3, dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
    w = torch.ones(2, 2, 1, 1, dtype=torch.bfloat16)
    try:
        _CONVOLUTION_RELU(x, w, None, [0, 0], [1, 1], [1, 1], 1, "relu", [], None)
    except RuntimeError:
        return False
    return True


def _is_zero(a) -> bool:
    """``a`` is the number 0 or a traced ``scalar_tensor(0)``."""
    if isinstance(a, fx.Node):
        return (a.op == "call_function" and a.target is _aten.scalar_tensor.default
                and a.args[:1] == (0,))
    return isinstance(a, (int, float)) and not isinstance(a, bool) and a == 0


def _nnabla_relu_mask(n) -> fx.Node | None:
    """The mask ``x > 0`` when ``n`` is ``where(x > 0, x, 0)`` (NNabla's ReLU), else None."""
    if not (n.op == "call_function" and n.target is _aten.where.self and len(n.args) == 3):
        return None
    mask, x, zero = n.args
    if (isinstance(mask, fx.Node) and mask.op == "call_function"
            and mask.target is _aten.gt.Scalar and mask.args[0] is x and _is_zero(mask.args[1])
            and _is_zero(zero)):
        return mask
    return None


def fuse_convolution_relu(gm: fx.GraphModule) -> int:
    """Compute NNabla's ``relu(convolution(x, w, b))`` as one oneDNN convolution with a ReLU
    post-op where ``x`` is channels-last (a plan's layout, ``graph/_layout.py``) and nothing
    else reads the convolution's output; returns the number fused.

    The ReLU then costs no pass over the output of its own; the backward needs only the
    ReLU's output, the input and the weight, so it is unchanged.  NNabla's ReLU
    (``F.relu(rule="nnabla")``, ``where(x > 0, x, 0)``: 0 for NaN and -inf, +0 for -0.0) is
    exactly what the post-op computes, NaN included; its backward reads the output (as
    NNabla's does), which the fused call gives.  A program whose backward takes the mask
    ``x > 0`` of the select has it taken from the fused output (positive where the
    convolution's is).

    torch's ReLU (Stadyn's own, which keeps NaN) and CNTK's (NaN for NaN and -inf) are not
    fused: the post-op would give 0 where they give NaN, so a NaN reaching the convolution
    would make the dynamic graph's loss NaN and leave the static plan's finite.  Checking the
    convolution's input and weight for NaN first costs a pass over the input, about what the
    fusion saves (docs/performance.md); such a ReLU runs in place instead
    (:func:`~stadyn.graph.reuse_dead_inputs`).  Without oneDNN nothing changes.

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> from stadyn.graph import fuse_convolution_relu
        >>> x = torch.randn(2, 4, 6, 6).contiguous(memory_format=torch.channels_last)
        >>> w, b = torch.randn(8, 4, 3, 3), torch.randn(8)
        >>> x[0, 0, 2, 2] = float("nan")
        >>> conv = lambda x, w, b: torch.conv2d(x, w, b, padding=1)
        >>> nnabla = lambda x, w, b: (lambda y: torch.where(y > 0, y, 0))(conv(x, w, b))
        >>> gm = make_fx(nnabla, tracing_mode="fake")(x, w, b)
        >>> fused = fuse_convolution_relu(gm)
        >>> fused == int(torch.backends.mkldnn.is_available()), torch.equal(gm(x, w, b),
        ...                                                                  nnabla(x, w, b))
        (True, True)
        >>> kept = make_fx(lambda x, w, b: torch.relu(conv(x, w, b)), tracing_mode="fake")(x, w, b)
        >>> fuse_convolution_relu(kept), bool(kept(x, w, b).isnan().any())     # torch's: NaN kept
        (0, True)
    """
    if _CONVOLUTION_RELU is None or not torch.backends.mkldnn.is_available():
        return 0
    graph = gm.graph
    outputs = output_values(gm)
    count = 0
    for n in list(graph.nodes):
        mask = _nnabla_relu_mask(n)      # where(conv > 0, conv, 0)
        if mask is None:
            continue
        conv, zero = n.args[1], n.args[2]
        if not (_fusable_convolution(conv) and set(conv.users) == {n, mask}
                and conv not in outputs):
            continue
        x, w, b, stride, padding, dilation, _, _, groups = conv.args
        with graph.inserting_before(conv):      # (before the mask reading it, too)
            fused = graph.call_function(_CONVOLUTION_RELU.default,
                                        (x, w, b, padding, stride, dilation, groups, "relu",
                                         [], ""))
        fused.meta = dict(n.meta)
        n.replace_all_uses_with(fused)
        graph.erase_node(n)
        if mask.users:      # (a backward's mask: fused > 0 where conv > 0)
            mask.replace_input_with(conv, fused)
        else:               # (NNabla's backward reads the output: the mask was the select's)
            graph.erase_node(mask)
        graph.erase_node(conv)
        if isinstance(zero, fx.Node) and not zero.users:
            graph.erase_node(zero)
        count += 1
    if count:
        gm.recompile()
    return count
