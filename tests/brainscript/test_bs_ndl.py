"""``NDLNetworkBuilder``: networks written in cntk.exe's NDL are built with cntk.exe's node
names, shapes, parameter counts and seeds, and train.

The CNTK tests read CNTK's own configs, ``.ndl`` files and baseline logs from the copy of CNTK
at ``$STADYN_CNTK_SOURCE`` (they skip without one); the expected numbers are the baselines'
(file and line cited at each test).  The others use NDL written here.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn._cpp_normal import normal_floats
from stadyn._mt19937 import uniform_floats
from stadyn.brainscript import StadynLibrary, build_network, load_config, parse_config
from stadyn.brainscript._blocks import command_config
from stadyn.brainscript._network_library import reached_ids
from stadyn.train import feed
from stadyn.brainscript._runner import run
from cntk_repo_files import cntk_file, copy_cntk_file
from test_bs_runner import _write_mnist_ctf

TIMIT = "Examples/Speech/Miscellaneous/TIMIT/config"
TIMIT_TESTS = "Tests/EndToEndTests/Examples/Speech/TIMIT"
MNIST = "Tests/EndToEndTests/Examples/Image/Deprecated/MNIST"
_PARAM_LINE = re.compile(r"Node '([^']+)' \(LearnableParameter operation\) : \[([^\]]*)\]")
_COUNT_LINE = re.compile(r"Training (\d+) parameters in (\d+) out of")
_VALIDATING = re.compile(r"Validating --> (\S+) = (\w+)")


def _baseline(path: str) -> str:
    return cntk_file(path).decode("utf-8", "replace")


def _build(config, command: str, overrides=()):
    """The network of ``command`` in a fresh registry: (network, library, {name: parameter})."""
    root = load_config(str(config), overrides=list(overrides))
    cmd = command_config(root, command)
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        lib = StadynLibrary()
        net = build_network(cmd.network, lib)
        params = dict(sd.get_parameters())
    return net, lib, params


def _cntk_dims(v) -> str:
    return " x ".join(str(d) for d in reversed(v.shape))


def _check_parameters(params, log: str) -> None:
    """The trained parameters as cntk.exe lists them (``Node 'X' (LearnableParameter
    operation) : [dims]``) and its ``Training N parameters in M`` count."""
    expected = dict(_PARAM_LINE.findall(log))
    trained = {k: v for k, v in params.items() if v.need_grad}
    ours = {k: _cntk_dims(v) for k, v in trained.items()}
    assert ours == expected
    count, tensors = _COUNT_LINE.search(log).groups()
    assert sum(int(v.size) for v in trained.values()) == int(count)
    assert len(trained) == int(tensors)


_SEED_LINE = re.compile(r"Node '([^']+)' \(LearnableParameter operation\): Initializing "
                        r"Parameter\[[^\]]*\] <- uniform\(seed=(\d+),.*?"
                        r"range=([0-9.]+)\*([0-9.]+)")


def _check_seeds(params, log: str) -> None:
    """Each ``uniform(seed=N, ..., range=0.05*scale)`` line of cntk.exe's log: the parameter
    holds the values of seed N (found by drawing again with each candidate seed; the log's
    values may be the GPU's, so only the seed is compared)."""
    lines = _SEED_LINE.findall(log)
    assert lines
    for name, seed, base, scale in dict((m[0], m) for m in lines).values():
        w = params[name].d
        r = np.float32(base) * np.float32(scale)
        found = [k for k in range(1, 12)      # (the first values tell the seed)
                 if np.array_equal(w.reshape(-1)[:16], uniform_floats(k, min(w.size, 16), r))]
        assert found == [int(seed)], name


def _timit(tmp_path, config: str, *ndl: str):
    for name in (config, "default_macros.ndl") + ndl:
        copy_cntk_file(tmp_path, f"{TIMIT}/{name}")
    return tmp_path / config, [f"NdlDir={tmp_path}", "ExpDir=/tmp/exp", "DeviceNumber=-1",
                               "ScpDir=/tmp", "MlfDir=/tmp", "MelDir=/tmp"]


def test_timit_train_ndl_network_is_cntk_exes(tmp_path):
    # Tests/EndToEndTests/Examples/Speech/TIMIT/TrainNdlNetwork/baseline.txt, lines 279-373:
    # 29 nodes (CE.SM, L1.BFF.FF.P, featNorm.xMean, ...), 1025207 parameters in 8 tensors
    config, overrides = _timit(tmp_path, "TIMIT_TrainNDLNetwork_ndl_deprecated.cntk",
                               "classify.ndl")
    net, lib, params = _build(config, "TIMIT_TrainNDL", overrides)
    log = _baseline(f"{TIMIT_TESTS}/TrainNdlNetwork/baseline.txt")
    _check_parameters(params, log)
    _check_seeds(params, log)      # lines 260-267: L1.BFF.W seed=1 ... CE.BFF.W seed=4
    validated = dict(_VALIDATING.findall(log))
    assert set(net.nodes) == set(validated)
    for name in ("CE.SM", "Err", "L1.S", "featNorm.xMean", "logPrior.LogPrior", "myFeatures"):
        assert lib.operation_of(net.nodes[name]) == validated[name]
    names = {a: [net.name_of(v) for v in getattr(net, a)]
             for a in ("criterion_nodes", "evaluation_nodes", "output_nodes")}
    assert names == {"criterion_nodes": ["CE.SM"], "evaluation_nodes": ["Err"],
                     "output_nodes": ["ScaledLogLikelihood"]}
    assert tuple(net.nodes["L1.BFF.FF.P"].shape[1:]) == (512,)


@pytest.mark.parametrize("config, command, ndl, test", [
    # TrainLstm/baseline.txt line 68: 4683776 parameters in 16 (LSTMoutput.Wxo, ...)
    ("TIMIT_TrainLSTM_ndl_deprecated.cntk", "TIMIT_TrainLSTM", "lstm.ndl", "TrainLstm"),
    # TrainMultiInput/baseline.txt: 1045175 parameters in 9
    ("TIMIT_TrainMultiInput_ndl_deprecated.cntk", "TIMIT_TrainMultiInput", "classify.ndl",
     "TrainMultiInput"),
    # TrainMultiTask/baseline.txt: 766911 parameters in 10
    ("TIMIT_TrainMultiTask_ndl_deprecated.cntk", "TIMIT_TrainMultiTask", "mtl_senones_dr.ndl",
     "TrainMultiTask"),
    # TrainAutoEncoder/baseline.txt: 878424 parameters in 8 (SquareError criterion)
    ("TIMIT_TrainAutoEncoder_ndl_deprecated.cntk", "TIMIT_TrainAutoEncoder", "ae.ndl",
     "TrainAutoEncoder"),
])
def test_timit_ndl_networks_have_cntk_exes_parameters(tmp_path, config, command, ndl, test):
    text = cntk_file(f"{TIMIT}/{config}").decode()
    files = set(re.findall(r"\$NdlDir\$/(\w+\.ndl)", text)) | {ndl}
    config, overrides = _timit(tmp_path, config, *sorted(files - {"default_macros.ndl"}))
    net, _, params = _build(config, command, overrides)
    log = _baseline(f"{TIMIT_TESTS}/{test}/baseline.txt")
    _check_parameters(params, log)
    if "uniform(seed=" in log:     # MultiInput, MultiTask: seeds 1..5 in the NDL's order
        _check_seeds(params, log)
    if test == "TrainLstm":    # lstm.ndl's Delays of a later item: a loop along the sequence
        assert net.nodes["features"].sequence_lengths is not None
        assert tuple(net.nodes["LSTMoutput.output"].shape[2:]) == (1024,)


# ---------------------------------------------------------------------------------------------
# MNIST 01_OneHidden_ndl: names, then training on stand-in data against a NumPy reference
# ---------------------------------------------------------------------------------------------
def _mnist_config(tmp_path):
    folder = tmp_path / "01_OneHidden_ndl"
    folder.mkdir()
    copy_cntk_file(tmp_path, f"{MNIST}/Macros.ndl")
    copy_cntk_file(folder, f"{MNIST}/01_OneHidden_ndl/01_OneHidden.ndl")
    config = copy_cntk_file(folder, f"{MNIST}/01_OneHidden_ndl/01_OneHidden_ndl_deprecated.cntk")
    return config, [f"rootDir={tmp_path}", "imageLayout=cudnn", "deviceId=-1"]


def test_mnist_one_hidden_ndl_is_cntk_exes(tmp_path):
    # 01_OneHidden_ndl/baseline.txt lines 161-166 and 216-232: h1.W [200 x 784], h1.b
    # [200 x 1], ...; 159010 parameters in 4; top5Errs's Const(5) is unnamed89
    config, overrides = _mnist_config(tmp_path)
    net, _, params = _build(config, "train", overrides)
    log = _baseline(f"{MNIST}/01_OneHidden_ndl/baseline.txt")
    _check_parameters(params, log)
    assert set(net.nodes) == set(dict(_VALIDATING.findall(log)))
    # the logged columns: ce; top5Errs (tag="eval"); errs (EvalNodes) - baseline line 173
    assert [net.name_of(v) for v in net.evaluation_nodes] == ["top5Errs", "errs"]


def _mnist_network(tmp_path, name: str):
    """CNTK's MNIST ``<name>_ndl`` test built here: (network, parameters, baseline log)."""
    folder = tmp_path / f"{name}_ndl"
    folder.mkdir()
    copy_cntk_file(tmp_path, f"{MNIST}/Macros.ndl")
    copy_cntk_file(folder, f"{MNIST}/{name}_ndl/{name}.ndl")
    config = copy_cntk_file(folder, f"{MNIST}/{name}_ndl/{name}_ndl_deprecated.cntk")
    net, _, params = _build(config, "train", [f"rootDir={tmp_path}", "imageLayout=cudnn"])
    return net, params, _baseline(f"{MNIST}/{name}_ndl/baseline.txt")


def test_mnist_convolution_ndl_is_cntk_exes(tmp_path):
    # 02_Convolution_ndl/baseline.txt lines 142-160: conv1.w.W [16 x 25] uniform(seed=1,
    # range=0.05*10), conv1.b.b [1 x 1 x 16] (ImageParameter, cudnn), h1.W [128 x 7 x 7 x 32]
    # seed=3, ...; 215370 parameters in 8 (legacy Convolution, ND Pooling)
    net, params, log = _mnist_network(tmp_path, "02_Convolution")
    _check_parameters(params, log)
    _check_seeds(params, log)
    assert tuple(net.nodes["features"].shape[1:]) == (1, 28, 28)


def test_mnist_conv_batch_norm_ndl_is_cntk_exes(tmp_path):
    # 03_ConvBatchNorm_ndl/baseline.txt: 215546 parameters in 11 (the running statistics,
    # learningRateMultiplier = 0, are not trained)
    _, params, log = _mnist_network(tmp_path, "03_ConvBatchNorm")
    _check_parameters(params, log)


def test_cifar_convolution_ndl_is_cntk_exes(tmp_path):
    # Tests/EndToEndTests/Examples/Image/Deprecated/CIFAR-10/01_Convolution/baseline.txt:
    # 116906 parameters in 10 (ImageInput, legacy Convolution and MaxPooling, HWC/cudnn)
    cifar = "Tests/EndToEndTests/Examples/Image/Deprecated/CIFAR-10"
    folder = tmp_path / "01_Convolution"
    folder.mkdir()
    copy_cntk_file(tmp_path, f"{cifar}/Macros.ndl")
    copy_cntk_file(folder, f"{cifar}/01_Convolution/01_Convolution.ndl")
    config = copy_cntk_file(folder, f"{cifar}/01_Convolution/01_Conv_ndl_deprecated.cntk")
    _, _, params = _build(config, "Train", [f"RootDir={folder}"])
    log = _baseline(f"{cifar}/01_Convolution/baseline.txt")
    _check_parameters(params, log)
    if "uniform(seed=" in log:
        _check_seeds(params, log)


def test_cifar_resnet_ndl_is_cntk_exes(tmp_path):
    # CIFAR-10/03_ResNet/baseline.gpu.txt: 269914 parameters in 63 (BatchNormalization, the
    # projections init = fromFile from 16to32.txt and 32to64.txt, learningRateMultiplier = 0)
    cifar = "Tests/EndToEndTests/Examples/Image/Deprecated/CIFAR-10"
    folder = tmp_path / "03_ResNet"
    folder.mkdir()
    for name in ("Macros.ndl", "16to32.txt", "32to64.txt"):
        copy_cntk_file(tmp_path, f"{cifar}/{name}")
    copy_cntk_file(folder, f"{cifar}/03_ResNet/03_ResNet.ndl")
    config = copy_cntk_file(folder, f"{cifar}/03_ResNet/03_ResNet_ndl_deprecated.cntk")
    _, _, params = _build(config, "Train", [f"RootDir={folder}"])
    log = _baseline(f"{cifar}/03_ResNet/baseline.gpu.txt")
    count, tensors = _COUNT_LINE.search(log).groups()
    trained = [v for v in params.values() if v.need_grad]
    assert (sum(int(v.size) for v in trained), len(trained)) == (int(count), int(tensors))


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_mnist_one_hidden_ndl_trains_from_cntk_exes_initial_values(tmp_path):
    """The first minibatch's criterion is that of the initial values cntk.exe draws for the NDL
    parameters: U(±0.05 * initValueScale) with seeds 1, 2, 3, 4 in the order of the NDL
    items (h1.W, h1.b, ol.W, ol.b), plus randomSeedOffset."""
    config, overrides = _mnist_config(tmp_path)
    data = tmp_path / "data"
    _write_mnist_ctf(data, n_train=64, n_test=16)
    log = io.StringIO()
    offset = 3
    run(config, overrides + [f"DataDir={data}", f"outputDir={tmp_path}/out",
                             "command=train:test", "train.SGD.maxEpochs=1",
                             "train.SGD.epochSize=64",
                             "train.SGD.numMBsToShowResult=1",
                             "train.reader.randomize=false", "traceLevel=1",
                             f"randomSeedOffset={offset}"], out=log)
    text = log.getvalue()
    first = re.search(r"Minibatch\[   1-   1.*?ce = ([0-9.]+) \* 32; top5Errs = ([0-9.]+)% "
                      r"\* 32; errs = ([0-9.]+)% \* 32", text)
    assert first, text
    rows = (data / "Train-28x28_cntk_text.txt").read_text().splitlines()[:32]
    labels = np.array([[float(t) for t in r.split("|labels ")[1].split(" |")[0].split()]
                       for r in rows])
    x = np.array([[float(t) for t in r.split("|features ")[1].split()] for r in rows])
    scaled = (x * np.float32(0.00390625)).astype(np.float32)

    def draw(seed, n):
        return uniform_floats(seed + offset, n, np.float32(0.05) * np.float32(1.0))
    w1 = draw(1, 784 * 200).reshape(784, 200)
    b1 = draw(2, 200)
    w2 = draw(3, 200 * 10).reshape(200, 10)
    b2 = draw(4, 10)
    z = _sigmoid(scaled @ w1 + b1) @ w2 + b2
    logp = z - z.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    ce = -(labels * logp).sum(1).mean()
    errs = (z.argmax(1) != labels.argmax(1)).mean() * 100
    assert float(first.group(1)) == pytest.approx(ce, rel=1e-5)
    assert float(first.group(3)) == pytest.approx(errs, abs=1e-3)
    assert "Finished Epoch[ 1 of 1]" in text
    # the test command has no network of its own: the train command's, from its model file
    # (its evalNodeNames = ce:errs:top5Errs)
    assert re.search(r"Final Results: Minibatch\[1-1\]: ce = [0-9.]+ \* 16; perplexity = "
                     r"[0-9.]+; errs = [0-9.]+% \* 16; top5Errs = [0-9.]+% \* 16", text), text


# ---------------------------------------------------------------------------------------------
# NDL written here: the language itself
# ---------------------------------------------------------------------------------------------
_MACROS = """
# a layer: its items are named after the call (L1.W, L1.b)
Layer(x, outDim, inDim, scale) = [
    W = Parameter(outDim, inDim, init="uniform", initValueScale=scale)
    b = Parameter(outDim, init = fixedValue, value = 0.5)
    y = Sigmoid(Plus(Times(w, x), B))
]
Gauss(outDim, inDim) { G = Parameter(outDim, inDim, init="gaussian") }
"""


def _ndl_config(tmp_path, run_section: str, extra: str = "") -> str:
    (tmp_path / "macros.ndl").write_text(_MACROS)
    (tmp_path / "net.ndl").write_text("load = consts\nrun = net\nconsts = [ dim = 3 ]\n"
                                      f"net = [\n{run_section}\n]\n")
    return (f"command = T\n{extra}\nT = [\n action = train\n"
            f" NDLNetworkBuilder = [\n  ndlMacros = {tmp_path}/macros.ndl\n"
            f"  networkDescription = {tmp_path}/net.ndl\n ]\n]\n")


def _build_text(text: str, command: str = "T"):
    root = parse_config(text)
    cmd = command_config(root, command)
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network(cmd.network, lib)
        params = {k: v.d.copy() for k, v in sd.get_parameters().items()}
    return net, lib, params


def test_ndl_seeds_follow_the_items_and_the_offset(tmp_path):
    # NDLNetworkBuilder.cpp: a uniform/gaussian parameter takes the next of a count from 1
    # (fixedValue takes none), plus ComputationNetwork's randomSeedOffset; randomSeed fixes one
    net_text = ("x = Input(dim)\nL1 = Layer(x, 4, dim, 2)\nG = Gauss(2, 4)\n"
                "F = Parameter(2, 2, randomSeed = 7)\nz = Times(G, L1, tag=\"output\")")
    text = _ndl_config(tmp_path, net_text, "randomSeedOffset = 10")
    net, _, params = _build_text(text)
    assert sorted(params) == ["F", "G.G", "L1.W", "L1.b"]
    r = float(np.float32(0.05) * np.float32(2))
    np.testing.assert_array_equal(params["L1.W"], uniform_floats(11, 12, r).reshape(3, 4))
    np.testing.assert_array_equal(params["L1.b"], np.full(4, 0.5, np.float32))
    gauss = normal_floats(12, 8, float(np.float32(0.2 / np.sqrt(4)))).reshape(4, 2)
    np.testing.assert_allclose(params["G.G"], gauss, rtol=1e-6)
    np.testing.assert_array_equal(params["F"], uniform_floats(17, 4, 0.05).reshape(2, 2))
    assert [net.name_of(v) for v in net.output_nodes] == ["z"]
    x = np.arange(3, dtype=np.float32).reshape(1, 3)
    net.nodes["x"].d = x
    net.output_nodes[0].forward()
    h = _sigmoid(x @ params["L1.W"] + params["L1.b"])
    np.testing.assert_allclose(net.output_nodes[0].d, h @ params["G.G"], rtol=1e-5)


def test_ndl_seed_count_goes_on_through_the_commands_of_a_run(tmp_path):
    text = _ndl_config(tmp_path, "x = Input(dim)\nL1 = Layer(x, 4, dim, 1)")
    root = parse_config(text + "U = [\n action = train\n NDLNetworkBuilder = [\n"
                        f"  ndlMacros = {tmp_path}/macros.ndl\n"
                        f"  networkDescription = {tmp_path}/net.ndl\n ]\n]\n")
    values = []
    for name in ("T", "U"):
        with sd.parameter_registry(sd.ParameterRegistry()):
            build_network(command_config(root, name).network, StadynLibrary())
            values.append(sd.get_parameters()["L1.W"].d.copy())
    np.testing.assert_array_equal(values[1], uniform_floats(2, 12, 0.05).reshape(3, 4))


def test_ndl_dotted_names_macro_values_and_node_groups(tmp_path):
    net_text = ("x = Input(dim)\nlab = Input(4)\nL1 = Layer(x, 4, dim, 1)\n"
                "ce = CrossEntropyWithSoftmax(lab, L1.y)\nerr = ErrorPrediction(lab, L1)\n"
                "FeatureNodes = (x)\nCriterionNodes = (ce)\nEvalNodes = (err)\n"
                "OutputNodes = (L1)")
    net, lib, _ = _build_text(_ndl_config(tmp_path, net_text))
    assert [net.name_of(v) for v in net.output_nodes] == ["L1.y"]
    assert [net.name_of(v) for v in net.criterion_nodes] == ["ce"]
    assert [net.name_of(v) for v in net.evaluation_nodes] == ["err"]
    assert lib.operation_of(net.nodes["err"]) == "ClassificationError"
    assert {"L1.W", "L1.b", "L1.y", "x", "lab"} <= set(net.nodes)


def test_ndl_block_with_run_and_load_sections_in_the_config(tmp_path):
    text = ("command = T\nT = [\n action = train\n NDLNetworkBuilder = [\n  run = net\n"
            "  net = [\n   x = Input(2)\n   c = Constant(3)\n   s = Scale(c, x)\n"
            "   OutputNodes = (s)\n  ]\n ]\n]\n")
    net, _, _ = _build_text(text)
    net.nodes["x"].d = np.array([[1, 2]], np.float32)
    net.output_nodes[0].forward()
    np.testing.assert_allclose(net.output_nodes[0].d.reshape(-1), [3, 6])


def test_ndl_batch_normalization_uses_the_networks_parameters(tmp_path):
    # NDLNetworkBuilder.cpp: BatchNormalization(x, scale, bias, runMean, runVariance) plus a
    # run_sample_count parameter it adds; training normalises with the minibatch's statistics
    # and the first minibatch replaces the running ones (the unbiased variance)
    net_text = ("x = Input(dim)\nsc = Parameter(dim, 1, init=fixedValue, value=2)\n"
                "b = Parameter(dim, 1, init=fixedValue, value=1)\n"
                "m = Parameter(dim, 1, init=fixedValue, value=0, learningRateMultiplier=0)\n"
                "v = Parameter(dim, 1, init=fixedValue, value=0, learningRateMultiplier=0)\n"
                "y = BatchNormalization(x, sc, b, m, v, eval=false, spatial=false, "
                "normalizationTimeConstant=100)\nOutputNodes = (y)")
    root = parse_config(_ndl_config(tmp_path, net_text))
    x = np.array([[1, 2, 3], [3, 6, 5]], np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(command_config(root, "T").network, StadynLibrary())
        net.nodes["x"].reset_shape(x.shape, force=True)
        net.nodes["x"].d = x
        with sd.training(True):
            net.output_nodes[0].forward()
        params = sd.get_parameters(grad_only=False)
        mean, var = x.mean(0), x.var(0)
        expected = (x - mean) / np.sqrt(var + 1e-5) * 2 + 1
        np.testing.assert_allclose(net.output_nodes[0].d.reshape(2, 3), expected, rtol=1e-5)
        np.testing.assert_allclose(params["m"].d.reshape(-1), mean, rtol=1e-6)
        np.testing.assert_allclose(params["v"].d.reshape(-1), x.var(0, ddof=1), rtol=1e-6)
        assert float(params["y.run_sample_count"].d) == 2


def test_ndl_parameter_from_a_file_is_its_rows(tmp_path):
    # LearnableParameter::InitFromFile: a text matrix, a row a line, of [rows x cols]
    (tmp_path / "w.txt").write_text("1 2 3\n4 5 6\n")
    net_text = (f'x = Input(dim)\nW = Parameter(2, dim, init = fromFile, initFromFilePath = '
                f'"{tmp_path}/w.txt", learningRateMultiplier = 0)\ny = Times(W, x)\n'
                "OutputNodes = (y)")
    net, _, _ = _build_text(_ndl_config(tmp_path, net_text))
    net.nodes["x"].d = np.array([[1, 1, 2]], np.float32)
    net.output_nodes[0].forward()
    np.testing.assert_array_equal(net.output_nodes[0].d, [[9, 21]])
    bad = net_text.replace("Parameter(2, dim", "Parameter(3, dim")
    with pytest.raises(ConfigError, match=r"holds a \[2 x 3\] matrix; the parameter is "
                                          r"\[3 x 3\]"):
        _build_text(_ndl_config(tmp_path, bad))


def test_an_ndl_function_stadyn_lacks_is_refused_with_the_ndl_file_line(tmp_path):
    text = _ndl_config(tmp_path, "x = Input(dim)\ny = GMMLogLikelihood(x, x, x, x)")
    with pytest.raises(ConfigError, match=r"net\.ndl:6:5: NDL function 'GMMLogLikelihood' is "
                                          r"not supported"):
        _build_text(text)


def test_ndl_syntax_and_name_errors_are_located(tmp_path):
    with pytest.raises(ConfigError, match=r"net\.ndl:5:15: NDL: Input: expected ',' or '\)'"):
        _build_text(_ndl_config(tmp_path, "x = Input(dim 3)"))
    with pytest.raises(ConfigError, match=r"net\.ndl:7:13: NDL: 'L1' has no member 'Q'"):
        _build_text(_ndl_config(tmp_path, "x = Input(dim)\nL1 = Layer(x, 4, dim, 1)\n"
                                          "y = Sigmoid(L1.Q)"))
    with pytest.raises(ConfigError, match="depends on itself without a Delay"):
        _build_text(_ndl_config(tmp_path, "a = Sigmoid(b)\nb = Tanh(a)"))
    with pytest.raises(ConfigError, match="networkDescription file .* does not exist"):
        _build_text(f"command = T\nT = [ action = train\n NDLNetworkBuilder = [ "
                    f"networkDescription = {tmp_path}/none.ndl ] ]\n")


def test_ndl_batch_normalization_scale_and_bias_can_be_exempt_from_regularization(tmp_path):
    # NDLNetworkBuilder.cpp reads the node's disableRegularization (default false); cntk.exe's
    # SGD exempts a BatchNormalization's scale and bias where it is true, or for every one
    # with disableRegInBatchNormalization = true (the NDL node was not counted: L2 reached it)
    def bn(name, flag):
        return (f"{name}s = Parameter(dim, 1, init=fixedValue, value=2)\n"
                f"{name}b = Parameter(dim, 1, init=fixedValue, value=1)\n"
                f"{name}m = Parameter(dim, 1, init=fixedValue, value=0, learningRateMultiplier=0)\n"
                f"{name}v = Parameter(dim, 1, init=fixedValue, value=0, learningRateMultiplier=0)\n"
                f"{name} = BatchNormalization(x, {name}s, {name}b, {name}m, {name}v, "
                f"spatial=false{flag})\n")
    net_text = ("x = Input(dim)\n" + bn("p", "") + bn("q", ", disableRegularization=true")
                + "y = Plus(p, q)\nOutputNodes = (y)")
    net, lib, _ = _build_text(_ndl_config(tmp_path, net_text))
    ids = {id(net.nodes[k]): k for k in ("ps", "pb", "qs", "qb")}
    assert sorted(ids[i] for i in lib.unregularized(False) if i in ids) == ["qb", "qs"]
    assert sorted(ids[i] for i in lib.unregularized(True) if i in ids) == ["pb", "ps", "qb", "qs"]


def test_ndl_delay_of_three_arguments_ignores_the_legacy_columns(tmp_path):
    # NDLNetworkBuilder.cpp: PastValue(rows, [cols,] input) -- "we allow 3 for legacy (cols
    # parameter which is now unused)": the value is [rows], as with two arguments
    shapes = []
    for delay in ("Delay(dim, h)", "Delay(dim, 4, h)"):
        net, _, _ = _build_text(_ndl_config(
            tmp_path, f"x = Input(dim)\nh = Plus(x, {delay})\nOutputNodes = (h)"))
        shapes.append(tuple(net.nodes["h"].shape))
    assert shapes[0] == shapes[1] and shapes[0][-1] == 3 and len(shapes[0]) == 3


def test_a_test_command_takes_no_ndl_seeds_from_a_later_train_command(tmp_path):
    """cntk.exe's test command reads its network from the model file (EvalActions.cpp's
    DoEvalBase: ComputationNetwork::CreateFromFile), so no NDL parameter takes a seed there:
    after train (h1.W, h1.b, ol.W, ol.b: seeds 1-4) and test, the next NDL train command's
    parameters take seeds 5-8."""
    config, overrides = _mnist_config(tmp_path)
    with open(config, "a") as f:
        f.write('\nagain = [\n action = "train"\n modelPath = "$modelDir$/again"\n'
                ' NDLNetworkBuilder = [\n  imageLayout = "cudnn"\n'
                '  ndlMacros = "$configDir$/../Macros.ndl"\n'
                '  networkDescription = "$ConfigDir$/01_OneHidden.ndl"\n ]\n'
                ' SGD = [ epochSize = 32 ; minibatchSize = 32 ; learningRatesPerSample = 0\n'
                '   maxEpochs = 1 ]\n reader = [ readerType = "CNTKTextFormatReader"\n'
                '   file = "$DataDir$/Train-28x28_cntk_text.txt"\n'
                '   input = [ features = [ dim = 784 ; format = "dense" ]\n'
                '     labels = [ dim = 10 ; format = "dense" ] ] ]\n]\n')
    data = tmp_path / "data"
    _write_mnist_ctf(data, n_train=32, n_test=16)
    run(config, overrides + [f"DataDir={data}", f"outputDir={tmp_path}/out",
                             "command=train:test:again", "train.SGD.maxEpochs=1",
                             "train.SGD.epochSize=32"], out=io.StringIO())
    # a learning rate of 0 ends training before epoch 1 (cntk.exe's "less than
    # minLearningRatePerSample"): again.0 holds the initial values
    params = sd.load(f"{tmp_path}/out/Models/again.0").parameters
    scale = np.float32(0.05) * np.float32(1.0)
    for seed, (name, size) in enumerate([("h1.W", 784 * 200), ("h1.b", 200),
                                         ("ol.W", 200 * 10), ("ol.b", 10)], start=5):
        np.testing.assert_array_equal(params[name].d.ravel(), uniform_floats(seed, size, scale),
                                      err_msg=name)


def test_ndl_top_n_error_reads_the_networks_own_constant(tmp_path):
    # NDL's ClassificationError (labels, z, k) with k = Constant (2): cntk.exe's node reads
    # that Constant as its third input (EvaluationNodes.h:81), so the network holds no other
    # topN constant (BrainScript's inputs.inputs[2] is CNTK.core.bs's own, not NDL's) and
    # the error node reaches k
    net_text = ("x = Input(4)\nlab = Input(4)\nk = Constant(2)\n"
                "err = ClassificationError(lab, x, k)\nEvalNodes = (err)")
    root = parse_config(_ndl_config(tmp_path, net_text))
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(command_config(root, "T").network, StadynLibrary())
        assert set(sd.get_parameters(grad_only=False)) == {"k"}
        err = net.nodes["err"]
        assert id(net.nodes["k"]) in reached_ids([err])
        feed(net.nodes["lab"], np.eye(4, dtype=np.float32)[[2, 3]])
        feed(net.nodes["x"], np.array([[0.1, 0.5, 0.3, 0.2], [0.4, 0.3, 0.2, 0.1]],
                                      np.float32))
        err.forward()
        assert np.asarray(err.d).ravel().tolist() == [0.0, 1.0]
