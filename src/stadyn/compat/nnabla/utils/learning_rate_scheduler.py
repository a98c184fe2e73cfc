"""``nnabla.utils.learning_rate_scheduler`` on Stadyn (:mod:`stadyn.schedules`)."""

from ....schedules import (BaseLearningRateScheduler, CosineScheduler, ExponentialScheduler,
                           LinearWarmupScheduler, PolynomialScheduler, StepScheduler)

__all__ = ["BaseLearningRateScheduler", "PolynomialScheduler", "CosineScheduler",
           "ExponentialScheduler", "StepScheduler", "LinearWarmupScheduler"]
