"""``NDLNetworkBuilder``: the ``unnamed<n>`` names cntk.exe gives NDL nodes made inside an
argument (NetworkDescriptionLanguage.h, ``NDLNode::GenerateName``: ``++s_nameCounter`` for each
node created without a name while the text is parsed).

The CNTK tests read CNTK's own configs and baseline logs from the copy of CNTK at
``$STADYN_CNTK_SOURCE`` (they skip without one); the others use NDL written here, with the
numbers worked out by hand from that rule (comments)."""

from __future__ import annotations

import re

import numpy as np

import stadyn as sd
from stadyn.brainscript import StadynLibrary, build_network, parse_config
from stadyn.brainscript._blocks import command_config
from cntk_repo_files import copy_cntk_file
from test_bs_ndl import _baseline, _build

_UNNAMED = re.compile(r"Validating --> (\S*unnamed\d+) = (\w+)")

# definitions: each call, number and array of a body takes a number when it is read
_MACROS = """
Twice(x, d) = [
    W = Parameter(d, d)
    y = Tanh(Plus(Times(W, x), Constant(1)))
]
Squash(x) = Sigmoid(Abs(x))
"""
# M: Parameter 1; Tanh 2, Plus 3, Times 4, Constant 5, the 1 6.  Squash: Sigmoid 7 (its
# one-line body keeps it), Abs 8

_NET = """
run = net
net = [
    x = Input(2)
    h = Twice(x, 2)
    o = Squash(Negate(h))
    OutputNodes = (o)
]
"""
# x: Input 9, the 2 10.  h: the call 11; its copy parses the body's arguments again: Plus 12,
# Times 13, Constant 14, the 1 15; then the call's argument 2: 16.  o: the call 17; the copy:
# Abs 18; the argument Negate 19.  OutputNodes' array: 20


def _config(tmp_path, commands="T", write=True) -> str:
    if write:
        (tmp_path / "macros.ndl").write_text(_MACROS)
        (tmp_path / "net.ndl").write_text(_NET)
    blocks = "".join(f"{c} = [\n action = train\n NDLNetworkBuilder = [\n"
                     f"  ndlMacros = {tmp_path}/macros.ndl\n"
                     f"  networkDescription = {tmp_path}/net.ndl\n ]\n]\n"
                     for c in commands.split(":"))
    return f"command = {commands}\n{blocks}"


def test_ndl_nodes_made_in_an_argument_are_named_as_cntk_exe_counts(tmp_path):
    root = parse_config(_config(tmp_path))
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network(command_config(root, "T").network, lib)
    unnamed = {k: lib.operation_of(v) for k, v in net.nodes.items() if "unnamed" in k}
    # (a Constant is a LearnableParameter in cntk.exe's logs: "unnamed89 = LearnableParameter()")
    assert unnamed == {"h.unnamed12": "Plus", "h.unnamed13": "Times",
                       "h.unnamed14": "LearnableParameter", "o.unnamed7": "Sigmoid",
                       "o.unnamed18": "Abs", "unnamed19": "Negate"}
    # a one-line macro's value is its body's node: o stands for o.unnamed7
    assert [net.name_of(v) for v in net.output_nodes] == ["o.unnamed7"]
    x = np.array([[0.5, -1.0]], np.float32)
    net.nodes["x"].d = x
    net.output_nodes[0].forward()
    w = net.nodes["h.W"].d
    h = np.tanh(x @ w + 1)
    np.testing.assert_allclose(net.output_nodes[0].d.reshape(1, 2), 1 / (1 + np.exp(-abs(h))),
                               rtol=1e-5)


def test_the_unnamed_count_goes_on_through_the_networks_of_a_run(tmp_path):
    # s_nameCounter is static: the second network's macros are read again (8 numbers), so
    # its numbers are 20 further on
    root = parse_config(_config(tmp_path, "T:U"))
    names = []
    for command in ("T", "U"):
        with sd.parameter_registry(sd.ParameterRegistry()):
            net = build_network(command_config(root, command).network, StadynLibrary())
        names.append(sorted(k for k in net.nodes if "unnamed" in k))
    assert names[1] == ["h.unnamed32", "h.unnamed33", "h.unnamed34", "o.unnamed27",
                        "o.unnamed38", "unnamed39"]


def test_a_braced_body_of_one_call_is_a_one_line_macro(tmp_path):
    # "M(x) = { Fn(...) }": cntk.exe parses a body after '=' with no definitions allowed, so
    # the call is a nameless node (SLU's lstm.ndl: RFFD_R(x1, w1, b1)={Dropout(...)}).  Tanh
    # takes 1 when defined (and keeps it), Negate 2; x: Input 3, its 2 4; w: the call 5, the
    # copy's Negate 6
    (tmp_path / "macros.ndl").write_text("Wrap(x) = { Tanh(Negate(x)) }\n")
    (tmp_path / "net.ndl").write_text("run = net\nnet = [\n x = Input(2)\n w = Wrap(x)\n"
                                      " OutputNodes = (w)\n]\n")
    root = parse_config(_config(tmp_path, write=False))
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network(command_config(root, "T").network, lib)
    assert {k: lib.operation_of(v) for k, v in net.nodes.items() if "unnamed" in k} == {
        "w.unnamed1": "Tanh", "w.unnamed6": "Negate"}
    x = np.array([[0.5, -2.0]], np.float32)
    net.nodes["x"].d = x
    net.output_nodes[0].forward()
    np.testing.assert_allclose(net.output_nodes[0].d.reshape(1, 2), np.tanh(-x), rtol=1e-6)


def test_slu_lstm_ndl_nodes_are_cntk_exes(tmp_path):
    # Tests/EndToEndTests/Text/SLU/baseline.cpu.txt: "Validating network. 62 nodes", among
    # them LSTMoutput.unnamed124 ... LSTMoutput.unnamed136 (its lstm.ndl has one-line macros
    # and RFFD_R(x1, w1, b1)={Dropout(...)}); its LookupTable, E [50 x 944] of 3 words
    copy_cntk_file(tmp_path, "Tests/EndToEndTests/Text/SLU/lstm.ndl")
    config = copy_cntk_file(tmp_path, "Tests/EndToEndTests/Text/SLU/rnnlu.ndl.cntk")
    net, lib, _ = _build(config, "LSTM", [f"NdlDir={tmp_path}", "DeviceId=-1",
                                          f"ExpDir={tmp_path}", f"DataDir={tmp_path}"])
    log = _baseline("Tests/EndToEndTests/Text/SLU/baseline.cpu.txt")
    first = log.index("Validating network. 62 nodes")
    theirs = dict(re.findall(r"Validating --> (\S+) = (\w+)",
                             log[first:log.index("Post-processing network complete", first)]))
    assert len(theirs) == 62 and sorted(net.nodes) == sorted(theirs)
    assert sum("unnamed" in k for k in theirs) == 13
    assert lib.operation_of(net.nodes["featLookuped"]) == theirs["featLookuped"] == "LookupTable"


def test_an4_lstm_ndl_unnamed_nodes_are_cntk_exes(tmp_path):
    # Tests/EndToEndTests/Examples/Speech/AN4/LSTM/baseline.cpu.txt: LSTMoutput1.unnamed163
    # = Plus (LSTMoutput1.G1, LSTMoutput1.Wcidc), ..., unnamed193 (16 nodes made inside
    # arguments of the macro LSTMPComponent's three copies and of the run section)
    (tmp_path / "Config").mkdir()
    copy_cntk_file(tmp_path / "Config", "Examples/Speech/AN4/Config/lstmp-3layer-opt.ndl")
    config = copy_cntk_file(tmp_path / "Config",
                            "Examples/Speech/AN4/Config/LSTM-NDL_ndl_deprecated.cntk")
    net, lib, _ = _build(config, "speechTrain", [f"RootDir={tmp_path}", "deviceId=-1"])
    log = _baseline("Tests/EndToEndTests/Examples/Speech/AN4/LSTM/baseline.cpu.txt")
    theirs = dict(_UNNAMED.findall(log))
    ours = {k: lib.operation_of(v) for k, v in net.nodes.items() if "unnamed" in k}
    assert sorted(ours) == sorted(theirs)
    assert len(ours) == 16
    assert ours["unnamed193"] == theirs["unnamed193"] == "Times"
