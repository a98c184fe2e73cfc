"""More of sony/nnabla-examples' programs run unchanged on Stadyn at a tiny size, on synthetic
stand-ins for their data in the data's own files: word2vec and the PTB LSTM language model
(``language-modeling``), MAML (``meta-learning/maml``, second-order gradients through
``nn.grad``) and WGAN-GP (``image-generation/wgan``, on a CIFAR-10 stand-in).  What their
monitors recorded is compared with NNabla 1.39's run of the same driver
(``nnabla_examples_more.py``; reference ``refs/nnabla139_examples_more.json``).

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
from nnabla_examples_more import PROGRAMS  # noqa: E402

# Same seeds, same data order, same initial parameters, no random op in the graph: the monitors
# agree to float32 rounding (the files hold 6 significant digits).  word2vec_interval averages,
# every 5 iterations, the ``loss.d`` arrays it was handed: NNabla's all view the loss's one
# buffer, which each forward overwrites, so the "mean" is the last loss (Stadyn's too).
SAME = ["word2vec", "word2vec_interval", "maml"]
# The LSTM drops out with F.dropout, whose masks NNabla's generator draws and Stadyn's does not:
# it runs, trains and writes NNabla's files at NNabla's iterations.
RAN = ["lstm"]
# WGAN-GP mixes real and fake images with F.rand (NNabla's generator; Stadyn's draws others),
# and Adam turns the float-rounding residues of gradients that are 0 in exact arithmetic
# (NNabla's ~1e-9, Stadyn's 0) into steps of up to the learning rate: its numbers are close.
CLOSE = ["wgan_deconv", "wgan_linear"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return nnabla_examples_run(tmp_path_factory, "nnabla_examples_more.py", PROGRAMS,
                               "nnabla139_examples_more.json",
                               PYTHONHASHSEED="0")


def _series(result):
    return {name: np.array(rows) for name, rows in result["series"].items()}


@pytest.mark.parametrize("run", SAME + RAN + CLOSE)
def test_the_program_runs_to_the_end_and_writes_what_nnabla_writes(runs, run):
    mine, real = runs
    assert real[run]["error"] is None
    assert mine[run]["error"] is None, mine[run]["error"]
    assert mine[run]["files"] == real[run]["files"]
    assert set(mine[run]["series"]) == set(real[run]["series"])
    for name, rows in _series(real[run]).items():
        ours = _series(mine[run])[name]
        assert ours.shape == rows.shape, name
        if rows.size:
            np.testing.assert_array_equal(ours[:, 0], rows[:, 0], err_msg=name)


@pytest.mark.parametrize("run", SAME)
def test_monitored_values_are_nnabla_139s(runs, run):
    mine, real = runs
    ours, theirs = _series(mine[run]), _series(real[run])
    assert any(v.size for v in theirs.values())
    for name, rows in theirs.items():
        np.testing.assert_allclose(ours[name], rows, rtol=1e-4, atol=1e-6, err_msg=name)


def test_the_lstm_learns_as_nnabla_139s_does(runs):
    mine, real = runs
    for result in (mine["lstm"], real["lstm"]):
        train = _series(result)["Training-perplexity"][:, 1]
        valid = _series(result)["Validation-perplexity"][:, 1]
        # a vocabulary of ~120 words: from thousands down to a few hundred, in both
        assert train[0] > 3 * train[-1] and valid[-1] < 1000, (train, valid)
    ours = _series(mine["lstm"])["Validation-perplexity"][-1, 1]
    theirs = _series(real["lstm"])["Validation-perplexity"][-1, 1]
    assert abs(np.log(ours / theirs)) < np.log(2.0), (ours, theirs)


@pytest.mark.parametrize("run", CLOSE)
def test_wgan_gp_trains_as_nnabla_139s_does(runs, run):
    """The critic's loss is dominated by the gradient penalty (10 (|grad| - 1)^2, about 9 at
    these sizes), which its gradient must reach: before ``need_grad=True`` on the mixed images
    started gradients there, the penalty's gradient was zero and the loss 6% off."""
    mine, real = runs
    ours, theirs = _series(mine[run]), _series(real[run])
    np.testing.assert_allclose(ours["Negative-Critic-Loss"], theirs["Negative-Critic-Loss"],
                               rtol=0.02)
    # the generator's loss, -mean(critic(fake)), is near 0 on both sides at this point
    np.testing.assert_allclose(ours["Generator-Loss"], theirs["Generator-Loss"], rtol=0,
                               atol=0.05)


@pytest.mark.parametrize("run", SAME + RAN + CLOSE)
def test_the_trained_parameters_are_finite(runs, run):
    mine, real = runs
    assert set(mine[run]["finite"]) == set(real[run]["finite"])
    assert all(mine[run]["finite"].values()), mine[run]["finite"]
