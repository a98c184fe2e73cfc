"""``step_mask``, the padded-steps mask every sequence op and each step of a recurrence uses:
its values are ``t < length`` (NumPy), and it traces no op that changes nothing (a
recurrence stepped inside a loop, CNTK's greedy decoder, asks for a one-step mask at every
step of the loop)."""

import numpy as np
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from stadyn.ops._sequence import step_mask


@pytest.mark.parametrize("steps", [1, 4])
@pytest.mark.parametrize("ndim", [2, 4])
def test_step_mask_is_t_below_the_length(steps, ndim):
    lengths = np.array([0, 1, 3, 5])
    want = (np.arange(steps)[None, :] < lengths[:, None]).reshape((4, steps) + (1,) * (ndim - 2))
    got = step_mask(torch.tensor(lengths), steps, ndim)
    assert got.dtype == torch.bool and got.shape == want.shape
    assert (got.numpy() == want).all()


def _ops(steps, ndim):
    gm = make_fx(lambda n: step_mask(n, steps, ndim), tracing_mode="fake")(torch.tensor([1, 2]))
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def test_step_mask_traces_no_op_that_changes_nothing():
    assert _ops(1, 2) == ["aten.gt.Scalar", "aten.unsqueeze.default"]
    assert "aten.view.default" not in _ops(5, 2)       # (a reshape to its own shape)
    assert len(_ops(5, 3)) == len(_ops(5, 2)) + 1
