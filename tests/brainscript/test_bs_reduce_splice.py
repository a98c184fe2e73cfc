"""``Splice`` along any axis and CNTK's reductions (``ReduceSum`` & co.), checked against NumPy
on CNTK's column-major axes (``W:H:C`` is the row-major ``C, H, W`` array).  CNTK's own configs
use them: ``Splice (..., axis = 3)`` joins Inception branches and builds VGG's per-channel mean;
``ReduceSum (diff .* diff, axis = 1)`` is the squared error of ``05_OneConvRegr.cntk``."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import build_network
from stadyn.brainscript._stadyn_library import StadynLibrary
from stadyn.train import feed

X = np.random.default_rng(3).normal(size=(2, 3, 4, 5)).astype(np.float32)   # N, C, H, W


def _run(text: str, names: str):
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ x = Input{5:4:3}\n" + text + " }", StadynLibrary())
        feed(net.nodes["x"], X)
        out = {}
        for name in names.split():
            node = net.nodes[name]
            node.forward()
            out[name] = node.d.copy()
        return out


def test_splice_along_each_axis():
    out = _run("c = Splice (Constant (1) : Constant (2) : Constant (3), axis = 3)\n"
               "y = x - c ; w = Splice (x : x, axis = 1) ; h = Splice (x : 2 * x, axis = 2)\n"
               "ch = Splice (x : x, axis = 3) ; k = Splice (x : x, axis = 4)", "c y w h ch k")
    np.testing.assert_array_equal(out["c"], np.array([1, 2, 3], np.float32).reshape(3, 1, 1))
    np.testing.assert_array_equal(out["y"], X - np.array([1, 2, 3], np.float32).reshape(1, 3, 1, 1))
    np.testing.assert_array_equal(out["w"], np.concatenate([X, X], axis=3))       # W: 10
    np.testing.assert_array_equal(out["h"], np.concatenate([X, 2 * X], axis=2))   # H: 8
    np.testing.assert_array_equal(out["ch"], np.concatenate([X, X], axis=1))      # C: 6
    np.testing.assert_array_equal(out["k"], np.stack([X, X], axis=1))  # a new 4th axis: 5:4:3:2


def test_splice_errors():
    with pytest.raises(ConfigError, match="axis must be an integer >= 1"):
        _run("s = Splice (x : x, axis = 0)", "s")
    with pytest.raises(ConfigError, match="must all be per sample"):
        _run("s = Splice (x : Constant (1), axis = 4)", "s")


def test_reductions_along_an_axis_keep_the_rank():
    out = _run("s1 = ReduceSum (x, axis = 1) ; m2 = ReduceMean (x, axis = 2)\n"
               "x3 = ReduceMax (x, axis = 3) ; n1 = ReduceMin (x, axis = 1)\n"
               "l3 = ReduceLogSum (x, axis = 3) ; r = RectifiedLinear (x)", "s1 m2 x3 n1 l3 r")
    np.testing.assert_allclose(out["s1"], X.sum(3, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["m2"], X.mean(2, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out["x3"], X.max(1, keepdims=True))
    np.testing.assert_array_equal(out["n1"], X.min(3, keepdims=True))
    np.testing.assert_allclose(out["l3"],
                               np.log(np.exp(X.astype(np.float64)).sum(1, keepdims=True)),
                               rtol=1e-5)
    np.testing.assert_array_equal(out["r"], np.maximum(X, 0))


def test_reduction_over_the_whole_sample_gives_one_value_per_sample():
    # 05_OneConvRegr.cntk's criterion: sqerr = ReduceSum (diff .* diff) per sample
    out = _run("all = ReduceSum (x .* x) ; zero = ReduceMean (x, axis = 0)", "all zero")
    np.testing.assert_allclose(out["all"], (X * X).reshape(2, -1).sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(out["zero"], X.reshape(2, -1).mean(1, keepdims=True), atol=1e-6)
    with pytest.raises(ConfigError, match="axis must be 1 .. 3"):
        _run("bad = ReduceSum (x, axis = 4)", "bad")


def test_scale_is_an_element_times_either_way_round():
    # RegrSimple_CIFAR10.cntk writes Scale (features, featScale); cntk.exe's log validates it as
    # ElementTimes (features, featScale) : [32 x 32 x 3 x *], [1 x 1] -> [32 x 32 x 3 x *]
    out = _run("f = Constant (0.25) ; a = Scale (x, f) ; b = Scale (f, x)", "a b")
    np.testing.assert_array_equal(out["a"], X * 0.25)
    np.testing.assert_array_equal(out["b"], X * 0.25)
