"""``load_model`` / ``Function.load`` of the CNTK compat layer on files written by CNTK 2.7
(``tests/fixtures/legacy``): they evaluate to what CNTK computed (``cntk_outputs.npz``, recorded
by ``make_cntk.py``).  The parameters' order of ``cntk_mlp_bn.model`` and its training further
with a ``Trainer`` are compared with CNTK 2.7 in compat_cases/cntk_loaded_model.py."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "legacy")
REF = np.load(os.path.join(FIX, "cntk_outputs.npz"))


def test_load_model_evaluates_the_cifar_convnet_as_cntk_did():
    z = C.load_model(os.path.join(FIX, "cntk_convnet_cifar10.dnn"))
    (features,) = z.arguments
    assert features.name == "features" and tuple(features.shape) == (3, 32, 32)
    got = z.eval({features: REF["cntk_convnet_cifar10.dnn/in/Input3"]})
    np.testing.assert_allclose(got, REF["cntk_convnet_cifar10.dnn/out/Block1232_Output_0"],
                               rtol=1e-4, atol=1e-4)


def test_function_load_reads_the_large_layout():
    z = C.Function.load(os.path.join(FIX, "cntk_mlp_bn_large.model"))
    (x,) = z.arguments
    np.testing.assert_allclose(z.eval({x: REF["cntk_mlp_bn.model/in/Input1468"]}),
                               REF["cntk_mlp_bn.model/out/Block1635_Output_0"],
                               rtol=1e-4, atol=1e-4)


# -- names: what CNTK 2.7 reports by name after load_model (make_cntk_names.py) ----------------
NAMES = json.load(open(os.path.join(FIX, "cntk_names_reference.json")))
NAMED_OUT = np.load(os.path.join(FIX, "cntk_names_outputs.npz"))
# Known differences, with their reasons: none (the file's root, a Combine named "model", is
# found by name and uid as in CNTK).  (Batch normalisation reads CNTK's running sample count,
# aggregate_count, so that constant is in the graph as in CNTK.)
NOT_IN_STADYN: set = set()


def _described(node):
    if node is None:
        return None
    if isinstance(node, C.Function):
        return [node.uid, node.name, node.op_name]
    kind = ("Parameter" if node.is_parameter else "Constant" if node.is_constant else
            "Input" if node.is_input else "Output")
    return [node.uid, node.name, kind]


def _named_model():
    return C.load_model(os.path.join(FIX, "cntk_named_mlp.model"))


def test_a_loaded_model_keeps_cntks_argument_and_output_names_and_uids():
    m = _named_model()
    assert [[a.name, a.uid, list(a.shape)] for a in m.arguments] == NAMES["arguments"]
    assert [[o.name, o.uid, list(o.shape)] for o in m.outputs] == NAMES["outputs"]


def test_find_all_with_name_on_a_loaded_model_finds_what_cntk_finds():
    m = _named_model()
    compared = 0
    for name, by_depth in NAMES["find_all"].items():
        for depth, expected in by_depth.items():
            got = [_described(n) for n in m.find_all_with_name(name, int(depth))]
            if name in NOT_IN_STADYN:
                assert got == [], name
                continue
            assert got == expected, (name, depth)
            compared += 1
    assert compared >= 20       # inputs, parameters, constants, ops, blocks, a repeated name


def test_find_by_name_on_a_loaded_model_gives_cntks_node_or_refuses_a_repeated_name():
    m = _named_model()
    for name, expected in NAMES["find_by_name"].items():
        if name in NOT_IN_STADYN:
            continue
        if isinstance(expected, str):       # CNTK raised: several nodes have this name
            with pytest.raises(ValueError, match="multiple"):
                m.find_by_name(name, -1)
        else:
            assert _described(m.find_by_name(name, -1)) == expected, name


def test_every_node_cntk_walks_is_found_by_its_uid_with_cntks_name_and_op():
    """Blocks and the ops inside them (a block's root included) keep uids of their own."""
    m = _named_model()
    for uid, name, op_name in NAMES["walk-1"]:
        found = C.logging.graph.find_by_uid(m, uid, -1)
        if name in NOT_IN_STADYN:
            assert found is None, uid
            continue
        assert _described(found) == [uid, name, op_name], uid


@pytest.mark.parametrize("name", ["fc1", "bn", "act", "out", "prob"])
def test_cloning_from_an_inner_node_of_a_loaded_model_computes_what_cntk_computed(name):
    m = _named_model()
    ref = NAMES["combine"][name]
    x = NAMED_OUT["in"]
    node = m.find_by_name(name, -1)
    c = C.combine([node.owner])
    assert [[v.name, v.uid] for v in c.arguments] == ref["arguments"]
    assert [[v.name, v.uid] for v in c.outputs] == ref["outputs"]
    assert sorted(p.uid for p in c.parameters) == ref["parameters"]
    np.testing.assert_allclose(c.eval({c.arguments[0]: x}), NAMED_OUT["combine/" + name],
                               rtol=1e-5, atol=1e-5)
    a = C.as_composite(node.owner)
    np.testing.assert_allclose(a.eval({a.arguments[0]: x}), NAMED_OUT["as_composite/" + name],
                               rtol=1e-5, atol=1e-5)


def test_a_loaded_model_with_two_outputs_evaluates_both_at_another_batch_size():
    m = _named_model()
    values = m.eval({m.arguments[0]: NAMED_OUT["in"]})      # built for 1, fed 4 samples
    for o in m.outputs:
        np.testing.assert_allclose(values[o], NAMED_OUT["model/" + o.name], rtol=1e-5,
                                   atol=1e-5)


@pytest.mark.parametrize("file_name", ["cntk_mlp_bn.model", "cntk_convnet_cifar10.dnn",
                                       "cntk_v1_mlp_bn.dnn", "cntk_v1_small_cnn.dnn"])
def test_a_loaded_model_keeps_cntks_uids_and_names(file_name):
    """Arguments, outputs, parameters and constants by CNTK's uids and names, and the blocks
    (layers) by uid, as CNTK 2.7 reports them (``cntk_reference.json``, make_cntk.py); CNTK v1
    files written by CNTK 2 keep the uids and names their node names carry."""
    ref = json.load(open(os.path.join(FIX, "cntk_reference.json")))[file_name]
    m = C.load_model(os.path.join(FIX, file_name))
    variables = ref["variables"]
    assert [(a.uid, a.name) for a in m.arguments] == [(u, variables[u]["name"])
                                                      for u in ref["arguments"]]
    assert [o.uid for o in m.outputs] == ref["outputs"]
    leaves = {(v.uid, v.name) for v in list(m.parameters) + list(m.constants)}
    expected = {(u, v["name"]) for u, v in variables.items()
                if v["kind"] in ("parameter", "constant")}
    assert leaves == expected
    blocks = {uid for uid, f in ref["functions"].items() if f["is_block"]}
    found = {f.uid for f in C.logging.graph.depth_first_search(
        m, lambda n: isinstance(n, C.Function) and n.is_block, depth=-1)}
    assert found == blocks


@pytest.mark.parametrize("file_name", ["cntk_mlp_bn.model", "cntk_v1_small_cnn.dnn"])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_load_model_decodes_a_file_once(monkeypatch, file_name, as_bytes):
    # (before, the search for untyped arguments decoded the whole file, v1 files too, and the
    # load decoded it again; bytes were written to a temporary file for each)
    import stadyn.serialize as serialize
    path = os.path.join(FIX, file_name)
    decoded = []
    read = serialize.read_legacy_model
    monkeypatch.setattr(serialize, "read_legacy_model",
                        lambda p: decoded.append(p) or read(p))
    z = C.load_model(open(path, "rb").read() if as_bytes else path)
    assert len(decoded) == 1 and z.arguments


@pytest.mark.parametrize("file_name", ["cntk_mlp_bn.model", "cntk_v1_mlp_bn.dnn"])
def test_load_model_reads_a_files_first_bytes_once(monkeypatch, file_name):
    # (before, the search for untyped arguments read the first 16 bytes to tell a model file
    # of NNabla or CNTK, then again to tell a CNTK v2 one: one read more, 3 and 4; a v1 file's
    # were read once more, 3, as the load told a model file of NNabla or CNTK from a Stadyn one
    # again after the search had)
    import builtins
    path = os.path.join(FIX, file_name)
    heads = []
    opened = builtins.open

    class Counted:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.f.__exit__(*exc)

        def read(self, n=-1):
            if n == 16:
                heads.append(n)
            return self.f.read(n)

        def __getattr__(self, name):
            return getattr(self.f, name)

    def counting(file, mode="r", *args, **kwargs):
        f = opened(file, mode, *args, **kwargs)
        return Counted(f) if os.fspath(file) == path and "b" in mode else f
    monkeypatch.setattr(builtins, "open", counting)
    assert C.load_model(path).arguments
    # (once for the untyped arguments' question, once as the reader tells the format)
    assert len(heads) == 2


def test_a_stadyn_files_first_bytes_read_once(tmp_path, monkeypatch):
    # load_model asked whether a Stadyn model file is NNabla's or CNTK's three times (its first
    # bytes and its zip listing read each time); once now, the loaded model unchanged
    import stadyn.serialize as serialize
    from stadyn.serialize import _legacy_load
    s = C.sequence.input_variable(2, name="s", sequence_axis=C.Axis("mine"))
    # (pow on a sequence: a Stadyn model file; a named axis alone is written as CNTK's file now)
    z = C.tanh(C.sequence.reduce_sum(C.pow(s, C.constant(2.0))))
    with pytest.warns(UserWarning, match="Stadyn model file"):
        z.save(str(tmp_path / "z.model"))
    heads = []
    real = _legacy_load.legacy_model_head

    def counted(path):
        heads.append(os.fspath(path))
        return real(path)
    monkeypatch.setattr(_legacy_load, "legacy_model_head", counted)
    monkeypatch.setattr(serialize, "legacy_model_head", counted)
    loaded = C.load_model(str(tmp_path / "z.model"))
    assert heads == [str(tmp_path / "z.model")]
    (arg,) = loaded.arguments
    assert (arg.name, arg.dynamic_axes[1].name) == ("s", "mine")
    np.testing.assert_allclose(loaded.eval({arg: [np.ones((3, 2), np.float32)]}),
                               np.tanh([[3.0, 3.0]]), rtol=1e-6)
