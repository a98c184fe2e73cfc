"""compat.cntk ``block_momentum_distributed_learner`` on 2 workers against CNTK 2.7 run under
``mpiexec -n 2`` (references and the script that wrote them:
``tests/fixtures/cntk_block_momentum/``): each worker trains alone on its own minibatches and
the workers merge their models at every block's end (block momentum by default and as a time
constant, a block learning rate, with and without Nesterov's momentum and the learner's
momentum reset, ``distributed_after``); after each minibatch, the Trainer's loss, sample
counts and the parameter are CNTK's, and so is ``create_checkpoint()`` (which ends a block
first) and the parameter after it, and a new learner's ``restore_from_checkpoint`` of it and
its training on.  Alone (one worker), the same script is CNTK's too (a block
momentum or learning rate of one's own was refused there)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest
from local_launch import launch_beside

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "cntk_block_momentum")
SCRIPT = os.path.join(FIXTURES, "make_refs.py")
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "src"))
CONFIGS = ["default", "time_constant", "after"]


def _cntk(rank: int, folder: str = "") -> dict:
    with open(os.path.join(FIXTURES, "cntk27", folder, f"rank{rank}.json")) as f:
        return json.load(f)


def _env() -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([SRC] + [p for p in [os.environ.get("PYTHONPATH")]
                                                   if p]))
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The script run once by ``stadyn.distributed.run --nproc 2`` and once alone, side by
    side (a few seconds): ``[rank 0's, rank 1's, alone's]``."""
    out, alone = (tmp_path_factory.mktemp(n) for n in ("cntk_block_momentum", "alone"))
    # the launcher run by this process (tests/local_launch.py), the script alone beside it
    launched, beside = launch_beside(
        ["--nproc", "2", "--timeout", "120", SCRIPT, "stadyn", str(out)],
        [sys.executable, SCRIPT, "stadyn", str(alone)], _env(), limit=300)
    for process in (launched, beside):
        assert process.returncode == 0, process.stderr[-4000:]
    found = []
    for path in (out / "rank0.json", out / "rank1.json", alone / "rank0.json"):
        with open(path) as f:
            found.append(json.load(f))
    return found


def _close(ours, theirs, where: str) -> None:
    """JSON values: the same structure, numbers to float rounding (ints exactly)."""
    if isinstance(theirs, dict):
        assert sorted(ours) == sorted(theirs), where
        for k in theirs:
            _close(ours[k], theirs[k], f"{where}.{k}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), where
        for k, (a, b) in enumerate(zip(ours, theirs)):
            _close(a, b, f"{where}[{k}]")
    elif isinstance(theirs, float):
        assert ours == pytest.approx(theirs, rel=1e-5, abs=2e-6), where
    else:
        assert ours == theirs and type(ours) is type(theirs), where


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("rank", [0, 1])
def test_each_minibatch_as_cntk(runs, rank, config):
    """Per minibatch: the loss (this worker's), the sample count (this worker's), the samples
    seen (all workers' as of the last block's end, then this worker's added) and the
    parameter; the workers' parameters equal right after each block's end."""
    ours, theirs = runs[rank][config]["steps"], _cntk(rank)[config]["steps"]
    assert runs[rank]["workers"] == 2
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert a[1:3] == b[1:3], (k, a[:3], b[:3])
        assert a[0] == pytest.approx(b[0], rel=1e-5), k
        np.testing.assert_allclose(a[3], b[3], rtol=1e-5, atol=2e-6, err_msg=str(k))


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("rank", [0, 1])
def test_create_checkpoint_as_cntk(runs, rank, config):
    """``create_checkpoint()`` ends a block first (the parameter after it is the merged
    model), then gives ``{base: {localLearners, totalNumberOfSamplesSeen},
    localTotalNumSamplesSeen, blockLevelSmoothedGradient}``."""
    ours, theirs = runs[rank][config], _cntk(rank)[config]
    _close(ours["checkpoint"], theirs["checkpoint"], "checkpoint")
    np.testing.assert_allclose(ours["w_after_checkpoint"], theirs["w_after_checkpoint"],
                               rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("rank", [0, 1])
def test_restore_from_checkpoint_as_cntk(runs, rank, config):
    """A new learner (of another rate) restored from the checkpoint: its samples seen, 5
    minibatches trained on (its first block starts at the restored model, of the restored
    block-level smoothed gradient) and its own checkpoint after them."""
    ours, theirs = runs[rank][config], _cntk(rank)[config]
    assert ours["restored_seen"] == theirs["restored_seen"]
    _close(ours["restored_steps"], theirs["restored_steps"], "restored_steps")
    _close(ours["restored_checkpoint"], theirs["restored_checkpoint"], "restored_checkpoint")


def test_alone_as_cntk(runs):
    """One worker: every block's end is the learner's own model (the default block momentum
    1 - 1/1 is 0), or moves it by its own block momentum and learning rate, as CNTK 2.7's."""
    ours, theirs = runs[2], _cntk(0, "alone")
    assert ours["workers"] == theirs["workers"] == 1
    for config in CONFIGS:
        _close(ours[config], theirs[config], config)


@pytest.mark.parametrize("run", [0, 1, 2])
def test_a_block_of_less_than_a_sample_per_worker_is_refused_as_cntk(runs, run):
    """CNTK 2.7's ValueError 'Sync period is too small.' for ``block_size`` 1 on 2 workers
    (and 0 alone); ``block_size`` 1 alone is made."""
    theirs = _cntk(run) if run < 2 else _cntk(0, "alone")
    for key in ("block_size 1", "block_size 0"):
        assert runs[run][key] == theirs[key]
