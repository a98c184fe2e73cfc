"""Three or more readers of a value get their gradient parts added in NNabla 1.39's backward
order (``graph/_ordered_sums.py``), in a dynamic graph and in a static plan's program.

``w * 1 + w * e + w * e`` (``e = 2**-24``): NNabla's backward runs the last ``mul_scalar``
first (rank 1, found first from the root's ``add2``), then the first and the second, so the
gradient is ``(e + 1) + e``, which rounds to 1 twice; torch's autograd added ``(e + e) + 1``,
one float32 step above 1 (1.0000001192092896).  The reference is that hand-computed sum.
NNabla's functions only (``stadyn.compat.nnabla``): Stadyn's own ops keep torch's sum."""

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.nnabla as nn

E = 2.0 ** -24


def _nnabla_sum(parts):
    total = np.float32(parts[0])
    for p in parts[1:]:
        total = np.float32(total + np.float32(p))
    return total


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_leaf_read_three_times(dynamic):
    w = nn.Variable.from_numpy_array(np.ones(3, np.float32), need_grad=True)
    with nn.auto_forward(dynamic):
        y = w * 1.0 + w * E + w * E
    if not dynamic:
        y.forward()
    y.backward(np.ones(3, np.float32))
    expected = _nnabla_sum([E, 1.0, E])
    assert expected == 1.0 and _nnabla_sum([E, E, 1.0]) != 1.0
    assert w.g.tolist() == [expected] * 3


@pytest.mark.parametrize("dynamic", [False, True])
def test_an_intermediate_read_three_times_keeps_the_ordered_sum(dynamic):
    # h's own gradient (kept, as NNabla keeps it) is the ordered sum too, and so is what goes
    # on down to w (a static plan's program returns the hook's sum, not autograd's capture)
    w = nn.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
    with nn.auto_forward(dynamic):
        h = w * 1.0
        y = h * 1.0 + h * E + h * E
    if not dynamic:
        y.forward()
    y.backward(np.ones(2, np.float32))
    assert h.g.tolist() == [1.0, 1.0]
    assert w.g.tolist() == [1.0, 1.0]


def test_stadyn_own_ops_keep_torchs_sum():
    w = sd.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
    with sd.auto_forward():
        y = w * 1.0 + w * E + w * E
    y.backward(np.ones(2, np.float32))
    assert w.g.tolist() == [float(_nnabla_sum([E, E, 1.0]))] * 2      # torch's: (e + e) + 1
