"""What the op harness's entries are made of: :class:`Case`, :class:`Entry` and seeded input
data (:class:`Data`).  ``test_ops.py`` holds the harness and the entries of the first ops;
``nnabla_entries.py`` those of NNabla's further functions, with its own generator so that
neither file's data depends on the other's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


class Data:
    """Seeded input arrays (float32 values; references compute on them in float64)."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def normal(self, *shape: int, scale: float = 1.0) -> np.ndarray:
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def uniform(self, low: float, high: float, *shape: int) -> np.ndarray:
        return self.rng.uniform(low, high, shape).astype(np.float32)

    def away_from(self, points: tuple[float, ...], *shape: int, margin: float = 0.05,
                  scale: float = 1.0) -> np.ndarray:
        """Normal samples (times ``scale``) at least ``margin`` from each of ``points``: keeps
        kinks out of the gradient checks."""
        x = self.normal(*shape, scale=scale).astype(np.float64)
        for p in points:
            near = np.abs(x - p) < margin
            x[near] = p + np.where(x[near] >= p, margin, -margin) * 2
        return x.astype(np.float32)

    def nonzero(self, *shape: int) -> np.ndarray:
        return self.away_from((0.0,), *shape, margin=0.1)

    def ints(self, high: int, *shape: int) -> np.ndarray:
        return self.rng.integers(0, high, shape).astype(np.int64)

    def distinct(self, *shape: int) -> np.ndarray:
        """A random permutation of well-separated values (no ties for max/min and pooling)."""
        n = int(np.prod(shape))
        return (self.rng.permutation(n).astype(np.float64) * 0.25 - n / 8).reshape(
            shape).astype(np.float32)


@dataclass
class Case:
    """One call of an op: its inputs (NumPy arrays, ``None`` for an absent optional input) and
    attributes.  ``no_grad`` skips the gradient checks of this case, with the reason."""

    inputs: tuple
    attrs: dict = field(default_factory=dict)
    no_grad: str | None = None


@dataclass
class Entry:
    """The harness entry of one op.

    ``reference(*inputs, **attrs)`` returns the expected output(s) from float64 NumPy inputs.
    ``check(inputs, outputs, **attrs)`` replaces it for random ops.  ``grad_inputs`` are the
    positions of the differentiable inputs (default: every float input), ``why_not_others`` why
    the other inputs are not differentiated.  ``no_grad`` says why the op has no gradient.
    ``updates(*inputs, **attrs)`` gives ``{position: new value}`` for inputs the op updates in
    place.  ``random`` ops are seeded identically before each run.  ``call(function, inputs,
    attrs)`` replaces ``function(*inputs, **attrs)`` for an op whose arguments are built from the
    case's input Variables (``grad`` differentiates a function of them).
    """

    cases: list[Case]
    reference: Callable[..., Any] | None = None
    check: Callable[..., None] | None = None
    grad_inputs: tuple[int, ...] | None = None
    why_not_others: str = ""
    no_grad: str | None = None
    updates: Callable[..., dict[int, np.ndarray]] | None = None
    random: bool = False
    call: Callable[..., Any] | None = None
    rtol: float = 1e-5
    atol: float = 1e-5
