"""CNTK 2.7's recurrences where they meet other layers: an ``initial_state`` computed from an
input is refused when ``Recurrence`` or ``Fold`` is made (its ``@Function`` ``recurrence``
would take an argument the layer does not have; ``RecurrenceFrom`` takes it), and a
``Sequential`` whose step returns a recurrence's full state passes every state on (an LSTM's
``h`` and ``c``: two outputs; a ``Dense`` after them CNTK's arity TypeError)."""

import re

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


def _refused(fn):
    """What ``fn()`` raised: its built-in type, its words before any hint in parentheses, the
    names in its first parentheses sorted (CNTK lists missing arguments from a set); or
    ``"made"``."""
    try:
        fn()
    except Exception as e:
        words = str(e).split("\n")[0]
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        found = re.match(r"(.*?) \(([^)]*)\)(.*?)(?: \(|$)", words)
        if found is None:
            return [kind, words]
        return [kind, found.group(1), sorted(found.group(2).split(", ")), found.group(3)]
    return "made"


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.layers.RecurrenceFrom"])
def recurrence__an_initial_state_reaching_an_input_is_refused(C, r):
    r.touch("cntk.layers.RNNStep", "cntk.layers.GRU", "cntk.layers.LSTM", "cntk.tanh",
            "cntk.sigmoid", "cntk.parameter", "cntk.constant", "cntk.Function.eval",
            "cntk.Function.parameters", "cntk.Function.arguments")
    L = C.layers
    x = C.sequence.input_variable(3, name="x")
    s = C.input_variable(4, name="s")
    t = C.input_variable(4, name="t")
    res = {
        "Recurrence over an input": _refused(
            lambda: L.Recurrence(L.RNNStep(4), initial_state=s)),
        "Recurrence applied": _refused(
            lambda: L.Recurrence(L.GRU(4), initial_state=s)(x)),
        "Recurrence over a function of an input": _refused(
            lambda: L.Recurrence(L.RNNStep(4), initial_state=C.tanh(s * 2))),
        "Recurrence over two inputs": _refused(
            lambda: L.Recurrence(L.RNNStep(4), initial_state=s + t)),
        "Recurrence of LSTM over a tuple": _refused(
            lambda: L.Recurrence(L.LSTM(4), initial_state=(s, 0))),
        "Fold over a function of an input": _refused(
            lambda: L.Fold(L.RNNStep(4), initial_state=C.tanh(s))),
        "Fold applied": _refused(lambda: L.Fold(L.GRU(4), initial_state=s)(x)),
    }
    xs = [r.randn(3, 3), r.randn(2, 3)]
    s0 = r.randn(2, 4)
    # a function of a parameter (no input): taken, its value the initial state
    z = L.Recurrence(L.LSTM(4), initial_state=C.sigmoid(
        C.parameter((4,), init=0.3, name="s0")))(x)
    res["over a parameter: parameters"] = r.set_params(z.parameters)
    for n, v in enumerate(z.eval({x: xs})):
        res["over a parameter, sequence %d" % n] = np.asarray(v)
    # RecurrenceFrom takes the initial state as an argument
    f = L.RecurrenceFrom(L.GRU(4))(s, x)
    res["RecurrenceFrom: parameters"] = r.set_params(f.parameters)
    for n, v in enumerate(f.eval({x: xs, s: s0})):
        res["RecurrenceFrom, sequence %d" % n] = np.asarray(v)
    return res


@cntk_case(names=["cntk.layers.Sequential", "cntk.layers.Recurrence", "cntk.layers.Fold"])
def sequential__a_recurrence_full_state_passes_every_state(C, r):
    r.touch("cntk.layers.LSTM", "cntk.layers.Dense", "cntk.layers.GRU", "cntk.Function.outputs",
            "cntk.Function.eval", "cntk.Function.parameters")
    L = C.layers
    x = C.sequence.input_variable(3, name="x")
    xs = [r.randn(3, 3), r.randn(2, 3)]
    res = {}
    made = {"Dense then Recurrence": lambda: L.Sequential([
                L.Dense(5), L.Recurrence(L.LSTM(4), return_full_state=True)]),
            "Recurrence alone": lambda: L.Sequential([
                L.Recurrence(L.LSTM(6), return_full_state=True)]),
            "Dense then Fold": lambda: L.Sequential([
                L.Dense(7), L.Fold(L.LSTM(2), return_full_state=True)]),
            "GRU's one state": lambda: L.Sequential([
                L.Dense(8), L.Recurrence(L.GRU(9), return_full_state=True)])}
    for label, make in made.items():
        model = make()
        res[label + ": outputs before applied"] = len(model.outputs)
        z = model(x)
        res[label + ": shapes"] = [list(o.shape) for o in z.outputs]
        res[label + ": parameters"] = r.set_params(z.parameters)
        got = z.eval({x: xs})
        for k, o in enumerate(z.outputs):       # (each sequence's values, per output)
            for n, v in enumerate(got[o] if isinstance(got, dict) else got):
                res["%s: output %d, sequence %d" % (label, k, n)] = np.asarray(v)
    res["Dense after the full state"] = outcome(lambda: L.Sequential([
        L.Recurrence(L.LSTM(4), return_full_state=True), L.Dense(2)]))
    res["Dense after the full state: words"] = _refused(lambda: L.Sequential([
        L.Recurrence(L.LSTM(4), return_full_state=True), L.Dense(2)]))
    return res
