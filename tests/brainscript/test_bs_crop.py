"""What Tests/EndToEndTests/Image/FCN's network needs of the BrainScript library: CNTK's ``Crop``
node with automatic offsets (two inputs: from their common ancestor; four: the last two stand
for one another) or given ones, ``BilinearUpsamplingLayer``, ``ConstantTensor``, the comparison
nodes (``Equal`` & co., ``==`` on nodes), ``EpochAccumulator`` (the mean since the epoch
began), and that an ``ImageInput`` holds one image a sample also in a network of sequences.
FCN's trained parameters against cntk.exe's log: test_bs_param_paths.py.  The offsets are
hand-computed and are CNTK 2.7's
(its Python ``crop_automatic`` and ``crop_automatic_with_ancestors`` on the same graphs crop at
(1, 1)); the values against NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import StadynLibrary, build_network
from stadyn.train import feed

CROP = """CropAutomatic (a, b) = new ComputationNode [ operation = 'Crop' ; inputs = (a : b) ]
    CropGiven (a, b, c, d) = new ComputationNode [ operation = 'Crop' ; inputs = (a : b : c : d) ]
    CropAt (a, b) = new ComputationNode [ operation = 'Crop' ; inputs = (a : b) ; xOffset = 2 ;
                                          yOffset = 1 ]
"""


def _net(text: str):
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ " + CROP + text + " }", StadynLibrary())
        params = dict(sd.get_parameters(grad_only=False))
    return net, params


def _image(n: int, batch: int = 2) -> np.ndarray:
    return np.arange(batch * n * n, dtype=np.float32).reshape(batch, 1, n, n)


def test_crop_from_the_common_ancestor_of_a_valid_convolution():
    # a 3 x 3 convolution without padding: its pixel (0, 0) is the input's (1, 1)
    net, _ = _net("x = ImageInput (9, 9, 1, imageLayout = 'cudnn') ; "
                  "c = ConvolutionalLayer {1, (3:3), pad = false} (x) ; z = CropAutomatic (x, c)")
    img = _image(9)
    feed(net.nodes["x"], img)
    net.nodes["z"].forward()
    np.testing.assert_array_equal(net.nodes["z"].d, img[:, :, 1:8, 1:8])


def test_crop_with_ancestors_of_an_upsampled_prediction():
    # FCN's form: pooled 2 x 2 / 2, upsampled 4 x 4 / 2 (10 x 10), cropped to the labels' 8 x 8
    # where the labels stand for the features: pixel u of the upsampling is the input's u - 1
    net, params = _net("""x = ImageInput (8, 8, 1, imageLayout = 'cudnn')
        labels = ImageInput (8, 8, 1, imageLayout = 'cudnn')
        up = BilinearUpsamplingLayer {1, 4, 2} (MaxPoolingLayer {(2:2), stride = 2} (x))
        z = CropGiven (up, labels, x, labels)""")
    img = _image(8)
    feed(net.nodes["x"], img)
    feed(net.nodes["labels"], img)
    net.nodes["up"].forward()
    net.nodes["z"].forward()
    assert net.nodes["up"].shape[-2:] == (10, 10)
    np.testing.assert_array_equal(net.nodes["z"].d, net.nodes["up"].d[:, :, 1:9, 1:9])
    # the upsampling's weights are bilinear and not learned (learningRateMultiplier = 0)
    (w,) = params.values()
    assert not w.need_grad
    k = np.array([0.25, 0.75, 0.75, 0.25], np.float32)
    np.testing.assert_allclose(np.asarray(w.d).reshape(4, 4), np.outer(k, k), rtol=1e-6)


def test_crop_at_given_offsets_and_its_refusals():
    net, _ = _net("x = ImageInput (6, 5, 1, imageLayout = 'cudnn') ; "
                  "r = ImageInput (3, 2, 1, imageLayout = 'cudnn') ; z = CropAt (x, r)")
    img = np.arange(60, dtype=np.float32).reshape(2, 1, 5, 6)
    feed(net.nodes["x"], img)
    net.nodes["z"].forward()
    np.testing.assert_array_equal(net.nodes["z"].d, img[:, :, 1:3, 2:5])
    with pytest.raises(ConfigError, match="Crop: the two inputs have no common ancestor"):
        _net("x = ImageInput (6, 5, 1) ; r = ImageInput (3, 2, 1) ; z = CropAutomatic (x, r)")
    with pytest.raises(ConfigError, match="Crop: a 2x3 window at offset .* does not fit"):
        _net("x = ImageInput (4, 5, 1) ; r = ImageInput (3, 2, 1) ; z = CropAt (x, r)")


@pytest.mark.parametrize("name, fn", [("Equal", np.equal), ("NotEqual", np.not_equal),
                                      ("Less", np.less), ("LessEqual", np.less_equal),
                                      ("Greater", np.greater),
                                      ("GreaterEqual", np.greater_equal)])
def test_comparison_nodes_are_one_where_the_relation_holds(name, fn):
    net, _ = _net(f"x = Input {{3}} ; m = ReduceMax (x) ; z = {name} (x, m) ; w = {name} (x, 1)")
    x = np.array([[1.0, 3.0, 3.0], [0.0, -2.0, 1.0]], np.float32)
    feed(net.nodes["x"], x)
    for node, other in (("z", x.max(1, keepdims=True)), ("w", 1.0)):
        net.nodes[node].forward()
        np.testing.assert_array_equal(net.nodes[node].d, fn(x, other).astype(np.float32))


def test_comparison_operators_on_nodes_and_constant_tensor():
    net, params = _net("x = Input {3} ; c = ConstantTensor (3, (3)) ; z = (x == c) + (x > 2)")
    x = np.array([[1.0, 3.0, 4.0]], np.float32)
    feed(net.nodes["x"], x)
    net.nodes["z"].forward()
    np.testing.assert_array_equal(net.nodes["z"].d, [[0.0, 2.0, 1.0]])
    # (beside it the constant cntk.exe makes of the number 2, named _z.PlusArgs[1])
    assert sorted(params) == ["_z.PlusArgs[1]", "c"]
    c = params["c"]
    assert not c.need_grad and np.asarray(c.d).tolist() == [3.0, 3.0, 3.0]


def test_image_inputs_hold_one_image_a_sample_in_a_network_of_sequences():
    # a network of sequences (BS.Loop.Previous): its images are no sequences, an Input beside
    # them is
    net, _ = _net("x = ImageInput (4, 4, 1) ; y = Input {2} ; p = BS.Loop.Previous (y) ; "
                  "z = BS.Constants.One - x ; c = ConvolutionalLayer {1, (3:3)} (x)")
    assert net.nodes["x"].sequence_lengths is None
    assert net.nodes["y"].sequence_lengths is not None


ACCUMULATE = """command = train
modelPath = "MODEL"
traceLevel = 1
train = {
    action = "train"
    BrainScriptNetworkBuilder = {
        Accumulator (input, tag = '') = new ComputationNode [ operation = 'EpochAccumulator' ;
                                                              inputs = (input) ]
        features = Input {2} ; labels = Input {2}
        z = DenseLayer {2, activation = Identity} (features)
        ce = CrossEntropyWithSoftmax (labels, z, tag = 'criterion')
        seen = ReduceSum (Accumulator (features), tag = 'evaluation')
    }
    SGD = { epochSize = 0 ; maxEpochs = 2 ; minibatchSize = 4 ; learningRatesPerSample = 0.1
            numMBsToShowResult = 1 }
    reader = { readerType = "CNTKTextFormatReader" ; file = "DATA" ; randomize = false
        input = { features = { dim = 2 ; format = "dense" } ;
                  labels = { dim = 2 ; format = "dense" } } }
}
"""


def test_epoch_accumulator_is_the_mean_since_the_epoch_began(tmp_path):
    # CNTK's EpochAccumulator (FCN's mean IoU): UpdateRunningAverage over every sample since
    # OnEpochStart; 'seen' is one value for the minibatch, logged as that value counted once
    import io as pyio
    import re

    from stadyn.brainscript import run
    x = np.random.default_rng(0).standard_normal((10, 2)).round(3)
    lines = [f"|features {a:.3f} {b:.3f} |labels 1 0" for a, b in x]
    (tmp_path / "data.txt").write_text("\n".join(lines) + "\n")
    config = tmp_path / "run.cntk"
    config.write_text(ACCUMULATE.replace("MODEL", str(tmp_path / "m.dnn"))
                      .replace("DATA", str(tmp_path / "data.txt")))
    log = pyio.StringIO()
    run(str(config), [], out=log)
    logged = [float(v) * int(n) for v, n in re.findall(r"Minibatch\[.*?\]: ce = \S+ \* \d+; "
                                                         r"seen = (\S+) \* (\d+)", log.getvalue())]
    ends = [4, 8, 10]
    want = [x[:e].sum(1).mean() for e in ends] * 2          # the second epoch starts again
    np.testing.assert_allclose(logged, want, rtol=1e-5)
    with pytest.raises(ConfigError, match="EpochAccumulator: the input must be a minibatch"):
        _net("p = ParameterTensor {2} ; "
             "a = new ComputationNode [ operation = 'EpochAccumulator' ; inputs = (p) ]")


def test_epoch_accumulator_of_sequences_averages_their_real_steps():
    # cntk.exe's UpdateRunningAverage on a sequence input: the gaps masked to zero, the count
    # GetActualNumSamples (the real steps), one value without the sequence axis; NumPy's mean
    net, _ = _net("x = Input {2} ; d = PastValue (0, x) ; "
                  "a = new ComputationNode [ operation = 'EpochAccumulator' ; inputs = (x) ]")
    x, a = net.nodes["x"], net.nodes["a"]
    rng = np.random.default_rng(3)
    first = [rng.standard_normal((3, 2)), rng.standard_normal((1, 2))]
    second = [rng.standard_normal((2, 2))]
    x.d = first
    a.forward()
    assert a.sequence_lengths is None and a.shape == (2,)
    np.testing.assert_allclose(a.d, np.concatenate(first).mean(0), rtol=1e-5, atol=1e-6)
    x.d = second
    a.forward()
    np.testing.assert_allclose(a.d, np.concatenate(first + second).mean(0), rtol=1e-5,
                               atol=1e-6)


PASSES = """command = train:test
modelPath = "MODEL"
traceLevel = 1
reader = { readerType = "CNTKTextFormatReader" ; file = "DATA" ; randomize = false
    input = { features = { dim = 2 ; format = "dense" } ;
              labels = { dim = 2 ; format = "dense" } } }
train = {
    action = "train"
    BrainScriptNetworkBuilder = {
        Accumulator (input, tag = '') = new ComputationNode [ operation = 'EpochAccumulator' ;
                                                              inputs = (input) ]
        features = Input {2} ; labels = Input {2}
        z = DenseLayer {2, activation = Identity} (features)
        ce = CrossEntropyWithSoftmax (labels, z, tag = 'criterion')
        seen = ReduceSum (Accumulator (features), tag = 'evaluation')
        err = ClassificationError (labels, z, tag = 'evaluation')
        shifted = Minus (seen, Constant (1), tag = 'evaluation')
    }
    SGD = { epochSize = 0 ; maxEpochs = 2 ; minibatchSize = 4 ; learningRatesPerSample = 0.1
            numMBsToShowResult = 1 }
    cvReader = { readerType = "CNTKTextFormatReader" ; file = "CV" ; randomize = false
        input = { features = { dim = 2 ; format = "dense" } ;
                  labels = { dim = 2 ; format = "dense" } } }
}
test = { action = "test" ; minibatchSize = 4 ; numMBsToShowResult = 1 }
"""


def test_accumulated_results_are_logged_once_and_reset_for_each_pass(tmp_path):
    # cntk.exe (SGD.cpp, SimpleEvaluator.h, Criterion.h): an evaluation node computed from
    # EpochAccumulators and parameters only (ExtractNodesWhichAccumulateResult) is logged as
    # its value so far counted once -- "miouError = 0.67398942 * 1" in every minibatch line,
    # the epoch's, the cvReader's and a test's (Image/FCN/baseline.txt) -- and every pass
    # starts its accumulators afresh (StartEvaluateMinibatchLoop -> OnEpochStart), the
    # validation after an epoch too.  Expected values from NumPy.
    import io as pyio
    import re

    from stadyn.brainscript import run
    rng = np.random.default_rng(1)
    train, cv = rng.standard_normal((10, 2)).round(3), rng.standard_normal((6, 2)).round(3)
    for name, x in (("data.txt", train), ("cv.txt", cv)):
        (tmp_path / name).write_text("".join(f"|features {a:.3f} {b:.3f} |labels 1 0\n"
                                             for a, b in x))
    config = tmp_path / "run.cntk"
    config.write_text(PASSES.replace("MODEL", str(tmp_path / "m.dnn"))
                      .replace("DATA", str(tmp_path / "data.txt"))
                      .replace("CV", str(tmp_path / "cv.txt")))
    log = pyio.StringIO()
    run(str(config), [], out=log)
    text = log.getvalue()

    def logged(kind: str, name: str) -> list[tuple[float, int]]:
        return [(float(v), int(n)) for v, n in
                re.findall(kind + r".*?\b" + name + r" = (\S+) \* (\d+)", text)]

    def means(x, ends):
        return [x[:e].sum(1).mean() for e in ends]
    for name, shift in (("seen", 0.0), ("shifted", 1.0)):
        train_lines = logged(r"Epoch\[ \d of 2\]-Minibatch", name)
        assert [n for _, n in train_lines] == [1] * 6
        np.testing.assert_allclose([v for v, _ in train_lines],
                                   [m - shift for m in means(train, [4, 8, 10]) * 2], rtol=1e-5)
        for kind, x in ((r"\[Training\]", train), (r"\[Validate\]", cv)):
            np.testing.assert_allclose(logged(kind, name), [(x.sum(1).mean() - shift, 1)] * 2,
                                       rtol=1e-5)
        # the test command: the running mean in its minibatch lines, the sweep's at the end
        test = text[text.index("# test command (test action)"):]
        test_lines = [(float(v), int(n)) for v, n in
                      re.findall(r"\b" + name + r" = (\S+) \* (\d+)", test)]
        np.testing.assert_allclose(test_lines, [(m - shift, 1) for m in
                                                means(train, [4, 8, 10, 10])], rtol=1e-5)
    # an ordinary evaluation node is still summed over the samples
    assert [n for _, n in logged(r"\[Training\]", "err")] == [10, 10]


def test_a_precomputed_mean_beside_an_accumulator_holds_an_accumulated_result():
    # cntk.exe's ExtractNodesWhichAccumulateResult (ComputationNetworkEvaluation.cpp:918-975)
    # walks the global eval order, leaves included: a leaf has no inputs, so it joins the set
    # "all leaf descendants are learnable parameters" vacuously (an InputValue too), and Mean (x)
    # after it; d's inputs are then an accumulator's and that set's, so d is logged "* 1"
    from stadyn.brainscript._accumulators import holds_accumulated_result
    net, _ = _net("x = Input {2} ; m = Mean (x) ; "
                  "a = new ComputationNode [ operation = 'EpochAccumulator' ; inputs = (x) ] ; "
                  "d = Minus (ReduceSum (a), ReduceSum (m))")
    assert holds_accumulated_result(net.nodes["d"])


def test_an_accumulator_beside_a_per_sample_value_holds_an_accumulated_result_but_not_in_a_loop():
    # the same walk of cntk.exe's: an Input joins the "parameters only" set as a leaf, so
    # e = a + ReduceSum (x) is an accumulated result; a loop's nodes (a PastValue met before its
    # input in the eval order) are in neither set, nor is what reads them (s + a)
    from stadyn.brainscript._accumulators import holds_accumulated_result
    net, _ = _net("x = Input {2} ; "
                  "a = new ComputationNode [ operation = 'EpochAccumulator' ; inputs = (x) ] ; "
                  "e = a + ReduceSum (x) ; "
                  "s = x + PastValue (0, s) ; l = ReduceSum (s) + a")
    assert holds_accumulated_result(net.nodes["e"])
    assert not holds_accumulated_result(net.nodes["l"])
    assert not holds_accumulated_result(net.nodes["x"])
