"""Where ``stadyn.compat.cntk``'s Trainer did otherwise than CNTK 2.7 with a sequence of no
step: the message of ``train_minibatch`` and ``test_minibatch`` when it is the only sequence
of the minibatch."""

import numpy as np

from compat_harness import cntk_case


def _first_clause(fn):
    """The first clause of the RuntimeError ``fn`` raises (CNTK's own log lines follow it, and
    Stadyn's explanation in parentheses), or "runs"."""
    try:
        fn()
        return "runs"
    except RuntimeError as e:
        return str(e).split("\n")[0].split(". ")[0].split(" (")[0].rstrip(".")


@cntk_case(names=["cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch"],
           note="a Trainer given a sequence of no step as the minibatch's only sequence: CNTK "
                "2.7's RuntimeError is 'AddSequence: Sequences must be a least one frame "
                "long.' (beside other sequences, before or after them: 'The first entry of a "
                "Value mask must be Valid or SequenceBegin').  Stadyn's Trainer gave the "
                "Value-mask message for both (Function.eval had the two)")
def trainer__message_for_a_sequence_of_no_step(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.ops.times", "cntk.parameter",
            "cntk.sequence.reduce_sum", "cntk.losses.squared_error", "cntk.learners.sgd",
            "cntk.learning_parameter_schedule", "cntk.Trainer", "cntk.Trainer.train_minibatch",
            "cntk.Trainer.test_minibatch")
    x, y = C.sequence.input_variable(2, name="x"), C.sequence.input_variable(1, name="y")
    z = C.sequence.reduce_sum(C.times(x, C.parameter((2, 1), init=0.1)))
    loss = C.squared_error(z, C.sequence.reduce_sum(y))
    t = C.Trainer(z, (loss, loss), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    none, three = np.zeros((0, 2), np.float32), np.ones((3, 2), np.float32)
    y_none, y_three = np.zeros((0, 1), np.float32), np.ones((3, 1), np.float32)
    res = {}
    for what in ("train_minibatch", "test_minibatch"):
        for label, xs, ys in (("alone", [none], [y_none]),
                              ("second of two", [three, none], [y_three, y_none]),
                              ("first of two", [none, three], [y_none, y_three]),
                              ("x's alone", [none], [y_three]),
                              ("x's second of two", [three, none], [y_three, y_three])):
            res[what + ", " + label] = _first_clause(
                lambda: getattr(t, what)({x: xs, y: ys}))
    res["samples seen"] = t.total_number_of_samples_seen
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch"],
           note="train_minibatch(outputs=[...]) over dense sequence data: CNTK 2.7 gives a "
                "sequence output as a list of one array per sequence, of its steps only "
                "(sequences of different lengths, of one length, one sequence, a 3-D array "
                "fed), as eval; an output of no sequence axis (the loss) and a non-sequence "
                "input give one array.  Stadyn gave the sequences padded to "
                "the longest in one array (before rmE37)")
def trainer__sequence_outputs_per_sequence(C, r):
    eye = np.eye(5, dtype=np.float32)
    res = {}
    for label, seq, fed in (("different lengths", True, [eye[[0, 1, 2]], eye[[3]]]),
                            ("one length", True, [eye[[0, 1]], eye[[3, 4]]]),
                            ("one sequence", True, [eye[[4, 0]]]),
                            ("3-D array", True, np.stack([eye[[0, 1]], eye[[3, 4]]])),
                            ("no sequence axis", False, eye[[0, 1, 2]])):
        x = (C.sequence.input_variable if seq else C.input_variable)(5, name="x")
        E = C.parameter((5, 2), init=np.arange(10, dtype=np.float32).reshape(5, 2) / 10)
        z = C.times(x, E)
        loss = C.sequence.reduce_sum(C.reduce_sum(z)) if seq else C.reduce_sum(z)
        trainer = C.Trainer(z, (loss, None), [C.sgd([E], C.learning_parameter_schedule(0.1))])
        updated, out = trainer.train_minibatch({x: fed}, outputs=[z, loss])
        res[label] = [updated, type(out[z]).__name__, len(out[z])]
        res[label + ": z"] = [np.asarray(o) for o in out[z]]
        res[label + ": loss"] = np.asarray(out[loss])
        updated, out = trainer.train_minibatch({x: fed}, outputs=[z.output])
        res[label + ": z.output"] = [np.asarray(o) for o in out[z.output]]
    r.touch("cntk.parameter", "cntk.ops.times", "cntk.sequence.reduce_sum",
            "cntk.reduce_sum", "cntk.learners.sgd", "cntk.learning_parameter_schedule",
            "cntk.Trainer", "cntk.Trainer.train_minibatch")
    return res
