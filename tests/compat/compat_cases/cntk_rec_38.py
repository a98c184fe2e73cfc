"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 with a recurrence's step (cntkrec38):
the parameters' order of a step applying a ``Dense`` with a self-stabilized cell, the state
shape of a step applying a layer (CNTK's loop validation, pass by pass, as for a step without
one), and NumPy values given as initial states."""

import functools
import os

from compat_harness import cntk_case
from compat_outcomes import as_returned, builtin_type, outcome


def _refusal(exc):
    """What CNTK 2.7 raised: its built-in type, and the first line of a TypeError's message
    (``argument h was passed an object that is not a Variable or Function``; its
    NotImplementedError's is SWIG's, Stadyn's its own)."""
    out = {"raises": builtin_type(exc)}
    if isinstance(exc, TypeError):
        out["message"] = str(exc).splitlines()[0]
    return out


_outcome = functools.partial(outcome, convert=as_returned, raised=_refusal)


def _positional_values(np, params):
    """Give each parameter, in the order listed, a value made from its position there and its
    shape (as a program restoring a list of arrays by position does)."""
    for k, p in enumerate(params):
        shape = tuple(int(d) for d in p.shape)
        n = int(np.prod(shape)) if shape else 1
        value = np.sin(np.arange(n, dtype=np.float32) * 0.7 + k) * (0.2 + 0.05 * k)
        p.value = value.reshape(shape).astype(np.float32)


def _dense_steps(C):
    """``{name: step}``: a Dense applied after (or before) a cell in a Python step, the cell
    self-stabilized or not."""
    steps = {}
    for stab in (True, False):
        tag = " stabilized" if stab else ""
        for kind in ("GRU", "RNNStep"):
            cell = getattr(C.layers, kind)(4, enable_self_stabilization=stab)
            dense = C.layers.Dense(4)
            steps["dense(" + kind + tag + ")"] = \
                (lambda cell, dense: lambda h, v: dense(cell(h, v)))(cell, dense)
        lstm = C.layers.LSTM(4, enable_self_stabilization=stab)
        dense = C.layers.Dense(4)

        def lstm_step(h, c, v, lstm=lstm, dense=dense):
            a, b = lstm(h, c, v).outputs
            return dense(a), b
        steps["dense(LSTM" + tag + ") h"] = lstm_step
        gru = C.layers.GRU(4, enable_self_stabilization=stab)
        first = C.layers.Dense(4)
        steps["GRU" + tag + " of dense(x)"] = \
            (lambda gru, first: lambda h, v: gru(h, first(v)))(gru, first)
    return steps


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Dense", "cntk.layers.GRU",
                  "cntk.layers.LSTM", "cntk.layers.RNNStep"],
           note="a Python step applying a Dense after a self-stabilized cell (dense(gru(h, "
                "x))): CNTK 2.7 lists the Recurrence's parameters [W, b, b, W, H, alpha, H1], "
                "the Dense block's own first, as without the stabilizer; Stadyn listed the "
                "Dense's b last ([W, b, W, H, alpha, H1, b]; GRU of dense(x): [b, W, b, W, H, "
                "alpha, H1] for [b, W, H, alpha, H1, W, b]): the step's view, replayed without "
                "the stabilizer's softplus(alpha) (hoisted out of the loop), lost the blocks "
                "recorded on the values it replayed, so its walk went op by op.  Values set "
                "by position in that order gave other numbers, silently",
           known={"dense(LSTM stabilized) h inputs": "CNTK 2.7 shows the self-stabilized LSTM "
                  "applied in the step as its block of two outputs (inputs b, W, H, the "
                  "stabilizer's 3 constants, alpha, then the PastValues and x); Stadyn's view "
                  "of a Python step shows such a cell op by op (a block of several outputs "
                  "is not carried through the step replayed without its softplus(alpha): "
                  "_recurrent_views._replayed_blocks), so it lists the initial states and x "
                  "before its parameters (as recurrence__stabilized_cell_in_step_function's "
                  "lstm inputs); its parameters' order is CNTK's"})
def recurrence__dense_with_a_stabilized_cell(C, r, np):
    x = C.sequence.input_variable(3)
    data = [r.randn(4, 3).astype(np.float32), r.randn(2, 3).astype(np.float32)]
    res = {}
    for key, step in _dense_steps(C).items():
        z = C.layers.Recurrence(step)(x)
        res[key + " parameters"] = [[p.name, list(p.shape)] for p in z.parameters]
        res[key + " inputs"] = [[p.name, list(p.shape)] for p in z.inputs]
        _positional_values(np, z.parameters)
        res[key + " out"] = z.eval({x: data})
    return res


def _layer_steps(C, np):
    """``{name: (make, keywords of the Recurrence)}``: ``make()`` gives a step applying a
    layer, the layer made anew."""
    g = C.glorot_uniform(seed=1)
    D = functools.partial(C.layers.Dense, init=g)

    def seq():
        return C.layers.Sequential([D(2), D(5)])

    def on(layer, step):        # (the step over a layer of its own)
        return lambda: (lambda d: lambda h, v: step(d, h, v))(layer())
    made = {
        "h + reduce_sum(Dense(2)(x))": on(lambda: D(2), lambda d, h, v: h + C.reduce_sum(d(v))),
        "h + Dense(1)(x)": on(lambda: D(1), lambda d, h, v: h + d(v)),
        "h + reduce_sum(Dense(2)(x + h))": on(lambda: D(2),
                                              lambda d, h, v: h + C.reduce_sum(d(v + h))),
        "h + reduce_sum(Sequential(Dense 2, Dense 5)(x))": on(
            seq, lambda d, h, v: h + C.reduce_sum(d(v))),
        "h + reduce_sum(Embedding(4)(x), axis 0)": on(
            lambda: C.layers.Embedding(4, init=g), lambda d, h, v: h + C.reduce_sum(d(v), axis=0)),
        "Dense(3)(splice(h, x))": on(lambda: D(3), lambda d, h, v: d(C.splice(h, v))),
        "Dense(3)(x) + h": on(lambda: D(3), lambda d, h, v: d(v) + h),
        "Dense(4)(h) + x": on(lambda: D(4), lambda d, h, v: d(h) + v),
        "Dense(3)(h) + x": on(lambda: D(3), lambda d, h, v: d(h) + v),
        "tanh(Dense(2)(x)) * h": on(lambda: D(2), lambda d, h, v: C.tanh(d(v)) * h),
        "h * 0.5 + Dense(2)(x)": on(lambda: D(2), lambda d, h, v: h * 0.5 + d(v)),
        "Dense(4)(h * x)": on(lambda: D(4), lambda d, h, v: d(h * v)),
    }
    steps = {key: (make, {}) for key, make in made.items()}
    steps["h + reduce_sum(Dense(2)(x)), initial state (3,)"] = (
        made["h + reduce_sum(Dense(2)(x))"],
        {"initial_state": C.constant(np.zeros(3, np.float32))})
    return steps


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Dense", "cntk.layers.Embedding",
                  "cntk.layers.Sequential", "cntk.ops.reduce_sum", "cntk.ops.splice"],
           note="the state of a Python step applying a layer: CNTK 2.7 validates the loop "
                "pass by pass as for a step without one (Function.cpp:395-448), the layer's "
                "output unknown where its operand is, known where it reads x alone: h + "
                "reduce_sum(Dense(2)(x)) over (4,) steps is (1,), the sum's.  Stadyn took "
                "such a step's state from a search starting at the input step's shape "
                "((4,): the sum repeated 4 times, silently), and refused an initial state of "
                "(3,) (CNTK 2.7: (3,))")
def recurrence__state_shape_of_a_layer_step(C, r, np):
    x = C.sequence.input_variable(4)
    data = [r.randn(3, 4).astype(np.float32), r.randn(1, 4).astype(np.float32)]
    res = {}
    for key, (make, kwargs) in sorted(_layer_steps(C, np).items()):
        def run(make=make, kwargs=kwargs):
            z = C.layers.Recurrence(make(), **kwargs)(x)
            return {"shape": list(z.shape),
                    "parameters": sorted(list(p.shape) for p in z.parameters),
                    "values": z.eval({x: data})}
        res[key] = _outcome(run)
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.RecurrenceFrom", "cntk.layers.Fold",
                  "cntk.layers.UnfoldFrom", "cntk.layers.LSTM", "cntk.ops.sequence.past_value",
                  "cntk.layers.Delay"],
           note="an initial state that is no Python number, Variable or Function: CNTK 2.7's "
                "Recurrence (and Fold) calls its RecurrenceFrom Function on it as it is made, "
                "a TypeError 'argument h (c, a: the state's place) was passed an object that "
                "is not a Variable or Function' (functions.py:303) for a NumPy array or a "
                "list, RecurrenceFrom and UnfoldFrom applied to one the same; a NumPy scalar "
                "(np.float32(2); np.float64 is a Python float) its NotImplementedError from "
                "Constant(value, shape=(1)).  Stadyn computed with them.  past_value and Delay "
                "take a NumPy array (both)")
def recurrence__numpy_initial_states(C, r, np):
    x = C.sequence.input_variable(3)
    data = [r.randn(2, 3).astype(np.float32)]
    ones = np.ones(3, np.float32)
    L = C.layers

    def values(make):
        def run():
            z = make()
            return {"shape": list(z.shape), "values": z.eval({z.arguments[0]: data})}
        return _outcome(run)
    rows = {
        "Recurrence np.ones(3) made": lambda: L.Recurrence(C.plus, initial_state=ones),
        "Recurrence np.ones(3) float64": lambda: L.Recurrence(C.plus, initial_state=np.ones(3))(x),
        "Recurrence list": lambda: L.Recurrence(C.plus, initial_state=[1.0, 2.0, 3.0])(x),
        "Recurrence 0-d array": lambda: L.Recurrence(C.plus,
                                                     initial_state=np.array(2.0, np.float32))(x),
        "Recurrence np.float32(2)": lambda: L.Recurrence(C.plus,
                                                         initial_state=np.float32(2))(x),
        "Recurrence np.int64(2)": lambda: L.Recurrence(C.plus, initial_state=np.int64(2))(x),
        "Recurrence np.float64(2)": lambda: L.Recurrence(C.plus,
                                                         initial_state=np.float64(2))(x),
        "Recurrence 2": lambda: L.Recurrence(C.plus, initial_state=2)(x),
        "Recurrence True": lambda: L.Recurrence(C.plus, initial_state=True)(x),
        "Fold np.ones(3)": lambda: L.Fold(C.plus, initial_state=ones)(x),
        "Fold np.float32(2)": lambda: L.Fold(C.plus, initial_state=np.float32(2))(x),
        "LSTM np.ones(3)": lambda: L.Recurrence(L.LSTM(3), initial_state=ones)(x),
        "LSTM (0, np.ones(3))": lambda: L.Recurrence(L.LSTM(3), initial_state=(0, ones))(x),
        "three states (0, 0, np.ones(3))": lambda: L.Recurrence(
            lambda h, c, a, v: (h + v, c + v, a + v), initial_state=(0, 0, ones))(x),
        "RecurrenceFrom np.ones(3)": lambda: L.RecurrenceFrom(C.plus)(ones, x),
        "RecurrenceFrom 1.0": lambda: L.RecurrenceFrom(C.plus)(1.0, x),
        "RecurrenceFrom LSTM (Constant, np.ones(3))": lambda: L.RecurrenceFrom(L.LSTM(3))(
            C.constant(ones), ones, x),
        "UnfoldFrom np.ones(3)": lambda: L.UnfoldFrom(lambda h: h + 1)(ones, x),
        "past_value np.ones(3)": lambda: C.sequence.past_value(x, initial_state=ones),
        "Delay np.ones(3)": lambda: L.Delay(initial_state=ones)(x),
    }
    res = {}
    for key, make in rows.items():
        if key.endswith(" made"):
            res[key] = _outcome(lambda: list(make().shape))
        else:
            res[key] = values(make)
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Sequential", "cntk.layers.Dense"],
           note="the parameters of a recurrence of a Python step applying a Sequential, made "
                "over an input that an earlier model already ran on: CNTK 2.7 lists them as "
                "over a fresh input, the Sequential's last layer first")
def recurrence__step_parameters_after_the_input_ran(C, r, np):
    g = C.glorot_uniform(seed=1)
    res = {}
    x = C.sequence.input_variable(4)
    s = C.layers.Sequential([C.layers.Dense(2, init=g), C.layers.Dense(5, init=g)])
    z = C.layers.Recurrence(lambda h, v: h + C.reduce_sum(s(v)))(x)
    res["Sequential on a fresh input"] = [list(p.shape) for p in z.parameters]
    y = C.sequence.input_variable(4)
    C.layers.Recurrence(C.plus)(y).eval({y: [r.randn(3, 4).astype(np.float32)]})
    t = C.layers.Sequential([C.layers.Dense(2, init=g), C.layers.Dense(5, init=g)])
    z = C.layers.Recurrence(lambda h, v: h + C.reduce_sum(t(v)))(y)
    res["Sequential after a run"] = [list(p.shape) for p in z.parameters]
    return res


def _seen(C, z, y):
    """What a program sees of the recurrence ``z`` over ``y``: its parameters' shapes, its
    arguments, the op names (else names, else shapes) of a walk through every block."""
    walk = C.logging.graph.depth_first_search(z, lambda n: True, depth=-1)
    return {"parameters": [list(p.shape) for p in z.parameters],
            "arguments": [[list(a.shape), a == y] for a in z.arguments],
            "walk": [getattr(n, "op_name", None) or n.name or list(n.shape) for n in walk]}


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Sequential", "cntk.layers.Dense",
                  "cntk.logging.graph.depth_first_search", "cntk.load_model"],
           note="a recurrence of a Python step made over an input an earlier model ran on (a "
                "batch of two sequences, 3 and 2 steps): its parameters, arguments and walk "
                "as over a fresh input, for a step meeting its state first and one meeting "
                "its input first (CNTK's Tuple block); its values and a save/load round trip")
def recurrence__step_views_after_the_input_ran(C, r, np):
    g = C.glorot_uniform(seed=1)
    res = {}
    data = [np.arange(8, dtype=np.float32).reshape(2, 4) / 8]
    for ran in ("fresh", "after a run"):
        t = C.layers.Sequential([C.layers.Dense(2, init=g), C.layers.Dense(5, init=g)])
        w = C.parameter((4, 3), init=g)
        d = C.layers.Dense(3, init=g)
        steps = {"state first": lambda h, v: h + C.reduce_sum(t(v)),
                 "input first": lambda h, x: C.tanh(C.times(x, w) + C.reduce_mean(d(x)) + h)}
        for name, step in steps.items():
            y = C.sequence.input_variable(4)
            if ran != "fresh":
                C.layers.Recurrence(C.plus)(y).eval({y: [r.randn(3, 4).astype(np.float32),
                                                         r.randn(2, 4).astype(np.float32)]})
            z = C.layers.Recurrence(step)(y)
            res.update({f"{name} {ran} {k}": v for k, v in _seen(C, z, y).items()})
            res[f"{name} {ran} value"] = z.eval({y: data})
            with r.tempdir() as folder:
                path = os.path.join(folder, "z.model")
                z.save(path)
                loaded = C.load_model(path)
            res[f"{name} {ran} loaded parameters"] = [list(p.shape) for p in loaded.parameters]
            res[f"{name} {ran} loaded value"] = loaded.eval({loaded.arguments[0]: data})
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.Dense", "cntk.splice"],
           note="a Python step applying a Dense to its state: CNTK 2.7's loop validation "
                "refuses a Dense applied to the state itself (ValueError 'Times: The 1 leading "
                "dimensions of the right operand with shape [1] do not match the left operand's "
                "trailing dimensions with shape [7]': its weight took the initial state's "
                "(1,) in a pass) and infers a Dense of the state spliced with the input at the "
                "settled (3,) (its bias gives its output shape in the first pass; "
                "recurrence__dense_weight_fixed_in_a_pass has the variants)")
def recurrence__dense_of_the_state_inferred(C, r, np):
    steps = {"d(splice(h, x))": lambda d: lambda h, x: d(C.splice(h, x)),
             "splice(d(h), x)": lambda d: lambda h, x: C.splice(d(h), x),
             "splice(x, d(h))": lambda d: lambda h, x: C.splice(x, d(h)),
             "d(h) + reduce_sum(x)": lambda d: lambda h, x: d(h) + C.reduce_sum(x)}
    res = {}
    for name, make in steps.items():
        x = C.sequence.input_variable(4)
        d = C.layers.Dense(3, init=C.glorot_uniform(seed=1))

        def made():
            z = C.layers.Recurrence(make(d))(x)
            return [list(z.shape), [list(p.shape) for p in z.parameters]]
        res[f"{name} made"] = _outcome(made)
    return res


@cntk_case(names=["cntk.layers.Fold", "cntk.layers.Sequential", "cntk.layers.Dense"],
           note="the parameters of a Fold of a Python step applying a Sequential (CNTK 2.7: the "
                "step's graph walked from the Sequence::Slice, the Sequential's last layer "
                "first), forwards and backwards, over a fresh input and one an earlier model "
                "ran on; the Fold's values")
def fold__step_parameters(C, r, np):
    g = C.glorot_uniform(seed=1)
    res = {}
    data = [np.arange(8, dtype=np.float32).reshape(2, 4) / 8,
            np.ones((3, 4), np.float32) / 4]
    for ran in ("fresh", "after a run"):
        for back in (False, True):
            y = C.sequence.input_variable(4)
            if ran != "fresh":
                C.layers.Recurrence(C.plus)(y).eval({y: [r.randn(3, 4).astype(np.float32)]})
            t = C.layers.Sequential([C.layers.Dense(2, init=g), C.layers.Dense(5, init=g)])
            z = C.layers.Fold(lambda h, v: h + C.reduce_sum(t(v)), go_backwards=back)(y)
            key = f"{'backwards' if back else 'forwards'} {ran}"
            res[f"{key} parameters"] = [list(p.shape) for p in z.parameters]
            res[f"{key} arguments"] = [list(a.shape) for a in z.arguments]
            res[f"{key} value"] = z.eval({y: data})
    return res
