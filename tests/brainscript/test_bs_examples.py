"""CNTK's own example configs (tests/fixtures/brainscript, verbatim): read, extracted, evaluated."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from bs_fakelib import FakeLibrary, Layer, Node

from stadyn.brainscript import (
    build_network,
    cntk_filter_shape,
    cntk_shape,
    load_config,
    per_epoch,
    run_config,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "brainscript"
CIFAR = FIXTURES / "ConvNet_CIFAR10_DataAug.cntk"
MNIST = FIXTURES / "ConvNet_MNIST.cntk"
ONE_HIDDEN = FIXTURES / "01_OneHidden.cntk"


def run(path: Path, *overrides: str):
    return run_config(load_config(path, ["dataDir=/data", *overrides]))


# ---------------------------------------------------------------------------------------------
# ConvNet_CIFAR10_DataAug.cntk
# ---------------------------------------------------------------------------------------------

def test_cifar_top_level_and_commands():
    r = run(CIFAR)
    assert [(c.name, c.action) for c in r.commands] == [("TrainConvNet", "train"), ("Eval", "eval")]
    assert (r.precision, r.trace_level, r.device_id, r.stderr) == ("float", 1, "auto", None)
    assert r.model_path == "./Output/Models/ConvNet_CIFAR10_DataAug"
    train, ev = r.commands
    assert train.model_path == ev.model_path == r.model_path
    assert ev.eval_node_names == ("errs", "top5Errs") and ev.minibatch_size == (512,)
    assert ev.network is None and ev.sgd is None and ev.extra == {} and train.extra == {}
    assert r.extra == {"rootDir": "../../..", "dataDir": "/data", "outputDir": "./Output"}


def test_cifar_sgd_block():
    sgd = run(CIFAR).commands[0].sgd
    assert sgd.epoch_size is None  # epochSize = 0: a full sweep
    assert sgd.minibatch_size == (64,) and sgd.max_epochs == 80
    lr = sgd.learning_rates_per_sample
    assert len(lr) == 71 and lr.count(0.0015625) == 20 and lr.count(0.00046875) == 20
    assert lr.count(0.00015625) == 20 and lr.count(0.000046875) == 10 and lr[-1] == 0.000015625
    assert per_epoch(lr, 0) == 0.0015625 and per_epoch(lr, 45) == 0.00015625
    assert per_epoch(lr, 79) == 0.000015625
    mom = sgd.momentum_as_time_constant
    assert mom == (0.0,) * 20 + (600.0,) * 20 + (1200.0,)
    assert sgd.learning_rates_per_mb is None and sgd.momentum_per_mb is None
    assert (sgd.l2_reg_weight, sgd.dropout_rate, sgd.num_mbs_to_show_result) == (0.002, (0.5,), 100)
    assert sgd.clipping_threshold_per_sample == math.inf and sgd.extra == {}


def test_cifar_readers():
    train, ev = run(CIFAR).commands
    r = train.reader
    assert (r.verbosity, r.randomize, r.reader_type) == (0, True, None)
    (d,) = r.deserializers
    assert (d.type, d.module, d.file) == ("ImageDeserializer", "ImageReader", "/data/train_map.txt")
    feats, labels = d.streams
    assert feats.name == "features" and not feats.is_label and labels.name == "labels"
    assert labels.label_dim == 10
    assert [(t.type, dict(t.params)) for t in feats.transforms] == [
        ("Crop", {"cropType": "RandomSide", "sideRatio": 0.8, "jitterType": "UniRatio"}),
        ("Scale", {"width": 32, "height": 32, "channels": 3, "interpolations": "linear"}),
        ("Mean", {"meanFile": "/data/CIFAR-10_mean.xml"}),
        ("Transpose", {}),
    ]
    (d,) = ev.reader.deserializers
    assert ev.reader.randomize is False and d.file == "/data/test_map.txt"
    assert [t.type for t in d.stream("features").transforms] == ["Scale", "Mean", "Transpose"]


def test_cifar_network():
    lib = FakeLibrary()
    net = build_network(run(CIFAR).commands[0].network, lib)
    layers = [(n, a, k) for n, a, k in lib.calls if n.endswith("Layer")]
    conv = ("ConvolutionalLayer", (64, (3, 3)), {"pad": True})
    pool = ("MaxPoolingLayer", ((3, 3),), {"stride": (2, 2)})
    assert layers == [conv, conv, pool, conv, conv, pool, ("DenseLayer", (256,), {}),
                      ("DenseLayer", (128,), {}), ("LinearLayer", (10,), {})]
    # made in cntk.exe's order: criterionNodes = (ce) first, ce = CrossEntropyWithSoftmax
    # (labels, z) asks for labels first
    assert lib.calls_to("Input") == [("Input", (10,), {}), ("Input", ((32, 32, 3),), {})]
    features, labels = net.feature_nodes[0], net.label_nodes[0]
    assert cntk_shape(features.inputs[0]) == (3, 32, 32) and cntk_shape(labels.inputs[0]) == (10,)
    assert cntk_filter_shape(pool[2]["stride"]) == (2, 2)

    (z,) = net.output_nodes
    assert z.chain() == ["ElementTimes", "ConvolutionalLayer", "ReLU", "ConvolutionalLayer",
                         "ReLU", "MaxPoolingLayer", "ConvolutionalLayer", "ReLU",
                         "ConvolutionalLayer", "ReLU", "MaxPoolingLayer", "DenseLayer", "ReLU",
                         "Dropout", "DenseLayer", "ReLU", "Dropout", "LinearLayer"]
    normalize = z
    while normalize.op != "ElementTimes":
        normalize = normalize.inputs[0]
    assert normalize.inputs == (1 / 256, features)  # Normalize{featScale}: f .* x

    (ce,) = net.criterion_nodes
    (errs,) = net.evaluation_nodes
    assert (ce.op, ce.inputs) == ("CrossEntropyWithSoftmax", (labels, z))
    assert (errs.op, errs.inputs, errs.attrs) == ("ClassificationError", (labels, z), {})
    top5 = net.nodes["top5Errs"]
    assert (top5.op, top5.inputs, top5.attrs) == ("ClassificationError", (labels, z), {"topN": 5})
    assert list(net.nodes) == ["features", "labels", "z", "ce", "errs", "top5Errs"]
    assert [net.name_of(n) for n in (features, labels, ce, errs, z)] == \
        ["features", "labels", "ce", "errs", "z"]


# ---------------------------------------------------------------------------------------------
# ConvNet_MNIST.cntk
# ---------------------------------------------------------------------------------------------

def test_mnist_config():
    r = run(MNIST, "trainNetwork.SGD.maxEpochs=2")
    train, test = r.commands
    assert [(c.name, c.action) for c in r.commands] == [("trainNetwork", "train"),
                                                        ("testNetwork", "test")]
    assert r.model_path == "./Output/Models/ConvNet_MNIST"
    sgd = train.sgd
    assert (sgd.epoch_size, sgd.minibatch_size, sgd.max_epochs) == (60000, (64,), 2)
    assert sgd.learning_rates_per_sample == (0.001,) * 10 + (0.0005,) * 10 + (0.0001,)
    assert sgd.momentum_as_time_constant == (0.0,) * 5 + (1024.0,)
    assert (sgd.dropout_rate, sgd.num_mbs_to_show_result, sgd.l2_reg_weight) == ((0.5,), 500, 0.0)
    rd = train.reader
    assert (rd.reader_type, rd.randomize, rd.keep_data_in_memory) == \
        ("CNTKTextFormatReader", True, True)
    (d,) = rd.deserializers
    assert (d.type, d.file) == ("CNTKTextFormatDeserializer", "/data/Train-28x28_cntk_text.txt")
    assert [(s.name, s.dim, s.format) for s in d.streams] == [("features", 784, "dense"),
                                                              ("labels", 10, "dense")]
    assert test.minibatch_size == (1024,) and test.reader.keep_data_in_memory is False
    assert test.reader.deserializers[0].file == "/data/Test-28x28_cntk_text.txt"


def test_mnist_network():
    lib = FakeLibrary()
    net = build_network(run(MNIST).commands[0].network, lib)
    layers = [(n, a, k) for n, a, k in lib.calls if n.endswith("Layer")]
    pool = ("MaxPoolingLayer", ((3, 3),), {"stride": (2, 2)})
    assert layers == [("ConvolutionalLayer", (32, (5, 5)), {"pad": True}), pool,
                      ("ConvolutionalLayer", (48, (3, 3)), {"pad": False}), pool,
                      ("ConvolutionalLayer", (64, (3, 3)), {"pad": False}),
                      ("DenseLayer", (96,), {}), ("LinearLayer", (10,), {})]
    assert lib.calls_to("Input") == [("Input", (10,), {}), ("Input", ((28, 28, 1),), {})]
    # Scale{f} = x => Constant(f) .* x
    assert lib.calls_to("Constant") == [("Constant", (1 / 256,), {})]
    (ol,) = net.output_nodes
    assert ol.chain() == ["Constant", "ElementTimes", "ConvolutionalLayer", "ReLU",
                          "MaxPoolingLayer", "ConvolutionalLayer", "ReLU", "MaxPoolingLayer",
                          "ConvolutionalLayer", "ReLU", "DenseLayer", "Dropout", "ReLU",
                          "LinearLayer"]
    features = net.feature_nodes[0]
    assert cntk_shape(features.inputs[0]) == (1, 28, 28)
    assert net.criterion_nodes[0].op == "CrossEntropyWithSoftmax"
    assert net.evaluation_nodes[0].op == "ClassificationError"
    assert list(net.nodes) == ["features", "labels", "ol", "ce", "errs"]


# ---------------------------------------------------------------------------------------------
# 01_OneHidden.cntk
# ---------------------------------------------------------------------------------------------

def test_one_hidden_config():
    r = run(ONE_HIDDEN)
    train, test = r.commands
    assert (train.name, test.name, test.action) == ("trainNetwork", "testNetwork", "test")
    sgd = train.sgd
    assert (sgd.epoch_size, sgd.minibatch_size, sgd.max_epochs) == (60000, (64,), 10)
    assert sgd.learning_rates_per_sample == (0.01,) * 5 + (0.005,)
    assert sgd.momentum_as_time_constant == (0.0,) and sgd.dropout_rate == (0.0,)
    assert sgd.num_mbs_to_show_result == 500
    assert train.reader.deserializers[0].file == "/data/Train-28x28_cntk_text.txt"
    assert train.reader.randomize is True and train.reader.keep_data_in_memory is False
    assert test.minibatch_size == (1024,)


def test_one_hidden_network_returns_a_record():
    lib = FakeLibrary()
    net = build_network(run(ONE_HIDDEN).commands[0].network, lib)
    dense = lib.calls_to("DenseLayer")
    assert dense == [("DenseLayer", (200,), {"activation": lib.functions["ReLU"]})]
    assert lib.calls_to("LinearLayer") == [("LinearLayer", (10,), {})]
    assert list(net.nodes) == ["features", "labels", "out.s1", "out.h1", "out.z", "ce", "errs"]
    z = net.nodes["out.z"]
    assert net.output_nodes == [z] and net.name_of(z) == "out.z"
    assert z.chain() == ["Input", "ElementTimes", "DenseLayer", "ReLU", "LinearLayer"]
    s1 = net.nodes["out.s1"]
    assert s1.inputs == (net.feature_nodes[0], 1 / 256)  # x * featScale: node * scalar
    assert isinstance(z.attrs["layer"], Layer) and isinstance(z, Node)


@pytest.mark.parametrize("path", [CIFAR, MNIST, ONE_HIDDEN], ids=lambda p: p.name)
def test_fixtures_are_cntk_files_verbatim(path):
    # the files were fetched from microsoft/CNTK and must stay byte-identical
    text = path.read_bytes()
    assert text.startswith(b"# ") and b"BrainScriptNetworkBuilder = {" in text and b"\r" not in text
    sizes = {"ConvNet_CIFAR10_DataAug.cntk": 3540, "ConvNet_MNIST.cntk": 2658,
             "01_OneHidden.cntk": 3487}
    assert len(text) == sizes[path.name]
