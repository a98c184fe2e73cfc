"""``NDLNetworkBuilder``: more of cntk.exe's rules (the C++ source cited at each test), on NDL
written here."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from test_bs_ndl import _build_text, _ndl_config


def test_ndl_times_gives_a_flat_weight_its_inputs_dimensions(tmp_path):
    # LinearAlgebraNodes.h, TimesNodeBase::Validate ("support for legacy models when only the
    # matrix dimensions had to match"): W [4 x 6] times x [2 x 3] patches W to [4 x 2 x 3]
    # (the same values; Stadyn holds a parameter's dims reversed)
    net_text = "x = Input(2, 3)\nW = Parameter(4, 6)\ny = Times(W, x)\nOutputNodes = (y)"
    net, _, params = _build_text(_ndl_config(tmp_path, net_text))
    assert params["W"].shape == (3, 2, 4)
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2) / 10
    net.nodes["x"].reset_shape(x.shape, force=True)
    net.nodes["x"].d = x
    net.output_nodes[0].forward()
    np.testing.assert_allclose(net.output_nodes[0].d.reshape(2, 4),
                               x.reshape(2, 6) @ params["W"].reshape(6, 4), rtol=1e-5)
    # a weight that already fits is left alone; one no leading dims explain is an error
    _, _, params = _build_text(_ndl_config(tmp_path, "x = Input(6)\nW = Parameter(4, 6)\n"
                                                     "y = Times(W, x)"))
    assert params["W"].shape == (6, 4)
    with pytest.raises(ConfigError, match=r"net\.ndl:7:5: .*Times"):
        _build_text(_ndl_config(tmp_path, "x = Input(2, 3)\nW = Parameter(4, 5)\n"
                                          "y = Times(W, x)"))


@pytest.mark.parametrize("flat_first", [True, False])
def test_a_patched_times_weight_shared_with_a_flat_times_is_rejected_at_build(tmp_path,
                                                                              flat_first):
    # LinearAlgebraNodes.h:885-908: the legacy patch sets W's dims ([4 x 6] -> [4 x 2 x 3]) for
    # the whole network; the Times of W and a [6] input then fails validation (:883 "right
    # argument shape [6] has too few dimensions", :956 "shapes are not compatible"), whichever
    # Times is built first; before, the build passed and forward raised a ShapeError (or
    # multiplied with the flattened weight)
    items = ["y = Times(W, x)", "z = Times(W, x2)"]
    if not flat_first:
        items.reverse()
    net_text = "\n".join(["x = Input(6)", "x2 = Input(2, 3)", "W = Parameter(4, 6)", *items,
                          "OutputNodes = (y, z)"])
    line = 8 if flat_first else 9            # y's line in net.ndl (its section starts at 5)
    with pytest.raises(ConfigError, match=rf"net\.ndl:{line}:5: NDL: Times 'y': its input \[6\] "
                                          r"does not fit 'W' \[4 x 2 x 3\]: Times 'z' "
                                          rf"\(net\.ndl:{17 - line}\) patched"):
        _build_text(_ndl_config(tmp_path, net_text))


def _macro_config(tmp_path, body: str, run: str) -> str:
    (tmp_path / "macros.ndl").write_text(f"M(x) = [\n{body}\n]\n")
    (tmp_path / "net.ndl").write_text(f"run = net\nnet = [\n{run}\n]\n")
    return (f"command = T\nT = [\n action = train\n NDLNetworkBuilder = [\n"
            f"  ndlMacros = {tmp_path}/macros.ndl\n  networkDescription = {tmp_path}/net.ndl\n"
            " ]\n]\n")


def test_a_macro_body_does_not_see_a_sections_values(tmp_path):
    # NetworkDescriptionLanguage.h: a macro's names are looked up in its own script, then the
    # global one (NDLNode::FindNode); a section's value is neither: GetScalar's "undefined
    # Variable, '%s' found, must be declared before first use"
    text = _macro_config(tmp_path, "W = Parameter(hidden, 2)\ny = Times(W, x)",
                         "hidden = 3\nx = Input(2)\nh = M(x)")
    with pytest.raises(ConfigError, match=r"macros\.ndl:2:15: NDL: undefined Variable, 'hidden' "
                                          r"found, must be declared before first use"):
        _build_text(text)
    # a section's node it finds by its name in the network (EvaluateParameter's lookup in the
    # computation network, "needed for MEL processing")
    text = _macro_config(tmp_path, "W = Parameter(3, 2)\ny = Plus(Times(W, x), b)",
                         "b = Parameter(3, 1, init = fixedValue, value = 1)\nx = Input(2)\n"
                         "h = M(x)\nOutputNodes = (h)")
    net, _, params = _build_text(text)
    x = np.array([[1.0, 2.0]], np.float32)
    net.nodes["x"].d = x
    net.output_nodes[0].forward()
    np.testing.assert_allclose(net.output_nodes[0].d.reshape(1, 3), x @ params["h.W"] + 1,
                               rtol=1e-5)


def test_ndl_lookup_table_stacks_each_words_embedding(tmp_path):
    # InputAndParamNodes.h, LookupTableNode: E [d x V], x [V*k x *] -> [d*k x *], the k words'
    # columns of E one after the other (E * x reshaped to [V x k], back to [d*k])
    net_text = ("x = SparseInput(8)\nE = Parameter(3, 4)\n"
                "y = LookupTable(E, x, init = \"uniform\", initValueScale = 6)\n"
                "OutputNodes = (y)")
    net, lib, params = _build_text(_ndl_config(tmp_path, net_text))
    assert lib.operation_of(net.nodes["y"]) == "LookupTable"
    words = np.zeros((2, 8), np.float32)
    words[0, [1, 4 + 3]] = 1        # sample 0: words 1 and 3
    words[1, [0, 4 + 0]] = 1        # sample 1: word 0 twice
    net.nodes["x"].reset_shape(words.shape, force=True)
    net.nodes["x"].d = words
    net.output_nodes[0].forward()
    e = params["E"]                  # (V, d): row v is word v's embedding
    np.testing.assert_allclose(net.output_nodes[0].d.reshape(2, 6),
                               [np.r_[e[1], e[3]], np.r_[e[0], e[0]]], rtol=1e-6)
    with pytest.raises(ConfigError, match=r"net\.ndl:7:5: .*Rows in input1 must be multiples "
                                          r"of cols in input0"):
        _build_text(_ndl_config(tmp_path, "x = Input(6)\nE = Parameter(3, 4)\n"
                                          "y = LookupTable(E, x)"))


def test_ndl_bilinear_init_upsamples_each_channel_from_itself(tmp_path):
    # InputAndParamNodes.cpp, LearnableParameter::InitBilinear: [k x k x C x C], weight
    # (1 - |w - c|/f)(1 - |h - c|/f), f = (k + 1)/2 (integer), c = (k - 1)/2, where the input
    # and output channel agree, else 0; it takes no random seed
    net_text = ("B = Parameter(3, 3, 2, 2, init = bilinear, kernelWidth = 3, kernelHeight = 3)\n"
                "W = Parameter(2, 2)")
    _, _, params = _build_text(_ndl_config(tmp_path, net_text))
    corner = np.array([[0.25, 0.5, 0.25], [0.5, 1, 0.5], [0.25, 0.5, 0.25]], np.float32)
    expected = np.zeros((2, 2, 3, 3), np.float32)
    expected[0, 0] = expected[1, 1] = corner
    np.testing.assert_array_equal(params["B"], expected)
    from stadyn._mt19937 import uniform_floats
    np.testing.assert_array_equal(params["W"].ravel(), uniform_floats(1, 4, 0.05))
    with pytest.raises(ConfigError, match="must be square"):
        _build_text(_ndl_config(tmp_path, "B = Parameter(3, 2, 1, 1, init = bilinear, "
                                          "kernelWidth = 3, kernelHeight = 2)"))
    with pytest.raises(ConfigError, match=r"net\.ndl:5:5: .*'init' must be one of the values "
                                          r"of \[ uniform \| gaussian"):
        _build_text(_ndl_config(tmp_path, "B = Parameter(3, 3, init = xavier)"))


def test_ndl_convolution_without_sharing_is_refused_at_its_line(tmp_path):
    # cntk.exe builds it (ConvolveGeometry: a kernel per output position where sharing is
    # false, run by its reference engine only); Stadyn refuses it with the NDL line
    net_text = ("x = ImageInput(4, 4, 1, imageLayout = \"cudnn\")\nW = Parameter(2, 9)\n"
                "c = Convolution(W, x, {3, 3, 1}, mapCount = 2, sharing = {false, false, false},"
                " imageLayout = \"cudnn\")")
    with pytest.raises(ConfigError, match=r"net\.ndl:7:5: .*sharing"):
        _build_text(_ndl_config(tmp_path, net_text))


def _nodes_with_gradient(config: str, overrides=()) -> int | None:
    from stadyn.brainscript import load_config, parse_config
    from stadyn.brainscript._blocks import command_config
    from stadyn.brainscript._command_network import CommandNetwork
    root = parse_config(config) if "\n" in config else load_config(config, overrides=list(
        overrides))
    with sd.parameter_registry(sd.ParameterRegistry()):
        network = CommandNetwork(command_config(root, "T" if "\n" in config else "train").network,
                                 0.0)
        return network.nodes_with_gradient(network.criterion_nodes[0])


def test_the_nodes_with_gradient_are_counted_as_cntk_exe_counts_them(tmp_path):
    # SGD.cpp: "Training N parameters in K out of K parameter tensors and M nodes with
    # gradient", M the nodes of the criterion's evaluation order that NeedsGradient (a trained
    # parameter, or computed from one): L1.W, L1.b, its Times and Plus (unnamed), L1.y, ce
    net_text = ("x = Input(dim)\nlab = Input(4)\nL1 = Layer(x, 4, dim, 1)\n"
                "F = Parameter(4, 1, learningRateMultiplier = 0)\ns = Plus(lab, F)\n"
                "ce = CrossEntropyWithSoftmax(s, L1, tag = \"criterion\")\n"
                "other = Sigmoid(L1)")
    assert _nodes_with_gradient(_ndl_config(tmp_path, net_text)) == 6
    # MNIST 03_ConvBatchNorm_ndl/baseline.txt: "Training 215546 parameters in 11 out of 11
    # parameter tensors and 25 nodes with gradient"
    from cntk_repo_files import copy_cntk_file
    from test_bs_ndl import MNIST
    folder = tmp_path / "03_ConvBatchNorm_ndl"
    folder.mkdir()
    copy_cntk_file(tmp_path, f"{MNIST}/Macros.ndl")
    copy_cntk_file(folder, f"{MNIST}/03_ConvBatchNorm_ndl/03_ConvBatchNorm.ndl")
    config = copy_cntk_file(folder,
                            f"{MNIST}/03_ConvBatchNorm_ndl/03_ConvBatchNorm_ndl_deprecated.cntk")
    assert _nodes_with_gradient(str(config), [f"rootDir={tmp_path}", "imageLayout=cudnn"]) == 25


def test_a_macros_files_values_are_seen_by_nothing(tmp_path):
    # NDLNetworkBuilder.h:486-500: cntk.exe parses each ndlMacros file into a local NDLScript
    # that it drops once read; only its macros reach the global script
    # (NetworkDescriptionLanguage.h:921-927, ParseDefinition), so a value there is an
    # "undefined Variable" (GetScalar's message) in a section and in a macro alike, and a node
    # there is never built (it takes no seed)
    def config(macros: str, run: str) -> str:
        (tmp_path / "macros.ndl").write_text(macros)
        (tmp_path / "net.ndl").write_text(f"run = net\nnet = [\n{run}\n]\n")
        return (f"command = T\nT = [\n action = train\n NDLNetworkBuilder = [\n"
                f"  ndlMacros = {tmp_path}/macros.ndl\n"
                f"  networkDescription = {tmp_path}/net.ndl\n ]\n]\n")
    for macros in ("hdim = 4\n", "load = consts\nconsts = [ hdim = 4 ]\n"):
        with pytest.raises(ConfigError, match=r"net\.ndl:4:15: NDL: undefined Variable, 'hdim' "
                                              r"found, must be declared before first use"):
            _build_text(config(macros, "x = Input(2)\nV = Parameter(hdim, 2)"))
    with pytest.raises(ConfigError, match=r"macros\.ndl:2:24: NDL: undefined Variable, 'hdim'"):
        _build_text(config("hdim = 4\nM(x) = [ W = Parameter(hdim, 2)\n y = Times(W, x) ]\n",
                           "x = Input(2)\nh = M(x)"))
    net, _, params = _build_text(config("U = Parameter(5, 5)\n",
                                        "x = Input(2)\nV = Parameter(3, 2)"))
    assert sorted(params) == ["V"] and "U" not in net.nodes
    from stadyn._mt19937 import uniform_floats
    np.testing.assert_array_equal(params["V"].ravel(), uniform_floats(1, 6, 0.05))


def test_a_recurrent_ndl_networks_nodes_with_gradient_are_counted(tmp_path):
    # Tests/EndToEndTests/Examples/Speech/AN4/LSTM/baseline.cpu.txt:631 "Training 13634692
    # parameters in 23 out of 23 parameter tensors and 104 nodes with gradient": NeedsGradient
    # propagates through the PastValue loops (ComputationNetworkEvaluation.cpp:754), counted
    # over the criterion's evaluation order (SGD.cpp:356-361); before, no count for a loop
    from cntk_repo_files import copy_cntk_file
    (tmp_path / "Config").mkdir()
    copy_cntk_file(tmp_path / "Config", "Examples/Speech/AN4/Config/lstmp-3layer-opt.ndl")
    config = copy_cntk_file(tmp_path / "Config",
                            "Examples/Speech/AN4/Config/LSTM-NDL_ndl_deprecated.cntk")
    from stadyn.brainscript import load_config
    from stadyn.brainscript._blocks import command_config
    from stadyn.brainscript._command_network import CommandNetwork
    root = load_config(str(config), overrides=[f"RootDir={tmp_path}", "deviceId=-1"])
    with sd.parameter_registry(sd.ParameterRegistry()):
        network = CommandNetwork(command_config(root, "speechTrain").network, 0.0)
        assert network.nodes_with_gradient(network.criterion_nodes[0]) == 104


@pytest.mark.parametrize("call,position,literal", [
    ("Plus(x, 1)", 2, "1"), ("ElementTimes(2.5, x)", 1, "2.5"), ("Scale(3, x)", 1, "3"),
    ("ErrorPrediction(l, x, 5)", 3, "5"), ("Times(x, 2)", 2, "2"), ("RowStack(x, 4)", 2, "4")])
def test_a_number_where_ndl_wants_a_node_is_refused_at_its_line(tmp_path, call, position,
                                                                  literal):
    # cntk.exe: a standard node's parameters are all node inputs (NDLNetworkBuilder.cpp:
    # 612-615); EvaluateParameter keeps a literal as it is (NDLNetworkBuilder.h:206-208), so
    # the input is attached as no node (:632-651) and the network is refused as malformed
    # (ComputationNetworkEvaluation.cpp:562-566).  NDL writes Const(5) (01_OneHidden.ndl:26);
    # Stadyn made a Constant of the number and built the network
    net_text = f"x = Input(2)\nl = Input(2)\ny = {call}\nOutputNodes = (y)"
    with pytest.raises(ConfigError, match=rf"net\.ndl:7:5: NDL: \w+: input {position} is the "
                                          rf"literal {literal}, not a node .*Const\({literal}\)"):
        _build_text(_ndl_config(tmp_path, net_text))


def test_ndl_constant_inputs_and_row_slices_numbers_still_build(tmp_path):
    # Const(1) is a node; RowSlice's first two parameters are numbers (its own branch,
    # NDLNetworkBuilder.cpp:202-219), its third the node
    net_text = ("x = Input(4)\np = Plus(x, Const(1))\ns = RowSlice(1, 2, p)\n"
                "OutputNodes = (s)")
    net, _, _ = _build_text(_ndl_config(tmp_path, net_text))
    x = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    net.nodes["x"].d = x
    net.output_nodes[0].forward()
    np.testing.assert_array_equal(net.output_nodes[0].d, (x + 1)[:, 1:3])
