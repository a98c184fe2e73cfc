"""Review C of the cntkblock/cntkfid28 merges, mended: a scalar input without dynamic axes,
a loaded ``binary_cross_entropy`` called on its operands, clones keyed by the step output a
recurrence's root shows, and a ``Sequential`` of a layer that takes several arguments."""

import os

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


@cntk_case(names=["cntk.ops.input_variable", "cntk.Function.eval",
                  "cntk.Trainer.train_minibatch"],
           note="a scalar input made with dynamic_axes=[] (input_variable((), "
                "dynamic_axes=[])) fed array(3.), [3.], [[3.]], array([3.]), array([[3.]]): "
                "CNTK 2.7 computes x * 2 = 6 for each and trains on it; Stadyn raised "
                "RuntimeError 'output with shape [] doesn't match the broadcast shape [1]' "
                "(the feed made a 0-d array (1,)).  (A bare Python 3.0 is CNTK 2.7's "
                "AttributeError, left out: Stadyn takes it)")
def input__scalar_without_dynamic_axes(C, r):
    r.touch("cntk.Function.eval", "cntk.Trainer.train_minibatch")
    f32 = np.float32
    x = C.input_variable((), dynamic_axes=[], name="x")
    f = x * 2
    res = {}
    fed = {"array(3.)": np.array(3.0, f32), "[3.]": [3.0], "[[3.]]": [[3.0]],
           "array([3.])": np.array([3.0], f32), "array([[3.]])": np.array([[3.0]], f32),
           "array([3., 4.])": np.array([3.0, 4.0], f32)}
    for label, value in fed.items():
        res["eval " + label] = outcome(lambda: f.eval({x: value}))
    y = C.input_variable(1, name="y")
    p = C.parameter((), init=1.0, name="p")
    loss = C.reduce_sum(C.square(x * p - y))
    tr = C.Trainer(loss, (loss, None), C.sgd([p], C.learning_parameter_schedule(0.01)))
    for label in ("array(3.)", "[3.]", "array([3.])"):
        res["train " + label] = outcome(
            lambda: tr.train_minibatch({x: fed[label], y: np.array([[5.0]], f32)}),
            lambda _: [tr.previous_minibatch_loss_average, float(p.value)])
    res["x shape"] = list(x.shape)
    return res


@cntk_case(names=["cntk.binary_cross_entropy", "cntk.load_model"],
           note="binary_cross_entropy(o, t) saved and loaded, then called m(o2, t2): CNTK "
                "2.7's loaded block lists its arguments (o, t), the order of the block's "
                "stored argument map, and computes the loss of o2 against t2; Stadyn listed "
                "(t, o) and computed the loss of t2 against o2")
def binary_cross_entropy__loaded_and_called_on_its_operands(C, r):
    r.touch("cntk.Function.save", "cntk.Function.arguments", "cntk.Function.eval")
    o = C.input_variable(2, name="o")
    t = C.input_variable(2, name="t")
    o2 = C.input_variable(2, name="o2")
    t2 = C.input_variable(2, name="t2")
    data = {o2: np.array([[0.2, 0.9]], np.float32), t2: np.array([[0.0, 1.0]], np.float32)}
    res = {}
    for label, z in (("bce", C.binary_cross_entropy(o, t)),
                     ("bce of sigmoid", C.binary_cross_entropy(C.sigmoid(o), t))):
        with r.tempdir() as folder:
            path = os.path.join(folder, "m.model")
            z.save(path)
            m = C.load_model(path)
        res[label + " arguments"] = [a.name for a in m.arguments]
        res[label + " value"] = m(o2, t2).eval(data)
    return res


@cntk_case(names=["cntk.Function.clone", "cntk.layers.Fold", "cntk.layers.Recurrence",
                  "cntk.sequence.last"],
           note="clone substituting the step output a recurrence's root shows (its root "
                "function's input): CNTK 2.7 substitutes the recurrence's output (Fold(GRU), "
                "Recurrence(GRU), Recurrence(plus), Recurrence(GRU) * 2: arguments [y]) and "
                "refuses it, RuntimeError, where sequence.last's block reads it; Stadyn "
                "ignored the substitution (arguments [x])")
def clone__substituting_the_step_output_a_recurrence_shows(C, r):
    r.touch("cntk.Function.clone", "cntk.Function.root_function", "cntk.Function.inputs",
            "cntk.Function.arguments", "cntk.Function.eval")
    x = C.sequence.input_variable(3, name="x")
    gru = lambda: C.layers.GRU(3, name="cell", init=C.glorot_uniform(seed=1))  # noqa: E731
    made = {"Fold(GRU)": lambda: C.layers.Fold(gru())(x),
            "Fold(plus)": lambda: C.layers.Fold(C.plus)(x),
            "Recurrence(GRU)": lambda: C.layers.Recurrence(gru())(x),
            "Recurrence(plus)": lambda: C.layers.Recurrence(C.plus)(x),
            "Recurrence(GRU) * 2": lambda: C.layers.Recurrence(gru())(x) * 2,
            "last(Recurrence(GRU))": lambda: C.sequence.last(C.layers.Recurrence(gru())(x)),
            "last(Recurrence(plus))": lambda: C.sequence.last(C.layers.Recurrence(C.plus)(x))}
    res = {}
    for label, make in made.items():
        f = make()
        shown = f.root_function.inputs[0]
        y = C.sequence.input_variable(3, name="y") if shown.dynamic_axes and \
            len(shown.dynamic_axes) == 2 else C.input_variable(3, name="y")
        res[label] = outcome(lambda: f.clone("share", {shown: y}),
                             lambda c: [a.name for a in c.arguments])
    fold = made["Fold(plus)"]()
    y = C.input_variable(3, name="y")
    c = fold.clone("share", {fold.root_function.inputs[0]: y})
    res["Fold(plus) clone eval"] = c.eval({y: np.array([[1.0, 2.0, 3.0]], np.float32)})
    return res


@cntk_case(names=["cntk.layers.Sequential", "cntk.layers.LSTM", "cntk.layers.GRU",
                  "cntk.layers.RecurrenceFrom"],
           note="a Sequential whose step is a layer of several arguments given one value "
                "(Sequential([LSTM(3)]), [Dense(3), GRU(3)], [RecurrenceFrom(LSTM(3))]): "
                "CNTK 2.7 refuses it as it is made, TypeError 'CNTK Function expected 3 "
                "arguments, got 1'; Stadyn made it (it failed when applied, with another "
                "message).  A layer of one argument (Recurrence(LSTM(3)), Fold) is taken")
def sequential__layers_of_several_arguments(C, r):
    L = C.layers

    def said(make):
        try:
            make()
        except TypeError as e:
            return ["TypeError", str(e).splitlines()[0]]
        return ["made"]
    made = {"[LSTM(3)]": lambda: L.Sequential([L.LSTM(3)]),
            "[LSTM(3), relu]": lambda: L.Sequential([L.LSTM(3), C.relu]),
            "[Dense(3), GRU(3)]": lambda: L.Sequential([L.Dense(3), L.GRU(3)]),
            "[RNNStep(3)]": lambda: L.Sequential([L.RNNStep(3)]),
            "[RecurrenceFrom(LSTM(3))]": lambda: L.Sequential([L.RecurrenceFrom(L.LSTM(3))]),
            "[[Dense(3), LSTM(3)]]": lambda: L.Sequential([[L.Dense(3), L.LSTM(3)]]),
            "[Recurrence(LSTM(3)), Dense(2)]": lambda: L.Sequential(
                [L.Recurrence(L.LSTM(3)), L.Dense(2)]),
            "[Fold(LSTM(3))]": lambda: L.Sequential([L.Fold(L.LSTM(3))]),
            "[Dense(3), AttentionModel(3)]": lambda: L.Sequential(
                [L.Dense(3), L.AttentionModel(3)])}
    res = {label: said(make) for label, make in made.items()}
    s = L.Sequential([L.Recurrence(L.LSTM(3)), L.Dense(2)])
    res["applied"] = list(s(C.sequence.input_variable(4)).shape)
    return res
