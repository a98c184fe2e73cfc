"""``cntk.learners`` (and the 2017 betas' ``cntk.learner``): every learner over several
minibatches of changing size through ``Trainer.train_minibatch``, its options (units,
regularisation, clipping, unit gain), and the schedules' values."""

import numpy as np

from compat_harness import cntk_case

SIZES = (4, 2, 5, 3)  # minibatch sizes of the steps: per-sample and per-minibatch units differ


def train(C, r, make_learner, sizes=SIZES, loss="ce"):
    """``w``, ``b`` (set from their names) of ``times(x, w) + b`` after each step of a Trainer
    with ``make_learner(C, [w, b])``; also the Trainer's loss/metric/sample count per step and
    the learner's learning rate at the end."""
    x = C.input_variable(4)
    y = C.input_variable(3)
    w = C.parameter((4, 3), init=r.param_value("w", (4, 3)), name="w")
    b = C.parameter((3,), init=r.param_value("b", (3,)), name="b")
    z = C.times(x, w) + b
    if loss == "ce":
        criterion = (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y))
    else:
        criterion = (C.squared_error(z, y), C.squared_error(z, y))
    learner = make_learner(C, [w, b])
    trainer = C.Trainer(z, criterion, [learner])
    res = {}
    for step, n in enumerate(sizes):
        data = r.randn(n, 4) * 2.0
        target = r.onehot(n, 3) if loss == "ce" else r.randn(n, 3)
        trainer.train_minibatch({x: data, y: target})
        res["w%d" % step] = w.value
        res["b%d" % step] = b.value
        res["loss%d" % step] = np.float32(trainer.previous_minibatch_loss_average)
        res["metric%d" % step] = np.float32(trainer.previous_minibatch_evaluation_average)
        res["count%d" % step] = trainer.previous_minibatch_sample_count
    res["learning_rate"] = np.float32(learner.learning_rate())
    r.touch("cntk.Function.value", "cntk.train.Trainer")
    return res


def learner_case(name, make, names, **kw):
    opts = dict((k, kw.pop(k)) for k in ("sizes", "loss") if k in kw)

    def fn(C, r):
        return train(C, r, make, **opts)
    fn.__name__ = name
    cntk_case(name=name, names=names + ["cntk.Trainer"], **kw)(fn)


L = "cntk.learners."

# -- sgd: units, regularisation, clipping -----------------------------------------------------
learner_case("sgd", lambda C, p: C.learners.sgd(p, C.learning_parameter_schedule(0.5)),
             [L + "sgd", "cntk.learning_parameter_schedule"])
learner_case("sgd__per_sample", lambda C, p: C.learners.sgd(
    p, C.learning_parameter_schedule_per_sample(0.1)),
    [L + "sgd", "cntk.learning_parameter_schedule_per_sample"])
learner_case("sgd__minibatch_size", lambda C, p: C.learners.sgd(
    p, C.learning_parameter_schedule(0.4, minibatch_size=2)),
    [L + "sgd", "cntk.learning_parameter_schedule"],
    note="the rate is for a reference minibatch of 2: scaled by 2/n for a minibatch of n")
learner_case("sgd__rate_unit_sample", lambda C, p: C.learners.sgd(
    p, C.learning_rate_schedule(0.1, C.UnitType.sample)),
    [L + "sgd", "cntk.learning_rate_schedule", "cntk.UnitType"])
learner_case("sgd__rate_unit_minibatch", lambda C, p: C.learners.sgd(
    p, C.learning_rate_schedule(0.5, C.UnitType.minibatch)),
    [L + "sgd", "cntk.learning_rate_schedule", "cntk.UnitType"])
learner_case("sgd__schedule_list", lambda C, p: C.learners.sgd(
    p, C.learning_parameter_schedule([0.5, 0.2, 0.05], epoch_size=5)),
    [L + "sgd", "cntk.learning_parameter_schedule"],
    note="the rate changes every 5 samples: within the 4 steps")
learner_case("sgd__plain_number", lambda C, p: C.learners.sgd(p, 0.3), [L + "sgd"])
learner_case("sgd__l2", lambda C, p: C.learners.sgd(
    p, C.learning_parameter_schedule(0.5), l2_regularization_weight=0.1), [L + "sgd"])
learner_case("sgd__l1", lambda C, p: C.learners.sgd(
    p, C.learning_parameter_schedule(0.5), l1_regularization_weight=0.05), [L + "sgd"])
learner_case("sgd__clip_truncation", lambda C, p: C.learners.sgd(
    p, C.learning_parameter_schedule(0.5), gradient_clipping_threshold_per_sample=0.2,
    gradient_clipping_with_truncation=True), [L + "sgd"])
learner_case("sgd__clip_norm", lambda C, p: C.learners.sgd(
    p, C.learning_parameter_schedule(0.5), gradient_clipping_threshold_per_sample=0.3,
    gradient_clipping_with_truncation=False), [L + "sgd"])
learner_case("sgd__squared_error", lambda C, p: C.learners.sgd(
    p, C.learning_parameter_schedule_per_sample(0.02)), [L + "sgd"], loss="se")

# -- momentum family ------------------------------------------------------------------------
learner_case("momentum_sgd", lambda C, p: C.learners.momentum_sgd(
    p, C.learning_parameter_schedule(0.3), C.momentum_schedule(0.9)),
    [L + "momentum_sgd", "cntk.momentum_schedule"])
learner_case("momentum_sgd__no_unit_gain", lambda C, p: C.learners.momentum_sgd(
    p, C.learning_parameter_schedule(0.3), C.momentum_schedule(0.9), unit_gain=False),
    [L + "momentum_sgd"])
learner_case("momentum_sgd__per_sample", lambda C, p: C.learners.momentum_sgd(
    p, C.learning_parameter_schedule_per_sample(0.05), C.momentum_schedule_per_sample(0.95)),
    [L + "momentum_sgd", "cntk.momentum_schedule_per_sample"])
learner_case("momentum_sgd__time_constant", lambda C, p: C.learners.momentum_sgd(
    p, C.learning_rate_schedule(0.05, C.UnitType.sample),
    C.momentum_as_time_constant_schedule(20)),
    [L + "momentum_sgd", "cntk.momentum_as_time_constant_schedule"])
learner_case("nesterov", lambda C, p: C.learners.nesterov(
    p, C.learning_parameter_schedule(0.3), C.momentum_schedule(0.8)), [L + "nesterov"])
learner_case("nesterov__no_unit_gain", lambda C, p: C.learners.nesterov(
    p, C.learning_parameter_schedule(0.3), C.momentum_schedule(0.8), unit_gain=False),
    [L + "nesterov"])

# -- adaptive -------------------------------------------------------------------------------
_F32 = ("CNTK hands the variance momentum to its float kernel as a float32 while the bias "
        "correction uses the double (1 - b2 = 5.6e-6 for the default: the rounding shows)")
learner_case("adam", lambda C, p: C.learners.adam(
    p, C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9)), [L + "adam"], note=_F32)
learner_case("adam__variance_momentum", lambda C, p: C.learners.adam(
    p, C.learning_parameter_schedule(0.1), C.momentum_schedule(0.8),
    variance_momentum=C.momentum_schedule(0.99), epsilon=1e-4), [L + "adam"])
learner_case("adam__no_unit_gain", lambda C, p: C.learners.adam(
    p, C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9), unit_gain=False),
    [L + "adam"], note=_F32)
learner_case("adam__adamax", lambda C, p: C.learners.adam(
    p, C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9), adamax=True),
    [L + "adam"])
learner_case("fsadagrad", lambda C, p: C.learners.fsadagrad(
    p, C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9)), [L + "fsadagrad"], note=_F32)
learner_case("fsadagrad__variance_momentum", lambda C, p: C.learners.fsadagrad(
    p, C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9),
    variance_momentum=C.momentum_schedule(0.99)), [L + "fsadagrad"])
learner_case("adagrad", lambda C, p: C.learners.adagrad(p, C.learning_parameter_schedule(0.2)),
             [L + "adagrad"])
learner_case("adagrad__no_ave_multiplier", lambda C, p: C.learners.adagrad(
    p, C.learning_parameter_schedule(0.2), need_ave_multiplier=False), [L + "adagrad"])
learner_case("adadelta", lambda C, p: C.learners.adadelta(
    p, C.learning_parameter_schedule(1.0)), [L + "adadelta"])
learner_case("adadelta__rho", lambda C, p: C.learners.adadelta(
    p, C.learning_parameter_schedule(0.5), rho=0.8, epsilon=1e-4), [L + "adadelta"])
learner_case("rmsprop", lambda C, p: C.learners.rmsprop(
    p, C.learning_parameter_schedule(0.05), gamma=0.9, inc=1.2, dec=0.7, max=2.0, min=0.1),
    [L + "rmsprop"])
learner_case("rmsprop__no_ave_multiplier", lambda C, p: C.learners.rmsprop(
    p, C.learning_parameter_schedule(0.05), gamma=0.9, inc=1.2, dec=0.7, max=2.0, min=0.1,
    need_ave_multiplier=False), [L + "rmsprop"])

# -- two learners, one per parameter --------------------------------------------------------
learner_case("two_learners", lambda C, p: C.learners.sgd(
    p[:1], C.learning_parameter_schedule(0.5)), [L + "sgd"],
    note="only w learns: b keeps its value")


# -- schedules ------------------------------------------------------------------------------
_COUNTS = (0, 1, 4, 5, 9, 10, 14, 15, 29, 30, 100)


def _values(schedule):
    return [float(schedule[i]) for i in _COUNTS]


@cntk_case(names=["cntk.learning_parameter_schedule",
                  "cntk.learning_parameter_schedule_per_sample",
                  "cntk.training_parameter_schedule", "cntk.learning_rate_schedule",
                  "cntk.momentum_schedule", "cntk.momentum_schedule_per_sample",
                  "cntk.momentum_as_time_constant_schedule", "cntk.UnitType"])
def schedules(C, r):
    """Each schedule's value at several sample counts, and its reference minibatch size."""
    scheds = {
        "lps": C.learning_parameter_schedule([0.5, 0.2, 0.05], epoch_size=5),
        "lps_pairs": C.learning_parameter_schedule([(2, 0.5), (1, 0.1), (1, 0.01)],
                                                   epoch_size=5),
        "lps_mb": C.learning_parameter_schedule(0.4, minibatch_size=8),
        "lps_ps": C.learning_parameter_schedule_per_sample([0.1, 0.05], epoch_size=10),
        "tps": C.training_parameter_schedule([0.3, 0.1], epoch_size=15),
        "lrs_sample": C.learning_rate_schedule([0.3, 0.1], C.UnitType.sample, epoch_size=15),
        "lrs_mb": C.learning_rate_schedule(0.3, C.UnitType.minibatch),
        "mom": C.momentum_schedule([0.9, 0.5], epoch_size=10),
        "mom_ps": C.momentum_schedule_per_sample(0.99),
        "mom_tc": C.momentum_as_time_constant_schedule([100, 10], epoch_size=10),
    }
    res = {}
    for key in sorted(scheds):
        res[key] = _values(scheds[key])
        res[key + " minibatch_size"] = int(scheds[key].minibatch_size)
    return res


@cntk_case(names=["cntk.learners.default_unit_gain_value",
                  "cntk.learners.set_default_unit_gain_value", "cntk.learners.IGNORE",
                  "cntk.learners.UnitType"],
           note="CNTK's learners bind unit_gain=default_unit_gain_value() at import, so the "
                "changed default does not reach momentum_sgd(...) without unit_gain")
def unit_gain(C, r):
    """The default unit gain, changed before a learner is made, and restored."""
    before = C.learners.default_unit_gain_value()
    C.learners.set_default_unit_gain_value(False)
    try:
        off = C.learners.default_unit_gain_value()
        res = train(C, r, lambda C, p: C.learners.momentum_sgd(
            p, C.learning_parameter_schedule(0.3), C.momentum_schedule(0.9)), sizes=(4, 3))
    finally:
        C.learners.set_default_unit_gain_value(before)
    res.update({"before": before, "off": off, "IGNORE": C.learners.IGNORE,
                "unit_types": sorted(u.name for u in C.learners.UnitType)})
    return res


# -- reset_learning_rate, counts, momentum by epochs, update by hand -------------------------
_RESET_SIZES = (3, 4, 2, 5, 3, 3, 4)
_RESET_SWEEP_ENDS = (1, 4)


def _counts(learner):
    counts = [learner.total_number_of_samples_seen(),
              learner.total_number_of_minibatches_seen(), learner.total_number_of_sweeps_seen()]
    return [int(c) for c in counts]


def _reset_run(C, r, lr, new_lr, make=None):
    """``sgd`` (or ``make(C, [w], lr)``) on ``times(x, w)`` through a Trainer, minibatches of
    changing size, two of them ending a sweep; the rate reset before the fourth step.  The rate,
    the counts and ``w`` after every step."""
    r.touch("cntk.Learner.reset_learning_rate", "cntk.Learner.learning_rate",
            "cntk.Trainer.train_minibatch")
    x = C.input_variable(2)
    y = C.input_variable(1)
    w = C.parameter((2, 1), init=r.param_value("w", (2, 1)), name="w")
    z = C.times(x, w)
    learner = make(C, [w], lr) if make else C.learners.sgd([w], lr)
    trainer = C.Trainer(z, (C.squared_error(z, y), None), [learner])
    res = {"rates": [learner.learning_rate()], "counts": [], "w": []}
    for step, n in enumerate(_RESET_SIZES):
        if step == 3:
            learner.reset_learning_rate(new_lr)
            res["rate after reset"] = learner.learning_rate()
        trainer.train_minibatch({x: r.randn(n, 2), y: r.randn(n, 1)},
                                is_sweep_end=step in _RESET_SWEEP_ENDS)
        res["rates"].append(learner.learning_rate())
        res["counts"].append(_counts(learner))
        res["w"].append(w.value)
    return res


_RESET_NAMES = ["cntk.learners.sgd", "cntk.Learner.reset_learning_rate",
                "cntk.Learner.learning_rate", "cntk.learning_parameter_schedule"]


@cntk_case(names=_RESET_NAMES,
           note="a per-minibatch list by 5 samples reset after 9 samples: the new list starts "
                "there (its first value at once, its second after 5 more samples)")
def reset_learning_rate__per_minibatch(C, r):
    return _reset_run(C, r, C.learning_parameter_schedule([0.1, 0.01, 0.001], epoch_size=5),
                      C.learning_parameter_schedule([0.05, 0.02, 0.005], epoch_size=5))


@cntk_case(names=_RESET_NAMES[:-1] + ["cntk.learning_parameter_schedule_per_sample"])
def reset_learning_rate__per_sample(C, r):
    return _reset_run(
        C, r, C.learning_parameter_schedule_per_sample([0.02, 0.01, 0.002], epoch_size=5),
        C.learning_parameter_schedule_per_sample([0.03, 0.005], epoch_size=4))


@cntk_case(names=_RESET_NAMES,
           note="schedules per data sweep (no epoch_size) moved on by is_sweep_end: the reset "
                "after the first sweep starts the new list there, so its second value comes "
                "with the second sweep's end; Stadyn kept counting from sweep 0")
def reset_learning_rate__per_sweep(C, r):
    return _reset_run(C, r, C.learning_parameter_schedule([0.1, 0.01, 0.001], 4),
                      C.learning_parameter_schedule([0.05, 0.02, 0.005], 4))


@cntk_case(names=_RESET_NAMES[1:] + ["cntk.learners.momentum_sgd", "cntk.momentum_schedule"],
           note="a per-sample schedule reset to a per-sweep one given per minibatch (and "
                "momentum by epochs of 6 samples, which the reset does not touch): CNTK keeps "
                "the learner's unit, the new rates are per sample; Stadyn used the new unit")
def reset_learning_rate__sample_to_sweep(C, r):
    return _reset_run(
        C, r, C.learning_parameter_schedule_per_sample([0.02, 0.01], epoch_size=5),
        C.learning_parameter_schedule([0.05, 0.02, 0.005]),
        make=lambda C, p, lr: C.learners.momentum_sgd(
            p, lr, C.momentum_schedule([0.9, 0.5, 0.2], epoch_size=6)))


@cntk_case(names=["cntk.learners.momentum_sgd", "cntk.momentum_schedule",
                  "cntk.momentum_schedule_per_sample",
                  "cntk.momentum_as_time_constant_schedule"],
           note="momentum lists by epochs of samples and by data sweeps, on minibatches of "
                "changing size")
def momentum_schedule__epoch_size(C, r):
    lr = C.learning_parameter_schedule(0.2)
    moms = {"by 6 samples": C.momentum_schedule([0.9, 0.5, 0.2], epoch_size=6),
            "by 6 samples, per 4": C.momentum_schedule([0.9, 0.5, 0.2], epoch_size=6,
                                                         minibatch_size=4),
            "per sample by 5": C.momentum_schedule_per_sample([0.95, 0.6], epoch_size=5),
            "time constants by 7": C.momentum_as_time_constant_schedule([20, 3], epoch_size=7),
            "by sweeps": C.momentum_schedule([0.9, 0.5, 0.2])}
    res = {}
    for key in sorted(moms):
        res[key] = _reset_run(C, r, lr, lr, make=lambda C, p, lr: C.learners.momentum_sgd(
            p, lr, moms[key]))["w"]
    return res


@cntk_case(names=["cntk.learners.momentum_sgd",
                  "cntk.learners.sgd", "cntk.Learner.update"],
           note="Learner.update(gradients, training_sample_count[, is_sweep_end]) called by "
                "hand: parameters, the return value and the counts after each call; the rate "
                "reaches 0 after 12 samples (update returns False)")
def learner_update_by_hand(C, r):
    r.touch("cntk.Learner.update")
    w = C.parameter((3, 2), init=r.param_value("w", (3, 2)), name="w")
    b = C.parameter((2,), init=r.param_value("b", (2,)), name="b")
    learners = {
        "momentum per sample": C.learners.momentum_sgd(
            [w, b], C.learning_parameter_schedule_per_sample([0.05, 0.02], epoch_size=6),
            C.momentum_schedule_per_sample(0.9)),
        "sgd by sweeps": C.learners.sgd([w, b], C.learning_parameter_schedule([0.1, 0.03])),
        "sgd to zero": C.learners.sgd([w, b], C.learning_parameter_schedule([0.1, 0.0],
                                                                          epoch_size=12))}
    res = {}
    for key in sorted(learners):
        learner = learners[key]
        out = {"returned": [], "counts": [], "rates": [], "w": [], "b": []}
        for step, n in enumerate((4, 1, 7, 2, 5)):
            grads = {w: r.randn(3, 2) * n, b: r.randn(2) * n}
            out["returned"].append(bool(learner.update(grads, n, step == 1)))
            out["counts"].append(_counts(learner))
            out["rates"].append(learner.learning_rate())
            out["w"].append(w.value)
            out["b"].append(b.value)
        res[key] = out
    return res


@cntk_case(names=["cntk.learners.sgd", "cntk.Learner.reset_learning_rate",
                  "cntk.learning_parameter_schedule",
                  "cntk.learning_parameter_schedule_per_sample"],
           note="CNTK 2.7 keeps the unit of the rate the learner was made with: a schedule "
                "given to reset_learning_rate per sample, per minibatch or per 3 samples is "
                "applied in the old unit; Stadyn used the new schedule's unit")
def reset_learning_rate__units(C, r):
    r.touch("cntk.Learner.reset_learning_rate", "cntk.Learner.update")
    w = C.parameter((2, 1), init=r.param_value("w", (2, 1)), name="w")
    units = {"per minibatch": lambda v: C.learning_parameter_schedule(v),
             "per sample": lambda v: C.learning_parameter_schedule_per_sample(v),
             "per 3": lambda v: C.learning_parameter_schedule(v, minibatch_size=3)}
    res = {}
    for old in sorted(units):
        for new in sorted(units):
            learner = C.learners.sgd([w], units[old](0.02))
            learner.update({w: r.randn(2, 1)}, 4)
            learner.reset_learning_rate(units[new](0.06))
            before = w.value
            learner.update({w: r.randn(2, 1) * 4}, 4)
            res["%s -> %s" % (old, new)] = [learner.learning_rate(), w.value - before]
    return res


@cntk_case(names=["cntk.Learner.reset_learning_rate", "cntk.Learner.update",
                  "cntk.learners.sgd", "cntk.learners.momentum_sgd", "cntk.learners.adam"],
           note="CNTK 2.7 refuses a plain number or a list in reset_learning_rate (ValueError: "
                "a schedule is wanted) and, in update, a gradient of another data type than "
                "the parameter's (RuntimeError; float64 NumPy arrays, integers) or a list "
                "(TypeError), changing nothing; Stadyn took them all")
def learner_refuses_rates_and_gradients(C, r):
    r.touch("cntk.Learner.reset_learning_rate", "cntk.Learner.update")
    w = C.parameter((2, 1), init=r.param_value("w", (2, 1)), name="w")
    makers = [("sgd", lambda: C.learners.sgd([w], C.learning_parameter_schedule(0.5))),
              ("momentum_sgd", lambda: C.learners.momentum_sgd(
                  [w], C.learning_parameter_schedule(0.5), C.momentum_schedule(0.9))),
              ("adam", lambda: C.learners.adam([w], C.learning_parameter_schedule(0.5),
                                               C.momentum_schedule(0.9)))]
    res = {}
    gradient = r.randn(2, 1)
    for name, make in makers:
        learner = make()
        refused = []
        for rate in (0.1, 2, np.float32(0.1), [0.1, 0.2]):
            try:
                learner.reset_learning_rate(rate)
                refused.append("accepted")
            except ValueError as exc:
                refused.append(str(exc))
        res[name + " reset"] = refused + [learner.learning_rate()]
        gradients = [gradient.astype(np.float64), gradient.astype(np.int64),
                     gradient.tolist()] + ([gradient.astype(np.float16)] if name == "sgd" else [])
        before = w.value
        refused = []
        for g in gradients:
            try:
                learner.update({w: g}, 4)
                refused.append("accepted")
            except (RuntimeError, TypeError) as exc:
                refused.append(type(exc).__name__)
        res[name + " update"] = refused
        res[name + " unchanged"] = w.value - before
        learner.update({w: gradient}, 4)
        # (CNTK 2.7's adam counts the updates refused for a float64 or float16 gradient in
        # its bias correction: see learner_refused_update_moves_the_step_count)
        res[name + " after"] = [w.value, learner.total_number_of_samples_seen()]
    return res


def _learner_makers(C, w):
    lr = C.learning_parameter_schedule(0.1)
    return [("sgd", lambda: C.learners.sgd([w], lr)),
            ("momentum_sgd", lambda: C.learners.momentum_sgd([w], lr, C.momentum_schedule(0.9))),
            ("nesterov", lambda: C.learners.nesterov([w], lr, C.momentum_schedule(0.9))),
            ("adam", lambda: C.learners.adam([w], lr, C.momentum_schedule(0.9))),
            ("adam per sample", lambda: C.learners.adam(
                [w], C.learning_parameter_schedule_per_sample(0.1),
                C.momentum_schedule_per_sample(0.9))),
            ("adamax", lambda: C.learners.adam([w], lr, C.momentum_schedule(0.9), adamax=True)),
            ("fsadagrad", lambda: C.learners.fsadagrad([w], lr, C.momentum_schedule(0.9))),
            ("rmsprop", lambda: C.learners.rmsprop([w], lr, 0.9, 1.2, 0.7, 10, 0.001)),
            ("adagrad", lambda: C.learners.adagrad([w], lr))]


@cntk_case(names=["cntk.Learner.update", "cntk.learners.sgd", "cntk.learners.momentum_sgd",
                  "cntk.learners.nesterov", "cntk.learners.adam", "cntk.learners.fsadagrad",
                  "cntk.learners.rmsprop", "cntk.learners.adagrad"],
           note="the training_sample_count Learner.update takes: a Python int (True counts 1); "
                "0 is CNTK's ValueError (an empty minibatch) even once the rate is 0, a "
                "negative count its OverflowError, a float, None or a NumPy integer its "
                "TypeError, nothing updated or counted; Stadyn refused True and took NumPy "
                "integers, with errors of its own class")
def learner_update_sample_counts(C, r):
    r.touch("cntk.Learner.update")
    w = C.parameter((3,), init=r.param_value("w", (3,)), name="w")
    res = {}
    for name, make in _learner_makers(C, w):
        learner = make()
        out = []
        for count in (True, 0, -1, 2.0, 2.5, None, np.int64(2), 3, False, 1):
            try:
                out.append(bool(learner.update({w: r.randn(3)}, count)))
            except (ValueError, TypeError, OverflowError) as exc:
                out.append(type(exc).__name__)
            out.append(_counts(learner)[:2])
        res[name] = out
        res[name + " w"] = w.value
    stopped = C.learners.sgd([w], C.learning_parameter_schedule(0.0))
    out = []
    for count in (0, 1):
        try:
            out.append(bool(stopped.update({w: r.randn(3)}, count)))
        except ValueError as exc:
            out.append(type(exc).__name__)
    res["rate 0"] = out + [_counts(stopped)[:2]]
    return res


@cntk_case(names=["cntk.Learner.update", "cntk.learners.adam", "cntk.learners.fsadagrad",
                  "cntk.learners.rmsprop", "cntk.learners.momentum_sgd"],
           note="CNTK 2.7's learners move their per-update state on before they check the "
                "gradients' data type: after an update refused for a float64 or float16 "
                "gradient (not an integer array or a list, refused before) adam's "
                "bias-correction step, FSAdaGrad's smoothed sample count and RMSProp's first "
                "step are one update further; the parameters and the sample counts are not. "
                "momentum_sgd and nesterov refuse a float16 gradient with a ValueError. "
                "Stadyn's next step was as if nothing had been tried")
def learner_refused_update_moves_the_step_count(C, r):
    r.touch("cntk.Learner.update")
    w = C.parameter((3,), init=r.param_value("w", (3,)), name="w")
    res = {}
    for name, make in _learner_makers(C, w):
        for bad in ("float64", "float64 x3", "float16", "int64", "list"):
            if name == "adagrad" and bad == "float16":
                continue
            learner = make()
            start = w.value
            g = r.randn(3)
            refused = []
            for _ in range(3 if bad.endswith("x3") else 1):
                wrong = g.tolist() if bad == "list" else g.astype(bad.split()[0])
                try:
                    learner.update({w: wrong}, 2)
                    refused.append("accepted")
                except (RuntimeError, ValueError, TypeError) as exc:
                    refused.append(type(exc).__name__)
            steps = []
            for k in range(2):
                learner.update({w: g * (k + 1)}, 2 + k)
                steps.append(w.value)
            key = "%s %s" % (name, bad)
            res[key] = refused + [_counts(learner)[:2]]
            res[key + " steps"] = np.stack(steps)
            w.value = start
    return res


@cntk_case(names=["cntk.learners.UserLearner", "cntk.learners.universal",
                  "cntk.Trainer.train_minibatch"],
           note="a UserLearner's counts stay 0 and its learning_rate() at the schedule's first "
                "value (CNTK's C++ learner never sees its updates); universal's count samples, "
                "minibatches and sweeps; Stadyn counted the UserLearner's updates and gave the "
                "counts as numbers, not methods")
def user_learner_counts(C, r):
    r.touch("cntk.Trainer.train_minibatch")

    class MySgd(C.learners.UserLearner):
        def update(self, gradient_values, training_sample_count, sweep_end):
            eta = self.learning_rate() / training_sample_count
            for p, g in gradient_values.items():
                p.value = p.value - eta * g.asarray()
            return True

    def plain_sgd(parameters, gradients):
        return C.combine([C.assign(p, p - 0.05 * g) for p, g in zip(parameters, gradients)])

    res = {}
    for key in ("user", "universal"):
        x = C.input_variable(2)
        y = C.input_variable(1)
        w = C.parameter((2, 1), init=r.param_value("w", (2, 1)), name="w")
        z = C.times(x, w)
        if key == "user":
            learner = MySgd([w], C.learning_parameter_schedule([0.1, 0.02], epoch_size=4))
        else:
            learner = C.universal(plain_sgd, [w])
        trainer = C.Trainer(z, (C.squared_error(z, y), None), [learner])
        out = {"rates": [], "counts": [], "w": []}
        for step, n in enumerate((3, 2, 4)):
            trainer.train_minibatch({x: r.randn(n, 2), y: r.randn(n, 1)}, is_sweep_end=step == 1)
            out["rates"].append(learner.learning_rate())
            out["counts"].append(_counts(learner))
            out["w"].append(w.value)
        res[key] = out
    return res


@cntk_case(names=["cntk.learners.momentum_sgd", "cntk.Learner.reset_learning_rate",
                  "cntk.io.MinibatchSourceFromData", "cntk.learning_parameter_schedule"],
           note="CNTK_201B's schedule per data sweep driven by a reader's minibatches, the "
                "rate reset mid-training: the new list starts at the sweeps seen then")
def reset_learning_rate__per_sweep_reader(C, r):
    r.touch("cntk.Learner.reset_learning_rate", "cntk.Trainer.train_minibatch")
    x = C.input_variable(2)
    y = C.input_variable(1)
    z = C.layers.Dense(1)(x)
    res = {"parameters": r.set_params(z.parameters)}
    learner = C.momentum_sgd(z.parameters, lr=C.learning_parameter_schedule([0.1, 0.01], 4),
                             momentum=C.momentum_schedule(0.9, 4))
    trainer = C.Trainer(z, (C.squared_error(z, y), None), [learner])
    source = C.io.MinibatchSourceFromData(dict(x=r.randn(6, 2), y=r.randn(6, 1)))
    rates, counts = [], []
    for step in range(8):
        if step == 3:
            learner.reset_learning_rate(C.learning_parameter_schedule([0.05, 0.02, 0.004], 4))
        mb = source.next_minibatch(4)
        rates.append(learner.learning_rate())
        trainer.train_minibatch({x: mb[source.streams.x], y: mb[source.streams.y]})
        counts.append(_counts(learner))
    res["rates"], res["counts"] = rates, counts
    res["W"], res["b"] = z.W.value, z.b.value
    return res


@cntk_case(names=["cntk.learners.sgd", "cntk.Learner.reset_learning_rate",
                  "cntk.learners.IGNORE", "cntk.learning_parameter_schedule",
                  "cntk.learning_parameter_schedule_per_sample"],
           note="reset_learning_rate on learners given minibatch_size= (3, IGNORE) or "
                "use_mean_gradient=True: the learner's unit stays")
def reset_learning_rate__learner_minibatch_size(C, r):
    r.touch("cntk.Learner.reset_learning_rate", "cntk.Learner.update")
    w = C.parameter((2, 1), init=r.param_value("w", (2, 1)), name="w")
    per_sample = C.learning_parameter_schedule_per_sample
    learners = {
        "minibatch_size 3": lambda: C.learners.sgd([w], 0.02, minibatch_size=3),
        "IGNORE": lambda: C.learners.sgd([w], 0.02, minibatch_size=C.learners.IGNORE),
        "mean gradient": lambda: C.learners.sgd([w], per_sample(0.02), use_mean_gradient=True)}
    res = {}
    for key in sorted(learners):
        for new in ("per sample", "per minibatch"):
            learner = learners[key]()
            learner.update({w: r.randn(2, 1)}, 4)
            learner.reset_learning_rate(per_sample(0.06) if new == "per sample"
                                        else C.learning_parameter_schedule(0.06))
            before = w.value
            learner.update({w: r.randn(2, 1) * 4}, 4)
            res["%s -> %s" % (key, new)] = [learner.learning_rate(), w.value - before]
    return res


@cntk_case(names=["cntk.learners.sgd", "cntk.learners.momentum_sgd", "cntk.learners.nesterov",
                  "cntk.learners.adam", "cntk.learners.adagrad", "cntk.learners.adadelta",
                  "cntk.learners.rmsprop", "cntk.learners.fsadagrad", "cntk.learners.universal",
                  "cntk.glorot_uniform", "cntk.parameter", "cntk.cntk_py.reset_random_seed"],
           note="each built-in learner draws a seed as it is made (CNTK's LearnerBase: its "
                "noise injection's), so a parameter made after it takes the next seed: CNTK "
                "301's second transfer model starts from other values than its first")
def learners_draw_a_seed(C, r):
    def value():
        return C.parameter((4, 3), init=C.glorot_uniform()).value
    C.cntk_py.reset_random_seed(0)       # count the auto-selected seeds (the harness fixes one)
    z = C.layers.Dense(2)(C.input_variable(3))
    lr, mm = C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9)
    makers = [("sgd", lambda: C.learners.sgd(z.parameters, lr)),
              ("momentum_sgd", lambda: C.learners.momentum_sgd(
                  z.parameters, lr, mm, l2_regularization_weight=0.0005)),
              ("nesterov", lambda: C.learners.nesterov(z.parameters, lr, mm)),
              ("adam", lambda: C.learners.adam(z.parameters, lr, mm)),
              ("adagrad", lambda: C.learners.adagrad(z.parameters, lr)),
              ("adadelta", lambda: C.learners.adadelta(z.parameters, lr)),
              ("rmsprop", lambda: C.learners.rmsprop(z.parameters, lr, 0.9, 1.1, 0.9, 1.1,
                                                     0.01)),
              ("fsadagrad", lambda: C.learners.fsadagrad(z.parameters, lr, mm)),
              ("universal", lambda: C.learners.universal(
                  lambda ps, gs: C.combine([C.assign(p, p - 0.1 * g) for p, g in zip(ps, gs)]),
                  z.parameters))]
    res = {"first": value()}
    for name, make in makers:
        make()
        res[name] = value()
    return res


_MB_NAMES = ["cntk.Learner.minibatch_size", "cntk.Learner.is_minibatch_size_explicitly_specified",
             "cntk.Learner.ignored_minibatch_size"]


@cntk_case(names=["cntk.learners.sgd", "cntk.learners.adam", "cntk.learners.momentum_sgd"]
           + _MB_NAMES,
           note="a learner's minibatch_size is the one it was made with (0 where none was "
                "given, or IGNORE; a schedule's own is not the learner's)")
def learner_minibatch_size(C, r):
    r.touch(*_MB_NAMES)
    z = C.layers.Dense(2)(C.input_variable(3))
    lr = C.learning_parameter_schedule(0.1)
    made = {"sgd": C.sgd(z.parameters, lr),
            "sgd 32": C.sgd(z.parameters, lr, minibatch_size=32),
            "sgd IGNORE": C.sgd(z.parameters, lr, minibatch_size=C.learners.IGNORE),
            "sgd positional": C.sgd(z.parameters, lr, 0.0, 0.0, 0.0, np.inf, True, None, 8),
            "adam schedule 16": C.adam(z.parameters,
                                       C.learning_parameter_schedule(0.1, minibatch_size=16),
                                       C.momentum_schedule(0.9)),
            "momentum_sgd 4": C.momentum_sgd(z.parameters, lr, C.momentum_schedule(0.9),
                                             minibatch_size=4)}
    return {k: [l.minibatch_size, l.is_minibatch_size_explicitly_specified,
                l.ignored_minibatch_size] for k, l in made.items()}
