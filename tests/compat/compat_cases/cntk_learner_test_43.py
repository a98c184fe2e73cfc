"""Where ``stadyn.compat.cntk``'s learners and schedules did otherwise than CNTK 2.7 in CNTK's
own ``bindings/python/cntk/learners/tests/learner_test.py`` (learn43): a gradient given with
the parameter's matrix in another NumPy shape (``(1, 1)`` for a ``(1,)`` parameter) refused;
iterating a schedule refused (CNTK's is endless: ``zip(schedule, expected)``); an unknown
``unit`` not a ValueError; ``is_compatible_mode`` and ``_learning_rate_schedule`` missing."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


@cntk_case(names=["cntk.learners.sgd", "cntk.learners.momentum_sgd", "cntk.learners.adam",
                  "cntk.learners.learning_parameter_schedule", "cntk.ops.parameter"],
           note="update({w: g}, 1) with g of another NumPy shape whose CNTK matrix (last axis "
                "the rows, the others the columns) is w's: (1, 1) for (1,), (1, 2, 3) for "
                "(2, 3), (1, 2) for (2,) taken as w's own elements (sgd, momentum_sgd, adam); "
                "(2, 1) for (2,) (a 1 x 2 matrix) refused by sgd and momentum_sgd (ValueError)")
def learner_update__gradient_of_the_parameter_matrix(C, r, np):
    r.touch("cntk.learners.Learner.update", "cntk.Parameter.value")
    lr = C.learning_parameter_schedule(0.1, minibatch_size=1)
    makers = {"sgd": lambda p: C.sgd(p, lr),
              "momentum_sgd": lambda p: C.momentum_sgd(p, lr, 0.9),
              "adam": lambda p: C.adam(p, lr, 0.9)}
    out = {}
    for name, make in sorted(makers.items()):
        for shape, given in (((1,), (1, 1)), ((2, 3), (1, 2, 3)), ((2,), (1, 2)),
                             ((2,), (2, 1))):
            if name == "adam" and given == (2, 1):
                continue            # (CNTK's Adam takes any gradient of as many elements)
            w = C.parameter(shape=shape, init=1.0)
            learner = make([w])
            g = np.arange(1, 1 + int(np.prod(given)), dtype=np.float32).reshape(given)

            def step():
                learner.update({w: g}, 1)
                return np.asarray(w.value)
            out["%s %s <- %s" % (name, shape, given)] = _outcome(step)
    return out


@cntk_case(names=["cntk.learners.momentum_as_time_constant_schedule",
                  "cntk.learners.learning_parameter_schedule", "cntk.learners.momentum_schedule"],
           note="a schedule iterates endlessly as CNTK's (schedule[0], schedule[1], ...): "
                "zip with a list of 4, of 2; islice of a per-sweep schedule")
def schedule__endless_iteration(C, r, np):
    import itertools
    return {"time constants": [float(m) for m, _ in zip(
                C.momentum_as_time_constant_schedule([980, 520]), range(4))],
            "epochs of 2": [float(v) for v in itertools.islice(
                iter(C.learning_parameter_schedule([0.1, 0.2], epoch_size=2)), 5)],
            "per sweep": [float(v) for v in itertools.islice(
                iter(C.momentum_schedule([0.9, 0.5])), 3)]}


@cntk_case(names=["cntk.learners.training_parameter_schedule",
                  "cntk.learners.learning_rate_schedule"],
           note="an unknown unit ('not_supported', 5, None, 'Sample') is a ValueError")
def training_parameter_schedule__unknown_unit(C, r, np):
    out = {}
    for unit in ("not_supported", 5, None, "Sample"):
        out["tps %r" % (unit,)] = _outcome(
            lambda: C.training_parameter_schedule(0.01, unit=unit).minibatch_size)
        out["lrs %r" % (unit,)] = _outcome(
            lambda: C.learning_rate_schedule(0.01, unit=unit).minibatch_size)
    return out


@cntk_case(names=["cntk.learners.sgd", "cntk.learners.learning_rate_schedule",
                  "cntk.learners.learning_parameter_schedule"],
           note="is_compatible_mode() and _learning_rate_schedule.minibatch_size of sgd made "
                "with a per-sample / per-minibatch UnitType schedule, minibatch_size=IGNORE, "
                "use_mean_gradient=True, a number with minibatch_size=25, a list schedule "
                "with minibatch_size=32 (its values at 0..4)")
def learner__compatible_mode(C, r, np):
    r.touch("cntk.learners.Learner.learning_rate", "cntk.learners.Learner.minibatch_size")
    w = C.parameter(shape=(1,))
    U = C.UnitType
    made = {"sample": lambda: C.sgd([w], lr=C.learning_rate_schedule(0.1, U.sample)),
            "minibatch": lambda: C.sgd([w], lr=C.learning_rate_schedule(0.1, U.minibatch)),
            "sample IGNORE": lambda: C.sgd([w], lr=C.learning_rate_schedule(0.1, U.sample),
                                           minibatch_size=C.learners.IGNORE),
            "mean": lambda: C.sgd([w], lr=0.1, use_mean_gradient=True),
            "25": lambda: C.sgd([w], lr=0.1, minibatch_size=25),
            "list 32": lambda: C.sgd([w], lr=C.learning_parameter_schedule(
                [0.1, 0.2], epoch_size=3), minibatch_size=32)}
    out = {}
    for key, make in sorted(made.items()):
        learner = make()
        s = learner._learning_rate_schedule
        out[key] = [learner.is_compatible_mode(), int(s.minibatch_size),
                    int(learner.minibatch_size), learner.learning_rate(),
                    [float(s[i]) for i in range(5)]]
    return out


@cntk_case(names=["cntk.learners.sgd", "cntk.learners.momentum_sgd", "cntk.learners.nesterov",
                  "cntk.learners.learning_parameter_schedule", "cntk.ops.parameter"],
           note="update({w: g}, 3) with a one-element g ((1,) or (1, 1)) for a (2,) or (2, 3) "
                "w: CNTK's sgd, momentum_sgd and nesterov add it to every element (a 1 x 1 "
                "matrix to ScaleAndAdd), twice, as the mean gradient and with L1 too; with "
                "L2 (g + l2 w into the 1 x 1 gradient) a ValueError")
def learner_update__one_element_gradient(C, r, np):
    r.touch("cntk.learners.Learner.update", "cntk.Parameter.value")
    lr = C.learning_parameter_schedule(0.1)
    makers = {"sgd": lambda p, **k: C.sgd(p, lr, **k),
              "momentum_sgd": lambda p, **k: C.momentum_sgd(p, lr, 0.9, **k),
              "nesterov": lambda p, **k: C.nesterov(p, lr, 0.9, **k)}
    options = {"": {}, "l1": {"l1_regularization_weight": 0.1},
               "mean": {"use_mean_gradient": True},
               "l2": {"l2_regularization_weight": 0.1}}
    out = {}
    for name, make in sorted(makers.items()):
        for option, kwargs in sorted(options.items()):
            for shape, given in (((2,), (1,)), ((2, 3), (1, 1))):
                w = C.parameter(shape=shape, init=np.arange(
                    int(np.prod(shape)), dtype=np.float32).reshape(shape) / 3)
                learner = make([w], **kwargs)
                g = np.full(given, 0.5, np.float32)

                def step():
                    learner.update({w: g}, 3)
                    learner.update({w: g}, 3)
                    return np.asarray(w.value)
                out["%s %s %s <- %s" % (name, option, shape, given)] = _outcome(step)
    return out


@cntk_case(names=["cntk.learners.sgd", "cntk.learners.momentum_sgd", "cntk.learners.adam",
                  "cntk.learners.IGNORE"],
           note="learner.minibatch_size = IGNORE, then = 3 (CNTK's test_learner_init_legacy): "
                "compatible mode (the mean gradient) follows it from the next update, the "
                "schedules keep their reference size; made with and without minibatch_size=5, "
                "momentum_sgd with L2 and clipping; -1 OverflowError, 2.5 and None TypeError, "
                "True is 1")
def learner_minibatch_size__set(C, r, np):
    r.touch("cntk.learners.Learner.update", "cntk.learners.Learner.is_compatible_mode",
            "cntk.learners.Learner.minibatch_size")
    lr = C.learning_parameter_schedule(0.1)
    makers = {"sgd": lambda p, **k: C.sgd(p, lr, **k),
              "momentum_sgd": lambda p, **k: C.momentum_sgd(
                  p, lr, 0.9, l2_regularization_weight=0.1,
                  gradient_clipping_threshold_per_sample=0.2, **k),
              "adam": lambda p, **k: C.adam(p, lr, 0.9, **k)}
    out = {}
    for name, make in sorted(makers.items()):
        for given in (None, 5):
            w = C.parameter(shape=(2,), init=np.array([1.0, 2.0], np.float32))
            learner = make([w], **({} if given is None else {"minibatch_size": given}))
            g = np.array([0.5, 1.0], np.float32)
            rows = []
            for size in (C.learners.IGNORE, 3):
                learner.minibatch_size = size
                rows.append([learner.minibatch_size, learner.is_compatible_mode(),
                             learner.is_minibatch_size_explicitly_specified,
                             learner._learning_rate_schedule.minibatch_size])
                learner.update({w: g}, 4)
                rows.append(np.asarray(w.value))
            out["%s %s" % (name, given)] = rows
    w = C.parameter(shape=(2,))
    learner = C.sgd([w], lr)
    for value in (-1, 2.5, None, True):
        def put(value=value):
            learner.minibatch_size = value
            return learner.minibatch_size
        out["set %r" % (value,)] = _outcome(put)
    return out
