"""CNTK's ``LessEqual`` read and re-written with its operands in CNTK's order
(``tests/fixtures/cntk_less_equal_write/``: CNTK 2.7's file of ``less_equal(x, y)`` and its
outputs of it and of cntk.exe's ``v1_less_equal.dnn``).

Before mendD33 the reader imported ``LessEqual(x0, x1)`` as ``greater_equal(x1, x0)``: the
loaded function showed its inputs as ``y, x`` and the writer wrote ``LessEqual(y, x)``, which
CNTK 2.7 computes as ``y <= x``.
"""

from __future__ import annotations

import json
import os
import subprocess
import warnings

import numpy as np
import pytest
import peers

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
HERE = os.path.join(FIXTURES, "cntk_less_equal_write")
VALUES = np.load(os.path.join(HERE, "values.npz"))
FILES = {"v2": os.path.join(HERE, "cntk_less_equal.model"),
         "v1": os.path.join(FIXTURES, "cntk_v1_27", "v1_less_equal.dnn")}
OUT = {"v2": "z", "v1": "v1"}                        # (CNTK 2.7's outputs of the files)
CNTK_PYTHON = peers.CNTK_PYTHON
CNTK_LIBS = peers.CNTK_LIBS


def _feed(z):
    return {a: VALUES[a.name] for a in z.arguments}


def _resaved(path: str, out: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)       # (no fallback to Stadyn's format)
        C.load_model(path).save(out)
    return out


def test_a_loaded_less_equal_shows_cntks_operand_order():
    z = C.load_model(FILES["v2"])
    assert [i.name for i in z.root_function.inputs] == str(VALUES["inputs"]).split()
    np.testing.assert_array_equal(np.asarray(z.eval(_feed(z))), VALUES["z"])


@pytest.mark.parametrize("kind", ["v2", "v1"])
def test_a_resaved_less_equal_computes_x_less_equal_y_in_stadyn(kind, tmp_path):
    z = C.load_model(_resaved(FILES[kind], str(tmp_path / "re.model")))
    np.testing.assert_array_equal(np.asarray(z.eval(_feed(z))), VALUES[OUT[kind]])


_CNTK_EVAL = r"""
import json, sys
import numpy as np
import cntk as C
values = np.load(sys.argv[1])
out = {}
for kind, path in json.loads(sys.argv[2]).items():
    z = C.load_model(path)
    y = z.eval({a: values[a.name] for a in z.arguments})
    out[kind] = [np.asarray(y).tolist(), [i.name for i in z.root_function.inputs]]
print(json.dumps(out))
"""


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
def test_cntk_computes_stadyns_resaves_of_less_equal(tmp_path):
    """CNTK 2.7 evaluates Stadyn's re-saves of its and cntk.exe's file, and of
    ``less_equal(x, y)`` built here, saved, loaded and saved again: ``x <= y``."""
    paths = {kind: _resaved(path, str(tmp_path / f"{kind}.model")) for kind, path in FILES.items()}
    built = C.less_equal(C.input_variable(3, name="x"), C.input_variable(3, name="y"))
    built.save(str(tmp_path / "built.model"))
    paths["built"] = _resaved(str(tmp_path / "built.model"), str(tmp_path / "built_re.model"))
    env = dict(os.environ, LD_LIBRARY_PATH=CNTK_LIBS)
    run = subprocess.run([CNTK_PYTHON, "-W", "ignore", "-c", _CNTK_EVAL,
                          os.path.join(HERE, "values.npz"), json.dumps(paths)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    for kind in ("v2", "built"):
        np.testing.assert_array_equal(np.asarray(got[kind][0], np.float32), VALUES["z"], kind)
        assert got[kind][1] == str(VALUES["inputs"]).split(), kind
    np.testing.assert_array_equal(np.asarray(got["v1"][0], np.float32), VALUES["v1"])
