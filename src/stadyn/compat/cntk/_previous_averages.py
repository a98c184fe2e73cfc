"""The compat Trainer's averages of its last minibatch, as CNTK 2.7 gives them: a RuntimeError
when there was none, or it had no samples (Trainer.cpp ``PreviousMinibatchLossAverage``,
``PreviousMinibatchEvaluationAverage``), where Stadyn's native Trainer gives NaN (loss) or
None (metric).  On several workers the count is the workers' sum, so a worker whose own share
was empty still gets the average of the others' samples; the step no worker had samples in
(the end of a distributed training session) is refused on every worker."""

from __future__ import annotations

__all__ = ["PreviousAverages"]

_NONE_BEFORE = "There was no preceding call to TrainMinibatch or the minibatch was empty."


class PreviousAverages:
    """``previous_minibatch_loss_average`` and ``previous_minibatch_evaluation_average`` of a
    compat Trainer (its ``_metric``: the metric Function, or None)."""

    _metric = None

    def _refuse_no_samples(self) -> None:
        if not self.previous_minibatch_sample_count:
            raise RuntimeError(_NONE_BEFORE)

    @property
    def previous_minibatch_loss_average(self) -> float:
        """The mean loss per sample of the last minibatch; before any, or after one of no
        samples (on several workers: no worker's), CNTK 2.7's RuntimeError.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> x = C.input_variable(2)
            >>> z = C.layers.Dense(1)(x)
            >>> t = C.Trainer(z, C.squared_error(z, C.input_variable(1)),
            ...               [C.sgd(z.parameters, 0.1)])
            >>> t.previous_minibatch_loss_average
            Traceback (most recent call last):
            RuntimeError: There was no preceding call to TrainMinibatch or the minibatch was empty.
        """
        self._refuse_no_samples()
        return super().previous_minibatch_loss_average

    @property
    def previous_minibatch_evaluation_average(self) -> float:
        """The mean metric per sample of the last minibatch; a Trainer made without a metric
        raises ValueError, as CNTK 2.7's (``Cannot get evaluation criterion value when no
        evaluation function was specified``), and one with a metric but no minibatch of
        samples before, the RuntimeError of :attr:`previous_minibatch_loss_average`.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> x = C.input_variable(2)
            >>> z = C.layers.Dense(1)(x)
            >>> y = C.input_variable(1)
            >>> t = C.Trainer(z, C.squared_error(z, y), [C.sgd(z.parameters, 0.1)])
            >>> t.previous_minibatch_evaluation_average  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ValueError: Trainer::PreviousMinibatchEvaluationAverage: Cannot get evaluation ...
        """
        if self._metric is None:
            raise ValueError(
                "Trainer::PreviousMinibatchEvaluationAverage: Cannot get evaluation criterion "
                "value when no evaluation function was specified during 'this' trainer's "
                "construction")
        self._refuse_no_samples()
        return super().previous_minibatch_evaluation_average
