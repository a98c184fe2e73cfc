"""Gaussian noise injection and CNTK 2.7's checkpoints (its ``learner_test.py``,
``test_noise_injection_with_checkpointing``): a learner restored from another's checkpoint draws
the same noise as that one did from the same point, two learners draw different noise, and
the ``noise_injection_seed`` a checkpoint keeps counts one a parameter per noisy update.
CNTK 2.7 draws each parameter's noise from an engine seeded with that seed (``Learner.cpp:
176-180``); run on it, the seed of a learner of two parameters moves by 2 an update, and a
second learner made after it starts one above it (the noise values themselves are Boost's
normal over ``std::mt19937_64``, not drawn here: see docs/learners.md)."""

from __future__ import annotations

import numpy as np

import stadyn.compat.cntk as C


def _learner(params):
    return C.momentum_sgd(params, C.learning_parameter_schedule_per_sample(0.5),
                          C.momentum_schedule(0.99), gaussian_noise_injection_std_dev=0.5)


def test_a_restored_learner_draws_the_noise_of_the_one_checkpointed():
    ws = [C.parameter(shape=(4, 5), init=C.initializer.glorot_uniform(seed=123))
          for _ in range(3)]
    learners = [_learner([w]) for w in ws]
    rng = np.random.default_rng(0)
    for _ in range(3):
        checkpoint = learners[0].create_checkpoint()
        v = rng.random((4, 5), dtype=np.float32)
        learners[0].update({ws[0]: v}, 1)
        learners[1].update({ws[1]: v}, 1)
        assert not np.allclose(ws[0].value, ws[1].value)
        learners[2].restore_from_checkpoint(checkpoint)
        learners[2].update({ws[2]: v}, 1)
        np.testing.assert_array_equal(ws[0].value, ws[2].value)


def test_the_seed_counts_one_a_parameter_per_noisy_update_as_cntk():
    a, b = C.parameter(shape=(2,), init=0.0), C.parameter(shape=(3,), init=0.0)
    noisy = _learner([a, b])
    seed = noisy.create_checkpoint()["noise_injection_seed"]
    noisy.update({a: np.ones(2, np.float32), b: np.ones(3, np.float32)}, 1)
    assert noisy.create_checkpoint()["noise_injection_seed"] - seed == 2      # CNTK 2.7: 2
