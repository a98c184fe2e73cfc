"""CNTK 2.7 model files Stadyn read otherwise than CNTK 2.7 does.

``tests/fixtures/cntk_files_16/`` holds the files and what CNTK 2.7 does with them, written by
the real CNTK 2.7 with the ``make_*.py`` scripts there (their docstrings give the command).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
import peers

import stadyn as sd
import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_files_16")
CNTK_PYTHON = peers.CNTK_PYTHON

with open(os.path.join(FIXTURES, "weighted_logistic.json")) as _f:
    LOGISTIC = json.load(_f)
# the shapes make_weighted_logistic.py gives each case: (output and target, weight)
_SHAPES = {"logistic_o3_wconst3": ((3,), (3,)), "logistic_o3_w3": ((3,), (3,)),
           "logistic_o1_wconst3": ((1,), (3,)), "logistic_o1_w1": ((1,), (1,)),
           "logistic_o3_w1": ((3,), (1,))}


def _logistic_feed(name):
    out_shape, weight_shape = _SHAPES[name]
    return {"x": np.full((2,) + out_shape, 0.3, np.float32),
            "t": np.ones((2,) + out_shape, np.float32),
            "w": np.array([1.0, 3.0], np.float32).reshape((2,) + (1,) * len(weight_shape))
            * np.ones((2,) + weight_shape, np.float32)}


@pytest.mark.parametrize("name", sorted(LOGISTIC))
def test_a_weighted_logistic_file_runs_or_is_refused_as_cntk(name):
    # CNTK 2.7 loads each file; evaluating it, it refuses a weight of another sample size than
    # the target's (its validation), a constant weight (no batch axis) and more than one value
    # per sample, in the words kept in weighted_logistic.json. Before, Stadyn evaluated all
    # five (7.22 for a (3,) constant weight).
    want = LOGISTIC[name]
    path = os.path.join(FIXTURES, name + ".model")
    data = _logistic_feed(name)
    if "value" in want:
        m = C.load_model(path)
        got = m.eval({a: data[a.name] for a in m.arguments})
        np.testing.assert_allclose(float(got), want["value"], rtol=1e-6)
        return
    kind, words = want["error"].split(": ", 1)
    words = re.sub(r"^Node '\w+' \(LearnableParameter operation\): ", "", words)
    # CNTK 2.7 loads the file (its arguments: x, t and an input weight w, as CNTK 2.7's
    # load_model(path).arguments lists them); evaluating it raises
    m = C.load_model(path)
    assert sorted(a.name for a in m.arguments) == (["t", "x"] if "wconst" in name
                                                   else ["t", "w", "x"])
    error = {"RuntimeError": RuntimeError, "ValueError": ValueError}[kind]
    for _ in range(2):                  # (every run, not the first alone)
        with pytest.raises(error, match=re.escape(words)):
            m.eval({a: data[a.name] for a in m.arguments})


@pytest.mark.parametrize("case", ["one", "two"])
def test_a_weighted_logistic_file_of_sequences_computes_as_cntk(case):
    # tests/fixtures/cntk_files_16/logistic_seq_w1.model (make_sequence_logistic.py): output,
    # target and weight sequences of one value a step; CNTK 2.7's N counts the minibatch's
    # columns, the gap of the shorter sequence's stream too ("two": 6, not 5).  Before, Stadyn
    # refused the file at load_model ("on a sequence")
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "make_sequence_logistic", os.path.join(FIXTURES, "make_sequence_logistic.py"))
    writer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(writer)
    with open(os.path.join(FIXTURES, "sequence_logistic.json")) as f:
        want = json.load(f)[case]
    m = C.load_model(os.path.join(FIXTURES, "logistic_seq_w1.model"))
    args = {a.name: a for a in m.arguments}
    got = m.eval({args[k]: writer.sequences(v) for k, v in writer.FEEDS[case].items()})
    np.testing.assert_allclose(float(np.asarray(got)), want, rtol=1e-6)



with open(os.path.join(FIXTURES, "sequence_logistic_refused.json")) as _f:
    SEQUENCE_LOGISTIC_REFUSED = json.load(_f)


@pytest.mark.parametrize("name", sorted(SEQUENCE_LOGISTIC_REFUSED))
def test_a_weighted_logistic_file_of_sequences_cntk_refuses_is_refused_when_run(name):
    # make_sequence_logistic_refused.py: output and target sequences of three values a step, a
    # weight of one value a step (not the target's size) or of three (more than one a sample);
    # CNTK 2.7 loads each file and refuses it when it evaluates it, in the words of
    # sequence_logistic_refused.json. Before, a file with sequence inputs was built by the
    # sequence path, which dropped the refusals: eval ran the stand-in (7.22)
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "make_sequence_logistic_refused",
        os.path.join(FIXTURES, "make_sequence_logistic_refused.py"))
    writer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(writer)
    kind, words = SEQUENCE_LOGISTIC_REFUSED[name]["error"].split(": ", 1)
    m = C.load_model(os.path.join(FIXTURES, name + ".model"))
    assert sorted(a.name for a in m.arguments) == ["t", "w", "x"]
    data = writer.feed(writer.CASES[name])
    error = {"RuntimeError": RuntimeError, "ValueError": ValueError}[kind]
    for _ in range(2):                  # (every run, not the first alone)
        with pytest.raises(error, match=re.escape(words)):
            m.eval({a: data[a.name] for a in m.arguments})

SOFTMAX = dict(np.load(os.path.join(FIXTURES, "sequence_softmax.npz")))
# the files make_sequence_softmax.py writes: (the steps' sample shape, the function's name)
_SOFTMAX_CASES = {"sequence_softmax": ((3,), ""), "sequence_softmax_named": ((2, 3), "sm")}


def _tree(path: str) -> tuple:
    """A CNTK v2 file's graph from its root, without uids (the files number them apart):
    each function as (op, block op name, name, attributes, its inputs, a block's body), a
    leaf as (kind, name, shape, dynamic axes) -- a placeholder without its name (CNTK names a
    block's placeholder after its argument, the writer does not)."""
    from stadyn.serialize._cntk_format import _decode_file
    with open(path, "rb") as f:
        top = _decode_file(path, f.read())
    functions = {f["uid"]: f for f in top["primitive_functions"]}
    leaves = {v["uid"]: v for v in top["inputs"]}

    def node(ref: str) -> tuple:
        uid = re.sub(r"_Output_\d+$", "", ref)
        if uid not in functions:
            v = leaves[ref]
            return (v.get("kind"), v.get("name", "") if v.get("kind") != 4 else "",
                    tuple(v.get("shape")), repr(v.get("dynamic_axis")))
        f = functions[uid]
        body = f.get("block_function_composite")
        return (f["op"], f.get("block_function_op_name", ""), f.get("name", ""),
                repr(sorted(f["attributes"].items())), tuple(node(i) for i in f["inputs"]),
                node(body["root"]) if body else None)
    return node(top["root"])


def _softmax_data(case):
    return [SOFTMAX[f"{case}/x/{k}"] for k in range(2)]


@pytest.mark.parametrize("case", sorted(_SOFTMAX_CASES))
def test_sequence_softmax_is_written_as_cntks_file(case, tmp_path):
    # CNTK 2.7 writes sequence.softmax as its Sequence::Softmax block (a max and a sum over
    # the steps, each a Sequence::ReduceElements block taken back to the steps by a
    # Sequence::BroadcastAs block, Exp of the difference, an ElementDivide block); before,
    # Stadyn wrote its own format with a warning ("no CNTK v2 form for Sequence::Softmax").
    shape, name = _SOFTMAX_CASES[case]
    x = C.sequence.input_variable(shape, name="x")
    path = str(tmp_path / "ours.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        C.sequence.softmax(x, name=name).save(path)
    assert _tree(path) == _tree(os.path.join(FIXTURES, case + ".model"))
    for source in (path, os.path.join(FIXTURES, case + ".model")):
        m = C.load_model(source)
        got = m.eval({m.arguments[0]: _softmax_data(case)})
        for k, o in enumerate(got):
            np.testing.assert_allclose(o, SOFTMAX[f"{case}/out/{k}"], rtol=1e-6, atol=1e-7)


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
def test_cntk_27_reads_stadyns_sequence_softmax_file(tmp_path):
    case = "sequence_softmax_named"
    shape, name = _SOFTMAX_CASES[case]
    x = C.sequence.input_variable(shape, name="x")
    path = str(tmp_path / "ours.model")
    C.sequence.softmax(x, name=name).save(path)
    script = ("import sys, numpy as np, cntk as C\n"
              f"z = C.load_model({path!r})\n"
              f"d = np.load({os.path.join(FIXTURES, 'sequence_softmax.npz')!r})\n"
              f"out = z.eval({{z.arguments[0]: [d['{case}/x/0'], d['{case}/x/1']]}})\n"
              "print(z.name, max(float(np.abs(o - d['%s/out/%d' % "
              f"('{case}', k)]).max()) for k, o in enumerate(out)))\n")
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
    done = subprocess.run([CNTK_PYTHON, "-W", "ignore", "-c", script], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-2:] == ["sm", "0.0"]


# -- CNTK v1 files (save_as_legacy_model) of recurrences: v1_models.py, make_v1_models.py -----
sys.path.insert(0, FIXTURES)
import v1_models as V1  # noqa: E402

V1_OWN = dict(np.load(os.path.join(FIXTURES, "v1_cntk_own.npz")))
V1_READ = dict(np.load(os.path.join(FIXTURES, "v1_cntk_read.npz")))


def _v1_run(f, kind):
    out = f.eval({f.arguments[0]: V1.inputs(np, kind)})
    return np.concatenate(out) if isinstance(out, list) else np.asarray(out)


def _v1_nodes(path):
    """A decoded v1 file's nodes and root groups, as the file layer writes them."""
    from stadyn.serialize._cntk_v1_format import read_cntk_v1
    from stadyn.serialize._cntk_v1_write import V1Node
    model = read_cntk_v1(path)
    net = model.networks["main"]
    nodes = []
    for name, v in net.variables.items():
        if v.kind == "parameter":
            nodes.append(V1Node(name, "LearnableParameter", v.dtype, {
                "learning_rate_multiplier": v.meta["learning_rate_multiplier"],
                "shape": v.shape, "value": model.parameters[name].value}))
        else:
            nodes.append(V1Node(name, "InputValue", v.dtype, {
                "shape": v.shape, "dynamic_axis": v.meta.get("dynamic_axis"),
                "learning_rate_multiplier": v.meta["learning_rate_multiplier"]}))
    nodes += [V1Node(f.name, f.type, f.meta["precision"], f.attrs, f.inputs)
              for f in net.functions]
    return nodes, net.attrs["groups"]


def _v1_shown(path):
    """Node for node, a v1 file but for the uids: (type, payload, input count) of each node,
    (kind, shape, dynamic axis) of each leaf, the root groups' sizes."""
    from stadyn.serialize._cntk_v1_format import read_cntk_v1
    net = read_cntk_v1(path).networks["main"]
    fs = sorted((f.type, sorted((k, str(v)) for k, v in f.attrs.items()), len(f.inputs))
                for f in net.functions)
    vs = sorted((v.kind, v.shape, str(v.meta.get("dynamic_axis")))
                for v in net.variables.values())
    return fs, vs, {k: len(v) for k, v in net.attrs["groups"].items()}


@pytest.mark.parametrize("kind", V1.KINDS + V1.CNTK_ONLY)
def test_cntks_v1_file_is_read_to_cntks_outputs_and_written_back_byte_for_byte(kind):
    # sequence.last's Where (its axis' name as payload), PackedIndex and GatherPacked: before,
    # "node '...Where...' has type 'Where', which this reader does not know"; a transposed
    # convolution's output_shape: before, (7, 7) where CNTK gives the file's (8, 8); an input
    # on a sequence axis of the program's own (C.Axis("words"), the v1 file's dynamic axis
    # "words"): before, read as the batch axis ("PastValue ...: input 0 (1, 2) is not a
    # sequence")
    from stadyn.serialize._cntk_v1_write import cntk_v1_file_bytes
    path = os.path.join(FIXTURES, f"cntk_{kind}.dnn")
    with open(path, "rb") as f:
        assert cntk_v1_file_bytes(*_v1_nodes(path)) == f.read()
    np.testing.assert_allclose(_v1_run(C.load_model(path), kind), V1_OWN[kind], rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("kind", V1.KINDS)
def test_models_saved_as_v1_files_as_cntk_writes_them(kind, tmp_path):
    # CNTK 2.7 writes sequence.last(Recurrence(LSTM)), a Recurrence with an initial state and a
    # splice of a forward and a backward Recurrence as v1 files; Stadyn refused the first
    # ("a sequence op's shape is not known: ReconcileDynamicAxis...") and the last (no v2 form
    # for concatenate on a sequence), and transposed convolutions ("no CNTK v1 form for
    # Convolution: a transposed convolution"). Its file is CNTK's node for node but for the uids, is
    # the committed stadyn_<kind>.dnn, which CNTK 2.7 computes v1_cntk_read.npz from (the
    # model's own outputs), and loads back to them.
    z = V1.build(C, kind)
    V1.set_parameters(np, z)
    path = str(tmp_path / f"{kind}.dnn")
    C.debugging.save_as_legacy_model(z, path)
    assert _v1_shown(path) == _v1_shown(os.path.join(FIXTURES, f"cntk_{kind}.dnn"))
    with open(path, "rb") as f, open(os.path.join(FIXTURES, f"stadyn_{kind}.dnn"), "rb") as g:
        assert f.read() == g.read()
    np.testing.assert_allclose(_v1_run(z, kind), V1_READ[kind], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_v1_run(C.load_model(path), kind), V1_READ[kind], rtol=1e-5,
                               atol=1e-6)


def test_a_grouped_convolution_is_refused_for_a_v1_file_as_cntk_cannot_load_it(tmp_path):
    # v1's ConvolutionNode keeps no groups: CNTK 2.7 writes the node without them and cannot
    # run its own file (v1_refused.json: "Mismatching outputShape and mapCount"); Stadyn
    # refuses to write it, in those words (before: "a grouped or sequential convolution")
    from stadyn.serialize import CntkWriteUnsupported
    with open(os.path.join(FIXTURES, "v1_refused.json")) as f:
        words = json.load(f)["group"].split(": ", 1)[1]
    z = V1.build(C, "group")
    path = tmp_path / "group.dnn"
    with pytest.raises(CntkWriteUnsupported, match=r"^no CNTK v1 form for Convolution: a "
                                                   r"grouped convolution .*" + re.escape(words)):
        C.debugging.save_as_legacy_model(z, str(path))
    assert not path.exists()


def test_a_v1_files_input_on_a_named_sequence_axis_is_on_that_axis():
    # CNTK 2.7 shows the loaded argument on the axis the file names
    f = C.load_model(os.path.join(FIXTURES, "cntk_named_axis.dnn"))
    assert [a.name for a in f.arguments[0].dynamic_axes] == ["defaultBatchAxis", "words"]


def test_a_weighted_logistic_file_cntk_refuses_when_run_is_refused_by_load_cntk():
    # stadyn.load / load_cntk give a Network with no runs of CNTK's to raise in: the file is
    # refused when loaded, in CNTK's words, rather than run with a stand-in
    from stadyn.serialize import load_cntk
    from stadyn.serialize._legacy_import import ModelRefusedAtRunError
    path = os.path.join(FIXTURES, "logistic_o3_w3.model")
    for load in (load_cntk, sd.load):
        with pytest.raises(ModelRefusedAtRunError, match="The input matrix dimensions do not"):
            load(path)
