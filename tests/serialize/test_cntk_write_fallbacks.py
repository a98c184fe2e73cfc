"""CNTK v2 files Stadyn writes of graphs it wrote in its own format before (with a warning, so
CNTK 2.7 could not open the file), and CNTK 2.7's files of them, which Stadyn reads: the
functions of ``tests/fixtures/cntk_write_fallbacks/network.py`` (``reduce_log_sum_exp`` along
a kept axis, ``argmax`` / ``argmin`` over all axes, pooling with ``ceil_out_dim``,
``sequence.slice`` of one step, ...).

``tests/fixtures/cntk_write_fallbacks/``: CNTK 2.7's files of ``network.py``'s functions and
its outputs and gradients of them (``refs.npz``, ``make_refs.py``).
"""

from __future__ import annotations

import os
import subprocess
import warnings

import numpy as np
import pytest
import peers

import stadyn.compat.cntk as C
from stadyn.serialize._cntk_format import _decode_file
from fixture_network import fixture_network

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_write_fallbacks")
network = fixture_network("cntk_write_fallbacks")

REFS = dict(np.load(os.path.join(FIXTURES, "refs.npz")))
CNTK_PYTHON = peers.CNTK_PYTHON


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cntk_write_fallbacks")
    for name, f in network.build(C).items():
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)       # CNTK v2 files, not Stadyn's
            try:
                f.save(str(folder / (name + ".model")))
            except UserWarning as e:
                with open(folder / (name + ".fell_back"), "w") as out:
                    out.write(str(e))
    return str(folder)


# CNTK's per-axis lists of a pooling's or unpooling's geometry: one entry stands for every axis
# (C.pooling writes its defaults so, a layer one per axis); compared expanded
_PER_AXIS = ("autoPadding", "lowerPad", "upperPad")


def _attributes(f: dict) -> str:
    a = dict(f["attributes"])
    window = a.get("poolingWindowShape", a.get("unpoolingWindowShape"))
    for k in _PER_AXIS if window is not None else ():
        if len(a[k]) == 1:
            a[k] = type(a[k])(list(a[k]) * len(window))
    return repr(sorted(a.items()))


def _functions(path: str) -> list:
    with open(path, "rb") as f:
        top = _decode_file(path, f.read())
    return [(f["op"], f.get("name", ""), _attributes(f)) for f in top["primitive_functions"]]


@pytest.mark.parametrize("name", network.NAMES)
def test_the_file_is_cntks(written, name):
    fell_back = os.path.join(written, name + ".fell_back")
    assert not os.path.exists(fell_back), open(fell_back).read()
    with open(os.path.join(written, name + ".model"), "rb") as f:
        assert f.read(2) != b"PK"                                   # (not Stadyn's zip)
    assert _functions(os.path.join(written, name + ".model")) == \
        _functions(os.path.join(FIXTURES, name + ".model"))


def _check(got: dict, name: str, stadyns: bool = False) -> None:
    assert sorted(got) == sorted(k.split("/")[1] for k in REFS if k.startswith(name + "/"))
    for k, v in got.items():
        want = REFS[f"{name}/{k}"]
        if stadyns and name in network.DRAWS:     # (Stadyn's own draws: one-hot rows)
            rows = v.reshape(-1, 3)
            assert v.shape == want.shape and (rows.sum(axis=1) == 1).all() and \
                set(np.unique(rows)) == {0.0, 1.0}
            continue
        np.testing.assert_allclose(v, want, rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("name", network.NAMES)
def test_stadyn_reads_cntks_file_with_cntks_values(name):
    _check(network.evaluate(C, C.load_model(os.path.join(FIXTURES, name + ".model")), name),
           name, stadyns=True)


@pytest.mark.parametrize("name", network.NAMES)
def test_stadyn_reads_its_file_with_cntks_values(written, name):
    _check(network.evaluate(C, C.load_model(os.path.join(written, name + ".model")), name),
           name, stadyns=True)


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
def test_cntk_computes_on_stadyns_files_what_it_computes_on_its_own(written, tmp_path):
    out = str(tmp_path / "cntk.npz")
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
    subprocess.run([CNTK_PYTHON, "-W", "ignore", os.path.join(FIXTURES, "make_refs.py"),
                    written, out], check=True, env=env, cwd=FIXTURES, capture_output=True)
    got = dict(np.load(out))
    assert sorted(got) == sorted(REFS)
    for name in network.NAMES:
        _check({k.split("/")[1]: v for k, v in got.items() if k.startswith(name + "/")}, name)


def test_a_sequence_gather_graph_that_falls_back_saves_and_loads(tmp_path):
    # a graph with sequence.gather the writer refuses for another reason (pow of a base that
    # may be 0) is Stadyn's format, warned; the save crashed before, re-inferring the gather's
    # shape on the inputs' placeholder zeros (a condition taking no step)
    x = C.sequence.input_variable(3, name="x")
    c = C.sequence.input_variable(1, name="c")
    f = C.pow(C.sequence.last(C.sequence.gather(x, c)), C.constant(2.0))
    path = str(tmp_path / "gather.model")
    with pytest.warns(UserWarning, match=r"gather\.model: written as a Stadyn model file.*pow"):
        f.save(path)
    loaded = C.load_model(path)
    xs = [np.arange(12, dtype=np.float32).reshape(4, 3), np.ones((2, 3), np.float32) * -2]
    cs = [np.array([[1], [0], [1], [0]], np.float32), np.array([[1], [0]], np.float32)]
    got = loaded.eval({v: {"x": xs, "c": cs}[v.name] for v in loaded.arguments})
    np.testing.assert_array_equal(np.asarray(got).reshape(2, 3), [[36, 49, 64], [4, 4, 4]])


def test_a_float64_constant_in_a_float32_graph_is_refused(tmp_path):
    # only a float32 constant in a float64 graph is written without its cast (as CNTK 2.7 keeps
    # it: float64_constant); the other way CNTK 2.7 loads the file with a Double Constant and its
    # eval fails ("Constant::Clone: Cannot clone Constant ... 'Double' to DataType 'Float'", as
    # it fails on x + C.constant(float64 array) itself): refused, and the compat's save is
    # Stadyn's format, warned, with the values of x + c (Stadyn evaluates such a graph, the
    # original and the loaded copy alike, where CNTK 2.7 refuses both: not a file question)
    import stadyn as sd
    import stadyn.functions as F
    from stadyn.serialize import CntkWriteUnsupported, save_cntk_v2
    x = sd.Variable((1, 3))
    c = sd.Variable((3,), dtype="float64")
    c.d, c.need_grad = np.array([1.0, 2.0, 3.0]), False
    with pytest.raises(CntkWriteUnsupported, match="cast"):
        save_cntk_v2(str(tmp_path / "native.model"), [F.add2(x, F.cast(c, "float32"))], {"x": x})

    x = C.input_variable(3, name="x")
    f = x + C.constant(np.array([1.0, 2.0, 3.0]), dtype=np.float64)
    path = str(tmp_path / "c64.model")
    with pytest.warns(UserWarning, match=r"c64\.model: written as a Stadyn model file.*cast"):
        f.save(path)
    loaded = C.load_model(path)
    got = loaded.eval({loaded.arguments[0]: np.array([[0.5, -1.0, 2.0]], np.float32)})
    np.testing.assert_array_equal(np.asarray(got).reshape(3), [1.5, 1.0, 5.0])
