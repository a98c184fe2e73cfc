"""NNabla ``.nnp`` files op by op: every op the NNabla front end offers has an ``.nnp`` rule
(both directions) or a stated reason, and each case of ``nnp_op_cases.py`` crosses between
Stadyn and the real NNabla 1.39 both ways.

* NNabla -> Stadyn: ``nnabla_files/ops.nnp`` was written by NNabla 1.39
  (``make_nnp_op_refs.py``) with NNabla's outputs in ``ops_reference.npz``; Stadyn loads each
  network and must compute those outputs.
* Stadyn -> NNabla: Stadyn builds the same case, must compute NNabla's outputs, and must write
  the functions NNabla wrote (type and ``<type>_param`` fields); where NNabla 1.39's venv is
  present, NNabla loads Stadyn's file with ``NnpLoader`` and runs it to the same outputs
  (``nnabla_run_nnp_ops.py``, one process for every case).
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
import peers

import stadyn as sd
import stadyn.functions as F
from stadyn.ops import CATALOG
from stadyn.serialize import ExportError, NnpWriter, Unmapped, read_legacy_model, rules_for
from stadyn.serialize._nnp_export import nnp_export_rule

from nnp_op_cases import CASES, RANDOM

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "nnabla_files")
OPS_NNP = os.path.join(FILES, "ops.nnp")
REF = dict(np.load(os.path.join(FILES, "ops_reference.npz")))
NNABLA = peers.NNABLA_PYTHON
needs_nnabla = pytest.mark.skipif(
    not os.path.exists(NNABLA),
    reason=f"the real NNabla 1.39 venv is not here ({NNABLA}; set STADYN_NNABLA_PYTHON)")

# The ops the NNabla front end offers (what ``stadyn.compat.nnabla.functions`` lists: not
# CNTK's ops, not the sequence-axis ops, the debugging probe or the parameter writer).
OFFERED = sorted(n for n, s in CATALOG.items()
                 if not n.startswith("cntk_") and s.offered_by("nnabla")
                 and s.category not in ("sequence", "debug", "parameter"))

# Ops with no .nnp export rule, each declared ``nnp_export=Unmapped(reason)`` beside its other
# rules.  A new entry here is a decision with its reason, not a default.
EXEMPT = {
    "unique",                        # NNabla 1.39 runs Unique in auto_forward mode only
}


# The cases Stadyn writes too (the others are NNabla functions Stadyn reads as compositions)
WRITTEN = sorted(n for n, case in CASES.items() if case[0] is not None)


def _tolerance(name):
    return {"rtol": 1e-4, "atol": 1e-5}


@pytest.mark.parametrize("name", OFFERED)
def test_every_op_nnabla_offers_has_an_nnp_rule_or_a_reason(name):
    rules = rules_for(CATALOG[name])
    assert rules is not None, f"{name}: no rules registered"
    export = nnp_export_rule(CATALOG[name])
    if name in EXEMPT:
        assert export is None and isinstance(rules.nnp_export, Unmapped), (
            f"{name} is listed as exempt: declare nnp_export=Unmapped('why') or drop it from "
            "EXEMPT")
        assert rules.nnp_export.reason
    else:
        assert callable(export), (f"{name}: no nnp_export rule; add one (or nnp_import="
                                  "nnabla(...)) in stadyn/serialize/op_rules/, or declare "
                                  "nnp_export=Unmapped('why') and list it in EXEMPT")
    assert isinstance(rules.nnp_import, (dict, Unmapped)), (
        f"{name}: no nnp_import rule and no Unmapped reason")


def test_the_exempt_ops_are_offered_ops():
    assert EXEMPT <= set(OFFERED)


def _inputs(name):
    k, out = 0, {}
    while f"{name}/x{k}" in REF:
        out[f"x{k}"] = REF[f"{name}/x{k}"]
        k += 1
    return out


def _outputs(name):
    k, out = 0, {}
    while f"{name}/y{k}" in REF:
        out[f"y{k}"] = REF[f"{name}/y{k}"]
        k += 1
    return out


def _batch(name):
    """The batch size NNabla was told (the first input's leading size, as
    ``make_nnp_op_refs.py`` saves it): the inputs of that leading size are batched."""
    x0 = _inputs(name).get("x0")
    return x0.shape[0] if x0 is not None and x0.ndim else 1


def _stadyn_case(name):
    fname, inputs, kwargs = CASES[name][:3]
    xs = {k: sd.Variable.from_numpy_array(v) for k, v in _inputs(name).items()}
    given = iter(xs.values())
    args = [None if kind == "none" else next(given) for _, kind in inputs]
    ys = getattr(F, fname)(*args, **kwargs)
    ys = list(ys) if isinstance(ys, (tuple, list)) else [ys]
    sd.forward_all(ys)
    return xs, {f"y{k}": y for k, y in enumerate(ys)}


def _close(name, got, want):
    assert sorted(got) == sorted(want), name
    if name in RANDOM:     # each framework draws with its own generator: shapes, finite values
        for k in want:
            assert np.shape(got[k]) == np.shape(want[k]), (name, k)
            assert np.isfinite(np.asarray(got[k], dtype=np.float64)).all(), (name, k)
        return
    for k in want:
        np.testing.assert_allclose(np.asarray(got[k], dtype=np.float64),
                                   np.asarray(want[k], dtype=np.float64),
                                   err_msg=f"{name}: {k}", **_tolerance(name))


def _fields(attrs):
    """``<type>_param`` fields as proto3 holds them: zeros absent, repeated fields as lists."""
    out = {}
    for k, v in attrs.items():
        if isinstance(v, tuple):
            v = list(v)
        if v in (0, 0.0, False, "", [], {}) and not isinstance(v, list) or v == []:
            continue
        out[k] = v
    return out


def _same_fields(a, b):
    if sorted(a) != sorted(b):
        return False
    for k in a:
        x, y = a[k], b[k]
        x = x if isinstance(x, list) else [x]
        y = y if isinstance(y, list) else [y]
        if len(x) != len(y):
            return False
        for u, v in zip(x, y):
            if isinstance(u, str) or isinstance(v, str):
                if u != v:
                    return False
            elif not np.isclose(float(u), float(v), rtol=1e-6):
                return False
    return True


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_op_nnabla_wrote_loads_and_runs_in_stadyn(name):
    assert f"{name}/y0" in REF, f"{name}: no reference (run make_nnp_op_refs.py)"
    net = sd.load_nnp(OPS_NNP, network=name)
    _close(name, dict(net(**_inputs(name))), _outputs(name))


@pytest.mark.parametrize("name", WRITTEN)
def test_stadyn_computes_and_writes_what_nnabla_did(name, tmp_path):
    xs, ys = _stadyn_case(name)
    _close(name, {k: y.d for k, y in ys.items()}, _outputs(name))
    path = tmp_path / "op.nnp"
    # at a fixed batch size, as make_nnp_op_refs.py saved NNabla's (variable_batch_size=False:
    # else both write the batch size of a Reshape or Broadcast as -1)
    w = NnpWriter()
    w.add_network(name, ys, xs or None, batch_size=_batch(name), variable_batch_size=False)
    w.write(path)
    mine = read_legacy_model(path).networks[name].functions
    theirs = read_legacy_model(OPS_NNP).networks[name].functions
    assert [f.type for f in mine] == [f.type for f in theirs]
    for a, b in zip(mine, theirs):
        assert _same_fields(_fields(a.attrs), _fields(b.attrs)), (a.type, a.attrs, b.attrs)


@pytest.fixture(scope="module")
def nnabla_ran_stadyns_file(tmp_path_factory):
    """NNabla 1.39's outputs for one file Stadyn wrote with every case as a network."""
    tmp = tmp_path_factory.mktemp("nnp_ops")
    w = NnpWriter()
    feeds, refused = {}, {}
    for name in WRITTEN:
        xs, ys = _stadyn_case(name)
        try:
            w.add_network(name, ys, xs or None, batch_size=_batch(name))
        except ExportError as exc:       # the case's own test says so
            refused[f"{name}/error"] = np.array(f"Stadyn cannot write it: {exc}")
            continue
        feeds.update({f"{name}/{k}": v for k, v in _inputs(name).items()})
    w.write(tmp / "ops.nnp")
    np.savez(tmp / "in.npz", **feeds)
    ran = {}
    for which, path in (("stadyn", tmp / "ops.nnp"), ("nnabla", OPS_NNP)):
        proc = subprocess.run([NNABLA, os.path.join(HERE, "nnabla_run_nnp_ops.py"), str(path),
                               str(tmp / "in.npz"), str(tmp / f"{which}.npz")],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        ran[which] = dict(np.load(tmp / f"{which}.npz"))
    ran["stadyn"].update(refused)
    return ran


# Ops whose network NNabla 1.39 loads (NnpLoader) and runs to other values than it computed
# when it built the op itself -- from its own file as from Stadyn's: ``nonzero`` gives an empty
# result (its output shape is fixed when the network is set up), ``onnx_non_max_suppression``
# other boxes.  For these Stadyn's file is held to what NNabla computes from NNabla's file.
NNABLA_LOADER_DIFFERS = {"nonzero", "onnx_non_max_suppression"}


def _of(results, name):
    return {k.split("/", 1)[1]: v for k, v in results.items() if k.split("/", 1)[0] == name}


@needs_nnabla
@pytest.mark.parametrize("name", WRITTEN)
def test_an_op_stadyn_wrote_runs_in_nnabla(name, nnabla_ran_stadyns_file):
    got = _of(nnabla_ran_stadyns_file["stadyn"], name)
    assert "error" not in got, f"{name}: NNabla 1.39 says {got.get('error')}"
    own = _of(nnabla_ran_stadyns_file["nnabla"], name)
    if name in NNABLA_LOADER_DIFFERS:
        with pytest.raises(AssertionError):
            _close(name, own, _outputs(name))        # still so in NNabla 1.39
        _close(name, got, own)
    else:
        _close(name, got, _outputs(name))


def _one_sample_more(name, declared):
    """The case's inputs, each the file declares with the batch axis (``-1``) with its first
    sample appended."""
    return {k: np.concatenate([v, v[:1]]) if tuple(declared[k].shape[:1]) == (-1,) else v
            for k, v in _inputs(name).items()}


@pytest.fixture(scope="module")
def ran_at_another_batch(tmp_path_factory):
    """Every case Stadyn writes (in one file, at the batch size of NNabla's reference) run one
    sample larger: by NNabla 1.39 (``NnpLoader``) and by ``stadyn.load_nnp``, each input the
    file declares with the batch axis (``-1``) getting its first sample appended."""
    tmp = tmp_path_factory.mktemp("nnp_ops_batch")
    w, written = NnpWriter(), []
    for name in WRITTEN:
        if name in RANDOM:
            continue
        xs, ys = _stadyn_case(name)
        try:
            w.add_network(name, ys, xs or None, batch_size=_batch(name))
        except ExportError:              # the case's own test says so
            continue
        written.append(name)
    path = tmp / "ops.nnp"
    w.write(path)
    model = read_legacy_model(path)
    feeds = {}
    for name in written:
        feeds.update((f"{name}/{k}", v) for k, v in
                     _one_sample_more(name, model.networks[name].variables).items())
    np.savez(tmp / "in.npz", **feeds)
    proc = subprocess.run([NNABLA, os.path.join(HERE, "nnabla_run_nnp_ops.py"), str(path),
                           str(tmp / "in.npz"), str(tmp / "out.npz")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return path, feeds, dict(np.load(tmp / "out.npz")), written


# Cases whose inputs' leading size is the batch size by coincidence: no batch to change
# (the file declares them with -1 as NNabla's save would, but another size means nothing).
NO_BATCH = {
    "depthwise_deconvolution": "the bias (2,) has the batch's size; it is per channel",
    "scatter_nd": "the data's first axis indexes the output (ScatterNd's shape), not samples",
}


@needs_nnabla
@pytest.mark.parametrize("name", [n for n in WRITTEN if n not in RANDOM])
def test_an_op_stadyn_wrote_runs_in_nnabla_and_stadyn_at_another_batch_size(
        name, ran_at_another_batch):
    """A file saved at one batch size runs at another in NNabla 1.39 (before, a Reshape or
    Broadcast kept the saved size and NNabla failed in reshape.cpp), and Stadyn computes
    there what NNabla does."""
    if name in NO_BATCH:
        pytest.skip(f"{name}: {NO_BATCH[name]}")
    path, feeds, ran, written = ran_at_another_batch
    if name not in written:
        pytest.skip(f"{name}: Stadyn does not write it (its own test says why)")
    got = _of(ran, name)
    assert "error" not in got, f"{name}: NNabla 1.39 says {got.get('error')}"
    mine = _of(feeds, name)
    first = mine.get("x0")
    batch = first.shape[0] if first is not None and first.ndim else 1
    out = sd.load_nnp(path, network=name, batch_size=batch)(**mine)
    if name in NNABLA_LOADER_DIFFERS:            # NNabla's loader differs from NNabla itself
        assert sorted(out) == sorted(got)
        return
    _close(name, dict(out), got)
    if name in NUMPY:                            # both read one file: NumPy says what is right
        _close(name, got, {"y0": NUMPY[name](*mine.values())})


# NumPy's values of some cases at any batch size: what a file Stadyn wrote must compute one
# sample larger than it was saved (NNabla and Stadyn agreeing is not enough: they read the same
# file).  The functions take the case's inputs x0, x1, ... in order.
NUMPY = {
    "sin": np.sin,
    "greater": lambda a, b: a > b,
    "less": lambda a, b: a < b,                            # b (1, 3) has no batch axis
    "where": lambda c, a, b: np.where(c != 0, a, b),
    "bc_add2": lambda a, b: a + b,
    "cumsum": lambda x: np.cumsum(x, axis=1) - x,          # exclusive
    "cumprod": lambda x: np.flip(np.cumprod(np.flip(x, 2), axis=2), 2),   # reverse
    "flip": lambda x: x[::-1, :, ::-1],                    # the batch axis reversed too
    "tile": lambda x: np.tile(x, (2, 1, 2)),               # (2, B, 6): the batch second
    "sort": lambda x: -np.sort(-x, axis=1),
    "clip_by_norm": lambda x: x * 0.5 / np.maximum(
        np.sqrt((x ** 2).sum(axis=1, keepdims=True)), 0.5),
    "dot": np.dot, "dot_vector": np.dot, "dot_nd": np.dot,
    "matrix_diag": lambda x: x[:, :, None] * np.eye(x.shape[1]),
    "norm": lambda x: (np.abs(x) ** 3).sum(axis=(1, 2), keepdims=True) ** (1 / 3),
    "flatten": lambda x: x.reshape(len(x), -1),
    "sum_pooling": lambda x: x.reshape(len(x), 3, 2, 2, 2, 2).sum(axis=(3, 5)),
    "gather": lambda x, i: np.take(x, i.astype(int), axis=0),   # (4, 3) batched, i is not
    "kl_multinomial": lambda p, q: (p * (np.log(p) - np.log(q))).sum(axis=1, keepdims=True),
    "prelu": lambda x, w: np.where(x > 0, x, w[:, None] * x),
    "mean_subtraction": lambda x, m, t: x - m,
}


@pytest.mark.parametrize("name", sorted(NUMPY))
def test_numpys_values_are_nnablas_at_the_saved_batch_size(name):
    """The NumPy expectations below, checked against what NNabla 1.39 computed."""
    _close(name, {"y0": NUMPY[name](*_inputs(name).values())}, _outputs(name))


@pytest.mark.parametrize("name", sorted(NUMPY))
def test_an_op_stadyn_wrote_computes_numpys_values_at_another_batch_size(name, tmp_path):
    xs, ys = _stadyn_case(name)
    path = tmp_path / "op.nnp"
    w = NnpWriter()
    w.add_network(name, ys, xs or None, batch_size=_batch(name))
    w.write(path)
    feeds = _one_sample_more(name, read_legacy_model(path).networks[name].variables)
    assert feeds["x0"].shape[0] == _batch(name) + 1, "the first input has no batch axis"
    out = sd.load_nnp(path, network=name, batch_size=_batch(name) + 1)(**feeds)
    _close(name, dict(out), {"y0": NUMPY[name](*feeds.values())})


SHAPES_NNP = os.path.join(FILES, "nnabla_shapes.nnp")
SHAPES_REF = np.load(os.path.join(FILES, "nnabla_shapes_reference.npz"))


@pytest.mark.parametrize("name", ["gap_2d", "gap_3d", "gap_4d", "kl_base1", "kl_base2"])
def test_nnabla_functions_shaped_otherwise_than_the_catalog_load_with_nnablas_shapes(name):
    """NNabla 1.39's GlobalAveragePooling is ``(N, C, 1, 1)`` for any input rank and its
    KLMultinomial ``p.shape[:base_axis] + (1,)``; each is concatenated with itself along its
    last axis in the file, so a catalog-shaped output would not even concatenate
    (fixture: make_nnp_nnabla_shapes.py)."""
    net = sd.load_nnp(SHAPES_NNP, network=name)
    feeds = {k.split("/")[1]: SHAPES_REF[k] for k in SHAPES_REF.files
             if k.startswith(name + "/x")}
    got = net(**feeds)["y"]
    expected = SHAPES_REF[name + "/y"]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def _catalog_shaped(name, xs):
    if name.startswith("gap"):
        return F.global_average_pooling(xs[0])
    return F.kl_multinomial(xs[0], xs[1], base_axis=int(name[-1]))


def _numpy_catalog_shaped(name, arrays):
    if name.startswith("gap"):
        x = arrays[0]
        return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True) if x.ndim > 2 else x
    p, q = arrays
    axes = tuple(range(int(name[-1]), p.ndim))
    return (p * (np.log(p) - np.log(q))).sum(axis=axes, keepdims=True)


@pytest.mark.parametrize("name", ["gap_2d", "gap_3d", "gap_4d", "kl_base1", "kl_base2"])
def test_a_catalog_shaped_global_average_pooling_or_kl_multinomial_is_written_with_a_reshape(
        name, tmp_path):
    """Stadyn's ops keep the input's rank; the ``.nnp`` holds NNabla's function and a Reshape
    to the catalog's shape where NNabla 1.39's differs, so Stadyn (and NNabla 1.39, where its
    venv is here) reading the file compute what Stadyn did (a NumPy reference)."""
    arrays = [SHAPES_REF[k] for k in sorted(SHAPES_REF.files) if k.startswith(name + "/x")]
    xs = [sd.Variable.from_numpy_array(a) for a in arrays]
    y = _catalog_shaped(name, xs)
    y.forward()
    expected = _numpy_catalog_shaped(name, arrays)
    assert y.shape == expected.shape
    path = tmp_path / "op.nnp"
    sd.save_nnp(path, {"y0": y}, {f"x{k}": x for k, x in enumerate(xs)}, network=name,
                batch_size=2)
    types = [f.type for f in read_legacy_model(path).networks[name].functions]
    nnabla_shape = SHAPES_REF[name + "/y"].shape[:-1] + (1,)
    assert types[1:] == (["Reshape"] if nnabla_shape != expected.shape else [])
    got = sd.load_nnp(path, network=name)(**{f"x{k}": a for k, a in enumerate(arrays)})["y0"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    if os.path.exists(NNABLA):
        np.savez(tmp_path / "in.npz", **{f"{name}/x{k}": a for k, a in enumerate(arrays)})
        proc = subprocess.run([NNABLA, os.path.join(HERE, "nnabla_run_nnp_ops.py"), str(path),
                               str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        ran = dict(np.load(tmp_path / "out.npz"))
        assert f"{name}/error" not in ran, ran.get(f"{name}/error")
        np.testing.assert_allclose(ran[f"{name}/y0"], expected, rtol=1e-5, atol=1e-6)
