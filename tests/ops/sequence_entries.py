"""Harness entries of the sequence ops (``stadyn/ops/_sequence.py``) and the recurrence
(``ops/_recurrence.py``), with NumPy references written from CNTK's per-sequence semantics:
each reference walks the sequences one by one, cut to their lengths, so padding cannot enter.

Every case pads ragged lengths (3, 1, 4 over 4 steps) with large values (``PAD``) at the
padded steps: a padded step that leaked into a value or a gradient would show.
"""

from __future__ import annotations

import numpy as np

import stadyn as sd
import stadyn.functions as F
from stadyn.ops import StepFunction

LENGTHS = np.array([3, 1, 4], dtype=np.int64)
PAD = 50.0


def padded(*sample: int, seed: int = 0, lengths=LENGTHS) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((len(lengths), int(lengths.max())) + sample).astype(np.float32)
    for b, n in enumerate(lengths):
        x[b, n:] = PAD
    return x


def _seqs(x, lengths):
    return [x[b, :int(n)] for b, n in enumerate(lengths)]


def _pad_like(rows, x, fill=0.0):
    out = np.full(x.shape, fill, dtype=np.float64)
    for b, r in enumerate(rows):
        out[b, :len(r)] = r
    return out


def ref_reduce_sum(x, lengths):
    return np.stack([s.sum(0) for s in _seqs(x, lengths)])


def ref_reduce_max(x, lengths):
    return np.stack([s.max(0) for s in _seqs(x, lengths)])


def ref_softmax(x, lengths):
    rows = []
    for s in _seqs(x, lengths):
        e = np.exp(s - s.max(0))
        rows.append(e / e.sum(0))
    return _pad_like(rows, x)


def ref_first(x, lengths):
    return np.stack([s[0] for s in _seqs(x, lengths)])


def ref_last(x, lengths):
    return np.stack([s[-1] for s in _seqs(x, lengths)])


def ref_slice(x, lengths, begin_index=0, end_index=0):
    rows = []
    for s in _seqs(x, lengths):
        n = len(s)
        b = max(n + begin_index, 0) if begin_index < 0 else min(begin_index, n)
        e = min(end_index, n) if end_index > 0 else max(n + end_index, 0)
        rows.append(s[b:max(e, b)])
    steps = max(1, max(len(r) for r in rows))
    out = np.zeros((x.shape[0], steps) + x.shape[2:])
    for k, r in enumerate(rows):
        out[k, :len(r)] = r
    return out, np.array([len(r) for r in rows], dtype=np.int64)


def ref_broadcast_as(x, like, lengths):
    rows = [np.repeat(x[b][None], int(n), 0) for b, n in enumerate(lengths)]
    return _pad_like(rows, np.zeros((like.shape[0], like.shape[1]) + x.shape[1:]))


def ref_reconcile(x, lengths, like, like_lengths):
    return x


def _initial(initial_state, step_shape, b):
    s = np.asarray(initial_state, dtype=np.float64)
    return np.broadcast_to(s[b] if s.ndim == len(step_shape) + 1 else s, step_shape)


def ref_past_value(x, lengths, initial_state, time_step=1):
    rows = []
    for b, s in enumerate(_seqs(x, lengths)):
        init = _initial(initial_state, s.shape[1:], b)
        rows.append(np.stack([s[t - time_step] if t >= time_step else init
                              for t in range(len(s))]))
    return _pad_like(rows, x)


def ref_future_value(x, lengths, initial_state, time_step=1):
    rows = []
    for b, s in enumerate(_seqs(x, lengths)):
        init = _initial(initial_state, s.shape[1:], b)
        rows.append(np.stack([s[t + time_step] if t + time_step < len(s) else init
                              for t in range(len(s))]))
    return _pad_like(rows, x)


def ref_unpack(x, lengths, padding_value=0.0):
    mask = (np.arange(x.shape[1])[None] < lengths[:, None]).astype(np.float64)
    rows = _seqs(x, lengths)
    return _pad_like(rows, x, padding_value), mask


# -- the recurrence: h_t = tanh(h_{t-1} * w + u_t) --------------------------------------------
def _tanh_step() -> StepFunction:
    h, u, w = sd.Variable((1, 2)), sd.Variable((1, 2)), sd.Variable((2,))
    return StepFunction([h], [u], [F.tanh(h * w + u)])


TANH_STEP = _tanh_step()


def _two_state_step() -> StepFunction:
    """Two states: a running sum and a running maximum of the input."""
    s, m, u = sd.Variable((1, 2)), sd.Variable((1, 2)), sd.Variable((1, 2))
    return StepFunction([s, m], [u], [s + u, F.maximum2(m, u)])


TWO_STATES = _two_state_step()


def ref_recurrence(lengths, x, *rest, step=None, n_sequences=1, go_backwards=False):
    """Each sequence on its own, from its first step (its last going backwards); padded
    steps of every state are 0."""
    inits, captured = rest[:len(step.states)], rest[len(step.states):]
    outs = [np.zeros(x.shape, np.float64) for _ in inits]
    for b, s in enumerate(_seqs(x, lengths)):
        states = [np.broadcast_to(np.asarray(h, np.float64), s.shape[1:]) for h in inits]
        for t in (range(len(s) - 1, -1, -1) if go_backwards else range(len(s))):
            if step is TANH_STEP:
                states = [np.tanh(states[0] * captured[0] + s[t])]
            else:
                states = [states[0] + s[t], np.maximum(states[1], s[t])]
            for k, st in enumerate(states):
                outs[k][b, t] = st
    return outs[0] if len(outs) == 1 else tuple(outs)


def sequence_entries(Case, Entry):
    """The entries, built with test_ops.py's ``Case`` and ``Entry``."""
    x3 = padded(2, seed=1)
    mask_note = "the lengths are integers"
    return {
        "sequence_reduce_sum": Entry([Case((x3, LENGTHS))], ref_reduce_sum,
                                     why_not_others=mask_note),
        "sequence_reduce_max": Entry([Case((x3, LENGTHS))], ref_reduce_max,
                                     why_not_others=mask_note),
        "sequence_softmax": Entry([Case((padded(2, seed=2), LENGTHS))], ref_softmax,
                                  why_not_others=mask_note),
        "sequence_first": Entry([Case((x3, LENGTHS))], ref_first, why_not_others=mask_note),
        "sequence_last": Entry([Case((x3, LENGTHS)), Case((padded(seed=3), LENGTHS))],
                               ref_last, why_not_others=mask_note),
        "sequence_slice": Entry([Case((x3, LENGTHS), {"begin_index": 1}),
                                 Case((x3, LENGTHS), {"begin_index": 0, "end_index": -1}),
                                 Case((x3, LENGTHS), {"begin_index": -2}),
                                 Case((x3, LENGTHS), {"begin_index": 1, "end_index": 3})],
                                ref_slice, why_not_others=mask_note),
        "sequence_broadcast_as": Entry([Case((padded(seed=4)[:, 0], x3, LENGTHS))],
                                       ref_broadcast_as, grad_inputs=(0,),
                                       why_not_others="only x's value reaches the output"),
        "sequence_reconcile": Entry([Case((x3, LENGTHS, x3, LENGTHS))], ref_reconcile,
                                    grad_inputs=(0,), why_not_others="the lengths are counts"),
        "past_value": Entry([Case((x3, LENGTHS, np.float32(0.5))),
                             Case((x3, LENGTHS, padded(2, seed=5)[:, 0]), {"time_step": 2})],
                            ref_past_value, why_not_others=mask_note),
        "future_value": Entry([Case((x3, LENGTHS, np.float32(-1.0))),
                               Case((x3, LENGTHS, np.array([0.5, 1.5], np.float32)),
                                    {"time_step": 2})],
                              ref_future_value, why_not_others=mask_note),
        "sequence_unpack": Entry([Case((x3, LENGTHS), {"padding_value": -3.0})], ref_unpack,
                                 why_not_others=mask_note),
        "recurrence": Entry(
            [Case((LENGTHS, _padded_small(1), np.float32(0.1), np.array([0.5, -0.7], np.float32)),
                  {"step": TANH_STEP}),
             Case((LENGTHS, _padded_small(2), np.float32(0.1), np.array([0.5, -0.7], np.float32)),
                  {"step": TANH_STEP, "go_backwards": True}),
             Case((LENGTHS, _padded_small(3), np.zeros(2, np.float32),
                   np.full(2, -5.0, np.float32)), {"step": TWO_STATES, "go_backwards": True})],
            ref_recurrence, why_not_others=mask_note),
    }


def _padded_small(seed):
    x = padded(2, seed=seed)
    for b, n in enumerate(LENGTHS):
        x[b, n:] = 3.0       # large enough to change a state, small enough for tanh's gradient
    return x


# -- new sequence axes: where / gather / scatter (counts per step), to_sequence ----------------
def _taken_steps(condition, lengths):
    """Per sequence, the steps a condition takes: as often as the accumulated count, rounded
    up, grows at the step (CNTK 2.7: counts 0.4, 0.4, 0.4 take steps 0 and 2)."""
    c = np.asarray(condition, np.float64).reshape(condition.shape[:2])
    rows = []
    for b, n in enumerate(lengths):
        total, done, row = 0.0, 0, []
        for t in range(int(n)):
            total += max(c[b, t], 0.0)
            row += [t] * (int(np.ceil(total)) - done)
            done = int(np.ceil(total))
        rows.append(row)
    return rows


def ref_where(condition, lengths, max_repeat=1):
    """(``max_repeat`` sizes a build only: the new axis is the longest new sequence.)"""
    taken = _taken_steps(condition, lengths)
    out = np.zeros((condition.shape[0], max(len(i) for i in taken)))
    for b, idx in enumerate(taken):
        out[b, :len(idx)] = idx
    return out, np.array([len(i) for i in taken], dtype=np.int64)


def ref_gather(x, condition, lengths, max_repeat=1):
    taken = _taken_steps(condition, lengths)
    out = np.zeros((x.shape[0], max(len(i) for i in taken)) + x.shape[2:])
    for b, idx in enumerate(taken):
        for j, t in enumerate(idx):
            out[b, j] = x[b, t]
    return out, np.array([len(i) for i in taken], dtype=np.int64)


def ref_scatter(x, condition, lengths):
    """Each step of ``x`` added to the step it was taken from (a step taken twice: a sum)."""
    out = np.zeros((condition.shape[0], condition.shape[1]) + x.shape[2:])
    for b, idx in enumerate(_taken_steps(condition, lengths)):
        for j, t in enumerate(idx):
            out[b, t] += x[b, j]
    return out


def ref_to_sequence(x, lengths):
    n = np.round(np.asarray(lengths, np.float64).reshape(-1)).astype(np.int64)
    out = np.zeros(x.shape)
    for b, k in enumerate(n):
        out[b, :k] = x[b, :k]
    return out, n


def ref_full_lengths(x):
    return np.full(x.shape[0], x.shape[1], dtype=np.int64)


def ref_window_lengths(lengths, kernel=1, span=1, stride=1, pad=False):
    """By hand: ceil(n / stride) padded, else the whole windows that fit, one per stride."""
    return np.array([-(-n // stride) if pad else (n - span) // stride + 1 for n in lengths],
                    np.int64)


# 0/1 conditions (and counts of 2) at real steps, garbage (7) at padded ones
CONDITION = np.array([[1, 0, 1, 7], [1, 7, 7, 7], [0, 1, 1, 0]], np.float32)
COUNTS = np.array([[2, 0, 1, 7], [1, 7, 7, 7], [0, 1, 0, 0]], np.float32)
FRACTIONS = np.array([[1.5, 0.4, 2.6, 7], [0.5, 7, 7, 7], [0.4, 0.4, 0.4, 0.5]], np.float32)


def new_axis_entries(Case, Entry):
    """Entries of the ops that make a new sequence axis."""
    x3 = padded(2, seed=6)
    note = "the condition says which steps are taken (a count); the lengths are integers"
    packed = padded(2, seed=7, lengths=np.array([2, 1, 2]))
    return {
        "sequence_where": Entry([Case((CONDITION, LENGTHS)), Case((COUNTS, LENGTHS)),
                                 Case((COUNTS[..., None], LENGTHS), {"max_repeat": 2}),
                                 Case((FRACTIONS, LENGTHS), {"max_repeat": 2})], ref_where,
                                no_grad="positions are integers counted from the condition"),
        "sequence_gather": Entry([Case((x3, CONDITION, LENGTHS)),
                                  Case((x3, FRACTIONS, LENGTHS), {"max_repeat": 2})],
                                 ref_gather, grad_inputs=(0,), why_not_others=note),
        "sequence_scatter": Entry([Case((packed, CONDITION, LENGTHS)),
                                   Case((padded(2, seed=8, lengths=np.array([3, 1, 1])),
                                         COUNTS, LENGTHS))], ref_scatter,
                                  grad_inputs=(0,), why_not_others=note),
        "to_sequence": Entry([Case((x3, np.array([2.0, 4.0, 1.0], np.float32))),
                              Case((x3, np.array([[3], [1], [4]], np.int64)))], ref_to_sequence,
                             grad_inputs=(0,), why_not_others="the lengths are counts"),
        "sequence_full_lengths": Entry([Case((x3,))], ref_full_lengths,
                                       no_grad="the lengths are integers"),
        "sequence_window_lengths": Entry(
            [Case((np.array([5, 7, 9]),), {"kernel": 3, "span": 5, "stride": 2}),
             Case((np.array([5, 7, 2]),), {"kernel": 3, "span": 3, "stride": 2, "pad": True})],
            ref_window_lengths, no_grad="the lengths are integers"),
    }


# -- CNTK's LSTM run by torch's fused kernel ------------------------------------------------------
def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def ref_lstm_sequence(x, lengths, h0, c0, w, hw, b, go_backwards=False):
    """CNTK's LSTM step (gates i, c, f, o) walked over each sequence alone."""
    size = hw.shape[0]
    out = np.zeros(x.shape[:2] + (size,))
    for k, s in enumerate(_seqs(x, lengths)):
        h = np.broadcast_to(h0[k] if np.ndim(h0) == 2 else h0, (size,)).astype(np.float64)
        c = np.broadcast_to(c0[k] if np.ndim(c0) == 2 else c0, (size,)).astype(np.float64)
        for t in (range(len(s) - 1, -1, -1) if go_backwards else range(len(s))):
            i, g, f, o = np.split(s[t] @ w + b + h @ hw, 4)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
            out[k, t] = h
    return out


def lstm_entries(Case, Entry):
    """The entry of ``cntk_lstm_sequence``."""
    rng = np.random.default_rng(8)
    x = padded(2, seed=9)
    w, hw = (rng.standard_normal((2, 12)) * 0.5).astype(np.float32), \
        (rng.standard_normal((3, 12)) * 0.5).astype(np.float32)
    b = (rng.standard_normal(12) * 0.3).astype(np.float32)
    h0 = (rng.standard_normal((3, 3)) * 0.5).astype(np.float32)
    return {"cntk_lstm_sequence": Entry(
        [Case((x, LENGTHS, np.float32(0), np.float32(0), w, hw, b)),
         Case((x, LENGTHS, h0, np.full(3, 0.2, np.float32), w, hw, b), {"go_backwards": True})],
        ref_lstm_sequence, grad_inputs=(0, 2, 3, 4, 5, 6), rtol=1e-4, atol=1e-5,
        why_not_others="the lengths are integers")}
