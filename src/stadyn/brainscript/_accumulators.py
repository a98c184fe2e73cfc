"""cntk.exe's ``EpochAccumulator`` nodes around a pass over data: their reset at the start of
each pass (a training epoch, a ``cvReader`` validation, a test/eval sweep: cntk.exe's
``StartEvaluateMinibatchLoop`` calls ``OnEpochStart`` on every node the pass evaluates), and
which evaluation nodes hold an accumulated result (``ExtractNodesWhichAccumulateResult``).

Such a node (Image/FCN's ``miouError``) is computed from accumulators and parameters only: its
value is already the result of every sample of the pass so far, so cntk.exe logs it as that
value counted once (``miouError = 0.67398942 * 1``, in the minibatch lines, the epoch's and the
validation's, and a test's ``Final Results``) instead of summing it over the minibatches.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..graph import Variable, topological_nodes
from ..train import TrainingCallback

__all__ = ["EpochAccumulators", "counted_once", "holds_accumulated_result", "logged_so_far"]

_ACCUMULATOR = "cntk_epoch_accumulator"
_LOOP = "recurrence"             # (a BrainScript loop: brainscript/_loops.py)


class EpochAccumulators(TrainingCallback):
    """Resets the ``EpochAccumulator`` nodes the ``roots`` are computed from at the start of
    each epoch, as cntk.exe's ``OnEpochStart`` does (a test, eval or validation sweep is one
    epoch: :meth:`reset`).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([[1.0], [3.0]]))
        >>> y = F.cntk_epoch_accumulator(x)
        >>> y.forward(); x.d = np.array([[8.0], [8.0]]); y.forward(); y.d.tolist()
        [5.0]
        >>> EpochAccumulators([y]).reset(); y.forward(); y.d.tolist()
        [8.0]
    """

    def __init__(self, roots: Sequence[Variable]) -> None:
        self.nodes = [n for n in topological_nodes(list(roots)) if n.spec.name == _ACCUMULATOR]

    def reset(self) -> None:
        """Forget what every accumulator has seen (the start of a pass over data)."""
        for node in self.nodes:
            node.state.reset()

    def on_epoch_begin(self, trainer, epoch: int) -> None:
        self.reset()


def holds_accumulated_result(node: Variable) -> bool:
    """Whether ``node`` is computed from ``EpochAccumulator`` nodes and is in no recurrence
    loop, nor reads one: cntk.exe's ``ExtractNodesWhichAccumulateResult``, whose evaluation
    nodes it logs as their value counted once.  cntk.exe's rule means to admit, beside
    accumulators, only nodes whose leaves are parameters, but it walks the eval order leaves
    included, so every leaf (an ``Input`` too) joins that set and only a loop's nodes (a
    ``PastValue`` met before its input) are left out (ComputationNetworkEvaluation.cpp:917-975):
    an accumulator plus a per-sample value is an accumulated result there, and here.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((2, 1))
        >>> one = sd.Variable.from_numpy_array(np.ones(1))
        >>> mean = F.cntk_epoch_accumulator(x)
        >>> holds_accumulated_result(F.sub2(one, mean)), holds_accumulated_result(x)
        (True, False)
        >>> holds_accumulated_result(F.add2(mean, F.sum(x, keepdims=True)))
        True
    """
    stack, seen, found = [node], set(), False
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        parent = v.parent
        if parent is None:
            continue
        if parent.spec.name == _ACCUMULATOR:
            found = True
            continue
        if parent.spec.name == _LOOP:
            return False
        stack.extend(i for i in parent.inputs if i is not None)
    return found


def counted_once(totals: Sequence[Sequence[float]], values: Sequence[float],
                 accumulated: Sequence[bool]) -> list[list[float]]:
    """Per node, its ``[sum, samples]`` of a pass so far from ``totals``, except that a node
    holding an accumulated result (``accumulated``) is its last value ``values`` counted once,
    as cntk.exe logs it (``miouError = 0.67398942 * 1``).

    Example:
        >>> counted_once([[6.0, 4], [1.5, 4]], [2.0, 0.25], [False, True])
        [[6.0, 4], [0.25, 1]]
    """
    return [[v, 1] if once else list(t) for t, v, once in zip(totals, values, accumulated)]


def logged_so_far(totals: Sequence[Sequence[float]],
                  accumulated: Sequence[bool]) -> list[list[float]]:
    """What a log line leaves as "already logged" to subtract from the next one's totals: a
    summed node's ``[sum, samples]`` so far, nothing for an accumulated result (cntk.exe logs
    it whole each time).

    Example:
        >>> logged_so_far([[6.0, 4], [0.25, 1]], [False, True])
        [[6.0, 4], [0.0, 0]]
    """
    return [[0.0, 0] if once else list(t) for t, once in zip(totals, accumulated)]
