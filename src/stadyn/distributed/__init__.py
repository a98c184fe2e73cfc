"""Data-parallel training on ``torch.distributed`` (Gloo on CPUs, NCCL on GPUs).

Launch N workers with ``python -m stadyn.distributed.run --nproc N script.py`` (or ``torchrun
--nproc-per-node N script.py``, or ``stadyn train CONFIG --nproc N``); in the script::

    import stadyn.distributed as dist
    dist.init()                                  # a no-op when run alone
    dp = dist.DataParallel(params)
    trainer = Trainer(z, (loss, metric), learners, writers, data_parallel=dp)
    source.next_minibatch(global_size, num_data_partitions=dist.size(),
                          partition_index=dist.rank())

The global minibatch is the sum of the workers' minibatches: learners get the summed gradient
and the global sample count, so per-sample learning rates mean the same on 1 and N workers.
See docs/distributed.md.
"""

from ._block_agreement import BlockAgreement
from ._block_momentum import (BlockMomentum, BlockMomentumParallel, block_mismatch,
                              block_momentum_time_constant)
from ._checkpoint import restore_from_checkpoint, save_checkpoint
from ._collectives import (all_gather_tensors, all_reduce_sum, all_reduce_tensors, barrier,
                           broadcast_tensors, reduce_tensors)
from ._data import ShardedDataIterator, slice_data_iterator
from ._data_parallel import DataParallel
from ._env import (DistributedError, backend, default_timeout, get_group, group_ranks,
                   is_initialized, is_main, local_rank, local_size, named_groups, new_group, rank,
                   size)
from ._launch import run_workers
from ._process_group import init, shutdown
from ._quantized import QUANTIZED_BITS, QuantizedAllReduce

__all__ = [
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size", "is_main",
    "backend", "barrier", "new_group", "get_group", "group_ranks", "named_groups",
    "default_timeout", "DistributedError", "DataParallel", "all_reduce_sum",
    "all_reduce_tensors", "broadcast_tensors", "reduce_tensors", "all_gather_tensors",
    "ShardedDataIterator", "slice_data_iterator", "save_checkpoint", "restore_from_checkpoint",
    "run_workers", "BlockMomentum", "BlockAgreement", "BlockMomentumParallel",
    "block_momentum_time_constant", "block_mismatch", "QuantizedAllReduce", "QUANTIZED_BITS",
]
