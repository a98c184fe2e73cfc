"""CNTK's shaping and matrix nodes (``FlattenDimensions``, ``SplitDimension``, ``RowSlice``,
``Slice``, ``Transpose``, ``Hardmax``, ``SumElements``, ``TransposeTimes``), the raw
``Convolution`` node with the 3-D kernel of the LRN in CNTK's AlexNet and ConvNetLRN configs,
and ``ConvolutionTransposeLayer``, against CNTK 2.7's Python ops for the same nodes
(``refgen_bs_tensor_nodes.py`` wrote tests/fixtures/brainscript/tensor_nodes.json)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import build_network
from stadyn.brainscript._stadyn_library import StadynLibrary
from stadyn.train import feed

REFS = json.loads((Path(__file__).parent.parent / "fixtures" / "brainscript" /
                   "tensor_nodes.json").read_text())


def _ref(name: str) -> np.ndarray:
    return np.asarray(REFS[name], dtype=np.float32)


def _run(text: str, names: str, inputs: dict, params: dict | None = None) -> dict:
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ " + text + " }", StadynLibrary())
        for name, value in inputs.items():
            feed(net.nodes[name], _ref(value))
        for name, value in (params or {}).items():
            net.nodes[name].d = _ref(value).reshape(net.nodes[name].shape)
        return {name: _forward(net.nodes[name]) for name in names.split()}


def _forward(node) -> np.ndarray:
    node.forward()
    return node.d.copy()


def test_lrn_of_cntk_example_configs():
    # AlexNet_ImageNet.cntk's LRN, with k = 1, n = 1, alpha = 0.5, beta = 0.75
    out = _run("""x = Input {5:4:3}
        k = 1.0 ; n = 1 ; alpha = 0.5 ; beta = 0.75
        x2 = x .* x
        x2s = SplitDimension (x2, 3, 1)
        W = ParameterTensor {(1:1:2*n+1:1), learningRateMultiplier = 0, initValue = alpha/(2*n+1)}
        y = Convolution (W, x2s, (1:1:2*n+1), mapDims = 1, stride = 1, sharing = true,
                         autoPadding = true, lowerPad = 0, upperPad = 0,
                         maxTempMemSizeInSamples = 0)
        b = FlattenDimensions (y, 3, 2)
        den = Exp (beta .* Log (k + b))
        r = x .* Reciprocal (den)""", "x2s y r", {"x": "x"})
    assert out["x2s"].shape == (2, 1, 3, 4, 5) and out["y"].shape == (2, 1, 3, 4, 5)
    np.testing.assert_allclose(out["r"], _ref("lrn"), rtol=1e-5, atol=1e-6)


def test_reshaping_slicing_and_transposing():
    out = _run("""x = Input {5:4:3} ; v = Input {7}
        f = FlattenDimensions (x, 2, 2) ; s = SplitDimension (x, 2, 2)
        r = RowSlice (1, 2, x) ; e = Slice (-3, 0, x, axis = 2)
        t = Transpose (x) ; tv = Transpose (v)""", "f s r e t tv", {"x": "x", "v": "v"})
    for name, ref in (("f", "flatten"), ("s", "split"), ("r", "row_slice"),
                      ("e", "slice_from_end"), ("t", "transpose"), ("tv", "transpose_vector")):
        np.testing.assert_array_equal(out[name], _ref(ref), err_msg=name)


def test_hardmax_keeps_the_first_maximum():
    out = _run("x = Input {5:4:3} ; h = Hardmax (x)", "h", {"x": "ties"})
    np.testing.assert_array_equal(out["h"], _ref("hardmax"))
    assert out["h"][0].sum() == 1


def test_sum_elements_sums_the_whole_minibatch():
    out = _run("x = Input {5:4:3} ; s = SumElements (x)", "s", {"x": "x"})
    assert out["s"].shape == (1,)
    np.testing.assert_allclose(out["s"][0], _ref("sum_elements"), rtol=1e-5)


def test_transpose_times():
    out = _run("""v = Input {7} ; u = Input {7} ; E = Parameter (7, 2)
        d = TransposeTimes (v, u) ; p = TransposeTimes (E, v)""", "d p",
               {"v": "v", "u": "u"}, {"E": "E"})
    np.testing.assert_allclose(out["d"], _ref("transpose_times_data"), rtol=1e-5)
    np.testing.assert_allclose(out["p"], _ref("transpose_times_param"), rtol=1e-5)


def test_raw_convolution_with_per_axis_stride_and_padding():
    out = _run("""x = Input {4:4:3} ; W = ParameterTensor {(3:3:3:2)}
        y = Convolution (W, x, (3:3), mapDims = 2, stride = (2:1), autoPadding = (true:false))""",
               "y", {"x": "img"}, {"W": "w_conv"})
    np.testing.assert_allclose(out["y"], _ref("convolution"), rtol=1e-5, atol=1e-6)


def test_convolution_transpose_layer():
    # CNTK sizes an auto-padded axis (4 - 1) * 2 + 1 = 7, not 4 * 2
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ x = Input {4:4:3}
            y = ConvolutionTransposeLayer {2, (3:3), 3, pad = true, stride = 2, bias = false} (x)
            }""", StadynLibrary())
        (w,) = sd.get_parameters().values()
        assert w.shape == (3, 2, 3, 3)              # CNTK's [3 x 3 x 2 x 3]
        w.d = _ref("w_deconv")
        feed(net.nodes["x"], _ref("img"))
        np.testing.assert_allclose(_forward(net.nodes["y"]), _ref("deconvolution"), rtol=1e-5,
                                   atol=1e-6)


def test_errors_name_the_function():
    with pytest.raises(ConfigError, match="FlattenDimensions|Reshape"):
        _run("x = Input {5:4:3} ; f = FlattenDimensions (x, 3, 2)", "f", {"x": "x"})
    with pytest.raises(ConfigError, match="Slice: index range"):
        _run("x = Input {5:4:3} ; r = RowSlice (4, 2, x)", "r", {"x": "x"})
    # the evaluator names the function once, also where the library's message names it
    with pytest.raises(ConfigError) as info:
        _run("x = Input {5:4:3} ; r = Slice (0, 9, x)", "r", {"x": "x"})
    assert info.value.reason.startswith("Slice: index range") and info.value.line == 1


def test_deprecated_image_nodes_of_quick_e2e():
    # Tests/EndToEndTests/Image/QuickE2E/cntk.cntk: ImageInput, MaxPooling, AveragePooling and a
    # Convolution whose weight is a [maps x kernel elements] Parameter matrix
    out = _run("""x = ImageInput (4, 4, 3, imageLayout = "cudnn")
        m = MaxPooling (x, 2, 3, 2, 1, imageLayout = "cudnn")
        a = AveragePooling (x, 2, 3, 2, 1)
        W = Parameter (5, 3 * 3 * 3)
        c = Convolution (W, x, (3:3:3), mapDims = 5, stride = (1:1:3), autoPadding = false,
                         imageLayout = "cudnn")""", "m a c", {"x": "img"})
    np.testing.assert_allclose(out["m"], _ref("max_pooling"), rtol=1e-6)
    np.testing.assert_allclose(out["a"], _ref("average_pooling"), rtol=1e-5)
    assert out["c"].shape == (2, 5, 2, 2)


def test_max_unpooling_layer_of_the_deconvolution_example():
    # 07_Deconvolution_BS.cntk: MaxUnpoolingLayer {(4:4), stride=(4:4)} (pool1, conv1)
    out = _run("""x = Input {4:4:3}
        p = MaxPoolingLayer {(2:2), stride = (2:2)} (x)
        u = MaxUnpoolingLayer {(2:2), stride = (2:2)} (p, x)""", "u", {"x": "img"})
    np.testing.assert_array_equal(out["u"], _ref("max_unpooling"))


def test_a_criterion_built_from_these_nodes_trains():
    # The hand-made criterion of CNTK's Speech/LSTM and G2P configs:
    # SumElements (ReduceLogSum (z) - TransposeTimes (labels, z)); its gradient w.r.t. the
    # bias of z is sum over the minibatch of softmax (z) - labels (rows past RowSlice: 0)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ x = Input {5:4:3} ; labels = Input {4}
            h = FlattenDimensions (Transpose (Transpose (x)), 1, 3)
            z = RowSlice (0, 4, DenseLayer {6} (h))
            ce = SumElements (ReduceLogSum (z) - TransposeTimes (labels, z))
            err = SumElements (Constant (1) - TransposeTimes (labels, Hardmax (z))) }""",
                            StadynLibrary())
        labels = np.eye(4, dtype=np.float32)[[1, 3]]
        feed(net.nodes["x"], _ref("x"))
        feed(net.nodes["labels"], labels)
        z, err = _forward(net.nodes["z"]), _forward(net.nodes["err"])
        ce = net.nodes["ce"]
        ce.forward()
        ce.backward()
        # cntk.exe's name: the layer is RowSlice's argument 'input' (CNTK.core.bs)
        bias = sd.get_parameters()["z.input.arrayOfFunctions[0].b"]
    soft = np.exp(z - z.max(axis=1, keepdims=True))
    soft /= soft.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(bias.g[:4], (soft - labels).sum(axis=0), rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(bias.g[4:], 0)
    assert err[0] == (z.argmax(axis=1) != labels.argmax(axis=1)).sum()


@pytest.mark.parametrize("text, dims, fans", [
    # ConvolutionTransposeLayer's W is a ParameterTensor [5:5:1:1]: fanOut = 5, fanIn = 5*1*1
    ("L = ConvolutionTransposeLayer {1, (5:5), 1, bias = false, initValueScale = 1}\n"
     "y = L (x)", (5, 5, 1, 1), (5, 5)),
    # a ParameterTensor with a kernel's ranks: fanIn = 3*3*2, fanOut = 3*3*4
    ("W = ParameterTensor {(3:3:2:4), init = 'glorotUniform', initFilterRank = 2, "
     "initOutputRank = -1}\ny = W", (3, 3, 2, 4), (18, 36)),
    ("W = ParameterTensor {(6:2:4), init = 'glorotUniform'}\ny = W", (6, 2, 4), (8, 6)),
])
def test_random_parameters_draw_with_cntk_fans(text, dims, fans):
    # CNTK's InitRandom (InputAndParamNodes.cpp): glorotUniform is U(+-sqrt(6 / (fanIn + fanOut)))
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ x = Input {8:8:1}\n" + text + " }", StadynLibrary())
        _forward(net.nodes["y"])
        (w,) = sd.get_parameters().values()
    limit = np.sqrt(6.0 / sum(fans))
    assert tuple(reversed(w.shape)) == dims
    assert np.abs(w.d).max() <= limit and np.abs(w.d).max() > 0.6 * limit


def test_if_on_a_node_is_cntk_exes_if_node():
    # BrainScriptEvaluator.cpp:378, 589-596: 'if' with a node as its condition makes an If
    # node of (cond, then, else), evaluated at the paths 'if', 'then', 'else'; a number among
    # them is a constant node at the expression's path (CastToComputationNode); the node picks
    # 'then' where cond is not 0 (NumPy's where below)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ x = Input {3} ; c = Input {3}
            y = if c then x .* 2 else 7 ; z = if x > 0 then x else -x }""", StadynLibrary())
        made = {k: np.asarray(v.d).tolist() for k, v in
                sd.get_parameters(grad_only=False).items()}
        x, c = np.array([[1, -2, 3]], np.float32), np.array([[0, 1, -0.5]], np.float32)
        feed(net.nodes["x"], x)
        feed(net.nodes["c"], c)
        for name, want in (("y", np.where(c != 0, 2 * x, 7)), ("z", np.abs(x))):
            net.nodes[name].forward()
            np.testing.assert_array_equal(net.nodes[name].d, want)
    assert made == {"_y.then": [2.0], "_y": [7.0], "_z.if": [0.0]}
    with pytest.raises(ConfigError, match=":1:23: .*not booleans"):
        build_network("{ x = Input {3} ; y = if x then true else x }", StadynLibrary())
