"""CNTK v1 model files written (``cntk.debugging.save_as_legacy_model``), checked against
CNTK 2.7 itself (tests/fixtures/cntk_legacy_models: its ``read_models.py`` loaded Stadyn's
files with CNTK 2.7's ``load_model`` and wrote CNTK 2.7's own legacy files of the same
models)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import peers

import stadyn.compat.cntk as C
from stadyn.serialize import CntkWriteUnsupported
from stadyn.serialize._cntk_v1_format import read_cntk_v1
from stadyn.serialize._cntk_v1_write import V1Node, cntk_v1_file_bytes

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_legacy_models")
sys.path.insert(0, HERE)
import models_spec as S  # noqa: E402

CNTK_PY = peers.CNTK_PYTHON


def _nodes(model):
    """A decoded v1 file's nodes, as the writer takes them."""
    net = model.networks["main"]
    nodes = []
    for name, v in net.variables.items():
        if v.kind == "parameter":
            nodes.append(V1Node(name, "LearnableParameter", v.dtype, {
                "learning_rate_multiplier": v.meta["learning_rate_multiplier"],
                "shape": v.shape, "value": model.parameters[name].value}))
        else:
            nodes.append(V1Node(name, "SparseInputValue" if v.meta["sparse"] else "InputValue",
                                v.dtype, {"shape": v.shape,
                                          "dynamic_axis": v.meta.get("dynamic_axis"),
                                          "learning_rate_multiplier":
                                              v.meta["learning_rate_multiplier"]}))
    nodes += [V1Node(f.name, f.type, f.meta["precision"], f.attrs, f.inputs)
              for f in net.functions]
    return nodes, net.attrs["groups"]


def _run(f, kind):
    (x,) = f.arguments
    y = f.eval({x: S.inputs(np, kind, x.shape)})
    if isinstance(y, dict):
        y = y[f.outputs[0]]
    return np.concatenate(y) if isinstance(y, list) else y


@pytest.mark.parametrize("kind", S.KINDS)
def test_cntk_written_files_written_back_byte_for_byte(kind):
    """The file layer writes what CNTK 2.7's save_as_legacy_model wrote, byte for byte."""
    path = os.path.join(HERE, f"cntk_{kind}.dnn")
    with open(path, "rb") as f:
        data = f.read()
    assert cntk_v1_file_bytes(*_nodes(read_cntk_v1(path))) == data


@pytest.mark.parametrize("kind", S.KINDS)
def test_saved_model_computes_what_cntk_reads(kind, tmp_path):
    """Stadyn's file of each model is the committed one CNTK 2.7 loaded, and the model
    computes what CNTK 2.7 computed from it."""
    z = S.build(C, kind)
    S.set_parameters(np, z)
    path = str(tmp_path / f"{kind}.dnn")
    C.debugging.save_as_legacy_model(z, path)
    with open(path, "rb") as f, open(os.path.join(HERE, f"stadyn_{kind}.dnn"), "rb") as g:
        assert f.read() == g.read()
    read = np.load(os.path.join(HERE, "cntk_read.npz"))[kind]
    np.testing.assert_allclose(_run(z, kind), read, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", S.KINDS)
def test_saved_model_nodes_as_cntk_writes_them(kind, tmp_path):
    """Node for node (types, payloads, inputs, root groups), Stadyn's file is CNTK 2.7's
    file of the same model but for the uids; convolution's padding is written explicit
    (CNTK: automatic), the same padding."""
    z = S.build(C, kind)
    path = str(tmp_path / f"{kind}.dnn")
    C.debugging.save_as_legacy_model(z, path)

    def shown(p):
        model = read_cntk_v1(p)
        net = model.networks["main"]
        fs = sorted((f.type, sorted((k, str(v)) for k, v in f.attrs.items()
                                    if k not in ("auto_padding", "lower_pad", "upper_pad")),
                     len(f.inputs)) for f in net.functions)
        vs = sorted((v.kind, v.shape, v.meta.get("dynamic_axis")) for v in
                    net.variables.values())
        return fs, vs, {k: len(v) for k, v in net.attrs["groups"].items()}
    assert shown(path) == shown(os.path.join(HERE, f"cntk_{kind}.dnn"))


@pytest.mark.parametrize("kind", S.KINDS)
def test_cntk_written_files_load(kind):
    """CNTK 2.7's legacy files load in Stadyn and compute what CNTK 2.7 computed (the LSTM's
    input on CNTK's default sequence axis, its loop through two PastValue nodes: refused
    before, no v1 PastValue or Slice mapped)."""
    f = C.load_model(os.path.join(HERE, f"cntk_{kind}.dnn"))
    own = np.load(os.path.join(HERE, "cntk_own.npz"))[kind]
    np.testing.assert_allclose(_run(f, kind), own, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", S.KINDS)
def test_saved_files_load_back(kind, tmp_path):
    """Stadyn's own legacy files load back and compute what CNTK 2.7 computed from them."""
    f = C.load_model(os.path.join(HERE, f"stadyn_{kind}.dnn"))
    read = np.load(os.path.join(HERE, "cntk_read.npz"))[kind]
    np.testing.assert_allclose(_run(f, kind), read, rtol=1e-5, atol=1e-5)


def test_free_dimension_refused_as_cntk(tmp_path):
    """CNTK 2.7: ValueError "Function '...': Cannot save as legacy format, a model having
    inputs with free or inferred static axes." (nothing written)."""
    x = C.input_variable(C.FreeDimension)
    path = tmp_path / "free.dnn"
    with pytest.raises(ValueError, match=r"^Function '.*': Cannot save as legacy format, a "
                                         r"model having inputs with free or inferred static "
                                         r"axes\.$"):
        C.debugging.save_as_legacy_model(x + 1, str(path))
    assert not path.exists()


def test_not_a_function_refused_as_cntk(tmp_path):
    x = C.input_variable(3)
    with pytest.raises(TypeError, match="argument 1 of type 'CNTK::FunctionPtr const &'"):
        C.debugging.save_as_legacy_model(x, str(tmp_path / "x.dnn"))


@pytest.mark.parametrize("op", ["top_k", "gather", "one_hot", "elu", "asinh", "atanh"])
def test_ops_cntk_cannot_load_back_refused(op, tmp_path):
    """CNTK 2.7 writes these but its load_model refuses its own file ("Attempted to
    instantiate undefined operation TopK.", ... ExponentialLinearUnit., ... Asinh.):
    Stadyn refuses to write them, naming the op."""
    x = C.input_variable(3)
    z = {"top_k": lambda: C.top_k(x, 2),
         "gather": lambda: C.gather(C.constant(np.ones((4, 3), np.float32)), x),
         "one_hot": lambda: C.one_hot(x, 4), "elu": lambda: C.elu(x),
         "asinh": lambda: C.asinh(x), "atanh": lambda: C.atanh(x)}[op]()
    with pytest.raises(CntkWriteUnsupported, match="no CNTK v1 form for"):
        C.debugging.save_as_legacy_model(z, str(tmp_path / "z.dnn"))
    assert not (tmp_path / "z.dnn").exists()


@pytest.mark.skipif(not os.path.exists(CNTK_PY),
                    reason="CNTK 2.7 (Python 3.6 peer) not installed")
def test_cntk_loads_a_fresh_file(tmp_path):
    """Live: CNTK 2.7 loads a freshly written file and computes what Stadyn computes."""
    z = S.build(C, "dense")
    path = str(tmp_path / "dense.dnn")
    C.debugging.save_as_legacy_model(z, path)
    x = S.inputs(np, "dense", (3,))
    script = ("import cntk as C, numpy as np, sys\n"
              "m = C.load_model(sys.argv[1])\n"
              "x = np.load(sys.argv[2])\n"
              "np.save(sys.argv[3], m.eval({m.arguments[0]: x}))\n")
    np.save(tmp_path / "x.npy", x)
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
    subprocess.run([CNTK_PY, "-W", "ignore", "-c", script, path, str(tmp_path / "x.npy"),
                    str(tmp_path / "y.npy")], check=True, env=env, capture_output=True,
                   timeout=60)
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), _run(z, "dense"), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("kind", S.MORE)
def test_more_models_round_trip(kind, tmp_path):
    """A delay outside a loop, mean, splice (RowStack), reshape, reductions, the losses'
    bodies (ReduceElements, TransposeTimes) and clip: the model computes what CNTK 2.7
    computed from Stadyn's committed file, a fresh file is that file, and Stadyn reads it back
    to the same numbers (before 3d1e3d2a: mean divided by 1/n; the v1 reader mapped none of
    RowStack, Reshape, ReduceElements, TransposeTimes, Clip, Abs, Reciprocal, Hardmax; a delay
    crashed with a TypeError)."""
    z = S.build(C, kind)
    S.set_parameters(np, z)
    read = np.load(os.path.join(HERE, "cntk_read.npz"))[kind]
    # (a loaded v1 file's reductions over all axes are of shape (1,), the model's of ())
    np.testing.assert_allclose(_run(z, kind).reshape(read.shape), read, rtol=1e-5, atol=1e-6)
    path = str(tmp_path / f"{kind}.dnn")
    C.debugging.save_as_legacy_model(z, path)
    with open(path, "rb") as f, open(os.path.join(HERE, f"stadyn_{kind}.dnn"), "rb") as g:
        assert f.read() == g.read()
    np.testing.assert_allclose(_run(C.load_model(path), kind), read, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", S.MORE)
def test_more_cntk_written_files_load(kind):
    """CNTK 2.7's own legacy files of the same models load in Stadyn and compute what CNTK
    2.7 computed from them."""
    f = C.load_model(os.path.join(HERE, f"cntk_{kind}.dnn"))
    own = np.load(os.path.join(HERE, "cntk_own.npz"))[kind]
    np.testing.assert_allclose(_run(f, kind), own, rtol=1e-5, atol=1e-5)


def test_sequence_last_of_a_recurrence_is_written(tmp_path):
    """CNTK 2.7 saves sequence.last(Recurrence(LSTM)) as a v1 file; so does Stadyn now
    (refused before: "no CNTK v1 form for ReconcileDynamicAxis: a sequence op's shape is not
    known"), with CNTK's Where, PackedIndex and GatherPacked nodes (checked against CNTK 2.7's
    own file in tests/serialize/test_cntk_files_16.py), and reads it back to the model's
    outputs."""
    s = C.sequence.input_variable(4, name="x")
    z = C.sequence.last(C.layers.Recurrence(C.layers.LSTM(3))(s))
    path = str(tmp_path / "last.dnn")
    C.debugging.save_as_legacy_model(z, path)
    types = {f.type for f in read_cntk_v1(path).networks["main"].functions}
    assert {"Where", "PackedIndex", "GatherPacked", "FutureValue"} <= types
    data = [np.arange(12, dtype=np.float32).reshape(3, 4) / 12, np.ones((1, 4), np.float32)]
    loaded = C.load_model(path)
    np.testing.assert_allclose(loaded.eval({loaded.arguments[0]: data}),
                               z.eval({s: data}), rtol=1e-6, atol=1e-7)
