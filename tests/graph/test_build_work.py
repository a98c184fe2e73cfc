"""A static plan's build does work linear in the graph: counted, not timed.

A residual chain of ``k`` blocks is lowered for ``k`` = 1, 2 and 4 while two counts run: the
lines of Stadyn's code executed (a loop's every turn is one more, so a walk of the whole graph
per node, a topological sort per op, a search of the node list counts as the quadratic work it
is) and the Python calls made in all (torch's too: make_fx's trace, the partition, the passes,
the code generation).  Each block adds the same ops on the same shapes, so linear work adds the
same count per block: from 2 to 4 blocks twice what 1 to 2 added.  ``benchmarks/plan_build.py``
measures the build's seconds.
"""

import gc
import os
import sys

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.parametric_functions as PF

pytestmark = pytest.mark.usefixtures("fresh_parameters")

STADYN = os.path.dirname(os.path.abspath(sd.__file__)) + os.sep


def _residual_loss(blocks: int):
    """A loss over ``blocks`` residual blocks (affine, batch normalisation, ReLU, the sum
    with the block's input, tanh): each block the same ops on the same shapes."""
    x = sd.Variable.from_numpy_array(np.random.RandomState(0).rand(4, 6).astype(np.float32))
    h = x
    for b in range(blocks):
        with sd.parameter_scope(f"block{b}"):
            r = h
            h = F.relu(PF.batch_normalization(PF.affine(h, 6, name="fc")))
            h = F.tanh(h + r)
    return F.mean(h * h)


def _work_of_a_build(blocks: int) -> tuple[int, int]:
    """``(lines of Stadyn run, Python calls made)`` while the loss of ``blocks`` blocks is
    lowered (its first ``forward()``)."""
    gc.collect()        # the graphs built before are freed now, not while this one builds
    loss = _residual_loss(blocks)
    counts = [0, 0]

    def lines(frame, event, arg):
        if event == "line":
            counts[0] += 1
        return lines

    def calls(frame, event, arg):
        counts[1] += 1
        return lines if frame.f_code.co_filename.startswith(STADYN) else None

    before = sys.gettrace()
    sys.settrace(calls)
    try:
        loss.forward()                 # the plan is built here
    finally:
        sys.settrace(before)
    assert type(loss._plan).__name__ == "StaticPlan" and loss._plan.has_backward
    return counts[0], counts[1]


def test_a_build_does_the_same_work_per_block():
    # torch's first-use work done (imports; fake tensors' dispatch cache, which every trace
    # shares, filled for these ops and shapes).  A graph of another structure each time: one of
    # the same would replay the plan built first (_plan_reuse.py), building nothing.
    _work_of_a_build(3)
    (l1, c1), (l2, c2), (l4, c4) = (_work_of_a_build(k) for k in (1, 2, 4))
    assert l4 > l2 > l1 > 1_000 and c4 > c2 > c1 > 10_000
    # Linear: 4 - 2 blocks cost twice what 2 - 1 did.  Exactly, here; the 0.5% leaves room for
    # a torch whose caches behave otherwise, far below what a walk per node would add.
    assert abs((l4 - l2) - 2 * (l2 - l1)) <= 0.005 * (l4 - l2), (l1, l2, l4)
    assert abs((c4 - c2) - 2 * (c2 - c1)) <= 0.005 * (c4 - c2), (c1, c2, c4)
