"""A fourteenth batch of sony/nnabla-examples' programs run unchanged on Stadyn: a CNN on MNIST
built from ``nnabla.experimental.parametric_function_classes``
(``parametric_function_classes/mnist-collection/main.py``: one epoch of Adam with
``F.image_augmentation``, then a test).  What it wrote is compared with NNabla 1.39's run of
the same driver (``nnabla_examples_14.py``; reference ``refs/nnabla139_examples_14.json``).
The driver's two CIFAR-10 runs (``compression/cifar10``'s ShiftNet and ShuffleNet, made by
hand with ``--only=shiftnet_csc,shufflenet``: minutes each) are not run here; their NNabla
1.39 results are in the same reference file.

main.py augments its training pictures with ``F.image_augmentation`` (flips and rotations),
drawn on both frameworks from NNabla's ``std::mt19937`` sequence (the driver seeds it 0): the
same pictures, so the losses are NNabla's to rounding (2e-5 and 8e-5 apart, where NNabla's own
run with seed 1 is 1 % away).

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
from nnabla_examples_14 import PROGRAMS  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return nnabla_examples_run(tmp_path_factory, "nnabla_examples_14.py", PROGRAMS,
                               "nnabla139_examples_14.json")


def _ran_alike(mine, real):
    """Both runs ended without an error and wrote the same files and monitors, at the same
    iterations."""
    assert real["error"] is None
    assert mine["error"] is None, mine["error"]
    assert mine["files"] == real["files"]
    assert sorted(mine["series"]) == sorted(real["series"])
    for monitor, rows in real["series"].items():
        assert [r[0] for r in mine["series"][monitor]] == [r[0] for r in rows], monitor
    assert mine["finite"] == real["finite"]
    assert all(mine["finite"].values())


def test_parametric_function_classes_mnist_as_nnabla_139(runs):
    """main.py's ``PFC.Module`` network (two nested modules of ``PFC.Conv2d``,
    ``PFC.BatchNorm2d`` and ``PFC.Affine``, its parameters from ``get_parameters(grad_only=
    True)``) trains one epoch of 20 batches with Adam on augmented pictures: the losses at
    iterations 9 and 19 are NNabla's (2.02977, 1.99810) to 1e-3 -- 20 Adam steps of float
    rounding apart; NNabla itself with another augmentation seed gives 2.01208, 2.02419 -- and
    the test error over 3 batches of 64 is NNabla's (0.75) within one picture."""
    mine, real = runs[0]["pfc_mnist"], runs[1]["pfc_mnist"]
    _ran_alike(mine, real)
    assert real["files"] == ["Test-error.series.txt", "Training-loss.series.txt"]
    np.testing.assert_allclose(mine["series"]["Training-loss"],
                               real["series"]["Training-loss"], rtol=1e-3)
    (_, ours), = mine["series"]["Test-error"]
    (_, theirs), = real["series"]["Test-error"]
    assert theirs < 0.85
    assert abs(ours - theirs) <= 1 / 192 + 1e-6
