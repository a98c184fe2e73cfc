"""Every BrainScript parameter is named by cntk.exe's expression path, anonymous ones too.

cntk.exe names a node by the path of the expression that made it (BrainScriptEvaluator.cpp:
a record member adds ``.name``, an array item ``[k]``, an argument ``.`` and its parameter's
name in CNTK.core.bs, an infix operand ``.PlusArgs[0]``, ``Sequential``'s ``Apply`` recursion
``.x`` per function; two nodes of one name: the later one in its breadth-first walk gets a
``_``).  The expected names are the ``Training ... parameter tensors`` lists of CNTK's baseline
logs (the copy of CNTK at ``$STADYN_CNTK_SOURCE``; without one these tests skip), for the configs
and command-line overrides of each test's ``run-test``.
"""

from __future__ import annotations

import math
import os
import re

import pytest

import stadyn as sd
from stadyn.brainscript import StadynLibrary, build_network, load_config, run_config
from stadyn.graph import topological_nodes
from cntk_repo_files import SOURCE, cntk_file

SPEECH = "Tests/EndToEndTests/Speech/LSTM"
RESNET = "Examples/Image/Classification/ResNet/BrainScript"

# (config, the files it includes, its run-test's overrides, the baseline log)
CASES = {
    # a config-local LSTMP: parameters inside expressions and macros ('..._privateInnards.it._.
    # PlusArgs[0].PlusArgs[0].PlusArgs[0].TimesArgs[0]', '...TimesArgs[1].beta._'), 87 tensors
    "Speech/LSTM/FullUtterance": (f"{SPEECH}/cntk.cntk", (), ["truncated=false", "modelSelector=0"],
                                  f"{SPEECH}/FullUtterance/baseline.cpu.txt"),
    # LayerStack of Sequential (LayerNormalizationLayer ... : RecurrentLSTMLayer): '.lstm.W'
    "Speech/LSTM/FullUtteranceLayers": (f"{SPEECH}/cntk.cntk", (),
                                        ["truncated=false", "modelSelector=1"],
                                        f"{SPEECH}/FullUtteranceLayers/baseline.cpu.txt"),
    # 'if useLayerNorm then LayerNormalizationLayer{} else Identity : ...' is the layer alone:
    # '.arrayOfFunctions.gain'
    "Speech/LSTM/TruncatedLayers": (f"{SPEECH}/cntk.cntk", (), ["modelSelector=1"],
                                    f"{SPEECH}/TruncatedLayers/baseline.cpu.txt"),
    # Sequential's Apply recursion ('z.x.x.x.b...') and two blocks at one path ('_z.x.x.x.b...')
    "ResNet20_CIFAR10": (f"{RESNET}/ResNet20_CIFAR10.cntk", (f"{RESNET}/Macros.bs",), [],
                         "Tests/EndToEndTests/Examples/Image/Classification/ResNet_CIFAR/"
                         "ResNet20_CIFAR10/baseline.txt"),
    # features read as [1 x 363] and transposed: every LSTM value [n x 1], the delays given
    # [n] (test_bs_column_shapes.py); 87 tensors, 6,219,945 parameters as in the baselines
    "Speech/HTKDeserializers/LSTM/FullUtterance": (
        "Tests/EndToEndTests/Speech/HTKDeserializers/LSTM/FullUtterance/cntk.cntk", (),
        ["Truncated=false"],
        "Tests/EndToEndTests/Speech/HTKDeserializers/LSTM/FullUtterance/baseline.cpu.txt"),
    "Speech/LSTM/Truncated-Kaldi": (f"{SPEECH}/cntk.kaldi.cntk", (), [],
                                    f"{SPEECH}/Truncated-Kaldi/baseline.cpu.txt"),
    # BS.Seq2Seq's attention hook on the decoder's first layer, the encoder's NextHC, the
    # labels' default sequence axis beside the inputs' DynamicAxis: 128 tensors, 12,005,090
    "G2P": ("Examples/SequenceToSequence/CMUDict/BrainScript/G2P.cntk", (),
            ["command=train", "train=[epochSize=500]"],
            "Tests/EndToEndTests/Examples/Text/G2P/baseline.txt"),
    # Image/FCN's TrainFCN8: Crop with ancestors, a BilinearUpsamplingLayer (not trained),
    # EpochAccumulator in its mean IoU: 19 tensors, 10,480 parameters
    "FCN": ("Tests/EndToEndTests/Image/FCN/fcn.cntk", ("Tests/EndToEndTests/Image/FCN/shared.bs",),
            [], "Tests/EndToEndTests/Image/FCN/baseline.txt"),
    # BatchNormalizationLayer's members scale and bias
    "04_OneConvBN": ("Examples/Image/GettingStarted/04_OneConvBN.cntk", (), [],
                     "Tests/EndToEndTests/Examples/Image/GettingStarted/04_OneConvBN/baseline.txt"),
}


def _trained_node_names(log: str) -> list[str]:
    """The nodes of cntk.exe's ``Training N parameters in K out of K parameter tensors`` list."""
    head = re.search(r"Training \d+ parameters in (\d+) out of \d+ parameter tensors", log)
    names = re.findall(r"\tNode '([^']+)' \(LearnableParameter operation\) :", log[head.end():])
    return sorted(names[:int(head.group(1))])


@pytest.mark.parametrize("case", sorted(CASES))
def test_parameters_take_cntk_exes_node_names(case, tmp_path):
    config, includes, overrides, baseline = CASES[case]
    for path in (config, *includes):
        (tmp_path / os.path.basename(path)).write_bytes(cntk_file(path))
    log = cntk_file(baseline).decode("utf-8", "replace")
    want = _trained_node_names(log)
    count = int(re.search(r"Training (\d+) parameters in", log).group(1))
    assert want and SOURCE
    cfg = load_config(tmp_path / os.path.basename(config),
                      ["DeviceId=-1", f"ConfigDir={tmp_path}", f"RunDir={tmp_path}",
                       f"DataDir={tmp_path}", f"OutputDir={tmp_path}", *overrides])
    network = run_config(cfg).commands[0].network
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(network, StadynLibrary())
        # cntk.exe trains the parameters its nodes reach (not G2P.cntk's unused Einput)
        roots = [v for v in net.nodes.values() if isinstance(v, sd.Variable)]
        reached = {id(v) for n in topological_nodes(roots) for v in n.inputs}
        trained = {k: v for k, v in sd.get_parameters().items()
                   if v.need_grad and id(v) in reached}
    assert sorted(trained) == want
    assert sum(math.prod(v.shape) for v in trained.values()) == count


def test_bs_rnns_parameters_take_cntk_exes_node_names(tmp_path):
    # BS.RNNs.RecurrentLSTMPStack in ATIS: CNTK's EvalClientTests/CPPEvalExtendedClientTest
    # baseline (a run of ATIS.cntk) names the input weights it infers; every other parameter of
    # the stack is at a path of the same LSTMP record ('_' and 'h'), none anonymous
    config = "Examples/LanguageUnderstanding/ATIS/BrainScript/ATIS.cntk"
    (tmp_path / "ATIS.cntk").write_bytes(cntk_file(config))
    log = cntk_file("Tests/EndToEndTests/EvalClientTests/CPPEvalExtendedClientTest/"
                     "baseline.txt").decode("utf-8", "replace")
    inferred = set(re.findall(r"Node '([^']+)' \(LearnableParameter operation\) operation: "
                              r"Tensor shape was inferred", log))
    assert len(inferred) == 4
    cfg = load_config(tmp_path / "ATIS.cntk", [f"DataDir={tmp_path}", f"OutputDir={tmp_path}"])
    with sd.parameter_registry(sd.ParameterRegistry()):
        build_network(run_config(cfg).commands[0].network, StadynLibrary())
        got = set(sd.get_parameters())
    assert inferred <= got
    stack = "lstmStack.layers[0].lstmState."
    assert got - inferred == {"W", "b", "emb"} | {stack + n for n in (
        "_.it._.PlusArgs[0].PlusArgs[0].PlusArgs[0]", "_.it._.PlusArgs[0].PlusArgs[1].TimesArgs[0]",
        "_.it._.PlusArgs[1].ElementTimesArgs[0]",
        "_.ft._.PlusArgs[0].PlusArgs[0].PlusArgs[0]", "_.ft._.PlusArgs[0].PlusArgs[1].TimesArgs[0]",
        "_.ft._.PlusArgs[1].ElementTimesArgs[0]",
        "_.ot._.PlusArgs[0].PlusArgs[0].PlusArgs[0]", "_.ot._.PlusArgs[0].PlusArgs[1].TimesArgs[0]",
        "_.ot._.PlusArgs[1].ElementTimesArgs[0]",
        "_.bit.ElementTimesArgs[1].z.PlusArgs[0].PlusArgs[0]",
        "_.bit.ElementTimesArgs[1].z.PlusArgs[1].TimesArgs[0]")}
