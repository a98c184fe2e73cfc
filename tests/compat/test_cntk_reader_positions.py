"""compat.cntk ``training_session`` over a CNTK-text-format ``MinibatchSource`` of an odd
sweep (45 samples), on 2 workers and alone, against CNTK 2.7 (under ``mpiexec -n 2`` and
alone; references and the script that wrote them: ``tests/fixtures/cntk_reader_positions/``):
each worker's reader keeps its own position, its turns counted from the sweep where the
reader was last set (so they swap after the odd sweep, and again where a minibatch size
schedule changes the size or a session restores), the checkpoint keeps each worker's position
as CNTK's ``{'minibatchSourcePosition': samples}``, and a session restored from CNTK's
checkpoint pair goes on where CNTK's does."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest
from local_launch import launch_beside

from stadyn.serialize import read_cntk_checkpoint

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "cntk_reader_positions")
THEIRS = os.path.join(FIXTURES, "cntk27")
SCRIPT = os.path.join(FIXTURES, "make_refs.py")
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "src"))
RANKS = [0, 1, "alone"]


def _env() -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([SRC] + [p for p in [os.environ.get("PYTHONPATH")]
                                                   if p]))
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The script run by ``stadyn.distributed.run --nproc 2`` and alone, side by side:
    ``(folder of the 2 workers', folder of the one's)``."""
    two, alone = (tmp_path_factory.mktemp(n) for n in ("positions_two", "positions_alone"))
    # the launcher run by this process (tests/local_launch.py), the script alone beside it
    launched, beside = launch_beside(
        ["--nproc", "2", "--timeout", "120", SCRIPT, "stadyn", str(two), THEIRS],
        [sys.executable, SCRIPT, "stadyn", str(alone), os.path.join(THEIRS, "alone")],
        _env(), limit=300)
    for process in (launched, beside):
        assert process.returncode == 0, process.stderr[-4000:]
    return two, alone


def _pick(runs, rank):
    """(our folder, CNTK's folder, the rank's json file name)."""
    if rank == "alone":
        return runs[1], os.path.join(THEIRS, "alone"), "rank0.json"
    return runs[0], THEIRS, f"rank{rank}.json"


def _json(folder, name) -> dict:
    with open(os.path.join(folder, name)) as f:
        return json.load(f)


def _close(ours, theirs, what: str) -> None:
    assert ours["seen"] == theirs["seen"], what
    assert ours["position"] == theirs["position"], what
    assert [t[0] for t in ours["training"]] == [t[0] for t in theirs["training"]], what
    for key in ("training", "params"):
        a, b = (np.array([v for row in x[key] for v in row[1]], dtype=float)
                for x in (ours, theirs))
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6, err_msg=f"{what}: {key}")


@pytest.mark.parametrize("rank", RANKS)
@pytest.mark.parametrize("scenario", ["first", "second", "resized"])
def test_session_reads_as_cntk(runs, scenario, rank):
    """Each minibatch's samples and loss (so the data each worker read), the Trainer's count,
    the parameters after and the reader's position at the end: CNTK 2.7's (``first``: the
    workers' turns swap in the second sweep; ``second``: restored from ``first``'s
    checkpoint; ``resized``: minibatches of 8, then 5)."""
    ours_dir, theirs_dir, name = _pick(runs, rank)
    _close(_json(ours_dir, name)[scenario], _json(theirs_dir, name)[scenario],
           f"{scenario} (worker {rank})")


@pytest.mark.parametrize("rank", RANKS)
def test_session_restored_from_cntk_pair(runs, rank):
    """A session restored from CNTK 2.7's checkpoint pair of ``first`` reads on from CNTK's
    ``{'minibatchSourcePosition': samples}`` of each worker, as CNTK's own ``second``."""
    ours_dir, theirs_dir, name = _pick(runs, rank)
    _close(_json(ours_dir, name)["second_from_cntk"], _json(theirs_dir, name)["second"],
           f"second_from_cntk (worker {rank})")


@pytest.mark.parametrize("rank", [0, "alone"])
def test_checkpoint_keeps_cntk_positions(runs, rank):
    """The ``.ckp`` Stadyn writes keeps the reader's position under CNTK's
    ``TrainingMinibatchSource`` as CNTK 2.7's does: worker 0's, and every worker's own."""
    ours_dir, theirs_dir, _ = _pick(runs, rank)
    ours, theirs = (read_cntk_checkpoint(os.path.join(d, "first_model"))[2]
                    for d in (ours_dir, theirs_dir))
    key = "TrainingMinibatchSource"
    assert ours["ExternalState"][key] == theirs["ExternalState"][key]
    assert sorted(ours["DistributedState"]) == sorted(theirs["DistributedState"])
    for worker, state in theirs["DistributedState"].items():
        assert ours["DistributedState"][worker]["external_worker_state"][key] == \
            state["external_worker_state"][key]


def test_partition_with_no_chunk_walks_to_the_end_as_cntk(tmp_path, monkeypatch):
    """A randomized source read as a partition none of whose chunks is (make_no_chunk.py,
    CNTK 2.7's positions in cntk27/no_chunk.json): CNTK's reader walks to the end of the data
    -- ``max_samples``, ``max_sweeps`` sweeps or, data repeated for ever, INT64_MAX samples --
    and gives nothing more, to any partition.  Stadyn's stayed at 0 without ``max_sweeps``
    (and then read on whole)."""
    import importlib.util
    script = os.path.join(FIXTURES, "make_no_chunk.py")
    spec = importlib.util.spec_from_file_location("make_no_chunk", script)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setattr(sys, "argv", ["make_no_chunk.py", "stadyn"])
    spec.loader.exec_module(module)
    with open(os.path.join(THEIRS, "no_chunk.json")) as f:
        assert module.main(str(tmp_path)) == json.load(f)
