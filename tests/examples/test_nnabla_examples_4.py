"""A fourth batch of sony/nnabla-examples' programs run unchanged on Stadyn at a tiny size, on
synthetic stand-ins for their data in the data's own files: PointNet
(``3d-object-classification/pointnet``, on a ModelNet40 stand-in) and pix2pix
(``image-translation/pix2pix``, on a CMP Facade stand-in).  What their monitors recorded is
compared with NNabla 1.39's run of the same driver (``nnabla_examples_4.py``; reference
``refs/nnabla139_examples_4.json``).

Both programs drop out with ``F.dropout`` in training.  Stadyn draws NNabla 1.39's masks on the
CPU (its ``std::mt19937`` and libstdc++'s ``bernoulli_distribution``, compat case
``nnabla_random.dropout__masks``): PointNet seeds NNabla's generator (``nn.seed`` in its
``set_global_seed``), so its masks are NNabla's and its losses agree to float32 drift over its
10 steps (training loss within 2e-4, where torch's masks left 12%); pix2pix never seeds it, so
NNabla drew its masks from ``std::random_device`` (its own runs differ from one another) and
its numbers stay close, not equal.  What the layers compute without dropout is compared
exactly by the harness cases ``compat_cases/nnabla_examples_4.py`` (PointNet's
``conv_h1[:, :, 0, :]``, which Stadyn refused before: ``TypeError: 'Variable' object is not
subscriptable``).

The programs are not part of this repository: the test reads them from a copy of
nnabla-examples, ``$STADYN_NNABLA_EXAMPLES`` (a checkout, or a bare git repository whose HEAD
is archived), by default the mirror at ``/work/.mirror/sony+nnabla-examples/repo``; without
one it skips.
"""

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "examples")
sys.path.insert(0, HERE)
from program_copies import nnabla_examples_run  # noqa: E402
from nnabla_examples_4 import PROGRAMS, RUNS  # noqa: E402

ALL = [run for run, _, _ in RUNS]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return nnabla_examples_run(tmp_path_factory, "nnabla_examples_4.py", PROGRAMS,
                               "nnabla139_examples_4.json")


def _series(result):
    return {name: np.array(rows) for name, rows in result["series"].items()}


@pytest.mark.parametrize("run", ALL)
def test_the_program_runs_to_the_end_and_writes_what_nnabla_writes(runs, run):
    mine, real = runs
    assert real[run]["error"] is None
    assert mine[run]["error"] is None, mine[run]["error"]
    assert mine[run]["files"] == real[run]["files"]
    assert set(mine[run]["series"]) == set(real[run]["series"])
    for name, rows in _series(real[run]).items():
        ours = _series(mine[run])[name]
        assert rows.size, name
        assert ours.shape == rows.shape, name
        np.testing.assert_array_equal(ours[:, 0], rows[:, 0], err_msg=name)


@pytest.mark.parametrize("run", ALL)
def test_the_trained_parameters_are_finite(runs, run):
    mine, real = runs
    assert set(mine[run]["finite"]) == set(real[run]["finite"])
    assert all(mine[run]["finite"].values()), mine[run]["finite"]


def test_pointnet_trains_as_nnabla_139s_does(runs):
    """NNabla's dropout masks (the program seeds NNabla's generator), so the losses are NNabla's
    to float32 drift over 10 steps: the training loss (mean of the 10 iterations) within 2e-4
    of NNabla's (1e-3 asked; torch's masks gave 0.6245 against 0.7085, 12% off), the
    classification loss within 1.2e-3 (5e-3 asked; 13% before), the feature transform's
    orthogonality loss within 1.1% (5% asked) and the validation loss within 1.2% (5% asked;
    the spread of NNabla's own runs with ``--seed`` 1, 2 and 3 is 1.48 to 1.57 after 5 epochs
    and 1.60 to 1.95 after 10).  The classifier learns: its training accuracy, over the first
    10 iterations, well above the 1 in 4 of chance.

    Those figures hold on the CPU the reference was made on (an AVX2 EPYC).  On an AVX-512 Xeon,
    NNabla 1.39's own run of this driver gives a training loss 2.7% from its reference (0.727727
    against 0.708465), the classification loss 2.9%, the orthogonality loss 1.5% and the
    validation loss 2.3%, and Stadyn's there is within 1.05% of the reference: so the training
    losses are asked within 3% (torch's masks gave 12-13%), the others within 5% as before."""
    mine, real = runs
    ours, theirs = _series(mine["pointnet"]), _series(real["pointnet"])
    for result in (ours, theirs):
        assert result["training-accuracy"][0, 1] > 0.5
    np.testing.assert_allclose(ours["training-loss"][:, 1], theirs["training-loss"][:, 1],
                               rtol=0.03)
    np.testing.assert_allclose(ours["training-classification-loss"][:, 1],
                               theirs["training-classification-loss"][:, 1], rtol=0.03)
    np.testing.assert_allclose(ours["training-matrix-loss"][:, 1],
                               theirs["training-matrix-loss"][:, 1], rtol=0.05)
    np.testing.assert_allclose(ours["valid-loss"][:, 1], theirs["valid-loss"][:, 1], rtol=0.05)


def test_pix2pix_losses_are_nnabla_139s(runs):
    """The first iteration's losses: the generator's is 100 times the L1 distance of its
    picture to the photograph plus the discriminator's verdict, the discriminator's the two
    sigmoid cross-entropies (about 2 log 2 untrained); only the dropout masks differ: the
    program never calls ``nn.seed``, so NNabla drew them from a generator seeded by
    ``std::random_device`` (src/nbla/random_manager.cpp), which no run repeats."""
    mine, real = runs
    ours, theirs = _series(mine["pix2pix"]), _series(real["pix2pix"])
    for name in ("Generator-loss", "Discriminator-loss"):
        np.testing.assert_allclose(ours[name], theirs[name], rtol=0.02, err_msg=name)
