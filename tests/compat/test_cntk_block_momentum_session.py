"""compat.cntk ``training_session`` of a ``block_momentum_distributed_learner`` on 2 workers
(and alone) against CNTK 2.7 run under ``mpiexec -n 2`` (references and the script that wrote
them: ``tests/fixtures/cntk_block_momentum_session/``): each worker reads its share of
minibatches of ``mb_size`` times the workers, a worker out of data takes its part in the
others' block ends until all are (then the last merge), the summaries average the workers'
loss and metric, the Trainer's count is the learner's (all workers' as of the last agreement),
the progress actions come due by it (at the end too), cross-validation and test minibatches
are shared and summed over the workers, and the Trainer's checkpoints hold CNTK's
block state: a checkpoint pair Stadyn writes has CNTK's learner entries, and a Trainer restored
from CNTK's pair (or Stadyn's) trains on as CNTK's does."""

from __future__ import annotations

import json
import os
import re
import sys

import numpy as np
import pytest
from local_launch import launch_beside

from stadyn.serialize import read_cntk_checkpoint

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "cntk_block_momentum_session")
THEIRS = os.path.join(FIXTURES, "cntk27")
SCRIPT = os.path.join(FIXTURES, "make_refs.py")
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "src"))
SESSIONS = ["uneven", "sequences", "alternating", "tested", "first", "second"]
PAIRS = ["uneven_model", "sequences_model", "alternating_model", "first_model",
         "second_model"]


def _env() -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([SRC] + [p for p in [os.environ.get("PYTHONPATH")]
                                                   if p]))
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The script run once by ``stadyn.distributed.run --nproc 2`` and once alone, side by
    side: ``(folder of the 2 workers', folder of the one's)``."""
    two, alone = (tmp_path_factory.mktemp(n) for n in ("bm_session", "bm_alone"))
    # the launcher run by this process (tests/local_launch.py), the script alone beside it
    launched, beside = launch_beside(
        ["--nproc", "2", "--timeout", "120", SCRIPT, "stadyn", str(two), THEIRS],
        [sys.executable, SCRIPT, "stadyn", str(alone), os.path.join(THEIRS, "alone")],
        _env(), limit=300)
    for process in (launched, beside):
        assert process.returncode == 0, process.stderr[-4000:]
    return two, alone


def _json(folder, rank: int) -> dict:
    with open(os.path.join(folder, f"rank{rank}.json")) as f:
        return json.load(f)


def _flat(value, strings: bool = False) -> list:
    """The numbers of a JSON value (or its strings), in order."""
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _flat(value[k], strings)]
    if isinstance(value, list):
        return [x for v in value for x in _flat(v, strings)]
    if isinstance(value, str):
        return [value] if strings else []
    return [] if strings else [float(value)]


def _close(ours, theirs, what: str) -> None:
    """The same strings, the numbers to float rounding."""
    assert _flat(ours, True) == _flat(theirs, True), what
    a, b = np.array(_flat(ours)), np.array(_flat(theirs))
    assert a.shape == b.shape, (what, ours, theirs)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6, err_msg=what)


CASES = [(rank, name) for rank in (0, 1) for name in SESSIONS] + \
    [("alone", name) for name in SESSIONS]


def _pick(runs, rank):
    """``(our folder, CNTK's folder, rank)`` of a case."""
    two, alone = runs
    return (alone, os.path.join(THEIRS, "alone"), 0) if rank == "alone" else (two, THEIRS, rank)


@pytest.mark.parametrize("rank,name", CASES)
def test_session_as_cntk(runs, rank, name):
    """What the progress writer is told (each minibatch of this worker's; the summaries of
    the workers' averaged loss and metric over this worker's samples; the synchronisations
    with all workers' samples since the previous one), the Trainer's count and the
    parameters after the session, the checkpoint files: ``uneven`` (45 samples read once,
    one worker's last share 3, the other's 2), ``sequences`` (whole sequences of 1 to 9
    samples each worker: the workers' blocks fill at different minibatches, one worker runs
    out of data first and takes its part in the other's merges, checkpoint and summary, a
    summary it is out of data for staying the other's own), ``alternating`` (sequences of 3
    and 10 samples in turn: the workers ask for different things at once, a merge, a
    checkpoint, a summary or the end of their data against each other, and do what CNTK's
    priorities decide), ``first`` (to 40 samples, a
    checkpoint every
    16) and ``second`` (restored from first's checkpoint, on to 80); ``tested``: uneven's
    with cross-validation every 16 samples and a test at the end, each worker testing its
    share of each minibatch, the counts and metric sums the workers' (the writer's test
    updates and summaries, the callback's arguments)."""
    ours_dir, theirs_dir, r = _pick(runs, rank)
    ours, theirs = _json(ours_dir, r)[name], _json(theirs_dir, r)[name]
    for key in ("training", "summaries", "syncs", "tests", "validated"):
        assert len(ours[key]) == len(theirs[key]), (key, ours[key], theirs[key])
        _close(ours[key], theirs[key], key)
    assert ours["seen"] == theirs["seen"] and ours["files"] == theirs["files"]
    _close(ours["params"], theirs["params"], "params")


def _lines(path) -> tuple[list, list]:
    """ProgressPrinter's lines without the timing, their numbers apart (printed rounded: the
    last digit may differ by float rounding)."""
    number = r"[0-9]+\.[0-9]+"
    with open(path) as f:
        lines = [re.sub(r" [0-9.]+s \( *[0-9.]+ samples/s\)", "", line.rstrip())
                 for line in f.read().splitlines()[1:]]
    return [re.sub(number, "#", line) for line in lines], \
        [float(v) for line in lines for v in re.findall(number, line)]


@pytest.mark.parametrize("rank,name", CASES)
def test_progress_printer_as_cntk(runs, rank, name):
    """Each worker's ProgressPrinter: its own minibatches, the epochs' averaged summaries."""
    ours_dir, theirs_dir, r = _pick(runs, rank)
    log = f"progress_{name}.txtrank{r}"
    (ours, numbers), (theirs, expected) = (_lines(os.path.join(d, log))
                                           for d in (ours_dir, theirs_dir))
    assert ours == theirs
    np.testing.assert_allclose(numbers, expected, rtol=0, atol=2.01e-6)


def _ckp(folder, name) -> dict:
    return read_cntk_checkpoint(os.path.join(folder, name))[2]


@pytest.mark.parametrize("rank", [0, "alone"])
@pytest.mark.parametrize("pair", PAIRS)
def test_checkpoint_pair_as_cntk(runs, pair, rank):
    """The ``.ckp`` worker 0 writes holds CNTK 2.7's entry of a block momentum learner: its
    block state (all workers' samples, worker 0's, the block-level smoothed gradients, after
    the merge the checkpoint does) around the wrapped learner's (momentum reset by the
    merge), and every worker's state."""
    ours_dir, theirs_dir, _ = _pick(runs, rank)
    ours, theirs = _ckp(ours_dir, pair), _ckp(theirs_dir, pair)
    assert sorted(ours["DistributedState"]) == sorted(theirs["DistributedState"])
    assert ours["BlockMomentum"].keys() == theirs["BlockMomentum"].keys() == {0}
    (total, local, smoothed), (total2, local2, smoothed2) = \
        ours["BlockMomentum"][0], theirs["BlockMomentum"][0]
    assert (total, local) == (total2, local2)
    _close([g.tolist() for g in smoothed], [g.tolist() for g in smoothed2], "smoothed")
    mine, cntk = ours["Learners"][0], theirs["Learners"][0]     # (the wrapped learner's)
    assert sorted(mine) == sorted(cntk)
    for key in cntk:
        if key == "smoothed_gradients":
            _close([g.tolist() for g in mine[key]], [g.tolist() for g in cntk[key]], key)
        else:
            assert mine[key] == cntk[key], key


@pytest.mark.parametrize("rank", [0, 1, "alone"])
@pytest.mark.parametrize("scenario", ["direct", "direct_from_cntk"])
def test_trainer_restored_trains_on_as_cntk(runs, scenario, rank):
    """A new Trainer's ``restore_from_checkpoint`` of first's pair (Stadyn's own, or the one
    CNTK 2.7 wrote), then 5 minibatches of each worker's own and its learner's
    ``create_checkpoint()``: the count, parameters, losses and checkpoint of CNTK's restoring
    its own pair (every worker takes worker 0's block state, as CNTK's)."""
    ours_dir, theirs_dir, r = _pick(runs, rank)
    ours, theirs = _json(ours_dir, r)[scenario], _json(theirs_dir, r)["direct"]
    assert ours["seen"] == theirs["seen"]
    for key in ("params", "steps", "checkpoint", "params_after"):
        _close(ours[key], theirs[key], key)


def test_stadyns_own_checkpoint_keeps_the_block_state(tmp_path):
    """Where the graph has no CNTK form the Trainer writes Stadyn's own checkpoint: it keeps
    the block state too (all workers' samples, this worker's, the block-level smoothed
    gradients), so a Trainer restored from it trains on as the one that wrote it (one worker,
    a block momentum of its own: each merge moves the model by the smoothed gradient)."""
    import stadyn.compat.cntk as C

    def trainer():
        x, y = C.input_variable(2), C.input_variable(3)
        w = C.parameter((2, 3), init=np.arange(6, dtype=np.float32).reshape(2, 3) * 0.1)
        learner = C.train.distributed.block_momentum_distributed_learner(
            C.momentum_sgd([w], C.learning_parameter_schedule(0.2), C.momentum_schedule(0.9)),
            block_size=6, block_momentum_as_time_constant=20.0)
        z = C.times(x, w)
        return C.Trainer(z, C.cross_entropy_with_softmax(z, y), [learner]), x, y, w, learner

    r = np.random.RandomState(0)
    batches = [{"x": r.randn(4, 2).astype(np.float32),
                "y": np.eye(3, dtype=np.float32)[r.randint(0, 3, 4)]} for _ in range(6)]
    first, x, y, w, learner = trainer()
    for mb in batches[:3]:
        first.train_minibatch({x: mb["x"], y: mb["y"]})
    learner._checkpoint_merge()         # (what save_checkpoint does first, on every worker)
    path = str(tmp_path / "model")
    first._save_stadyn_checkpoint(path, {})
    second, x2, y2, w2, learner2 = trainer()
    second.restore_from_checkpoint(path)
    assert learner2._block_state()[:2] == learner._block_state()[:2] == (12, 12)
    np.testing.assert_array_equal(learner2._block_state()[2][0], learner._block_state()[2][0])
    assert np.abs(learner._block_state()[2][0]).max() > 0
    for mb in batches[3:]:
        first.train_minibatch({x: mb["x"], y: mb["y"]})
        second.train_minibatch({x2: mb["x"], y2: mb["y"]})
    np.testing.assert_allclose(np.asarray(w2.value), np.asarray(w.value), rtol=1e-6)
    assert second.total_number_of_samples_seen == first.total_number_of_samples_seen == 24
