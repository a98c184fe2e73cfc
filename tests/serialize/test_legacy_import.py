"""NNabla and CNTK model files built as Stadyn networks (``sd.load_nnp``, ``sd.load``,
``stadyn.serialize.load_cntk``): the outputs the real frameworks computed on the fixtures
(``tests/fixtures/legacy/*_outputs.npz``, recorded by the ``make_*.py`` scripts beside them with
NNabla 1.39 and CNTK 2.7) are reproduced within 1e-4."""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn import ModelFileError
from stadyn.serialize import (UnsupportedModelError, is_legacy_model_file, load_cntk, load_nnp,
                              read_legacy_model)
from stadyn.serialize._legacy_api import LegacyNode
from stadyn.serialize._legacy_import import build_network
from stadyn.serialize._legacy_tables import legacy_mapping_table

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures", "legacy")
NNABLA = np.load(os.path.join(FIX, "nnabla_outputs.npz"))
CNTK = np.load(os.path.join(FIX, "cntk_outputs.npz"))


def fixture(name: str) -> str:
    return os.path.join(FIX, name)


def recorded(npz, prefix: str, part: str) -> dict:
    head = f"{prefix}/{part}/"
    return {k[len(head):]: npz[k] for k in npz.files if k.startswith(head)}


NNABLA_EXECUTORS = [("nnabla_deep_cnn.nnp", "runtime"), ("nnabla_lenet_protobuf.nnp", "inference"),
                    ("nnabla_mlp_inline.nntxt", "predict"), ("nnabla_loops.nnp", "repeat"),
                    ("nnabla_loops.nnp", "nested"), ("nnabla_loops.nnp", "recurrent")]


@pytest.mark.parametrize("name,executor", NNABLA_EXECUTORS)
def test_nnabla_executors_compute_what_nnabla_computed(name, executor):
    inputs = recorded(NNABLA, f"{name}/{executor}", "in")
    expected = recorded(NNABLA, f"{name}/{executor}", "out")
    batch = next(iter(inputs.values())).shape[0]
    net = load_nnp(fixture(name), executor, batch_size=batch)
    assert list(net.inputs) == list(inputs) and list(net.outputs) == list(expected)
    got = net(**inputs)
    for key, value in expected.items():
        assert got[key].shape == value.shape
        np.testing.assert_allclose(got[key], value, rtol=1e-4, atol=1e-4)


def test_nnabla_parameters_keep_their_names_values_and_need_grad():
    model = read_legacy_model(fixture("nnabla_lenet_protobuf.nnp"))
    net = sd.load(fixture("nnabla_lenet_protobuf.nnp"))
    assert set(net.registry) == set(model.parameters)
    for name, p in model.parameters.items():
        np.testing.assert_array_equal(net.registry.get(name).d, p.value)
        assert net.registry.get(name).need_grad == p.need_grad
    assert list(net.registry) == ["conv1/conv/W", "conv1/conv/b", "conv2/conv/W", "conv2/conv/b",
                                  "fc3/affine/W", "fc3/affine/b", "fc4/affine/W", "fc4/affine/b"]


def test_the_batch_size_defaults_to_the_networks_and_follows_the_input():
    net = sd.load(fixture("nnabla_deep_cnn.nnp"))
    assert net.inputs["x"].shape == (16, 1, 8, 8)           # the runtime network's batch_size
    x = NNABLA["nnabla_deep_cnn.nnp/runtime/in/x"]
    np.testing.assert_allclose(net(x=x)["y"], NNABLA["nnabla_deep_cnn.nnp/runtime/out/y"],
                               rtol=1e-4, atol=1e-4)       # run at batch 4 all the same


def test_a_network_trains_further_with_a_solver():
    """The deep CNN's ``training`` network (batch statistics, softmax cross entropy) as an
    ordinary static graph: Adam on its parameters lowers the loss on a fixed batch."""
    net = load_nnp(fixture("nnabla_deep_cnn.nnp"), network="training", batch_size=8)
    assert list(net.outputs) == ["loss"] and set(net.inputs) == {"x", "t"}
    rng = np.random.RandomState(0)
    net.inputs["x"].d = rng.uniform(0, 16, (8, 1, 8, 8))
    net.inputs["t"].d = rng.randint(0, 10, (8, 1))
    loss = net.outputs["loss"]
    solver = sd.solvers.Adam(0.01)
    solver.set_parameters(net.get_parameters())
    losses = []
    for _ in range(8):
        with sd.parameter_registry(net.registry), sd.training(True):
            loss.forward()
            solver.zero_grad()
            loss.backward()
        solver.update()
        losses.append(float(loss.d))
    assert losses[-1] < 0.5 * losses[0]


def test_a_network_loaded_in_dynamic_mode_runs_and_feeds_dynamic_code():
    x = NNABLA["nnabla_mlp_inline.nntxt/predict/in/x"]
    with sd.auto_forward(True):
        net = sd.load(fixture("nnabla_mlp_inline.nntxt"), batch_size=4)
        prob = net(x=x)["prob"]
        doubled = F.mul_scalar(net.outputs["prob"], 2.0)      # computed at once
    np.testing.assert_allclose(prob, NNABLA["nnabla_mlp_inline.nntxt/predict/out/prob"],
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(doubled.d, 2 * prob, rtol=1e-6)


@pytest.mark.parametrize("name,key", [("cntk_convnet_cifar10.dnn", "cntk_convnet_cifar10.dnn"),
                                      ("cntk_mlp_bn.model", "cntk_mlp_bn.model"),
                                      ("cntk_mlp_bn_large.model", "cntk_mlp_bn.model")])
def test_cntk_models_compute_what_cntk_computed(name, key):
    (x,) = recorded(CNTK, key, "in").values()
    (out_key, expected), = recorded(CNTK, key, "out").items()
    net = sd.load(fixture(name))
    (in_name,) = net.inputs
    assert list(net.outputs) == [out_key]
    got = net(**{in_name: x})[out_key]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["cntk_v1_mlp_bn.dnn", "cntk_v1_small_cnn.dnn"])
def test_cntk_v1_files_compute_what_cntk_computed(name):
    """CNTK 2.7's v1 writer made them; CNTK 2.7 loaded them back and recorded the outputs."""
    (x,) = recorded(CNTK, name, "in").values()
    (expected,) = recorded(CNTK, name, "out").values()
    net = sd.load(fixture(name), batch_size=len(x))
    assert net.info().kind == "CNTK v1 model (BrainScript)"
    (got,) = net(**{next(iter(net.inputs)): x}).values()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_cntk_v1_names_come_from_the_v2_library_names():
    net = sd.load(fixture("cntk_v1_small_cnn.dnn"))
    assert list(net.inputs) == ["image"] and list(net.outputs) == ["Plus2043"]
    assert set(net.registry) == {"Parameter1833", "Parameter1834", "Parameter1849",
                                 "Parameter1850", "Constant1851", "Constant1852", "Constant1853",
                                 "Parameter1874", "Parameter1875"}
    assert net.inputs["image"].shape == (1, 2, 6, 6)


def test_cntk_inputs_by_name_parameters_by_uid_running_statistics_frozen():
    net = load_cntk(fixture("cntk_mlp_bn.model"), batch_size=4)
    assert list(net.inputs) == ["x"] and net.inputs["x"].shape == (4, 5)
    model = read_legacy_model(fixture("cntk_mlp_bn.model"))
    assert set(net.registry) == set(model.parameters)
    assert not net.registry.get("Constant1489").need_grad        # aggregate_mean
    assert net.registry.get("Parameter1470").need_grad           # the first Dense's W
    assert set(net.get_parameters()) == {k for k, p in model.parameters.items() if p.need_grad}


CASES = json.load(open(fixture("cntk_ops_cases.json")))["cntk_ff_ops.model"]
OPS = np.load(fixture("cntk_ops_outputs.npz"))
#: the cases of cntk_ff_ops.model that Stadyn does not map (yet), with the error they give.
UNMAPPED_CASES = {
    "times_constant_left": r"'Times\d+' \(Times\): cannot be mapped: the right operand of times "
                           r"is batched",
    # (pad_symmetric is read since cntkwrite5: paddingMode 2, checked as the other cases)
}


@pytest.fixture(scope="module")
def ops_model():
    return read_legacy_model(fixture("cntk_ff_ops.model"))


@pytest.mark.parametrize("case", CASES["cases"])
def test_each_cntk_op_case_computes_what_cntk_computed(ops_model, case):
    network = ops_model.networks["main"]
    output = network.outputs[CASES["cases"].index(case)]
    inputs = {network.variables[n].meta["name"]: n for n in network.inputs}
    if case in UNMAPPED_CASES:
        with pytest.raises(UnsupportedModelError, match=UNMAPPED_CASES[case]):
            build_network(ops_model, network, inputs, {"y": output}, batch_size=3)
        return
    net = build_network(ops_model, network, inputs, {"y": output}, batch_size=3)
    feed = {k: OPS["in/" + k] for k in net.inputs_needed(["y"])}
    got, expected = net.run(feed)["y"], OPS["v2/" + case]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_unmapped_functions_are_named_with_the_file_and_their_type(tmp_path):
    path = tmp_path / "odd.nntxt"
    path.write_text('network { name: "n" batch_size: 1 '
                    'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 } } '
                    'variable { name: "h" type: "Buffer" shape { dim: -1 dim: 2 } } '
                    'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } } '
                    'function { name: "sbn" type: "SyncBatchNormalization" input: "x" '
                    'output: "h" } '
                    'function { name: "r" type: "ReLU" input: "h" output: "y" } }')
    with pytest.raises(UnsupportedModelError) as info:
        sd.load(str(path))
    assert str(info.value) == (f"{path}: network 'n': NNabla functions no Stadyn op maps: "
                               "SyncBatchNormalization (function 'sbn')")
    assert isinstance(info.value, ValueError)


def test_a_function_its_rule_cannot_express_is_named_with_the_reason(tmp_path):
    path = tmp_path / "bn.nntxt"
    path.write_text('network { name: "n" batch_size: 1 '
                    'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 } } '
                    'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } } '
                    'function { name: "bn" type: "BatchNormalization" input: "x" output: "y" } }')
    with pytest.raises(UnsupportedModelError, match=r"bn.nntxt: function 'bn' "
                       r"\(BatchNormalization\): cannot be mapped: 1 inputs"):
        sd.load(str(path))


def test_executor_and_network_choices_are_checked():
    with pytest.raises(ModelFileError, match=r"no executor 'nope'; the executors are "
                                             r"\['runtime'\]"):
        load_nnp(fixture("nnabla_deep_cnn.nnp"), "nope")
    with pytest.raises(ModelFileError, match=r"no network 'nope'; the networks are "
                                             r"\['training', 'validation', 'runtime'\]"):
        load_nnp(fixture("nnabla_deep_cnn.nnp"), network="nope")
    with pytest.raises(ModelFileError, match="batch_size must be a positive whole number"):
        load_nnp(fixture("nnabla_deep_cnn.nnp"), batch_size=0)


def test_sd_load_tells_the_formats_apart(tmp_path):
    assert is_legacy_model_file(fixture("nnabla_deep_cnn.nnp"))
    assert is_legacy_model_file(fixture("cntk_convnet_cifar10.dnn"))
    copy = tmp_path / "noext"
    copy.write_bytes(open(fixture("nnabla_lenet_protobuf.nnp"), "rb").read())
    assert is_legacy_model_file(str(copy))           # a zip holding nnp_version.txt
    x = sd.Variable((1, 2))
    sd.save(str(tmp_path / "m.model"), {"y": F.relu(x)}, {"x": x})
    assert not is_legacy_model_file(str(tmp_path / "m.model"))   # a Stadyn zip, any suffix
    assert list(sd.load(str(tmp_path / "m.model")).outputs) == ["y"]
    assert list(sd.load(str(copy)).outputs) == ["y"]


def test_the_docs_list_the_mapped_types_as_the_op_rules_declare_them():
    text = open(os.path.join(HERE, "..", "..", "docs", "model-files.md"), encoding="utf-8").read()
    copy = text.split("<!-- legacy-mapping-start -->")[1].split("<!-- legacy-mapping-end -->")[0]
    assert copy.strip() == legacy_mapping_table(), (
        "docs/model-files.md: regenerate the table with "
        "stadyn.serialize._legacy_tables.legacy_mapping_table()")
    assert "| `affine` | Affine |" in copy and "| `affine` | Times, TransposeTimes |" in copy


def test_a_cntk_model_saved_with_its_criteria_loads_and_computes_them():
    """CNTK's pretrained models keep their criteria (ResNet_18.model, which CNTK 301 loads:
    ``combine([ce, errs, top5Errs, z])``); ``classification_error(topN=5)`` is saved as the
    primitive ClassificationError, which CNTK 2.7 evaluates summed over the minibatch
    (fixture: tests/fixtures/legacy/make_cntk_criteria.py)."""
    import stadyn.compat.cntk as C
    model = C.load_model(fixture("cntk_criteria.model"))
    data = np.load(fixture("cntk_criteria_outputs.npz"))
    feed = {a: data[a.name] for a in model.arguments}
    values = model.eval(feed)
    assert [o.name for o in model.outputs] == ["ce", "errs", "top5Errs", "z"]
    for o in model.outputs:
        np.testing.assert_allclose(np.asarray(values[o]), data["out_" + o.name], rtol=1e-5,
                                   atol=1e-5, err_msg=o.name)
    assert float(np.asarray(values[model.outputs[2]])) == 3.0      # 3 of 8 not in the top 5


def test_the_nodes_of_a_loaded_cntk_model_are_listed_as_cntk_lists_them():
    """``get_node_outputs`` of a loaded CNTK file lists the file's functions only: the ops an
    import rule adds (the per-sample errors inside ClassificationError) are passed through,
    and the Combine's outputs come first (CNTK 2.7's listing, kept by make_cntk_criteria.py)."""
    import stadyn.compat.cntk as C
    model = C.load_model(fixture("cntk_criteria.model"))
    listing = ["%s %s" % (o.name, tuple(o.shape)) for o in C.logging.get_node_outputs(model)]
    assert listing == list(np.load(fixture("cntk_criteria_outputs.npz"))["listing"])


def test_a_cntk_slice_with_a_negative_stride_walks_its_range_backwards():
    """CNTK's Slice with a negative stride reads ``[begin, end)`` from its last element down
    (``slice(x, 1, 1, 4, -2)`` of ``[0 1 2 3 4]`` is ``[3 1]``), not Python's empty
    ``x[1:4:-2]``; the values are CNTK 2.7's (fixture: make_cntk_slice_reversed.py)."""
    data = np.load(fixture("cntk_slice_reversed_outputs.npz"))
    net = sd.load(fixture("cntk_slice_reversed.model"), batch_size=2)
    net.inputs["x"].d = data["x"]
    names = ["whole_reversed", "range_step2", "negative_begin", "two_axes", "first_axis"]
    assert sorted(net.outputs) == sorted(names)
    for name in names:
        y = net.outputs[name]
        y.forward()
        np.testing.assert_array_equal(y.d, data["out_" + name], err_msg=name)


class _V1Node(LegacyNode):
    """A v1 function as the v1 import rules see it: its inputs (the first batched) and the
    fields the v1 reader decoded."""

    def __init__(self, type_: str, attrs: dict, inputs: list):
        self.type, self.name, self.attrs, self.n_outputs = type_, "bn", dict(attrs), 1
        self._vars = inputs

    @property
    def n_inputs(self):
        return len(self._vars)

    def var(self, i):
        return self._vars[i]

    def shape(self, i):
        return tuple(self._vars[i].shape)

    def batched(self, i):
        return i == 0

    def const(self, i):
        return self._vars[i].d


def _v1_batch_norm_fields(version: int, run_count: int) -> dict:
    # a BatchNormalization node's fields as a v1 file of ``version`` stores them (spatial,
    # normalization and blend time constants, image layout, then the run count -- a minibatch
    # count before version 13 --, epsilon, useCntkEngine), decoded by the v1 reader
    from stadyn.serialize._cntk_v1_format import _batch_norm, _Reader
    data = struct.pack("<?ddiQd?", False, 3.0, 0.0, 0, run_count, 1e-5, True)
    return _batch_norm(_Reader(data, "bn.dnn"), version, "float")


def _v1_batch_norm(attrs: dict, with_count: float | None):
    """The v1 BatchNormalization rule in training on a minibatch of 4: its output and the
    running mean and variance it updated (a six-input node's count of shape (), as CNTK 2's
    files keep it)."""
    from stadyn.serialize._legacy_tables import legacy_import_table
    rule = legacy_import_table("cntk-v1")["BatchNormalization"][1]
    x = np.linspace(-1.0, 2.0, 12, dtype=np.float32).reshape(4, 3) ** 2
    stats = [np.array(v, np.float32) for v in ([1.5, 0.5, 2.0], [0.1, -0.2, 0.3],
                                               [0.4, 0.0, -1.0], [2.0, 1.0, 0.5])]
    inputs = [sd.Variable.from_numpy_array(a) for a in [x] + stats]
    if with_count is not None:
        inputs.append(sd.Variable.from_numpy_array(np.array(with_count, np.float32)))
    for v in inputs[1:]:
        v.need_grad = False
    with sd.auto_forward(), sd.training(True):
        y = rule(_V1Node("BatchNormalization", attrs, inputs))
    return y.d.copy(), inputs[3].d.copy(), inputs[4].d.copy()


def test_a_v1_batch_norm_of_five_inputs_counts_from_0():
    # a v1 file of versions 13 to 18 keeps no sample count input: CNTK 2.7 reads the node with
    # a count of 0 (whatever its run_count field says), so the first training minibatch
    # replaces the running statistics: the six-input rule given a count of 0
    v18 = _v1_batch_norm_fields(18, 100)
    assert v18["run_count"] == 100
    five = _v1_batch_norm(v18, None)
    six = _v1_batch_norm(v18, 0.0)
    for got, want in zip(five, six):
        np.testing.assert_array_equal(got, want)
    counted = _v1_batch_norm(v18, 100.0)    # (a count of 100 blends: the comparison tells)
    assert not np.allclose(counted[1], six[1])


def test_a_v1_batch_norm_before_version_13_is_refused():
    from stadyn.serialize._legacy_api import MappingUnsupported
    v12 = _v1_batch_norm_fields(12, 7)
    assert "minibatch_count" in v12 and "run_count" not in v12
    with pytest.raises(MappingUnsupported, match="before version 13"):
        _v1_batch_norm(v12, None)


def test_a_v1_batch_norm_of_five_inputs_has_its_count_as_a_constant():
    # CNTK 2.7 gives the node a constant <node>.run_sample_count, which its Trainer counts up
    # (Models__01_OneHidden.dnn: 'y.run_sample_count' 4 after a minibatch of 4); Stadyn's was an
    # unnamed leaf, an input the Trainer asked data for ('no data for input 2 of 3')
    from stadyn.graph import Subgraph
    from stadyn.serialize._legacy_tables import legacy_import_table
    rule = legacy_import_table("cntk-v1")["BatchNormalization"][1]
    x = sd.Variable((4, 3))
    stats = [sd.Variable.from_numpy_array(np.ones(3, np.float32)) for _ in range(4)]
    for v, name in zip(stats, ("scale", "bias", "mean", "variance")):
        v.need_grad, v.name = False, name           # (as the file's parameters are named)
    y = rule(_V1Node("BatchNormalization", _v1_batch_norm_fields(18, 100), [x] + stats))
    graph = Subgraph([y])
    assert graph.inputs == [x]
    # (of shape (1,), as CNTK 2.7 shows it: cntk_v1_real_reference.json's y.run_sample_count)
    assert [(v.name, v.d.tolist()) for v in graph.parameters if v.name.endswith("count")] == \
        [("bn.run_sample_count", [0.0])]


class _BatchedNode(_V1Node):
    """A CNTK 2 function whose inputs all carry the batch axis."""

    def batched(self, i):
        return True


def test_a_cntk_files_log_plus_computes_cntk27s_value_and_gradients():
    # LogPlus of a CNTK file reads cntk_semantics.log_add_exp (CNTK 2.7's LogAdd); the
    # reference is C.log_add_exp's value and gradients (tests/brainscript/refgen_bs_core_names.py),
    # equal inputs included: each gets half the gradient (max + softplus(-|a - b|) gave b all)
    from stadyn.serialize._legacy_tables import legacy_import_table
    path = os.path.join(HERE, "..", "fixtures", "brainscript", "core_names_cntk27.json")
    ref = json.load(open(path))["log_plus"]
    a, b = (sd.Variable.from_numpy_array(np.array(ref[k], np.float32), need_grad=True)
            for k in ("a", "b"))
    rule = legacy_import_table("cntk-v2")["LogPlus"][1]
    y = rule(_BatchedNode("LogPlus", {}, [a, b]))
    y.forward()
    y.backward()
    np.testing.assert_allclose(y.d, ref["value"], rtol=1e-6)
    np.testing.assert_allclose(a.g, ref["grad_a"], rtol=1e-5, atol=1e-30)
    np.testing.assert_allclose(b.g, ref["grad_b"], rtol=1e-5, atol=1e-30)


class _SequenceNode(_V1Node):
    """A v1 criterion of two operands, either of them a sequence, as the v1 import rules
    see it."""

    def lead(self, i):
        return 2 if self._vars[i].sequence_lengths is not None else 1

    def batched(self, i):
        return True

    def reduces_dynamic_axes(self):
        pass


@pytest.mark.parametrize("labels_on", ["sequence", "batch"])
def test_a_v1_logistic_of_a_sequence_and_a_value_per_sequence_is_refused_as_cntk_exe(labels_on):
    # cntk.exe reads a Logistic's prediction at its labels' MBLayout
    # (LogisticNode::ForwardPropNonLooping, TrainingNodes.h:2083-2086): a sequence's against a
    # value per sequence fails when run (ColumnRangeWithMBLayoutFor, Sequences.h:1033-1042);
    # Stadyn's rule broadcast the two (a ShapeError of mul2 here, a wrong number where the steps
    # are as many as the sequences)
    from stadyn.serialize._legacy_api import MappingRefusedAtRun
    from stadyn.serialize._legacy_tables import legacy_import_table
    rule = legacy_import_table("cntk-v1")["Logistic"][1]
    sequence = sd.sequence.input_variable(1)
    sd.sequence.feed(sequence, [np.full((3, 1), 0.5, np.float32)] * 2)
    flat = sd.Variable((2, 1))
    inputs = [sequence, flat] if labels_on == "sequence" else [flat, sequence]
    with pytest.raises(MappingRefusedAtRun, match="FrameRange's dynamic axis is inconsistent "
                                                  "with matrix"):
        rule(_SequenceNode("Logistic", {}, inputs))
