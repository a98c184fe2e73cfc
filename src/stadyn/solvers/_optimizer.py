"""The optimizer protocol: what a Trainer and a compiled training step drive.

NNabla's solvers (:class:`~stadyn.solvers.Solver`), CNTK's learners
(:class:`~stadyn.learners.Learner`) and :class:`~stadyn.schedules.ScheduledSolver` all
implement :class:`Optimizer`, so :class:`~stadyn.train.Trainer` and
:func:`~stadyn.compile_step` hold any of them the same way and never look inside one.

One training step is three calls, which an eager :meth:`Optimizer.step` makes itself and a
compiled step makes around its program:

1. :meth:`~Optimizer.step_scalars` — this step's values that may change between steps
   (learning rates, bias-corrected step sizes, scheduled values), looked up without changing
   anything; a compiled program takes them as 0-d tensors, so a schedule never recompiles it;
2. :meth:`~Optimizer.apply_step` — the maths only: a function of tensors and those scalars,
   which a compiled step traces into its program (or runs right after it);
3. :meth:`~Optimizer.finish_step` — the bookkeeping of a step taken: step counts, samples seen,
   schedule positions.
"""

from __future__ import annotations

from typing import Any, Mapping

import torch

from ..graph import Variable, release_grads

__all__ = ["Optimizer"]


class Optimizer:
    """Base class of everything that updates parameters from their gradients.

    Subclasses implement :meth:`named_parameters`, :meth:`step`, :meth:`learning_rate`, the
    three parts of a step (:meth:`step_scalars`, :meth:`apply_step`, :meth:`finish_step`),
    :meth:`state_tensors` and the state methods.

    Example:
        >>> import numpy as np, torch, stadyn as sd, stadyn.solvers as S
        >>> from stadyn.learners import sgd
        >>> w = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
        >>> isinstance(S.Sgd(), S.Optimizer), isinstance(sgd([w], 0.1), S.Optimizer)
        (True, True)
        >>> solver = S.Sgd(lr=0.5); solver.set_parameters({"w": w})
        >>> w.grad = torch.tensor([1.0, 1.0])
        >>> solver.step(4), w.d                 # the sample count: an NNabla solver ignores it
        (True, array([0.5, 1.5], dtype=float32))
    """

    @property
    def name(self) -> str:
        """What messages call it (the class name unless a subclass says otherwise)."""
        return type(self).__name__

    # -- what it updates ------------------------------------------------------------------------
    def named_parameters(self) -> "dict[str, Variable]":  # pragma: no cover - abstract
        """The parameters this optimizer updates, by name, in order."""
        raise NotImplementedError

    def zero_grad(self) -> None:
        """Forget the parameters' gradients; their buffers go back to the graph
        (:func:`stadyn.graph.release_grads`: the next backward may write into them)."""
        release_grads(self.named_parameters().values())

    # -- one eager step -------------------------------------------------------------------------
    def step(self, sample_count: int) -> bool:  # pragma: no cover - abstract
        """Update the parameters from their ``.grad``; ``sample_count`` is the number of
        samples of the minibatch the gradients came from.  Returns whether it updated."""
        raise NotImplementedError

    def learning_rate(self) -> float:  # pragma: no cover - abstract
        """The current learning rate, in the optimizer's own unit."""
        raise NotImplementedError

    def resolve_epoch_size(self, samples_per_sweep: int) -> None:
        """Tell schedules given per data sweep the sweep's size (nothing to do by default)."""

    def end_sweep(self) -> None:
        """The minibatch just stepped on held the last sample of a data sweep (CNTK counts
        sweeps: a schedule given per sweep whose size nobody told moves on; nothing to do by
        default)."""

    # -- a step in three parts (what a compiled step calls) -------------------------------------
    def state_names(self) -> tuple[str, ...]:
        """The names of the per-parameter state tensors (``()`` for plain SGD)."""
        return ()

    def state_tensors(self, names: list[str]) -> "dict[str, list[torch.Tensor]]":
        """Per state name, the state tensors of the parameters ``names``, in that order (the
        tensors themselves: :meth:`apply_step` updates them in place)."""
        return {}

    def step_scalars(self, names: list[str], sample_count: int) -> "dict[str, Any]":
        """This step's scalars for the parameters ``names`` and a minibatch of
        ``sample_count`` samples; nothing is changed.  Floats, or (an NNabla solver whose
        parameters have taken different numbers of steps) lists with one value per parameter.
        A compiled step feeds them as 0-d tensors."""
        return {}

    def apply_step(self, params: list[torch.Tensor], grads: list[torch.Tensor],
                   states: "dict[str, list[torch.Tensor]]", scalars: "Mapping[str, Any]", *,
                   fused: bool = True) -> None:  # pragma: no cover - abstract
        """The maths of one step, in place on ``params`` and ``states`` (``grads`` may be
        changed too).  ``scalars`` are :meth:`step_scalars`' values or 0-d tensors;
        ``fused=False`` keeps torch's fused kernels out (a program ``torch.compile`` compiles
        cannot hold them)."""
        raise NotImplementedError

    def finish_step(self, names: list[str], sample_count: int,
                    scalars: "Mapping[str, Any]") -> None:
        """The bookkeeping after :meth:`apply_step` updated the parameters ``names``."""

    @property
    def fused_update(self) -> bool:
        """Whether :meth:`apply_step` runs one of torch's fused kernels (then a compiled step on
        a CPU runs it after its program rather than tracing the maths into it)."""
        return False

    # -- state ----------------------------------------------------------------------------------
    def state_dict(self) -> "dict[str, Any]":  # pragma: no cover - abstract
        """Everything needed to resume: state tensors, step counts, schedule positions."""
        raise NotImplementedError

    def check_state_dict(self, state: "Mapping[str, Any]") -> None:  # pragma: no cover
        """Raise the error :meth:`load_state_dict` would raise for ``state``; change nothing."""
        raise NotImplementedError

    def load_state_dict(self, state: "Mapping[str, Any]") -> None:  # pragma: no cover
        """Restore :meth:`state_dict`, all or nothing."""
        raise NotImplementedError
