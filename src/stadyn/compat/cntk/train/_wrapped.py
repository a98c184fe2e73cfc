"""The optimizer protocol (:class:`stadyn.solvers.Optimizer`) forwarded to a wrapped learner,
which CNTK's distributed learners (``distributed.py``) build on."""

from __future__ import annotations

from ....solvers import Optimizer


class _WrappedOptimizer(Optimizer):
    """The optimizer protocol (:class:`stadyn.solvers.Optimizer`) of ``self._learner``, but for
    :meth:`step`, which is the wrapper's ``_shared_update`` (not CNTK names: kept off the
    public class)."""

    def step(self, sample_count: int) -> bool:
        return self._shared_update(sample_count)

    @property
    def name(self) -> str:
        return self._learner.name

    def named_parameters(self):
        return self._learner.named_parameters()

    def zero_grad(self) -> None:
        self._learner.zero_grad()

    def learning_rate(self) -> float:
        return self._learner.learning_rate()

    def resolve_epoch_size(self, samples_per_sweep: int) -> None:
        self._learner.resolve_epoch_size(samples_per_sweep)

    def end_sweep(self) -> None:
        self._learner.end_sweep()

    def state_names(self):
        return self._learner.state_names()

    def state_tensors(self, names):
        return self._learner.state_tensors(names)

    def step_scalars(self, names, sample_count):
        return self._learner.step_scalars(names, sample_count)

    def apply_step(self, *args, **kwargs):
        return self._learner.apply_step(*args, **kwargs)

    def finish_step(self, *args, **kwargs):
        return self._learner.finish_step(*args, **kwargs)

    @property
    def fused_update(self) -> bool:
        return self._learner.fused_update

    def state_dict(self):
        return self._learner.state_dict()

    def check_state_dict(self, state) -> None:
        self._learner.check_state_dict(state)

    def load_state_dict(self, state) -> None:
        self._learner.load_state_dict(state)
