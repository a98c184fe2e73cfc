"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 in recurrences and layer outputs
(cntkrec2): the ``output`` of a layer of several outputs, and a step of two states that
applies no recurrent cell."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


@cntk_case(names=["cntk.layers.LSTM", "cntk.layers.GRU", "cntk.layers.Recurrence"],
           note="a layer's output before and after it is applied: CNTK 2.7 refuses the one "
                "output of a Function of several (an LSTM's h and c) with a RuntimeError; "
                "Stadyn gave an unapplied LSTM's first output (and, for an unapplied "
                "full-state Recurrence, one output where CNTK shows its LSTM block's two)")
def layer_outputs__of_several_refused(C, r):
    r.touch("cntk.input_variable", "cntk.layers.Dense", "cntk.combine")
    layers = [("LSTM", lambda: C.layers.LSTM(3)), ("GRU", lambda: C.layers.GRU(3)),
              ("Dense", lambda: C.layers.Dense(3)),
              ("Recurrence(LSTM)", lambda: C.layers.Recurrence(C.layers.LSTM(3))),
              ("Recurrence(LSTM, return_full_state=True)",
               lambda: C.layers.Recurrence(C.layers.LSTM(3), return_full_state=True))]
    res = {}
    for label, make in layers:
        layer = make()
        res[label] = {"output": _outcome(lambda: list(layer.output.shape)),
                      "outputs": len(layer.outputs),
                      "combined": len(C.combine(layer).outputs)}
    h, c, x = (C.input_variable(3, name=n) for n in "hcx")
    applied = C.layers.LSTM(3)(h, c, x)
    res["LSTM(3)(h, c, x)"] = {"output": _outcome(lambda: list(applied.output.shape)),
                               "outputs": [list(o.shape) for o in applied.outputs]}
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.Function"],
           note="step(h, c, x) = tanh(h + x), c + h * 0.5 under Recurrence: CNTK 2.7 infers "
                "both states' shapes through the loop (the input step's); Stadyn refused the "
                "step (its states' shapes not found: no recurrent cell in it); CNTK 2.7 "
                "builds the Recurrence without return_full_state too but its eval fails "
                "(RuntimeError, the state c's node 'does not match the SampleLayout shape "
                "[]'), which Stadyn computed before cntkrec37")
def two_states__of_a_step_applying_no_cell(C, r, np):
    r.touch("cntk.sequence.input_variable", "cntk.ops.tanh", "cntk.ops.plus",
            "cntk.ops.element_times")
    x = C.sequence.input_variable(3, name="x")

    @C.Function
    def step(h, c, x):
        return C.tanh(h + x), c + h * 0.5
    seqs = [r.randn(4, 3), r.randn(2, 3)]
    z = C.layers.Recurrence(step, return_full_state=True)(x)
    got = z.eval({x: seqs})
    res = {"full shapes": [list(o.shape) for o in z.outputs]}
    for k, o in enumerate(z.outputs):
        for s, v in enumerate(got[o]):
            res["full %d/%d" % (k, s)] = np.asarray(v)
    h = C.layers.Recurrence(step)(x)
    res["h shapes"] = [list(o.shape) for o in h.outputs]
    res["h eval"] = _outcome(lambda: [np.asarray(v).tolist() for v in h.eval({x: seqs})])
    return res
