"""CNTK's sequence-begin flags (``train_minibatch((data, flags))``, ``{x: (data, flags)}``)
where CNTK 2.7 refuses or reads them in ways of its own: the first training minibatch, and
flags given with one input's data.  (The flags' values are compared in
``cntk_examples.py``: ``*_with_sequence_begin_flags``.)"""

import numpy as np

from compat_harness import cntk_case


def _model(C, r):
    x = C.sequence.input_variable(3, name="x")
    y = C.sequence.input_variable(2, name="y")
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(4)), C.layers.Dense(2)])(x)
    params = r.set_params(z.parameters)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.squared_error(z, y)),
                        [C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.5),
                                        C.momentum_schedule(0.5))])
    whole = [r.randn(6, 3), r.randn(6, 3)]
    labels = [r.onehot(6, 2), r.onehot(6, 2)]

    def piece(a, b):
        return [s[a:b] for s in whole], [s[a:b] for s in labels]
    return x, y, z, trainer, params, piece


def _training(x, y, trainer, piece, losses: list):
    """``train(a, b, flags=None)``: a minibatch of steps ``a:b`` of the sequences (with
    ``flags``, if given), its loss appended to ``losses``."""
    def train(a, b, flags=None):
        xs, ys = piece(a, b)
        trainer.train_minibatch({x: xs, y: ys} if flags is None else ({x: xs, y: ys}, flags))
        losses.append(float(trainer.previous_minibatch_loss_average))
    return train


def _attempt(call):
    """The call's result, or the kind of error CNTK 2.7 raises (RuntimeError before
    ValueError: Stadyn's error for a missing previous minibatch is both)."""
    try:
        return call()
    except RuntimeError:
        return "RuntimeError"
    except ValueError:
        return "ValueError"


@cntk_case(names=["cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch",
                  "cntk.Function.eval"],
           note="CNTK 2.7 builds the network it trains with at the first train_minibatch, so a "
                "False flag there is its RuntimeError even after test_minibatch calls (with "
                "flags or without); later ones go on from the previous minibatch, tested or "
                "trained. A first Function.eval or test_minibatch with a False flag is the "
                "same RuntimeError. Stadyn went on from the tests' states (and raised "
                "ValueErrors)")
def sequence_begin_flags_first_train_minibatch(C, r):
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch", "cntk.Function.eval")
    x, y, z, trainer, params, piece = _model(C, r)
    res = {"parameters": params}
    out = []

    def train(a, b, flags):
        xs, ys = piece(a, b)
        trainer.train_minibatch(({x: xs, y: ys}, flags))
        return float(trainer.previous_minibatch_loss_average)

    def test(a, b, flags):
        xs, ys = piece(a, b)
        return float(trainer.test_minibatch(({x: xs, y: ys}, flags)))
    out.append(_attempt(lambda: test(0, 2, [False, False])))
    out.append(_attempt(lambda: test(0, 2, [True, True])))
    out.append(_attempt(lambda: train(2, 4, [False, False])))
    out.append(_attempt(lambda: train(2, 4, [False, True])))
    out.append(_attempt(lambda: float(trainer.test_minibatch({x: piece(0, 3)[0],
                                                              y: piece(0, 3)[1]}))))
    out.append(_attempt(lambda: train(0, 2, [True, True])))
    out.append(_attempt(lambda: test(2, 4, [False, False])))
    out.append(_attempt(lambda: train(4, 6, [False, True])))
    res["steps"] = out
    res["after"] = r.param_values(z.parameters)
    res["eval"] = _attempt(lambda: np.stack(z.eval(({x: piece(0, 2)[0]}, [False, True]))))
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch"],
           note="flags given with one input's data ({x: (data, flags)}) hold, in CNTK 2.7's "
                "sanitize_var_map, for that input and the inputs after it in the dict; those "
                "before it begin every sequence, and inputs on the same dynamic axes with "
                "different flags are its ValueError (Different minibatch layouts). Stadyn "
                "applied one input's flags to every input")
def sequence_begin_flags_given_per_input(C, r):
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch")
    x, y, z, trainer, params, piece = _model(C, r)
    res = {"parameters": params}
    xs, ys = piece(0, 3)
    trainer.train_minibatch(({x: xs, y: ys}, [True, True]))
    out = [float(trainer.previous_minibatch_loss_average)]
    xs, ys = piece(3, 6)
    for data in ({x: xs, y: (ys, [False, False])}, {y: ys, x: (xs, [False, False])},
                 {y: ys, x: (xs, [True, True])}, {y: (ys, [False, True]), x: xs},
                 {x: (xs, [True, False]), y: ys}, {y: ys, x: (xs, [False, True])}):
        def step(data=data):
            trainer.train_minibatch(data)
            return float(trainer.previous_minibatch_loss_average)
        out.append(_attempt(step))
        out.append(_attempt(lambda data=data: float(trainer.test_minibatch(data))))
    res["steps"] = out
    res["after"] = r.param_values(z.parameters)
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch"],
           note="CNTK 2.7's recurrences keep the values of every minibatch they run, with "
                "flags or without: a False flag after minibatches given no flags goes on from "
                "the last of them (Stadyn refused it: it began keeping states at the first "
                "minibatch given flags)")
def sequence_begin_flags_after_unflagged_minibatches(C, r):
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch")
    x, y, z, trainer, params, piece = _model(C, r)
    res = {"parameters": params}
    out = []
    train = _training(x, y, trainer, piece, out)
    train(0, 2)
    train(2, 4)
    train(4, 6, [False, False])
    train(0, 3)
    xs, ys = piece(3, 6)
    out.append(float(trainer.test_minibatch(({x: xs, y: ys}, [False, True]))))
    train(0, 2)
    out.append(float(trainer.test_minibatch({x: piece(2, 5)[0], y: piece(2, 5)[1]})))
    train(5, 6, [False, False])
    res["steps"] = out
    res["after"] = r.param_values(z.parameters)
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch"],
           note="a False flag continues the sequence packed into the same slot of the "
                "previous minibatch (CNTK 2.7's DelayedValueNode: each sequence of a "
                "minibatch with False flags in its own slot, in order; those of a minibatch "
                "of whole sequences packed first-fit into slots as long as the longest). With "
                "fewer or more sequences than the previous minibatch had slots, CNTK reads the "
                "previous values at column (T - 1) * n + i of its (slot, step) matrix (T its "
                "steps, n this minibatch's sequences): the state sequence i gets is that of "
                "slot (T - 1) * n + i mod S (S slots) at step (T - 1) * n + i div S, not its "
                "slot's last one (Stadyn refused both)")
def sequence_begin_flags_slots_of_the_previous_minibatch(C, r):
    r.touch("cntk.Trainer.train_minibatch")
    x, y, z, trainer, params, _ = _model(C, r)
    res = {"parameters": params}
    out = []

    def train(lengths, flags=None):
        xs = [r.randn(n, 3) for n in lengths]
        ys = [r.onehot(n, 2) for n in lengths]
        trainer.train_minibatch({x: xs, y: ys} if flags is None else ({x: xs, y: ys}, flags))
        return float(trainer.previous_minibatch_loss_average)
    # fewer sequences: 1 after 2 slots of 5 steps (slot 0, step 2), 2 after 3 slots of 4
    # steps (slot 0 step 2, slot 1 step 2), 1 after 3 of 5 (slot 1 step 1)
    for before, after in (((5, 5), [False]), ((4, 4, 4), [False, False]),
                          ((5, 5, 5), [False]), ((4, 4, 4), [True, False])):
        out.append(train(before))
        out.append(train([3] * len(after), after))
    # whole sequences of several lengths, packed: 2, 5 and 3 steps make slot 0 (2 then 3
    # steps) and slot 1 (5 steps)
    out.append(train((2, 5, 3)))
    out.append(train((2, 4), [False, False]))
    # continuing from a minibatch that continued (slots in order, lengths of its own), then
    # more sequences than slots, the new ones starting (sequence 0: slot 1 at step 1)
    out.append(train((3, 3), [True, True]))
    out.append(train((4, 2), [False, False]))
    out.append(train((2, 2, 2)))
    out.append(train((3, 3, 3, 3), [False, True, True, True]))
    res["steps"] = out
    res["after"] = r.param_values(z.parameters)
    return res


def _first_steps(values):
    """Each sequence's first step (an eval's list of sequences, or a dict of one output)."""
    if isinstance(values, dict):
        values = list(values.values())[0]
    return np.stack([np.asarray(v)[0] for v in values])


@cntk_case(names=["cntk.Function.eval", "cntk.Function.forward", "cntk.Function.grad"],
           note="a Function's recurrences keep the states of every run, flagged or not: a "
                "False flag (in an (arguments, flags) pair or an input's (data, flags)) goes on "
                "from the Function's previous eval, forward, grad or call on data (CNTK 2.7; "
                "Stadyn refused a False flag until the Function had run with flags, and a grad "
                "after a flagged run counted the output twice). grad of a run with a False "
                "flag is CNTK's ValueError (the layout of the gradient it seeds is not the "
                "forward's)")
def sequence_begin_flags_function_runs_without_flags(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.forward", "cntk.Function.grad")
    res = {}
    for kind in ("rnn", "lstm"):
        x = C.sequence.input_variable(2, name="x", needs_gradient=True)
        step = C.layers.RNNStep(3, activation=C.tanh) if kind == "rnn" else C.layers.LSTM(3)
        z = C.layers.Recurrence(step)(x)
        res[kind + "_parameters"] = r.set_params(z.parameters)
        a = [r.randn(3, 2), r.randn(3, 2)]
        b = [r.randn(3, 2), r.randn(3, 2)]
        out = [_first_steps(z.eval({x: a}))]
        for flags in ([False, False], [False, False], [True, False]):
            out.append(_first_steps(z.eval(({x: b}, flags))))
        out.append(_first_steps(z.eval({x: (b, [False, True])})))
        out.append(_first_steps(z.eval({x: b})))
        out.append(_first_steps(z.eval(({x: b}, [False, False]))))
        z.forward({x: a})
        out.append(_first_steps(z.eval(({x: b}, [False, False]))))
        z.forward({x: a}, None, set(z.outputs))
        out.append(_first_steps(z.forward(({x: b}, [False, True]))[1]))
        out.append(_first_steps(z(a)))
        out.append(_first_steps(z.eval(({x: b[:1]}, [False]))))
        res[kind + "_first_steps"] = np.stack(out[:-1])
        res[kind + "_one_sequence"] = out[-1]
        res[kind + "_grad"] = np.stack(z.grad({x: a}))
        res[kind + "_grad_begun"] = np.stack(z.grad(({x: b}, [True, True])))
        res[kind + "_grad_continued"] = _attempt(
            lambda: np.stack(z.grad(({x: b}, [False, True]))))
    return res


@cntk_case(names=["cntk.combine", "cntk.Function.eval"],
           note="a combine is a Function of its own: its runs carry their recurrences' states "
                "apart from those of the Functions combined, so its first False "
                "sequence-begin flag has no previous run to go on from (CNTK 2.7's "
                "RuntimeError), whether it combines z, [z], [z.output] or another combine, "
                "and z goes on from its own runs, not the combine's (Stadyn keyed the state "
                "by the outputs, so C.combine([z]) shared z's, and two combines of the same "
                "outputs each other's)")
def sequence_begin_flags_combine_runs_on_its_own(C, r):
    r.touch("cntk.Function.eval")
    x = C.sequence.input_variable(2, name="x")
    z = C.layers.Recurrence(C.layers.RNNStep(3, activation=C.tanh))(x)
    res = {"parameters": r.set_params(z.parameters)}
    a = [r.randn(3, 2), r.randn(3, 2)]
    b = [r.randn(3, 2), r.randn(3, 2)]
    going_on = ({x: b}, [False, False])
    z.eval({x: a})
    c = C.combine([z])
    res["combine_first"] = _attempt(lambda: _first_steps(c.eval(going_on)))
    res["z_after_a"] = _first_steps(z.eval(going_on))     # from z's eval of a
    c.eval({x: a})
    res["combine_after_a"] = _first_steps(c.eval(going_on))     # the same, from c's own
    res["z_after_b"] = _first_steps(z.eval(going_on))     # from z's previous run, not c's
    for name, made in (("z", lambda: C.combine(z)), ("output", lambda: C.combine([z.output])),
                       ("combine", lambda: C.combine([c]))):
        res["first_of_combine_" + name] = _attempt(lambda: _first_steps(made().eval(going_on)))
    two = C.combine([z, z * 2.0])
    two.eval({x: a})
    values = two.eval(going_on)
    res["two_outputs"] = np.stack([_first_steps(values[o]) for o in two.outputs])
    res["two_outputs_again"] = _attempt(lambda: _first_steps(
        C.combine([z, z * 2.0]).eval(going_on)))
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch", "cntk.Function.eval"],
           note="a Trainer and a Function over one graph each carry their own states, "
                "whichever ran first: the Trainer's False flags go on from its own previous "
                "minibatch after the Function's runs with flags, and the Function's from its "
                "own previous run (Stadyn spliced each one's states into the recurrence at "
                "its first False flag, and a Function that had run before the Trainer's "
                "splice undid it: the Trainer's next False flags began afresh)")
def sequence_begin_flags_trainer_and_function_of_one_graph(C, r):
    r.touch("cntk.Trainer.train_minibatch", "cntk.Function.eval")
    x, y, z, trainer, params, piece = _model(C, r)
    res = {"parameters": params}
    losses = []
    train = _training(x, y, trainer, piece, losses)
    z.eval({x: piece(0, 2)[0]})         # the Function runs before the Trainer
    train(0, 2, [True, True])
    train(2, 4, [False, False])
    res["function_goes_on"] = _first_steps(z.eval(({x: piece(2, 4)[0]}, [False, False])))
    train(4, 6, [False, False])
    res["function_goes_on_again"] = _first_steps(z.eval(({x: piece(4, 6)[0]},
                                                         [False, True])))
    res["losses"] = np.array(losses)
    res["after"] = r.param_values(z.parameters)
    return res
