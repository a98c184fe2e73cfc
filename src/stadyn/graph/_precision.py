"""Mixed precision by op declaration: which inputs an op casts in a half-precision context.

In a ``bfloat16``/``float16`` context parameters stay fp32 (master weights); each op casts its
inputs according to its declared ``precision``:

* ``"half"``  — float inputs to the context's half type (matrix products, convolutions);
* ``"mixed"`` — the first input (the data) to half, the rest (fp32 parameters and running
  statistics, updated in place) unchanged (batch normalisation's mixed-type kernels);
* ``"float"`` — half inputs up to fp32 (losses, softmax, reductions: where range or accuracy
  matters);
* ``"any"``   — no cast; the op follows its inputs' types (element-wise ops).

The same casts run in dynamic mode and in the traced static programs, so both modes compute the
same thing.  A cast's backward converts the gradient back, so fp32 parameters get fp32 gradients.
"""

from __future__ import annotations

import torch

__all__ = ["cast_arguments", "PRECISIONS"]

PRECISIONS = ("any", "half", "mixed", "float")
_HALF = (torch.float16, torch.bfloat16)


def _down(value, dtype):
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        return value.to(dtype)
    return value


def _up(value):
    if isinstance(value, torch.Tensor) and value.dtype in _HALF:
        return value.float()
    return value


def cast_arguments(precision: str, args: list, kwargs: dict, dtype: torch.dtype
                   ) -> tuple[list, dict]:
    """``args``/``kwargs`` cast for an op of ``precision`` in a context of half type ``dtype``."""
    if precision == "half":
        return [_down(a, dtype) for a in args], {k: _down(v, dtype) for k, v in kwargs.items()}
    if precision == "float":
        return [_up(a) for a in args], {k: _up(v) for k, v in kwargs.items()}
    if precision == "mixed":
        out = list(args)
        for i, a in enumerate(out):
            if isinstance(a, torch.Tensor):
                out[i] = _down(a, dtype)
                break
        return out, kwargs
    return args, kwargs
