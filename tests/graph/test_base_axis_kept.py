"""An op with a ``base_axis`` (``affine``: CNTK's ``Times``) called again on an input of another
rank keeps the axes it reduced over (``graph.base_axis_kept``), in each rebuild that replays
recorded calls: BrainScript's ``CloneFunction``/``Edit`` replay and ``compat.cntk``'s clone.
CNTK validates a cloned Times again: the axes it reduced stay reduced, the leading ones are
the output's (the NumPy products below are the expectation; CNTK 2.7's clone of the last test
gives the same (2, 5, 4) values)."""

from __future__ import annotations

import numpy as np
import pytest

from stadyn import functions as F
from stadyn.brainscript._network_library import replay
from stadyn.graph import Variable

_RNG = np.random.RandomState(5)
_W = _RNG.randn(3, 4).astype(np.float32)
_B = _RNG.randn(4).astype(np.float32)


def _times(x_shape: tuple, base_axis: int):
    x, w, b = Variable(x_shape), Variable((3, 4)), Variable((4,))
    w.d, b.d = _W, _B
    return x, F.affine(x, w, b, base_axis=base_axis)


@pytest.mark.parametrize("old, base_axis, new", [
    ((2, 3), 1, (2, 5, 3)),         # more leading axes (Fast R-CNN's regions)
    ((2, 3), 1, (2, 5, 7, 3)),
    ((2, 5, 3), 2, (2, 3)),         # fewer: the reduced axis is still the last
])
def test_brainscript_replay_keeps_the_reduced_axes(old, base_axis, new):
    x, y = _times(old, base_axis)
    nx = Variable(new)
    nx.d = _RNG.randn(*new).astype(np.float32)
    ny = replay([y], [(x, nx)])[id(y)]
    ny.forward()
    assert ny.shape == new[:-1] + (4,)
    np.testing.assert_allclose(ny.d, nx.d @ _W + _B, rtol=1e-5, atol=1e-5)


def test_brainscript_replay_leaves_other_reduced_axes_to_the_op():
    x, y = _times((2, 3), 1)
    with pytest.raises(Exception, match="affine"):
        replay([y], [(x, Variable((2, 5, 6)))])


def test_cntk_clone_keeps_the_reduced_axes():
    import stadyn.compat.cntk as C
    x = C.input_variable(3)
    f = C.times(x, C.constant(_W)) + C.constant(_B)
    x2 = C.input_variable((5, 3))
    g = f.clone(C.CloneMethod.share, {x: x2})
    data = _RNG.randn(2, 5, 3).astype(np.float32)
    got = g.eval({g.arguments[0]: data})
    np.testing.assert_allclose(got, data @ _W + _B, rtol=1e-5, atol=1e-5)
