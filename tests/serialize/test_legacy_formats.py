"""The legacy-format decoders against what the real frameworks report about the same files.

Every fixture in ``tests/fixtures/legacy/`` was written by the real NNabla 1.39 or CNTK 2.7 (or,
for CNTK v1, by CNTK's own v1 writer and by BrainScript's ``cntk.exe``), and the JSON beside it
holds what that framework's loader reported: the functions (for NNabla after its own loop
expansion), the variables, every parameter's shape and checksums, the executors.  The scripts
``make_*.py`` there made them.  Nothing here needs NNabla or CNTK installed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import subprocess
import sys
from collections import OrderedDict

import numpy as np
import pytest

from stadyn.serialize._cntk_format import OP_NAMES, CntkAxis, read_cntk
from stadyn.serialize._cntk_v1_format import read_cntk_v1
from stadyn.serialize._nnp_format import _network, read_nnp
from stadyn.serialize._nnp_loops import expand_loops
from stadyn.serialize._pb_text import parse_text

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "legacy")


def fixture(name: str) -> str:
    return os.path.join(HERE, name)


def reference(name: str) -> dict:
    with open(fixture(name)) as f:
        return json.load(f, object_pairs_hook=OrderedDict)


NNABLA = reference("nnabla_reference.json")
CNTK = reference("cntk_reference.json")
CNTK_V1_REAL = reference("cntk_v1_real_reference.json")


def checksums_match(value: np.ndarray, ref: dict) -> bool:
    a = np.asarray(value, np.float64)
    return (list(a.shape) == ref["shape"]
            and np.isclose(a.sum(), ref["sum"], rtol=1e-9, atol=1e-9)
            and np.isclose(np.abs(a).sum(), ref["abs_sum"], rtol=1e-9, atol=1e-9)
            and [float(v) for v in a.reshape(-1)[:4]] == ref["head"])


def is_execution_order(network) -> bool:
    ready = {n for n, v in network.variables.items()
             if not any(n in f.outputs for f in network.functions)}
    for f in network.functions:
        if not all(i in ready for i in f.inputs):
            return False
        ready.update(f.outputs)
    return True


# ---------------------------------------------------------------------------------------------
# NNabla
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(NNABLA))
def test_nnabla_networks_match_nnablas_loader(name):
    """Functions (after loop expansion, as ``nnabla.utils.load`` builds them) and variables."""
    model = read_nnp(fixture(name))
    ref = NNABLA[name]
    assert list(model.networks) == list(ref["networks"])
    for net_name, rnet in ref["networks"].items():
        net = model.networks[net_name]
        mine = {f.name: [f.type, list(f.inputs), list(f.outputs)] for f in net.functions}
        assert mine == {f[0]: f[1:] for f in rnet["functions"]}
        assert is_execution_order(net)
        for var_name, shape in rnet["variables"].items():
            assert list(net.variables[var_name].shape) == shape, var_name


def test_nnabla_loop_expansion_before_identity_removal_matches_nnabla():
    """``expand_loop_control`` alone (RepeatStart/RepeatEnd/Delay as ``$EC$/`` identities,
    RecurrentInput/Output as Split/Stack) equals NNabla's."""
    model = read_nnp(fixture("nnabla_loops.nnp"), expand=False)
    for net_name, rnet in NNABLA["nnabla_loops.nnp"]["networks"].items():
        raw = expand_loops(model.networks[net_name], "x", keep_identities=True)
        mine = {f.name: [f.type, list(f.inputs), list(f.outputs)] for f in raw.functions}
        assert mine == {f[0]: f[1:] for f in rnet["raw_expansion"]}


def test_nnabla_loops_split_and_stack_carry_the_recurrent_axis():
    net = read_nnp(fixture("nnabla_loops.nnp")).networks["Recurrent"]
    by_type = {f.type: f for f in net.functions}
    assert by_type["Split"].attrs == {"axis": 1} and by_type["Stack"].attrs == {"axis": 1}
    assert len(by_type["Split"].outputs) == 3 and len(by_type["Stack"].inputs) == 3
    assert not {"RepeatStart", "RepeatEnd", "Delay", "RecurrentInput",
                "RecurrentOutput"} & set(net.op_counts())


@pytest.mark.parametrize("name", [n for n in NNABLA if NNABLA[n]["parameters"]])
def test_nnabla_parameters_match_nnabla(name):
    """Names, shapes, values (checksums) and the file's need_grad, as NNabla loads them."""
    model = read_nnp(fixture(name))
    ref = NNABLA[name]["parameters"]
    assert set(model.parameters) == set(ref)
    for key, r in ref.items():
        p = model.parameters[key]
        assert checksums_match(p.value, r), key
        assert p.need_grad == r["need_grad_in_file"], key


@pytest.mark.parametrize("name", list(NNABLA))
def test_nnabla_executors_and_training_sections_match_nnabla(name):
    model = read_nnp(fixture(name))
    ref = NNABLA[name]
    executors = model.extras.get("executors", {})
    assert set(executors) == set(ref["executors"])
    for key, r in ref["executors"].items():
        e = executors[key]
        assert e["network_name"] == r["network"]
        if "data" in r:
            assert [d["variable_name"] for d in e["data_variable"]] == r["data"]
            assert [o["variable_name"] for o in e["output_variable"]] == r["output"]
            assert [g["variable_name"] for g in e.get("generator_variable", [])] == \
                r["generators"]
    for key, r in ref.get("optimizers", {}).items():
        o = model.extras["optimizers"][key]
        assert (o["network_name"], o["solver"]["type"]) == (r["network"], r["solver"])
        assert o["dataset_name"] == r["datasets"]
    for key, r in ref.get("datasets", {}).items():
        d = model.extras["datasets"][key]
        assert (d["uri"], d["cache_dir"]) == (r["uri"], r["cache_dir"])
        assert d.get("no_image_normalization", False) == (not r["normalize"])
    for key, r in ref.get("monitors", {}).items():
        m = model.extras["monitors"][key]
        assert (m["network_name"], m["dataset_name"]) == (r["network"], r["datasets"])
    if "training_config" in ref:
        assert model.extras["training_config"] == ref["training_config"]


def test_nnabla_attributes_are_what_the_networks_were_built_with():
    """The tutorial CNN was built with pad=(1, 1) 3x3 convolutions, NNabla's batch-norm
    defaults, a 2x2 average pooling and a softmax cross-entropy over axis 1; its ``runtime``
    network with ``batch_stat=False`` (proto3 text leaves that false field out)."""
    nets = read_nnp(fixture("nnabla_deep_cnn.nnp")).networks
    training = {f.type: f.attrs for f in nets["training"].functions}
    assert training["Convolution"] == {"base_axis": 1, "pad": (1, 1), "stride": (1, 1),
                                       "dilation": (1, 1), "group": 1}
    assert training["BatchNormalization"] == {"axes": 1, "decay_rate": 0.9, "eps": 1e-05,
                                              "batch_stat": True}
    assert training["AveragePooling"]["kernel"] == (2, 2)
    assert training["SoftmaxCrossEntropy"] == {"axis": 1}
    assert training["Mean"] == {"axes": [0, 1]}
    runtime = {f.type: f.attrs for f in nets["runtime"].functions}
    assert "batch_stat" not in runtime["BatchNormalization"]
    assert nets["runtime"].inputs == ["x"] and nets["runtime"].outputs == ["y"]
    assert all(v.shape[0] == -1 for v in nets["runtime"].variables.values()
               if v.kind == "buffer" and v.shape)


def test_nnabla_nnp_members():
    model = read_nnp(fixture("nnabla_deep_cnn.nnp"))
    assert model.extras["nnp_version"] == "0.1"
    assert model.extras["global_config"]["default_context"]["backends"] == ["cpu:float"]


def test_protobuf_text_reader_handles_the_text_formats_forms():
    m = parse_text('a: [1, 2.5, -inf, "x" "y"] b: 0x10 c: True d < e: \'\\x41\\101\\n\' >; '
                   'f { } g: ENUM_VALUE # comment\n h: 1e-08 i: 3f', "t.nntxt")
    assert m.all("a") == [1, 2.5, float("-inf"), "xy"]
    assert (m.get("b"), m.get("c"), m.get("d").get("e")) == (16, True, "AA\n")
    assert m.get("f").fields == [] and m.get("g") == "ENUM_VALUE"
    assert m.get("h") == 1e-08 and m.get("i") == 3.0


def test_a_network_in_placement_order_is_put_in_execution_order():
    text = """network { name: "n" batch_size: 1
      variable { name: "x" type: "Buffer" shape { dim: -1 } }
      variable { name: "h" type: "Buffer" shape { dim: -1 } }
      variable { name: "y" type: "Buffer" shape { dim: -1 } }
      function { name: "second" type: "Tanh" input: "h" output: "y" }
      function { name: "first" type: "ReLU" input: "x" output: "h" } }"""
    net = _network(parse_text(text, "n.nntxt").get("network"), "n.nntxt")
    assert [f.name for f in net.functions] == ["second", "first"]     # as the file lists them
    path = os.path.join(os.path.dirname(__file__), "_placement.nntxt")
    try:
        with open(path, "w") as f:
            f.write(text)
        assert [f.name for f in read_nnp(path).networks["n"].functions] == ["first", "second"]
    finally:
        os.remove(path)


# ---------------------------------------------------------------------------------------------
# CNTK 2
# ---------------------------------------------------------------------------------------------
CNTK_V2 = [n for n in CNTK if not n.startswith("cntk_v1")]


def python_attribute(value):
    """Our attribute values in the form the reference recorded CNTK's Python view in (an Axis
    as CNTK's Python API prints it: ('ordered', 'static', index) / (..., 'dynamic', name))."""
    if isinstance(value, CntkAxis):
        order = "ordered" if value.ordered else "unordered"
        return ([order, "dynamic", value.name] if value.is_dynamic
                else [order, "static", value.static_axis_idx])
    if isinstance(value, (list, tuple)):
        return [python_attribute(v) for v in value]
    if isinstance(value, dict):
        return {k: python_attribute(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return {"array_shape": list(value.shape)}
    return value


def placeholders_masked(uids):
    # CNTK gives a block's placeholders new uids each time it loads a model
    return ["<placeholder>" if u.startswith("Placeholder") else u for u in uids]


@pytest.mark.parametrize("name", CNTK_V2)
def test_cntk_functions_match_cntk(name):
    """Every function CNTK finds (blocks' insides too): op name, inputs in the file's (C++)
    order, outputs, and attributes as CNTK's Python API shows them."""
    model = read_cntk(fixture(name))
    ref = CNTK[name]
    mine = {f.name: f for f in model.networks["main"].all_functions()}
    assert set(mine) == set(ref["functions"])
    for uid, r in ref["functions"].items():
        f = mine[uid]
        assert f.type == r["op_name"], uid
        assert f.meta["name"] == r["name"], uid
        assert placeholders_masked(f.inputs) == placeholders_masked(r["inputs"]), uid
        assert list(f.outputs) == r["outputs"], uid
        assert bool(f.meta.get("block")) == r["is_block"], uid
        if r["is_block"]:
            assert f.meta["root"] == r["block_root"]
            assert placeholders_masked(f.meta["arguments"].values()) == \
                placeholders_masked(r["block_arguments"])
            assert f.body is not None and r["block_root"] in {g.name for g in f.body.functions}
        elif r["attributes"] is not None:
            assert python_attribute(f.attrs) == r["attributes"], uid
    assert is_execution_order(model.networks["main"])


@pytest.mark.parametrize("name", CNTK_V2)
def test_cntk_variables_and_parameters_match_cntk(name):
    """Shapes in Python order, names, dynamic axes, and values (column-major storage read back
    as CNTK's Python API shows the arrays)."""
    model = read_cntk(fixture(name))
    ref = CNTK[name]
    net = model.networks["main"]
    for uid, r in ref["variables"].items():
        v = net.variables[uid]
        assert (v.kind, list(v.shape), v.meta["name"], v.dtype) == \
            (r["kind"], r["shape"], r["name"], r["dtype"]), uid
        assert v.meta["dynamic_axes"] == r["dynamic_axes"], uid
        if r["kind"] in ("parameter", "constant"):
            assert checksums_match(model.parameters[uid].value, r), uid
    assert set(net.inputs) == set(ref["arguments"])
    assert net.outputs == ref["outputs"]


def test_cntk_op_id_table_names_every_op_the_probe_made():
    model = read_cntk(fixture("cntk_ops.model"))
    ops = {f.meta["op_id"]: f.type for f in model.networks["main"].all_functions()
           if not f.meta.get("block")}
    assert len(ops) >= 60
    assert all(OP_NAMES[i] == name for i, name in ops.items())
    assert {ops[95], ops[96]} == {"Tan", "Atan"}          # ids past the enum CNTK's source had


def test_cntk_seed_convnet_structure():
    """The seed's CIFAR ConvNet: 14 parameter tensors, 1,195,594 parameters, 8 layers."""
    model = read_cntk(fixture("cntk_convnet_cifar10.dnn"))
    params = [p for p in model.parameters.values() if p.kind == "parameter"]
    assert (len(params), sum(p.value.size for p in params)) == (14, 1_195_594)
    net = model.networks["main"]
    blocks = [f.type for f in net.functions if f.meta.get("block")]
    assert sorted(blocks) == sorted(["Convolution"] * 4 + ["MaxPooling"] * 2 + ["Dense"] * 3 +
                                    ["Dropout"] * 2)
    dense = next(f for f in net.functions if f.type == "Dense" and f.body.op_counts()["ReLU"])
    assert sorted(dense.body.op_counts()) == ["Plus", "ReLU", "Times"]


def test_cntk_large_model_layout_reads_like_the_small_model():
    """``cntk_mlp_bn_large.model`` is the small model in CNTK's >2 GB layout; the real CNTK 2.7
    read it and gave the small model's outputs (``cntk_large_check.json``)."""
    check = reference("cntk_large_check.json")
    assert check["max_abs_difference"] == 0.0
    small, large = read_cntk(fixture("cntk_mlp_bn.model")), read_cntk(
        fixture("cntk_mlp_bn_large.model"))
    with open(fixture("cntk_mlp_bn_large.model"), "rb") as f:
        assert f.read(4) == b"ktnc"
    assert list(small.parameters) == list(large.parameters)
    for uid, p in small.parameters.items():
        np.testing.assert_array_equal(p.value, large.parameters[uid].value)
        assert p.value.dtype == large.parameters[uid].value.dtype
    assert [(f.name, f.type, f.inputs) for f in small.networks["main"].all_functions()] == \
        [(f.name, f.type, f.inputs) for f in large.networks["main"].all_functions()]


def test_cntk_real_large_model_was_read():
    """The record of a real >2 GB file CNTK 2.7 wrote (``make_cntk_large.py --real``)."""
    real = reference("cntk_large_check.json").get("real_2gb")
    if real is None:
        pytest.skip("make_cntk_large.py was not run with --real")
    assert real["header_hex"][:8] == b"ktnc".hex() and real["file_bytes"] > 2 ** 31
    assert real["stadyn_W_all_0.25"] and real["stadyn_b_equal_cntk"]
    assert real["stadyn_W_shape"] == real["cntk_reloaded_W_shape"]


# ---------------------------------------------------------------------------------------------
# CNTK v1
# ---------------------------------------------------------------------------------------------
# node types of the v1 files and the op CNTK 2.7's legacy loader turns each into
V1_TO_V2 = {"RectifiedLinear": "ReLU", "ErrorPrediction": "ClassificationError",
            "SquareError": "SquaredError"}


def check_v1_against_cntk(model, ref):
    net = model.networks["main"]
    functions = {f.meta.get("v2_uid") or f.name: f for f in net.functions}
    leaves = {v.meta.get("v2_uid") or n: v for n, v in net.variables.items()}
    for uid, r in ref["functions"].items():
        if r["op_name"] == "Combine":
            continue
        f = functions.get(uid) or functions[r["name"]]
        assert V1_TO_V2.get(f.type, f.type) == r["op_name"], uid
    for uid, r in ref["variables"].items():
        if model.extras["version"] < 19 and r["name"].endswith(".run_sample_count"):
            continue         # CNTK adds this constant to batch norms of files before version 19
        v = leaves.get(uid) or leaves[r["name"]]
        assert list(v.shape) == r["shape"], uid
        if r["kind"] in ("parameter", "constant"):
            p = model.parameters[v.name]
            assert checksums_match(p.value, r), uid
            assert p.need_grad == (r["kind"] == "parameter"), uid
    assert is_execution_order(net)


@pytest.mark.parametrize("name", [n for n in CNTK if n.startswith("cntk_v1")])
def test_cntk_v1_files_written_by_cntk_match_cntk(name):
    model = read_cntk_v1(fixture(name))
    assert model.extras["version"] == 31
    check_v1_against_cntk(model, CNTK[name])


def test_cntk_v1_convolution_and_pooling_attributes_match_cntks_view():
    """The v1 payload of the small CNN's convolution and pooling, against the attributes CNTK
    reports for the same functions (kernel, strides, padding, sharing)."""
    model = read_cntk_v1(fixture("cntk_v1_small_cnn.dnn"))
    ref = CNTK["cntk_v1_small_cnn.dnn"]["functions"]
    by_uid = {f.meta.get("v2_uid"): f for f in model.networks["main"].functions}
    conv = by_uid["Convolution2005"].attrs
    r = ref["Convolution2005"]["attributes"]
    assert (list(conv["kernel_shape"]), list(conv["strides"]), conv["auto_padding"],
            conv["sharing"], list(conv["dilation"])) == (
        r["kernelShape"], r["strides"], r["autoPadding"], r["sharing"], r["dilation"])
    pool = by_uid["Pooling2031"].attrs
    r = ref["Pooling2031"]["attributes"]
    # v1's PoolKind is None, Max, Average; CNTK 2's poolingType is Max (0), Average (1)
    assert (list(pool["kernel_shape"]), list(pool["strides"]), pool["auto_padding"],
            pool["pool_kind"] - 1, pool["include_pad"]) == (
        r["poolingWindowShape"], r["strides"], r["autoPadding"], r["poolingType"],
        r["includePad"])
    bn = next(f for f in model.networks["main"].functions if f.type == "BatchNormalization")
    assert (bn.attrs["run_count"], bn.attrs["epsilon"], bn.attrs["spatial"]) == (100, 1e-05, True)


# real_v1_file (the cntk.exe files, from a copy of CNTK): tests/serialize/conftest.py


@pytest.mark.parametrize("name", list(CNTK_V1_REAL))
def test_real_cntk_exe_v1_files_match_cntk(real_v1_file, name):
    path = real_v1_file(name)
    with open(path, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == CNTK_V1_REAL[name]["sha256"]
    model = read_cntk_v1(path)
    assert model.extras["version"] in (10, 18)
    check_v1_against_cntk(model, CNTK_V1_REAL[name])


@pytest.mark.parametrize("name", list(CNTK_V1_REAL))
def test_real_cntk_exe_v1_files_compute_cntks_outputs(real_v1_file, name):
    # (Models__01_OneHidden.dnn and Models__ResNet20_CIFAR10_DataAug.dnn, version 18, hold
    # batch normalisations of five inputs, no sample count: 'BatchNormalization: IndexError'
    # before; CNTK 2.7 gives them a count of 0).  CNTK 2.7's load_model of a v1 file gives a
    # Combine of its roots by name, the criteria among them (ce, errs, top5Errs, z.z); before
    # cntkwrite10 Stadyn's showed the output nodes only (z.z), and its reader mapped no v1
    # CrossEntropyWithSoftmax, ErrorPrediction / ClassificationError, SquareError or Logistic.
    # The inputs are sequences on an axis named '' (cntkexeaxes): the batch of two a sequence
    # of two steps, the output z.z a list of one (2, 1, 10) array, of shape (1, 2, 1, 10) as
    # NumPy makes it one array (before: a (2, 1, 10) array, compared here flattened)
    import stadyn.compat.cntk as C
    ref = CNTK_V1_REAL[name]
    got = np.load(fixture("cntk_v1_real_outputs.npz"))
    path = real_v1_file(name)
    with open(path, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == ref["sha256"]
    model = C.load_model(path)
    by_name = {ref["variables"][uid]["name"]: got[f"{name}/in/{uid}"] for uid in ref["arguments"]}
    names = [ref["functions"][out.rpartition("_Output_")[0]]["name"] for out in ref["outputs"]]
    assert [o.name for o in model.outputs] == names
    assert [a.name for a in model.arguments] == list(by_name)
    assert [[x.name for x in a.dynamic_axes] for a in model.arguments] == \
        [ref["variables"][uid]["dynamic_axes"] for uid in ref["arguments"]]
    feed = {a: by_name[a.name] for a in model.arguments}
    for out, output in zip(ref["outputs"], model.outputs):
        value = np.asarray(C.combine([output]).eval(feed), np.float32)
        assert value.shape == got[f"{name}/out/{out}"].shape, out
        np.testing.assert_allclose(value, got[f"{name}/out/{out}"], rtol=1e-4, atol=1e-5,
                                   err_msg=out)


#: CNTK 2.7's load_model of v1 files, each in a fresh process: the uids and op names of the
#: nodes, the root (make_cntk_v1_uids.py)
V1_UIDS = reference("cntk_v1_uids.json")


def _uids_script():
    """``tests/fixtures/legacy/make_cntk_v1_uids.py``, the script that recorded V1_UIDS."""
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "legacy",
                        "make_cntk_v1_uids.py")
    spec = importlib.util.spec_from_file_location("make_cntk_v1_uids", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The walk make_cntk_v1_uids.py records with, run here on compat Functions.
shown_uids = _uids_script().shown_uids


def numbered(uid: str) -> "tuple[str, int]":
    digits = len(uid) - len(uid.rstrip("0123456789"))
    return uid[:-digits], int(uid[-digits:])


@pytest.mark.parametrize("name", list(CNTK_V1_REAL))
def test_real_cntk_exe_v1_files_get_cntks_uids_and_op_names(real_v1_file, name):
    """CNTK 2.7 numbers a cntk.exe file's nodes from its process-wide counter as it walks the
    network from its roots (a placeholder, the inputs, the function and its output; each
    root; the Combine): the same uids, counted from where the counter stood.  Before, the
    nodes' uids were their names (``err``, ``w``) and their op names v1's (``SquareError``,
    ``ErrorPrediction``)."""
    import stadyn.compat.cntk as C
    ref = V1_UIDS[name]
    got = shown_uids(C.load_model(real_v1_file(name)))
    assert got["root"][1] == "Combine" and got["outputs"] == ref["outputs"]
    offset = numbered(got["root"][0])[1] - numbered(ref["root"][0])[1]
    assert got["composite"] == f"CompositeFunction{numbered(ref['composite'])[1] + offset}"

    def shifted(entries):
        return sorted((numbered(uid)[0], numbered(uid)[1] + offset, op) for uid, op in entries)
    # (the topN constant of a top-5 ClassificationError, which Stadyn's op takes as a number,
    # is shown as its third input, as CNTK shows it: before, no node of its name was met)
    assert {n: shifted(e) for n, e in ref["nodes"].items()} == \
        {n: sorted((*numbered(uid), op) for uid, op in e) for n, e in got["nodes"].items()}


@pytest.mark.parametrize("name", list(CNTK_V1_REAL))
def test_real_cntk_exe_v1_files_show_cntks_leaves(real_v1_file, name):
    """The leaves a walk of the loaded file meets are those CNTK 2.7's ``load_model`` gives
    (``cntk_v1_real_reference.json``: name, shape): an old batch normalisation's
    ``<node>.run_sample_count`` of shape (1,) (was ()), and a top-5 ``ClassificationError``'s
    constant 5 of shape (1, 1), shown as its third input (was not shown)."""
    import stadyn.compat.cntk as C
    ref = CNTK_V1_REAL[name]
    model = C.load_model(real_v1_file(name))
    met, seen, stack = [], set(), [model.root_function]
    while stack:
        f = stack.pop()
        for i in f.inputs:
            if i.is_output:
                if i.owner.uid not in seen:
                    seen.add(i.owner.uid)
                    stack.append(i.owner)
            elif i.uid not in seen:
                seen.add(i.uid)
                met.append((i.name, list(i.shape)))
    assert sorted(met) == sorted((v["name"], v["shape"]) for v in ref["variables"].values())
    if "top5Errs" in {f["name"] for f in ref["functions"].values()}:
        top5 = model.find_by_name("top5Errs")
        n = top5.inputs[2]
        assert n.is_constant and [np.asarray(k.value).tolist() for k in
                                  C.as_composite(top5).constants if k.uid == n.uid] == [[[5.0]]]


def test_a_v1_file_loaded_first_gets_the_uids_cntk_gives_it_in_a_fresh_process(real_v1_file):
    """CNTK 2.7 numbers uids from a process-wide counter that stands at 3 after ``import cntk``
    (``cntk_v1_uids.json`` was recorded loading each file first in a fresh process): Stadyn's
    counter starts there too, so the same load in a fresh process gives the same uids (they
    were 3 below CNTK's)."""
    script = ("import json, sys\n"
              "from collections import OrderedDict\n"
              "import stadyn.compat.cntk as C\n"
              f"{inspect.getsource(shown_uids)}\n"
              "print(json.dumps(shown_uids(C.load_model(sys.argv[1]))))\n")
    name = "Models__01_OneHidden.dnn"
    import stadyn                       # (the subprocess imports the Stadyn this one runs)
    src = os.path.dirname(os.path.dirname(os.path.abspath(stadyn.__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    got = subprocess.run([sys.executable, "-c", script, real_v1_file(name)],
                         capture_output=True, text=True, env=env, check=True)
    assert json.loads(got.stdout.strip().splitlines()[-1]) == V1_UIDS[name]


@pytest.mark.parametrize("name", ["cntk_v1_mlp_bn.dnn", "cntk_v1_small_cnn.dnn"])
def test_v1_files_cntk_wrote_load_as_a_combine_of_their_output(name):
    """A v1 file CNTK 2.7 wrote (``save_as_legacy_model``) keeps its nodes' uids; CNTK 2.7's
    load_model gives its one output as the output of a Combine (before: its Plus)."""
    import stadyn.compat.cntk as C
    ref = V1_UIDS[name]
    got = shown_uids(C.load_model(fixture(name)))
    assert got["nodes"] == ref["nodes"]
    assert (got["root"][1], got["outputs"]) == (ref["root"][1], ref["outputs"]) == ("Combine", 1)
    assert numbered(got["composite"])[1] == numbered(got["root"][0])[1] + 1


# ---------------------------------------------------------------------------------------------
# The entry point and the documented op table
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,fmt", [("nnabla_loops.nnp", "nnp"),
                                      ("cntk_mlp_bn.model", "cntk-v2"),
                                      ("cntk_mlp_bn_large.model", "cntk-v2"),
                                      ("cntk_v1_mlp_bn.dnn", "cntk-v1"),
                                      ("nnabla_lenet_protobuf.nnp", "nnp")])
def test_read_legacy_model_tells_formats_by_content(tmp_path, name, fmt):
    """Under a name that says nothing (``model.bin``), the content decides."""
    from stadyn.serialize import read_legacy_model
    with open(fixture(name), "rb") as f:
        data = f.read()
    path = tmp_path / "model.bin"
    path.write_bytes(data)
    model = read_legacy_model(str(path))
    assert model.format == fmt
    assert model.op_counts() == read_legacy_model(fixture(name)).op_counts()


def test_docs_list_every_op_type_of_the_fixtures():
    import importlib.util
    spec = importlib.util.spec_from_file_location("list_op_types",
                                                  fixture("list_op_types.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(os.path.join(HERE, "..", "..", "..", "docs", "model-files.md")) as f:
        docs = f.read()
    table = docs.split("<!-- legacy-ops-start -->")[1].split("<!-- legacy-ops-end -->")[0]
    assert table.strip() == module.markdown().strip()
