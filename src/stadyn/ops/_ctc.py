"""CNTK's CTC training criterion and its evaluation metric, over padded sequences ``(B, T, C)``
with their lengths ``(B,)``: ``cntk_forward_backward`` (CNTK's ``ForwardBackward`` node over a
``LabelsToGraph`` label graph) and ``cntk_edit_distance_error`` (``EditDistanceError``).

**Labels.** CNTK's CTC labels are one value per frame: a one-hot row whose hot value is ``2``
at the frame where a token starts and ``1`` on the frames it continues (HTK-style frame
labels); the label sequence is the tokens of the frames whose largest value is 2, in order,
and each such frame is that token's *boundary*.  A repeated token needs its own ``2``.

**Value and gradient.** The network output ``z`` is unnormalised: the criterion is
``-log p(labels | log_softmax(z))`` summed over the minibatch's sequences (one number, as CNTK
2.7 gives it), with the blank token ``blank_token_id`` (``-1``: the last class).  The gradient
for ``z`` is CNTK's: ``softmax(z) - gamma`` where ``gamma`` is the per-frame occupancy of each
class, normalised to sum to 1 over the classes of each frame.  Without a delay constraint this
is the exact derivative and the computation is torch's ``ctc_loss``.

**Delay constraint** (``delay_constraint >= 0``, CNTK's ``delayConstraint``): CNTK sets the
forward and backward scores of a token to zero after frame ``r + delay`` and of a blank after
``r + delay - 1``, where ``r`` is the boundary of the *next* token (the sequence's length
for the last token and the blank before it), except at the first frame (forward) and the last
frame (backward); the final blank reads the boundary one past the label graph's end, which is
0 in CNTK 2.7 -- so the final blank only takes frames before ``delay`` and a constrained
sequence must end on its last token.  All of this is kept (tests/compat holds it to CNTK 2.7's
numbers).  The value is then ``-log`` of the backward score at the first frame, and the
gradient the same rule as above (no longer the value's derivative).

**Edit distance.** Each frame's class is its argmax; ``squash_inputs`` merges runs of one class
and ``tokens_to_ignore`` drops classes.  The *second* input is the reference: the value is
``(substitutions + deletions + insertions) * frames / reference tokens`` over the minibatch's
sequences, where the path through the edit grid is the one of least penalty (``sub_pen``,
``del_pen``, ``ins_pen``; ties: substitution or match, then insertion, then deletion) but each
edit counts 1 (CNTK 2.7's rules, found by running it on random sequences; its source on
GitHub, a later version, differs in both).  Inputs without a
sequence axis (``(B, C)``) are sequences of one frame each.  No gradient.
"""

from __future__ import annotations

import torch

from ._registry import op
from ._sequence import step_mask

_LZERO = -1.0e10          # CNTK's log-zero: an occupancy below it counts as 0


def _check_sequences(name: str, a: torch.Tensor, b: torch.Tensor, lengths) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{name}: both inputs must have one shape, got {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    if a.dim() != 3:
        raise ValueError(f"{name}: sequences of class vectors (B, T, C) are needed, got "
                         f"{tuple(a.shape)}")
    if lengths is None or lengths.dim() != 1 or lengths.shape[0] != a.shape[0]:
        shape = None if lengths is None else tuple(lengths.shape)
        raise ValueError(f"{name}: the sequences' lengths ({a.shape[0]},) are needed, got {shape}")


def _scalar_shape(graph, output, lengths, blank_token_id=-1, delay_constraint=-1):
    _check_sequences("forward_backward", graph, output, lengths)
    return torch.empty((), dtype=output.dtype, device="meta").requires_grad_(output.requires_grad)


def _label_sequence(graph: torch.Tensor, lengths: torch.Tensor):
    """``(tokens (B, T), boundaries (B, T), counts (B,))``: each sequence's tokens (the argmax
    of the frames whose largest value is 2) packed to the front, the frame each starts at, and
    how many there are.  Shapes are static (a sequence has at most ``T`` tokens)."""
    b, t, _ = graph.shape
    top, ids = graph.max(-1)
    start = (top == 2) & step_mask(lengths, t)
    position = torch.cumsum(start.to(torch.int64), 1) - 1
    slot = torch.where(start, position, torch.full_like(position, t))      # t: a spare slot
    frames = torch.arange(t, device=graph.device).expand(b, t)
    tokens = torch.zeros(b, t + 1, dtype=torch.int64, device=graph.device)
    bounds = torch.zeros(b, t + 1, dtype=torch.int64, device=graph.device)
    tokens = tokens.scatter(1, slot, ids)
    bounds = bounds.scatter(1, slot, frames)
    return tokens[:, :t], bounds[:, :t], start.sum(1)


def _blank(blank_token_id: int, classes: int) -> int:
    blank = int(blank_token_id)
    if blank < 0:
        blank = classes - 1
    if blank >= classes:
        raise ValueError(f"forward_backward: blankTokenId {blank} is not one of the "
                         f"{classes} classes")
    return blank


def _unconstrained(logp, tokens, counts, lengths, blank):
    """torch's CTC: the same value, and its gradient for ``z`` is ``softmax(z) - gamma``."""
    loss = torch.nn.functional.ctc_loss(logp.transpose(0, 1), tokens, lengths, counts,
                                        blank=blank, reduction="sum", zero_infinity=False)
    return loss


def _logsumexp3(a, b, c):
    return torch.logsumexp(torch.stack([a, b, c]), 0)


def _constrained(z, logp, tokens, bounds, counts, lengths, blank, delay):
    """CNTK's forward-backward with its delay constraint (see the module docstring)."""
    bsz, t_max, _ = logp.shape
    n_states = 2 * t_max + 1
    s = torch.arange(n_states, device=z.device)
    k = s // 2                                                  # the token a state is at/before
    is_token = (s % 2) == 1
    kc = k.clamp_max(t_max - 1).expand(bsz, n_states)
    ext = torch.where(is_token, tokens.gather(1, kc), torch.full_like(kc, blank))   # (B, S)
    n = counts.unsqueeze(1)
    valid = s.unsqueeze(0) <= 2 * n
    # the boundary each state's constraint reads: the next token's, the length for the last
    # token and the blank before it, 0 for the final blank (CNTK reads past its label graph)
    nxt = (k + 1).clamp_max(t_max - 1).expand(bsz, n_states)
    next_bound = torch.where((k + 1).unsqueeze(0) < n, bounds.gather(1, nxt),
                             lengths.unsqueeze(1).expand(bsz, n_states))
    bound = torch.where(s.unsqueeze(0) == 2 * n, torch.zeros_like(next_bound), next_bound)
    last_frame = bound + delay - torch.where(is_token, 0, 1).unsqueeze(0)  # allowed up to here
    ext_prev2 = torch.cat([torch.full_like(ext[:, :2], -1), ext[:, :-2]], 1)
    skip_in = is_token.unsqueeze(0) & (ext != ext_prev2) & (s >= 2).unsqueeze(0)
    ext_next2 = torch.cat([ext[:, 2:], torch.full_like(ext[:, :2], -1)], 1)
    skip_out = is_token.unsqueeze(0) & (ext != ext_next2) & (s.unsqueeze(0) < 2 * n - 1)
    step_out = s.unsqueeze(0) < 2 * n
    neg = torch.full((bsz, n_states), _LZERO, dtype=logp.dtype, device=z.device)
    emit = logp.gather(2, ext.unsqueeze(1).expand(bsz, t_max, n_states))      # (B, T, S)

    alphas = []
    alpha = torch.where(valid & (s <= 1).unsqueeze(0), emit[:, 0], neg)
    alphas.append(alpha)
    for t in range(1, t_max):
        prev1 = torch.cat([neg[:, :1], alpha[:, :-1]], 1)
        prev2 = torch.where(skip_in, torch.cat([neg[:, :2], alpha[:, :-2]], 1), neg)
        alpha = _logsumexp3(alpha, prev1, prev2) + emit[:, t]
        alpha = torch.where(valid & (t <= last_frame), alpha, neg)
        alphas.append(alpha)
    betas = [None] * t_max
    beta = neg
    last = (lengths - 1).unsqueeze(1)
    for t in range(t_max - 1, -1, -1):
        nxt1 = torch.where(step_out, torch.cat([beta[:, 1:], neg[:, :1]], 1), neg)
        nxt2 = torch.where(skip_out, torch.cat([beta[:, 2:], neg[:, :2]], 1), neg)
        inner = _logsumexp3(beta, nxt1, nxt2) + emit[:, t]
        inner = torch.where(valid & (t <= last_frame), inner, neg)
        init = torch.where(valid & (s.unsqueeze(0) >= 2 * n - 1), emit[:, t], neg)
        beta = torch.where(last == t, init, torch.where(last > t, inner, neg))
        betas[t] = beta
    alpha_all, beta_all = torch.stack(alphas, 1), torch.stack(betas, 1)          # (B, T, S)
    total = torch.logaddexp(beta_all[:, 0, 0], beta_all[:, 0, 1])
    log_occupancy = alpha_all + beta_all - emit - total[:, None, None]
    occupancy = torch.where(log_occupancy < _LZERO, 0.0, torch.exp(log_occupancy))
    gamma = torch.zeros_like(logp).scatter_add(2, ext.unsqueeze(1).expand_as(occupancy),
                                               occupancy)
    frame_sum = gamma.sum(-1, keepdim=True)
    gamma = torch.where(frame_sum > 0, gamma / torch.where(frame_sum > 0, frame_sum, 1.0), 0.0)
    gamma = torch.where(step_mask(lengths, t_max, 3), gamma, 0.0).detach()
    # the value, with CNTK's gradient softmax(z) - gamma (gamma sums to 1 on each frame)
    surrogate = -(gamma * logp).sum()
    return (-total.sum()).detach() + surrogate - surrogate.detach()


@op(3, category="loss", precision="float", shape=_scalar_shape, traceable=False,
    frameworks=("cntk",))
def cntk_forward_backward(graph, output, lengths, blank_token_id=-1, delay_constraint=-1):
    """CNTK's CTC criterion (``ForwardBackward`` over ``LabelsToGraph``): ``-log p(labels |
    log_softmax(output))`` summed over the minibatch's sequences, one number.  ``graph`` holds
    CNTK's frame labels (``2`` where a token starts, ``1`` where it continues; see the module
    docstring), ``output`` the unnormalised network output, both ``(B, T, C)`` with the
    sequences' ``lengths``; ``blank_token_id`` -1 is the last class; ``delay_constraint`` -1
    is none.  The gradient for ``output`` is ``softmax(output) - gamma`` (gamma: the per-frame
    class occupancy); ``graph`` gets none.  torch's ``ctc_loss`` has no shape rule for fake
    tensors, so a static plan holding this op runs eagerly (``traceable=False``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> labels = np.zeros((1, 3, 3), np.float32)
        >>> labels[0, 0, 0], labels[0, 1, 0], labels[0, 2, 1] = 2, 1, 2    # tokens 0, 1
        >>> with sd.auto_forward():
        ...     z = sd.Variable.from_numpy_array(np.zeros((1, 3, 3), np.float32))
        ...     n = sd.Variable.from_numpy_array(np.array([3]))
        ...     loss = F.cntk_forward_backward(sd.Variable.from_numpy_array(labels), z, n)
        >>> round(float(loss.d), 4)      # -log(5 of the 27 paths)
        1.6864
    """
    _check_sequences("forward_backward", graph, output, lengths)
    blank = _blank(blank_token_id, output.shape[-1])
    lengths = lengths.to(torch.int64)
    tokens, bounds, counts = _label_sequence(graph.detach(), lengths)
    logp = torch.log_softmax(output, -1)
    if int(delay_constraint) < 0:
        return _unconstrained(logp, tokens, counts, lengths, blank).to(output.dtype)
    return _constrained(output, logp, tokens, bounds, counts, lengths, blank,
                        int(delay_constraint)).to(output.dtype)


def _metric_shape(input_a, input_b, lengths=None, sub_pen=1.0, del_pen=1.0, ins_pen=1.0,
                  squash_inputs=False, tokens_to_ignore=()):
    if lengths is not None:
        _check_sequences("edit_distance_error", input_a, input_b, lengths)
    elif tuple(input_a.shape) != tuple(input_b.shape) or input_a.dim() != 2:
        raise ValueError(f"edit_distance_error: two (B, C) inputs of one shape are needed, got "
                         f"{tuple(input_a.shape)} and {tuple(input_b.shape)}")
    return torch.empty((), dtype=input_a.dtype, device="meta")


def _tokens(ids: list[int], squash: bool, ignore: set[int]) -> list[int]:
    """CNTK's extraction: the first frame's class unless ignored; then, squashing, each change
    of class (an ignored class still ends a run), else every frame not ignored."""
    out = [ids[0]] if ids[0] not in ignore else []
    last = ids[0]
    for i in ids[1:]:
        if squash:
            if i != last:
                last = i
                if i not in ignore:
                    out.append(i)
        elif i not in ignore:
            out.append(i)
    return out


def _edits(hypothesis: list[int], reference: list[int], sub: float, dele: float,
           ins: float) -> int:
    """The number of edits on the least-penalty path from ``hypothesis`` to ``reference``:
    a cell of the grid takes the cheapest of the diagonal (free for equal tokens, ``sub``
    otherwise), a deletion (``dele``: a hypothesis token dropped) and an insertion (``ins``),
    preferring them in that order -- diagonal, insertion, deletion -- on equal penalties
    (CNTK 2.7's choices, found by running it)."""
    rows, cols = len(hypothesis) + 1, len(reference) + 1
    grid = [[0.0] * cols for _ in range(rows)]
    count = [[0] * cols for _ in range(rows)]
    for i in range(rows):
        grid[i][0], count[i][0] = i * dele, i
    for j in range(cols):
        grid[0][j], count[0][j] = j * ins, j
    for i in range(1, rows):
        for j in range(1, cols):
            same = hypothesis[i - 1] == reference[j - 1]
            best = (grid[i - 1][j - 1] + (0.0 if same else sub),
                    count[i - 1][j - 1] + (0 if same else 1))
            for option in ((grid[i][j - 1] + ins, count[i][j - 1] + 1),
                           (grid[i - 1][j] + dele, count[i - 1][j] + 1)):
                if option[0] < best[0]:
                    best = option
            grid[i][j], count[i][j] = best
    return count[-1][-1]


@op(3, category="metric", precision="float", shape=_metric_shape, traceable=False,
    frameworks=("cntk",))
def cntk_edit_distance_error(input_a, input_b, lengths=None, sub_pen=1.0, del_pen=1.0,
                             ins_pen=1.0, squash_inputs=False, tokens_to_ignore=()):
    """CNTK 2.7's ``edit_distance_error``: per sequence, the edits between the argmax classes
    of ``input_b`` (the reference) and of ``input_a``, times the minibatch's frame count over
    its reference tokens (one number; see the module docstring).  Sequences are ``(B, T, C)``
    with ``lengths``; ``(B, C)`` inputs without lengths are one frame per sample.  No gradient;
    it reads the data, so a static plan holding it runs eagerly.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> eye = np.eye(3, dtype=np.float32)
        >>> with sd.auto_forward():
        ...     a = sd.Variable.from_numpy_array(eye[[[0, 1, 1, 2]]])
        ...     b = sd.Variable.from_numpy_array(eye[[[0, 0, 2, 2]]])
        ...     n = sd.Variable.from_numpy_array(np.array([4]))
        ...     e = F.cntk_edit_distance_error(a, b, n, squash_inputs=True)
        >>> float(e.d)       # reference 0 2, output 0 1 2: one insertion, 4 frames, 2 tokens
        2.0
    """
    _metric_shape(input_a, input_b, lengths)
    if lengths is None:
        input_a, input_b = input_a.unsqueeze(1), input_b.unsqueeze(1)
        lengths = torch.ones(input_a.shape[0], dtype=torch.int64)
    ids_a = input_a.detach().argmax(-1).tolist()
    ids_b = input_b.detach().argmax(-1).tolist()
    ignore = {int(i) for i in tokens_to_ignore}
    wrong, reference, frames = 0, 0, 0
    for row_a, row_b, n in zip(ids_a, ids_b, lengths.tolist()):
        n = int(n)
        if n == 0:
            continue
        frames += n
        hypothesis = _tokens(row_a[:n], bool(squash_inputs), ignore)
        target = _tokens(row_b[:n], bool(squash_inputs), ignore)
        reference += len(target)
        wrong += _edits(hypothesis, target, float(sub_pen), float(del_pen), float(ins_pen))
    value = wrong * frames / reference if reference else float("inf") if wrong else float("nan")
    return torch.tensor(value, dtype=input_a.dtype, device=input_a.device)
