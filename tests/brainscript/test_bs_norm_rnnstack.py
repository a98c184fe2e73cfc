"""BrainScript's ``DiagTimes``, ``LayerNormalizationLayer``, ``OptimizedRNNStack`` and
``Inferred`` (``_norm_library.py``, ``_rnnstack_library.py``), against independent numbers:

- ``LayerNormalizationLayer``: CNTK 2.7's ``layers.LayerNormalization`` with ``epsilon = 0``
  (``refgen_bs_layer_norm.py`` wrote ``layer_norm_cntk27.json``: values, the input's gradient and
  the summed gradients of its per-element scale and bias, which are CNTK.core.bs's scalar gain
  and bias), and a hand-computed value that shows CNTK.core.bs's layer has no epsilon;
- ``DiagTimes``: NumPy (``DiagTimesNode``'s forward and backward), also inside a loop;
- ``OptimizedRNNStack``: CNTK 2.7's own numbers (``tests/ops/refs/rnnstack_cntk27.npz``, CNTK's
  converter running the flat cuDNN weights as its layers) and the weight shape of cntk.exe's log
  of ``Tests/EndToEndTests/Speech/LSTM/FullUtteranceCuDNN5`` (``[256 x 14648]``).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn._errors import ConfigError
from stadyn.brainscript import StadynLibrary, build_network, run
from stadyn.train import feed

TESTS = Path(__file__).parent.parent
LN_REFS = json.loads((TESTS / "fixtures" / "brainscript" / "layer_norm_cntk27.json").read_text())
ORS_REFS = np.load(TESTS / "ops" / "refs" / "rnnstack_cntk27.npz")


def _build(text: str):
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ " + text + " }", StadynLibrary())
        params = dict(sd.get_parameters())
    return net, params


def _backward(node, weights: np.ndarray | None = None):
    """``sum (node .* weights)`` (or ``sum (node)``) forward and backward."""
    y = node if weights is None else F.mul2(node, sd.Variable.from_numpy_array(weights))
    loss = F.sum(y)
    loss.forward()
    loss.backward()
    return loss


# ---- LayerNormalizationLayer ------------------------------------------------------------------
@pytest.mark.parametrize("case, dims", [("vector", "5"), ("matrix", "4:2")])
def test_layer_normalization_is_cntk_27s_with_one_gain_and_bias(case, dims):
    ref = LN_REFS[case]
    net, params = _build(f"""x = Input{{{dims}}}
        ln = LayerNormalizationLayer {{initScale = {LN_REFS['scale']},
                                       initBias = {LN_REFS['bias']}}}
        y = ln (x)""")
    # cntk.exe's names: CNTK.core.bs's record members gain and bias, at the layer's path
    assert {k: v.shape for k, v in params.items()} == {"ln.gain": (1,), "ln.bias": (1,)}
    gain, bias = params["ln.gain"], params["ln.bias"]
    assert (float(gain.d[0]), float(bias.d[0])) == (LN_REFS["scale"], LN_REFS["bias"])
    x = net.nodes["x"]
    feed(x, np.asarray(ref["x"], np.float32))
    x.need_grad = True
    _backward(net.nodes["y"], np.asarray(ref["r"], np.float32))
    np.testing.assert_allclose(net.nodes["y"].d, ref["y"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.g, ref["grad_x"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gain.g, [ref["grad_gain"]], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bias.g, [ref["grad_bias"]], rtol=1e-5, atol=1e-5)


def test_layer_normalization_has_no_epsilon_and_shares_its_parameters():
    """CNTK 2.7's Python layer gives 2.99999 for this (its docstring; epsilon 1e-5 added to
    the standard deviation 2); CNTK.core.bs's formula has none: exactly 3 and -1.  A layer
    applied twice uses its one gain and bias twice."""
    net, params = _build("""x = Input{4}
        ln = LayerNormalizationLayer {initScale = 2, initBias = 1}
        y = ln (x) ; z = ln (y)""")
    assert len(params) == 2
    feed(net.nodes["x"], np.array([[4.0, 0.0, 0.0, 4.0]], np.float32))
    for name in ("y", "z"):
        net.nodes[name].forward()
    assert net.nodes["y"].d.tolist() == [[3.0, -1.0, -1.0, 3.0]]
    np.testing.assert_allclose(net.nodes["z"].d, [[3.0, -1.0, -1.0, 3.0]], rtol=1e-6)


def test_a_layer_normalization_never_applied_makes_no_parameter():
    """CNTK.core.bs's layer is a record whose ``gain`` and ``bias`` are made when ``apply``
    first reads them: Speech/LSTM/Truncated's log (useLayerNorm = true in a model the
    modelSelector leaves unused) lists no ``...arrayOfFunctions.gain``; applied, they are made
    at the layer's path, gain first (``xHat .* gain + bias``)."""
    _, params = _build("""x = Input{4}
        unused = LayerNormalizationLayer {}
        ln = LayerNormalizationLayer {initScale = 2}
        y = ln (x) ; z = ln (y)""")
    assert list(params) == ["ln.gain", "ln.bias"]
    assert float(params["ln.gain"].d[0]) == 2.0


def test_layer_normalization_of_sequences_normalises_each_step_and_ignores_padding():
    """Each step is a sample; a padded step (variance 0) must not put NaN into the gain's and
    the bias's gradients (cntk.exe has no padding)."""
    net, params = _build("""t = DynamicAxis{} ; x = Input {4, dynamicAxis = t}
        y = LayerNormalizationLayer {initScale = 2, initBias = 0.5} (x)""")
    gain, bias = params["y.gain"], params["y.bias"]
    rng = np.random.RandomState(7)
    xs = [rng.uniform(-1, 1, (n, 4)).astype(np.float32) for n in (3, 1, 2)]
    net.nodes["x"].d = xs
    y = net.nodes["y"]
    loss = F.sum(sd.sequence.reduce_sum(F.mul2(y, y)))
    loss.forward()
    loss.backward()
    steps = np.concatenate(xs).astype(np.float64)
    x_hat = (steps - steps.mean(1, keepdims=True)) / steps.std(1, keepdims=True)
    want = 2.0 * x_hat + 0.5
    for got, expect in zip(sd.sequence.unpack_value(y), np.split(want, [3, 4])):
        np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gain.g, [np.sum(2.0 * want * x_hat)], rtol=1e-4)
    np.testing.assert_allclose(bias.g, [np.sum(2.0 * want)], rtol=1e-4)


def test_layer_normalization_arguments_are_cntk_core_bs_s():
    with pytest.raises(ConfigError, match="epsilon"):
        _build("x = Input{4} ; y = LayerNormalizationLayer {epsilon = 0.001} (x)")
    with pytest.raises(ConfigError, match="initScale must be a number"):
        _build("x = Input{4} ; y = LayerNormalizationLayer {initScale = 'one'} (x)")


# ---- DiagTimes --------------------------------------------------------------------------------
def test_diag_times_scales_each_row_and_sums_the_vectors_gradient_over_the_columns():
    net, params = _build("""x = Input{4:2}
        d = Parameter (8, 1, init = 'uniform')
        y = DiagTimes (d, x)
        e = Parameter (Inferred, 1, init = 'uniform')     # [0 x 1]: its rows from the data's
        z = DiagTimes (e, x)""")
    # members are made in cntk.exe's order (by name): d, then e, whose shape comes from the data
    d, e = params["d"], params["e"]
    assert d.shape == (1, 8) and e.shape == (1, 8)
    rng = np.random.RandomState(3)
    xv = rng.uniform(-1, 1, (3, 2, 4)).astype(np.float32)
    rv = rng.uniform(-1, 1, (3, 2, 4)).astype(np.float32)
    x = net.nodes["x"]
    feed(x, xv)
    x.need_grad = True
    _backward(net.nodes["y"], rv)
    # DiagTimesNode: column j of the output is d .* column j; a sample's [4 x 2] elements are
    # one column (column-major, i.e. Stadyn's (2, 4) row-major)
    dv = d.d.reshape(-1).astype(np.float64)
    cols = xv.reshape(3, 8).astype(np.float64)
    np.testing.assert_allclose(net.nodes["y"].d.reshape(3, 8), cols * dv, rtol=1e-6)
    np.testing.assert_allclose(d.g.reshape(-1), (rv.reshape(3, 8) * cols).sum(0), rtol=1e-5)
    np.testing.assert_allclose(x.g.reshape(3, 8), rv.reshape(3, 8) * dv, rtol=1e-6)
    net.nodes["z"].forward()
    np.testing.assert_allclose(net.nodes["z"].d.reshape(3, 8), cols * e.d.reshape(-1),
                               rtol=1e-6)


def test_diag_times_of_a_matrix_without_batch_axis_scales_its_rows():
    net, params = _build("""d = Parameter (3, 1, init = 'uniform')
        M = Parameter (3, 2, init = 'uniform')
        y = DiagTimes (d, M)""")
    d, m = net.nodes["d"], net.nodes["M"]   # by name: cntk.exe makes them in its own order
    y = net.nodes["y"]
    y.forward()
    # CNTK's [3 x 2] matrix is Stadyn's (2, 3): row i (CNTK) is Stadyn's last index i
    np.testing.assert_allclose(y.d, m.d * d.d.reshape(1, 3), rtol=1e-6)
    assert y.shape == (2, 3)


@pytest.mark.parametrize("delay", ["3", "0"])
def test_diag_times_in_a_loop_is_a_numpy_recurrence(delay):
    """LSTM_CTC's peepholes: ``DiagTimes (W, c)`` of the previous cell value.  ``PastValue (0,
    c)`` leaves the delay's dimension to DiagTimes's vector."""
    net, params = _build(f"""x = Input{{3}}
        d = Parameter (3, 1, init = 'uniform', initValueScale = 10)
        c = x + DiagTimes (d, PastValue ({delay}, c))""")
    dv = params["d"].d.reshape(-1).astype(np.float64)
    rng = np.random.RandomState(5)
    xs = [rng.uniform(-1, 1, (n, 3)).astype(np.float32) for n in (4, 1, 3)]
    net.nodes["x"].d = xs
    c = net.nodes["c"]
    c.forward()
    for got, seq in zip(sd.sequence.unpack_value(c), xs):
        prev, want = np.full(3, 0.1), []
        for step in seq:
            prev = step + dv * prev
            want.append(prev)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_diag_times_checks_cntk_s_shapes():
    with pytest.raises(ConfigError, match="the diagonal has 4 elements, but the matrix has 3"):
        _build("x = Input{3} ; d = Parameter (4, 1) ; y = DiagTimes (d, x)")
    with pytest.raises(ConfigError, match=r"must be a column vector \[rows x 1\]"):
        _build("x = Input{3} ; d = Parameter (3, 2) ; y = DiagTimes (d, x)")


# ---- OptimizedRNNStack ------------------------------------------------------------------------
_ORS_CASES = [("lstm", 1, False), ("lstm", 2, True), ("rnnTanh", 2, False), ("rnnReLU", 1, True)]


@pytest.mark.parametrize("k", range(len(_ORS_CASES)),
                         ids=[f"{op}-{n}{'-bi' * bi}" for op, n, bi in _ORS_CASES])
def test_optimized_rnn_stack_gives_cntk_27s_numbers(k):
    op, layers, bidirectional = _ORS_CASES[k]
    net, params = _build(f"""x = Input{{3}}
        W = ParameterTensor {{0:0, initOutputRank = -1, init = 'heNormal'}}
        y = OptimizedRNNStack (W, x, 4, numLayers = {layers},
                               bidirectional = {str(bidirectional).lower()},
                               recurrentOp = '{op}')""")
    (w,) = params.values()
    assert w.shape == tuple(ORS_REFS[f"{k}_weight_shape"])       # CNTK's (count / 4, 4)
    w.d = ORS_REFS[f"{k}_weights"]
    lengths = ORS_REFS["lengths"]
    x = net.nodes["x"]
    x.d = [ORS_REFS["x"][b, :n] for b, n in enumerate(lengths)]
    x.need_grad = True
    y = net.nodes["y"]
    _backward(y)
    np.testing.assert_allclose(y.d, ORS_REFS[f"{k}_y"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(x.g, ORS_REFS[f"{k}_grad_x"], rtol=1e-4, atol=1e-5)
    assert w.g is not None and np.abs(w.g).sum() > 0


def test_optimized_rnn_stack_weights_are_cntk_exe_s_inferred_parameter():
    """cntk.exe's FullUtteranceCuDNN5 log: ``Tensor shape was inferred as [256 x 14648]``,
    ``heNormal ... range=0.008839(0.088388*0.100000)`` (fan-in 256, initOutputRank -1)."""
    net, params = _build("""x = Input{33}
        W = ParameterTensor {0:0, initOutputRank = -1, init = 'heNormal', initValueScale = 1/10}
        y = OptimizedRNNStack (W, x, 256, numLayers = 3, bidirectional = true)""")
    (w,) = params.values()
    assert w.shape == (14648, 256)                 # CNTK's [256 x 14648], 3,749,888 numbers
    assert net.nodes["y"].shape[-1] == 512
    assert abs(float(w.d.std()) - 0.0088388) < 2e-4


def test_optimized_rnn_stack_refuses_what_cntk_refuses():
    with pytest.raises(ConfigError, match="needs 144"):
        _build("x = Input{3} ; W = ParameterTensor {(4:30)} ; y = OptimizedRNNStack (W, x, 4)")
    with pytest.raises(ConfigError, match="unknown recurrentOp 'relu'"):
        _build("x = Input{3} ; W = ParameterTensor {0:0} ; "
               "y = OptimizedRNNStack (W, x, 4, recurrentOp = 'relu')")
    with pytest.raises(ConfigError, match="axis = 2"):
        _build("x = Input{3} ; W = ParameterTensor {0:0} ; "
               "y = OptimizedRNNStack (W, x, 4, axis = 2)")


# ---- Inferred ---------------------------------------------------------------------------------
def test_inferred_is_a_dimension_the_first_use_sets():
    net, params = _build("x = Input{5} ; W = Parameter (4, Inferred) ; y = W * x ; n = Inferred")
    assert params["W"].shape == (5, 4) and net.nodes["y"].shape == (1, 4)


# ---- a config that uses them, as CNTK's Speech/LSTM test does -----------------------------------
_CONFIG = """command = create:train
precision = "float" ; deviceId = -1 ; makeMode = false
modelPath = "$OutputDir$/m.dnn"
create = {
    action = "edit"
    outputModelPath = "$modelPath$.initial"
    BrainScriptNetworkBuilder = {
        features = Input {6} ; labels = Input {2}
        model = Sequential (
            LayerNormalizationLayer {} :
            (_ => OptimizedRNNStack (ParameterTensor {0:0, initOutputRank = -1, init = 'heNormal'},
                                     _, 8, numLayers = 2, bidirectional = true)) :
            (x => DiagTimes (Parameter (16, 1, init = 'fixedValue', value = 1), x)) :
            DenseLayer {2}
        )
        z = model (features)
        ce = CrossEntropyWithSoftmax (labels, z)
        criterionNodes = (ce) ; outputNodes = (z)
    }
}
train = {
    action = "train"
    BrainScriptNetworkBuilder = (BS.Network.Load ("$modelPath$.initial"))
    SGD = { epochSize = 0 ; maxEpochs = 2 ; minibatchSize = 32 ; learningRatesPerSample = 0.05 }
    reader = { readerType = "CNTKTextFormatReader" ; file = "$OutputDir$/train.ctf"
        input = { features = { alias = "x" ; dim = 6 ; format = "dense" }
                  labels = { alias = "y" ; dim = 2 ; format = "dense" } } }
}
"""


def test_a_config_saves_and_trains_the_network_they_build(tmp_path):
    """CNTK's Speech/LSTM pattern: an ``edit`` command saves the network, ``train`` loads it
    with ``BS.Network.Load``; the losses stay finite (padded steps in the layer norm)."""
    rng = np.random.RandomState(0)
    lines = []
    for s in range(12):
        for _ in range(rng.randint(2, 6)):
            x = rng.randn(6)
            label = "1 0" if x[:3].sum() > 0 else "0 1"
            lines.append(f"{s} |x {' '.join(f'{v:.3f}' for v in x)} |y {label}")
    (tmp_path / "train.ctf").write_text("\n".join(lines) + "\n")
    (tmp_path / "lstm.cntk").write_text(_CONFIG)
    out = io.StringIO()
    result = run(tmp_path / "lstm.cntk", [f"OutputDir={tmp_path}"], out=out)
    log = out.getvalue()
    # LN 2 + the stack's [8 x 336] (2 layers, 2 directions, over 6 then 16 inputs) + 16 + 34
    assert "Training 2740 parameters in 6 parameter tensors." in log
    losses = [e.criterion["ce"] for e in result.commands["train"]]
    assert len(losses) == 2 and all(np.isfinite(losses))
