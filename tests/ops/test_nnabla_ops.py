"""What the op harness (test_ops.py) cannot check for NNabla's further functions: gradients that
are not derivatives (straight-through binarisers, ``sink``, ``top_k_data(reduce=False)``), the
seeding of the random sources in both modes, ``clip_by_value`` with numbers, and ``assign`` in
a static graph.  Expectations are NNabla 1.39's rules, written out by hand; NNabla 1.39's own
outputs on values at the same edges (|x| = 1, the clipping bounds, halves, 0) are compared in
the compat cases binary_tanh, binary_sigmoid, clip_by_value, top_k_data__abs_no_reduce, floor,
ceil, round, sign and sink (tests/compat/compat_cases/nnabla_functions_more.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F

MODES = pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])


def _gradient(fn, x, dy, dynamic):
    """``x.g`` after ``backward`` of ``fn(x)`` with output gradient ``dy``."""
    v = sd.Variable.from_numpy_array(np.asarray(x, np.float32), need_grad=True)
    with sd.auto_forward(dynamic):
        y = fn(v)
        loss = F.sum(y * sd.Variable.from_numpy_array(np.asarray(dy, np.float32)))
    if not dynamic:
        loss.forward()
    loss.backward()
    return y.d, v.g


X = np.array([-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5], np.float32)
DY = np.arange(1.0, 8.0, dtype=np.float32)


@MODES
def test_binary_tanh_passes_the_gradient_where_magnitude_is_below_one(dynamic):
    y, g = _gradient(F.binary_tanh, X, DY, dynamic)
    np.testing.assert_array_equal(y, [-1, -1, -1, -1, 1, 1, 1])
    np.testing.assert_array_equal(g, [0, 0, 3, 4, 5, 0, 0])      # NNabla 1.39: |x| < 1


@MODES
def test_binary_sigmoid_passes_half_the_gradient(dynamic):
    y, g = _gradient(F.binary_sigmoid, X, DY, dynamic)
    np.testing.assert_array_equal(y, [0, 0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(g, [0, 0, 1.5, 2, 2.5, 0, 0])


@MODES
def test_top_k_data_without_reduce_passes_the_whole_gradient(dynamic):
    x = np.array([[3.0, -1.0, 2.0, 0.5]], np.float32)
    dy = np.array([[10.0, 20.0, 30.0, 40.0]], np.float32)
    y, g = _gradient(lambda v: F.top_k_data(v, 2, abs=True, reduce=False), x, dy, dynamic)
    np.testing.assert_array_equal(y, [[3, 0, 2, 0]])
    np.testing.assert_array_equal(g, dy)                          # NNabla 1.39's backward
    y, g = _gradient(lambda v: F.top_k_data(v, 2), x, dy[:, :2], dynamic)
    np.testing.assert_array_equal(y, [[3, 2]])
    np.testing.assert_array_equal(g, [[10, 0, 20, 0]])            # reduce: the kept ones only


@MODES
@pytest.mark.parametrize("one_input_grad, expected", [(True, 5.0), (False, 0.0)])
def test_sink_computes_every_input_and_sends_ones_back(dynamic, one_input_grad, expected):
    x = sd.Variable.from_numpy_array(np.array([1.0, -2.0], np.float32), need_grad=True)
    with sd.auto_forward(dynamic):
        a, b = x * 2.0, x * 3.0
        s = F.sink(a, b, one_input_grad=one_input_grad)
    if not dynamic:
        s.forward()
    assert s.shape == () and float(s.d) == 0.0
    np.testing.assert_array_equal(b.d, [3.0, -6.0])               # computed by the sink's forward
    s.backward()
    np.testing.assert_array_equal(x.g, [expected, expected])      # d(a + b)/dx with ones


def test_sink_forward_is_its_inputs_forward():
    # sink(loss, acc).forward() then loss.backward(): the backward reads that forward's dropout
    # mask (NNabla 1.39's, case nnabla_fidelity_15.sink_forward__then_backward_of_an_input);
    # 3eece400 warned, ran loss's forward again and drew a new mask
    x = sd.Variable.from_numpy_array(np.ones((4, 6), np.float32), need_grad=True)
    h = F.dropout(x, 0.5)
    loss, acc = F.mean(h), F.max(x)
    F.sink(loss, acc).forward()
    kept, mask = float(loss.d), h.d != 0
    assert float(acc.d) == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss.backward()
    assert float(loss.d) == kept
    np.testing.assert_allclose(x.g, mask * (2.0 / 24.0))         # d mean(x * mask * 2) / dx


@pytest.mark.parametrize("make", [lambda seed: F.rand(shape=(6,), seed=seed),
                                  lambda seed: F.randn(shape=(6,), seed=seed),
                                  lambda seed: F.randint(0, 1000, shape=(6,), seed=seed),
                                  lambda seed: F.dropout(F.constant(1.0, (16,)), 0.5, seed=seed)],
                         ids=["rand", "randn", "randint", "dropout"])
def test_random_sources_follow_nnabla_seeding(make):
    with sd.auto_forward():                                       # a seed: the same values
        a, b, c = make(7).d, make(7).d, make(8).d
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    y = make(7)                                                   # static: the stream goes on
    y.forward()
    first = y.d.copy()
    y.forward()
    np.testing.assert_array_equal(first, a)
    assert not np.array_equal(first, y.d)
    sd.seed(3)                                                    # seed=-1: sd.seed decides
    with sd.auto_forward():
        d = make(-1).d
    sd.seed(3)
    z = make(-1)
    z.forward()
    np.testing.assert_array_equal(z.d, d)
    z.forward()
    assert not np.array_equal(z.d, d)


def test_randint_rejects_an_empty_range():
    with pytest.raises(ValueError, match="high"):
        with sd.auto_forward():
            F.randint(3, 3, shape=(2,))


@MODES
def test_clip_by_value_takes_numbers_as_nnabla_programs_pass_them(dynamic):
    y, g = _gradient(lambda v: F.clip_by_value(v, -0.5, 1.0), X, DY, dynamic)
    np.testing.assert_array_equal(y, [-0.5, -0.5, -0.5, 0, 0.5, 1, 1])
    np.testing.assert_array_equal(g, [0, 0, 0, 4, 5, 0, 0])      # strictly inside (NNabla 1.39)


def test_assign_in_a_static_graph_writes_on_each_forward():
    """The use nnabla-examples make of it: a moving average of a parameter."""
    w = sd.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
    ema = sd.Variable.from_numpy_array(np.zeros(2, np.float32))
    update = F.assign(ema, ema * 0.5 + w * 0.5)
    update.forward()
    np.testing.assert_array_equal(ema.d, [0.5, 1.0])
    update.forward()
    np.testing.assert_array_equal(ema.d, [0.75, 1.5])
    np.testing.assert_array_equal(w.d, [1.0, 2.0])


def test_interpolate_and_unpooling_name_their_mistakes():
    x = sd.Variable((1, 2, 3, 4))
    with pytest.raises(sd.StadynError, match="interpolate.*mode 'cubic'"):
        F.interpolate(x, scale=(2, 2), mode="cubic")
    with pytest.raises(sd.StadynError, match="interpolate.*scale or output_size"):
        F.interpolate(x)
    with pytest.raises(sd.StadynError, match="unpooling.*kernel"):
        F.unpooling(x, (2, 2, 2, 2, 2))


@MODES
@pytest.mark.parametrize("name, expected", [
    ("floor", [-2, -1, 0, 0, 1, 2]), ("ceil", [-1, 0, 0, 1, 2, 3]),
    ("round", [-2, -1, 0, 0, 2, 3]), ("sign", [-1, -1, 1, 1, 1, 1])])
def test_rounding_passes_the_gradient_straight_through(dynamic, name, expected):
    """NNabla 1.39: halves round away from zero, sign(0) is alpha (1), the gradient is dy."""
    x = np.array([-1.5, -0.6, 0.0, 0.4, 1.5, 2.5], np.float32)
    dy = np.arange(1.0, 7.0, dtype=np.float32)
    y, g = _gradient(getattr(F, name), x, dy, dynamic)
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(g, dy)


def test_clip_by_value_with_numbers_saves_loads_and_exports(tmp_path):
    pytest.importorskip("onnxruntime")
    import onnxruntime as ort
    x = sd.Variable((2, 3))
    y = F.clip_by_value(x, -0.5, 0.5)
    x.d = np.linspace(-1, 1, 6).reshape(2, 3)
    y.forward()
    expected = np.clip(x.d, -0.5, 0.5)
    np.testing.assert_array_equal(y.d, expected)
    sd.save(tmp_path / "clip.stadyn", {"y": y}, {"x": x})
    np.testing.assert_array_equal(sd.load(tmp_path / "clip.stadyn")(x=x.d)["y"], expected)
    sd.export_onnx(tmp_path / "clip.onnx", {"y": y}, {"x": x})
    session = ort.InferenceSession(str(tmp_path / "clip.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, {"x": x.d})[0], expected)
