"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 with a Python function as a
recurrence's step (cntkrec36): the checks CNTK makes as the recurrence is made (a step that
reads an outside variable, leaves an argument unused, raises, returns None), the state of a
step that reshapes it, the parameters of a recurrence of a Python step."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_raised = functools.partial(outcome, convert=as_returned,
                            raised=functools.partial(as_raised, first_line=True))


def _made(make):
    """``make()``'s outcome as a recurrence is made: "made", or its error's type and first
    line (CNTK 2.7 raises these in ``Recurrence``, before any application)."""
    return _raised(lambda: make() and "made")


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.layers.RecurrenceFrom"],
           note="CNTK 2.7 runs a Python step once on placeholders as the recurrence is made "
                "(sequence.py:165-189's _santize_step_function) and refuses it there: a step "
                "reading an input or placeholder besides its arguments (a TypeError naming "
                "them, sequence.py:172-182), one leaving an argument unused (functions.py:"
                "263-270), one returning None (functions.py:197), and a step whose own code "
                "raises (its error, as raised); a parameter read from outside is no argument. "
                "Stadyn swallowed every error of that run: it made those recurrences (and ran "
                "the one over an outside input, with two arguments)",
           known={"IndexError": "CNTK 2.7 raises the step's own IndexError as the recurrence "
                  "is made; Stadyn leaves an IndexError or AttributeError of that run to the "
                  "application (_step_checks._raised_by_the_step), since its Functions waiting "
                  "on placeholders lack some of what CNTK's have (an LSTM applied to "
                  "placeholders has one output, CNTK's two: a step reading out.outputs[1] "
                  "would be refused where CNTK makes it)"})
def recurrence__python_step_checks(C, r, np):
    L = C.layers
    x = C.sequence.input_variable(2)
    y = C.input_variable(2, name="y")
    s = C.sequence.input_variable(2)
    p = C.placeholder(name="pp")
    w = C.parameter((2,), init=0.5, name="w")

    def no_value(h, v):
        return None
    res = {
        "outside input": _made(lambda: L.Recurrence(lambda h, v: C.tanh(h + v + y))),
        "outside sequence": _made(lambda: L.Recurrence(lambda h, v: C.tanh(h + v + s))),
        "outside placeholder": _made(lambda: L.Recurrence(lambda h, v: C.tanh(h + v + p))),
        "Fold, outside input": _made(lambda: L.Fold(lambda h, v: h + v * y)),
        "RecurrenceFrom, outside input": _made(lambda: L.RecurrenceFrom(
            lambda h, v: h + v + y)),
        "two states, outside input": _made(lambda: L.Recurrence(
            lambda h, c, v: (h + v, c + y))),
        "unused state": _made(lambda: L.Recurrence(lambda h, v: C.tanh(v))),
        "unused input": _made(lambda: L.Recurrence(lambda h, v: C.tanh(h))),
        "returns None": _made(lambda: L.Recurrence(no_value)),
        "divided by 0 (an op)": _made(lambda: L.Recurrence(lambda h, v: h + v / 0)),
        "ZeroDivisionError": _made(lambda: L.Recurrence(lambda h, v: h + v * (1 // 0))),
        "KeyError": _made(lambda: L.Recurrence(lambda h, v: {}["state"])),
        "IndexError": _made(lambda: L.Recurrence(lambda h, v: (h + v,)[1])),
        "outside parameter": _made(lambda: L.Recurrence(lambda h, v: C.tanh(h + v * w))),
    }
    z = L.Recurrence(lambda h, v: C.tanh(h + v * w))(x)
    res["outside parameter: arguments"] = [a.name for a in z.arguments]
    res["outside parameter: value"] = z.eval({x: [r.randn(3, 2).astype(np.float32)]})[0]
    return res
