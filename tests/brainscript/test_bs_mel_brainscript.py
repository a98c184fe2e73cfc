"""MEL on a model a BrainScript network wrote (Tests/EndToEndTests/Image/FCN's pattern:
fcn8_to_fcn4.mel deletes the nodes of functions' records, ``Delete (pixelwiseError.pixelNorm.z.r)``;
prepare_for_test.mel puts a new input in, ``SetInput (CE.diff_valid, 1, ignoreMask)``): the
model file names every node cntk.exe names, with its inputs in cntk.exe's order (the names of
FCN's baseline.txt "Validating -->" lines: a function's node at the path of its call, plus the
member CNTK.core.bs makes it in, ``.r`` for ``ReduceSum``)."""

from __future__ import annotations

import io

import numpy as np

import stadyn as sd
from stadyn.brainscript._runner import run

# FCN's PixelError, smaller: 1 - the label's output, masked, summed
CONFIG = """command = COMMANDS
precision = float
deviceId = -1
traceLevel = 1
Train = [ action = train ; modelPath = $Dir$/m/net
    BrainScriptNetworkBuilder = [
        Miss (label, out, mask) = [
            hit = ReduceSum (ElementTimes (label, out))
            diffs = Minus (BS.Constants.One, hit) .* mask
            err = ReduceSum (diffs)
        ].err
        features = Input {3} ; labels = Input {2} ; mask = Input {1}
        W = ParameterTensor {(2:3)} ; b = ParameterTensor {2, initValue = 0}
        z = W * features + b
        ce = CrossEntropyWithSoftmax (labels, z)
        e = Miss (labels, z, mask)
        featureNodes = (features:mask) ; labelNodes = (labels)
        criterionNodes = (ce) ; evaluationNodes = (e) ; outputNodes = (z)
    ]
    SGD = [ epochSize = 0 ; minibatchSize = 4 ; learningRatesPerMB = 0.1 ; maxEpochs = 1 ]
    reader = [ readerType = CNTKTextFormatReader ; file = $Dir$/data.txt ; randomize = false
        input = [ features = [ dim = 3 ; format = dense ] ; labels = [ dim = 2 ; format = dense ]
                  mask = [ dim = 1 ; format = dense ] ] ]
]
Edit = [ action = edit ; CurModel = $Dir$/m/net ; NewModel = $Dir$/m2/net
    editPath = $Dir$/edit.mel ]
"""

# prepare_for_test.mel's steps: a new input put in where the old one was read, the old deleted
NEW_MASK = """m = LoadModel("$CurModel$", format = "cntk")
SetDefaultModel(m)
Rename(mask, oldMask)
mask = Input(1, tag = "feature")
SetInput(e.diffs, 1, mask)
Delete(oldMask)
SaveModel(m, "$NewModel$", format = "cntk")
"""


def _run(tmp_path, commands: str, script: str) -> None:
    (tmp_path / "edit.mel").write_text(script)
    rows = np.random.default_rng(0).standard_normal((8, 3)).round(3)
    (tmp_path / "data.txt").write_text("".join(
        f"|features {a} {b} {c} |labels {'1 0' if a > 0 else '0 1'} |mask {k % 2}\n"
        for k, (a, b, c) in enumerate(rows)))
    config = tmp_path / "net.cntk"
    config.write_text(CONFIG.replace("COMMANDS", commands))
    run(config, [f"Dir={tmp_path}"], out=io.StringIO())


def test_a_brainscript_model_file_names_the_functions_nodes_and_their_inputs(tmp_path):
    _run(tmp_path, "Train", NEW_MASK)
    tags = sd.load(tmp_path / "m" / "net", batch_size=2).tags
    # cntk.exe's names and inputs (FCN's baseline.txt: "pixelwiseError.diffs = ElementTimes
    # (pixelwiseError.diffs.ElementTimesArgs[0], ignoreMask)", "pixelwiseError.acc.r =
    # ReduceElements (pixelwiseError.acc._)"); the member e is the record's err
    want = {"e.hit._": ["labels", "z"], "e.hit.r": ["e.hit._"],
            "e.diffs.ElementTimesArgs[0]": ["BS.Constants.One", "e.hit.r"],
            "e.diffs": ["e.diffs.ElementTimesArgs[0]", "mask"], "e": ["e.diffs"],
            "z": ["z.PlusArgs[0]", "b"], "z.PlusArgs[0]": ["W", "features"], "ce": ["labels", "z"]}
    for name, inputs in want.items():
        assert f'inputs:{inputs}'.replace("'", '"') in tags[name], name
    assert "operation:ReduceElements" in tags["e.hit.r"]


def test_mel_sets_an_input_of_a_node_inside_a_brainscript_function(tmp_path):
    _run(tmp_path, "Train:Edit", NEW_MASK)
    net = sd.load(tmp_path / "m2" / "net", batch_size=4)
    assert sorted(net.inputs) == ["features", "labels", "mask"]
    assert 'inputs:["e.diffs.ElementTimesArgs[0]", "mask"]' in net.tags["e.diffs"]
    p = {k: np.asarray(v.d, np.float64) for k, v in net.parameters.items()}
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [0.0, 1.0, 1.0], [2.0, 0.0, -1.0]],
                 np.float32)
    labels = np.eye(2, dtype=np.float32)[[0, 1, 1, 0]]
    mask = np.array([[1.0], [0.0], [1.0], [1.0]], np.float32)
    got = net(features=x, labels=labels, mask=mask)
    z = x @ p["W"].reshape(3, 2) + p["b"].reshape(2)
    want = (1 - (labels * z).sum(axis=1, keepdims=True)) * mask
    np.testing.assert_allclose(np.asarray(got["e"]).reshape(-1), want.reshape(-1), rtol=1e-5)


def test_mel_deletes_the_nodes_of_a_brainscript_functions_record(tmp_path):
    # fcn8_to_fcn4.mel: the evaluation node and every node of its record, one by one
    script = NEW_MASK.replace("Rename(mask, oldMask)\n", "").replace(
        'mask = Input(1, tag = "feature")\nSetInput(e.diffs, 1, mask)\nDelete(oldMask)\n',
        "Delete(e)\nDelete(e.diffs)\nDelete(e.diffs.ElementTimesArgs[0])\nDelete(e.hit.r)\n"
        "Delete(e.hit._)\nDelete(mask)\n")
    _run(tmp_path, "Train:Edit", script)
    net = sd.load(tmp_path / "m2" / "net", batch_size=2)
    assert not [name for name in net.outputs if name == "e" or name.startswith("e.")]
    assert "z" in net.outputs and "ce" in net.outputs and sorted(net.inputs) == [
        "features", "labels"]



def test_a_function_added_to_the_library_later_names_its_node():
    """A function put into ``library.functions`` after the library has built a network names
    the node it makes as a function there from the start does (``g.n``: the path of its call
    and the record member it is made at)."""
    import stadyn.functions as F
    from stadyn.brainscript._network import evaluate_network
    from stadyn.brainscript._parser import parse_expression
    from stadyn.brainscript._stadyn_library import StadynLibrary

    def Mine(a):
        return F.tanh(a)

    network = "{ f = Input{3} ; G (a) = [ n = FN (a) ; m = Negate (n) ].m ; g = G (f) ; " \
        "outputNodes = (g) }"
    lib = StadynLibrary()
    first = evaluate_network(parse_expression(network.replace("FN", "Negate")), lib)
    assert list(first.inner_nodes) == ["g.n"]
    lib.functions["Mine"] = Mine
    later = evaluate_network(parse_expression(network.replace("FN", "Mine")), lib)
    assert list(later.inner_nodes) == ["g.n"]
