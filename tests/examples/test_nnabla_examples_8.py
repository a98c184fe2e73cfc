"""An eighth batch of sony/nnabla-examples' programs run unchanged on Stadyn at a tiny size, on a
CIFAR-10 stand-in in the data's own file: DARTS's architecture search
(``neural-architecture-search/DARTS/darts_search.py``: 3 cells of 5 nodes, 4 filters, batch 2)
and its retraining of a found architecture (``darts_train.py``, same size, without the
auxiliary head), each interrupted on both frameworks after its first 3 steps.  What they
printed and the parameters they had then are compared with NNabla 1.39's run of the same
driver (``nnabla_examples_8.py``; reference ``refs/nnabla139_examples_8.json``).

Each step is a Momentum step of the network's weights (gradients clipped by norm, weight
decay) on a training batch drawn through ``F.random_crop`` and ``F.image_augmentation``
(NNabla's draws, seeded by ``nn.seed(0)``), then an Adam step of the architecture weights on a
validation batch.  The mixing probabilities the program prints after its first step are
NNabla's, every character; the parameters agree to float32 rounding grown over the three
steps: within 1e-5 (a thirtieth of the Adam step, 3e-4, that moves the architecture weights:
a wrong step shows) plus 1e-4 of the value.

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
from nnabla_examples_8 import PROGRAMS, RUNS  # noqa: E402

ALL = [run for run, _, _ in RUNS]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return nnabla_examples_run(tmp_path_factory, "nnabla_examples_8.py", PROGRAMS,
                               "nnabla139_examples_8.json")


@pytest.mark.parametrize("run", ALL)
def test_the_program_runs_and_writes_what_nnabla_writes(runs, run):
    mine, real = runs
    assert real[run]["error"] is None and real[run]["stopped"]
    assert mine[run]["error"] is None, mine[run]["error"]
    assert mine[run]["stopped"]
    assert mine[run]["files"] == real[run]["files"]
    assert mine[run]["series"] == real[run]["series"]


def test_darts_search_prints_nnabla_139s_mixing_probabilities(runs):
    mine, real = runs
    printed = real["darts_search"]["printed"]
    assert sum(line.startswith("Parameters for") for line in printed) == 10   # 5 edges, 2 cells
    assert mine["darts_search"]["printed"] == printed


def test_darts_search_steps_lose_what_nnabla_139s_lose(runs):
    """The values the monitors were given at each of the 3 steps: training and validation
    loss (within 1e-4) and error (equal)."""
    mine, real = runs
    ours, theirs = mine["darts_search"]["monitored"], real["darts_search"]["monitored"]
    assert [m[:2] for m in ours] == [m[:2] for m in theirs] and len(theirs) == 12
    np.testing.assert_allclose([m[2] for m in ours], [m[2] for m in theirs], rtol=1e-4)


def test_darts_search_trains_as_nnabla_139_does(runs):
    """Each parameter's sum, sum of squares and first 4 values after 3 steps (756 parameters:
    the weights, the batch normalizations' running statistics, the 10 ``alpha_*``)."""
    mine, real = runs
    ours, theirs = mine["darts_search"]["parameters"], real["darts_search"]["parameters"]
    assert sorted(ours) == sorted(theirs) and len(theirs) == 756
    for name, expected in theirs.items():
        np.testing.assert_allclose(ours[name], expected, rtol=1e-4, atol=1e-5, err_msg=name)
    alphas = [np.array(v[2:]) for k, v in theirs.items() if k.startswith("alpha_")]
    assert len(alphas) == 10 and all(np.abs(a).max() < 0.11 for a in alphas)


def test_darts_train_steps_lose_what_nnabla_139s_lose(runs):
    """The retraining's training loss at each of its 3 steps, within 1e-4 of NNabla 1.39's,
    and its training error, equal.

    The program computes the error from ``pred.d`` after ``loss.forward(clear_no_need_grad=
    True)``, where NNabla 1.39 has freed ``pred``'s buffer (``SoftmaxCrossEntropy``'s gradient
    does not read it) and ``pred.d`` reads back the freed memory (the values from the second
    step on, not on the first: ``tests/fixtures/nnabla_freed_values``); Stadyn keeps the value
    of a Variable the program holds (``graph/_held_values.py``)."""
    mine, real = runs
    ours, theirs = mine["darts_train"]["monitored"], real["darts_train"]["monitored"]
    assert [m[:2] for m in ours] == [m[:2] for m in theirs] and len(theirs) == 6
    losses = [(m[2], t[2]) for m, t in zip(ours, theirs) if t[0] == "Training loss"]
    assert len(losses) == 3
    np.testing.assert_allclose(*zip(*losses), rtol=1e-4)
    errors = [(m[2], t[2]) for m, t in zip(ours, theirs) if t[0] == "Training error"]
    assert len(errors) == 3 and [m for m, _ in errors] == [t for _, t in errors], errors


def test_darts_train_trains_as_nnabla_139_does(runs):
    """Each parameter's sum, sum of squares and first 4 values after the retraining's 3 steps
    (101 parameters: the weights and the batch normalizations' running statistics), within
    1e-5 plus 1e-4 of the value (the steps move a weight's values by 7e-3 in the median, 200
    times that: a wrong step shows)."""
    mine, real = runs
    ours, theirs = mine["darts_train"]["parameters"], real["darts_train"]["parameters"]
    assert sorted(ours) == sorted(theirs) and len(theirs) == 101
    for name, expected in theirs.items():
        np.testing.assert_allclose(ours[name], expected, rtol=1e-4, atol=1e-5, err_msg=name)
