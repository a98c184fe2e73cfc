"""NNabla's communicator on torch.distributed: two workers, and alone."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import stadyn as sd
from _dist_jobs import failure, run_job
from stadyn.compat.nnabla import communicators as C


def test_communicator_collectives_on_two_workers(tmp_path):
    result = run_job("comm", tmp_path, timeout=30)
    assert result.returncode == 0, failure(result)
    res = [json.loads((tmp_path / f"comm-rank{r}.json").read_text()) for r in range(2)]
    for r, got in enumerate(res):
        assert (got["rank"], got["size"], got["local_rank"]) == (r, 2, r)
        # packed all_reduce of a tensor and a NumPy array (reduced in place, shared memory)
        assert got["all_reduce"] == [[3.0] * 3, [[30.0, 30.0], [30.0, 30.0]]]
        assert got["all_reduce_division"] == [1.5] * 4           # (1 + 2) / 2
        assert got["bcast"] == [8.0, 8.0]                         # rank 1's 1 * 7 + 1
        assert got["all_gather"] == [[0.0, 5.0], [1.0, 6.0]]
        assert got["registered"] == [1.5, 1.5]                    # mean of grads 1 and 2
        assert "item 0 is None" in got["none_error"]
        assert got["groups"] == {"world": [0, 1], "pair": [0, 1]}
    assert res[0]["reduce"] == [5.0, 5.0]                         # 2 + 3 on the root


def test_communicator_refuses_what_it_cannot_reduce_in_place():
    """Results land in the arrays given: a read-only or non-contiguous NumPy array, or a
    missing gradient (None), is refused with a message naming the item."""
    comm = C.MultiProcessDataParallelCommunicator(sd.context("cpu"))
    comm.init()
    frozen = np.zeros(3, np.float32)
    frozen.flags.writeable = False
    strided = np.zeros((3, 4), np.float32)[:, ::2]
    for item, message in [(frozen, "array 1 is not a writable contiguous NumPy array"),
                          (strided, "array 1 is not a writable contiguous NumPy array"),
                          (None, "item 1 is None")]:
        with pytest.raises(TypeError, match=message):
            comm.all_reduce([torch.zeros(2), item])


def test_communicator_alone_leaves_data_as_it_is():
    comm = C.MultiProcessDataParalellCommunicator(sd.context("cpu"))
    comm.init()
    assert (comm.rank, comm.size, comm.local_rank) == (0, 1, 0)
    assert C.MultiProcessDataParalellCommunicator is C.MultiProcessDataParallelCommunicator
    t, a = torch.arange(3.0), np.arange(4, dtype=np.float32)
    comm.all_reduce([t, a], division=True)
    comm.bcast(t, src=0)
    comm.reduce([t], dst=0, division=True)
    comm.barrier()
    assert t.tolist() == [0.0, 1.0, 2.0] and a.tolist() == [0.0, 1.0, 2.0, 3.0]
    out = [torch.zeros(3)]
    comm.all_gather(t, out)
    assert out[0].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="2 output arrays for 1 worker"):
        comm.all_gather(t, [torch.zeros(3), torch.zeros(3)])
    with pytest.raises(TypeError, match="item 1 is a str"):
        comm.all_reduce([t, "x"])
    v = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
    comm.all_reduce([v])          # a Variable stands for its data
    assert v.d.tolist() == [1.0, 1.0]
