"""After ``Communicator.finalize()`` on 2 workers, ``rank()``, ``num_workers()`` and a second
distributed learner raise CNTK 2.7's RuntimeError ("MPIWrapperMpi: this is a singleton class
that can only be instantiated once per process"), as CNTK 2.7 under ``mpiexec -n 2`` does
(references and the script: ``tests/fixtures/cntk_distributed_finalize/``).  Before, Stadyn
joined a new group and the second learner's first gradient all-reduce waited for the
launcher's timeout or failed with the other worker gone."""

from __future__ import annotations

import json
import os

from local_launch import launch

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "cntk_distributed_finalize")
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "src"))


def test_the_communicator_after_finalize_is_refused_as_cntk(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([SRC] + [p for p in [os.environ.get("PYTHONPATH")]
                                                   if p]))
    env.pop("PYTEST_XDIST_WORKER", None)
    done = launch(["--nproc", "2",
                   "--timeout", "60", os.path.join(FIXTURES, "make_refs.py"), "stadyn",
                   str(tmp_path)], env, 200)
    assert done.returncode == 0, done.stderr[-4000:]
    for rank in (0, 1):
        with open(os.path.join(tmp_path, f"r{rank}.json")) as f:
            ours = json.load(f)
        with open(os.path.join(FIXTURES, "cntk27", f"r{rank}.json")) as f:
            theirs = json.load(f)
        assert ours == theirs, rank
