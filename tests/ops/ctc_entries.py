"""Harness entries of CNTK's CTC criterion and edit distance (``stadyn/ops/_ctc.py``), with NumPy
references written independently of the ops: the CTC value sums the probabilities of every
alignment path, enumerated one by one (small sequences), under CNTK's delay rule stated per
(frame, state); the edit distance walks CNTK 2.7's grid in plain Python.

The padded steps hold large outputs and label values of 2 (a token start): one that leaked into
a value or a gradient would show.
"""

from __future__ import annotations

import itertools

import numpy as np

_RNG = np.random.default_rng(31)
CLASSES = 4


def _labels(tokens_per_sequence, lengths, steps):
    """Frame labels: ``(token, start)`` pairs per sequence; 2 at a start, 1 after it; padded
    steps hold 2 for class 0."""
    out = np.zeros((len(lengths), steps, CLASSES), np.float32)
    for b, (tokens, n) in enumerate(zip(tokens_per_sequence, lengths)):
        for i, (token, start) in enumerate(tokens):
            end = tokens[i + 1][1] if i + 1 < len(tokens) else n
            out[b, start, token] = 2.0
            out[b, start + 1:end, token] = 1.0
        out[b, n:, 0] = 2.0
    return out


def _outputs(lengths, steps):
    z = _RNG.standard_normal((len(lengths), steps, CLASSES)).astype(np.float32)
    for b, n in enumerate(lengths):
        z[b, n:] = 50.0
    return z


def _paths(n_frames, n_states):
    """Every CTC state path over ``n_frames`` (states 0..n_states-1; moves +0, +1, +2)."""
    for moves in itertools.product((0, 1, 2), repeat=n_frames - 1):
        for first in (0, 1):
            path = [first]
            for m in moves:
                path.append(path[-1] + m)
            if path[-1] < n_states and path[-1] >= n_states - 2:
                yield path


def ref_forward_backward(graph, output, lengths, blank_token_id=-1, delay_constraint=-1):
    total = 0.0
    blank = blank_token_id if blank_token_id >= 0 else CLASSES - 1
    for lab, z, n in zip(graph, output, lengths):
        n = int(n)
        z = z[:n] - z[:n].max(-1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
        starts = [t for t in range(n) if lab[t].max() == 2]
        tokens, bounds = [int(lab[t].argmax()) for t in starts], starts
        ext = [blank]
        for tok in tokens:
            ext += [tok, blank]
        k = len(tokens)
        # the boundary each state's constraint reads: the next token's (the length for the
        # last token and the blank before it), 0 for the final blank
        nxt = [bounds[i + 1] if i + 1 < k else n for i in range(k)]
        limit = []
        for s in range(2 * k + 1):
            if s == 2 * k:
                limit.append(0 + delay_constraint - 1)
            elif s % 2:
                limit.append(nxt[s // 2] + delay_constraint)
            else:
                limit.append(nxt[s // 2] + delay_constraint - 1)
        p = 0.0
        for path in _paths(n, 2 * k + 1):
            if any(path[t + 1] == path[t] + 2 and ext[path[t + 1]] in (blank, ext[path[t]])
                   for t in range(n - 1)):
                continue                          # a skip onto a blank or a repeated token
            if delay_constraint >= 0 and any(t > limit[s] for t, s in enumerate(path[:n - 1])):
                continue
            p += np.exp(sum(logp[t, ext[s]] for t, s in enumerate(path)))
        total += -np.log(p)
    return np.float64(total)


def _tokens(ids, squash, ignore):
    out, last = ([] if ids[0] in ignore else [ids[0]]), ids[0]
    for i in ids[1:]:
        if squash and i == last:
            continue
        last = i
        if i not in ignore:
            out.append(i)
    return out


def ref_edit_distance_error(a, b, lengths=None, sub_pen=1.0, del_pen=1.0, ins_pen=1.0,
                            squash_inputs=False, tokens_to_ignore=()):
    if lengths is None:
        a, b, lengths = a[:, None], b[:, None], np.ones(len(a), np.int64)
    wrong = reference = frames = 0
    for x, y, n in zip(a, b, lengths):
        n = int(n)
        frames += n
        hyp = _tokens(list(x[:n].argmax(-1)), squash_inputs, set(tokens_to_ignore))
        ref = _tokens(list(y[:n].argmax(-1)), squash_inputs, set(tokens_to_ignore))
        reference += len(ref)
        cost = {(i, 0): (i * del_pen, i) for i in range(len(hyp) + 1)}
        cost.update({(0, j): (j * ins_pen, j) for j in range(len(ref) + 1)})
        for i in range(1, len(hyp) + 1):
            for j in range(1, len(ref) + 1):
                same = hyp[i - 1] == ref[j - 1]
                options = [(cost[i - 1, j - 1][0] + (0 if same else sub_pen),
                            cost[i - 1, j - 1][1] + (not same)),
                           (cost[i, j - 1][0] + ins_pen, cost[i, j - 1][1] + 1),
                           (cost[i - 1, j][0] + del_pen, cost[i - 1, j][1] + 1)]
                cost[i, j] = min(options, key=lambda o: o[0])   # the first of equal costs
        wrong += cost[len(hyp), len(ref)][1]
    return np.float64(wrong * frames / reference)


def _ids(ids):
    return np.eye(CLASSES, dtype=np.float32)[np.asarray(ids)]


def ctc_entries(Case, Entry) -> dict:  # noqa: N803 - the harness passes its classes
    lengths = np.array([5, 3, 4], np.int64)
    tokens = [[(0, 0), (1, 2), (1, 3)], [(2, 1)], [(1, 0), (0, 1)]]
    graph = _labels(tokens, lengths, 5)
    z = _outputs(lengths, 5)
    no_label_grad = "the labels get no gradient (CNTK's)"
    a = np.stack([_ids([0, 1, 1, 2, 3]), _ids([2, 2, 0, 0, 0]), _ids([3, 1, 0, 1, 1])])
    b = np.stack([_ids([0, 0, 2, 2, 3]), _ids([2, 1, 1, 0, 0]), _ids([3, 3, 3, 1, 0])])
    edit_lengths = np.array([5, 3, 4], np.int64)
    return {
        "cntk_forward_backward": Entry(
            [Case((graph, z, lengths), {"blank_token_id": 3}),
             Case((graph, z, lengths), {"blank_token_id": -1, "delay_constraint": 2},
                  no_grad="with a delay constraint the gradient is CNTK's rule, not the "
                          "value's derivative: tests/compat holds it to CNTK 2.7's numbers"),
             Case((graph[:, :, [3, 0, 1, 2]], z, lengths), {"blank_token_id": 0})],
            reference=ref_forward_backward, grad_inputs=(1,), why_not_others=no_label_grad,
            rtol=1e-5, atol=1e-5),
        "cntk_edit_distance_error": Entry(
            [Case((a, b, edit_lengths)),
             Case((a, b, edit_lengths), {"squash_inputs": True, "tokens_to_ignore": (3,)}),
             Case((a, b, edit_lengths), {"sub_pen": 3.0, "del_pen": 1.0, "ins_pen": 2.0}),
             Case((a[:, 0], b[:, 0], None))],
            reference=ref_edit_distance_error, no_grad="an evaluation metric (CNTK's)"),
    }
