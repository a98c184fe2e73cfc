"""stadyn.distributed in one process: set-up and its errors, DataParallel alone, sharded data
iterators against the single-process iterator, synchronised batch norm as a layer option."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.distributed as dist
import stadyn.functions as F
import stadyn.layers as L
from stadyn.io._data_iterator import DataIterator, SimpleDataSource

_LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                "MASTER_PORT", "STADYN_HEARTBEAT_DIR")


@pytest.fixture
def alone(monkeypatch):
    for name in _LAUNCH_VARS:
        monkeypatch.delenv(name, raising=False)


def test_init_alone_is_a_no_op(alone):
    assert dist.init() is False
    assert (dist.rank(), dist.size(), dist.local_rank(), dist.is_main()) == (0, 1, 0, True)
    assert not dist.is_initialized() and dist.backend() is None
    dist.barrier()


def test_init_without_the_launcher_variables_says_how_to_launch(alone, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(dist.DistributedError) as info:
        dist.init()
    message = str(info.value)
    assert "MASTER_ADDR, MASTER_PORT are not set" in message
    assert "python -m stadyn.distributed.run --nproc N" in message and "torchrun" in message


def test_collectives_refuse_to_run_when_the_worker_did_not_join(alone, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    with pytest.raises(dist.DistributedError, match=r"rank 1: .*call stadyn.distributed.init"):
        dist.all_reduce_sum(torch.ones(2))
    with pytest.raises(dist.DistributedError, match="call stadyn.distributed.init"):
        dist.barrier()


def test_bad_rank_is_an_error(alone, monkeypatch):
    for name, value in (("WORLD_SIZE", "2"), ("RANK", "2"), ("MASTER_ADDR", "127.0.0.1"),
                        ("MASTER_PORT", "1")):
        monkeypatch.setenv(name, value)
    with pytest.raises(dist.DistributedError, match=r"RANK=2 is outside 0..1"):
        dist.init()


@pytest.mark.usefixtures("fresh_parameters")
def test_data_parallel_alone_changes_nothing(alone):
    w = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
    w.grad = torch.tensor([3.0, 4.0])
    dp = dist.DataParallel({"w": w})
    assert (dp.rank, dp.size, dp.is_main) == (0, 1, True)
    dp.broadcast_parameters({"w": w})
    dp.all_reduce_gradients(average=True)
    assert w.grad.tolist() == [3.0, 4.0] and w.d.tolist() == [1.0, 2.0]
    assert dp.synchronize([w], 16, 2.5, None) == (16, 2.5, None)
    assert dp.all_reduce_scalars(1.0, 2.0) == (1.0, 2.0)


def test_block_momentum_steps_a_learner_through_its_class(alone):
    # a learner with an attribute of its own named ``step`` (a CNTK UserLearner's
    # ``self.step = 0.02``) is stepped as the Trainer's _step_learners steps it: by its class's
    # step (hand-computed: sgd of rate 0.5 on a gradient of ones, one sample)
    import stadyn.learners as learners
    w = sd.Variable.from_numpy_array(np.zeros(2), need_grad=True)
    hook = dist.BlockMomentumParallel([w], dist.BlockMomentum(1, 1, None))
    learner = learners.sgd([w], 0.5)
    learner.step = 0.02
    w.g = np.ones(2)
    hook.synchronize([w], 1, 0.0, None)
    hook.step_learners([learner], 1)
    assert w.d.tolist() == [-0.5, -0.5]


def test_data_parallel_needs_its_parameters_somewhere(alone, monkeypatch):
    dp = dist.DataParallel()
    monkeypatch.setattr(type(dp), "size", property(lambda self: 2))
    with pytest.raises(dist.DistributedError, match="which parameters"):
        dp.all_reduce_gradients()


# ---------------------------------------------------------------------------------------------
# Sharded data iterators
# ---------------------------------------------------------------------------------------------
def _source(n: int) -> SimpleDataSource:
    return SimpleDataSource(lambda i: (np.array([i], np.int64), np.array([i % 3])), n)


@pytest.mark.parametrize("shuffle", [False, True])
def test_shards_together_are_the_single_process_batches(shuffle):
    n, local, workers = 23, 4, 3
    single = DataIterator(_source(n), local * workers, np.random.RandomState(7),
                          shuffle=shuffle, use_thread=False)
    shards = [dist.ShardedDataIterator(_source(n), local, rng=7, shuffle=shuffle,
                                       num_of_slices=workers, slice_pos=r)
              for r in range(workers)]
    for _ in range(9):            # crosses several epoch boundaries
        expected = single.next()[0].ravel()
        parts = [s.next()[0].ravel() for s in shards]
        # Worker r holds the positions r, r + W, r + 2W, ... of the global minibatch.
        merged = np.empty(local * workers, np.int64)
        for r, part in enumerate(parts):
            merged[r::workers] = part
        np.testing.assert_array_equal(merged, expected)
        assert {s.epoch for s in shards} == {single.epoch}
    assert shards[0].size == n and shards[0].global_batch_size == 12


def test_every_sample_once_per_epoch_across_shards():
    n, local, workers = 24, 3, 2
    shards = [dist.ShardedDataIterator(_source(n), local, rng=3, shuffle=True,
                                       num_of_slices=workers, slice_pos=r) for r in range(2)]
    for epoch in range(3):
        seen = np.concatenate([s.next()[0].ravel() for _ in range(n // (local * workers))
                               for s in shards])
        assert sorted(seen.tolist()) == list(range(n)), f"epoch {epoch}"


def test_checkpoint_restores_the_position_and_the_order():
    it = dist.ShardedDataIterator(_source(10), 3, rng=5, shuffle=True, num_of_slices=2,
                                  slice_pos=1)
    for _ in range(4):
        it.next()
    state = it.get_checkpoint_state()
    expected = [it.next()[0].ravel().tolist() for _ in range(5)]
    fresh = dist.ShardedDataIterator(_source(10), 3, rng=99, shuffle=True, num_of_slices=2,
                                     slice_pos=1)
    import json
    fresh.restore_from_checkpoint(json.loads(json.dumps(state)))     # survives JSON
    assert [fresh.next()[0].ravel().tolist() for _ in range(5)] == expected
    with pytest.raises(ValueError, match="taken on 10 samples.*this iterator has 12"):
        dist.ShardedDataIterator(_source(12), 3, shuffle=True).restore_from_checkpoint(state)


def test_epoch_callbacks_and_slice_data_iterator():
    ends = []
    it = DataIterator(_source(8), 2, shuffle=True, use_thread=False)
    shard = dist.slice_data_iterator(it, rng=1, num_of_slices=2, slice_pos=0)
    shard.register_epoch_end_callback(ends.append)
    assert shard.batch_size == 2 and shard.global_batch_size == 4
    for _ in range(5):
        shard.next()
    assert ends == [0, 1] and shard.epoch == 2 and shard.position == 4
    with pytest.raises(dist.DistributedError, match="slice_pos"):
        dist.ShardedDataIterator(_source(8), 2, num_of_slices=2, slice_pos=2)


# ---------------------------------------------------------------------------------------------
# Synchronised batch normalisation, alone
# ---------------------------------------------------------------------------------------------
@pytest.mark.xfail(strict=True, reason=(
    "since the CNTK-shaped BatchNormalization (cntk_batch_normalization, CNTK's count-based "
    "running statistics: the first minibatch sets the mean), sync=True (sync_batch_normalization, "
    "momentum 0.9 running statistics) updates the running mean and variance differently; the "
    "outputs and the learnable parameters agree. To be unified"))
def test_batch_normalization_layer_sync_option(alone):
    rng = np.random.RandomState(0)
    data = rng.randn(6, 4, 3, 3).astype(np.float32) * 2 + 1
    outputs = {}
    for sync in (False, True):
        with sd.parameter_registry(sd.ParameterRegistry()):
            with L.default_options(sync=sync):
                layer = L.BatchNormalization(map_rank=1)
            x = sd.Variable.from_numpy_array(data)
            y = layer(x)
            assert y.parent.spec.name == ("sync_batch_normalization" if sync
                                          else "cntk_batch_normalization")
            with sd.training(True):
                y.forward()
            outputs[sync] = (y.d.copy(), {k: v.d.copy() for k, v in
                                          sd.get_parameters(grad_only=False).items()})
    np.testing.assert_allclose(outputs[True][0], outputs[False][0], rtol=1e-5, atol=1e-5)
    for k, v in outputs[False][1].items():
        # sync batch norm keeps (1, C, 1, 1) statistics, CNTK's layer (C,): the same numbers
        np.testing.assert_allclose(outputs[True][1][k].reshape(v.shape), v, rtol=1e-5, atol=1e-6,
                                   err_msg=k)
    assert L.BatchNormalization(sync=True).sync


@pytest.mark.usefixtures("fresh_parameters")
def test_a_static_graph_with_sync_batch_norm_runs_eagerly(alone):
    import stadyn.parametric_functions as PF
    x = sd.Variable.from_numpy_array(np.random.RandomState(1).randn(4, 3, 2, 2))
    y = F.sum(PF.sync_batch_normalization(x))
    y.forward()
    assert "cannot be traced: sync_batch_normalization" in y._plan.code


@pytest.mark.parametrize("module", ["stadyn.distributed._env",
                                    "stadyn.distributed._process_group",
                                    "stadyn.distributed._data",
                                    "stadyn.distributed._data_parallel",
                                    "stadyn.distributed._collectives",
                                    "stadyn.compat.nnabla.communicators"])
def test_docstring_examples(alone, module):
    result = doctest.testmod(importlib.import_module(module),
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
