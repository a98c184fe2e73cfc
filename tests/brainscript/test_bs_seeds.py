"""BrainScript parameters take cntk.exe's seeds, in cntk.exe's order, with cntk.exe's ranges.

cntk.exe builds a network lazily from its special nodes (ComputationNetwork's constructor:
``criterionNodes``, ``evaluationNodes``, ... then every member, by name), and a layer makes its
weight before it evaluates its input, so the output layer's weight takes seed 1 (its baseline
logs: ``... <- glorotUniform(seed=1, init dims=[10 x 256] ...``).  The seeds count on over the
whole process (a function-local static in LearnableParameter's constructor), through all its
commands.  The seed lines are read from the baseline logs of CNTK's end-to-end tests, in the
copy of CNTK at ``$STADYN_CNTK_SOURCE`` (without one those tests skip); a parameter's seed is
found by drawing its values again with each candidate seed.
"""

from __future__ import annotations

import io as pyio
import math
import re

import numpy as np
import pytest

import stadyn as sd
from stadyn._cpp_normal import normal_floats
from stadyn._mt19937 import uniform_floats
from stadyn._random import restart_auto_seeds
from stadyn.brainscript import StadynLibrary, build_network, load_config, run, run_config
from stadyn.brainscript._model_files import load_model_parameters
from cntk_repo_files import cntk_file

EXAMPLES = "Tests/EndToEndTests/Examples/Image"
_SEED_LINE = re.compile(r"Node '([^']+)' \(LearnableParameter operation\): Initializing "
                        r"Parameter\[([^\]]*)\] <- (\w+)\(seed=(\d+), init dims=\[(\d+) x (\d+)\]")


def _baseline_seeds(path: str) -> list[tuple[str, str, int, int, int, int]]:
    """(node, init, seed, fanOut, fanIn, size) of each seed line of a baseline log."""
    text = cntk_file(path).decode("utf-8", "replace")
    return [(m[0], m[2], int(m[3]), int(m[4]), int(m[5]),
             math.prod(int(d) for d in m[1].split(" x "))) for m in _SEED_LINE.findall(text)]


def _draw(init: str, seed: int, shape, fan_out: int, fan_in: int, scale: float = 1.0):
    """What cntk.exe's LearnableParameter draws (its uniform and, Boost's ziggurat, normal
    numbers), its range computed as cntk.exe does: in double, rounded to float32, times the
    scale in float32."""
    base = {"glorotUniform": math.sqrt(6 / (fan_in + fan_out)), "heNormal": math.sqrt(2 / fan_in),
            "gaussian": 0.2 / math.sqrt(fan_in)}[init]
    r = float(np.float32(base) * np.float32(scale))
    if init == "glorotUniform":
        return uniform_floats(seed, int(np.prod(shape)), r).reshape(shape)
    return normal_floats(seed, int(np.prod(shape)), r).reshape(shape)


def _seed_of(w: np.ndarray, init: str, fan_out: int, fan_in: int, scale: float = 1.0) -> int:
    for seed in range(1, 40):
        if np.allclose(w, _draw(init, seed, w.shape, fan_out, fan_in, scale), rtol=1e-6,
                       atol=0):
            return seed
    raise AssertionError(f"no seed draws this {init} parameter of shape {w.shape}")


def _weights() -> list[np.ndarray]:
    """The random weights (every parameter but biases and batch normalisations), as made."""
    return [p.d for k, p in sd.get_parameters().items() if k.endswith((".W", "/W"))]


def _build_command(path: str, text: bytes | str, tmp_path, command: int = 0):
    """Build the network of a config's ``command``-th command as a run would (seeds from 1)."""
    config = tmp_path / path.rsplit("/", 1)[-1]
    config.write_bytes(text if isinstance(text, bytes) else text.encode())
    network = run_config(load_config(config, ["dataDir=/data"])).commands[command].network
    restart_auto_seeds(1)
    return build_network(network, StadynLibrary(0.5))


def _check_against_baseline(config: str, baseline: str, tmp_path, scale=lambda init: 1.0):
    """Each seed line of ``baseline`` names the weight of its fans, drawn with its seed."""
    lines = _baseline_seeds(baseline)
    assert lines
    with sd.parameter_registry(sd.ParameterRegistry()):
        _build_command(config, cntk_file(config), tmp_path)
        weights = {w.size: w for w in _weights()}
        assert len(weights) == len(lines)
        for node, init, seed, fan_out, fan_in, size in lines:
            w = weights[size]
            assert _seed_of(w, init, fan_out, fan_in, scale(init)) == seed, node
    return lines


# ---------------------------------------------------------------------------------------------
# One network: the output layer's weight first
# ---------------------------------------------------------------------------------------------
def test_mlp_mnist_seeds_are_cntk_exes(tmp_path):
    # model = Sequential (Scale : DenseLayer {768, init = "gaussian", initValueScale = 1.5} :
    # ... : LinearLayer {10}): the baseline's arrayOfFunctions[10].W seed 1, [7] 2, [4] 3, [1] 4
    lines = _check_against_baseline(
        "Examples/Image/Classification/MLP/BrainScript/MLP_MNIST.cntk",
        f"{EXAMPLES}/Classification/MLP_MNIST/MLP_MNIST/baseline.txt", tmp_path,
        scale=lambda init: 1.5 if init == "gaussian" else 1.0)
    assert [(n.split(".")[1], s) for n, _, s, *_ in lines] == [
        ("arrayOfFunctions[1]", 4), ("arrayOfFunctions[4]", 3), ("arrayOfFunctions[7]", 2),
        ("arrayOfFunctions[10]", 1)]


def test_one_hidden_and_one_conv_seeds_are_cntk_exes(tmp_path):
    # two cntk.exe processes in one baseline (a record of layers, then a Sequential), each
    # counting from 1: the LinearLayer's weight 1, the DenseLayer's 2 (the ConvolutionalLayer's 3)
    both = "Tests/EndToEndTests/EvalClientTests/CSEvalClientTest/baseline.txt"
    lines = _baseline_seeds(both)
    assert [s for _, _, s, *_ in lines] == [2, 1, 3, 2, 1]
    for config, part in (("Examples/Image/GettingStarted/01_OneHidden.cntk", lines[:2]),
                         ("Examples/Image/GettingStarted/02_OneConv.cntk", lines[2:])):
        with sd.parameter_registry(sd.ParameterRegistry()):
            _build_command(config, cntk_file(config), tmp_path)
            weights = {w.size: w for w in _weights()}
            assert len(weights) == len(part)
            for node, init, seed, fan_out, fan_in, size in part:
                assert _seed_of(weights[size], init, fan_out, fan_in) == seed, node


_ONE_HIDDEN_2016 = """
command = trainNetwork
trainNetwork = [
    action = "train"
    BrainScriptNetworkBuilder = {
        imageShape = 28:28:1 ; labelDim = 10 ; featScale = 1/256
        Scale{f} = x => Constant(f) .* x
        model = Sequential (Scale {featScale} : DenseLayer {200, activation=ReLU} :
                            LinearLayer {labelDim})
        features = Input {imageShape} ; labels = Input {labelDim}
        ol = model (features)
        ce = CrossEntropyWithSoftmax (labels, ol) ; errs = ClassificationError (labels, ol)
        featureNodes = (features) ; labelNodes = (labels) ; criterionNodes = (ce)
        evaluationNodes = (errs) ; outputNodes = (ol)
    }
]
"""


def test_getting_started_one_hidden_seeds_are_cntk_exes(tmp_path):
    # 01_OneHidden's network as its 2016 baseline ran it (a Sequential; the nodes' names
    # show it): the LinearLayer 1, the DenseLayer 2
    lines = _baseline_seeds(f"{EXAMPLES}/GettingStarted/01_OneHidden/baseline.txt")
    assert [(n, s) for n, _, s, *_ in lines] == [
        ("model.arrayOfFunctions[1].arrayOfFunctions[0].W", 2), ("model.arrayOfFunctions[3].W", 1)]
    with sd.parameter_registry(sd.ParameterRegistry()):
        _build_command("01_OneHidden.cntk", _ONE_HIDDEN_2016, tmp_path)
        weights = {w.size: w for w in _weights()}
        for node, init, seed, fan_out, fan_in, size in lines:
            assert _seed_of(weights[size], init, fan_out, fan_in) == seed, node


# FCN's TrainFCN8 network (Tests/EndToEndTests/Image/FCN: fcn.cntk, shared.bs) up to its
# prediction; its upsampling and cropping (nodes Stadyn lacks) make no random parameter
_FCN8 = """{
ConvBNLayer{outChannels, kernel, stride, bnTimeConst} = Sequential(
    ConvolutionalLayer{outChannels, kernel, init = "heNormal", stride = stride, pad = true,
                       bias = false} :
    BatchNormalizationLayer{spatialRank = 2, normalizationTimeConstant = bnTimeConst,
                            useCntkEngine = true})
Conv1x1BNLayer{outChannels, stride, bnTimeConst} = Sequential(
    ConvolutionalLayer{outChannels, (1:1), init = "heNormal", stride = stride, pad = false,
                       bias = false} :
    BatchNormalizationLayer{spatialRank = 2, normalizationTimeConstant = bnTimeConst,
                            useCntkEngine = true})
ConvBNReLULayer{outChannels, kernelSize, stride, bnTimeConst} = Sequential(
    ConvBNLayer{outChannels, kernelSize, stride, bnTimeConst} : ReLU)
ResNetBasic{outChannels, bnTimeConst} = {
    apply(x) = {
        b = Sequential(ConvBNReLULayer{outChannels, (3:3), (1:1), bnTimeConst} :
                       ConvBNLayer{outChannels, (3:3), (1:1), bnTimeConst})(x)
        p = Plus(b, x)
        r = ReLU(p)
    }.r
}.apply
ResNetBasicInc{outChannels, stride, bnTimeConst} = {
    apply(x) = {
        b = Sequential(ConvBNReLULayer{outChannels, (3:3), stride, bnTimeConst} :
                       ConvBNLayer{outChannels, (3:3), (1:1), bnTimeConst})(x)
        s = Conv1x1BNLayer{outChannels, stride, bnTimeConst}(x)
        p = Plus(b, s)
        r = ReLU(p)
    }.r
}.apply
ConvLayer1x1MSRAInit(input, inputChannels, outputChannels, horizontalStride, verticalStride) = [
    W = Parameter(outputChannels, inputChannels, init ='heNormal')
    c = Convolution(W, input, (1:1:inputChannels), mapDims = (1:1:outputChannels),
                    stride = (horizontalStride:verticalStride:inputChannels),
                    autoPadding = false, imageLayout = "cudnn")
].c
bnTimeConst = 15992
features = ImageInput(28, 28, 1, imageLayout = "cudnn", tag = 'feature')
labels = ImageInput(28, 28, 2, imageLayout = "cudnn", tag = 'label')
featuresFCN4 = Sequential(ConvBNReLULayer{16, (7:7), (2:2), bnTimeConst} :
                          MaxPoolingLayer{(3:3), stride = 2, pad = true})(features)
featuresFCN8 = Sequential(ResNetBasicInc{16, (2:2), bnTimeConst} :
                          ResNetBasic{16, bnTimeConst})(featuresFCN4)
predictionFCN8 = ConvLayer1x1MSRAInit(featuresFCN8, 16, 2, 1, 1)
CE = ReduceSum (predictionFCN8)
featureNodes = (features) ; labelNodes = (labels) ; criterionNodes = (CE)
outputNodes = (predictionFCN8)
}"""


def test_fcn8_resnet_blocks_seeds_are_cntk_exes():
    # a block's second convolution before its first, its input's before the shortcut:
    # featuresFCN8.b [1] 2, [0] 3, x.b [1] 4, [0] 5, featuresFCN4 6, x.s 7; the prediction's
    # weight (its dimensions known, not logged) took seed 1
    seeds = {n: s for n, _, s, *_ in _baseline_seeds("Tests/EndToEndTests/Image/FCN/baseline.txt")}
    assert sorted(seeds.values()) == [2, 3, 4, 5, 6, 7]
    # Stadyn names the convolutions as the data reaches them
    in_data_order = ["featuresFCN4.arrayOfFunctions[0]", "featuresFCN8.x.b.arrayOfFunctions[0]",
                     "featuresFCN8.x.b.arrayOfFunctions[1]", "featuresFCN8.x.s",
                     "featuresFCN8.b.arrayOfFunctions[0]", "featuresFCN8.b.arrayOfFunctions[1]"]
    want = [next(s for n, s in seeds.items() if n.startswith(prefix + ".")) for prefix in
            in_data_order]
    with sd.parameter_registry(sd.ParameterRegistry()):
        restart_auto_seeds(1)
        build_network(_FCN8, StadynLibrary())
        params = sd.get_parameters()
        got = []
        for name, p in params.items():
            if p.ndim == 4:                             # the convolutions' kernels
                w = p.d
                fan_in = int(np.prod(w.shape[1:]))
                got.append(_seed_of(w, "heNormal", w.shape[0] * w.shape[2] * w.shape[3], fan_in))
        assert got == want
        assert _seed_of(params["predictionFCN8.W"].d, "heNormal", 2, 16) == 1


# ---------------------------------------------------------------------------------------------
# Orders within a description
# ---------------------------------------------------------------------------------------------
def _seeds_of_dense_weights(text: str) -> dict[int, int]:
    """{fan-in of a DenseLayer's weight: its seed} of a network with glorotUniform layers."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        restart_auto_seeds(1)
        build_network(text, StadynLibrary())
        return {w.shape[0]: _seed_of(w, "glorotUniform", w.shape[1], w.shape[0])
                for w in _weights()}


def test_sequential_starts_with_its_last_layer_and_forward_composition_with_its_first():
    # CNTK.core.bs: Sequential (F : G) applies G to F (x) evaluated when G asks for it; F >> G
    # (BrainScriptEvaluator's composition) applies F, then G
    layers = "DenseLayer {5} : DenseLayer {7}"
    seq = _seeds_of_dense_weights(f"{{ x = Input {{3}} ; z = Sequential ({layers}) (x) }}")
    fwd = _seeds_of_dense_weights(f"{{ x = Input {{3}} ; z = ({layers.replace(':', '>>')}) (x) }}")
    assert seq == {3: 2, 5: 1} and fwd == {3: 1, 5: 2}


def test_forward_composition_makes_its_first_layer_before_its_argument():
    # BrainScriptEvaluator.cpp's F >> G: F->Apply (args) with the arguments lazy, then G; F's
    # weight is made before F evaluates its input, so before the argument's layer (seeds 1,
    # 2, 3: F, argument, G).  Sequential (F : G): G, then F, then the argument
    arg = "DenseLayer {4} (x)"
    fwd = _seeds_of_dense_weights(f"{{ x = Input {{3}} ; z = (DenseLayer {{5}} >> "
                                  f"DenseLayer {{7}}) ({arg}) }}")
    seq = _seeds_of_dense_weights(f"{{ x = Input {{3}} ; z = Sequential (DenseLayer {{5}} : "
                                  f"DenseLayer {{7}}) ({arg}) }}")
    assert fwd == {4: 1, 3: 2, 5: 3} and seq == {5: 1, 4: 2, 3: 3}


def test_special_nodes_first_then_the_members_by_name():
    # criterionNodes before outputNodes; the members not reached from them by name (a before z)
    text = """{ x = Input {3}
        z = DenseLayer {4} (x) ; o = DenseLayer {5} (x) ; a = DenseLayer {6} (x)
        ce = ReduceSum (DenseLayer {1} (o))
        outputNodes = (z) ; criterionNodes = (ce) }"""
    with sd.parameter_registry(sd.ParameterRegistry()):
        restart_auto_seeds(1)
        build_network(text, StadynLibrary())
        got = {w.shape[1]: _seed_of(w, "glorotUniform", w.shape[1], w.shape[0])
               for w in _weights()}
    assert got == {1: 1, 5: 2, 4: 3, 6: 4}


def test_a_parameter_tensor_takes_its_seed_when_first_needed():
    # Speech/Simple's network written in BrainScript: cntk.exe would count from the criterion
    text = """{ x = Input {2} ; y = Input {2}
        W0 = ParameterTensor {(5:2), init = 'uniform'}
        W1 = ParameterTensor {(2:5), init = 'uniform'}
        z = W1 * Sigmoid (W0 * x)
        ce = CrossEntropyWithSoftmax (y, z) ; criterionNodes = (ce) }"""
    with sd.parameter_registry(sd.ParameterRegistry()):
        restart_auto_seeds(1)
        net = build_network(text, StadynLibrary())
        limit = float(np.float32(0.05))
        for name, seed in (("W1", 1), ("W0", 2)):
            w = net.nodes[name].d
            assert np.array_equal(w.ravel(), uniform_floats(seed, w.size, limit)), name


# ---------------------------------------------------------------------------------------------
# 'uniform' and a scale: float32 arithmetic
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [0.1, 0.2, 0.3, 1.2])
def test_uniform_range_is_the_float32_product(scale):
    # cntk.exe: range = 0.05f; range *= (float) initValueScale -- not float32(0.05 * scale),
    # which is another float for these scales
    in_float = np.float32(0.05) * np.float32(scale)
    assert in_float != np.float32(0.05 * scale)
    with sd.parameter_registry(sd.ParameterRegistry()):
        restart_auto_seeds(1)
        net = build_network(f"{{ w = ParameterTensor {{(30:20), init = 'uniform', "
                            f"initValueScale = {scale}}} }}", StadynLibrary())
        w = net.nodes["w"].d
    assert np.array_equal(w.ravel(), uniform_floats(1, w.size, float(in_float)))
    assert not np.array_equal(w.ravel(),
                              uniform_floats(1, w.size, float(np.float32(0.05 * scale))))


def test_a_scaled_he_uniform_layer_draws_the_float32_range():
    with sd.parameter_registry(sd.ParameterRegistry()):
        restart_auto_seeds(1)
        build_network("{ x = Input {37} ; z = DenseLayer {11, init = 'heUniform', "
                      "initValueScale = 0.3} (x) }", StadynLibrary())
        (w,) = _weights()
    in_float = np.float32(math.sqrt(6 / 37)) * np.float32(0.3)
    assert in_float != np.float32(math.sqrt(6 / 37) * 0.3)
    assert np.array_equal(w.ravel(), uniform_floats(1, w.size, float(in_float)))


# ---------------------------------------------------------------------------------------------
# One count for the whole run
# ---------------------------------------------------------------------------------------------
_RUN = """
command = TrainA:TestA:TrainB
deviceId = -1 ; traceLevel = 0 ; makeMode = true
Data = [ readerType = "CNTKTextFormatReader" ; file = "$DataDir$/data.ctf" ; randomize = false
         input = [ features = [ dim = 3 ; format = "dense" ] ;
                   labels = [ dim = 2 ; format = "dense" ] ] ]
TrainA = [
    action = "train" ; modelPath = "$DataDir$/a.dnn" ; reader = $Data$
    SGD = [ minibatchSize = 4 ; learningRatesPerSample = 0.01 ; maxEpochs = 1 ]
    BrainScriptNetworkBuilder = [
        features = Input {3} ; labels = Input {2}
        z = Sequential (DenseLayer {4} : LinearLayer {2}) (features)
        ce = CrossEntropyWithSoftmax (labels, z) ; criterionNodes = (ce) ]
]
TestA = [ action = "test" ; modelPath = "$DataDir$/a.dnn" ; reader = $Data$ ]
TrainB = [
    action = "train" ; modelPath = "$DataDir$/b.dnn" ; reader = $Data$
    SGD = [ minibatchSize = 4 ; learningRatesPerSample = 0.01 ; maxEpochs = 1 ]
    BrainScriptNetworkBuilder = [
        features = Input {3} ; labels = Input {2}
        z = LinearLayer {2} (features)
        ce = CrossEntropyWithSoftmax (labels, z) ; criterionNodes = (ce) ]
]
"""


def _initial_seeds(model: str) -> list[int]:
    """The seeds of the weights in the model file written before the first epoch."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        load_model_parameters(model)
        return [_seed_of(w, "glorotUniform", w.shape[1], w.shape[0]) for w in _weights()]


def test_the_seeds_count_on_through_the_commands_of_a_run(tmp_path):
    rng = np.random.RandomState(0)
    with open(tmp_path / "data.ctf", "w") as f:
        for _ in range(8):
            x, k = rng.randn(3), rng.randint(2)
            f.write(f"|features {x[0]:.4f} {x[1]:.4f} {x[2]:.4f} |labels {1 - k} {k}\n")
    (tmp_path / "run.cntk").write_text(_RUN)
    overrides = [f"DataDir={tmp_path}"]
    run(str(tmp_path / "run.cntk"), overrides, out=pyio.StringIO())
    # TrainA: the LinearLayer 1, the DenseLayer 2; TestA reads a.dnn (cntk.exe makes nothing);
    # TrainB's LinearLayer goes on with 3
    assert _initial_seeds(str(tmp_path / "a.dnn.0")) == [2, 1]
    assert _initial_seeds(str(tmp_path / "b.dnn.0")) == [3]
    # a new run is a new cntk.exe process: TrainA is done (its model exists: cntk.exe builds
    # nothing), so TrainB, trained again, starts from 1
    for name in ("b.dnn", "b.dnn.0", "b.dnn.ckp"):
        (tmp_path / name).unlink()
    run(str(tmp_path / "run.cntk"), overrides, out=pyio.StringIO())
    assert _initial_seeds(str(tmp_path / "b.dnn.0")) == [1]
    # nor does it for a command that continues from its checkpoint (a second epoch of TrainA)
    for name in ("b.dnn", "b.dnn.0", "b.dnn.ckp"):
        (tmp_path / name).unlink()
    out = pyio.StringIO()
    run(str(tmp_path / "run.cntk"), overrides + ["TrainA.SGD.maxEpochs=2"], out=out)
    assert "Starting from checkpoint" in out.getvalue()
    assert _initial_seeds(str(tmp_path / "b.dnn.0")) == [1]
