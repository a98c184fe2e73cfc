"""Real ``cntk.exe`` (BrainScript) v1 model files loaded, saved again as CNTK v2 files and read
back, as CNTK 2.7 does (``C.load_model(dnn).save(path)``).

CNTK 2.7 writes a loaded cntk.exe file's criteria as its primitive functions --
``CrossEntropyWithSoftmax`` (op 35) and ``ClassificationError`` (36, ``topN`` a constant third
input) of ``(z, labels)``, ``SquaredError`` (34) of ``(labels, p)``, ``Logistic`` (48) of
``(p, labels)`` -- a v1 ``Sigmoid`` as ``Sigmoid`` (op 1), the ``Plus`` of ``Times``'s ``[n]``
and a ``[n x 1]`` bias with no reshape, convolutions over the input's sequence axis ``''``
step by step.  Before, Stadyn had no v2 form for the v1 reader's ``reshape_trailing`` (nor for
a convolution over a sequence), so ``Function.save`` wrote Stadyn's own format with a warning;
and it could not read CNTK 2.7's re-save ("CNTK functions no Stadyn op maps:
CrossEntropyWithSoftmax").

The expectations are CNTK 2.7's (``tests/fixtures/cntk_exe_resave/make_resave.py``: its
re-saves of MC.dnn and LR_reg.dnn, and every output of the five files on a seeded feed); the
cntk.exe files are read from a copy of CNTK (``real_v1_file``, conftest.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import warnings

import numpy as np
import pytest
import peers

from stadyn.serialize._cntk_format import is_cntk_v2_file

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "fixtures", "cntk_exe_resave")
VALUES = np.load(os.path.join(FIXTURE, "resave_outputs.npz"))
FILES = sorted({k.split("/")[0] for k in VALUES.files})
SAVED = ["ComputationNetwork__MC.dnn", "ComputationNetwork__LR_reg.dnn"]
CNTK_PYTHON = peers.CNTK_PYTHON
CNTK_LIBS = peers.CNTK_LIBS


def _load_graphs_module():
    spec = importlib.util.spec_from_file_location(
        "cntk_exe_resave_make_graphs", os.path.join(FIXTURE, "make_graphs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: a CNTK v2 file's graph without its uids (make_graphs.graph_of)
_graph = _load_graphs_module().graph_of
with open(os.path.join(FIXTURE, "resave_graphs.json")) as _f:
    CNTK_GRAPHS = json.load(_f)


def _evaluate(model, name: str) -> dict:
    """Each output of a loaded model on the fixture's feed (two sequences of one and two
    steps): a criterion one number, another output its steps concatenated."""
    feed = {a: [VALUES[f"{name}/x/{a.name}"][:1], VALUES[f"{name}/x/{a.name}"][1:]]
            for a in model.arguments}
    result = model.eval(feed, outputs=list(model.outputs))
    return {o.name: np.concatenate([np.ravel(s) for s in result[o]])
            if isinstance(result[o], list) else np.ravel(result[o]) for o in model.outputs}


def _check(got: dict, name: str) -> None:
    want = {k[len(name) + 1:]: VALUES[k] for k in VALUES.files
            if k.startswith(name + "/") and not k.startswith(name + "/x/")}
    assert sorted(got) == sorted(want), name
    for k, v in want.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-5, atol=1e-6, err_msg=f"{name}/{k}")


def _resaved(real_v1_file, name: str, folder) -> str:
    """Stadyn's re-save of a loaded cntk.exe file (a CNTK v2 file, no warning)."""
    import stadyn.compat.cntk as C
    model = C.load_model(real_v1_file(name))
    path = str(folder / f"{name}.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)       # (no fallback to Stadyn's format)
        model.save(path)
    with open(path, "rb") as f:
        assert is_cntk_v2_file(f.read()), path
    return path


@pytest.mark.parametrize("name", SAVED)
def test_cntk_exe_file_saved_again_as_cntk_writes_it(real_v1_file, tmp_path, name):
    """The functions (ops, names, inputs, attributes) and leaves (names, shapes, dynamic
    axes) of CNTK 2.7's re-save."""
    assert _graph(_resaved(real_v1_file, name, tmp_path)) == \
        _graph(os.path.join(FIXTURE, name + ".model"))


@pytest.mark.parametrize("name", FILES)
def test_cntk_exe_file_saved_again_reads_back_with_cntks_values(real_v1_file, tmp_path, name):
    """Stadyn's re-save, loaded back, evaluates as CNTK 2.7 evaluates the ``.dnn`` (ResNet20's
    convolutions and batch normalisations over the sequence axis, 01_OneHidden's top-5
    ClassificationError of a constant third input)."""
    import stadyn.compat.cntk as C
    _check(_evaluate(C.load_model(_resaved(real_v1_file, name, tmp_path)), name), name)


@pytest.mark.parametrize("name", SAVED)
def test_stadyn_reads_cntks_resave_of_a_cntk_exe_file(name):
    """CNTK 2.7's re-save (its primitive criteria over sequences, the v1 ``[n x 1]`` output
    against ``[n]`` labels): read, the same values as CNTK's."""
    import stadyn.compat.cntk as C
    _check(_evaluate(C.load_model(os.path.join(FIXTURE, name + ".model")), name), name)


_CNTK_EVAL = r"""
import json, sys
import numpy as np
import cntk as C
values = np.load(sys.argv[1])
out = {}
for name, path in json.loads(sys.argv[2]).items():
    m = C.load_model(path)
    feed = {a: [values[name + "/x/" + a.name][:1], values[name + "/x/" + a.name][1:]]
            for a in m.arguments}
    r = m.eval(feed, outputs=list(m.outputs))
    out[name] = {o.name: (np.concatenate([np.ravel(s) for s in r[o]]) if isinstance(r[o], list)
                          else np.ravel(r[o])).tolist() for o in m.outputs}
print(json.dumps(out))
"""


def _resaved_v1(real_v1_file, name: str, folder) -> str:
    """Stadyn's ``save_as_legacy_model`` of a loaded cntk.exe file (built on the v2 writer)."""
    import stadyn.compat.cntk as C
    path = str(folder / f"{name}.v1")
    C.debugging.save_as_legacy_model(C.load_model(real_v1_file(name)), path)
    return path


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
@pytest.mark.parametrize("kind", ["v2", "v1"])
def test_cntk_reads_stadyns_resaves_with_its_own_values(real_v1_file, tmp_path, kind):
    """CNTK 2.7 loads Stadyn's re-save of each file (``Function.save``; and
    ``save_as_legacy_model``, which raised ``CntkWriteUnsupported`` before) and evaluates it
    as it evaluates the ``.dnn``."""
    write = _resaved if kind == "v2" else _resaved_v1
    paths = {name: write(real_v1_file, name, tmp_path) for name in FILES}
    env = dict(os.environ, LD_LIBRARY_PATH=CNTK_LIBS)
    run = subprocess.run([CNTK_PYTHON, "-W", "ignore", "-c", _CNTK_EVAL,
                          os.path.join(FIXTURE, "resave_outputs.npz"), json.dumps(paths)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    for name in FILES:
        _check({k: np.asarray(v, np.float32) for k, v in got[name].items()}, name)


_CNTK_RESAVE = r"""
import json, sys
import cntk as C
for source, target in json.loads(sys.argv[1]):
    C.load_model(source).save(target)
"""


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
def test_stadyn_reads_cntks_resaves_of_every_cntk_exe_file(real_v1_file, tmp_path):
    """CNTK 2.7's re-saves of all five files (made here: three are 0.6-1.2 MB, not committed)
    read with CNTK's values: 01_OneHidden's top-5 ``ClassificationError`` of a constant third
    input, ResNet20's convolutions over the sequence axis."""
    import stadyn.compat.cntk as C
    pairs = [(real_v1_file(name), str(tmp_path / f"{name}.model")) for name in FILES]
    env = dict(os.environ, LD_LIBRARY_PATH=CNTK_LIBS)
    run = subprocess.run([CNTK_PYTHON, "-W", "ignore", "-c", _CNTK_RESAVE, json.dumps(pairs)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    for name, (_, path) in zip(FILES, pairs):
        _check(_evaluate(C.load_model(path), name), name)


@pytest.mark.parametrize("name", FILES)
def test_every_cntk_exe_file_saved_again_as_cntk_writes_it(real_v1_file, tmp_path, name):
    """The graph of CNTK 2.7's re-save of each file (``resave_graphs.json``): 01_OneHidden's
    BatchNormalization with ``useCuDNNEngine`` false (CNTK 2.7 validates the loaded network on
    the CPU, which sets the node's ``useCntkEngine``: TrainingNodes.h:2873-2892) and its
    parameters ``[200 x 1]``, as the v1 file holds them; ResNet20's convolutions with the v1
    node's strides and automatic padding over the channel axis too (``(2, 2, 32)``,
    ``[True, True, False]`` stored) and no ``groups`` nor ``sequential``, its Pooling window
    over three axes (``(8, 8, 1)``), its last ``Times``' ``inferInputRankToMap`` 0
    (BackCompat.cpp:284-458).  Before, Stadyn wrote ``useCuDNNEngine`` true, ``[200 x 1 x 1]``,
    strides ``(2, 2, 1)`` and explicit pads, a window ``(8, 8)`` and
    ``inferInputRankToMap`` -1."""
    assert _graph(_resaved(real_v1_file, name, tmp_path)) == CNTK_GRAPHS[name]


def _ops_and_attributes(path: str) -> list:
    """Each function of a CNTK v2 file as (op, its attributes), sorted."""
    return sorted((r[0], r[3]) for r in (eval(f) for f in _graph(path)["functions"]))


_LOADED_V2 = os.path.join(FIXTURE, "loaded_v2.model")


def test_a_loaded_cntk_v2_files_attributes_are_written_again(tmp_path):
    """A CNTK v2 file's BatchNormalization built with ``use_cntk_engine=True``
    (``make_loaded_v2.py``: ``useCuDNNEngine`` false), loaded and saved again, keeps the
    file's attributes, as CNTK 2.7's re-save (``loaded_v2.model.resaved``) does; Stadyn wrote
    ``useCuDNNEngine`` true, C.layers.BatchNormalization's default.  Read back, it computes
    CNTK 2.7's numbers."""
    import stadyn.compat.cntk as C
    path = str(tmp_path / "again.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)       # (no fallback to Stadyn's format)
        C.load_model(_LOADED_V2).save(path)
    assert _ops_and_attributes(path) == _ops_and_attributes(_LOADED_V2 + ".resaved")
    want = np.load(os.path.join(FIXTURE, "loaded_v2.npz"))
    again = C.load_model(path)
    got = again.eval({again.arguments[0]: want["x"]})
    np.testing.assert_allclose(np.asarray(got), want["y"], rtol=1e-5, atol=1e-6)


_CNTK_EVAL_ONE = r"""
import sys
import numpy as np
import cntk as C
m = C.load_model(sys.argv[1])
values = np.load(sys.argv[2])
np.testing.assert_allclose(m.eval({m.arguments[0]: values["x"]}), values["y"], rtol=1e-5,
                           atol=1e-6)
found = C.logging.graph.depth_first_search(
    m, lambda f: getattr(f, "op_name", "") == "BatchNormalization", depth=-1)
print(sorted({f.attributes.get("useCuDNNEngine") for f in found} - {None}))
"""


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
def test_cntk_reads_stadyns_resave_of_a_loaded_cntk_v2_file(tmp_path):
    """CNTK 2.7 loads Stadyn's re-save of ``loaded_v2.model``: its own numbers, and the
    BatchNormalization's ``useCuDNNEngine`` false as in the file it was loaded from."""
    import stadyn.compat.cntk as C
    path = str(tmp_path / "again.model")
    C.load_model(_LOADED_V2).save(path)
    env = dict(os.environ, LD_LIBRARY_PATH=CNTK_LIBS)
    run = subprocess.run([CNTK_PYTHON, "-W", "ignore", "-c", _CNTK_EVAL_ONE, path,
                          os.path.join(FIXTURE, "loaded_v2.npz")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "[False]"


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
@pytest.mark.parametrize("name", FILES)
def test_every_cntk_exe_file_saved_again_as_cntk_now_writes_it(real_v1_file, tmp_path, name):
    """The graph of CNTK 2.7's re-save of each file made here by CNTK 2.7 (the committed
    ``resave_graphs.json`` is this, made once)."""
    theirs = str(tmp_path / f"cntk_{name}.model")
    env = dict(os.environ, LD_LIBRARY_PATH=CNTK_LIBS)
    run = subprocess.run([CNTK_PYTHON, "-W", "ignore", "-c", _CNTK_RESAVE,
                          json.dumps([(real_v1_file(name), theirs)])],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert _graph(theirs) == CNTK_GRAPHS[name]
    assert _graph(_resaved(real_v1_file, name, tmp_path)) == _graph(theirs)


def test_logistic_keeps_a_small_probability_of_a_target_of_one():
    """CNTK's ``LogisticNode`` computes ``2 t p + (1 - t)``, then ``- p`` (TrainingNodes.h:
    2092-2107): ``p`` itself for a target of 1.  Stadyn computed ``((2 p - t) + 1) - p``,
    which loses a small ``p``'s digits in float32 (LR_reg.dnn's ``lr`` 11.507521 where CNTK
    2.7 gives 11.510118 on ``resave_outputs.npz``'s feed)."""
    import stadyn as sd
    from stadyn.cntk_semantics import logistic
    p = np.array([[1.003e-5], [0.25]], np.float32)
    t = np.array([[1.0], [0.0]], np.float32)
    with sd.auto_forward():
        got = logistic(sd.Variable.from_numpy_array(p), sd.Variable.from_numpy_array(t))
    want = -(np.log(np.float64(p[0, 0])) + np.log(1.0 - np.float64(p[1, 0])))
    assert float(got.d) == pytest.approx(want, rel=1e-6)


_CNTK_ATTRIBUTES = r"""
import json, sys
import cntk as C
m = C.load_model(sys.argv[1])
ops = ("Convolution", "Pooling", "BatchNormalization", "Times")
found = C.logging.graph.depth_first_search(m, lambda f: getattr(f, "op_name", "") in ops,
                                           depth=-1)
print(json.dumps(sorted([f.name, f.op_name, repr(sorted(f.attributes.items()))]
                        for f in found)))
"""


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
@pytest.mark.parametrize("name", ["Models__01_OneHidden.dnn",
                                  "Models__ResNet20_CIFAR10_DataAug.dnn"])
def test_a_loaded_cntk_exe_files_functions_show_cntks_attributes(real_v1_file, name):
    """``Function.attributes`` of a loaded cntk.exe file's ``Convolution``, ``Pooling``,
    ``BatchNormalization`` and ``Times``: CNTK 2.7's (BackCompat.cpp:284-458; ResNet20's
    strides ``(32, 2, 2)``, 01_OneHidden's ``useCuDNNEngine`` false), where Stadyn showed its
    own op's (``stride``, ``time_constant``...) before cntkwrite27."""
    import stadyn.compat.cntk as C
    env = dict(os.environ, LD_LIBRARY_PATH=CNTK_LIBS)
    run = subprocess.run([CNTK_PYTHON, "-W", "ignore", "-c", _CNTK_ATTRIBUTES,
                          real_v1_file(name)], capture_output=True, text=True, env=env,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    want = json.loads(run.stdout.strip().splitlines()[-1])
    m = C.load_model(real_v1_file(name))
    found = C.logging.graph.depth_first_search(
        m, lambda f: getattr(f, "op_name", "") in ("Convolution", "Pooling",
                                                   "BatchNormalization", "Times"), depth=-1)
    got = sorted([f.name, f.op_name, repr(sorted(f.attributes.items()))] for f in found)
    assert got == want
