"""NNabla's float32 solver arithmetic on CPU in cache-sized blocks: every C++ operation rounded
once, as NumPy's float32 ufuncs round it, over NumPy views of the tensors' own memory (no copy),
one block of :data:`BLOCK` elements through the whole update before the next.

Why not torch's multi-tensor ops: on the 2-core CI machine (torch 2.13 CPU) each of the dozen
whole-array passes of NNabla's Adam leaves cache, its float32 ``sqrt`` is not correctly
rounded (about one value in five one unit off) and its float64 root costs 5x NumPy's float32
one, which is exact (IEEE's square root); blocks that stay in cache make the exact update cheaper
than torch's fused Adam kernel (``benchmarks/nnabla_adam_exact_ab.py``, docs/performance.md).

:func:`adam_blocks` returns ``False`` (and touches nothing) where it cannot run: a tensor not on
the CPU, not float32, not contiguous, a subclass, or a trace being compiled; the caller then
takes its torch path.

Example:
    >>> import torch
    >>> w, m, v = [torch.ones(2)], [torch.zeros(2)], [torch.zeros(2)]
    >>> adam_blocks(w, [torch.ones(2)], m, v, step_size=0.1, beta1=0.95, beta2=0.999, eps=1e-8)
    True
    >>> m[0].tolist()
    [0.050000011920928955, 0.050000011920928955]
"""

from __future__ import annotations

import numpy as np
import torch

from ._scalars import Scalar, Tensors, per_tensor

__all__ = ["BLOCK", "adam_blocks", "can_use_blocks"]

#: Elements per block: the block's six float32 arrays (parameter, gradient, two moments, two
#: scratch) take 1.5 MiB, within a core's L2 here; 2**14 and 2**18 measured slower.
BLOCK = 1 << 16


def can_use_blocks(*lists: Tensors) -> bool:
    """Whether every tensor of ``lists`` is a plain contiguous float32 CPU tensor outside a
    compiled trace (the tensors :func:`adam_blocks` updates in place through NumPy views)."""
    if torch.compiler.is_compiling():
        return False
    return all(type(t) is torch.Tensor and t.device.type == "cpu" and t.dtype == torch.float32
               and t.is_contiguous() for ts in lists for t in ts)


def _flat(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy().reshape(-1)          # contiguous: a view of t's memory


def _float(s) -> np.float32:
    return np.float32(s.item() if isinstance(s, torch.Tensor) else s)


def adam_blocks(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *, step_size: Scalar,
                beta1: float, beta2: float, eps: float, v_max: Tensors | None = None,
                decay: Scalar = 0.0) -> bool:
    """NNabla 1.39's Adam, AdamW and AMSGRAD update (the arithmetic of
    :func:`~stadyn.solvers._functional_nnabla.adam_nnabla`, bit for bit) block by block;
    ``False`` without touching anything where the tensors do not allow it
    (:func:`can_use_blocks`).  A gradient laid out otherwise than its parameter is read in the
    parameter's element order."""
    moments = [params, m, v] + ([v_max] if v_max is not None else [])
    if not can_use_blocks(*moments) or \
            not all(type(g) is torch.Tensor and g.device.type == "cpu" and g.dtype == torch.float32
                    and g.numel() == p.numel() for g, p in zip(grads, params)):
        return False
    b1, b2, e = np.float32(beta1), np.float32(beta2), np.float32(eps)
    gain1, gain2 = np.float32(1) - b1, np.float32(1) - b2         # float32 1 - b, as C++'s
    n = len(params)
    steps, decays = per_tensor(step_size, n), per_tensor(decay, n)
    with np.errstate(all="ignore"):        # inf and NaN as C++'s float gives them, unwarned
        _blocks(params, grads, m, v, v_max, steps, decays, (b1, gain1, b2, gain2, e))
    torch.autograd.graph.increment_version(list(params))
    return True


def _blocks(params, grads, m, v, v_max, steps, decays, consts) -> None:
    b1, gain1, b2, gain2, e = consts
    size = min(BLOCK, max((p.numel() for p in params), default=0))
    t1, t2 = np.empty(size, np.float32), np.empty(size, np.float32)
    old_block = np.empty(size, np.float32) if any(
        isinstance(d, torch.Tensor) or d for d in decays) else None
    for i in range(len(params)):
        p, mi, vi = _flat(params[i]), _flat(m[i]), _flat(v[i])
        g = np.ascontiguousarray(grads[i].detach().numpy()).reshape(-1)
        second = vi if v_max is None else _flat(v_max[i])
        step, d = _float(steps[i]), _float(decays[i])
        for s in range(0, p.size, BLOCK):
            k = min(BLOCK, p.size - s)
            pc, gc, mc, vc = p[s:s + k], g[s:s + k], mi[s:s + k], vi[s:s + k]
            a, b = t1[:k], t2[:k]
            old = None
            if d:
                old = np.multiply(pc, d, out=old_block[:k])
            np.multiply(mc, b1, out=mc)                  # m = b1*m + (1-b1)*g
            np.multiply(gc, gain1, out=a)
            np.add(mc, a, out=mc)
            np.multiply(vc, b2, out=vc)                  # v = b2*v + ((1-b2)*g)*g
            np.multiply(gc, gain2, out=a)
            np.multiply(a, gc, out=a)
            np.add(vc, a, out=vc)
            root = vc
            if v_max is not None:
                root = np.maximum(second[s:s + k], vc, out=second[s:s + k])
            np.sqrt(root, out=a)                         # sqrt(v) + eps
            np.add(a, e, out=a)
            np.multiply(mc, step, out=b)                 # w -= (alpha_t*m) / (sqrt(v)+eps)
            np.divide(b, a, out=b)
            np.subtract(pc, b, out=pc)
            if old is not None:
                np.subtract(pc, old, out=pc)             # AdamW: - eta_t*wd*w_old
