"""CNTK 2.7's schedules looked up: ``schedule[count]`` counts in the schedule's units (samples
given an ``epoch_size``; data sweeps without one)."""

from compat_harness import cntk_case


@cntk_case(names=["cntk.learners.momentum_schedule", "cntk.learners.learning_parameter_schedule",
                  "cntk.learners.learning_parameter_schedule_per_sample",
                  "cntk.learners.momentum_schedule_per_sample",
                  "cntk.learners.momentum_as_time_constant_schedule",
                  "cntk.learners.learning_rate_schedule",
                  "cntk.learners.training_parameter_schedule"],
           note="a schedule given no epoch_size is one per data sweep; its schedule[k] is the "
                "value after k sweeps (CNTK's operator[] counts in the schedule's units). "
                "Stadyn refused the lookup until a learner told it the sweep's size")
def schedules_per_sweep_looked_up(C, r):
    made = {
        "momentum list": C.momentum_schedule([0.9, 0.5]),
        "momentum pairs": C.momentum_schedule([(2, 0.9), (1, 0.5)]),
        "momentum docstring": C.momentum_schedule([(999, 0.99), (888, 0.88), (0, 0.77)]),
        "time constants": C.momentum_as_time_constant_schedule([100, 200]),
        "per sample momentum": C.momentum_schedule_per_sample([0.9, 0.5]),
        "learning parameters": C.learning_parameter_schedule([0.9, 0.5], minibatch_size=4),
        "per sample": C.learning_parameter_schedule_per_sample([(3, 0.2), 0.1]),
        "learning rate": C.learning_rate_schedule([0.9, 0.5], C.UnitType.sample),
        "training parameter": C.training_parameter_schedule([0.3, 0.2, 0.1]),
        "with epoch size": C.momentum_schedule([0.9, 0.5], epoch_size=3),
    }
    return dict((key, [float(s[k]) for k in (0, 1, 2, 3, 5, 998, 999, 1886, 1887, 10 ** 6)])
                for key, s in made.items())
