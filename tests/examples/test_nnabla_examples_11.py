"""An eleventh batch of sony/nnabla-examples' programs run unchanged on Stadyn: kernel SHAP
(``responsible_ai/kernel_shap/kernel_shap.py``), which trains a two-layer perceptron on the
Iris data it ships (1,500 Adam steps, building the graph anew each step: ``model(data)`` in
the loop) and explains one sample's prediction by evaluating the network on the training data
with each subset of the sample's features (``self.X[i:i + 1, :]``, a Variable sliced).  The
expected values and SHAP values it computed are compared with NNabla 1.39's run of the same
driver (``nnabla_examples_11.py``; reference ``refs/nnabla139_examples_11.json``).

The program is not part of this repository: the test reads it from a copy of nnabla-examples,
``$STADYN_NNABLA_EXAMPLES`` (a checkout, or a bare git repository whose HEAD is archived), by
default the mirror at ``/work/.mirror/sony+nnabla-examples/repo``; without one it skips.
"""

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "examples")
sys.path.insert(0, HERE)
from program_copies import nnabla_examples_run  # noqa: E402
from nnabla_examples_11 import PROGRAMS  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    mine, real = nnabla_examples_run(tmp_path_factory, "nnabla_examples_11.py", PROGRAMS,
                                     "nnabla139_examples_11.json")
    return mine["kernel_shap"], real["kernel_shap"]


def test_kernel_shap_runs_and_writes_what_nnabla_writes(run):
    mine, real = run
    assert real["error"] is None
    assert mine["error"] is None, mine["error"]
    assert mine["files"] == real["files"] == ["shap.json"]
    assert mine["given"]["feature_names"] == real["given"]["feature_names"]


def test_kernel_shap_explains_as_nnabla_139_does(run):
    """After the same 1,500 steps from the same initial weights, the SHAP values of the 30
    validation samples' 4 features for the 3 classes (up to 0.64) agree to 1e-4 (they are
    5e-6 apart), and so do the expected values (the mean prediction over the training data)."""
    mine, real = run
    expected = np.array(real["given"]["shap_values"])
    assert expected.shape == (3, 30, 4)
    assert np.abs(expected).max() > 0.5
    np.testing.assert_allclose(mine["given"]["shap_values"], expected, atol=1e-4)
    np.testing.assert_allclose(mine["given"]["expected_values"],
                               real["given"]["expected_values"], atol=1e-4)
