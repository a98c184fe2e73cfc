"""The reference digits models: the batch normalisation choice of ``digits_cnn``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ArgumentError, StadynError
from stadyn.graph import topological_nodes
from stadyn.models import digits_cnn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _build(batch_norm: str):
    """The CNN on a fixed batch in a fresh registry: (output, op names, initial parameters,
    parameters after the training-phase forward: its running statistics moved)."""
    sd.seed(3)
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.Variable.from_numpy_array(
            np.random.RandomState(0).rand(4, 1, 8, 8).astype(np.float32) * 16)
        y = digits_cnn(x, batch_norm=batch_norm)
        initial = {k: v.d.copy() for k, v in sd.get_parameters(grad_only=False).items()}
        with sd.training(True):
            y.forward()
        after = {k: v.d.copy() for k, v in sd.get_parameters(grad_only=False).items()}
    return y.d.copy(), [n.spec.name for n in topological_nodes([y])], initial, after


def test_sync_batch_norm_uses_the_collective_op_with_the_same_parameters():
    y_local, ops_local, params_local, stats_local = _build("local")
    y_sync, ops_sync, params_sync, stats_sync = _build("sync")
    assert ops_local.count("batch_normalization") == 12
    assert "sync_batch_normalization" not in ops_local
    assert ops_sync.count("sync_batch_normalization") == 12
    assert "batch_normalization" not in ops_sync
    assert list(params_sync) == list(params_local)
    for name in params_local:
        np.testing.assert_array_equal(params_sync[name], params_local[name], err_msg=name)
    # One process: the global minibatch is the local one, so the statistics are the same.
    np.testing.assert_allclose(y_sync, y_local, rtol=1e-5, atol=1e-5)
    moved = [k for k in stats_local if not np.array_equal(stats_local[k], params_local[k])]
    assert "cnn/conv1/bn/mean" in moved
    for name in moved:
        np.testing.assert_allclose(stats_sync[name], stats_local[name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)


@pytest.mark.usefixtures("fresh_parameters")
def test_an_unknown_batch_norm_is_refused_naming_the_choices():
    with pytest.raises(ArgumentError,
                       match="batch_norm must be one of local, sync, got 'group'"):
        digits_cnn(sd.Variable((2, 1, 8, 8)), batch_norm="group")
    assert issubclass(ArgumentError, StadynError)


def test_the_data_parallel_benchmark_runs_alone_with_sync_batch_norm():
    """``python -m stadyn.bench._data_parallel --sync-bn`` in one process (no launcher)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"), OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-m", "stadyn.bench._data_parallel", "--sync-bn",
                          "--local-batch", "2", "--iterations", "1", "--warmup", "0"],
                         capture_output=True, text=True, env=env, timeout=280)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["workers"] == 1 and result["sync_bn"] is True and result["steps"] == 1
