"""The body of a CNTK block the compat builds of several Stadyn ops, written whole.

``binary_cross_entropy`` is CNTK 2.7's ``BinaryCrossEntropy`` block, ``Negate`` of the sum of
``y log(1e-6 + o)`` and ``(1 - y) log(1 + 1e-6 - o)``.  Before, ``Function.save`` wrote the
block's body as the ``Negate`` alone, reading the block's arguments: Stadyn loaded it and
computed ``-y``, CNTK 2.7 crashed loading it.  ``tests/fixtures/cntk_saved_files/``
(``make_cntk.py``): CNTK 2.7's own file of the network and its outputs.
"""

from __future__ import annotations

import os
import subprocess
import warnings

import numpy as np
import pytest
import peers

import stadyn.compat.cntk as C
from stadyn import serialize

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_saved_files")
CNTK_OWN = dict(np.load(os.path.join(FIXTURES, "cntk_bce.npz")))
CNTK_PYTHON = peers.CNTK_PYTHON


def _bce(path):
    x, y = C.input_variable(4, name="x"), C.input_variable(4, name="y")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)      # a CNTK v2 file, no fallback
        C.binary_cross_entropy(C.sigmoid(x), y).save(path)
    return path


def _eval(model):
    return model.eval({a: CNTK_OWN[a.name] for a in model.arguments})


def _body_ops(path):
    main = serialize.read_legacy_model(path).networks["main"]
    block = next(f for f in main.functions if f.type == "BinaryCrossEntropy")
    return sorted(f.type for f in block.body.functions)


def test_binary_cross_entropy_saved_computes_cntks_values(tmp_path):
    loaded = C.load_model(_bce(str(tmp_path / "bce.model")))
    assert loaded.root_function.op_name == "BinaryCrossEntropy"
    np.testing.assert_allclose(_eval(loaded), CNTK_OWN["out"], rtol=1e-5, atol=1e-6)


def test_binary_cross_entropy_body_holds_cntks_ops(tmp_path):
    # the ops of the block's body: those of CNTK 2.7's own file of it
    ours = _body_ops(_bce(str(tmp_path / "bce.model")))
    assert ours == _body_ops(os.path.join(FIXTURES, "cntk_bce.model"))
    assert ours.count("Log") == 2 and "Negate" in ours


def test_cntks_own_binary_cross_entropy_file_loads():
    loaded = C.load_model(os.path.join(FIXTURES, "cntk_bce.model"))
    np.testing.assert_allclose(_eval(loaded), CNTK_OWN["out"], rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
def test_cntk_27_loads_the_file_and_computes_its_values(tmp_path):
    path = _bce(str(tmp_path / "bce.model"))
    script = ("import sys, numpy as np, cntk as C\n"
              "z = C.load_model(sys.argv[1]); d = np.load(sys.argv[2])\n"
              "np.save(sys.argv[3], z.eval({a: d[a.name] for a in z.arguments}))\n")
    out = str(tmp_path / "out.npy")
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
    subprocess.run([CNTK_PYTHON, "-W", "ignore", "-c", script, path,
                    os.path.join(FIXTURES, "cntk_bce.npz"), out], check=True, env=env,
                   capture_output=True, timeout=120)
    np.testing.assert_allclose(np.load(out), CNTK_OWN["out"], rtol=1e-5, atol=1e-6)
