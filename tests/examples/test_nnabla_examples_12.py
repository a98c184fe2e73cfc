"""A twelfth batch of sony/nnabla-examples' programs run unchanged on Stadyn: TracIn
(``responsible_ai/tracin``: ``train.py``, a ResNet-23 on CIFAR-10-shaped
``.npy`` stand-ins, with neu's checkpoints, learning-rate scheduler and ``.nnp`` exports, and
``calculate_score.py``, the self-influence of each training picture from the affine layer's
gradients) and representer point selection (``responsible_ai/representer_point/
compute_score.py``: the last layer refitted by gradient descent with a backtracking line search
on NdArrays).  What they wrote and printed is compared with NNabla 1.39's run of the same driver
(``nnabla_examples_12.py``; reference ``refs/nnabla139_examples_12.json``).

The programs are not part of this repository: the test reads them from a copy of
nnabla-examples, ``$STADYN_NNABLA_EXAMPLES`` (a checkout, or a bare git repository whose HEAD
is archived), by default the mirror at ``/work/.mirror/sony+nnabla-examples/repo``; without one
it skips.
"""

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "examples")
sys.path.insert(0, HERE)
from program_copies import nnabla_examples_run  # noqa: E402
from nnabla_examples_12 import PROGRAMS  # noqa: E402

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return nnabla_examples_run(tmp_path_factory, "nnabla_examples_12.py", PROGRAMS,
                               "nnabla139_examples_12.json")


def test_tracin_trains_and_writes_what_nnabla_writes(runs):
    """The monitors, checkpoints (``params_0.h5``, ``states_0.h5``, ``checkpoint_0.json``),
    final parameters and the two ``.nnp`` exports, each holding the same network (functions
    counted by type: 22 convolutions, 22 batch normalizations, 7 residual additions ...),
    the parameters all finite."""
    mine, real = runs[0]["tracin_train"], runs[1]["tracin_train"]
    assert real["error"] is None
    assert mine["error"] is None, mine["error"]
    assert mine["files"] == real["files"]
    assert mine["nnp"] == real["nnp"]
    assert len(real["nnp"]) == 2
    assert real["nnp"]["resnet23_result.nnp"]["types"]["Convolution"] == 22
    assert mine["finite"] == real["finite"]
    assert all(real["finite"].values())


def test_tracin_starts_and_validates_as_nnabla_139(runs):
    """The initial parameters (neu's checkpoint before the first epoch) are NNabla's, and so
    are the validation pass's error and loss with them (epoch 0: the test-mode network, no
    augmentation).  Training draws ``F.image_augmentation``'s random scales and flips from each
    framework's own generator, so later numbers are compared for their being there and
    finite only."""
    mine, real = runs[0]["tracin_train"], runs[1]["tracin_train"]
    first = real["parameters"]["params_0.h5"]
    assert len(first) == 112
    assert set(mine["parameters"]["params_0.h5"]) == set(first)
    for name, values in first.items():
        np.testing.assert_allclose(mine["parameters"]["params_0.h5"][name], values,
                                   rtol=1e-6, atol=1e-8, err_msg=name)
    for monitor in ("Test-error", "Test-loss"):
        np.testing.assert_allclose(mine["series"][monitor][0], real["series"][monitor][0],
                                   rtol=1e-5, err_msg=monitor)
    assert real["series"]["Test-loss"][0][1] > 1.0
    for monitor, rows in real["series"].items():
        assert [r[0] for r in mine["series"][monitor]] == [r[0] for r in rows]
        assert np.isfinite(mine["series"][monitor]).all()


def test_tracin_self_influence_as_nnabla_139(runs):
    """The self-influence of the 8 training pictures summed over the 9 checkpoints (each the
    initial ResNet-23's): the squared norms of the affine layer's gradients, 1.29e7 to
    1.37e7 for CIFAR's raw 0-255 pixels.  They agree to 1e-6 (1.5e-7 apart)."""
    mine, real = runs[0]["tracin_score"], runs[1]["tracin_score"]
    assert real["error"] is None
    assert mine["error"] is None, mine["error"]
    assert mine["files"] == real["files"]
    expected = np.array(real["arrays"]["influence_all_epoch.npy"])
    assert expected.shape == (8,) and expected.max() > 1e6
    np.testing.assert_allclose(mine["arrays"]["influence_all_epoch.npy"], expected,
                               rtol=1e-6, atol=1.0)


def test_representer_line_search_as_nnabla_139(runs):
    """compute_score.py's line search keeps the parameters with ``F.identity(p.data)`` and
    steps from them; its acceptance test compares ``loss.d`` with ``val``, a NumPy view of the
    same memory, so on NNabla 1.39 every search shrinks the step below 1e-10 ("t too small"),
    the parameters stay where they were and the program stops at its end, copying NumPy
    arrays (``best_W``) into parameters (``TypeError ... got memoryview``), before it saves
    anything.  Stadyn does all of it alike: the same printed loss, cross-entropy, L2 term and
    gradient size, 40 searches given up of 40, the same error (Stadyn's ``ArgumentError`` is
    a ``TypeError``).  Before NdArray outputs had their own memory, the kept "original"
    parameters moved with each step and the L2 term printed was 0.0142, NNabla's 0.0184."""
    mine, real = runs[0]["representer_score"], runs[1]["representer_score"]
    assert real["printed"]["gave up"] == 40
    assert mine["printed"]["gave up"] == real["printed"]["gave up"]
    assert len(real["printed"]["epochs"]) == 1
    np.testing.assert_allclose(mine["printed"]["epochs"], real["printed"]["epochs"],
                               rtol=1e-5)
    assert real["error"].startswith("TypeError") and "memoryview" in real["error"]
    assert "copy_from" in mine["error"] and "memoryview" in mine["error"]
    assert mine["files"] == real["files"] == ["info.h5", "learning_rate.yaml"]
