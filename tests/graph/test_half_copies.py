"""``graph/_precision.HalfCopies``: the ops of a ``cpu:half`` program read one half copy of
each float32 leaf (NNabla 1.39 sums the gradients of a leaf's readers in float16: case
``nnabla_half_42.half42__shared_leaf_gradients``), made again once the leaf is written; and
the dynamic record of the leaves an op read through a half copy, kept on the op's node, holds
the leaves it was given as keywords too (``note_cast_leaves``)."""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.functions as SF
from stadyn.compat.nnabla.ext_utils import get_extension_context
from stadyn.graph import apply, auto_forward
from stadyn.ops import get_spec

_HALF = sd.context("cpu", dtype="float16")


def test_a_leaf_written_as_a_keyword_argument_is_read_anew_by_the_backward():
    # NNabla 1.39's backward casts the weight as it is then: x.g = dy (w + 1)^T, not dy w^T
    # (before nnhalf43 the backward was refused; _written_leaves.py casts it into the copy)
    rs = np.random.RandomState(41)
    xv, wv = rs.randn(4, 8).astype(np.float32), rs.randn(8, 8).astype(np.float32)
    with auto_forward(), sd.context_scope(_HALF):
        x = sd.Variable.from_numpy_array(xv, need_grad=True)
        w = sd.Variable.from_numpy_array(wv, need_grad=True)
        y = apply(get_spec("affine"), (x,), {"weight": w})
        assert y.data.dtype == torch.float16
        with torch.no_grad():
            w.data.add_(1)                        # a solver's update
        y.backward(np.ones((4, 8), np.float32))
        assert [v for v, *_ in y.parent.cast_leaves] == [x, w]      # on the node itself
    expected = np.ones((4, 8)) @ (wv.astype(np.float64) + 1).T
    np.testing.assert_allclose(np.asarray(x.g, np.float64), expected, rtol=1e-2, atol=2e-2)
    assert np.abs(np.asarray(x.g, np.float64) - np.ones((4, 8)) @ wv.T).max() > 4


@pytest.mark.parametrize("write", ["in place", "new array"])
def test_a_leaf_written_between_two_readers_is_read_anew(write):
    xv = np.array([0.5, -1.25, 2.0], np.float32)
    nn.set_auto_forward(True)
    try:
        with nn.context_scope(get_extension_context("cpu", type_config="half")):
            x = nn.Variable.from_numpy_array(xv, need_grad=True)
            a = F.tanh(x)
            if write == "in place":
                x.d[...] = 2 * xv
            else:
                x.d = 2 * xv
            b = F.tanh(x)
    finally:
        nn.set_auto_forward(False)
    np.testing.assert_array_equal(a.d, np.tanh(xv.astype(np.float16)))
    np.testing.assert_array_equal(b.d, np.tanh((2 * xv).astype(np.float16)))


def test_a_copy_made_without_history_is_not_read_by_an_op_that_needs_a_gradient():
    xv = np.array([0.5, -1.25, 2.0], np.float32)
    nn.set_auto_forward(True)
    try:
        with nn.context_scope(get_extension_context("cpu", type_config="half")):
            x = nn.Variable.from_numpy_array(xv, need_grad=True)
            with nn.no_grad():
                F.tanh(x)
            y = F.tanh(x)
        x.grad.zero()
        y.backward(np.ones(3, np.float32))
    finally:
        nn.set_auto_forward(False)
    t = np.tanh(xv.astype(np.float16).astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(x.g, 1 - t.astype(np.float32) ** 2, rtol=2e-3, atol=2e-3)


def _weight_grad(dynamic, readers):
    rs = np.random.RandomState(5)
    inputs = [rs.randn(3, 40).astype(np.float32) for _ in range(2)]
    wv = (rs.randn(40, 6) * 0.3).astype(np.float32)
    dy = rs.randn(3, 6).astype(np.float32)
    with sd.context_scope(_HALF), sd.auto_forward(dynamic):
        w = sd.Variable.from_numpy_array(wv, need_grad=True)
        ys = [SF.affine(sd.Variable.from_numpy_array(inputs[i]), w) for i in readers]
        y = ys[0] if len(ys) == 1 else ys[0] + ys[1]
        y.forward()
        y.backward(dy)
    return np.asarray(w.g, np.float32)


@pytest.mark.parametrize("dynamic", [False, True])
def test_stadyns_own_half_context_sums_a_master_weights_gradients_in_float32(dynamic):
    """Only NNabla's ``cpu:half`` functions share a leaf's half copy: in Stadyn's own float16
    context each affine casts the fp32 weight itself, so the two readers' gradients add up in
    fp32: the weight's gradient is the fp32 sum of each reader's alone."""
    both = _weight_grad(dynamic, (0, 1))
    alone = _weight_grad(dynamic, (0,)) + _weight_grad(dynamic, (1,))
    np.testing.assert_array_equal(both, alone)
    assert (both.astype(np.float16).astype(np.float32) != both).any()   # not an fp16 sum


def test_a_numpy_array_kept_from_before_the_copy_still_writes_through():
    # The copy is reused without a comparison only where no NumPy array was handed out over
    # the leaf since it was made and none is alive (nnhalf43): an array taken before the first
    # reader and written after it is alive, so the second reader casts the new values.
    xv = np.array([0.5, -1.25, 2.0], np.float32)
    nn.set_auto_forward(True)
    try:
        with nn.context_scope(get_extension_context("cpu", type_config="half")):
            x = nn.Variable.from_numpy_array(xv, need_grad=True)
            kept = x.d
            a = F.tanh(x)
            kept[...] = 2 * xv
            b = F.tanh(x)
            del kept
            c = F.tanh(x)                       # nothing written since b: b's copy
    finally:
        nn.set_auto_forward(False)
    np.testing.assert_array_equal(a.d, np.tanh(xv.astype(np.float16)))
    np.testing.assert_array_equal(b.d, np.tanh((2 * xv).astype(np.float16)))
    np.testing.assert_array_equal(c.d, b.d)
    assert c.parent.cast_leaves[0][3] is b.parent.cast_leaves[0][3]
