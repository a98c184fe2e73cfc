"""Quantized gradient aggregation with error feedback ("1-bit SGD", Seide et al., Interspeech
2014), as CNTK 2.7's ``data_parallel_distributed_learner(num_quantization_bits=n)`` does it
(its QuantizedMPICommunicator with a zero threshold for one bit, the worker's own stripe
quantized too).

Each gradient is read as CNTK's column-major matrix: a column is ``R`` consecutive values,
``R`` the size of the last axis (``g.reshape(-1, R)``'s rows; a scalar is one column of one).
Every worker adds its residual to its gradient and quantizes each column: with one bit a value
becomes the mean of the column's values ``>= 0`` or of those ``< 0`` (its sign chooses); with
``n`` bits (a power of two) one of ``2**n`` levels spread over four standard deviations about
zero.  What the quantization left out is the residual, added to the next gradient.  Worker
``w`` owns a stripe of each gradient's columns (``C // W`` of them, one more for ``w < C % W``):
it adds the workers' quantized stripes, quantizes the sum again with a residual of its own,
and every worker reads the sum of each stripe from its owner's quantized sum.  The values
travel quantized: one bit (or ``n``) per value and two floats per column.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from ..graph import data_of, grad_of
from . import _collectives as C
from ._env import DistributedError, get_group, is_initialized

__all__ = ["QUANTIZED_BITS", "QuantizedAllReduce"]

#: the bits per value :class:`QuantizedAllReduce` quantizes to (32 would be a plain all-reduce)
QUANTIZED_BITS = (1, 2, 4, 8, 16)


def _columns(t: torch.Tensor) -> torch.Tensor:
    """``t`` as its CNTK matrix's columns, one per row: ``(C, R)``."""
    rows = t.shape[-1] if t.dim() else 1
    return t.reshape(-1, rows)


def _stripe(cols: int, rank: int, size: int) -> tuple[int, int]:
    """The columns ``[start, start + n)`` worker ``rank`` of ``size`` aggregates."""
    per, extra = divmod(cols, size)
    return per * rank + min(extra, rank), per + (1 if rank < extra else 0)


def _quantize(v: torch.Tensor, bits: int):
    """Quantize the columns (rows of ``v``, float32): ``(codes, lower, ufactor, residual)``,
    each value then being ``(code + 0.5) * ufactor + lower``."""
    rows = v.shape[1]
    if bits == 1:
        up = v >= 0                                            # (NaN counts as >= 0, as CNTK's)
        num1 = up.sum(1).clamp(min=1).to(v.dtype)
        num0 = (~up).sum(1).clamp(min=1).to(v.dtype)
        mean0 = torch.where(up, 0.0, v).sum(1) / num0
        mean1 = torch.where(up, v, 0.0).sum(1) / num1
        mid = 0.5 * (mean0 + mean1)
        radius = 2.0 * (mean1 - mid)
        lower, upper = mid - radius, mid + radius
        levels = 2
        codes = up.to(torch.int32)
    else:
        std = torch.sqrt((v * v).sum(1) / rows)
        lower, upper = -4.0 * std, 4.0 * std
        levels = (1 << bits) - 1
        qfactor = torch.where(upper - lower < 1e-36, 0.0, levels / (upper - lower))
        inside = ((v - lower[:, None]) * qfactor[:, None]).to(torch.int32)
        codes = torch.where(v <= lower[:, None], 0,
                            torch.where(v >= upper[:, None], (1 << bits) - 1, inside))
    ufactor = torch.where(upper - lower < 1e-36, 0.0, (upper - lower) / levels)
    residual = v - _unquantize(codes, lower, ufactor)
    return codes, lower, ufactor, residual


def _unquantize(codes: torch.Tensor, lower: torch.Tensor, ufactor: torch.Tensor):
    return (codes.to(lower.dtype) + 0.5) * ufactor[:, None] + lower[:, None]


def _pack(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Codes of ``bits`` bits as bytes (8 // bits per byte; 16 bits in two)."""
    flat = codes.reshape(-1)
    if bits == 16:
        return torch.stack([flat & 255, flat >> 8], 1).reshape(-1).to(torch.uint8)
    per = 8 // bits
    pad = (-flat.numel()) % per
    flat = torch.cat([flat, flat.new_zeros(pad)]).reshape(-1, per)
    shifts = torch.arange(per, dtype=torch.int32, device=flat.device) * bits
    return (flat << shifts).sum(1).to(torch.uint8)


def _unpack(data: torch.Tensor, bits: int, count: int) -> torch.Tensor:
    data = data.to(torch.int32)
    if bits == 16:
        pairs = data[:2 * count].reshape(-1, 2)
        return pairs[:, 0] | (pairs[:, 1] << 8)
    per = 8 // bits
    shifts = torch.arange(per, dtype=torch.int32, device=data.device) * bits
    return ((data[:, None] >> shifts) & ((1 << bits) - 1)).reshape(-1)[:count]


class QuantizedAllReduce:
    """Sums gradients over the workers quantized to ``bits`` bits (1, 2, 4, 8 or 16) per value,
    keeping what the quantization leaves out for the next call (see the module docstring).
    Alone (one worker) the gradients stay as they are, as CNTK's.

    Args:
        bits: bits per value.
        group: the workers (a name of :func:`stadyn.distributed.new_group`; all by default).

    Example:
        >>> import torch, stadyn.distributed as dist
        >>> q = dist.QuantizedAllReduce(bits=1)
        >>> g = [torch.tensor([[0.5, -1.0, 2.0]])]
        >>> q.all_reduce(g)          # one worker: nothing to add, nothing quantized
        >>> g[0].tolist()
        [[0.5, -1.0, 2.0]]
        >>> codes, values, residual = q.quantize(torch.tensor([0.5, -1.0, 2.0]))
        >>> codes.tolist(), values.tolist(), residual.tolist()
        ([1, 0, 1], [1.25, -1.0, 1.25], [-0.75, 0.0, 0.75])
    """

    def __init__(self, bits: int = 1, group="world"):
        bits = int(bits)
        if bits not in QUANTIZED_BITS:
            raise DistributedError(f"QuantizedAllReduce: bits={bits}; 1, 2, 4, 8 or 16 bits per "
                                   "value (a power of two below 32; 32 is an all-reduce)")
        self.bits, self.group = bits, group
        self._pg = get_group(group)
        self._residuals: list[torch.Tensor] = []        # per gradient, (C, R)
        self._stripe_residuals: list[torch.Tensor] = []  # per gradient, this worker's stripe

    @property
    def size(self) -> int:
        return dist.get_world_size(self._pg) if is_initialized() else 1

    @property
    def rank(self) -> int:
        return dist.get_rank(self._pg) if is_initialized() else 0

    def reset(self) -> None:
        """Forget the residuals (CNTK 2.7 does at each checkpoint: they are not saved)."""
        for r in self._residuals + self._stripe_residuals:
            r.zero_()

    def quantize(self, values: torch.Tensor, residual: torch.Tensor | None = None):
        """``values`` (+ ``residual``) quantized column by column: ``(codes, the values they
        stand for, the new residual)``, each shaped as ``values``."""
        v = _columns(values.float()) + (0 if residual is None else _columns(residual.float()))
        codes, lower, ufactor, left = _quantize(v, self.bits)
        return (codes.reshape(values.shape), _unquantize(codes, lower, ufactor).reshape(
            values.shape), left.reshape(values.shape))

    def all_reduce(self, tensors: list[torch.Tensor]) -> None:
        """Replace each of ``tensors`` (every worker's, in the same order and shapes) by the sum
        over the workers of its quantized values."""
        size, rank = self.size, self.rank
        if size == 1 or not tensors:
            return
        mats = [_columns(t.detach()).to(torch.float64 if t.dtype == torch.float64
                                        else torch.float32) for t in tensors]
        if len(self._residuals) != len(mats) or any(
                r.shape != m.shape for r, m in zip(self._residuals, mats)):
            self._residuals = [torch.zeros_like(m) for m in mats]
            self._stripe_residuals = [
                m.new_zeros(_stripe(m.shape[0], rank, size)[1], m.shape[1]) for m in mats]
        # 1. every worker quantizes its gradients; each gets the others' quantized stripes
        quantized = []
        for k, m in enumerate(mats):
            codes, lower, ufactor, left = _quantize(m + self._residuals[k], self.bits)
            self._residuals[k] = left
            quantized.append((codes, lower, ufactor))
        everyone = self._exchange(quantized, "quantized gradients",
                                  lambda w: [m.shape for m in mats])
        # 2. each adds up its stripes and quantizes the sums; every worker reads every stripe
        sums = []
        for k, m in enumerate(mats):
            start, n = _stripe(m.shape[0], rank, size)
            total = None
            for w in [rank] + [w for w in range(size) if w != rank]:
                codes, lower, ufactor = everyone[w][k]
                part = _unquantize(codes[start:start + n], lower[start:start + n],
                                   ufactor[start:start + n])
                total = part if total is None else part + total
            codes, lower, ufactor, left = _quantize(total + self._stripe_residuals[k], self.bits)
            self._stripe_residuals[k] = left
            sums.append((codes, lower, ufactor))
        stripes = self._exchange(sums, "quantized stripe sums", lambda w: [
            torch.Size((_stripe(m.shape[0], w, size)[1], m.shape[1])) for m in mats])
        for k, (t, m) in enumerate(zip(tensors, mats)):
            parts = [_unquantize(*stripes[w][k]) for w in range(size)]
            with torch.no_grad():
                t.copy_(torch.cat(parts).reshape(t.shape).to(t.dtype))

    def all_reduce_gradients(self, params) -> None:
        """Replace the ``.grad`` of each of ``params`` (every worker's, in the same order) by
        its quantized sum over the workers (:meth:`all_reduce`); a parameter without a gradient
        takes part with zeros, as in CNTK.

        Example:
            >>> import stadyn as sd, stadyn.distributed as dist
            >>> from stadyn.graph import grad_of
            >>> p = sd.Variable((2,), need_grad=True)
            >>> dist.QuantizedAllReduce(bits=1).all_reduce_gradients([p])
            >>> grad_of(p).tolist()
            [0.0, 0.0]
        """
        for p in params:
            if grad_of(p) is None:
                p.grad = torch.zeros_like(data_of(p))
        self.all_reduce([grad_of(p) for p in params])

    def _sizes(self, shapes) -> tuple[int, int]:
        """How many packed bytes and floats a worker whose codes are shaped ``shapes`` sends."""
        total = sum(int(torch.Size(s).numel()) for s in shapes)
        packed = 2 * total if self.bits == 16 else -(-total * self.bits // 8)
        return packed, 2 * sum(int(s[0]) for s in shapes)

    def _exchange(self, parts: list, what: str, shapes_of) -> list:
        """Every worker's ``parts`` (per gradient ``(codes, lower, ufactor)``; worker ``w``'s
        codes shaped ``shapes_of(w)``), gathered: codes packed to ``bits`` bits, the two floats
        per column as they are."""
        codes_now = torch.cat([c.reshape(-1) for c, _, _ in parts])
        packed = _pack(codes_now, self.bits) if codes_now.numel() \
            else codes_now.new_zeros(0, dtype=torch.uint8)
        floats = torch.cat([torch.stack([lo, uf], 1).reshape(-1) for _, lo, uf in parts])
        # every worker's sizes follow from its shapes: no exchange (nor device sync) for them
        width = tuple(max(n) for n in zip(*(self._sizes(shapes_of(w))
                                             for w in range(self.size))))
        mine = (torch.cat([packed, packed.new_zeros(width[0] - packed.numel())]),
                torch.cat([floats, floats.new_zeros(width[1] - floats.numel())]))
        gathered = []
        for t, w in zip(mine, width):
            out = [t.new_zeros(w) for _ in range(self.size)]
            C.run(f"all-gather of the {what}", dist.all_gather, out, t, group=self._pg)
            gathered.append(out)
        result = []
        for w in range(self.size):
            mine_shapes = shapes_of(w)
            total = sum(int(torch.Size(s).numel()) for s in mine_shapes)
            codes = _unpack(gathered[0][w], self.bits, total)
            floats = gathered[1][w]
            out, at, fat = [], 0, 0
            for s in mine_shapes:
                n, cols = int(torch.Size(s).numel()), s[0]
                pair = floats[fat:fat + 2 * cols].reshape(-1, 2)
                out.append((codes[at:at + n].reshape(s), pair[:, 0], pair[:, 1]))
                at, fat = at + n, fat + 2 * cols
            result.append(out)
        return result
