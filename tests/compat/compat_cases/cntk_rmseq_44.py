"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (rmcntkseq44, a review of
cntkseq44's one rule for sequence-begin flags): ops it left out of the rule or put in it
wrongly, swept as ``cntk_seq_44`` sweeps them."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _runs(f, x, runs):
    """The outcome of each eval of ``f`` on ``(sequences, flags)`` in ``runs``, in order."""
    return [_outcome(lambda: f.eval({x: run})) for run in runs]


_DATA = [[0.0, 0.25], [0.5, 0.75], [1.0, 1.25], [1.5, 1.75]]


@cntk_case(names=["cntk.sequence.slice", "cntk.Function.eval"],
           note="sequence.slice(x, b, e) of several steps ((0, 2), (1, 0), (-2, 0)), each on a "
                "new Function: one sequence of 4 steps with flag [False] on a first run, and "
                "after a run of [True, True] (4 and 2 steps) [True, False], then [False, "
                "False] (4 and 4): CNTK 2.7 refuses every False flag (RuntimeError, "
                "GetColumnIndex, Sequences.h:524; no matching sequence on a first run); "
                "Stadyn computed the slices as of begun sequences (SILENT), refusing only the "
                "one-step slice (sequence.first)")
def sequence_slice__false_flags_need_whole_sequences(C, r, np):
    r.touch("cntk.Function.eval")
    x = C.sequence.input_variable(2)
    data = np.array(_DATA, np.float32)
    out = {}
    for begin, end in ((0, 2), (1, 0), (-2, 0)):
        first, later = C.sequence.slice(x, begin, end), C.sequence.slice(x, begin, end)
        out["%d %d" % (begin, end)] = _runs(first, x, [([data], [False])]) + _runs(
            later, x, [([data, data[:2]], [True, True]), ([data, data[:2]], [True, False]),
                       ([data, data], [False, False])])
    return out


@cntk_case(names=["cntk.layers.Convolution", "cntk.Function.eval"],
           note="Convolution((1,), 1, sequential=True, pad=p), p True and False (a window of "
                "one step: no past or future value spliced): flags [True, True], then "
                "[False, False] on two sequences of 3 steps, and [False] on a first run of a "
                "new layer. CNTK 2.7 computes every run as of begun sequences; Stadyn refused "
                "the False flags (RuntimeError), as for a window reading other steps")
def convolution_sequential__one_step_window_goes_on(C, r, np):
    r.touch("cntk.Function.eval")
    x = C.sequence.input_variable(2)
    data = np.array(_DATA[:3], np.float32)
    out = {}
    for pad in (True, False):
        def make():
            return C.layers.Convolution((1,), 1, sequential=True, pad=pad,
                                        init=C.glorot_uniform(seed=2))(x)
        out["padded" if pad else "unpadded"] = _runs(
            make(), x, [([data, data], [True, True]), ([data, data], [False, False])]) + \
            _runs(make(), x, [([data], [False])])
    return out
