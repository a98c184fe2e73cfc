"""Multiply-adds of one op call, from its input and output shapes and attributes.

Counted are the products that dominate a network's arithmetic -- matrix products and
convolutions, the ops the catalog declares with ``precision="half"`` (a test keeps the two in
step) -- one multiply-add per product term, over the whole batch the graph was built with.
Every other op counts 0 (elementwise ops, pooling and normalisation are memory-bound and add
no products).  The rules are keyed by the catalog op's name.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..graph import FunctionNode

__all__ = ["multiply_adds", "MAC_RULES"]


def _prod(shape) -> int:
    return int(np.prod(tuple(shape), dtype=np.int64)) if len(shape) else 1


def _affine(node: FunctionNode) -> int:
    # y = x W + b with x flattened to (prod(x.shape[:base_axis]), in), W (in, *out).
    x, w = node.inputs[0], node.inputs[1]
    base_axis = node.attrs.get("base_axis", 1)
    return _prod(x.shape[:base_axis]) * _prod(w.shape)


def _convolution(node: FunctionNode) -> int:
    # Each output element sums C_in/group x kernel products; W is (C_out, C_in/group, *kernel)
    # (channel-last: (C_out, *kernel, C_in/group)), so the terms per output are W.shape[1:].
    w = node.inputs[1]
    out = node.outputs[0]
    return _prod(out.shape) * _prod(w.shape[1:]) if out is not None else 0


def _deconvolution(node: FunctionNode) -> int:
    # Each input element is scattered through C_out/group x kernel weights; W is
    # (C_in, C_out/group, *kernel).
    x, w = node.inputs[0], node.inputs[1]
    return _prod(x.shape) * _prod(w.shape[1:])


def _batch_matmul(node: FunctionNode) -> int:
    a = node.inputs[0]
    out = node.outputs[0]
    k = a.shape[-2] if node.attrs.get("transpose_a") else a.shape[-1]
    return _prod(out.shape) * int(k) if out is not None else 0


def _dot(node: FunctionNode) -> int:
    # NumPy's dot: each output element sums over a's last axis (one term with a 0-d operand).
    a, b = node.inputs[0], node.inputs[1]
    out = node.outputs[0]
    k = int(a.shape[-1]) if len(a.shape) and len(b.shape) else 1
    return _prod(out.shape) * k if out is not None else 0


def _adaptive_separable(node: FunctionNode) -> int:
    # Each output element sums Kv x Kh products of x with its pixel's two 1-d kernels.
    kv, kh = node.inputs[1], node.inputs[2]
    out = node.outputs[0]
    return _prod(out.shape) * int(kv.shape[1]) * int(kh.shape[1]) if out is not None else 0


MAC_RULES: dict[str, Callable[[FunctionNode], int]] = {
    "affine": _affine,
    "binary_connect_affine": _affine,        # x, W (in, *out), then W's binarised copy
    "binary_weight_affine": _affine,
    "convolution": _convolution,
    "binary_connect_convolution": _convolution,
    "binary_weight_convolution": _convolution,
    "depthwise_convolution": _convolution,   # W (C_in * multiplier, *kernel): terms W.shape[1:]
    "deconvolution": _deconvolution,
    "depthwise_deconvolution": _deconvolution,   # W (C_in, *kernel): each input times its kernel
    "fused_convolution": _convolution,        # its convolution's products (BN etc. not counted)
    "deformable_convolution": _convolution,   # the sampled columns times W, as a convolution
    "adaptive_separable_convolution": _adaptive_separable,
    "inq_affine": _affine,                    # x, W (in, *out), then the indicators
    "inq_convolution": _convolution,
    "batch_matmul": _batch_matmul,
    "dot": _dot,
}


def multiply_adds(node: FunctionNode) -> int:
    """The multiply-adds of one op call (0 for ops without products; see the module docstring).

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = PF.affine(sd.Variable((4, 3)), 5)
        >>> multiply_adds(y.parent)     # 4 samples x 3 inputs x 5 outputs
        60
    """
    rule = MAC_RULES.get(node.spec.name)
    return rule(node) if rule is not None else 0
