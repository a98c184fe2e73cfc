"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (sixteenth round): ``splice`` of
scalars; a run given an input of no rows or a sequence of no step; ``sequence.slice`` leaving a
sequence no step; element-wise ops whose known shapes do not broadcast, and over placeholders
whose inferred axes the other operand knows.  (A distributed learner's lack of ``update`` is
in ``cntk_distributed``: a case after its ``Communicator.finalize`` can make none.)"""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


_outcome = functools.partial(outcome, convert=lambda got: list(got) if isinstance(got, tuple)
                             else np.asarray(got))


@cntk_case(names=["cntk.ops.splice", "cntk.ops.reduce_sum", "cntk.ops.reduce_max"],
           note="splice of scalars (reductions over a sample, constants of shape ()) along the "
                "default axis: CNTK 2.7 makes a vector of them, of plain and sequence inputs; "
                "along axis 0 or 1 it refuses them (ValueError).  Stadyn refused them all "
                "(ShapeError 'axis -1 is not an axis of a sample of rank 0')")
def splice__scalars(C, r):
    r.touch("cntk.Function.shape", "cntk.Function.eval", "cntk.input_variable",
            "cntk.sequence.input_variable", "cntk.ops.reduce_min", "cntk.ops.constant")
    v = C.input_variable(3)
    sv = C.sequence.input_variable(3)
    d = np.arange(6, dtype=np.float32).reshape(2, 3)
    res = {}
    res["plain shape"] = _outcome(lambda: C.splice(C.reduce_sum(v), C.reduce_max(v)).shape)
    res["plain eval"] = _outcome(lambda: C.splice(C.reduce_sum(v), C.reduce_max(v)).eval({v: d}))
    res["sequence shape"] = _outcome(lambda: C.splice(C.reduce_sum(sv), C.reduce_max(sv)).shape)
    res["sequence eval"] = _outcome(
        lambda: C.splice(C.reduce_sum(sv), C.reduce_max(sv)).eval({sv: [d]}))
    res["three, axis=-1"] = _outcome(lambda: C.splice(C.reduce_sum(v), C.reduce_max(v),
                                                      C.reduce_min(v), axis=-1).eval({v: d}))
    res["axis=0"] = _outcome(lambda: C.splice(C.reduce_sum(v), C.reduce_max(v), axis=0).shape)
    res["axis=1"] = _outcome(lambda: C.splice(C.reduce_sum(v), C.reduce_max(v), axis=1).shape)
    res["scalar and (2,)"] = _outcome(lambda: C.splice(C.reduce_sum(v),
                                                       C.input_variable(2)).shape)
    res["constants"] = _outcome(lambda: C.splice(C.constant(1.0), C.constant(2.0)).eval())
    return res


@cntk_case(names=["cntk.Function.eval", "cntk.Function.forward"],
           note="a run given an input of no rows (np.zeros((0, 2))): CNTK 2.7 refuses it "
                "(RuntimeError 'NarrowTo: Invalid bounds parameter, dimensions must be at least "
                "one.'), and a sequence of no step among a sequence input's (RuntimeError "
                "'AddSequence: Sequences must be a least one frame long.').  Stadyn returned "
                "empty arrays")
def run__no_rows(C, r):
    r.touch("cntk.input_variable", "cntk.sequence.input_variable", "cntk.ops.plus",
            "cntk.ops.reduce_sum", "cntk.Function.eval", "cntk.Function.forward")
    x = C.input_variable(2)
    sx = C.sequence.input_variable(2)
    none = np.zeros((0, 2), np.float32)
    one = np.ones((2, 2), np.float32)
    res = {}
    res["eval reduce_sum"] = _outcome(lambda: C.reduce_sum(x).eval({x: none}))
    res["eval plus"] = _outcome(lambda: (x + 1).eval({x: none}))
    res["eval, the data alone"] = _outcome(lambda: (x + 1).eval(none))
    res["forward"] = _outcome(lambda: (x + 1).forward({x: none})[1])
    res["eval [array of no rows]"] = _outcome(lambda: (x + 1).eval({x: [none]}))
    res["eval []"] = _outcome(lambda: (x + 1).eval({x: []}))
    res["sequence: a sequence of no step"] = _outcome(lambda: (sx + 1).eval({sx: [none]}))
    res["sequence: one of two of no step"] = _outcome(lambda: (sx + 1).eval({sx: [one, none]}))
    res["sequence: []"] = _outcome(lambda: (sx + 1).eval({sx: []}))
    for label, data in (("alone", [none]), ("second of two", [one, none]),
                        ("first of two", [none, one])):
        try:
            C.sequence.last(sx).eval({sx: data})
            res["message, no step " + label] = "runs"
        except RuntimeError as e:   # (CNTK's first clause; its own log lines follow)
            res["message, no step " + label] = str(e).split("\n")[0].split(". ")[0].rstrip(".")
    res["sequence: array (0, 1, 2)"] = _outcome(
        lambda: (sx + 1).eval({sx: np.zeros((0, 1, 2), np.float32)}))
    res["still runs"] = _outcome(lambda: (x + 1).eval({x: one}))
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch"],
           note="a Trainer given a sequence of no step among a minibatch's: CNTK 2.7 refuses "
                "it (RuntimeError 'The first entry of a Value mask must be Valid or "
                "SequenceBegin').  Stadyn trained and tested on the others")
def trainer__sequence_of_no_step(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.layers.Dense", "cntk.losses.squared_error",
            "cntk.learners.sgd", "cntk.learning_parameter_schedule", "cntk.Trainer",
            "cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch")
    x, y = C.sequence.input_variable(2), C.sequence.input_variable(2)
    z = C.layers.Dense(2, init=C.glorot_uniform(seed=1))(x)
    loss = C.squared_error(z, y)
    t = C.Trainer(z, (loss, loss), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    one = np.ones((2, 2), np.float32)
    none = np.zeros((0, 2), np.float32)
    return {"train": _outcome(lambda: t.train_minibatch({x: [one, none], y: [one, none]})),
            "test": _outcome(lambda: t.test_minibatch({x: [none], y: [none]})),
            "samples seen": t.total_number_of_samples_seen}


@cntk_case(names=["cntk.sequence.slice"],
           note="sequence.slice that leaves a sequence no step (slice(x, 1, -1) of 2 steps, "
                "slice(x, 3, 0) of 2): CNTK 2.7 refuses the run (RuntimeError 'AddSequence: "
                "Sequences must be a least one frame long.'), one such sequence in the "
                "minibatch enough.  Stadyn gave an empty sequence")
def sequence_slice__no_step_left(C, r):
    r.touch("cntk.sequence.input_variable", "cntk.Function.eval")
    x = C.sequence.input_variable(2)
    two = np.arange(4, dtype=np.float32).reshape(2, 2)
    three = np.arange(6, dtype=np.float32).reshape(3, 2)
    res = {}
    for label, (b, e), data in (("1:-1 of 2", (1, -1), [two]), ("1:-1 of 3", (1, -1), [three]),
                                ("1:-1 of 3 and 2", (1, -1), [three, two]),
                                ("2:0 of 2", (2, 0), [two]), ("3:0 of 2", (3, 0), [two]),
                                ("-1:0 of 2", (-1, 0), [two]), ("0:0 of 2", (0, 0), [two]),
                                ("0:5 of 2", (0, 5), [two])):
        res[label] = _outcome(lambda: C.sequence.slice(x, b, e).eval({x: data}))
    res["slice + 1, 1:-1 of 2"] = _outcome(lambda: (C.sequence.slice(x, 1, -1) + 1).eval(
        {x: [two]}))
    return res


@cntk_case(names=["cntk.ops.plus", "cntk.ops.minus", "cntk.ops.element_times",
                  "cntk.ops.equal"],
           note="an element-wise op whose operands' known shapes do not broadcast ((2,) and "
                "(3,); (2, 3) and (4, 3)): CNTK 2.7 refuses it as it is made with a "
                "RuntimeError ('Binary elementwise operation Plus: Left operand ... is not "
                "compatible with right operand ...').  Stadyn's was a ShapeError, a "
                "ValueError only")
def elementwise__known_shapes_that_clash(C, r):
    r.touch("cntk.input_variable", "cntk.ops.constant", "cntk.Function.shape")
    res = {}
    for label, make in (
            ("plus (2,) (3,)", lambda: C.plus(C.input_variable(2), C.input_variable(3))),
            ("operator + (2,) (3,)", lambda: C.input_variable(2) + C.input_variable(3)),
            ("minus (2, 3) (4, 3)",
             lambda: C.minus(C.input_variable((2, 3)), C.input_variable((4, 3)))),
            ("element_times (2, 3) (4, 3)",
             lambda: C.element_times(C.input_variable((2, 3)), C.input_variable((4, 3)))),
            ("equal (2,) (3,)", lambda: C.equal(C.input_variable(2), C.input_variable(3))),
            ("plus constants (2,) (3,)",
             lambda: C.plus(C.constant(np.ones(2, np.float32)),
                            C.constant(np.ones(3, np.float32)))),
            ("plus input (3,) array (2, 2)",
             lambda: C.plus(C.input_variable(3), np.ones((2, 2), np.float32))),
            ("fits: (2, 3) (3,)",
             lambda: C.plus(C.input_variable((2, 3)), C.input_variable(3))),
            ("fits: (2, 1) (1, 3)",
             lambda: C.plus(C.input_variable((2, 1)), C.input_variable((1, 3)))),
            ("fits: (3,) array (2, 3)",
             lambda: C.plus(C.input_variable(3), np.ones((2, 3), np.float32)))):
        res[label] = _outcome(lambda: make().shape)
    return res


@cntk_case(names=["cntk.ops.plus", "cntk.ops.element_times", "cntk.ops.minus",
                  "cntk.placeholder"],
           note="an element-wise op over placeholders whose inferred axes the other operand "
                "knows ((?, 3) and (2, ?)): CNTK 2.7 infers each from the other as the op is "
                "made ((2, 3); an axis of 1 takes the other's, inferred or not).  Stadyn showed "
                "(-2,), unknown")
def elementwise__inferred_from_each_other(C, r):
    r.touch("cntk.Function.shape")
    inferred = C.InferredDimension

    def ph(*shape):
        return C.placeholder(tuple(inferred if d is None else d for d in shape))
    res = {}
    for label, make in (
            ("plus (?, 3) (2, ?)", lambda: C.plus(ph(None, 3), ph(2, None))),
            ("plus (2, ?) (?, 3)", lambda: C.plus(ph(2, None), ph(None, 3))),
            ("element_times (?, 3) (2, ?)", lambda: C.element_times(ph(None, 3), ph(2, None))),
            ("minus (?, ?) (2, 3)", lambda: C.minus(ph(None, None), ph(2, 3))),
            ("plus (?, 3) (1, ?)", lambda: C.plus(ph(None, 3), ph(1, None))),
            ("plus (?, 1) (2, ?)", lambda: C.plus(ph(None, 1), ph(2, None))),
            ("plus (?, 3) (?,)", lambda: C.plus(ph(None, 3), ph(None))),
            ("plus (?, 3) (?, 3)", lambda: C.plus(ph(None, 3), ph(None, 3))),
            ("plus (4, ?, 3) (2, ?)", lambda: C.plus(ph(4, None, 3), ph(2, None)))):
        res[label] = _outcome(lambda: make().shape)
    return res
