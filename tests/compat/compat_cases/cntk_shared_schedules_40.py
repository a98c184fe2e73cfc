"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (fortieth round, review of the
learners' round): a schedule object given to more than one learner.

CNTK 2.7's learner functions write the learner's ``minibatch_size`` into the schedule they are
given when it was made without one (``cntk/learners/__init__.py:568-570``,
``_infer_learning_parameter_schedule``: ``number_or_schedule.minibatch_size =
ref_minibatch_size``), and ``use_mean_gradient=True`` writes ``IGNORE`` into a per-sample rate
(573-575); the flag ``is_minibatch_size_explicitly_specified`` stays as it was.  A learner made
later with that schedule and no ``minibatch_size`` so takes the earlier learner's size, while
every learner keeps the schedule it was made with (CNTK's C++ learner holds a copy).  Stadyn
copied the schedule and left the caller's alone: ``lr = learning_parameter_schedule(0.05)``,
``sgd([p], lr, minibatch_size=8)``, then ``sgd([q], lr)`` stepped on 4 samples moved ``q`` by
-0.0125 where CNTK moves it by -0.00625 (SILENT), and ``lr.minibatch_size`` read 0, not 8."""

from compat_harness import cntk_case

L = "cntk.learners."


def _moved(C, r, np, learner_of, sizes=(4,)):
    """How far one parameter (1.0 at first, gradient 1 on every update) moves under the learner
    ``learner_of([p])`` over minibatches of ``sizes`` samples."""
    p = C.parameter(shape=(1,), init=1.0)
    learner = learner_of([p])
    for n in sizes:
        learner.update({p: np.ones((1,), np.float32)}, n)
    r.touch("cntk.learners.Learner.update", "cntk.Parameter.value")
    return float(p.value[0]) - 1.0


def _state(s):
    return [int(s.minibatch_size), bool(s.is_minibatch_size_explicitly_specified)]


@cntk_case(names=[L + "sgd", "cntk.learning_parameter_schedule", "cntk.learners.Learner.update",
                  "cntk.learners.Learner.reset_learning_rate", "cntk.Parameter.value"],
           rtol=0, atol=0,
           note="a rate schedule made without minibatch_size, given to a learner with "
                "minibatch_size=8 and then to others: its minibatch_size after each, and each "
                "learner's step on 4-sample minibatches (a constant rate and a list); "
                "reset_learning_rate writes the learner's minibatch_size too (an explicit "
                "one is left alone)")
def shared_schedule__learning_rate(C, r, np):
    res = {}
    for key, lr in [("constant", C.learning_parameter_schedule(0.05)),
                    ("list", C.learning_parameter_schedule([0.05, 0.01], epoch_size=6))]:
        first = _moved(C, r, np, lambda ps: C.sgd(ps, lr, minibatch_size=8), (4, 4))
        res[key + " after the first"] = _state(lr)
        # the next learner takes the size the first one wrote
        res[key + " steps"] = [first, _moved(C, r, np, lambda ps: C.sgd(ps, lr), (4, 4))]
        # a learner made before another one writes 2 keeps what it was made with
        p = C.parameter(shape=(1,), init=1.0)
        kept = C.sgd([p], lr)
        res[key + " third"] = _moved(C, r, np, lambda ps: C.sgd(ps, lr, minibatch_size=2), (4, 4))
        res[key + " after the third"] = _state(lr)
        kept.update({p: np.ones((1,), np.float32)}, 4)
        res[key + " kept"] = float(p.value[0]) - 1.0
    # reset_learning_rate writes the learner's size into the schedule it is given
    lr = C.learning_parameter_schedule(0.05)
    p = C.parameter(shape=(1,), init=1.0)
    learner = C.sgd([p], C.learning_parameter_schedule(0.1), minibatch_size=8)
    learner.reset_learning_rate(lr)
    learner.update({p: np.ones((1,), np.float32)}, 4)
    r.touch("cntk.learners.Learner.reset_learning_rate")
    res["reset after"], res["reset step"] = _state(lr), float(p.value[0]) - 1.0
    # a schedule with its own minibatch_size is not written
    lr = C.learning_parameter_schedule(0.05, minibatch_size=2)
    res["explicit step"] = _moved(C, r, np, lambda ps: C.sgd(ps, lr, minibatch_size=8))
    res["explicit after"] = _state(lr)
    return res


@cntk_case(names=[L + "momentum_sgd", L + "adam", "cntk.momentum_schedule",
                  "cntk.learning_parameter_schedule", "cntk.learners.Learner.update",
                  "cntk.Parameter.value"], rtol=0, atol=0,
           note="momentum schedules made without minibatch_size (momentum_sgd's momentum, "
                "adam's momentum and variance_momentum) given to a learner with "
                "minibatch_size=8 and then to one without: their minibatch_size and the "
                "second learner's steps on minibatches of 4 and 6 samples")
def shared_schedule__momenta(C, r, np):
    res = {}
    m = C.momentum_schedule(0.5)
    first = _moved(C, r, np, lambda ps: C.momentum_sgd(
        ps, C.learning_parameter_schedule(0.1), m, minibatch_size=8, unit_gain=False), (4, 6))
    res["momentum_sgd m"] = _state(m)
    res["momentum_sgd steps"] = [first, _moved(C, r, np, lambda ps: C.momentum_sgd(
        ps, C.learning_parameter_schedule(0.1), m, unit_gain=False), (4, 6))]
    m, v = C.momentum_schedule(0.9), C.momentum_schedule(0.99)
    first = _moved(C, r, np, lambda ps: C.adam(
        ps, C.learning_parameter_schedule(0.1), m, variance_momentum=v, minibatch_size=8),
        (4, 6))
    res["adam m"], res["adam v"] = _state(m), _state(v)
    res["adam steps"] = [first, _moved(C, r, np, lambda ps: C.adam(
        ps, C.learning_parameter_schedule(0.1), m, variance_momentum=v), (4, 6))]
    return res


@cntk_case(names=[L + "sgd", "cntk.learning_parameter_schedule_per_sample",
                  "cntk.learners.Learner.update", "cntk.Parameter.value"], rtol=0, atol=0,
           note="use_mean_gradient=True writes IGNORE into the per-sample rate it is given "
                "(still explicitly specified), so a later learner without it steps per "
                "minibatch")
def shared_schedule__use_mean_gradient(C, r, np):
    lr = C.learning_parameter_schedule_per_sample(0.05)
    first = _moved(C, r, np, lambda ps: C.sgd(ps, lr, use_mean_gradient=True))
    return {"after": _state(lr), "steps": [first, _moved(C, r, np, lambda ps: C.sgd(ps, lr))]}
