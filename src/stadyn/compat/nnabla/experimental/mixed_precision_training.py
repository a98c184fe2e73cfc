"""``nnabla.experimental.mixed_precision_training``: ``DynamicLossScalingUpdater``, the
training step with a dynamic loss scale that NNabla 1.39's mixed-precision recipes call in
place of ``zero_grad``/``forward``/``backward``/``update``.

One ``update()`` zeroes the gradients, runs ``accum_grad`` times the data feeder, the loss's
forward and a backward seeded with the scale, all-reduces ``grads`` through ``comm`` where
both are given, then checks the gradients: with an infinity or NaN among them it divides the
scale by ``scaling_factor``, restarts its count of good steps and runs the step again (at
most 100 times in a row, then gives the step up, leaving the parameters as they were);
otherwise it divides the gradients by the scale, applies ``weight_decay`` where given, updates,
and multiplies the scale by ``scaling_factor`` once more than ``N`` good steps have run since
the last change.  (NNabla 1.39's ``mixed_precision_training.py``; case
``nnabla_user_28.user28_mixed_precision_loss_scaling``.)

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn
    >>> import stadyn.compat.nnabla.functions as F
    >>> import stadyn.compat.nnabla.solvers as S
    >>> from stadyn.compat.nnabla.experimental.mixed_precision_training import (
    ...     DynamicLossScalingUpdater)
    >>> w = nn.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
    >>> loss = F.sum(w * w)
    >>> solver = S.Sgd(0.25)
    >>> solver.set_parameters({"w": w})
    >>> updater = DynamicLossScalingUpdater(solver, loss, data_feeder=lambda: None, N=0)
    >>> updater.update()
    >>> w.d.tolist(), updater.scale
    ([0.5, 0.5], 8.0)
    >>> updater.update()
    >>> w.d.tolist(), updater.scale
    ([0.25, 0.25], 16.0)
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["DynamicLossScalingUpdater"]

#: How many times in a row a step with infinite or NaN gradients is retried at a smaller scale.
_MAX_RETRIES = 100


class DynamicLossScalingUpdater:
    """A training step with a dynamic loss scale (NNabla 1.39's class of the same name).

    Its arguments are kept as attributes of the same names (``solver``, ``loss``,
    ``data_feeder``, ``scale``, ``scaling_factor``, ``N``, ``clear_buffer``, ``accum_grad``,
    ``weight_decay``, ``comm``, ``grads``), which a program may change between steps.

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn
        >>> import stadyn.compat.nnabla.functions as F
        >>> import stadyn.compat.nnabla.solvers as S
        >>> w = nn.Variable.from_numpy_array(np.ones(1, np.float32), need_grad=True)
        >>> solver = S.Sgd(0.5)
        >>> solver.set_parameters({"w": w})
        >>> updater = DynamicLossScalingUpdater(solver, F.sum(w * 3.0), lambda: None)
        >>> updater.update()
        >>> w.d.tolist(), updater.scale
        ([-0.5], 8.0)
    """

    def __init__(self, solver: Any, loss: Any, data_feeder: Callable = lambda x: x,
                 scale: float = 8.0, scaling_factor: float = 2.0, N: int = 2000,
                 clear_buffer: bool = True, accum_grad: int = 1, weight_decay: Any = None,
                 comm: Any = None, grads: Any = None) -> None:
        self.solver = solver
        self.loss = loss
        self.data_feeder = data_feeder
        self.scale = scale
        self.scaling_factor = scaling_factor
        self.N = N
        self.clear_buffer = clear_buffer
        self.accum_grad = accum_grad
        self.weight_decay = weight_decay
        self.comm = comm
        self.grads = [] if grads is None else grads
        self._good_steps = 0
        self._retries = 0

    def update(self) -> None:
        """One training step: zero_grad, (feed data, forward, scaled backward) ``accum_grad``
        times, all-reduce, then the update, or a retry at a smaller scale.

        Example:
            >>> import numpy as np
            >>> import stadyn.compat.nnabla as nn
            >>> import stadyn.compat.nnabla.functions as F
            >>> import stadyn.compat.nnabla.solvers as S
            >>> w = nn.Variable.from_numpy_array(np.ones(1, np.float32), need_grad=True)
            >>> solver = S.Sgd(1.0)
            >>> solver.set_parameters({"w": w})
            >>> DynamicLossScalingUpdater(solver, F.sum(w * 2.0), lambda: None).update()
            >>> w.d.tolist()
            [-1.0]
        """
        while True:
            self.solver.zero_grad()
            for _ in range(self.accum_grad):
                self.data_feeder()
                self.loss.forward(clear_no_need_grad=self.clear_buffer)
                self.loss.backward(self.scale, clear_buffer=self.clear_buffer)
            if self.comm and len(self.grads) != 0:
                self.comm.all_reduce(self.grads, division=False, inplace=False)
            if not self.solver.check_inf_or_nan_grad():
                break
            self.scale /= self.scaling_factor
            self._good_steps = 0
            self._retries += 1
            if self._retries > _MAX_RETRIES:
                self._retries = 0
                return
        self._retries = 0
        self.solver.scale_grad(1.0 / self.scale)
        if self.weight_decay is not None:
            self.solver.weight_decay(self.weight_decay)
        self.solver.update()
        if self._good_steps > self.N:
            self.scale *= self.scaling_factor
            self._good_steps = 0
        self._good_steps += 1
