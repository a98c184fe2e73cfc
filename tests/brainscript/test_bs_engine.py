"""Stadyn's BrainScript library, SGD block and reader block (the engine side of the front end).

Expected values come from CNTK itself: the parameter counts CNTK's own test logs print for the
three example configs (Tests/EndToEndTests/Examples/Image/... baseline.txt in microsoft/CNTK),
CNTK's BrainScript unit conversions (SGD.cpp) and numpy references for the operators.
"""

from __future__ import annotations

import contextlib
import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
from stadyn._errors import ConfigError
from stadyn._random import set_fixed_seed
from stadyn.brainscript import (build_network, load_config, parse_config, reader_config,
                                run_config)
from stadyn.brainscript._readers import make_source
from stadyn.brainscript._sgd import make_learner
from stadyn.brainscript._sgd_rates import learning_rates_per_sample, momenta_per_sample
from stadyn.brainscript._stadyn_library import StadynLibrary
from stadyn.io import encode_image, write_mean_file
from stadyn.models import cifar_convnet_layers
from stadyn.train import feed

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "brainscript"
CIFAR = FIXTURES / "ConvNet_CIFAR10_DataAug.cntk"
MNIST = FIXTURES / "ConvNet_MNIST.cntk"
ONE_HIDDEN = FIXTURES / "01_OneHidden.cntk"


def _train_command(path: Path, *overrides: str):
    return run_config(load_config(path, ["dataDir=/data", *overrides])).commands[0]


def _build(source, library=None):
    library = library or StadynLibrary()
    return build_network(source, library), library


def _counts() -> tuple[int, int]:
    params = sd.get_parameters()
    return sum(p.size for p in params.values()), len(params)


# ---------------------------------------------------------------------------------------------
# The example networks
# ---------------------------------------------------------------------------------------------
@pytest.mark.usefixtures("fresh_parameters")
@pytest.mark.parametrize("path, expected", [
    # CNTK's own logs: "Training 949834 parameters in 14 out of 14 parameter tensors" (the config's
    # MaxPoolingLayer does not pad: 32 -> 15 -> 7), "Training 98778 parameters in 10 ...",
    # and 784*200+200 + 200*10+10 for 01_OneHidden.
    (CIFAR, (949834, 14)), (MNIST, (98778, 10)), (ONE_HIDDEN, (159010, 4)),
])
def test_example_networks_have_cntks_parameter_counts(path, expected):
    net, _ = _build(_train_command(path).network, StadynLibrary(0.5))
    assert _counts() == expected
    assert [n.shape for n in net.output_nodes] == [(1, 10)]
    assert net.criterion_nodes[0].shape == (1, 1)


@pytest.mark.usefixtures("fresh_parameters")
def test_cifar_network_shapes_follow_cntks_log():
    """CNTK's log: [32 x 32 x 3] -> conv -> [32 x 32 x 64] -> pool -> [15 x 15 x 64] -> ...
    -> [7 x 7 x 64] -> Dense W [256 x 7 x 7 x 64]."""
    net, lib = _build(_train_command(CIFAR).network, StadynLibrary(0.5))
    shapes = [tuple(p.shape) for p in sd.get_parameters().values()]
    assert net.nodes["features"].shape == (1, 3, 32, 32)
    assert net.nodes["labels"].shape == (1, 10)
    assert shapes[0] == (64, 3, 3, 3) and shapes[8] == (64, 7, 7, 256)   # row-major
    assert [lib.operation_of(net.nodes[k]) for k in ("ce", "errs", "top5Errs")] == [
        "CrossEntropyWithSoftmax", "ClassificationError", "ClassificationError"]


def _padded_cifar_source():
    """The CIFAR config's network with padded pooling: the Python model's architecture
    (stadyn.models.cifar_convnet)."""
    source = _train_command(CIFAR).network
    text = source.text.replace("MaxPoolingLayer {(3:3), stride = (2:2)}",
                               "MaxPoolingLayer {(3:3), stride = (2:2), pad = true}")
    assert text.count("stride = (2:2), pad = true}") == 2
    return type(source)(text, source.path, source.line, source.column)


@contextlib.contextmanager
def _fixed_seed(value: int):
    sd.seed(value)
    set_fixed_seed(value)
    try:
        yield
    finally:
        set_fixed_seed(None)


def test_cifar_network_with_padded_pooling_is_the_python_model():
    """Same parameters (names, shapes, initial values) and bit-identical outputs as
    stadyn.models.cifar_convnet_layers: the library maps to the same layers and kernels.
    Every layer draws with seed 7 (CNTK's fixed seed): cntk.exe counts a BrainScript network's
    seeds from its output layer, CNTK's Python layers from the first one made."""
    x = np.random.default_rng(0).uniform(0, 255, (2, 3, 32, 32)).astype(np.float32)
    outputs, params = [], []
    for build in ("brainscript", "python"):
        with sd.parameter_registry(sd.ParameterRegistry()), _fixed_seed(7):
            if build == "brainscript":
                net, _ = _build(_padded_cifar_source(), StadynLibrary(0.5))
                model = net.record["model"]
                assert _counts() == (1195594, 14)
            else:
                stack = cifar_convnet_layers()

                def model(v, stack=stack):
                    return stack(F.mul_scalar(v, 0.00390625))
                model(sd.Variable((1, 3, 32, 32)))
            v = sd.Variable.from_numpy_array(x)
            y = model(v)
            with sd.training(False):
                y.forward()
            outputs.append(y.d.copy())
            params.append({k: p.d.copy() for k, p in sd.get_parameters().items()})
    # the same parameters in the same order (BrainScript's named after their nodes, cntk.exe's
    # model.arrayOfFunctions[0].W, Python's after their layers, convolution/W)
    assert len(params[0]) == len(params[1])
    for a, b in zip(params[0].values(), params[1].values()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(outputs[0], outputs[1])


@pytest.mark.usefixtures("fresh_parameters")
def test_mnist_constant_scale_is_one_multiply_by_the_constant():
    # the scale is one product with the one-element Constant node (no tensor of the input's
    # size), which the product reads, as cntk.exe's ElementTimes does: the model file holds it
    net, _ = _build(_train_command(MNIST).network, StadynLibrary(0.5))
    nodes = sd.graph.topological_nodes([net.output_nodes[0]])
    ops = [n.name for n in nodes]
    assert ops[0] == "mul2" and ops.count("mul2") == 1 and "mul_scalar" not in ops
    constant = nodes[0].inputs[1]
    assert constant.size == 1 and not constant.need_grad
    assert constant is sd.get_parameters(grad_only=False)[constant.name]
    assert ops.count("convolution") == 3 and ops.count("dropout") == 1


# ---------------------------------------------------------------------------------------------
# Library functions and operators
# ---------------------------------------------------------------------------------------------
def _run(source: str, feeds: dict, outputs: list[str], library=None, training=False):
    with sd.parameter_registry(sd.ParameterRegistry()):
        net, lib = _build(source, library)
        for name, value in feeds.items():
            feed(net.nodes[name], value)      # inputs are built with a batch of 1
        roots = [net.nodes[n] for n in outputs]
        with sd.training(training), torch.no_grad():
            sd.forward_all(roots)
        params = {k: p.d.copy() for k, p in sd.get_parameters(grad_only=False).items()}
        return [r.d.copy() for r in roots], params, net, lib


def test_operators_on_nodes():
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0
    (prod, scaled, divided, elem, summed, diff, neg, rsub, recip), _, _, _ = _run(
        """{ x = Input{3} ; W = Parameter{4, 3, init = 'fixedValue', value = 0.5}
             prod = W * x ; scaled = 2 * x ; divided = x / 4 ; elem = x .* x
             summed = x + x ; diff = x - 1 ; neg = -x ; rsub = 1 - x ; recip = 1 / (x + 10) }""",
        {"x": x}, ["prod", "scaled", "divided", "elem", "summed", "diff", "neg", "rsub", "recip"])
    np.testing.assert_allclose(prod, x @ np.full((3, 4), 0.5), rtol=1e-6)
    np.testing.assert_allclose(scaled, 2 * x)
    np.testing.assert_allclose(divided, x / 4)
    np.testing.assert_allclose(elem, x * x)
    np.testing.assert_allclose(summed, 2 * x)
    np.testing.assert_allclose(diff, x - 1)
    np.testing.assert_allclose(neg, -x)
    np.testing.assert_allclose(rsub, 1 - x)
    np.testing.assert_allclose(recip, 1 / (x + 10), rtol=1e-6)


def test_times_infers_a_parameters_input_dimension_and_flattens_images():
    x = np.random.default_rng(1).normal(size=(2, 1, 3, 2)).astype(np.float32)
    (y,), params, net, _ = _run(
        "{ x = Input{2:3:1} ; W = Parameter{5, 0, init = 'gaussian'}\n"
        "  y = Times(W, x) ; z = W * x }",
        {"x": x}, ["y"])
    (w,) = params.values()
    assert w.shape == (6, 5) and net.nodes["z"].shape == (1, 5)
    np.testing.assert_allclose(y, x.reshape(2, 6) @ w, rtol=1e-5)


def test_layers_take_cntks_column_major_shapes_and_defaults():
    x = np.random.default_rng(2).normal(size=(2, 2, 7, 9)).astype(np.float32)
    (conv, pool, avg, dense), params, net, _ = _run(
        """{ x = Input{9:7:2}
             conv = ConvolutionalLayer{4, (3:5), pad = true, bias = false}(x)
             pool = MaxPoolingLayer{(3:3), stride = (2:1)}(x)
             avg  = AveragePoolingLayer{(2:2), stride = 2, pad = true}(x)
             dense = DenseLayer{(3:2), activation = Tanh, initValueScale = 0.5,
                                initBias = 1}(x) }""",
        {"x": x}, ["conv", "pool", "avg", "dense"])
    # named after their nodes, as cntk.exe (a DenseLayer is Sequential (LinearLayer : act))
    assert list(params) == ["conv.W", "dense.arrayOfFunctions[0].W", "dense.arrayOfFunctions[0].b"]
    w = params["conv.W"]
    assert w.shape == (4, 2, 5, 3)  # filterShape 3:5 is 3 wide, 5 high: kernel (kH, kW) = (5, 3)
    ref = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=(2, 1))
    np.testing.assert_allclose(conv, ref.numpy(), rtol=1e-5, atol=1e-5)
    # unpadded 3x3 windows, stride 2 wide and 1 high: 7-3+1 = 5 rows, (9-3)//2+1 = 4 columns
    ref = torch.nn.functional.max_pool2d(torch.from_numpy(x), 3, stride=(1, 2))
    assert pool.shape == (2, 2, 5, 4)
    np.testing.assert_array_equal(pool, ref.numpy())
    assert avg.shape == (2, 2, 4, 5)
    # glorotUniform scaled by initValueScale: U(±0.5 * sqrt(6 / (126 + 6)))
    limit = 0.5 * math.sqrt(6 / (2 * 7 * 9 + 6))
    # W keeps the input's axes (CNTK's log shows [3 x 2 x 9 x 7 x 2] for this layer)
    wd, bd = params["dense.arrayOfFunctions[0].W"], params["dense.arrayOfFunctions[0].b"]
    assert wd.shape == (2, 7, 9, 2, 3) and np.abs(wd).max() <= limit
    assert np.abs(wd).max() > 0.8 * limit
    np.testing.assert_array_equal(bd, np.ones((2, 3)))
    np.testing.assert_allclose(
        dense, np.tanh(x.reshape(2, -1) @ wd.reshape(126, 6) + 1).reshape(2, 2, 3),
        rtol=1e-5, atol=1e-6)


def test_losses_reshape_softmax_and_batch_norm():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(4, 5)).astype(np.float32)
    labels = np.eye(5, dtype=np.float32)[[0, 1, 2, 3]]
    (ce, err, top3, soft, flat, bn), params, _, _ = _run(
        """{ z = Input{5} ; l = Input{5}
             ce = CrossEntropyWithSoftmax(l, z) ; err = ClassificationError(l, z)
             top3 = ClassificationError(l, z, topN = 3) ; soft = Softmax(z)
             flat = Reshape(z, 1:5) ; bn = BatchNormalizationLayer{}(z) }""",
        {"z": z, "l": labels}, ["ce", "err", "top3", "soft", "flat", "bn"])
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    np.testing.assert_allclose(ce[:, 0], -logp[np.arange(4), [0, 1, 2, 3]], rtol=1e-5)
    rank = (z > z[np.arange(4), [0, 1, 2, 3]][:, None]).sum(1)
    np.testing.assert_array_equal(err[:, 0], (rank >= 1).astype(np.float32))
    np.testing.assert_array_equal(top3[:, 0], (rank >= 3).astype(np.float32))
    np.testing.assert_allclose(soft, np.exp(logp), rtol=1e-5)
    assert flat.shape == (4, 5, 1)
    # cntk.exe's names: CNTK.core.bs's BatchNormalizationLayer members (scale, bias, runMean,
    # runVariance, runCount) at the layer's path; top3's Constant (3) (CNTK.core.bs:507)
    assert sorted(params) == ["bn.bias", "bn.runCount", "bn.runMean", "bn.runVariance",
                              "bn.scale", "inputs.inputs[2]"]
    # inference before any training: CNTK's running statistics start at mean 0, variance 0
    # (CNTK 2.7 gives 316.22778 for 1.0 here)
    np.testing.assert_allclose(bn, z / np.sqrt(0 + 1e-5), rtol=1e-5)


def test_dropout_rate_is_set_per_epoch():
    x = np.ones((64, 100), dtype=np.float32)
    lib = StadynLibrary(0.0)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net, _ = _build("{ x = Input{100} ; y = Dropout(x) }", lib)
        y = net.nodes["y"]
        feed(net.nodes["x"], x)
        y.forward()
        np.testing.assert_array_equal(y.d, x)          # rate 0: identity
        assert lib.set_dropout_rate(0.5) == 1
        y.forward()
        kept = (y.d != 0).mean()
        assert 0.4 < kept < 0.6 and set(np.unique(y.d)) <= {0.0, 2.0}
        with sd.training(False):
            y.forward()
        np.testing.assert_array_equal(y.d, x)          # inference: identity


def test_tags_name_special_nodes():
    with sd.parameter_registry(sd.ParameterRegistry()):
        net, lib = _build("""{ f = Input{2} ; l = Input{2, tag = 'label'}
                               z = LinearLayer{2}(f)
                               ce = CrossEntropyWithSoftmax(l, z, tag = 'criterion') }""")
        assert lib.tagged["criterion"] == [net.nodes["ce"]]
        assert lib.tagged["feature"] == [net.nodes["f"]] and lib.tagged["label"] == [net.nodes["l"]]


@pytest.mark.usefixtures("fresh_parameters")
@pytest.mark.parametrize("text, message, at", [
    # the evaluator points at an unknown name, at the argument list of a failing call and at
    # the operator of a failing operation
    ("{ x = Input{4} ; z = LinearLayr{2}(x) }", "unknown function 'LinearLayr'", "LinearLayr"),
    ("{ x = Input{4} ; z = ConvolutionalLayer{2, (3:3), padding = true}(x) }",
     "unexpected keyword argument 'padding'", "{2, (3:3)"),
    ("{ x = Input{4} ; z = DenseLayer{2, init = 'glorot'}(x) }", "unknown init 'glorot'",
     "{2, init"),
    ("{ x = Input{4} ; z = MaxPoolingLayer{(2:2), ceilOutDim = 2}(x) }",
     "ceilOutDim must be true or false", "{(2:2)"),
    ("{ x = Input{4} ; W = Parameter{3, 5} ; z = W * x }", "does not end in 5 elements", "* x"),
    ("{ x = Input{4} ; z = Dropout(x, 0.5) }", "Dropout", "(x, 0.5)"),
])
def test_library_errors_are_located(text, message, at):
    with pytest.raises(ConfigError) as err:
        _build(text, None)
    assert message in str(err.value)
    assert (err.value.line, err.value.column) == (1, text.index(at) + 1)


# ---------------------------------------------------------------------------------------------
# SGD block
# ---------------------------------------------------------------------------------------------
def _sgd(text: str):
    rec = parse_config(f"SGD = {{ maxEpochs = 3 ; {text} }}", "sgd.cntk")["SGD"]
    from stadyn.brainscript import sgd_config
    return sgd_config(rec), rec


def test_sgd_rates_are_per_sample_as_in_cntk():
    # CNTK's SGD keeps the config's vectors as float32 (floatargvector): a rate per MB is the
    # float32 value divided in float (SGD.h:164, float / size_t), a time constant's momentum
    # exp(-1/tc) rounded to float32
    f32 = np.float32
    cifar = _train_command(CIFAR).sgd
    lr = learning_rates_per_sample(cifar)
    assert lr[0] == f32(0.0015625) and lr[20] == f32(0.00046875) and lr[-1] == f32(0.000015625)
    m = momenta_per_sample(cifar)
    assert m[0] == 0.0 and m[20] == f32(math.exp(-1 / 600)) and m[-1] == f32(math.exp(-1 / 1200))
    per_mb, _ = _sgd("minibatchSize = 32:64 ; learningRatesPerMB = 0.64 ; momentumPerMB = 0.9")
    assert learning_rates_per_sample(per_mb) == [float(f32(0.64) / f32(32)),
                                                 float(f32(0.64) / f32(64))]
    assert momenta_per_sample(per_mb) == [float(f32(0.9)) ** (1 / 32),
                                          float(f32(0.9)) ** (1 / 64)]
    default, _ = _sgd("minibatchSize = 16 ; learningRatesPerSample = 0.1")
    # CNTK's momentumPerMB = 0.9
    assert momenta_per_sample(default) == [float(f32(0.9)) ** (1 / 16)]


def test_an_epoch_that_cannot_spread_its_rate_holds_the_error_not_a_rate():
    # one decision (_sgd_rates.per_sample_epochs) for the runner, the learners and the survey:
    # with CNTK 2's readers under truncated (parallel sequences 0) a per-minibatch rate and
    # momentum spread over minibatchSize 1 train (SGD.h:142-158 leaves a 1 as it is), a size 8
    # is cntk.exe's RuntimeError at that epoch's start (SGD.cpp:549, 630); no 0.0 stands in
    from stadyn.brainscript import SGDConfig
    from stadyn.brainscript._sgd_rates import (cntk_learning_rate, cntk_momentum,
                                               per_sample_epochs)
    sgd = SGDConfig(4, minibatch_size=(1, 1, 8), learning_rates_per_mb=(0.5,),
                    momentum_per_mb=(0.9,), parallel_sequences=0)
    lr, m = per_sample_epochs(sgd, "lr"), per_sample_epochs(sgd, "momentum")
    assert lr[:2] == [0.5, 0.5] and m[:2] == [float(np.float32(0.9))] * 2
    assert all(isinstance(e[2], ConfigError) and "not supported per minibatch" in str(e[2])
               for e in (lr, m))
    assert learning_rates_per_sample(sgd) == [0.5, 0.5] and len(momenta_per_sample(sgd)) == 2
    assert cntk_learning_rate(sgd, 1) == 0.5
    for epoch in (2, 3):       # (the last entry stands for the epochs after it)
        with pytest.raises(ConfigError, match="not supported per minibatch"):
            cntk_learning_rate(sgd, epoch)
        with pytest.raises(ConfigError, match="not supported per minibatch"):
            cntk_momentum(sgd, epoch)


def test_sgd_learner_follows_the_epoch_schedule():
    sgd, rec = _sgd("minibatchSize = 4 ; learningRatesPerSample = 0.5*2:0.1 ; "
                    "momentumAsTimeConstant = 0:8 ; L2RegWeight = 0.01 ; "
                    "clippingThresholdPerSample = 3 ; gradientClippingWithTruncation = false")
    w = sd.Variable.from_numpy_array(np.ones(2, dtype=np.float32), need_grad=True)
    learner = make_learner({"w": w}, sgd, rec, epoch_size=8)
    assert learner.name == "momentum_sgd" and learner.l2_regularization_weight == 0.01
    assert learner.gradient_clipping_threshold_per_sample == 3.0
    assert not learner.gradient_clipping_with_truncation
    rates = []
    for _ in range(6):                       # 6 minibatches of 4 samples = 3 epochs of 8
        rates.append(learner.learning_rate())
        w.grad = torch.zeros(2)
        learner.update(4)
    assert rates == [0.5, 0.5, 0.5, 0.5, float(np.float32(0.1)), float(np.float32(0.1))]
    # one step by hand: per-sample lr 0.5, momentum exp(-4/8) on 4 samples, unit gain, L2 * 4
    w2 = sd.Variable.from_numpy_array(np.ones(1, dtype=np.float32), need_grad=True)
    sgd2, rec2 = _sgd("learningRatesPerSample = 0.5 ; momentumAsTimeConstant = 8 ; "
                      "L2RegWeight = 0.01")
    learner2 = make_learner([w2], sgd2, rec2, epoch_size=8)
    w2.grad = torch.tensor([2.0])
    learner2.update(4)
    m = float(np.float32(math.exp(-1 / 8))) ** 4
    assert w2.d[0] == pytest.approx(1 - 0.5 * (1 - m) * (2.0 + 0.01 * 4 * 1.0), rel=1e-6)


def test_unknown_sgd_key_is_named_with_its_location():
    sgd, rec = _sgd("learningRatesPerSample = 0.1\nlearningRatePerSample = 0.2")
    w = sd.Variable.from_numpy_array(np.ones(1, dtype=np.float32), need_grad=True)
    with pytest.raises(ConfigError) as err:
        make_learner([w], sgd, rec, epoch_size=10)
    assert "'learningRatePerSample'" in str(err.value)
    assert "did you mean 'learningRatesPerSample'" in str(err.value)
    assert (err.value.path, err.value.line, err.value.column) == ("sgd.cntk", 2, 1)
    sgd, rec = _sgd("learningRatesPerSample = 0.1 ; gradUpdateType = AdaGrd")
    with pytest.raises(ConfigError, match="gradUpdateType = 'AdaGrd' is not known"):
        make_learner([w], sgd, rec, epoch_size=10)


# ---------------------------------------------------------------------------------------------
# Reader block
# ---------------------------------------------------------------------------------------------
def test_image_reader_with_cntk_transforms(tmp_path):
    rng = np.random.default_rng(4)
    lines = []
    for i in range(3):
        image = rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)
        (tmp_path / f"{i}.png").write_bytes(encode_image(image))
        lines.append(f"{tmp_path / f'{i}.png'}\t{i}\n")
    (tmp_path / "map.txt").write_text("".join(lines))
    write_mean_file(tmp_path / "mean.xml", np.full((32, 32, 3), 100.0))
    cmd = _train_command(CIFAR, f"dataDir={tmp_path}")
    reader = cmd.reader
    assert reader.deserializers[0].file == f"{tmp_path}/train_map.txt"
    os.rename(tmp_path / "map.txt", tmp_path / "train_map.txt")
    os.rename(tmp_path / "mean.xml", tmp_path / "CIFAR-10_mean.xml")
    source = make_source(reader)
    mb = source.next_minibatch(3)
    assert mb["features"].data.shape == (3, 3, 32, 32) and mb["labels"].data.shape == (3, 10)
    assert sorted(mb["labels"].data.argmax(1).tolist()) == [0, 1, 2]
    assert mb["features"].data.min() >= -100.0 and mb["features"].data.max() <= 155.0


def test_text_reader_and_reader_errors(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("|labels 0 1 |features 1 2 3 4\n|labels 1 0 |features 5 6 7 8\n")
    r = reader_config(parse_config(f"""reader = {{ readerType = "CNTKTextFormatReader"
        file = "{path}" ; randomize = false ; verbosity = 0
        input = {{ features = {{ dim = 4 ; format = "dense" }}
                   labels = {{ dim = 2 ; format = "dense" }} }} }}""")
                      ["reader"])
    mb = make_source(r).next_minibatch(2)
    assert mb["features"].data.tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]
    bad = reader_config(parse_config("""reader = { deserializers = ({ type = "ImageDeserializer"
        file = "m.txt" ; input = { features = { transforms = ({ type = "Rotate" }) }
                                   labels = { labelDim = 2 } } }) }""", "bad.cntk")["reader"])
    with pytest.raises(ConfigError) as err:
        make_source(bad)
    assert "unknown transform type 'rotate'" in str(err.value) and err.value.path == "bad.cntk"
    assert err.value.line == 2


# ---------------------------------------------------------------------------------------------
# The benchmark workload
# ---------------------------------------------------------------------------------------------
def test_cifar_bs_workload_matches_its_pytorch_twin():
    from stadyn.bench import WORKLOADS
    w = WORKLOADS["cifar-bs"]
    stadyn_case, torch_case = w.stadyn_case("static"), w.torch_case("eager")
    assert stadyn_case.first_loss == pytest.approx(torch_case.first_loss, rel=1e-5)
    params = w.initial_parameters()
    assert sum(p.numel() for p in params.values()) == 949834 and len(params) == 14


@pytest.mark.parametrize("name", ["stadyn.brainscript._stadyn_library", "stadyn.brainscript._sgd",
                                  "stadyn.brainscript._sgd_rates",
                                  "stadyn.brainscript._readers", "stadyn.brainscript._cntk_log",
                                  "stadyn.brainscript._model_files"])
def test_engine_docstring_examples(name):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_trace_passes_the_value_and_prints_a_line_labelled_by_say_or_the_config_line(capsys):
    sd.reset_trace_counts()
    x = np.array([[1.0, -2.0, 4.0]], dtype=np.float32)
    (h, g), _, _, _ = _run(
        """{ x = Input{3}
             h = Trace(x .* 2, say = 'doubled', logFirst = 1, logFrequency = 5)
             g = Trace(x + 1) }""",
        {"x": x}, ["h", "g"])
    np.testing.assert_array_equal(h, 2 * x)
    np.testing.assert_array_equal(g, x + 1)
    err = capsys.readouterr().err.splitlines()
    assert "trace doubled #1 forward (1, 3) float32: min -4 max 8 mean 2 std 4.899" in err[0]
    # Without say, the probe is labelled by the config's line (the network text's third line).
    assert any(ln.startswith("trace ") and ":3 #1 forward" in ln for ln in err), err
