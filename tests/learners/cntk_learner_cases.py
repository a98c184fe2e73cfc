"""Learner cases run on real CNTK 2.7 (``make_cntk_learner_refs.py``) and on ``stadyn.learners``
(``test_learners_vs_cntk.py``): the same source, given the learner module ``L`` and the schedule
module ``S`` (both ``cntk.learners`` on the CNTK side; ``stadyn.learners`` / ``stadyn.schedules``
here) and the list of parameters.

Each case: (name, minibatch sizes of its steps, factory).  The gradients fed to a step are the
gradient *summed* over its minibatch, given directly to the learner (CNTK:
``Learner.update(gradients, M)``; Stadyn: ``Variable.grad`` then ``Learner.update(M)``).

Parses under Python 3.6 (CNTK 2.7's interpreter).
"""

SHAPES = (("a", (3,)), ("b", (2, 4)), ("c", (2, 3, 2)))
STEPS = 5

CASES = [
    # tests/learners/test_learners.py used to say "probed on CNTK 2.7" for this one
    ("momentum_time_constant_600", [64] * 5, lambda L, S, p: L.momentum_sgd(
        p, S.learning_rate_schedule(0.01, unit=S.UnitType.sample),
        S.momentum_as_time_constant_schedule(600))),
    ("momentum_time_constant_changing_sizes", [64, 17, 100, 3, 64], lambda L, S, p:
        L.momentum_sgd(p, S.learning_parameter_schedule_per_sample(0.01),
                       S.momentum_as_time_constant_schedule(600))),
    ("momentum_time_constant_no_unit_gain", [64, 17, 100, 3, 64], lambda L, S, p:
        L.momentum_sgd(p, S.learning_parameter_schedule_per_sample(0.01),
                       S.momentum_as_time_constant_schedule(600), unit_gain=False)),
    ("momentum_reference_minibatch_32", [32, 8, 50, 32, 1], lambda L, S, p:
        L.momentum_sgd(p, 0.1, S.momentum_schedule(0.9, minibatch_size=32))),
    ("momentum_per_sample", [32, 8, 50, 32, 1], lambda L, S, p:
        L.momentum_sgd(p, 0.1, S.momentum_schedule_per_sample(0.99))),
    ("nesterov", [4, 2, 5, 3, 4], lambda L, S, p:
        L.nesterov(p, S.learning_parameter_schedule(0.3), S.momentum_schedule(0.8))),
    ("sgd_learner_minibatch_size", [8, 3, 8, 3, 1], lambda L, S, p:
        L.sgd(p, 0.5, minibatch_size=2)),
    ("sgd_schedule_reference_10_learner_4", [8, 3, 8, 3, 1], lambda L, S, p:
        L.sgd(p, S.learning_parameter_schedule(0.5, minibatch_size=10), minibatch_size=4)),
    ("sgd_use_mean_gradient", [8, 3, 8, 3, 1], lambda L, S, p:
        L.sgd(p, S.learning_parameter_schedule_per_sample(0.5), use_mean_gradient=True)),
    ("sgd_minibatch_size_ignore", [8, 3, 8, 3, 1], lambda L, S, p:
        L.sgd(p, 0.5, minibatch_size=S.IGNORE)),
    ("sgd_l1_l2_clipping", [4, 2, 5, 3, 4], lambda L, S, p:
        L.sgd(p, S.learning_parameter_schedule(0.5), l1_regularization_weight=0.05,
              l2_regularization_weight=0.1, gradient_clipping_threshold_per_sample=0.2,
              gradient_clipping_with_truncation=True)),
    ("sgd_clipping_by_norm", [4, 2, 5, 3, 4], lambda L, S, p:
        L.sgd(p, S.learning_parameter_schedule(0.5), gradient_clipping_threshold_per_sample=0.3,
              gradient_clipping_with_truncation=False)),
    ("adam_variance_momentum", [4, 2, 5, 3, 4], lambda L, S, p:
        L.adam(p, S.learning_parameter_schedule(0.1), S.momentum_schedule(0.8),
               variance_momentum=S.momentum_schedule(0.99), epsilon=1e-4)),
    ("adamax", [4, 2, 5, 3, 4], lambda L, S, p:
        L.adam(p, S.learning_parameter_schedule(0.1), S.momentum_schedule(0.9),
               variance_momentum=S.momentum_schedule(0.99), adamax=True)),
    ("fsadagrad_variance_momentum", [4, 2, 5, 3, 4], lambda L, S, p:
        L.fsadagrad(p, S.learning_parameter_schedule(0.1), S.momentum_schedule(0.9),
                    variance_momentum=S.momentum_schedule(0.99))),
    ("adagrad", [4, 2, 5, 3, 4], lambda L, S, p:
        L.adagrad(p, S.learning_parameter_schedule(0.1))),
    ("adagrad_no_ave_multiplier", [4, 2, 5, 3, 4], lambda L, S, p:
        L.adagrad(p, S.learning_parameter_schedule(0.1), need_ave_multiplier=False)),
    ("adadelta", [4, 2, 5, 3, 4], lambda L, S, p:
        L.adadelta(p, S.learning_parameter_schedule(1.0), rho=0.9, epsilon=1e-6)),
    ("rmsprop", [4, 2, 5, 3, 4], lambda L, S, p:
        L.rmsprop(p, S.learning_parameter_schedule(0.01), gamma=0.9, inc=1.2, dec=0.7,
                  max=2.0, min=0.1)),
    # regularisation on every learner (l1 and l2 of different strength, so swapping them shows)
    ("momentum_sgd_l1_l2", [4, 2, 5, 3, 4], lambda L, S, p:
        L.momentum_sgd(p, S.learning_parameter_schedule(0.3), S.momentum_schedule(0.9),
                       l1_regularization_weight=0.02, l2_regularization_weight=0.2)),
    ("nesterov_l1_l2", [4, 2, 5, 3, 4], lambda L, S, p:
        L.nesterov(p, S.learning_parameter_schedule(0.3), S.momentum_schedule(0.8),
                   l1_regularization_weight=0.02, l2_regularization_weight=0.2)),
    ("adam_l1_l2", [4, 2, 5, 3, 4], lambda L, S, p:
        L.adam(p, S.learning_parameter_schedule(0.1), S.momentum_schedule(0.8),
               variance_momentum=S.momentum_schedule(0.99), l1_regularization_weight=0.02,
               l2_regularization_weight=0.2)),
    ("fsadagrad_l1_l2", [4, 2, 5, 3, 4], lambda L, S, p:
        L.fsadagrad(p, S.learning_parameter_schedule(0.1), S.momentum_schedule(0.9),
                    variance_momentum=S.momentum_schedule(0.99), l1_regularization_weight=0.02,
                    l2_regularization_weight=0.2)),
    ("adagrad_l1_l2", [4, 2, 5, 3, 4], lambda L, S, p:
        L.adagrad(p, S.learning_parameter_schedule(0.1), l1_regularization_weight=0.02,
                  l2_regularization_weight=0.2)),
    ("adadelta_l1_l2", [4, 2, 5, 3, 4], lambda L, S, p:
        L.adadelta(p, S.learning_parameter_schedule(1.0), rho=0.9, epsilon=1e-6,
                   l1_regularization_weight=0.02, l2_regularization_weight=0.2)),
    ("rmsprop_l1_l2", [4, 2, 5, 3, 4], lambda L, S, p:
        L.rmsprop(p, S.learning_parameter_schedule(0.01), gamma=0.9, inc=1.2, dec=0.7,
                  max=2.0, min=0.1, l1_regularization_weight=0.02,
                  l2_regularization_weight=0.2)),
]


def values(seed, scale=1.0):
    """Seeded float64 arrays, one per shape (the generator stores them; the test reads them)."""
    import numpy as np
    r = np.random.RandomState(seed)
    return dict((k, r.normal(size=s) * scale) for k, s in SHAPES)
