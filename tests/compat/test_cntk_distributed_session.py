"""compat.cntk ``training_session`` with a data-parallel distributed learner on 2 workers
against CNTK 2.7 run under ``mpiexec -n 2`` (references and the script that wrote them:
``tests/fixtures/cntk_distributed/``): each worker reads its share of every minibatch
(``num_data_partitions``/``partition_index``, CNTK's TrainingSession::GetTrainingMinibatch),
the Trainer's counts, losses and metrics are the workers' sums (what the progress writers and
ProgressPrinter get on every worker), cross-validation and test minibatches are shared and
summed the same way, and only worker 0 writes checkpoints (CNTK's pair, holding every
worker's external state, each worker restoring its own); each worker's learner gives and takes
its own ``create_checkpoint()``, and a worker's empty share of ``MinibatchSourceFromData`` is
refused as CNTK 2.7 refuses it."""

from __future__ import annotations

import copy
import json
import os
import re

import numpy as np
import pytest

from local_launch import launch

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "cntk_distributed")
SCRIPT = os.path.join(FIXTURES, "make_refs.py")
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "src"))


def _cntk(rank: int) -> dict:
    with open(os.path.join(FIXTURES, "cntk27", f"rank{rank}.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def stadyn_run(tmp_path_factory):
    """Both sessions run once by ``stadyn.distributed.run --nproc 2`` (a few seconds)."""
    out = tmp_path_factory.mktemp("cntk_distributed")
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([SRC] + [p for p in [os.environ.get("PYTHONPATH")]
                                                   if p]))
    env.pop("PYTEST_XDIST_WORKER", None)
    result = launch(["--nproc", "2",
                     "--timeout", "120", SCRIPT, "stadyn", str(out),
                     "truncated,session,loop,loop_truncated,after,restore,direct,"
                     "learner_checkpoint,empty_share,sync_lines"], env, 300)
    assert result.returncode == 0, result.stderr[-4000:]
    runs = []
    for rank in range(2):
        with open(out / f"rank{rank}.json") as f:
            runs.append(json.load(f))
    return out, runs


def _close_windows(ours, theirs):
    """Progress writer records: counts exactly, loss and metric sums to float rounding."""
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a[:2] == b[:2] and [list(map(int, p)) for p in a[:2]] == b[:2], (a, b)
        np.testing.assert_allclose(np.array(a[2:], float), np.array(b[2:], float),
                                   rtol=1e-5, atol=1e-5)


def _progress_lines(path):
    """ProgressPrinter's lines without the timing ('0.150s (240.0 samples/s)')."""
    with open(path) as f:
        return [re.sub(r" [0-9.]+s \( *[0-9.]+ samples/s\)", "", line.rstrip())
                for line in f.read().splitlines()[1:]]


@pytest.mark.parametrize("scenario", ["truncated", "after"])
@pytest.mark.parametrize("rank", [0, 1])
def test_truncated_session_on_two_workers_as_cntk(stadyn_run, rank, scenario):
    """``after``: distributed_after=24, each worker training alone on whole minibatches
    (counts its own) until then."""
    out, runs = stadyn_run
    ours, theirs = runs[rank][scenario], _cntk(rank)[scenario]
    assert runs[rank]["workers"] == 2
    # CNTK 2.7: 90 samples over both workers, every count the workers' sum
    assert ours["seen"] == theirs["seen"] == {"truncated": 90, "after": 96}[scenario]
    assert ours["previous_count"] == theirs["previous_count"] == 0   # the final empty step
    # ... whose averages are CNTK's RuntimeError on every worker (Stadyn gave NaN)
    assert ours["previous_loss"] == theirs["previous_loss"] == (
        "error: There was no preceding call to TrainMinibatch or the minibatch was empty.")
    _close_windows(ours["training"], theirs["training"])
    _close_windows(ours["tests"], theirs["tests"])
    assert [s[:4] for s in ours["summaries"]] == [s[:4] for s in theirs["summaries"]]
    for a, b in zip(ours["summaries"], theirs["summaries"]):
        np.testing.assert_allclose(a[4:], b[4:], rtol=1e-5, err_msg=str(b))
    assert [c[0] for c in ours["cv"]] == [c[0] for c in theirs["cv"]]
    assert [c[2:] for c in ours["cv"]] == [c[2:] for c in theirs["cv"]]   # [56, 8] each
    np.testing.assert_allclose([c[1] for c in ours["cv"]], [c[1] for c in theirs["cv"]])
    assert [p[0] for p in ours["params"]] == [p[0] for p in theirs["params"]]
    for (name, a), (_, b) in zip(ours["params"], theirs["params"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
    # every worker prints the same (summed) lines, as CNTK's
    assert _progress_lines(out / f"progress_{scenario}.txtrank{rank}") == _progress_lines(
        os.path.join(FIXTURES, "cntk27", f"progress_{scenario}_rank{rank}.txt"))


@pytest.mark.parametrize("scenario", ["truncated", "session"])
def test_only_worker_zero_writes_checkpoints(stadyn_run, scenario):
    runs = stadyn_run[1]
    assert runs[1][scenario]["checkpoints"] == _cntk(1)[scenario]["checkpoints"] == []
    # model and model.ckp, as CNTK 2.7's: the CNTK v2 writer writes these sequence models'
    # loss and metric over sequences, so they are CNTK's pair (Stadyn's own checkpoint, which
    # it wrote before with a warning, has the same two names; tests/serialize/
    # test_cntk_seq_criteria.py checks the pair's contents)
    assert runs[0][scenario]["checkpoints"] == _cntk(0)[scenario]["checkpoints"]
    assert "model.ckp" in runs[0][scenario]["checkpoints"]


@pytest.mark.parametrize("rank", [0, 1])
def test_checkpoint_of_two_workers_as_cntk(stadyn_run, rank):
    """Every worker saves to the same path with its own external state: worker 0 writes
    CNTK 2.7's pair (model, model.ckp) holding every worker's state, and each worker's
    restore_from_checkpoint gives back its own (before, Stadyn wrote its own checkpoint
    file and gave every worker worker 0's)."""
    ours, theirs = stadyn_run[1][rank]["direct"], _cntk(rank)["direct"]
    assert ours["files"] == theirs["files"] == ["model", "model.ckp"]
    assert ours["state"] == theirs["state"] == {"name": f"worker{rank}", "rank": rank}
    assert ours["seen"] == theirs["seen"] == 24
    for (name, a), (_, b), (_, c) in zip(ours["params"], theirs["params"], ours["saved_params"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
        assert a == c, name                     # restored exactly what was saved


@pytest.mark.parametrize("rank", [0, 1])
def test_session_restored_on_two_workers_as_cntk(stadyn_run, rank):
    """A session checkpointing every 24 samples to one path, then a new session restoring
    it and going on from 48 to 90 samples: the files, each worker's progress after the
    restore (its reader's position its own, from the checkpoint) and the parameters are
    CNTK 2.7's."""
    for part in ("first", "second"):
        ours, theirs = stadyn_run[1][rank]["restore"][part], _cntk(rank)["restore"][part]
        assert ours["files"] == theirs["files"] == ["model", "model.ckp"]
        assert ours["seen"] == theirs["seen"]
        _close_windows(ours["training"], theirs["training"])
        for (name, a), (_, b) in zip(ours["params"], theirs["params"]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("rank", [0, 1])
def test_whole_sequences_on_two_workers_count_as_cntk(stadyn_run, rank):
    """Untruncated sequences: the sums over the workers are CNTK's (how the sequences are
    dealt to the workers is not: see the xfail below)."""
    ours, theirs = stadyn_run[1][rank]["session"], _cntk(rank)["session"]
    assert ours["seen"] == theirs["seen"] == 90
    assert [s[0] for s in ours["summaries"]] == [s[0] for s in theirs["summaries"]]
    assert [s[1] for s in ours["summaries"]] == [s[1] for s in theirs["summaries"]]
    assert [c[2] for c in ours["cv"]] == [c[2] for c in theirs["cv"]] == [56, 56, 56]
    np.testing.assert_allclose([c[1] for c in ours["cv"]], [c[1] for c in theirs["cv"]])


def test_whole_sequences_on_two_workers_train_as_cntk(stadyn_run):
    """Each worker reads its own every-other sequence up to half the minibatch size, as CNTK
    2.7's reader does (worker 0's sample counts 7, 9, 4, 8, 5, 7)."""
    ours, theirs = stadyn_run[1][0]["session"], _cntk(0)["session"]
    assert [w[0] for w in ours["training"]] == [w[0] for w in theirs["training"]]


@pytest.mark.parametrize("rank", [0, 1])
def test_plain_loop_on_two_workers_as_cntk(stadyn_run, rank):
    """A Trainer loop reading ``next_minibatch(12, num_data_partitions=2, partition_index=r)``
    itself (truncated sequences): each step's local samples, the summed count, loss and metric
    averages and the total are CNTK's, and so are the parameters."""
    ours, theirs = stadyn_run[1][rank]["loop_truncated"], _cntk(rank)["loop_truncated"]
    assert [s[:2] + s[4:] for s in ours["steps"]] == [s[:2] + s[4:] for s in theirs["steps"]]
    np.testing.assert_allclose([s[2:4] for s in ours["steps"]],
                               [s[2:4] for s in theirs["steps"]], rtol=1e-6)
    for (name, a), (_, b) in zip(ours["params"], theirs["params"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("rank", [0, 1])
def test_plain_loop_with_whole_sequences_as_cntk(stadyn_run, rank):
    """Whole sequences in a Trainer loop of ``next_minibatch(12, num_data_partitions=2,
    partition_index=r)``: each worker reads CNTK 2.7's sequences (its own every-other one up to
    6 samples, so never an empty share here), each step's local and summed counts, loss and
    metric averages and the total are CNTK's, and so are the parameters; both workers agree."""
    ours, theirs = stadyn_run[1][rank]["loop"], _cntk(rank)["loop"]
    assert [s[:2] + s[4:] for s in ours["steps"]] == [s[:2] + s[4:] for s in theirs["steps"]]
    np.testing.assert_allclose([s[2:4] for s in ours["steps"]],
                               [s[2:4] for s in theirs["steps"]], rtol=1e-6)
    for (name, a), (_, b) in zip(ours["params"], theirs["params"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
    a, b = (stadyn_run[1][r]["loop"] for r in (0, 1))
    assert [s[1] for s in a["steps"]] == [x[0] + y[0] for x, y in zip(a["steps"], b["steps"])]
    assert a["params"] == b["params"]


def _more(rank: int) -> dict:
    with open(os.path.join(FIXTURES, "cntk27", f"more_rank{rank}.json")) as f:
        return json.load(f)


def _close(ours, theirs, path=""):
    """Equal structure and values, numbers to float rounding."""
    if isinstance(theirs, dict):
        assert sorted(ours) == sorted(theirs), path
        for k in theirs:
            _close(ours[k], theirs[k], f"{path}/{k}")
    elif isinstance(theirs, list):
        assert len(ours) == len(theirs), path
        for k, (a, b) in enumerate(zip(ours, theirs)):
            _close(a, b, f"{path}[{k}]")
    elif isinstance(theirs, float) and not isinstance(ours, str):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, err_msg=path)
    else:
        assert ours == theirs, path


@pytest.mark.parametrize("rank", [0, 1])
def test_learner_checkpoint_on_two_workers_as_cntk(stadyn_run, rank):
    """Each worker's data-parallel learner's ``create_checkpoint()`` is CNTK 2.7's Dictionary
    (its own smoothed gradients, the samples of both workers: 12) and restores into a new
    learner (counts and the checkpoint's rate); Stadyn refused it on more than one worker.
    The noise-injection seed is the process's count of learners made (the references ran
    this scenario alone): the restored learner's is the saved one."""
    ours = copy.deepcopy(stadyn_run[1][rank]["learner_checkpoint"])
    theirs = _more(rank)["learner_checkpoint"]
    seeds = [ours[k]["localLearners"].pop("noise_injection_seed") for k in ("saved", "restored")]
    assert seeds[0] == seeds[1]
    for k in ("saved", "restored"):
        theirs[k]["localLearners"].pop("noise_injection_seed")
    _close(ours, theirs)
    assert ours["saved"]["totalNumberOfSamplesSeen"] == 12


@pytest.mark.parametrize("rank", [0, 1])
def test_empty_share_of_arrays_refused_as_cntk(stadyn_run, rank):
    """Worker 1's share of the last minibatch of ``MinibatchSourceFromData`` has no rows: its
    train_minibatch and test_minibatch are CNTK 2.7's RuntimeError, nothing counted (Stadyn
    trained on worker 0's sample); the parameters after the two shared steps are CNTK's."""
    _close(stadyn_run[1][rank]["empty_share"], _more(rank)["empty_share"])


def _same_lines(ours, theirs):
    """Lines equal but for the last digit of their numbers."""
    number = re.compile(r"-?\d+\.\d+")
    assert len(ours) == len(theirs), (ours, theirs)
    for a, b in zip(ours, theirs):
        assert number.sub("#", a) == number.sub("#", b), (a, b)
        np.testing.assert_allclose([float(v) for v in number.findall(a)],
                                   [float(v) for v in number.findall(b)], rtol=1e-5, err_msg=b)


@pytest.mark.parametrize("rank", [0, 1])
def test_distributed_sync_lines_as_cntk(stadyn_run, rank):
    """A ProgressPrinter's ``distributed_freq=2`` prints CNTK 2.7's ``Distributed training:
    #Syncs elapsed = 2, #Samples elapsed = 24`` before the minibatch line of the step that
    was the second synchronisation (the workers trained alone for the first 8 samples), and a
    writer's ``on_write_distributed_sync_update`` gets CNTK's windows; Stadyn printed and
    called nothing."""
    ours, theirs = stadyn_run[1][rank]["sync_lines"], _more(rank)["sync_lines"]
    assert ours["syncs"] == theirs["syncs"] == [[[0, 18], [0, 1]], [[18, 24], [1, 2]],
                                                [[24, 32], [2, 3]]]
    _same_lines(ours["lines"], theirs["lines"])
