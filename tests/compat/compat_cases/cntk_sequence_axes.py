"""``cntk.sequence``'s ops that make a new sequence axis (``where``, ``gather``, ``scatter``),
``delay``, ``to_sequence`` / ``to_sequence_like`` and ``reconcile_dynamic_axes`` over
sequences, on minibatches of ragged sequences (lengths 3, 1, 5): values and the gradients of
``sum(out * w)`` w.r.t. the input (``run_sequence`` in cntk_sequence.py).

The conditions are computed from the input and always take each sequence's first step (CNTK
2.7 fails on a sequence that a condition empties).
"""

from compat_cases.cntk_sequence import seq_case


def _condition(C, x):
    """1 where a step's values sum above 0, and at every first step."""
    return C.greater(C.reduce_sum(x, axis=0) + C.sequence.is_first(x) * 100.0, 0.0)


def _counts(C, x):
    """A count per step: 1 where the sum is positive, plus 1 at each first step (so 2 there
    when both)."""
    return C.greater(C.reduce_sum(x, axis=0), 0.0) + C.sequence.is_first(x)


_NAMES = ["cntk.ops.greater", "cntk.ops.reduce_sum", "cntk.sequence.is_first"]
seq_case("where", lambda C, x: C.sequence.where(_condition(C, x)),
         names=["cntk.sequence.where"] + _NAMES,
         note="the positions do not depend on x's values: the gradient is 0")
seq_case("where__counts", lambda C, x: C.sequence.where(_counts(C, x)),
         names=["cntk.sequence.where"] + _NAMES, note="a count of 2 repeats a position")
seq_case("where__fractions",
         lambda C, x: C.sequence.where(C.sigmoid(C.reduce_sum(x, axis=0)) * 1.5),
         names=["cntk.sequence.where", "cntk.ops.sigmoid", "cntk.ops.reduce_sum"],
         note="fractional counts accumulate (each step is taken as often as the running sum, "
              "rounded up, grows)")
seq_case("gather", lambda C, x: C.sequence.gather(x, _condition(C, x)),
         names=["cntk.sequence.gather"] + _NAMES)
seq_case("gather__counts", lambda C, x: C.sequence.gather(x, _counts(C, x)),
         names=["cntk.sequence.gather"] + _NAMES)
seq_case("scatter", lambda C, x: C.sequence.scatter(
    C.tanh(C.sequence.gather(x, _condition(C, x))), _condition(C, x)),
         names=["cntk.sequence.scatter", "cntk.sequence.gather", "cntk.ops.tanh"] + _NAMES)
seq_case("delay", lambda C, x: C.sequence.delay(x))
seq_case("delay__future_initial_state",
         lambda C, x: C.sequence.delay(x, initial_state=0.5, time_step=-2),
         names=["cntk.sequence.delay"])
seq_case("delay__zero", lambda C, x: C.sequence.delay(x, time_step=0) * 2.0,
         names=["cntk.sequence.delay"])
seq_case("to_sequence_like",
         lambda C, x: C.to_sequence_like(C.sequence.unpack(x, 0.0, no_mask_output=True) * 3.0, x),
         names=["cntk.ops.to_sequence_like", "cntk.sequence.unpack"])


def _lengths(C, x):
    """Each sequence's length, one number per sequence."""
    return C.stop_gradient(C.sequence.reduce_sum(C.sequence.is_first(x) * 0.0 + 1.0))


seq_case("to_sequence",
         lambda C, x: C.tanh(C.to_sequence(C.sequence.unpack(x, 0.0, no_mask_output=True),
                                           _lengths(C, x))),
         names=["cntk.ops.to_sequence", "cntk.sequence.unpack", "cntk.sequence.reduce_sum",
                "cntk.sequence.is_first", "cntk.ops.tanh", "cntk.ops.stop_gradient"],
         note="CNTK does not differentiate the lengths (stop_gradient)")
seq_case("to_sequence__all_steps",
         lambda C, x: C.to_sequence(C.sequence.unpack(x, 0.5, no_mask_output=True)),
         names=["cntk.ops.to_sequence", "cntk.sequence.unpack"],
         note="without lengths every sequence is the padded length (5) long")
seq_case("reconcile_dynamic_axes",
         lambda C, x: x * C.reconcile_dynamic_axes(C.sequence.last(x), x),
         names=["cntk.ops.reconcile_dynamic_axes", "cntk.sequence.last"])
