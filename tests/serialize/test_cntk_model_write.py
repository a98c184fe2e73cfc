"""CNTK v2 model files written by Stadyn (``Function.save``, ``serialize.save_cntk_v2``).

The fixtures (``tests/fixtures/cntk_model_write``, made by its ``make_refs.py``) hold what the
real CNTK 2.7 reported after loading the files Stadyn wrote -- its outputs on given inputs,
its listing of the graph -- and the decoding of the file it read.  Here the files are written
again and checked against those, without CNTK; the live test (skipped without CNTK 2.7) has
CNTK load the files written now.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import warnings

import numpy as np
import pytest
import peers

import stadyn.compat.cntk as C
from stadyn import serialize

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_model_write")
sys.path.insert(0, FIXTURES)
import networks  # noqa: E402

# (loaded under a name of its own: other fixture folders hold a make_refs.py too, and a test
# process that imported one of those first would hand it out for a plain ``import make_refs``)
_spec = importlib.util.spec_from_file_location("cntk_model_write_make_refs",
                                               os.path.join(FIXTURES, "make_refs.py"))
make_refs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_refs)

with open(os.path.join(FIXTURES, "cntk_listing.json")) as _f:
    LISTING = json.load(_f)
OUTPUTS = dict(np.load(os.path.join(FIXTURES, "cntk_outputs.npz")))
INPUTS = dict(np.load(os.path.join(FIXTURES, "inputs.npz")))
NAMES = sorted(LISTING)
CNTK_PYTHON = peers.CNTK_PYTHON


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Every network saved by Function.save (no warning: each must be a CNTK v2 file)."""
    folder = str(tmp_path_factory.mktemp("cntk_write"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        feeds = make_refs.save_all(C, folder)
    return folder, feeds


def test_the_inputs_are_the_fixtures(written):
    _, feeds = written
    assert sorted(feeds) == sorted(INPUTS)
    for k, v in feeds.items():
        np.testing.assert_array_equal(v, INPUTS[k])


@pytest.mark.parametrize("name", NAMES)
def test_the_written_file_is_the_one_cntk_read(written, name):
    # the whole decoded Dictionary: versions, uids, names, shapes, attributes, values
    folder, _ = written
    assert make_refs.decoded(os.path.join(folder, name + ".model")) == LISTING[name]["file"]


@pytest.mark.parametrize("name", NAMES)
def test_stadyn_loads_the_written_file_with_cntks_outputs(written, name):
    folder, _ = written
    m = C.load_model(os.path.join(folder, name + ".model"))
    got = m.eval({a: INPUTS[f"{name}/{a.name}"] for a in m.arguments})
    if not isinstance(got, dict):
        got = {m.outputs[0]: got}
    listed = LISTING[name]["cntk"]
    assert [a.name for a in m.arguments] == [a[0] for a in listed["arguments"]]
    assert [[o.name, list(o.shape)] for o in m.outputs] == listed["outputs"]
    for k, o in enumerate(m.outputs):
        np.testing.assert_allclose(got[o], OUTPUTS[f"{name}/{k}"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_the_saved_network_computes_cntks_outputs(name):
    # the network Stadyn saved, run by Stadyn, against what CNTK 2.7 computed from the file
    f, data = networks.build(C)[name]
    got = f.eval({a: data[a.name] for a in f.arguments})
    if not isinstance(got, dict):
        got = {f.outputs[0]: got}
    for k, o in enumerate(f.outputs):
        np.testing.assert_allclose(got[o], OUTPUTS[f"{name}/{k}"], rtol=1e-5, atol=1e-6)


def test_an_op_without_a_cntk_form_writes_stadyns_format_with_one_warning(tmp_path):
    x = C.input_variable(5, name="x")
    # (pow of a base that may be 0: CNTK's Pow gives 0 for 0 to a negative power, so the
    # writer refuses it on purpose; top_k, the example until cntkwrite6, is CNTK's TopK now, a
    # reversed slice, the example until cntkwrite7, CNTK's Slice with a negative stride, and
    # eye_like, the example until cntkwrite8, CNTK's EyeLikeOp)
    f = C.pow(x, C.constant(2.0), name="square")
    path = str(tmp_path / "square.model")
    with pytest.warns(UserWarning, match=r"square\.model: written as a Stadyn model file.*pow"):
        f.save(path)
    with open(path, "rb") as fh:
        assert fh.read(2) == b"PK"                # Stadyn's zip
    data = np.arange(10, dtype=np.float32).reshape(2, 5)
    loaded = C.load_model(path)
    got = loaded.eval({loaded.arguments[0]: data})
    values = got[loaded.outputs[0]] if isinstance(got, dict) else got
    np.testing.assert_array_equal(values, data ** 2)


def test_the_writer_refuses_before_writing_anything(tmp_path):
    import stadyn as sd
    import stadyn.functions as F
    x = sd.Variable((1, 4))
    path = tmp_path / "m.model"
    with pytest.raises(serialize.CntkWriteUnsupported, match="sin"):
        serialize.save_cntk_v2(path, [F.relu(F.sin(x))], {"x": x})
    assert not path.exists()


def test_a_dense_layer_is_written_as_cntk_writes_it(tmp_path):
    # a layer is a block function (op 57) of kind Dense over a placeholder, the Times reading
    # the weight first (CNTK's C++ order), outputRank 1, the name on the block
    x = C.input_variable(3, name="x")
    C.layers.Dense(2, name="d")(x).save(str(tmp_path / "d.model"))
    top = make_refs.decoded(str(tmp_path / "d.model"))
    assert top["type"] == "CompositeFunction" and top["version"] == 3
    by_uid = {f["uid"]: f for f in top["primitive_functions"]}
    block = by_uid[top["root"]]
    assert (block["op"], block["name"], block["block_function_op_name"]) == (57, "d", "Dense")
    kinds = {v["uid"]: (v["kind"], v["name"], v["shape"]["shape"])
             for v in top["inputs"]}
    [placeholder] = block["block_function_composite_arguments_map_keys"]
    assert kinds[placeholder][0] == 4
    assert [kinds[u] for u in block["block_function_composite_arguments_map_values"]] == \
        [(0, "x", [3])]
    times = next(f for f in top["primitive_functions"] if f["op"] == 31)
    # (shapes as stored: column-major, the W of shape (3, 2) is stored [2, 3], as CNTK does)
    assert kinds[times["inputs"][0]] == (2, "W", [2, 3]) and times["inputs"][1] == placeholder
    assert times["attributes"]["outputRank"] == 1


def _cntk_available() -> bool:
    return os.path.exists(CNTK_PYTHON)


@pytest.mark.skipif(not _cntk_available(), reason="CNTK 2.7's Python is not installed")
def test_cntk_27_loads_the_files_written_now(written):
    folder, _ = written
    make_refs.run_cntk(folder)
    with open(os.path.join(folder, "cntk_listing.json")) as f:
        listing = json.load(f)
    outputs = dict(np.load(os.path.join(folder, "cntk_outputs.npz")))
    assert {k: v["cntk"] for k, v in LISTING.items()} == listing
    assert sorted(outputs) == sorted(OUTPUTS)
    for k, v in outputs.items():
        np.testing.assert_allclose(v, OUTPUTS[k], rtol=1e-6, atol=1e-7)


def test_composed_ops_load_in_cntk_as_the_graph_cntk_builds():
    # the file written for composed_ops, as CNTK 2.7 loaded it (cntk_listing.json), is the
    # graph CNTK 2.7 builds itself for the same calls (cntk_native.json, its cntk_native.py):
    # Log, Negate(Floor(Negate)) for ceil, Floor(Plus) for round, the ElementDivide, And,
    # Or, Xor, Not blocks, the comparisons -- op names, names, order; and the same outputs
    with open(os.path.join(FIXTURES, "cntk_native.json")) as f:
        native = json.load(f)
    values = native.pop("outputs_values")
    assert LISTING["composed_ops"]["cntk"] == native
    assert [o for o, _ in native["outputs"]] == networks.COMPOSED
    for k, v in enumerate(values):
        np.testing.assert_array_equal(OUTPUTS[f"composed_ops/{k}"], np.array(v, np.float32))


def test_round_is_written_as_cntks_floor_of_x_plus_a_half(tmp_path):
    # compat's round is CNTK's Floor(Plus(x, 0.5)) (before: written in Stadyn's format with a
    # warning, as the writer took its Floor mark for a floor of x); the file holds exactly that
    x = C.input_variable(3, name="x")
    path = str(tmp_path / "round.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        C.round(x, name="r").save(path)
    top = make_refs.decoded(path)
    by_uid = {f["uid"]: f for f in top["primitive_functions"]}
    leaves = {v["uid"]: v for v in top["inputs"]}
    floor = by_uid[top["root"]]
    assert (floor["op"], floor["name"]) == (7, "r")                  # Floor
    [plus_out] = floor["inputs"]
    plus = by_uid[plus_out.rpartition("_Output_")[0]]
    assert plus["op"] == 19                                          # Plus
    assert leaves[plus["inputs"][0]]["name"] == "x"
    assert leaves[plus["inputs"][1]]["value"]["values"] == [0.5]
    data = np.array([[0.4, 0.5, -1.5]], np.float32)
    loaded = C.load_model(path)
    np.testing.assert_array_equal(loaded.eval({loaded.arguments[0]: data}), [[0, 1, -1]])


def test_a_cntk_op_the_writer_had_no_form_for_is_written_as_cntks_op(tmp_path):
    # a value the compat shows as a CNTK op without a rule here was written by the catalog
    # ops computing it, where one of those has no CNTK form, as Stadyn's format, warned
    # (CosineDistanceWithNegativeSamples until cntkfile39: "no CNTK v2 form for sum"; eye_like
    # until cntkwrite8, SELU and reduce_l1 until cntkwrite5, tan before cntk_write_forms); it
    # is CNTK 2.7's one CosDistanceWithNegativeSamples now (CNTK 2.7 reads it:
    # tests/serialize/test_cntk_cos_negative.py), and reads back with the same numbers
    import warnings
    x, y = C.input_variable(2, name="x"), C.input_variable(2, name="y")
    path = str(tmp_path / "cdns.model")
    f = C.cosine_distance_with_negative_samples(x, y, 1, 1, name="t")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        f.save(path)
    assert [g.type for g in serialize.read_legacy_model(path).networks["main"].functions] == \
        ["CosDistanceWithNegativeSamples"]
    loaded = C.load_model(path)
    a = np.array([[0.5, -1.0], [2.0, 3.0]], np.float32)
    b = np.array([[1.0, 1.0], [-1.0, 2.0]], np.float32)
    got = loaded.eval({v: {"x": a, "y": b}[v.name] for v in loaded.arguments})
    np.testing.assert_allclose(np.asarray(got).reshape(2, 2), f.eval({x: a, y: b}).reshape(2, 2),
                               rtol=1e-6)


def test_cntk_log_is_written_as_cntks_log_and_read_back_floored(tmp_path):
    # the catalog op cntk_log (CNTK's Log: -85.1 below 1e-37) is one Log function in the file,
    # and Stadyn reads a file's Log as CNTK 2.7 computes it (-85.1 at 0, not -inf)
    import stadyn as sd
    import stadyn.functions as F
    from stadyn.serialize import _cntk_format
    x = sd.Variable((1, 3))
    path = str(tmp_path / "log.model")
    serialize.save_cntk_v2(path, [F.cntk_log(x)], {"x": x})
    assert [f.type for f in _cntk_format.read_cntk(path).networks["main"].functions] == ["Log"]
    loaded = C.load_model(path)
    got = loaded.eval({loaded.arguments[0]: np.array([[0.0, 1.0, np.e]], np.float32)})
    np.testing.assert_allclose(got, [[-85.1, 0.0, 1.0]], rtol=1e-6)


@pytest.mark.parametrize("op, why", [("log", "-85.1"), ("div2", "divisor is 0")])
def test_plain_log_and_div2_are_refused_as_cntk_computes_them_otherwise(tmp_path, op, why):
    # CNTK 2.7's Log gives -85.1 at 0 and its ElementTimes(x, Reciprocal(y)) 0 where y is 0;
    # the catalog's plain log and div2 give NumPy's -inf and inf (only the compat's cntk_log
    # and marked element_divide are CNTK's): writing them as CNTK's ops changed the values
    import stadyn as sd
    import stadyn.functions as F
    x = sd.Variable((1, 2))
    x.d = np.array([[0.0, 2.0]], np.float32)
    y = F.log(x) if op == "log" else F.div2(F.add_scalar(x, 1.0), x)
    y.forward()
    with np.errstate(divide="ignore"):
        expected = np.log([0.0, 2.0]) if op == "log" else np.array([1.0, 3.0]) / [0.0, 2.0]
    np.testing.assert_allclose(y.d[0], expected, rtol=1e-6)
    path = tmp_path / "m.model"
    with pytest.raises(serialize.CntkWriteUnsupported, match=why):
        serialize.save_cntk_v2(path, [y], {"x": x})
    assert not path.exists()
    from stadyn.serialize._cntk_write import WRITABLE_OPS
    assert op not in WRITABLE_OPS


def test_a_cntk_written_file_divides_by_zero_and_breaks_hardmax_ties_as_cntk():
    # cntk_zero_tie.model, written by CNTK 2.7 (cntk_zero_tie.py): reciprocal and
    # element_divide with zero divisors (CNTK: 0), hardmax with ties (CNTK: the first maximum)
    data = np.load(os.path.join(FIXTURES, "cntk_zero_tie.npz"))
    m = C.load_model(os.path.join(FIXTURES, "cntk_zero_tie.model"))
    got = m.eval({a: data[a.name] for a in m.arguments})
    assert [o.name for o in m.outputs] == ["rec", "div", "hm"]
    for k, o in enumerate(m.outputs):
        np.testing.assert_array_equal(got[o], data[str(k)])
    assert (data["0"][data["y"] == 0] == 0).all() and data["2"].sum(axis=1).tolist() == [1] * 3


@pytest.mark.parametrize("name,native,outputs", [
    ("more_ops", "cntk_native_more.json", networks.MORE),
    ("losses", "cntk_native_losses.json", ["ce", "err"]),
    ("axes_ops", "cntk_native_axes.json", networks.AXES),
    ("layers_more", "cntk_native_layers.json", networks.LAYERS_MORE),
    ("sequences", "cntk_native_sequences.json", networks.SEQUENCES)])
def test_more_ops_load_in_cntk_as_the_graph_cntk_builds(name, native, outputs):
    # the file written for more_ops and losses (before: Stadyn's format, warned, for every one
    # of them), as CNTK 2.7 loaded it, is the graph CNTK 2.7 builds itself for the same calls
    # (cntk_native_*.json, by cntk_native.py): Select, Clip, ReduceElements (argmax,
    # reductions), the ElementMax, ElementMin, SquaredError, Softplus, LogSoftmax,
    # CrossEntropyWithSoftmax, ClassificationError blocks, Slice, Sin, Cos, TransposeAxes;
    # axes_ops: the Softmax block along one axis of a matrix, the ReduceElements /
    # MultiAxisReduce blocks along some axes, OneHotOp of a Floor, Pow of a positive base,
    # NoOp; layers_more: the LayerNormalization and ConvolutionTranspose blocks (automatic
    # padding, strides, output shape), Label's NoOp; sequences: inputs on a sequence axis,
    # a Dense per step, PastValue, FutureValue, Recurrence(LSTM) both ways (the LSTM block
    # whose two outputs come back through delays, a named Recurrence's NoOp), an
    # Embedding+LSTM+Dense tagger, sequence.first and an LSTM + sequence.last + Dense classifier
    # (Sequence::Slice blocks), sequence.reduce_sum (a Sequence::ReduceElements block), GRUs
    # (Fold(GRU) and a backward Recurrence(GRU): the GRU block, no Fold block) (before:
    # Stadyn's format for all of those) -- op names,
    # names, order, shapes; and CNTK 2.7's outputs of its own graph
    with open(os.path.join(FIXTURES, native)) as f:
        native = json.load(f)
    values = native.pop("outputs_values")
    assert LISTING[name]["cntk"] == native
    assert [o for o, _ in native["outputs"]] == outputs
    for k, v in enumerate(values):
        np.testing.assert_allclose(OUTPUTS[f"{name}/{k}"], np.array(v, np.float32),
                                   rtol=1e-6, atol=1e-7)


def test_pow_is_refused_where_cntks_differs(tmp_path):
    # CNTK 2.7's Pow gives 0 for 0 ** -1 (the real framework: pow([0], [-1]) -> [0]), Stadyn's
    # pow gives inf: a CNTK Pow in the file would compute something else, so Stadyn's format
    x = C.input_variable(2, name="x")
    y = C.input_variable(2, name="y")
    path = str(tmp_path / "pow.model")
    with pytest.warns(UserWarning, match="0 to a negative power"):
        C.pow(x, y, name="p").save(path)
    loaded = C.load_model(path)
    got = loaded.eval({a: {"x": [[0.0, 2.0]], "y": [[-1.0, 3.0]]}[a.name]
                       for a in loaded.arguments})
    np.testing.assert_array_equal(np.asarray(got, np.float32), [[np.inf, 8.0]])


def test_a_reduction_along_some_axes_is_written_as_cntks_nested_blocks(tmp_path):
    # CNTK 2.7 writes reduce_mean(m, axis=1) as a ReduceElements block (axisVec Axis(-2), as
    # its Python API passes axis 1) around a MultiAxisReduce block around one ReduceElements
    # named _static_axes_subop over stored axis 0 (before: Stadyn's format, warned); Stadyn
    # reads it back with NumPy's values (CNTK 2.7's: the axes_ops fixture)
    m = C.input_variable((2, 3), name="m")
    path = str(tmp_path / "rm.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        C.reduce_mean(m, axis=1, name="r").save(path)
    top = make_refs.decoded(path)
    by_uid = {f["uid"]: f for f in top["primitive_functions"]}
    outer = by_uid[top["root"]]
    assert (outer["block_function_op_name"], outer["name"]) == ("ReduceElements", "r")
    assert outer["attributes"]["axisVec"] == [{"axis": [-2, "staticAxisIdx=-2", True]}]
    middle = by_uid[outer["block_function_composite"]["root"]]
    assert middle["block_function_op_name"] == "MultiAxisReduce"
    assert middle["block_function_composite"]["name"] == "_static_axes_subop"
    inner = by_uid[middle["block_function_composite"]["root"]]
    assert (inner["op"], inner["name"]) == (39, "_static_axes_subop")
    assert inner["attributes"] == {"axisVec": [{"axis": [0, "staticAxisIdx=0", True]}],
                                   "reductionKeepDimensions": True, "reductionOpName": "Mean"}
    data = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    loaded = C.load_model(path)
    np.testing.assert_allclose(loaded.eval({loaded.arguments[0]: data}),
                               data.mean(axis=2, keepdims=True))


def test_one_hot_of_any_index_is_written_as_cntks_one_hot(tmp_path):
    # the compat's one_hot reads its ids as CNTK 2.7's OneHotOp (truncated; a negative value,
    # -0.5 too, no class), so it is written as OneHotOp for any index (before: refused for an
    # index that may be fractional, Stadyn's format, warned).  The outputs below are CNTK
    # 2.7's of this file (Stadyn wrote it, CNTK loaded it: the same numbers, checked by hand)
    x = C.input_variable(1, name="x")
    path = str(tmp_path / "oh.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        C.one_hot(x, 4, name="oh").save(path)
    [f] = [f for f in make_refs.decoded(path)["primitive_functions"] if f["op"] == 68]
    assert f["attributes"]["numClass"] == 4
    data = np.array([[-0.5], [-0.0], [2.9], [3.0], [4.0], [-1.0]], np.float32)
    loaded = C.load_model(path)
    got = np.asarray(loaded.eval({loaded.arguments[0]: data})).reshape(6, 4)
    expected = np.zeros((6, 4), np.float32)
    expected[1, 0] = expected[2, 2] = expected[3, 3] = 1.0
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("index", ["floor", "round", "ceil"])
def test_one_hot_of_whole_numbers_is_written_as_cntks_one_hot(tmp_path, index):
    # an index computed by a Floor, a Round, a Ceil: written as OneHotOp (numClass,
    # onehotAxis as CNTK 2.7 writes them), a negative index all zeros as CNTK's
    x = C.input_variable(3, name="x")
    i = {"floor": C.floor(x * 2.0), "round": C.round(x), "ceil": C.ceil(x)}[index]
    path = str(tmp_path / "oh.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        C.one_hot(i, 4, name="oh").save(path)
    [f] = [f for f in make_refs.decoded(path)["primitive_functions"] if f["op"] == 68]
    assert f["attributes"] == {"numClass": 4, "oneHotOutputSparse": False,
                               "onehotAxis": {"axis": [0, "staticAxisIdx=0", True]}}
    data = np.array([[0.2, 1.7, -0.6]], np.float32)
    loaded = C.load_model(path)
    got = np.asarray(loaded.eval({loaded.arguments[0]: data}))
    idx = {"floor": np.floor(data * 2), "round": np.floor(data + 0.5),
           "ceil": np.ceil(data)}[index]
    expected = (idx[..., None] == np.arange(4)).astype(np.float32)
    np.testing.assert_array_equal(got.reshape(expected.shape), expected)


def test_a_division_by_a_positive_value_is_written_as_cntks_element_divide(tmp_path):
    # the catalog's div2 gives inf where the divisor is 0, CNTK's ElementDivide 0: written
    # (as CNTK's ElementDivide block) only where the divisor is above 0 -- |y| + 1 here,
    # sqrt(variance) + epsilon in LayerNormalization -- and refused for a plain divisor
    import stadyn as sd
    import stadyn.functions as F
    x, y = sd.Variable((1, 3)), sd.Variable((1, 3))
    q = F.div2(x, F.add_scalar(F.abs(y), 1.0))
    path = tmp_path / "d.model"
    serialize.save_cntk_v2(path, [q], {"x": x, "y": y})
    fs = make_refs.decoded(str(path))["primitive_functions"]
    assert [f.get("block_function_op_name") for f in fs if f["op"] == 57] == ["ElementDivide"]
    loaded = C.load_model(str(path))
    feed = {"x": np.array([[1.0, -2.0, 3.0]], np.float32),
            "y": np.array([[0.0, -1.0, 0.5]], np.float32)}
    got = loaded.eval({a: feed[a.name] for a in loaded.arguments})
    np.testing.assert_allclose(np.asarray(got), [[1.0, -1.0, 2.0]], rtol=1e-6)
    with pytest.raises(serialize.CntkWriteUnsupported, match="divisor is 0"):
        serialize.save_cntk_v2(tmp_path / "e.model", [F.div2(x, F.add_scalar(y, 1.0))],
                               {"x": x, "y": y})


def test_a_crop_of_a_transposed_convolution_other_than_cntks_padding_is_refused(tmp_path):
    # CNTK's transposed convolution crops its full output only as its auto-padding does; a
    # deconvolution cropped otherwise (here by 2 rows at the start, none at the end) has no
    # CNTK form: refused, nothing written
    import stadyn as sd
    import stadyn.functions as F
    x = sd.Variable((1, 2, 4, 4))
    weight = sd.Variable.from_numpy_array(np.ones((2, 3, 3, 3), np.float32), need_grad=True)
    y = F.slice(F.deconvolution(x, weight), [None, None, 2, 0], [None, None, 6, 6],
                [1, 1, 1, 1])
    path = tmp_path / "c.model"
    with pytest.raises(serialize.CntkWriteUnsupported, match="auto-padding"):
        serialize.save_cntk_v2(path, [y], {"x": x})
    assert not path.exists()


def test_an_even_kernel_with_pad_is_written_with_cntks_automatic_padding(tmp_path):
    # the compat pads an even kernel with pad=True ((k - 1) // 2 before, the rest after); the
    # file has no pad but CNTK's autoPadding [True, True, False] (stored order), as CNTK 2.7
    # writes Convolution2D((2, 2), 3, pad=True) itself (before: Stadyn's format, 'pad' had no
    # CNTK form); CNTK 2.7's outputs of such files are in the global_pooling fixture
    img = C.input_variable((2, 5, 5), name="img")
    path = str(tmp_path / "even.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        C.layers.Convolution2D((2, 2), 3, pad=True, name="c")(img).save(path)
    functions = make_refs.decoded(path)["primitive_functions"]
    [conv] = [f for f in functions if f["op"] == 33]
    assert conv["attributes"]["autoPadding"] == [True, True, False]
    assert conv["attributes"]["lowerPad"] == conv["attributes"]["upperPad"] == {"shape": [0, 0, 0]}
    assert all(f["op"] != 83 for f in functions)                     # no Pad


@pytest.mark.parametrize("which", ["the network saved", "the file read back"])
def test_sequences_of_different_lengths_give_cntks_outputs(written, which):
    # cntk_ragged.npz: CNTK 2.7 evaluating the file written for the sequences network on
    # sequences of 4, 2, 3 and 1 steps (PastValue / FutureValue at each sequence's ends, the
    # LSTMs both ways, the tagger, sequence.first, the classifier of the last step,
    # sequence.reduce_sum, the GRUs); the
    # network Stadyn saved and Stadyn's reading of the file
    # give the same, sequence by sequence (before: Stadyn's format, warned)
    ragged = dict(np.load(os.path.join(FIXTURES, "cntk_ragged.npz")))
    seqs = [ragged[f"in/{k}"] for k in range(len(make_refs.RAGGED))]
    assert [len(s) for s in seqs] == list(make_refs.RAGGED)
    if which == "the network saved":
        f, _ = networks.build(C)["sequences"]
    else:
        f = C.load_model(os.path.join(written[0], "sequences.model"))
    got = f.eval({f.arguments[0]: seqs})
    assert [o.name for o in f.outputs] == networks.SEQUENCES
    for o in f.outputs:
        for k, v in enumerate(got[o]):
            np.testing.assert_allclose(np.asarray(v), ragged[f"{o.name}/{k}"], rtol=1e-5,
                                       atol=1e-6)


def test_an_op_on_a_sequence_without_a_sequence_form_falls_back_naming_it(tmp_path):
    # sin has no sequence form in the writer: Stadyn's format, one warning naming the op, and
    # the values back (a recurrence of RNNStep, this test's op before cntkfiles17, is written
    # now: tests/serialize/test_cntk_files_17.py)
    s = C.sequence.input_variable(2, name="s")
    f = C.sin(s)
    path = str(tmp_path / "m.model")
    with pytest.warns(UserWarning, match="cntk:Sin: an op on a sequence the writer "
                                         "has no sequence form for"):
        f.save(path)
    data = np.arange(12, dtype=np.float32).reshape(2, 3, 2) * 0.1
    loaded = C.load_model(path)
    np.testing.assert_allclose(np.asarray(loaded.eval({loaded.arguments[0]: data})),
                               np.asarray(f.eval({f.arguments[0]: data})), rtol=1e-6)


def test_an_input_on_a_named_sequence_axis_is_written_and_keeps_its_axis(tmp_path):
    # a CNTK v2 file (no warning), the input on its own axis as CNTK 2.7 writes it (CNTK 2.7's
    # load_model gives C.Axis.new_unique_dynamic_axis("u")'s input back on 'u':
    # test_cntk_write_named_axes.py checks the file against CNTK's); before, the writer wrote
    # CNTK's defaultDynamicAxis only and Stadyn's format was written, with a warning
    q = C.Axis.new_unique_dynamic_axis("q")
    z = C.sequence.input_variable(3, sequence_axis=q, name="z")
    path = str(tmp_path / "q.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        C.tanh(z).save(path)
    with open(path, "rb") as f:
        assert serialize.is_cntk_v2_file(f.read())
    loaded = C.load_model(path)
    # (the axis's own name: "q", or "q1", ... where an axis named "q" was made before in this
    # process, as CNTK 2.7's new_unique_dynamic_axis names it)
    assert q.name.startswith("q")
    assert [a.name for a in loaded.arguments[0].dynamic_axes] == ["defaultBatchAxis", q.name]
    assert [a.name for a in loaded.outputs[0].dynamic_axes] == ["defaultBatchAxis", q.name]


def test_an_input_made_with_needs_gradient_keeps_it_in_the_file(tmp_path):
    # CNTK 2.7 writes an input's needs_gradient and its load_model gives it back (checked:
    # C.relu(C.input_variable(6, needs_gradient=True)).save(...) then load_model(...)
    # .arguments[0].needs_gradient is True); Stadyn's writer wrote False for every input, so
    # a loaded model's gradient for its input was refused (CNTK 2.7 read Stadyn's file so too)
    for needs in (False, True):
        x = C.input_variable(6, name="x", needs_gradient=needs)
        path = str(tmp_path / f"relu_{needs}.model")
        C.relu(x).save(path)
        assert C.load_model(path).arguments[0].needs_gradient is needs
