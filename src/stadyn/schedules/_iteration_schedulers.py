"""Learning rates by iteration, NNabla's ``learning_rate_scheduler`` classes: each has
``get_learning_rate(iter)`` for the iteration ``iter`` (starting at 0), which a training loop
passes to ``solver.set_learning_rate``.

* :class:`PolynomialScheduler` ``(init_lr, max_iter, power)``:
  ``init_lr * (1 - iter / max_iter) ** power``;
* :class:`CosineScheduler` ``(init_lr, max_iter)``: ``init_lr * (cos(pi iter / max_iter) + 1) / 2``;
* :class:`ExponentialScheduler` ``(init_lr, gamma, iter_interval=1)``:
  ``init_lr * gamma ** (iter // iter_interval)``;
* :class:`StepScheduler` ``(init_lr, gamma, iter_steps)``: ``init_lr`` times ``gamma`` once for
  every step in ``iter_steps`` that ``iter`` has reached;
* :class:`LinearWarmupScheduler` ``(scheduler, warmup_iter)``: ``scheduler``'s rate times
  ``(iter + 1) / warmup_iter`` while ``iter < warmup_iter`` (``warmup_iter <= 0``: none).

The formulas are NNabla 1.39's, past ``max_iter`` too (a cosine rises again, an even power
grows); where NNabla's would be a complex number -- a fractional ``power`` past ``max_iter`` --
:class:`PolynomialScheduler` raises ``ValueError`` instead.  Like NNabla's, a scheduler takes any
length when made: a negative one gives the formula's numbers, and a ``max_iter`` or
``iter_interval`` of 0 is ``ZeroDivisionError`` when a rate is asked for.
"""

from __future__ import annotations

import math
from typing import Sequence

__all__ = ["BaseLearningRateScheduler", "PolynomialScheduler", "CosineScheduler",
           "ExponentialScheduler", "StepScheduler", "LinearWarmupScheduler"]


def _divisor(value: float, what: str, scheduler: str) -> float:
    # NNabla 1.39 takes any length when made and divides by it when asked for a rate: 0 is its
    # ZeroDivisionError then, a negative length its formula's number
    if value == 0:
        raise ZeroDivisionError(f"{scheduler}.get_learning_rate: {what} is 0 and the rate "
                                "divides by it (as in NNabla 1.39)")
    return value


class BaseLearningRateScheduler:
    """A learning rate per iteration; subclasses implement :meth:`get_learning_rate`.

    Example:
        >>> class Halving(BaseLearningRateScheduler):
        ...     def get_learning_rate(self, iter):
        ...         return 1.0 / 2 ** iter
        >>> Halving().get_learning_rate(3)
        0.125
    """

    def get_learning_rate(self, iter: int) -> float:
        """The learning rate at iteration ``iter`` (from 0)."""
        raise NotImplementedError(f"{type(self).__name__} does not define get_learning_rate")


class PolynomialScheduler(BaseLearningRateScheduler):
    """``init_lr * (1 - iter / max_iter) ** power``.

    Example:
        >>> PolynomialScheduler(0.1, 100, 2.0).get_learning_rate(50)
        0.025
    """

    def __init__(self, init_lr: float, max_iter: int, power: float):
        self.init_lr, self.max_iter, self.power = init_lr, max_iter, power

    def get_learning_rate(self, iter: int) -> float:
        base = 1.0 - iter * 1.0 / _divisor(self.max_iter, "max_iter", "PolynomialScheduler")
        if base < 0 and float(self.power) != int(self.power):
            raise ValueError(f"PolynomialScheduler: iteration {iter} is past max_iter="
                             f"{self.max_iter}, where a fractional power ({self.power}) has no "
                             f"real value")
        return self.init_lr * base ** self.power


class CosineScheduler(BaseLearningRateScheduler):
    """``init_lr * (cos(pi iter / max_iter) + 1) / 2``: from ``init_lr`` down to 0 at
    ``max_iter``.

    Example:
        >>> CosineScheduler(0.1, 100).get_learning_rate(50)
        0.05
    """

    def __init__(self, init_lr: float, max_iter: int):
        self.init_lr, self.max_iter = init_lr, max_iter

    def get_learning_rate(self, iter: int) -> float:
        max_iter = _divisor(self.max_iter, "max_iter", "CosineScheduler")
        return self.init_lr * ((math.cos(iter * 1.0 / max_iter * math.pi) + 1.0) * 0.5)


class ExponentialScheduler(BaseLearningRateScheduler):
    """``init_lr * gamma ** (iter // iter_interval)``.

    Example:
        >>> ExponentialScheduler(1.0, 0.5, iter_interval=10).get_learning_rate(25)
        0.25
    """

    def __init__(self, init_lr: float, gamma: float, iter_interval: int = 1):
        self.init_lr, self.gamma, self.iter_interval = init_lr, gamma, iter_interval

    def get_learning_rate(self, iter: int) -> float:
        interval = _divisor(self.iter_interval, "iter_interval", "ExponentialScheduler")
        return self.init_lr * self.gamma ** (iter // interval)


class StepScheduler(BaseLearningRateScheduler):
    """``init_lr`` times ``gamma`` for every step of ``iter_steps`` reached.

    Example:
        >>> s = StepScheduler(1.0, 0.1, [10, 20])
        >>> s.get_learning_rate(9), s.get_learning_rate(10), round(s.get_learning_rate(25), 6)
        (1.0, 0.1, 0.01)
    """

    def __init__(self, init_lr: float, gamma: float, iter_steps: Sequence[int]):
        self.init_lr, self.gamma, self.iter_steps = init_lr, gamma, iter_steps

    def get_learning_rate(self, iter: int) -> float:
        lr = self.init_lr
        for step in self.iter_steps:
            if iter >= step:
                lr *= self.gamma
        return lr


class LinearWarmupScheduler(BaseLearningRateScheduler):
    """``scheduler``'s rate, ramped up linearly over the first ``warmup_iter`` iterations.

    Example:
        >>> w = LinearWarmupScheduler(StepScheduler(0.1, 0.1, []), warmup_iter=4)
        >>> [round(w.get_learning_rate(i), 6) for i in range(5)]
        [0.025, 0.05, 0.075, 0.1, 0.1]
        >>> LinearWarmupScheduler(StepScheduler(0.1, 0.1, []), warmup_iter=0).get_learning_rate(0)
        0.1
    """

    def __init__(self, scheduler: BaseLearningRateScheduler, warmup_iter: int):
        # 0 or a negative length is no warm-up, as in NNabla 1.39 (``iter < warmup_iter``
        # never holds for an iteration from 0)
        self.scheduler, self.warmup_iter = scheduler, warmup_iter

    def get_learning_rate(self, iter: int) -> float:
        lr = self.scheduler.get_learning_rate(iter)
        if iter < self.warmup_iter:
            lr *= (iter + 1) * 1.0 / self.warmup_iter
        return lr
