"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (fortieth round): the last digits of
every learner's float32 and float64 update.  Each case runs a learner 5 updates over a (10, 61)
parameter with fixed gradients (``Learner.update``, minibatches of 4, 7, 3, 5 and 6 samples)
in several configurations (plain, L2, clipping by truncation, a reference minibatch size, a rate and
momenta per sample; unit gain on and off in separate cases) and compares the parameter after
the first and the last update bit for bit (``rtol=0, atol=0``).  CNTK 2.7's CPU learners are
C++ float loops and axpys (Source/Math/CPUMatrixImpl.h, Matrix.cpp); Stadyn's torch updates
fused ``w + a g`` into one rounding, took torch's float32 ``sqrt`` (one unit off for about a
fifth of the values) and some scalars in double, so 10 to 50 % of the values differed in the
last bit after 5 updates (src/stadyn/solvers/_cntk_cpu.py now does CNTK's float and double
arithmetic in CNTK's order).

Clipping by the gradient's norm is left out: CNTK sums the squares in float over OpenMP
threads (CPUMatrix::FrobeniusNorm), so its last bit depends on the machine's core count."""

import functools

import numpy as np

from compat_harness import cntk_case

SIZES = (4, 7, 3, 5, 6)
L = "cntk.learners."


def _steps(C, r, make, dtype=np.float32):
    """The parameter after the first and the last of 5 updates of ``make(C, [p])`` with fixed
    gradients (a (10, 61) parameter: 610 values, not a multiple of four, so that Adagrad's
    four-way unrolled sum has a tail)."""
    w0 = (r.randn(10, 61) * 0.5).astype(dtype)
    grads = [(r.randn(10, 61) * (0.2 + i)).astype(dtype) for i in range(len(SIZES))]
    for g in grads:
        g[0, :10] = 0          # zero gradients: CNTK's FSAdaGrad and RMSProp treat them apart
    p = C.parameter((10, 61), init=w0, dtype=dtype)
    learner = make(C, [p])
    res = {}
    for step, (g, n) in enumerate(zip(grads, SIZES)):
        learner.update({p: g}, n)
        if step in (0, len(SIZES) - 1):
            res["w%d" % step] = np.array(p.value, dtype=dtype)
    r.touch("cntk.learners.Learner.update", "cntk.Parameter.value")
    return res


_OPTIONS = [("", {}), ("l2", dict(l2_regularization_weight=0.01)),
            ("clip", dict(gradient_clipping_threshold_per_sample=0.1)),
            ("minibatch_size", dict(minibatch_size=8))]


def _variants(family, make, names, momentum=True):
    """One case running ``make(C, params, lr, **options)`` in every configuration of
    :data:`_OPTIONS` with a rate per minibatch, and with a rate (and momenta) per sample
    (``momentum``: the learner takes a momentum schedule)."""
    name = "learner_digits__" + family

    def fn(C, r, np):
        res = {}
        for label, kw in _OPTIONS:
            def plain(C, p, kw=kw):
                return make(C, p, C.learning_parameter_schedule(0.05), **kw)
            for k, v in _steps(C, r, plain).items():
                res[(label + " " + k).strip()] = v

        def per_sample(C, p):
            return make(C, p, C.learning_parameter_schedule_per_sample(0.01), per_sample=True)
        for k, v in _steps(C, r, per_sample).items():
            res["per_sample " + k] = v
        return res
    fn.__name__ = name
    schedules = ["cntk.learning_parameter_schedule", "cntk.learning_parameter_schedule_per_sample"]
    if momentum:
        schedules += ["cntk.momentum_schedule", "cntk.momentum_schedule_per_sample"]
    cntk_case(name=name, names=names + schedules, rtol=0, atol=0,
              note="the parameter after the first and fifth updates, bit for bit, plain, with "
                   "L2, clipping by truncation, a reference minibatch size, and a rate per "
                   "sample (module docstring)")(fn)


def _momentum(C, per_sample):
    return C.momentum_schedule_per_sample(0.98) if per_sample else C.momentum_schedule(0.9)


def _sgd(C, p, lr, per_sample=False, **kw):
    return C.learners.sgd(p, lr, **kw)


def _momentum_sgd(C, p, lr, per_sample=False, unit_gain=True, **kw):
    return C.learners.momentum_sgd(p, lr, _momentum(C, per_sample), unit_gain=unit_gain, **kw)


def _nesterov(C, p, lr, per_sample=False, unit_gain=True, **kw):
    return C.learners.nesterov(p, lr, _momentum(C, per_sample), unit_gain=unit_gain, **kw)


def _adam(C, p, lr, per_sample=False, unit_gain=True, adamax=False, **kw):
    vm = {"variance_momentum": C.momentum_schedule_per_sample(0.999)} if per_sample else {}
    kw.update(vm)
    return C.learners.adam(p, lr, _momentum(C, per_sample), unit_gain=unit_gain,
                           adamax=adamax, **kw)


def _fsadagrad(C, p, lr, per_sample=False, unit_gain=True, **kw):
    return C.learners.fsadagrad(p, lr, _momentum(C, per_sample), unit_gain=unit_gain, **kw)


def _adagrad(C, p, lr, per_sample=False, **kw):
    return C.learners.adagrad(p, lr, **kw)


def _adadelta(C, p, lr, per_sample=False, **kw):
    return C.learners.adadelta(p, lr, **kw)


def _rmsprop(C, p, lr, per_sample=False, **kw):
    return C.learners.rmsprop(p, lr, 0.95, 1.2, 0.7, 10.0, 0.001, **kw)


_variants("sgd", _sgd, [L + "sgd"], momentum=False)
_variants("momentum_sgd", _momentum_sgd, [L + "momentum_sgd"])
_variants("momentum_sgd__classic", functools.partial(_momentum_sgd, unit_gain=False),
          [L + "momentum_sgd"])
_variants("nesterov", _nesterov, [L + "nesterov"])
_variants("nesterov__classic", functools.partial(_nesterov, unit_gain=False),
          [L + "nesterov"])
_variants("adam", _adam, [L + "adam"])
_variants("adam__classic", functools.partial(_adam, unit_gain=False), [L + "adam"])
_variants("adamax", functools.partial(_adam, adamax=True), [L + "adam"])
_variants("fsadagrad", _fsadagrad, [L + "fsadagrad"])
_variants("fsadagrad__classic", functools.partial(_fsadagrad, unit_gain=False),
          [L + "fsadagrad"])
_variants("adagrad", _adagrad, [L + "adagrad"], momentum=False)
_variants("adagrad__no_average", functools.partial(_adagrad, need_ave_multiplier=False),
          [L + "adagrad"], momentum=False)
_variants("adadelta", _adadelta, [L + "adadelta"], momentum=False)
_variants("rmsprop", _rmsprop, [L + "rmsprop"], momentum=False)
_variants("rmsprop__no_average", functools.partial(_rmsprop, need_ave_multiplier=False),
          [L + "rmsprop"], momentum=False)


@cntk_case(names=[L + "fsadagrad", L + "adadelta", "cntk.momentum_schedule"], rtol=0, atol=0,
           note="FSAdaGrad without momentum (its step is the normalised gradient itself) and "
                "AdaDelta with its defaults (rate 1 per sample, rho 0.95, epsilon 1e-8) and "
                "with rho 0.9, epsilon 1e-6: 5 updates bit for bit")
def learner_digits__fsadagrad_no_momentum_and_adadelta_options(C, r, np):
    res = {}
    for key, make in [
            ("fsadagrad", lambda C, p: C.learners.fsadagrad(
                p, C.learning_parameter_schedule(0.05), C.momentum_schedule(0.0))),
            ("adadelta default", lambda C, p: C.learners.adadelta(p)),
            ("adadelta rho", lambda C, p: C.learners.adadelta(
                p, C.learning_parameter_schedule_per_sample(0.01), rho=0.9, epsilon=1e-6))]:
        for k, v in _steps(C, r, make).items():
            res[key + " " + k] = v
    return res


_FAMILIES = [("sgd", _sgd), ("momentum_sgd", _momentum_sgd), ("nesterov", _nesterov),
             ("adam", _adam), ("adamax", functools.partial(_adam, adamax=True)),
             ("fsadagrad", _fsadagrad), ("adagrad", _adagrad), ("adadelta", _adadelta),
             ("rmsprop", _rmsprop)]


@cntk_case(names=[L + k for k in ("sgd", "momentum_sgd", "nesterov", "adam", "fsadagrad",
                                  "adagrad", "adadelta", "rmsprop")]
           + ["cntk.learning_parameter_schedule", "cntk.momentum_schedule"], rtol=0, atol=0,
           note="float64 parameters: CNTK's double kernels (the same loops in double, but its "
                "float literals: AdaGrad's floor 1e-16f, RMSProp's 1e-6f), bit for bit after "
                "the first and fifth updates, plain and with L2 (Stadyn's torch path differed "
                "in the last bit, RMSProp by up to 6e-11 from the floor)")
def learner_digits__float64(C, r, np):
    res = {}
    for family, make in _FAMILIES:
        for label, kw in _OPTIONS[:2]:
            def plain(C, p, make=make, kw=kw):
                return make(C, p, C.learning_parameter_schedule(0.05), **kw)
            for k, v in _steps(C, r, plain, np.float64).items():
                res[" ".join(x for x in (family, label, k) if x)] = v
    return res


@cntk_case(names=[L + k for k in ("sgd", "momentum_sgd", "nesterov", "adam", "fsadagrad",
                                  "adagrad", "adadelta", "rmsprop")]
           + ["cntk.learning_parameter_schedule", "cntk.momentum_schedule"], rtol=0, atol=0,
           note="one learner over three parameters of 610, 7 and 15 values (AdaGrad's and "
                "RMSProp's means are per parameter), bit for bit after the first and fifth "
                "updates")
def learner_digits__three_parameters(C, r, np):
    shapes = [(10, 61), (7,), (3, 5)]
    res = {}
    for family, make in _FAMILIES:
        ws = [r.randn(*s) * 0.5 for s in shapes]
        ps = [C.parameter(s, init=w) for s, w in zip(shapes, ws)]
        learner = make(C, ps, C.learning_parameter_schedule(0.05))
        for step, n in enumerate(SIZES):
            learner.update(dict((p, r.randn(*s) * (0.2 + step)) for p, s in zip(ps, shapes)), n)
            if step in (0, len(SIZES) - 1):
                for k, p in enumerate(ps):
                    res["%s p%d w%d" % (family, k, step)] = np.array(p.value)
    r.touch("cntk.learners.Learner.update", "cntk.Parameter.value")
    return res
