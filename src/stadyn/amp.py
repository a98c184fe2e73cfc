"""Mixed precision: fp16 loss scaling (bf16 needs none).

In a ``float16`` context (``sd.context('cuda', dtype='float16')``) matrix products and
convolutions run in half precision while parameters, gradients and solver state
stay fp32.  fp16's small range makes small gradients underflow, so the loss is multiplied by a
scale before backward and the gradients divided by it before the update; a step whose gradients
overflowed (inf/NaN) is skipped and the scale halved, and after ``growth_interval`` good steps
the scale doubles (dynamic loss scaling).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F, stadyn.solvers as S
    >>> from stadyn.amp import LossScaler
    >>> w = sd.Variable.from_numpy_array(np.array([1.0, -2.0]), need_grad=True)
    >>> solver = S.Sgd(lr=0.5); solver.set_parameters({"w": w})
    >>> scaler = LossScaler(init_scale=1024.0)
    >>> loss = F.sum(w * w)
    >>> loss.forward(); solver.zero_grad(); scaler.backward(loss)
    >>> w.g                       # the scale times dL/dw = 2 w
    array([ 2048., -4096.], dtype=float32)
    >>> scaler.step(solver)       # divides by the scale, then updates
    True
    >>> w.g
    array([ 2., -4.], dtype=float32)
    >>> w.d
    array([0., 0.], dtype=float32)
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Mapping

import torch

from ._errors import StadynError
from .graph import Variable, grad_of

__all__ = ["LossScaler"]


class LossScaler:
    """Dynamic loss scaling for fp16 training (see the module docstring)."""

    def __init__(self, init_scale: float = 2.0 ** 15, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 min_scale: float = 1.0):
        if init_scale <= 0 or not 0 < backoff_factor < 1 or growth_factor <= 1:
            raise StadynError("LossScaler: need init_scale > 0, 0 < backoff_factor < 1 and "
                              "growth_factor > 1")
        self.scale = float(init_scale)
        self.growth_factor = growth_factor
        self.backoff_factor = backoff_factor
        self.growth_interval = int(growth_interval)
        self.min_scale = float(min_scale)
        self._good_steps = 0
        self.skipped_steps = 0

    def backward(self, loss: Variable, clear_buffer: bool = True) -> None:
        """``loss.backward`` with the gradient seed multiplied by the scale."""
        loss.backward(grad=self.scale, clear_buffer=clear_buffer)

    @torch.no_grad()
    def unscale(self, parameters) -> bool:
        """Divide the parameters' gradients by the scale; True if all are finite."""
        grads = [g for g in map(grad_of, _variables(parameters)) if g is not None]
        if not grads:
            return True
        torch._foreach_mul_(grads, 1.0 / self.scale)
        finite = torch.stack([torch.isfinite(g).all() for g in grads]).all()
        return bool(finite)

    def step(self, optimizer, sample_count: int | None = None) -> bool:
        """Unscale, then update with ``optimizer`` (a solver, or a CNTK learner given
        ``sample_count``) unless a gradient overflowed; adjust the scale.  Returns whether the
        parameters were updated."""
        params = optimizer.get_parameters() if hasattr(optimizer, "get_parameters") else \
            optimizer.parameters
        finite = self.unscale(params)
        if finite:
            if sample_count is None:
                optimizer.update()
            else:
                optimizer.update(sample_count)
            self._good_steps += 1
            if self._good_steps >= self.growth_interval:
                self.scale *= self.growth_factor
                self._good_steps = 0
        else:
            self.scale = max(self.min_scale, self.scale * self.backoff_factor)
            self._good_steps = 0
            self.skipped_steps += 1
        return finite

    def state_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "good_steps": self._good_steps,
                "skipped_steps": self.skipped_steps}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`: a finite scale > 0 and step counts >= 0, or nothing
        is changed."""
        scale = state.get("scale") if isinstance(state, Mapping) else None
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or \
                not (math.isfinite(scale) and scale > 0):
            raise StadynError(f"LossScaler.load_state_dict: the scale must be a finite number "
                              f"> 0, got {scale!r}")
        counts = {}
        for key in ("good_steps", "skipped_steps"):
            value = state.get(key, 0 if key == "skipped_steps" else None)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise StadynError(f"LossScaler.load_state_dict: {key} must be an integer >= 0, "
                                  f"got {value!r}")
            counts[key] = int(value)
        self.scale = float(scale)
        self._good_steps = counts["good_steps"]
        self.skipped_steps = counts["skipped_steps"]


def _variables(parameters) -> list[Variable]:
    if isinstance(parameters, dict):
        return list(parameters.values())
    return list(parameters)
