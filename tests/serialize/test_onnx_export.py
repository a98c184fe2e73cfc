"""ONNX export: both reference models in onnxruntime (within 1e-4, dynamic batch), every catalog
op through its own mapping (the op harness's cases), pooling geometry, errors; and ONNX import of
exported models."""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn.graph import OpSpec, apply
from stadyn.models import cifar_convnet_layers, digits_cnn
from stadyn.ops import CATALOG, function_of
from stadyn.serialize import ExportError, UnsupportedModelError, model_info, to_onnx_model
from stadyn.serialize import Unmapped, onnx_mapping_table, rules_for

HERE = os.path.dirname(os.path.abspath(__file__))


def _session(model) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def _digits_builder():
    registry = sd.ParameterRegistry()
    rng = np.random.default_rng(5)

    def build(batch, train=False):
        with sd.parameter_registry(registry):
            x = sd.Variable((batch, 1, 8, 8))
            return x, digits_cnn(x, test=True), (digits_cnn(x) if train else None)
    build(2)
    for name, var in registry.items():
        if name.endswith("/mean"):
            var.d = rng.normal(size=var.shape) * 0.1
        elif name.endswith("/var"):
            var.d = rng.uniform(0.5, 2.0, size=var.shape)
    return build, lambda b: rng.normal(size=(b, 1, 8, 8)).astype(np.float32)


def _convnet_builder():
    registry = sd.ParameterRegistry()
    rng = np.random.default_rng(6)
    with sd.parameter_registry(registry):
        stack = cifar_convnet_layers()

    def build(batch, train=False):
        with sd.parameter_registry(registry):
            x = sd.Variable((batch, 3, 32, 32))
            y = stack(F.mul_scalar(x, 0.00390625))
            return x, y, y
    return build, lambda b: rng.uniform(0, 255, size=(b, 3, 32, 32)).astype(np.float32)


@pytest.mark.parametrize("make", [_digits_builder, _convnet_builder], ids=["digits", "convnet"])
def test_reference_models_match_onnxruntime_with_a_dynamic_batch(make):
    build, data = make()
    x, test_graph, train_graph = build(2, train=True)
    model = to_onnx_model({"y": train_graph}, {"x": x})   # batch_stat=True exports as inference
    onnx.checker.check_model(model, full_check=True)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert model.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    session = _session(model)
    for batch in (2, 5):
        xs, ys, _ = build(batch)
        xs.d = data(batch)
        with sd.training(False):
            ys.forward()
        got, = session.run(None, {"x": xs.d})
        assert got.shape == ys.shape
        np.testing.assert_allclose(got, ys.d, rtol=1e-4, atol=1e-4)


def test_exported_structure_names_and_opset(tmp_path):
    with sd.parameter_registry(sd.ParameterRegistry()) as registry:
        x = sd.Variable((2, 1, 8, 8))
        y = digits_cnn(x, test=True)
    sd.export_onnx(tmp_path / "d.onnx", {"logits": y}, {"image": x})
    model = onnx.load(str(tmp_path / "d.onnx"))
    assert model.opset_import[0].version == 17 and model.ir_version == 8
    inits = {i.name: tuple(i.dims) for i in model.graph.initializer}
    assert set(inits) == set(registry)                       # parameters keep their names
    assert inits["cnn/conv1/bn/mean"] == (64,)                # folded to what ONNX wants
    assert inits["cnn/fc/affine/W"] == (8192, 1024)
    counts = model_info(tmp_path / "d.onnx").op_counts
    assert counts == {"Conv": 12, "BatchNormalization": 12, "Tanh": 13, "AveragePool": 1,
                      "Flatten": 1, "Gemm": 2}
    assert [o.name for o in model.graph.output] == ["logits"]


@pytest.mark.parametrize("opset", [18, 19, 20, 21])
def test_later_opsets_export_reductions_pads_and_gelu(opset):
    x = sd.Variable((2, 3, 4))
    y = F.mean(F.pad(F.softmax(x), (1, 1)), axis=(1, 2), keepdims=True) + F.max(F.gelu(x),
                                                                                 axis=2)
    x.d = np.random.default_rng(0).normal(size=x.shape)
    y.forward()
    model = to_onnx_model(y, x, opset=opset)
    assert model.opset_import[0].version == opset
    got, = _session(model).run(None, {"x": x.d})
    np.testing.assert_allclose(got, y.d, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Every catalog op through its own export mapping, on the op harness's cases
# ---------------------------------------------------------------------------------------------
def _op_harness():
    path = os.path.join(HERE, "..", "ops", "test_ops.py")
    spec = importlib.util.spec_from_file_location("_stadyn_op_harness_for_onnx", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module            # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.ENTRIES


ENTRIES = _op_harness()
# Calls whose export is refused on purpose (the mapping says why; the test checks it does).
REFUSED = {"output_stat=True", "output_mask=True", "an index over several axes",
           "channel_last or base_axis != 1", "batch_dims > 0", "no dynamic sequence axis",
           "are not mapped from NNabla's layouts yet"}
# Ops with no export rule at all say why (test_op_rules.py lists them).
REFUSED |= {rules_for(spec).onnx_export.reason for spec in CATALOG.values()
            if isinstance(rules_for(spec).onnx_export, Unmapped)}
# Ops whose declaration says no file holds them (OpSpec.unstorable: grad) are refused by it.
REFUSED |= {spec.unstorable for spec in CATALOG.values() if spec.unstorable}


def _export_cases():
    params = []
    for name in sorted(CATALOG):
        for k, case in enumerate(ENTRIES[name].cases if name in ENTRIES else []):
            params.append(pytest.param(name, k, id=f"{name}-{k}"))
    return params


def _exported_case(name, index, dynamic_batch=True):
    """The op harness's case ``index`` of op ``name`` exported: ``(model, feeds, outputs)``
    with the outputs computed by Stadyn in the inference phase; None if the mapping refuses
    the call (for one of the REFUSED reasons)."""
    attrs = dict(ENTRIES[name].cases[index].attrs)
    leaves, feeds = [], {}
    for i, value in enumerate(ENTRIES[name].cases[index].inputs):
        if value is None:
            leaves.append(None)
            continue
        v = sd.Variable(np.shape(value), dtype=np.asarray(value).dtype)
        v.d = value
        leaves.append(v)
        feeds[f"x{i}"] = np.asarray(value)
    f = function_of(name)
    out = f(*leaves, **attrs)
    outs = [out] if isinstance(out, sd.Variable) else list(out)
    named_in = {f"x{i}": v for i, v in enumerate(leaves) if v is not None}
    try:
        model = to_onnx_model({f"y{k}": o for k, o in enumerate(outs)}, named_in,
                              dynamic_batch=dynamic_batch)
    except ExportError as exc:
        assert f"'{name}'" in str(exc)
        assert any(reason in str(exc) for reason in REFUSED), str(exc)
        return None
    if "batch_stat" in attrs or name.endswith("batch_normalization"):
        attrs["batch_stat"] = False       # the export is the inference graph
        out = f(*leaves, **attrs)
        outs = [out] if isinstance(out, sd.Variable) else list(out)
    with sd.training(False):
        sd.forward_all(outs)
    return model, feeds, outs


@pytest.mark.parametrize("name, index", _export_cases())
def test_every_catalog_op_exports_and_matches_onnxruntime(name, index):
    entry = ENTRIES[name]
    exported = _exported_case(name, index)
    if exported is None:
        return
    model, feeds, outs = exported
    got = _session(model).run(None, feeds)
    for g, o in zip(got, outs):
        assert g.shape == o.shape, f"{name}: shape {g.shape} != {o.shape}"
        if entry.random and not entry.cases[index].attrs.get("train_only"):
            continue                      # NNabla's dropout always drops; the export does not
        np.testing.assert_allclose(g, o.d, rtol=1e-4, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("name, index", _export_cases())
def test_every_exported_op_imports_back_with_the_same_outputs(name, index):
    """Stadyn reads back what it writes: every ONNX op an export mapping emits has an import
    mapping, and the imported graph computes what the op computed."""
    exported = _exported_case(name, index, dynamic_batch=False)
    if exported is None:
        return
    model, feeds, outs = exported
    net = sd.import_onnx(model)
    assert list(net.inputs) == list(feeds)
    got = net(**feeds)
    assert len(got) == len(outs)
    for (key, g), o in zip(got.items(), outs):
        assert g.shape == o.shape and g.dtype == o.dtype, f"{name} {key}: {g.dtype} {g.shape}"
        if ENTRIES[name].random and not ENTRIES[name].cases[index].attrs.get("train_only"):
            continue                      # NNabla's dropout always drops; the export does not
        np.testing.assert_allclose(g, o.d, rtol=1e-5, atol=1e-6, err_msg=f"{name} {key}")


@pytest.mark.parametrize("kernel, stride, pad, ignore_border, including_pad, size", [
    ((2, 2), None, None, True, True, 7),
    ((2, 2), None, None, False, True, 7),
    ((3, 3), (2, 2), (1, 1), True, True, 8),
    ((3, 3), (2, 2), (1, 1), False, True, 8),
    ((3, 3), (2, 2), (1, 1), False, False, 9),
    ((3, 2), (1, 2), (2, 1), True, True, 6),
    ((3, 2), (3, 3), (0, 1), False, False, 10),
    ((2, 2), (3, 3), (0, 0), False, True, 7),
    ((1, 1), (2, 2), (0, 0), False, True, 5),
])
def test_pooling_geometry_matches_onnxruntime(kernel, stride, pad, ignore_border, including_pad,
                                              size):
    rng = np.random.default_rng(sum(kernel) + size)
    x = sd.Variable((2, 3, size, size + 1))
    x.d = rng.normal(size=x.shape)
    ys = {"max": F.max_pooling(x, kernel, stride, ignore_border, pad),
          "avg": F.average_pooling(x, kernel, stride, ignore_border, pad,
                                   including_pad=including_pad)}
    sd.forward_all(list(ys.values()))
    got = _session(to_onnx_model(ys, {"x": x})).run(None, {"x": x.d})
    for g, (key, y) in zip(got, ys.items()):
        np.testing.assert_allclose(g, y.d, rtol=1e-5, atol=1e-6, err_msg=key)


@pytest.mark.usefixtures("fresh_parameters")
def test_cntk_asymmetric_auto_padding_exports():
    import stadyn.layers as L
    x = sd.Variable((2, 3, 7, 7))
    with L.default_options(pad=True):
        h = L.Convolution((2, 2), 4, activation=L.relu)(x)
        ys = {"max": L.MaxPooling((2, 2), (2, 2))(h),
              "avg": L.AveragePooling((2, 2), (2, 2))(h)}
    x.d = np.random.default_rng(2).normal(size=x.shape)
    sd.forward_all(list(ys.values()))
    model = to_onnx_model(ys, {"x": x})
    assert {"Pad", "Conv", "MaxPool", "AveragePool"} <= {n.op_type for n in model.graph.node}
    for g, y in zip(_session(model).run(None, {"x": x.d}), ys.values()):
        assert g.shape == y.shape == (2, 4, 4, 4)
        np.testing.assert_allclose(g, y.d, rtol=1e-5, atol=1e-6)


def test_an_op_without_a_mapping_is_an_error_naming_op_and_scope():
    spec = OpSpec(name="mystery", impl=lambda x: x * 2, inputs=("x",), attrs={})
    x = sd.Variable((2,))
    with sd.parameter_scope("net/block"):
        y = apply(spec, (x,), {})
    with pytest.raises(ExportError, match="op 'mystery' in scope 'net/block' has no ONNX"):
        to_onnx_model(y, x)
    with sd.parameter_scope("net/drop"):
        z = F.dropout(x, 0.5, output_mask=True)[0]
    with pytest.raises(ExportError, match="'dropout' in scope 'net/drop'.*output_mask=True"):
        to_onnx_model(z, x)


# ---------------------------------------------------------------------------------------------
# ONNX import of exported models
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [_digits_builder, _convnet_builder], ids=["digits", "convnet"])
def test_exported_models_import_back(make, tmp_path):
    build, data = make()
    x, test_graph, _ = build(3)
    x.d = data(3)
    sd.export_onnx(tmp_path / "m.onnx", {"y": test_graph}, {"x": x})
    net = sd.import_onnx(tmp_path / "m.onnx", dims={"batch": 3})
    assert set(net.parameters) <= {i.name for i in onnx.load(str(tmp_path / "m.onnx"))
                                   .graph.initializer}
    with sd.training(False):
        test_graph.forward()
    got = net(x=x.d)["y"]
    np.testing.assert_allclose(got, test_graph.d, rtol=1e-5, atol=1e-5)
    if make is _convnet_builder:  # an imported network is a Stadyn graph: it saves as one
        sd.save(tmp_path / "m.stadyn", net)
        np.testing.assert_array_equal(sd.load(tmp_path / "m.stadyn")(x=x.d)["y"], got)


def test_import_lists_unsupported_ops(tmp_path):
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Hardmax", ["x"], ["a"]),   # Det was the example before it was mapped
             helper.make_node("HardSwish", ["a"], ["b"]), helper.make_node("Hardmax", ["b"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedModelError,
                       match=r"unsupported ONNX ops: HardSwish \(1 node\), Hardmax \(2 nodes\)"):
        sd.import_onnx(model)
    (tmp_path / "junk.onnx").write_bytes(b"\x00not a model")
    with pytest.raises(sd.ModelFileError, match="junk.onnx"):
        sd.import_onnx(tmp_path / "junk.onnx")


def test_import_asks_for_build_time_values_and_takes_them():
    from onnx import TensorProto, helper
    node = helper.make_node("Reshape", ["x", "shape"], ["y"])
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedModelError, match=r"constants=\{'shape': \.\.\.\}") as info:
        sd.import_onnx(model)
    assert info.value.needs_constant == "shape"
    net = sd.import_onnx(model, constants={"shape": np.array([3, -1])})
    assert list(net.inputs) == ["x"]
    assert net(x=np.arange(6).reshape(2, 3))["y"].tolist() == [[0, 1], [2, 3], [4, 5]]


def test_the_docs_hold_the_generated_mapping_table():
    with open(os.path.join(HERE, "..", "..", "docs", "model-files.md"), encoding="utf-8") as f:
        text = f.read()
    copy = text.split("<!-- onnx-table-start -->")[1].split("<!-- onnx-table-end -->")[0]
    assert copy.strip() == onnx_mapping_table(), (
        "docs/model-files.md: regenerate the table with stadyn.serialize.onnx_mapping_table()")


# ---------------------------------------------------------------------------------------------
# Hostile ONNX input: one clear error naming the file
# ---------------------------------------------------------------------------------------------
def _onnx_file(tmp_path, nodes, inputs, name="m.onnx"):
    from onnx import TensorProto, helper
    graph = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(tmp_path / name))
    return tmp_path / name


def test_a_cycle_of_nodes_is_an_error_naming_the_file_and_the_nodes(tmp_path):
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    path = _onnx_file(tmp_path, [helper.make_node("Add", ["x", "b"], ["a"], name="first"),
                                 helper.make_node("Relu", ["a"], ["b"], name="second"),
                                 helper.make_node("Neg", ["a"], ["y"], name="out")], [x])
    with pytest.raises(sd.ModelFileError) as err:
        sd.import_onnx(path)
    assert str(err.value) == (f"{path}: the graph has a cycle (each node needs the next one's "
                              "output): node 0 (Add 'first') -> node 1 (Relu 'second') -> "
                              "node 0 (Add 'first')")
    dangling = _onnx_file(tmp_path, [helper.make_node("Add", ["x", "nowhere"], ["y"])], [x],
                          "dangling.onnx")
    with pytest.raises(sd.ModelFileError, match=r"dangling.onnx: node 0 \(Add\): input 'nowhere' "
                                                r"is neither a graph input, an initializer nor "
                                                r"any node's output"):
        sd.import_onnx(dangling)


def test_nodes_out_of_order_are_sorted():
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Relu", ["a"], ["y"]), helper.make_node("Neg", ["x"], ["a"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert sd.import_onnx(model)(x=np.array([1.0, -2.0]))["y"].tolist() == [0.0, 2.0]


def test_inputs_larger_than_memory_are_refused_before_allocating(tmp_path):
    from onnx import TensorProto, helper
    huge = helper.make_tensor_value_info("x", TensorProto.FLOAT, [10 ** 12, 3])
    path = _onnx_file(tmp_path, [helper.make_node("Relu", ["x"], ["y"])], [huge])
    with pytest.raises(sd.ModelFileError) as err:
        sd.import_onnx(path)
    message = str(err.value)
    assert message.startswith(f"{path}: the inputs declare 10.9 TiB, more than this machine's "
                              "memory (")
    assert message.endswith("): the largest, 'x', is (1000000000000, 3) float32 (10.9 TiB)")
    symbolic = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3000])
    path = _onnx_file(tmp_path, [helper.make_node("Relu", ["x"], ["y"])], [symbolic], "s.onnx")
    with pytest.raises(sd.ModelFileError, match=r"'x', is \(2147483647, 3000\) float32 \(23.4 "
                                                r"TiB\) with batch=2147483647"):
        sd.import_onnx(path, dims={"batch": 2 ** 31 - 1})
    with pytest.raises(sd.ModelFileError, match=r"s.onnx: dims\['batch'\] must be a positive "
                                                r"whole number, got 0"):
        sd.import_onnx(path, dims={"batch": 0})


# ---------------------------------------------------------------------------------------------
# Exports that must follow Stadyn's forward where ONNX's plain op differs
# ---------------------------------------------------------------------------------------------
def _export_and_run(y, inputs):
    model = to_onnx_model({"y": y}, inputs, dynamic_batch=False)
    got, = _session(model).run(None, {k: v.d for k, v in inputs.items()})
    back = sd.import_onnx(model)(**{k: v.d for k, v in inputs.items()})["y"]
    return got, back


def test_cross_entropies_export_ignored_ids_and_the_clamped_log():
    """As Stadyn computes them (NNabla 1.39's semantics): a negative class id gives loss 0
    (GatherElements would read class -1 from the end), and categorical_cross_entropy's log is
    clamped at float32's smallest normal number (-log(tiny) = 87.34, not inf)."""
    logits = np.array([[1.0, 2.0, 3.0], [0.5, 0.1, 2.0], [1.0, 1.0, 1.0]], np.float32)
    ids = np.array([[2], [-1], [-2]], np.int64)
    x, t = sd.Variable.from_numpy_array(logits), sd.Variable.from_numpy_array(ids)
    got, back = _export_and_run(F.softmax_cross_entropy(x, t), {"x": x, "t": t})
    logp0 = logits[0] - np.log(np.exp(logits[0]).sum())
    expected = np.array([[-logp0[2]], [0.0], [0.0]], np.float32)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(back, expected, rtol=1e-6, atol=1e-6)

    probs = np.array([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5], [0.1, 0.2, 0.7]], np.float32)
    ids = np.array([[0], [-1], [2]], np.int64)
    x, t = sd.Variable.from_numpy_array(probs), sd.Variable.from_numpy_array(ids)
    got, back = _export_and_run(F.categorical_cross_entropy(x, t), {"x": x, "t": t})
    tiny = np.finfo(np.float32).tiny
    expected = np.array([[-np.log(tiny)], [0.0], [-np.log(0.7)]], np.float32)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(back, expected, rtol=1e-6)


@pytest.mark.parametrize("shape, widths, axis, length", [
    ((1, 2, 3), (4, 4), 2, 3), ((1, 2, 3), (1, 1, 0, 3), 2, 3), ((1, 2, 1), (2, 2), 2, 1)])
def test_a_reflect_pad_longer_than_onnx_allows_is_an_export_error(shape, widths, axis, length):
    """ONNX's Pad reflects at most length - 1 elements on each side (onnxruntime refuses the
    model otherwise); Stadyn's pad reflects further, so the export refuses it, naming the op."""
    x = sd.Variable(shape)
    with pytest.raises(ExportError, match=rf"op 'pad' cannot be exported to ONNX: reflect "
                                          rf"padding .* along axis {axis} of length {length}"):
        to_onnx_model(F.pad(x, widths, "reflect"), x)
    ok = F.pad(x, (length - 1, length - 1), "reflect")         # the longest ONNX allows
    x.d = np.arange(x.size, dtype=np.float32).reshape(shape)
    ok.forward()
    got, _ = _export_and_run(ok, {"x": x})
    np.testing.assert_array_equal(got, np.pad(x.d, [(0, 0)] * (len(shape) - 1)
                                              + [(length - 1, length - 1)], mode="reflect"))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("opset", [17, 18])
def test_the_mean_of_integers_exports_as_a_float_mean(tmp_path, dtype, opset):
    """NNabla's ``F.mean`` of an int32 array is a float32 mean (NNabla 1.39: ``[[1, 2], [4, 7]]``
    -> ``[1.5, 5.5]`` float32); ONNX's ReduceMean keeps an integer input's type, so the export
    casts first (before, onnx.checker refused the model: elem type 6 vs 1)."""
    from stadyn.compat.nnabla import functions as NF
    values = np.array([[1, 2], [4, 7]]).astype(dtype)
    x = sd.Variable.from_numpy_array(values)
    y = NF.mean(x, axis=1)
    path = tmp_path / "mean.onnx"
    sd.export_onnx(path, {"y": y}, {"x": x}, opset=opset)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    (got,) = ort.InferenceSession(str(path)).run(None, {"x": values})
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, values.astype(np.float64).mean(axis=1), rtol=1e-6)


def test_nnablas_sigmoid_cross_entropy_exports_its_integer_label(tmp_path):
    """NNabla's ``F.sigmoid_cross_entropy`` reads a fractional target as its integer part (NNabla
    1.39: x = 0.5, t = 0.7 gives 0.9741, the loss of label 0); the ONNX file truncates too."""
    from stadyn.compat.nnabla import functions as NF
    xv = np.array([[0.5, -1.0, 2.0], [1.0, 1.0, 1.0]], np.float32)
    tv = np.array([[0.2, 0.7, 1.0], [-0.5, 1.7, 2.4]], np.float32)
    x, t = sd.Variable.from_numpy_array(xv), sd.Variable.from_numpy_array(tv)
    path = tmp_path / "sce.onnx"
    sd.export_onnx(path, {"y": NF.sigmoid_cross_entropy(x, t)}, {"x": x, "t": t})
    (got,) = ort.InferenceSession(str(path)).run(None, {"x": xv, "t": tv})
    label = np.trunc(tv).astype(np.float64)
    want = np.maximum(xv, 0) - xv * label + np.log1p(np.exp(-np.abs(xv)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_one_hot_exports_ids_outside_an_axis_as_f_one_hot_gives_them(tmp_path):
    # F.one_hot (NNabla 1.39's OneHot): an id in [-n, -1] counts from the end of its own axis,
    # one outside [-n, n - 1] on any axis gives all zeros; the export flattened the ids first,
    # so [0, -1] of (2, 3) became class 5 in onnxruntime (Stadyn: class 2), [0, 3] class 3
    # (Stadyn: none).  Expected rows hand-computed from NNabla's rule (checked on NNabla 1.39)
    ids = np.array([[0, -1], [1, 3], [-1, 0], [2, 0], [0, 2], [1, -3], [0, 3]], np.int64)
    x = sd.Variable.from_numpy_array(ids)
    y = F.one_hot(x, (2, 3))
    sd.export_onnx(tmp_path / "oh.onnx", {"y": y}, {"x": x}, dynamic_batch=False)
    got = ort.InferenceSession(str(tmp_path / "oh.onnx")).run(None, {"x": ids})[0]
    expected = np.zeros((7, 6), np.float32)
    for row, cls in ((0, 2), (2, 3), (4, 2), (5, 3)):
        expected[row, cls] = 1.0
    np.testing.assert_array_equal(got.reshape(7, 6), expected)
    y.forward()
    np.testing.assert_array_equal(y.d.reshape(7, 6), expected)
