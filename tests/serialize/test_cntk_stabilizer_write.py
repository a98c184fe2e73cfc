"""Self-stabilized models (``LSTM(n, enable_self_stabilization=True)``, ``Stabilizer()``)
written as CNTK v2 files (``tests/fixtures/cntk_stabilizer_write/``: CNTK 2.7's files of the
same models with the same parameters, and its outputs).

Before cntkwrite27 ``Function.save`` wrote Stadyn's format with a warning ("no CNTK v2 form
for softplus: the writer has no rule for this op"): the writer now writes ``softplus`` as CNTK
2.7's ``C.softplus`` computes it (its ``Softplus`` block, ``LogPlus(x, 0)``), and a recurrence
step's value computed outside the loop (the Stabilizer's ``softplus`` of its ``alpha``) is read
through a placeholder of the LSTM block, which Stadyn's reader requires (CNTK 2.7 also reads a
body referring to it directly).  CNTK 2.7 writes the softplus inside a ``Stabilizer`` block of
a ``softplus`` block of its own; Stadyn's file has the ``Softplus`` block and ``ElementTimes``
of its own, the values CNTK 2.7's.

Before mendD33 CNTK 2.7's own file of the models, loaded, was re-saved in Stadyn's format ("no
CNTK v2 form for maximum2"): the loaded ``Softplus`` block's ``LogPlus(x, 0)`` is computed by
log_add_exp's ops; the block is now shown as one ``Softplus`` op over its argument and written
by the rule of ``cntk:Softplus`` (the ``softplus`` block of steepness 4 around it as a layer).
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

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_stabilizer_write")
VALUES = np.load(os.path.join(FIXTURES, "values.npz"))
CNTK_PYTHON = peers.CNTK_PYTHON
CNTK_LIBS = peers.CNTK_LIBS


def _make():
    spec = importlib.util.spec_from_file_location(
        "cntk_stabilizer_write_make_models", os.path.join(FIXTURES, "make_models.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _feed(kind: str):
    if kind == "lstm":
        return [VALUES[f"lstm/x/{s}"] for s in range(2)]
    return VALUES[kind + "/x"]


def _check(kind: str, got) -> None:
    if kind == "lstm":
        for s in range(2):
            np.testing.assert_allclose(np.asarray(got[s]), VALUES[f"lstm/y/{s}"], rtol=1e-5,
                                       atol=1e-6)
    else:
        np.testing.assert_allclose(np.asarray(got), VALUES[kind + "/y"], rtol=1e-5, atol=1e-6)


def _resaved(kind: str, folder) -> str:
    """CNTK 2.7's file of the model, loaded and saved by Stadyn (as a CNTK v2 file)."""
    path = str(folder / f"re_{kind}.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)       # (no fallback to Stadyn's format)
        C.load_model(os.path.join(FIXTURES, f"cntk_{kind}.model")).save(path)
    return path


def _saved(kind: str, folder) -> str:
    z = _make().build(C, kind)
    for k, p in enumerate(z.parameters):
        value = VALUES[f"{kind}/param/{k}"]
        assert tuple(p.shape) == value.shape, (kind, k)
        p.value = value
    path = str(folder / f"{kind}.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)       # (no fallback to Stadyn's format)
        z.save(path)
    return path


@pytest.mark.parametrize("kind", ["lstm", "dense"])
def test_a_self_stabilized_model_is_written_as_a_cntk_file(kind, tmp_path):
    """Stadyn's file of the model, read back: CNTK 2.7's outputs."""
    z = C.load_model(_saved(kind, tmp_path))
    _check(kind, z.eval({z.arguments[0]: _feed(kind)}))


@pytest.mark.parametrize("kind", ["lstm", "dense"])
def test_stadyn_reads_cntks_self_stabilized_model(kind):
    z = C.load_model(os.path.join(FIXTURES, f"cntk_{kind}.model"))
    _check(kind, z.eval({z.arguments[0]: _feed(kind)}))


@pytest.mark.parametrize("kind", ["lstm", "dense"])
def test_cntks_self_stabilized_model_is_resaved_as_a_cntk_file(kind, tmp_path):
    z = C.load_model(_resaved(kind, tmp_path))
    _check(kind, z.eval({z.arguments[0]: _feed(kind)}))


_CNTK_EVAL = r"""
import json, sys
import numpy as np
import cntk as C
values = np.load(sys.argv[1])
out = {}
for kind, path in json.loads(sys.argv[2]).items():
    z = C.load_model(path)
    x = [values["lstm/x/0"], values["lstm/x/1"]] if kind == "lstm" else values[kind + "/x"]
    y = z.eval({z.arguments[0]: x})
    out[kind] = [np.asarray(s).tolist() for s in y] if kind == "lstm" else np.asarray(y).tolist()
print(json.dumps(out))
"""


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
def test_cntk_reads_stadyns_self_stabilized_models(tmp_path):
    """CNTK 2.7 loads Stadyn's files and computes its own outputs of the models."""
    paths = {kind: _saved(kind, tmp_path) for kind in ("lstm", "dense")}
    env = dict(os.environ, LD_LIBRARY_PATH=CNTK_LIBS)
    run = subprocess.run([CNTK_PYTHON, "-W", "ignore", "-c", _CNTK_EVAL,
                          os.path.join(FIXTURES, "values.npz"), json.dumps(paths)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    for kind in paths:
        _check(kind, got[kind] if kind != "lstm" else [np.asarray(s) for s in got[kind]])


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
def test_cntk_reads_stadyns_resaves_of_its_self_stabilized_models(tmp_path):
    """CNTK 2.7 loads Stadyn's re-saves of its own files and computes its outputs."""
    paths = {kind: _resaved(kind, tmp_path) for kind in ("lstm", "dense")}
    env = dict(os.environ, LD_LIBRARY_PATH=CNTK_LIBS)
    run = subprocess.run([CNTK_PYTHON, "-W", "ignore", "-c", _CNTK_EVAL,
                          os.path.join(FIXTURES, "values.npz"), json.dumps(paths)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    for kind in paths:
        _check(kind, got[kind] if kind != "lstm" else [np.asarray(s) for s in got[kind]])
