"""CNTK's ranking criteria over a minibatch of scored samples grouped into queries:
``lambda_rank`` (a loss with LambdaRank gradients) and ``ndcg_at_1`` (a metric).

Each takes, per sample, a score (``output``), a ``gain`` and a ``group`` id, all ``(N, 1)``; a
group is a run of consecutive samples with the same id (the id truncated to an integer, as CNTK
casts it), listed in decreasing gain.  Within a group, samples rank by decreasing score (equal
scores: the lower gain first, then the earlier sample; LambdaRank's gradient takes CNTK's
order of equal score and gain, below); a sample's discount is
``log(2 + rank)``.  The value is one number for the minibatch, as CNTK 2.7's: ``(1 - mean
NDCG) * 100 * N`` for ``lambda_rank``, ``mean NDCG@1 * 100 * N`` for ``ndcg_at_1``.

The computation is pairwise over the minibatch (``N x N`` masks of "same group"), so shapes are
static and both modes run the same ATen ops.  LambdaRank's gradient is CNTK's own rule, not the
value's derivative: for each pair ``(i, j > i)`` of a group with ``gain_i`` above the group's
last gain and ``gain_i != gain_j``, ``lambda * |(gain_i - gain_j) (d_i - d_j) / (d_i d_j) /
ideal DCG|`` is added to ``i``'s score gradient and taken from ``j``'s, where ``lambda =
-1 / (1 + exp(s_i - s_j))``; CNTK takes the ``k``-th such pair's ``lambda`` from the ``k``-th
pair whose ``gain_i`` is above the group's last (equal gains included), and ignores the
incoming gradient -- both kept here, as the reference values in ``tests/compat`` show.
LambdaRank's ranks are CNTK's own order: its ``std::sort`` is not stable, so documents of
equal score and gain in a group of more than 16 (all scores equal, as from zero weights) rank
as libstdc++ leaves them (``_std_sort.py``), read on the host by one torch operator that a
traced program calls as it runs.

Over sequences, CNTK's ranking nodes read the columns of the minibatch as CNTK lays it out:
``cntk_sequence_columns`` gives them (CNTK 2.7's first-fit packing of the sequences into
parallel streams, ``MBLayout::InitAsPackedSequences``, as its Python API and its readers
build it).
"""

from __future__ import annotations

import math

import torch

from ._kernels import kernel_op
from ._registry import op
from ._std_sort import std_sort

_C = "loss"


def _columns_shape(name, *xs) -> int:
    """The number of samples; each input must be ``(N, 1)``."""
    n = xs[0].shape[0] if xs[0].dim() else 0
    for label, x in zip(("output", "gain", "group"), xs):
        if x.dim() != 2 or x.shape[1] != 1 or x.shape[0] != n:
            raise ValueError(f"{name}: {label} must be ({n}, 1) (one number per sample), got "
                             f"{tuple(x.shape)}")
    return n


def _columns(name, *xs):
    n = _columns_shape(name, *xs)
    if n == 0:
        raise ValueError(f"{name}: the minibatch has no samples")
    return [x.detach().reshape(-1).to(torch.float64) for x in xs]


class _Groups:
    """The pairwise structure of one minibatch: groups, positions, ranks (CNTK's LambdaRank
    order with ``cntk_order``, else by decreasing score, then increasing gain, then position)."""

    def __init__(self, s: torch.Tensor, g: torch.Tensor, q: torch.Tensor,
                 cntk_order: bool = False):
        n = s.shape[0]
        ids = torch.trunc(q)
        self.first = torch.cat([torch.ones(1, dtype=torch.bool, device=s.device),
                                ids[1:] != ids[:-1]])
        run = torch.cumsum(self.first.to(torch.int64), 0)
        self.last = torch.cat([run[1:] != run[:-1],
                               torch.ones(1, dtype=torch.bool, device=s.device)])
        self.same = run[:, None] == run[None, :]
        index = torch.arange(n, device=s.device)
        before = index[None, :] < index[:, None]                  # [i, j]: j comes before i
        self.position = (self.same & before).sum(1)               # place in the listed order
        if cntk_order:
            self.rank = _cntk_ranks(s, g, self.first)
        else:
            ahead = (s[None, :] > s[:, None]) | ((s[None, :] == s[:, None]) & (
                (g[None, :] < g[:, None]) | ((g[None, :] == g[:, None]) & before)))
            self.rank = (self.same & ahead).sum(1)
        self.runs = self.first.sum()
        self.n = n

    def per_group(self, values: torch.Tensor) -> torch.Tensor:
        """Each sample's sum of ``values`` over its group."""
        return (self.same.to(values.dtype) * values[None, :]).sum(1)


def _cntk_ranks_impl(s: torch.Tensor, g: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
    """Each sample's rank in its group as CNTK 2.7's LambdaRankNode sorts a group (its
    documents in the listed order, ``std::sort`` with ``Url::operator<``: the higher score
    first; equal scores, or a NaN, the lower gain first), read on the host: ``std::sort`` is
    not stable, so where a group of more than 16 holds documents of equal score and gain their
    order is libstdc++'s (:func:`std_sort`), on which LambdaRank's gradient depends."""
    scores, gains = s.tolist(), g.tolist()

    def less(i, j):
        a, b = scores[i], scores[j]
        if a == b or math.isnan(a) or math.isnan(b):
            return gains[i] < gains[j]
        return a > b

    starts = torch.nonzero(first).reshape(-1).tolist() + [len(scores)]
    rank = [0] * len(scores)
    for begin, end in zip(starts[:-1], starts[1:]):
        for r, i in enumerate(std_sort(list(range(begin, end)), less)):
            rank[i] = r
    return torch.tensor(rank, dtype=torch.int64, device=s.device)


def _cntk_ranks_fake(s, g, first):
    return s.new_empty(s.shape, dtype=torch.int64)


# (one operator, so that a traced program calls it with the values when it runs)
_cntk_ranks = kernel_op("stadyn_kernels::cntk_lambda_rank_ranks",
                        "(Tensor scores, Tensor gains, Tensor first) -> Tensor",
                        _cntk_ranks_impl, _cntk_ranks_fake)


def _ndcg_parts(s, g, q, cntk_order: bool = False):
    groups = _Groups(s, g, q, cntk_order)
    ideal = groups.per_group(g / torch.log(2.0 + groups.position.to(g.dtype)))
    dcg = groups.per_group(g / torch.log(2.0 + groups.rank.to(g.dtype)))
    ratio = torch.where(ideal != 0, dcg / torch.where(ideal != 0, ideal, 1.0), 0.0)
    mean = torch.where(groups.first, ratio, 0.0).sum() / groups.runs
    return groups, ideal, mean


class _LambdaRank(torch.autograd.Function):
    """The value, and CNTK's LambdaRank gradient for the scores."""

    @staticmethod
    def forward(ctx, output, gain, group):
        s, g, q = _columns("lambda_rank", output, gain, group)
        groups, ideal, mean = _ndcg_parts(s, g, q, cntk_order=True)
        ctx.save_for_backward(s, g, ideal, groups.rank, groups.same, groups.last)
        ctx.out_dtype = output.dtype
        return ((1.0 - mean) * 100.0 * groups.n).to(output.dtype)

    @staticmethod
    def backward(ctx, grad):
        s, g, ideal, rank, same, last = ctx.saved_tensors
        n = s.shape[0]
        index = torch.arange(n, device=s.device)
        lowest = ((same & last[None, :]).to(g.dtype) * g[None, :]).sum(1)   # the group's last gain
        pairs = same & (index[None, :] > index[:, None]) & (g > lowest)[:, None]
        used = pairs & ~((g[:, None] - g[None, :]).abs() < 1e-7)
        flat_pairs = torch.cumsum(pairs.reshape(-1).to(torch.int64), 0)
        flat_used = torch.cumsum(used.reshape(-1).to(torch.int64), 0)
        # the k-th used pair takes the lambda of the k-th pair
        source = torch.searchsorted(flat_pairs, flat_used).clamp_max(n * n - 1)
        difference = (s[:, None] - s[None, :]).reshape(-1)[source].reshape(n, n)
        lam = -1.0 / (1.0 + torch.exp(difference))
        d = torch.log(2.0 + rank.to(g.dtype))
        delta = (g[:, None] - g[None, :]) * (d[:, None] - d[None, :]) / (d[:, None] * d[None, :])
        delta = torch.where(ideal[:, None] != 0,
                            (delta / torch.where(ideal != 0, ideal, 1.0)[:, None]).abs(), 0.0)
        pair_grad = torch.where(used, lam * delta, 0.0)
        out = pair_grad.sum(1) - pair_grad.sum(0)
        return out.reshape(n, 1).to(ctx.out_dtype), None, None


def _scalar_shape(output, gain, group):
    _columns_shape("lambda_rank", output, gain, group)
    return torch.empty((), dtype=output.dtype, device="meta").requires_grad_(output.requires_grad)


def _metric_shape(output, gain, group):
    _columns_shape("ndcg_at_1", output, gain, group)
    return torch.empty((), dtype=output.dtype, device="meta")


@op(3, category=_C, precision="float", shape=_scalar_shape,
    frameworks=("cntk",))
def lambda_rank(output, gain, group):
    """CNTK's ``lambda_rank``: ``(1 - mean NDCG) * 100 * N`` over the minibatch's groups; its
    gradient for ``output`` (the scores) is LambdaRank's (CNTK's rule, which ignores the
    incoming gradient); none for ``gain`` and ``group``.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> col = lambda *v: sd.Variable.from_numpy_array(np.array(v, np.float32)[:, None])
        >>> with sd.auto_forward():
        ...     s = col(1, 2, 3, 4); s.need_grad = True
        ...     loss = F.lambda_rank(s, col(7, 1, 3, 1), col(1, 1, 2, 2))
        >>> loss.backward()
        >>> s.g.ravel().round(4)
        array([-0.2121,  0.2121, -0.1486,  0.1486], dtype=float32)
    """
    return _LambdaRank.apply(output, gain, group)


@op(3, category="metric", precision="float", shape=_metric_shape,
    frameworks=("cntk",))
def ndcg_at_1(output, gain, group):
    """CNTK's ``ndcg_at_1``: the mean over the minibatch's groups of the gain of the top-scored
    sample over the group's first (largest) gain, times ``100 * N``.  No gradient.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> col = lambda *v: sd.Variable.from_numpy_array(np.array(v, np.float32)[:, None])
        >>> with sd.auto_forward():
        ...     v = F.ndcg_at_1(col(2, 1, 3, 1), col(7, 1, 3, 1), col(1, 1, 2, 2))
        >>> float(v.d)
        400.0
    """
    s, g, q = _columns("ndcg_at_1", output, gain, group)
    groups = _Groups(s, g, q)
    top = groups.per_group(torch.where(groups.rank == 0, g, 0.0) / math.log(2.0))
    best = groups.per_group(torch.where(groups.position == 0, g, 0.0) / math.log(2.0))
    ratio = torch.where(best != 0, top / torch.where(best != 0, best, 1.0), 0.0)
    mean = torch.where(groups.first, ratio, 0.0).sum() / groups.runs
    return (mean * 100.0 * groups.n).to(output.dtype)


def _packing(lengths: list[int]) -> tuple[int, int, list[int]]:
    """CNTK 2.7's layout of sequences of ``lengths`` in a minibatch (``MBLayout::
    InitAsPackedSequences``): the layout is as wide as the longest sequence; each sequence in
    turn goes into the first parallel stream that still has room for it after the sequences
    already there (a new stream when none has), and a stream's steps after its last sequence
    are a gap.  Returns ``(streams, width, source)``: ``source[t * streams + s]`` is the index
    ``b * width + step`` of the sample column ``t * streams + s`` holds, ``-1`` for a gap."""
    width = max(lengths, default=0)
    used: list[int] = []
    places = []
    for n in lengths:
        stream = next((k for k, u in enumerate(used) if u + n <= width), len(used))
        if stream == len(used):
            used.append(0)
        places.append((stream, used[stream]))
        used[stream] += n
    streams = len(used)
    source = [-1] * (streams * width)
    for b, (n, (stream, begin)) in enumerate(zip(lengths, places)):
        for step in range(n):
            source[(begin + step) * streams + stream] = b * width + step
    return streams, width, source


def _sequence_columns_shape(x, lengths):
    # before the lengths are known: a stream per sequence, as long as the padded axis
    return torch.empty((x.shape[0] * x.shape[1],) + tuple(x.shape[2:]), dtype=x.dtype,
                       device="meta", requires_grad=x.requires_grad)


@op(2, category="sequence", shape=_sequence_columns_shape, sequence="drop", traceable=False,
    value_shape="the lengths (CNTK's packing of the sequences into parallel streams)")
def cntk_sequence_columns(x, lengths):
    """The steps of the sequences ``x`` (padded ``(B, T, *sample)``, ``lengths`` ``(B,)``) as
    the columns of CNTK 2.7's minibatch, ``(streams * width, *sample)``: step by step, each
    step's parallel streams side by side, where CNTK packs a shorter sequence after another in
    one stream if it fits within the longest one's steps (first fit, in the order of the
    minibatch), and a stream's steps after its sequences (gaps) are 0.  The order CNTK's
    ranking nodes read the samples in; the gradient goes back to each sequence's steps.  The
    packing is read from the lengths on the host (``traceable=False``): a static graph holding
    the op runs eagerly, and ``compile_step`` refuses it.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.array([[1., 0, 0], [2, 3, 4], [5, 6, 0]]))
        ...     n = sd.Variable.from_numpy_array(np.array([1, 3, 2]))
        ...     y = F.cntk_sequence_columns(F.reshape(x, (3, 3, 1)), n)
        >>> y.d.ravel().tolist()        # streams: (1, 5, 6) and (2, 3, 4)
        [1.0, 2.0, 5.0, 3.0, 6.0, 4.0]
    """
    counts = [int(n) for n in lengths.reshape(-1).tolist()]
    if len(counts) != x.shape[0] or any(n < 0 or n > x.shape[1] for n in counts):
        raise ValueError(f"cntk_sequence_columns: lengths {counts} do not fit the "
                         f"{x.shape[0]} sequences of {x.shape[1]} steps")
    _, width, source = _packing(counts)
    steps = x[:, :width].reshape((x.shape[0] * width,) + tuple(x.shape[2:]))
    gap = steps.new_zeros((1,) + tuple(x.shape[2:]))
    index = torch.tensor([len(steps) if k < 0 else k for k in source], dtype=torch.int64,
                         device=x.device)
    return torch.cat([steps, gap]).index_select(0, index)
