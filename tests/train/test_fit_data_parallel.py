"""``Trainer.fit`` data-parallel: each worker reads its partition of every global minibatch, so
two workers train the weights one process trains with the same (global) minibatch sizes, and
the minibatch records (samples, loss and extra outputs) are those of the global minibatch."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from fit_dp_worker import train
from local_launch import launch

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fit_dp_worker.py")


@pytest.mark.usefixtures("one_torch_thread")
def test_two_workers_fit_as_one_process_with_the_global_minibatch(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("PYTEST_XDIST_WORKER", None)
    # the launcher run by this process (tests/local_launch.py), its workers processes of their
    # own
    result = launch(["--nproc", "2", "--timeout", "60", WORKER, str(tmp_path)], env, limit=180)
    assert result.returncode == 0, result.stderr[-3000:]
    reference, reference_steps = train(None)
    # 28 samples an epoch: global minibatches of 8 then 6, cut at the epoch's end
    assert [s["samples"] for s in reference_steps] == [8, 8, 8, 4, 6, 6, 6, 6, 4]
    for rank in range(2):
        params = dict(np.load(tmp_path / f"params-rank{rank}.npz"))
        for name, value in reference.items():
            np.testing.assert_allclose(params[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
        steps = json.loads((tmp_path / f"steps-rank{rank}.json").read_text())
        assert [s["samples"] for s in steps] == [s["samples"] for s in reference_steps]
        np.testing.assert_allclose([s["loss_sum"] for s in steps],
                                   [s["loss_sum"] for s in reference_steps], rtol=1e-5)
        np.testing.assert_allclose([s["outputs"][0] for s in steps],
                                   [s["outputs"][0] for s in reference_steps], rtol=1e-5)
