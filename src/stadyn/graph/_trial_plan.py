"""A graph run eagerly until lowering it pays: :class:`TrialPlan` (the runner, ``_runner.py``,
decides when; docs/architecture.md, static mode, items 6-7)."""

from __future__ import annotations

import time

import torch

from ._interpret import _current as _shapes_owner
from ._interpret import release_points
from ._eager_plan import EagerPlan
from ._shared_values import drop_stale, set_output
from ._subgraph import run_tensor, value_key
from ._variable import Variable
from ._versions import shapes_changed

__all__ = ["TrialPlan"]


class TrialPlan(EagerPlan):
    """A graph that has a static plan run eagerly for a new signature of its leaves (another
    batch size or sequence length), until running it so has cost as much as building a plan.

    The runner (``_runner.py``) uses one where a plan with the same flags exists already and a
    new minibatch shape comes: lowering a graph is its most expensive step (seconds for a graph
    holding a recurrence, which the trace unrolls), and a shape that comes once or twice is
    cheaper run op by op.  ``spent`` adds up the seconds its forwards and backwards took; once
    that reaches the graph's cost of a build, the runner builds the plan (ski rental: at most
    twice the cost of the better choice made in hindsight).  The results are the plan's: the
    same ATen kernels in the same order (a plan that would run channels-last is built at once).
    Unlike :func:`build_plan` it infers no shapes: each run sets every intermediate's shape from
    the value it got.  Where the graph's plan is an :class:`EagerPlan` anyway, new shapes run
    as trials for good (``reason``: the eager plan's).

    Example:
        >>> import numpy as np, torch, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import Subgraph, TrialPlan
        >>> x = sd.Variable.from_numpy_array(np.ones((2, 3)), need_grad=True)
        >>> h = F.tanh(x)
        >>> y = F.sum(h)
        >>> sub = Subgraph([y])
        >>> x.data = torch.ones(5, 3, requires_grad=True)
        >>> plan = TrialPlan(sub.roots, sub.nodes, sub.leaves, sub.filled(False), True)
        >>> plan.run(); h.shape, round(float(y.d), 4), plan.spent > 0
        ((5, 3), 11.4239, True)
    """

    __slots__ = ("spent", "_release")

    def __init__(self, roots, nodes, leaves, fill, needs_backward: bool,
                 reason: str | None = None):
        super().__init__(roots, list(nodes), list(leaves), fill, needs_backward, reason or (
            "a new shape of a graph with a plan (lowered once this shape has run as long as "
            "a build takes)"))
        self.spent = 0.0
        self._release: list | None = None

    def run(self) -> None:
        start = time.perf_counter()
        tensors = [run_tensor(v) for v in self.leaves]
        others = [v for ref in self._others if (v := ref()) is not None]
        if self.has_backward:
            outs = self._interpret(tensors, self.fill + others)
            self._inter_values = {id(v): t for v, t in zip(others, outs[len(self.fill):])}
            found = [(tuple(t.shape), t.dtype) for t in outs[len(self.fill):]]
        else:
            # No backward reads the values the run does not keep: each goes once its last
            # reader ran, as a plan's program frees them (peak memory of a clearing forward)
            if self._release is None:
                self._release = release_points(self.nodes, self.fill)
            seen: dict = {}
            outs = self._interpret(tensors, self.fill, self._release, seen)
            found = [seen.get(value_key(v)) for v in others]
        for v, t in zip(self.fill, outs):
            set_output(v, t)
            v._shape, v._dtype = tuple(t.shape), t.dtype
        for v, shape in zip(others, found):
            if shape is None:
                continue
            if v.shape != shape[0]:
                shapes_changed()
            v._shape, v._dtype = shape
            drop_stale(v)          # a held buffer of another shape goes (refresh_shapes')
        _shapes_owner[0] = None         # no plan's recorded shapes are the Variables' now
        outs = outs[:len(self.fill)]
        self.diff_roots = [r for r in self.roots if r._data is not None and r._data.requires_grad]
        self.saved = outs if self.has_backward else None
        self.spent += time.perf_counter() - start

    def run_backward(self, root: Variable, seed: torch.Tensor, clear_buffer: bool) -> None:
        start = time.perf_counter()
        super().run_backward(root, seed, clear_buffer)
        self.spent += time.perf_counter() - start
