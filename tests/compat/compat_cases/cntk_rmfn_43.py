"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (rmcntkfn43, review of cntkfn43):
sequence-begin flags given with ``Value.create`` were dropped by a run, and ``future_value``
(``sequence.is_last``) on a first run with a False flag computed values."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


@cntk_case(names=["cntk.Value.create", "cntk.sequence.first", "cntk.sequence.last",
                  "cntk.sequence.reduce_sum", "cntk.Function.eval"],
           note="sequence.first, last, reduce_sum and x * 2 evaluated on a Value.create of two "
                "sequences (3 and 1 steps) with seq_starts [True, False]: CNTK 2.7 refuses "
                "the sequence ops (RuntimeError) and computes x * 2; Stadyn dropped the "
                "Value's flags and computed them all (SILENT)")
def value_create__begin_flags_reach_the_run(C, r, np):
    r.touch("cntk.Function.eval")
    r.touch("cntk.Value.create")
    x = C.sequence.input_variable(2)
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    made = {"first": C.sequence.first(x), "last": C.sequence.last(x),
            "reduce_sum": C.sequence.reduce_sum(x), "times 2": x * 2}
    return {key: _outcome(lambda: f.eval({x: C.Value.create(x, [data, data[:1]],
                                                            [True, False])}))
            for key, f in sorted(made.items())}


@cntk_case(names=["cntk.sequence.future_value", "cntk.sequence.is_last", "cntk.Function.eval"],
           note="future_value and is_last on two sequences (3 and 1 steps) with flags [True, "
                "False] on a first run, then flags [True, True] and [True, False] on a new "
                "Function: CNTK 2.7 refuses the first run (RuntimeError: no matching sequence "
                "in the saved previous MBLayout) and after one computes a False flag as a True "
                "one; Stadyn computed the first run (SILENT)")
def future_value__false_flag_on_a_first_run(C, r, np):
    r.touch("cntk.Function.eval")
    x = C.sequence.input_variable(2)
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = {}
    for key, make in (("future_value", C.sequence.future_value), ("is_last", C.sequence.is_last)):
        first, later = make(x), make(x)
        out[key] = [_outcome(lambda: first.eval({x: ([data, data[:1]], [True, False])})),
                    _outcome(lambda: later.eval({x: ([data, data[:1]], [True, True])})),
                    _outcome(lambda: later.eval({x: ([data, data[:1]], [True, False])})),
                    _outcome(lambda: first.eval({x: ([data, data[:1]], [True, False])}))]
    return out
