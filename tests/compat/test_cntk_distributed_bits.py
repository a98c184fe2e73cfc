"""compat.cntk's distributed learners used directly — ``data_parallel_distributed_learner`` (full
precision, 1-bit, ``distributed_after``), ``block_momentum_distributed_learner``, two
``DistributedLearner`` objects in one Trainer, one beside a plain learner — on 2 workers
against CNTK 2.7 run under ``mpiexec -n 2``: the parameters after each of 5 minibatches bit for
bit (references and the script that wrote them: ``tests/fixtures/cntk_distributed_bits/``).

The data, weights, rate and momentum have few bits, so that the arithmetic is exact in float32
and any difference of aggregation (which samples, which sums, block momentum's merge) shows in
the bits.  Where a value needs more bits than float32 has, each framework rounds its own sums
(CNTK's MKL, torch's kernels): 1-bit SGD's column means (divisions by counts) from the fourth
minibatch, ``distributed_after``'s from the fifth, and every minibatch's loss (the squared
errors summed in another order) differ there by a few units in the last place: compared so."""

from __future__ import annotations

import json
import os
import struct

import pytest

from local_launch import launch

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "cntk_distributed_bits")
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "src"))

# scenario: the minibatches after which every parameter is CNTK's to the bit (of 5)
EXACT = {"data_parallel": 5, "block_momentum": 5, "after": 4, "one_bit": 3}
ULPS = 4          # after those: float32 units in the last place apart at most


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("distributed_bits")
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([SRC] + [p for p in [os.environ.get("PYTHONPATH")]
                                                   if p]))
    env.pop("PYTEST_XDIST_WORKER", None)
    done = launch(["--nproc", "2",
                   "--timeout", "120", os.path.join(FIXTURES, "make_refs.py"), "stadyn",
                   str(folder)], env, 300)
    assert done.returncode == 0, done.stderr[-4000:]
    out = []
    for rank in (0, 1):
        with open(os.path.join(folder, f"rank{rank}.json")) as f:
            ours = json.load(f)
        with open(os.path.join(FIXTURES, "cntk27", f"rank{rank}.json")) as f:
            out.append((ours, json.load(f)))
    return out


def _units(text: str) -> int:
    return struct.unpack(">i", bytes.fromhex(text))[0]


@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.parametrize("scenario", sorted(EXACT))
def test_parameters_after_each_minibatch_are_cntks(runs, scenario, rank):
    ours, theirs = (r[scenario] for r in runs[rank])
    assert len(ours) == len(theirs) == 5
    for step, (a, b) in enumerate(zip(ours, theirs)):
        assert a["samples"] == b["samples"], step
        if step < EXACT[scenario]:
            assert (a["w"], a["b"]) == (b["w"], b["b"]), f"minibatch {step + 1}"
        else:
            apart = max(abs(_units(u) - _units(v))
                        for u, v in zip(a["w"] + a["b"], b["w"] + b["b"]))
            assert apart <= ULPS, f"minibatch {step + 1}: {apart} units apart"
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-6), step


@pytest.mark.parametrize("rank", [0, 1])
def test_learners_cntk_refuses_fail_as_cntks(runs, rank):
    """A distributed learner beside a plain one: the Trainer refuses it; two distributed
    learners: the first train_minibatch fails (none aggregates the metric)."""
    ours, theirs = runs[rank]
    for scenario in ("mixed", "two_learners"):
        assert ours[scenario] == theirs[scenario]
    assert theirs["two_learners"]["after_steps"] == 0
