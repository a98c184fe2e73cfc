"""CNTK's ``ClassBasedCrossEntropyWithSoftmax`` (``ClassBasedCrossEntropyWithSoftmaxNode`` in
CNTK's ``TrainingNodes.h``; CNTK 2.7's Python API has no such op) against the class-factored
softmax computed with NumPy: value and gradients on a small example, the class rows of
``LMSequenceReader`` (sequences with padding) as its labels, and a short training run."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import build_network, parse_config, reader_config, run
from stadyn.brainscript._deserializer_builders import lm_text
from stadyn.brainscript._stadyn_library import StadynLibrary
from stadyn.train import feed

# 7 words in 3 classes: {0, 1, 2}, {3, 4}, {5, 6} (first and one-past-last id of each)
RANGES = {0: (0, 3), 1: (3, 5), 2: (5, 7)}
CLASS_OF = {w: c for c, (a, b) in RANGES.items() for w in range(a, b)}


def _labels(words) -> np.ndarray:
    return np.array([[w, CLASS_OF[w], *RANGES[CLASS_OF[w]]] for w in words], np.float32)


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _reference(labels, h, w, cls):
    """Per sample: -(log P(word | class) + log P(class)), and the gradients of the sum with
    respect to ``w`` (CNTK's [hidden x vocabulary], as a (hidden, vocabulary) array) and the
    class scores."""
    values, grad_w, grad_cls = [], np.zeros_like(w), np.zeros_like(cls)
    for n, (y, c, a, b) in enumerate(labels.astype(int)):
        word = _log_softmax(h[n] @ w[:, a:b])
        klass = _log_softmax(cls[n])
        values.append(-(word[y - a] + klass[c]))
        grad_word = np.exp(word)
        grad_word[y - a] -= 1
        grad_w[:, a:b] += np.outer(h[n], grad_word)
        grad_cls[n] = np.exp(klass)
        grad_cls[n, c] -= 1
    return np.array(values), grad_w, grad_cls


NETWORK = """labels = Input {4} ; x = Input {3}
    W = ParameterTensor {(3:7)} ; Wc = Parameter (3, 3)
    cls = Wc * x
    ce = ClassBasedCrossEntropyWithSoftmax (labels, x, W, cls, tag = "criterion")"""


def test_value_and_gradients_are_the_class_factored_softmax():
    rng = np.random.default_rng(1)
    words = [0, 2, 3, 4, 5, 6, 1]            # first, inner and last word of every class
    x = rng.normal(size=(len(words), 3)).astype(np.float32)
    w = rng.normal(size=(3, 7)).astype(np.float32)      # CNTK's [3 x 7]
    wc = rng.normal(size=(3, 3)).astype(np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network("{ " + NETWORK + " }", lib)
        nodes = net.nodes
        assert nodes["W"].shape == (7, 3)                # Stadyn's shape: CNTK's reversed
        nodes["W"].d = w.T
        nodes["Wc"].d = wc.T
        feed(nodes["labels"], _labels(words))
        feed(nodes["x"], x)
        total = sd.functions.sum(nodes["ce"])
        total.forward()
        total.backward()
        value, grad_w, grad_cls = _reference(_labels(words), x, w, x @ wc.T)
        np.testing.assert_allclose(nodes["ce"].d.ravel(), value, rtol=1e-5)
        np.testing.assert_allclose(nodes["W"].g, grad_w.T, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(nodes["Wc"].g, (grad_cls.T @ x).T, rtol=1e-4, atol=1e-6)
        assert lib.operation_of(nodes["ce"]) == "ClassBasedCrossEntropyWithSoftmax"
        assert lib.shows_perplexity(nodes["ce"]) and nodes["ce"] in lib.tagged["criterion"]


@pytest.mark.parametrize("change, words", [
    ("labels = Input {3}", "must have 4 rows .* got \\[3\\]"),
    ("W = ParameterTensor {(4:7)}", "mainWeight must be a \\[hiddenDim x vocabularySize\\] "
                                    "parameter with hiddenDim 3, got \\[4:7\\]"),
])
def test_shape_errors_name_the_line(change, words):
    text = NETWORK.replace(change.split(" = ")[0] + " = " + {
        "labels": "Input {4}", "W": "ParameterTensor {(3:7)}"}[change.split(" = ")[0]], change)
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match=words) as err:
            build_network("{ " + text + " }", StadynLibrary(), "lm.bs")
    assert (err.value.path, err.value.line) == ("lm.bs", 4)


def _lm_files(tmp_path):
    vocab = "\n".join(f"{w} 1 {name} {CLASS_OF[w]}" for w, name in
                      enumerate(["</s>", "a", "b", "c", "d", "e", "<unk>"]))
    (tmp_path / "vocab.txt").write_text(vocab + "\n")
    (tmp_path / "text.txt").write_text("</s> a c e </s>\n</s> d </s>\n</s> b b d e c </s>\n"
                                       "</s> e a </s>\n")


LM_READER = """reader = [ readerType = "LMSequenceReader" ; randomize = "none"
    file = "{dir}/text.txt" ; wordclass = "{dir}/vocab.txt" ; nbruttsineachrecurrentiter = 0
    features = [ dim = 7 ; sectionType = "data" ]
    labelIn = [ labelDim = 7 ; labelType = "Category" ]
    labels = [ labelType = "nextWord" ] ]"""


def test_lmsequencereader_class_rows_feed_it_as_sequences(tmp_path):
    _lm_files(tmp_path)
    # the reader's sentences (2, 3, 4 and 6 steps) in one minibatch: read from its deserializer
    # (LMSequenceReader itself, as cntk.exe's, puts only sentences of one length together)
    reader = reader_config(parse_config(LM_READER.format(dir=tmp_path))["reader"])
    source = sd.io.MinibatchSource([lm_text(reader.deserializers[0])], randomize=False,
                                   max_sweeps=1)
    mb = source.next_minibatch(100)
    rng = np.random.default_rng(2)
    w = rng.normal(size=(7, 7)).astype(np.float32)       # [hidden = 7 x vocabulary = 7]
    wc = rng.normal(size=(3, 7)).astype(np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ features = Input {7} ; labels = Input {4}
            W = ParameterTensor {(7:7)} ; Wc = Parameter (3, 7)
            ce = ClassBasedCrossEntropyWithSoftmax (labels, features, W, Wc * features) }""",
                            StadynLibrary(sequences=True))
        net.nodes["W"].d = w.T
        net.nodes["Wc"].d = wc.T
        feed(net.nodes["features"], mb["features"])
        feed(net.nodes["labels"], mb["labels"])
        ce = net.nodes["ce"]
        ce.forward()
        got = ce.d
    lengths = [len(s) for s in mb["labels"].as_sequences()]
    assert sorted(lengths) == [2, 3, 4, 6] and got.shape[:2] == (4, 6)
    for k, (x, labels) in enumerate(zip(mb["features"].as_sequences(),
                                        mb["labels"].as_sequences())):
        value, _, _ = _reference(np.asarray(labels), np.asarray(x), w, np.asarray(x) @ wc.T)
        np.testing.assert_allclose(got[k, :len(value)].ravel(), value, rtol=1e-5)
        assert (got[k, len(value):] == 0).all()          # padding contributes nothing


def test_a_class_based_language_model_trains(tmp_path):
    _lm_files(tmp_path)
    (tmp_path / "lm.cntk").write_text(f"""command = train
    deviceId = -1 ; modelPath = "{tmp_path}/out/lm"
    train = [ action = "train"
      BrainScriptNetworkBuilder = [
        features = Input {{7}} ; labels = Input {{4}}
        h = RecurrentLSTMLayer {{5}} (features)
        W = ParameterTensor {{(5:7)}} ; Wc = Parameter (3, 5)
        ce = ClassBasedCrossEntropyWithSoftmax (labels, h, W, Wc * h)
        criterionNodes = (ce) ]
      SGD = [ epochSize = 0 ; minibatchSize = 8 ; learningRatesPerSample = 0.1 ; maxEpochs = 3 ]
      {LM_READER.format(dir=tmp_path)} ]
    """)
    out = io.StringIO()
    run(str(tmp_path / "lm.cntk"), out=out)
    text = out.getvalue()
    losses = [float(v) for v in re.findall(r"Finished Epoch\[ ?\d of 3\]: \[Training\] ce = "
                                           r"([0-9.]+) \* 15", text)]
    assert len(losses) == 3 and losses[2] < losses[0]       # 15 words follow a first word
