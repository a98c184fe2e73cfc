"""compat.cntk ``training_session`` actions every so many minibatches with a distributed
learner, on 2 workers, against CNTK 2.7 run under ``mpiexec -n 2`` (references and the script
that wrote them: ``tests/fixtures/cntk_distributed_units/``).  CNTK 2.7 counts an action's
units by the Trainer's first learner, and a distributed learner (data parallel, block
momentum) counts samples only: its minibatches and sweeps stay 0, so no summary or checkpoint
every so many minibatches comes due, at the end either, and with ``preserve_all`` the session's
final checkpoint (``filename``, TrainingSession::SaveFinalCheckpoint) is the only one.  Before,
Stadyn counted the Trainer's minibatches (summaries and checkpoints came due every 2 and 3 of
them, and at the end) and wrote no final checkpoint."""

from __future__ import annotations

import json
import os
import sys

import pytest

from local_launch import launch

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "cntk_distributed_units")
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "src"))


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    folder = tmp_path_factory.mktemp("distributed_units")
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([SRC] + [p for p in [os.environ.get("PYTHONPATH")]
                                                   if p]))
    env.pop("PYTEST_XDIST_WORKER", None)
    done = launch(["--nproc", "2",
                   "--timeout", "120", os.path.join(FIXTURES, "make_refs.py"), "stadyn",
                   str(folder)], env, 300)
    assert done.returncode == 0, done.stderr[-4000:]
    return folder


@pytest.mark.parametrize("rank", [0, 1])
def test_minibatch_frequencies_of_distributed_learners_count_as_cntks(ours, rank):
    with open(os.path.join(ours, f"rank{rank}.json")) as f:
        got = json.load(f)
    with open(os.path.join(FIXTURES, "cntk27", f"rank{rank}.json")) as f:
        theirs = json.load(f)
    assert got == theirs


def test_preserve_all_saves_the_final_checkpoint_as_cntk(tmp_path, monkeypatch):
    """One process, a learner of its own: CNTK 2.7's session (make_preserve_all.py, its output
    below) keeps every checkpoint (``model0`` ... ``model6``) and then saves the last as
    ``model`` (TrainingSession::SaveFinalCheckpoint), which Stadyn did not write."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "make_preserve_all", os.path.join(FIXTURES, "make_preserve_all.py"))
    script = importlib.util.module_from_spec(spec)
    monkeypatch.setattr(sys, "argv", ["make_preserve_all.py", "stadyn", str(tmp_path)])
    spec.loader.exec_module(script)
    got = script.main(str(tmp_path))
    assert got["files"] == ["model", "model.ckp"] + [f"model{k}{e}" for k in range(7)
                                                     for e in ("", ".ckp")]
    assert got["summaries"] == [[8, 2, k] for k in range(1, 11)]


def test_a_frequency_in_sweeps_no_sweep_ended_gives_no_summary(tmp_path, monkeypatch):
    """20 samples of 40-sample data, a summary every sweep: no sweep ends, so CNTK 2.7's
    session (make_preserve_all.py ... by_sweep) gives none, at the end either (its count, 0,
    is a multiple of the frequency); Stadyn summarised at the end."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "make_preserve_all", os.path.join(FIXTURES, "make_preserve_all.py"))
    script = importlib.util.module_from_spec(spec)
    monkeypatch.setattr(sys, "argv", ["make_preserve_all.py", "stadyn", str(tmp_path)])
    spec.loader.exec_module(script)
    got = script.main(str(tmp_path), by_sweep=True)
    assert got == {"files": ["model", "model.ckp", "model0", "model0.ckp", "model1",
                             "model1.ckp"], "summaries": []}
