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
                "the one over an outside input, with two arguments)")
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


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Dense", "cntk.reshape"],
           note="a step that reshapes its state to a shape of its own (reshape(h, (6,))): "
                "CNTK 2.7's loop takes the reshape's shape where the state's is not known, so "
                "the state is what the step makes of it, (6,) (with a Dense((2, 3)) after the "
                "reshape: (2, 3)), whatever the input step's shape; Stadyn tried the state as "
                "the input step's (2,) first, the reshape refused it and Stadyn gave up: a "
                "ShapeError when applied.  Layers of fixed values (init), no random draw")
def recurrence__step_reshaping_its_state(C, r, np):
    L = C.layers
    x = C.sequence.input_variable(2)
    data = [r.randn(3, 2).astype(np.float32), r.randn(2, 2).astype(np.float32)]
    d6 = L.Dense(6, init=0.1)
    d23 = L.Dense((2, 3), init=0.05)
    d4 = L.Dense(4, init=0.1)
    steps = {
        "reshape": lambda h, v: C.reshape(h, (6,)) + C.splice(v, v, v),
        "reshape to a matrix": lambda h, v: C.reshape(h, (2, 3)) + C.reshape(
            C.splice(v, v, v), (2, 3)),
        "Dense after a reshape": lambda h, v: C.tanh(d6(C.reshape(h, (6,)) + C.splice(v, v, v))),
        "Dense((2, 3)) of a spliced reshape": lambda h, v: d23(C.splice(C.reshape(h, (6,)), v)),
        "Dense of a reshape to a matrix": lambda h, v: d4(C.splice(
            C.reshape(h, (2, 2)), C.reshape(v, (1, 2)), axis=0)),
    }
    res = {}
    for key, step in steps.items():
        z = L.Recurrence(step)(x)
        res[key + ": shape"] = list(z.shape)
        res[key + ": parameters"] = [[p.name, list(p.shape)] for p in z.parameters]
        res[key] = z.eval({x: data})
    return res


def _listed(params):
    return [[p.name, list(p.shape)] for p in params]


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.layers.RecurrenceFrom",
                  "cntk.layers.Dense", "cntk.layers.Sequential", "cntk.layers.LSTM"],
           note="a recurrence of a Python step lists the parameters of the step's Function "
                "over placeholders before it is applied (a Dense applied inside: W of (-1, 3), "
                "b), and the applied ones after, in the order of the step's walk (a Sequential "
                "inside: its last layer's first); Stadyn listed none, before and after the "
                "application, for a step that is no recurrent cell")
def recurrence__python_step_parameters(C, r, np):
    L = C.layers
    x = C.sequence.input_variable(2)
    h0 = C.input_variable(3)
    res = {}

    def made():
        d, d2, d3 = L.Dense(3), L.Dense(3), L.Dense(3)
        seq = L.Sequential([L.Dense(4), L.Dense(3, activation=C.tanh)])
        lstm = L.LSTM(3)
        w = C.parameter((2, 2), name="Wp")
        return {
            "Dense in a lambda": (L.Recurrence(lambda h, v: d(C.splice(h, v))), (x,)),
            "Sequential in a lambda": (L.Recurrence(lambda h, v: seq(C.splice(h, v))), (x,)),
            "LSTM in a lambda": (L.Recurrence(lambda h, c, v: lstm(h, c, v)), (x,)),
            "parameter in a lambda": (L.Recurrence(lambda h, v: C.tanh(C.times(h, w) + v)),
                                      (x,)),
            "Fold of a Dense in a lambda": (L.Fold(lambda h, v: d2(C.splice(h, v))), (x,)),
            "RecurrenceFrom of a Dense in a lambda": (L.RecurrenceFrom(
                lambda h, v: d3(C.splice(h, v))), (h0, x)),
        }
    made = made()
    for key in sorted(made):
        layer, args = made[key]
        res[key + ": before"] = _listed(layer.parameters)
        res[key + ": applied"] = _listed(layer(*args).parameters)
        res[key + ": after"] = _listed(layer.parameters)
    return res


def _described(v):
    kind = "parameter" if v.is_parameter else "constant" if v.is_constant else \
        "placeholder" if v.is_placeholder else "input" if v.is_input else "output"
    return [kind, v.name, list(v.shape)]


@cntk_case(names=["cntk.layers.LSTM", "cntk.layers.GRU", "cntk.layers.RNNStep",
                  "cntk.layers.Recurrence"],
           note="a self-stabilised cell (and a Recurrence of one) not applied yet: CNTK 2.7 "
                "lists its stabiliser's three scalar constants (0, 4, 4) and its alpha right "
                "after H among its inputs (the GRU's constant 1 first), before the "
                "placeholders; Stadyn's inputs, constants and parameters of such a layer were "
                "not modelled (an AttributeError)")
def recurrence__stabilized_cells_not_applied(C, r, np):
    L = C.layers
    res = {}
    for kind in ("LSTM", "GRU", "RNNStep"):
        cell = getattr(L, kind)(3, enable_self_stabilization=True)
        for where, f in (("cell", cell), ("Recurrence", L.Recurrence(cell))):
            key = kind + " " + where
            res[key + ": inputs"] = [_described(v) for v in f.inputs]
            res[key + ": constants"] = [float(np.asarray(c.value).sum()) for c in f.constants]
            res[key + ": parameters"] = [_described(p) for p in f.parameters]
        alpha = [p for p in cell.parameters if p.name == "alpha"][0]
        res[kind + " alpha"] = np.asarray(alpha.value)
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.layers.RecurrenceFrom",
                  "cntk.layers.Dense", "cntk.layers.Sequential", "cntk.layers.GRU"],
           note="a layer of one argument as a recurrence's step (Dense(3), Sequential([splice, "
                "Dense(3)])): no state, so CNTK 2.7 refuses it as the recurrence is made, a "
                "TypeError naming Recurrence (a Fold's too) or RecurrenceFrom "
                "(sequence.py:265-267, 445-446); Stadyn made it and failed when it was "
                "applied (a TypeError of Dense.apply's arguments, a ShapeError of the "
                "Sequential's weight)")
def recurrence__layer_step_of_no_state(C, r, np):
    L = C.layers
    res = {}
    for key, make in (("Dense", lambda: L.Dense(3)),
                      ("Sequential", lambda: L.Sequential([C.splice, L.Dense(3)])),
                      ("GRU", lambda: L.GRU(3))):
        for kind in ("Recurrence", "Fold", "RecurrenceFrom"):
            res[key + " " + kind] = _made(lambda: getattr(L, kind)(make()))
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.layers.GRU",
                  "cntk.layers.LSTM", "cntk.layers.Embedding"],
           note="a recurrence (Recurrence, Fold; of a GRU, an LSTM, a Python step; forwards "
                "and backwards) made after a run of 4 sequences of the layers under it and "
                "evaluated on 3: CNTK 2.7 evaluates it; Stadyn raised a ShapeError "
                "(rmG36), its step's view built as the run's arguments were checked, from the "
                "recurrence's shape of the last run (4 sequences) and the lengths just fed "
                "(3).  Layers of fixed values (init), no random draw")
def recurrence__made_after_a_run_of_another_batch(C, r, np):
    L = C.layers
    eye = np.eye(6, dtype=np.float32)
    four = [eye[[0, 1]], eye[[2]], eye[[3, 4, 5]], eye[[1]]]
    three = [eye[[0, 1]], eye[[2, 1, 1]], eye[[3]]]
    gru, lstm = L.GRU(3, init=0.1), L.LSTM(3, init=0.2)
    makers = {
        "Fold(GRU)": lambda: L.Fold(gru),
        "Fold(GRU) backwards": lambda: L.Fold(gru, go_backwards=True),
        "Fold(LSTM)": lambda: L.Fold(lstm),
        "Fold of a lambda": lambda: L.Fold(lambda h, v: h + v),
        "Recurrence(GRU)": lambda: L.Recurrence(gru),
        "Recurrence(LSTM) backwards": lambda: L.Recurrence(lstm, go_backwards=True),
        "Recurrence of a lambda": lambda: L.Recurrence(lambda h, v: C.tanh(h + v)),
        "Recurrence of a GRU in a lambda": lambda: L.Recurrence(lambda h, v: gru(h, v)),
    }
    res = {}
    for key, make in makers.items():
        x = C.sequence.input_variable(6)
        emb = L.Embedding(4, init=0.1)
        make()(emb(x)).eval({x: four})
        res[key] = make()(emb(x)).eval({x: three})
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.layers.RecurrenceFrom",
                  "cntk.layers.LSTM"],
           note="a Python step returning another number of results than it takes states "
                "(lambda h, c, x: h + c + x): CNTK 2.7 refuses it as the recurrence is made, "
                "a TypeError naming Recurrence (a Fold's too) or RecurrenceFrom "
                "(sequence.py:265-267, 445-446); Stadyn raised a ValueError of its own (the "
                "states' shapes not found).  An LSTM applied to placeholders has two outputs "
                "(h and c), as in CNTK 2.7 (Stadyn's had one), so a step reading its c by "
                "outputs[1] is made and runs, and a step's own IndexError is raised as it is "
                "made (Stadyn left it to the application).  Layers of fixed values (init)")
def recurrence__step_results_and_outputs(C, r, np):
    L = C.layers
    x = C.sequence.input_variable(2)
    lstm = L.LSTM(3, init=0.1)
    on_placeholders = lstm(C.placeholder(), C.placeholder(), C.placeholder())
    res = {"LSTM on placeholders: outputs": len(on_placeholders.outputs),
           "IndexError": _made(lambda: L.Recurrence(lambda h, v: (h + v,)[1]))}
    for kind in ("Recurrence", "Fold", "RecurrenceFrom"):
        layer = getattr(L, kind)
        res[kind + ", two states, one result"] = _made(lambda: layer(lambda h, c, v: h + c + v))
        res[kind + ", two states, three results"] = _made(lambda: layer(
            lambda h, c, v: (h + v, c + v, h + c)))
    res["three states, two results"] = _made(lambda: L.Recurrence(
        lambda h, c, d, v: (h + v, c + d + v)))

    def step(h, c, v):
        out = lstm(h, c, v)
        return out.outputs[0] * 1.0, out.outputs[1] * 0.5
    z = L.Recurrence(step, return_full_state=True)(x)
    values = z.eval({x: [r.randn(3, 2).astype(np.float32)]})
    res["LSTM's c by outputs[1]"] = [values[o] for o in z.outputs]
    return res


@cntk_case(names=["cntk.Function"],
           note="a Python function made a Function (Function(f), @Function, "
                "Function.with_signature) is run on its arguments and refused by CNTK 2.7 "
                "where its result leaves one unused (functions.py:263-270) or it returns None "
                "(functions.py:197), a TypeError; Stadyn made a Function waiting on its "
                "placeholders (rmG36).  A function reading a placeholder of the enclosing "
                "@Function being made is no such case (CNTK's signature hides it)")
def function__python_function_checks(C, r, np):
    Tensor = C.layers.typing.Tensor

    def first_only(a, b):
        return a * 2

    def outer(p, q):
        return C.Function(lambda a: a * 2 + q)(p)
    makers = {
        "b unused": lambda: C.Function(lambda a, b: a * 2),
        "a unused": lambda: C.Function(lambda a, b: b * 2),
        "no op, b unused": lambda: C.Function(lambda a, b: a),
        "a def, b unused": lambda: C.Function(first_only),
        "two unused": lambda: C.Function(lambda a, b, c: a * 2),
        "returns None": lambda: C.Function(lambda a: None),
        "with_signature, b unused": lambda: C.Function.with_signature(Tensor[2], Tensor[2])(
            lambda a, b: a * 2),
        "a tuple of both": lambda: C.Function(lambda a, b: (a * 2, b + 1)),
        "nested, reading the outer's q": lambda: C.Function(outer),
    }
    res = {}
    for key, make in makers.items():
        got = _raised(lambda: [a.name for a in make().arguments])
        if key == "two unused" and "first line" in got:   # (CNTK names them from a set)
            got["first line"] = got["first line"].split("(")[0]
        res[key] = got
    return res
