"""``cntk.train.distributed``: data-parallel training over Stadyn's process groups.

CNTK ran its workers under MPI (``mpiexec -n 4 python train.py``); here the workers are the
processes of OpenMPI's ``mpiexec`` as there, or of Stadyn's launcher or ``torchrun``
(:mod:`stadyn.distributed`), and a program started alone is one worker of one, as CNTK's was
without ``mpiexec``.  :func:`data_parallel_distributed_learner`
wraps a learner: before each update the gradients are summed over the workers and so is the
minibatch's sample count, so every worker takes the same step (CNTK's data-parallel SGD with
32-bit gradients).  A Trainer of such learners on several workers reports the workers' sums
(sample counts, losses, metrics, test minibatches), and ``training_session`` has each worker
read its share of every minibatch, as CNTK 2.7's (see docs/distributed.md).
:func:`block_momentum_distributed_learner` has each worker train alone on its own minibatches
and the workers merge their models every ``block_size`` samples (all workers' samples), as
CNTK 2.7's block momentum (:class:`stadyn.distributed.BlockMomentum`, the workers agreeing on
each step with :class:`stadyn.distributed.BlockAgreement`); the Trainer's figures are then
this worker's own but for the sample count seen, which is all workers' as of the last
agreement, and the training summaries' loss and metric, averaged over the workers.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> D = C.train.distributed
    >>> x, y = C.input_variable(3), C.input_variable(2)
    >>> z = C.layers.Dense(2)(x)
    >>> learner = D.data_parallel_distributed_learner(
    ...     C.sgd(z.parameters, C.learning_parameter_schedule(0.1)))
    >>> trainer = C.Trainer(z, C.squared_error(z, y), [learner])
    >>> trainer.train_minibatch({x: np.ones((2, 3), np.float32), y: np.zeros((2, 2), np.float32)})
    True
    >>> D.Communicator.rank(), D.Communicator.num_workers(), learner.communicator().is_main()
    (0, 1, True)
    >>> D.Communicator.finalize()
"""

from __future__ import annotations

import socket

import numpy as np
import torch

from .... import distributed as _dist
from ...._errors import ConfigError
from ....graph import data_of
from ._wrapped import _WrappedOptimizer

__all__ = ["WorkerDescriptor", "Communicator", "DistributedLearner", "mpi_communicator",
           "data_parallel_distributed_learner", "block_momentum_distributed_learner"]


# CNTK 2.7's words for any use of MPI after ``Communicator.finalize()`` deleted its MPI wrapper
# (MPIWrapper's singleton, made once per process: Source/Common/MPIWrapper.cpp)
_FINALIZED_ERROR = ("MPIWrapperMpi: this is a singleton class that can only be instantiated "
                    "once per process")
_FINALIZED = [False]        # whether finalize() ended this process's group of workers


def _joined() -> bool:
    """Whether this process is one of several workers; joins their group the first time (CNTK
    joined MPI when the first distributed object was made).  After :meth:`Communicator.finalize`
    ended the group: CNTK 2.7's RuntimeError (MPI is not started again in a process; Stadyn's
    group was, and its first collective waited for the launcher's timeout)."""
    if _FINALIZED[0]:
        raise RuntimeError(_FINALIZED_ERROR)
    if not _dist.is_initialized() and _dist.size() > 1:     # (a launcher's, or mpiexec's)
        _dist.init()
    return _dist.is_initialized()


class WorkerDescriptor:
    """One worker: its ``global_rank`` and ``host_id`` (the host's name)."""

    def __init__(self, global_rank: int, host_id: str):
        self.global_rank, self.host_id = int(global_rank), str(host_id)

    def is_main(self) -> bool:
        """Whether this is worker 0."""
        return self.global_rank == 0

    def __repr__(self) -> str:
        return f"WorkerDescriptor(global_rank={self.global_rank}, host_id={self.host_id!r})"


class Communicator:
    """The workers of the job (CNTK's MPI communicator over Stadyn's process group)."""

    @staticmethod
    def rank() -> int:
        """This worker's rank (0 when running alone)."""
        return _dist.rank() if _joined() else 0

    @staticmethod
    def num_workers() -> int:
        """How many workers the job has (1 when running alone)."""
        return _dist.size() if _joined() else 1

    @staticmethod
    def finalize() -> None:
        """End the job's communication (call once, at the end of the program): of several
        workers, later uses of the communicator (``rank``, a distributed learner) raise CNTK
        2.7's RuntimeError; a second ``finalize`` does nothing."""
        if _dist.is_initialized():
            _dist.shutdown()
            _FINALIZED[0] = True

    def workers(self) -> list[WorkerDescriptor]:
        """Every worker, by rank (the host names of the others are not known here: this
        host's name stands for them)."""
        return [WorkerDescriptor(r, socket.gethostname()) for r in range(self.num_workers())]

    def current_worker(self) -> WorkerDescriptor:
        """This worker."""
        return WorkerDescriptor(self.rank(), socket.gethostname())

    def is_main(self) -> bool:
        """Whether this is worker 0 (the one that writes checkpoints and logs)."""
        return self.rank() == 0

    def barrier(self) -> None:
        """Wait until every worker is here."""
        if _joined():
            _dist.barrier()


def mpi_communicator() -> Communicator:
    """The communicator of all workers."""
    return Communicator()


class DistributedLearner(_WrappedOptimizer):
    """A learner whose updates are those of the workers together (see the module docstring).
    Everything else (``learning_rate``, ``parameters``, the sample counts...) is the wrapped
    learner's; the optimizer protocol (:class:`stadyn.solvers.Optimizer`) too, but for
    :meth:`step`, which sums over the workers.  As CNTK 2.7's, it has no ``update``: a Trainer
    updates it (the wrapped learner's ``update`` would update this worker alone)."""

    def __init__(self, learner, distributed_after: int = 0, num_quantization_bits: int = 32):
        self._learner = learner
        self._after = int(distributed_after)
        self._communicator = Communicator()
        self._parallel = _dist.DataParallel() if _joined() else None
        # 1-bit SGD (fewer than 32 bits): gradients summed quantized, with error feedback
        # (CNTK 2.7's QuantizedDataParallelDistributedLearner; alone, nothing is quantized)
        self._quantized = _dist.QuantizedAllReduce(num_quantization_bits) \
            if num_quantization_bits < 32 and self._parallel is not None \
            and self._parallel.size > 1 else None
        self._metric_aggregator = False
        self._summed = False     # the next update's gradients were summed by the Trainer
        # (not a CntkLearner, so it has no rate to report: CNTK 2.7 writes no 'Learning rate'
        # or 'Momentum' line for a distributed learner, in a Trainer or Function.train alike)

    def __getattr__(self, name):
        if name == "update":        # (CNTK 2.7's DistributedLearner has none)
            raise AttributeError(f"'{type(self).__name__}' object has no attribute 'update' "
                                 "(CNTK 2.7's neither: a Trainer updates a distributed "
                                 "learner)")
        return getattr(self.__dict__["_learner"], name)

    def _shared_update(self, sample_count):
        """Sum the gradients and the sample count over the workers, then update."""
        if self._summed:
            self._summed = False       # (the Trainer's _Aggregation summed them, and the count)
        elif self._sharing():
            self._sum_gradients()
            total = self._parallel.all_reduce_scalars(float(sample_count))[0]
            sample_count = int(round(total))
        return _step(self._learner, sample_count)

    def _sum_gradients(self) -> None:
        """The gradients summed over the workers: by 1-bit SGD (a parameter without one has
        CNTK's zeros) if this learner quantizes, in full precision otherwise."""
        params = list(self._learner.named_parameters().values())
        if self._quantized is not None:
            self._quantized.all_reduce_gradients(params)
        else:
            self._parallel.all_reduce_gradients(params)

    def _forget_residuals(self) -> None:
        """At a checkpoint, 1-bit SGD's residuals are zeroed on every worker (CNTK 2.7's
        QuantizedDataParallelDistributedLearner::CreateCheckpoint: they are not saved)."""
        if self._quantized is not None:
            self._quantized.reset()

    def set_as_metric_aggregator(self) -> None:
        """Make this the learner that aggregates the metric over the workers: of several
        distributed learners in one Trainer, CNTK 2.7 needs one marked (a lone one is marked
        by the Trainer).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> z = C.layers.Dense(2)(C.input_variable(3))
            >>> learner = C.train.distributed.data_parallel_distributed_learner(
            ...     C.sgd(z.parameters, C.learning_parameter_schedule(0.1)))
            >>> learner.is_metric_aggregator()
            False
            >>> learner.set_as_metric_aggregator(); learner.is_metric_aggregator()
            True
        """
        self._metric_aggregator = True

    def is_metric_aggregator(self) -> bool:
        """Whether :meth:`set_as_metric_aggregator` (or a Trainer of this learner alone)
        marked it."""
        return self._metric_aggregator

    def _sharing(self) -> bool:
        """Whether the workers share this update: several of them, and ``distributed_after``
        samples seen (before, each trains alone: DataParallelDistributedLearner::Update)."""
        return self._parallel is not None and \
            int(getattr(self._learner, "samples_seen", 0)) >= self._after

    @staticmethod
    def _trainer_aggregation(learners):
        """What a Trainer of ``learners`` sums over the workers (:func:`_aggregation_of`;
        found by the Trainer on the learner's class, which it does not import)."""
        return _aggregation_of(learners)

    @staticmethod
    def _trainer_tests(learners):
        """What a Trainer of ``learners`` sums over the workers of a training session's test
        and cross-validation minibatches (the aggregation's, or block momentum learners' of
        several workers; None otherwise)."""
        found = _aggregation_of(learners)
        if found is not None:
            return found
        blocks = [x for x in learners or () if isinstance(x, _BlockMomentumLearner)
                  and _of_several_workers(x)]
        return _WorkerTests(blocks[0]._parallel) if blocks else None

    def parameters(self) -> list:
        """The parameters the wrapped learner updates (a method, as on CNTK's
        DistributedLearner)."""
        return self._learner.parameters

    def communicator(self) -> Communicator:
        """The workers this learner averages over."""
        return self._communicator

    get_communicator = communicator

    def parallelization_after(self) -> int:
        """The samples after which the workers start to share their updates."""
        return self._after

    def create_checkpoint(self):
        """CNTK 2.7's Dictionary of a data-parallel distributed learner, on one worker or
        several (each worker's own, DistributedLearnerBase::CreateCheckpoint):
        ``{"localLearners": <the wrapped learner's, as a dict>, "totalNumberOfSamplesSeen":
        n}``, n the samples of all workers; 1-bit SGD's residuals are zeroed (not saved)."""
        self._forget_residuals()
        local = self._learner.create_checkpoint()
        return type(local)({"localLearners": dict(local),
                            "totalNumberOfSamplesSeen": int(self._learner.samples_seen)})

    def restore_from_checkpoint(self, checkpoint) -> None:
        """Restore :meth:`create_checkpoint`'s Dictionary: its ``localLearners`` goes to the
        wrapped learner (as a Dictionary of the outer one's class: a plain dict given
        stays one, which the learner refuses with CNTK 2.7's TypeError).  A Dictionary
        without ``localLearners`` (the wrapped learner's own) is CNTK 2.7's RuntimeError."""
        if not isinstance(checkpoint, dict):
            return self._learner.restore_from_checkpoint(checkpoint)     # (its TypeError)
        if "localLearners" not in checkpoint:
            if type(checkpoint) is dict:
                return self._learner.restore_from_checkpoint(checkpoint)  # (its TypeError)
            raise RuntimeError(
                "_Map_base::at (restore_from_checkpoint: a distributed learner's checkpoint "
                "holds 'localLearners' and 'totalNumberOfSamplesSeen', as its "
                f"create_checkpoint() gives; this one has {sorted(checkpoint)[:4]}...: the "
                "wrapped learner's own goes to that learner)")
        self._learner.restore_from_checkpoint(type(checkpoint)(checkpoint["localLearners"]))


class _BlockMomentumLearner(DistributedLearner):
    """A learner each worker updates alone, the workers merging their models at the end of
    every block (:class:`stadyn.distributed.BlockMomentum`), as CNTK 2.7's
    BlockMomentumDistributedLearner; its ``total_number_of_samples_seen`` (and a Trainer's) is
    all workers' samples as of the last merge and this worker's since."""

    def __init__(self, learner, block: _dist.BlockMomentum, reset_after_block: bool):
        super().__init__(learner, block.after)
        self._block, self._reset_after_block = block, bool(reset_after_block)
        self._agreement = _dist.BlockAgreement(block, self._parallel, [learner],
                                               reset_after_block)

    @property
    def total_number_of_samples_seen(self) -> int:
        """All workers' samples as of the last block's end, and this worker's since (of the
        type of the wrapped learner's count: CNTK's may be called too)."""
        kind = type(self._learner.total_number_of_samples_seen)
        return kind(self._block.sample_count)

    def minibatch_size_scale_factor(self) -> int:
        """How many times a ``training_session``'s minibatch size each read takes (the
        workers: each worker's share is a whole minibatch; CNTK's MinibatchSizeScaleFactor)."""
        return 1 if self._parallel is None else self._parallel.size

    def _values(self) -> list:
        return [data_of(p) for p in self._learner.named_parameters().values()]

    def _shared_update(self, sample_count):
        """This worker's update, then the block's end when its block is full (the workers end
        it together: each ends its block at the same minibatch of its own)."""
        self._block.start(self._values())      # (the first block starts at the first update)
        if sample_count:
            _step(self._learner, sample_count)
        return self._agreement.update(self._values(), int(sample_count), at_end=False)

    def _end_of_data(self) -> bool:
        """This worker is out of data (an empty minibatch): it takes its part in the others'
        block ends until every worker is, then in the last merge; False then (CNTK's
        Update with ``atEndOfData``)."""
        return self._agreement.update(self._values(), 0, at_end=True)

    def _average_metrics(self, loss, metric):
        """The summary's loss and metric sums averaged over the workers, or None (see
        :meth:`stadyn.distributed.BlockAgreement.average_metrics`)."""
        return self._agreement.average_metrics(self._values(), loss, metric)

    def create_checkpoint(self):
        """CNTK 2.7's Dictionary of a block momentum learner, after the block's end it forces
        (every worker calls it): ``{"base": {"localLearners": <the wrapped learner's>,
        "totalNumberOfSamplesSeen": n}, "localTotalNumSamplesSeen": m,
        "blockLevelSmoothedGradient": [<array per parameter>]}``, n all workers' samples, m
        this worker's."""
        self._checkpoint_merge()
        local = self._learner.create_checkpoint()
        kind = type(local)
        return kind({"base": kind({"localLearners": dict(local),
                                   "totalNumberOfSamplesSeen": self._block.sample_count}),
                     "localTotalNumSamplesSeen": self._block.local_total,
                     "blockLevelSmoothedGradient": [t.detach().cpu().numpy().copy()
                                                    for t in self._block.smoothed]})

    def _checkpoint_merge(self) -> None:
        """The merge before a checkpoint (every worker; the others' block ends first)."""
        self._agreement.checkpoint(self._values())

    def _block_state(self) -> tuple[int, int, list]:
        """``(all workers' samples, this worker's, the block-level smoothed gradients)``."""
        return self._block.sample_count, self._block.local_total, \
            [t.detach().cpu().numpy().copy() for t in self._block.smoothed or ()]

    def _check_block_state(self, smoothed, where: str = "") -> None:
        """Refuse block-level smoothed gradients not one per parameter of its shape
        (:func:`stadyn.distributed.block_mismatch`, as a Trainer's checkpoint is checked)."""
        values = self._values()
        wrong = _dist.block_mismatch(values, list(smoothed))
        if wrong is not None and wrong[0] == "count":
            raise RuntimeError("Inconsistent parameter size between learner and checkpoint "
                               f"({len(values)} parameters, {len(smoothed)} in the checkpoint"
                               f"{where})")
        if wrong is not None:
            g, v = smoothed[wrong[1]], values[wrong[1]]
            raise RuntimeError(f"a block-level smoothed gradient of shape "
                               f"{tuple(np.shape(g))} for a parameter of shape "
                               f"{tuple(v.shape)}{where}")

    def _restore_block(self, total: int, local_total: int, smoothed) -> None:
        """Set the block state (the next update starts a block at the model then)."""
        block = self._block
        block.sample_count, block.local_total = int(total), int(local_total)
        block.smoothed = [torch.as_tensor(np.asarray(g)).to(v).clone()
                          for g, v in zip(smoothed, self._values())]
        block.begin = None

    def state_dict(self):
        """The wrapped learner's state, and the block state under ``"block_momentum"`` (for
        Stadyn's own checkpoint, where the graph has no CNTK form)."""
        total, local, smoothed = self._block_state()
        return dict(self._learner.state_dict(), block_momentum={
            "samples": total, "local_samples": local,
            "smoothed": {str(k): torch.as_tensor(g) for k, g in enumerate(smoothed)}})

    def check_state_dict(self, state) -> None:
        block = state.get("block_momentum") if isinstance(state, dict) else None
        if block is not None:
            smoothed = block.get("smoothed", {})
            try:
                self._check_block_state([smoothed[str(k)] for k in range(len(smoothed))])
            except (RuntimeError, KeyError) as exc:
                raise ConfigError(f"the block momentum state: {exc}") from None
        self._learner.check_state_dict(_without_block(state))

    def load_state_dict(self, state) -> None:
        block = state.get("block_momentum") if isinstance(state, dict) else None
        self._learner.load_state_dict(_without_block(state))
        if block is not None:
            smoothed = block["smoothed"]
            self._restore_block(int(block["samples"]), int(block["local_samples"]),
                                [smoothed[str(k)] for k in range(len(smoothed))])

    def restore_from_checkpoint(self, checkpoint) -> None:
        """Restore :meth:`create_checkpoint`'s Dictionary (the next update starts a block)."""
        try:
            base, local_total = checkpoint["base"], checkpoint["localTotalNumSamplesSeen"]
            smoothed = checkpoint["blockLevelSmoothedGradient"]
        except (KeyError, TypeError):
            raise RuntimeError(
                "_Map_base::at (restore_from_checkpoint: a block momentum learner's checkpoint "
                "holds 'base', 'localTotalNumSamplesSeen' and 'blockLevelSmoothedGradient', as "
                "its create_checkpoint() gives)") from None
        self._check_block_state(smoothed)
        self._learner.restore_from_checkpoint(type(checkpoint)(base["localLearners"]))
        self._restore_block(base["totalNumberOfSamplesSeen"], local_total, smoothed)


def _step(learner, sample_count: int) -> bool:
    """``learner``'s update for the minibatch, as the Trainer steps a learner: through its
    class (a UserLearner's ``update`` is the user's ``update(gradient_values, ...)``, its
    ``step`` may be the user's attribute)."""
    return type(learner).step(learner, sample_count)


def _without_block(state):
    """A learner state without the block state (:meth:`_BlockMomentumLearner.state_dict`)."""
    if not isinstance(state, dict):
        return state
    return {k: v for k, v in state.items() if k != "block_momentum"}


class _WorkerTests:
    """A training session's test and cross-validation minibatches summed over the workers
    (``parallel``), each testing its share: their metric sums and counts (Evaluator.cpp
    TestMinibatch with ``distributed``, for distributed learners of either kind)."""

    def __init__(self, parallel):
        self._parallel = parallel
        self.size = self._parallel.size
        self.rank = self._parallel.rank
        self.is_main = self.rank == 0

    def sum_test(self, samples: int, metric_sum: float) -> tuple[int, float]:
        """A test minibatch's ``(samples, metric_sum)`` over the workers."""
        total, metric = self._parallel.all_reduce_scalars(float(samples), float(metric_sum))
        return int(round(total)), metric


class _Aggregation(_WorkerTests):
    """A Trainer's figures summed over the workers, as CNTK 2.7's Trainer of distributed
    learners reports them: each minibatch's gradients, sample count, loss and metric sums
    (``DistributedLearner::Update``'s MinibatchInfo, Trainer.cpp TrainDistributedMinibatch),
    and the test minibatches' metric sums and counts (:class:`_WorkerTests`).  It is the
    Trainer's ``data_parallel`` hook (:meth:`stadyn.distributed.DataParallel.synchronize`)."""

    def __init__(self, learners: list):
        super().__init__(learners[0]._parallel)
        self._learners = learners
        self.local_samples = 0       # this worker's samples of the last synchronize

    def all_reduce_scalars(self, *values: float) -> tuple[float, ...]:
        """The sums of ``values`` over the workers."""
        return self._parallel.all_reduce_scalars(*values)

    def synchronize(self, parameters, samples: int, loss_sum: float, metric_sum):
        """The global ``(samples, loss_sum, metric_sum)``; the gradients summed in place (the
        learners' next update takes them as they are)."""
        self.local_samples = int(samples)        # (the Trainer tells a synchronisation by it)
        if not self.sharing():
            result = (samples, loss_sum, metric_sum)
        elif any(learner._quantized is not None for learner in self._learners):
            result = self._quantized_sums(parameters, samples, loss_sum, metric_sum)
        else:
            result = self._parallel.synchronize(parameters, samples, loss_sum, metric_sum)
        for learner in self._learners:
            learner._summed = True
        return result

    def _quantized_sums(self, parameters, samples, loss_sum, metric_sum):
        """:meth:`synchronize` with 1-bit SGD learners: the sums of the counts, then each
        learner's gradients summed quantized (a plain learner's summed as they are)."""
        total, loss, metric = self._parallel.all_reduce_scalars(
            float(samples), float(loss_sum), 0.0 if metric_sum is None else float(metric_sum))
        for learner in self._learners:
            learner._sum_gradients()
        return int(round(total)), loss, None if metric_sum is None else metric

    def sharing(self) -> bool:
        """Whether the workers share this step (``distributed_after`` samples seen)."""
        return all(learner._sharing() for learner in self._learners)

    def forget_sums(self) -> None:
        """No update follows the last :meth:`synchronize` (no worker had samples)."""
        for learner in self._learners:
            learner._summed = False

    def barrier(self) -> None:
        """Wait until every worker is here."""
        self._parallel.barrier()

    def gather(self, value) -> list:
        """Every worker's ``value``, in rank order (on every worker)."""
        return self._parallel.all_gather_objects(value)

    def parallel_after(self) -> int:
        """The samples after which the workers read their shares (``distributed_after``)."""
        return max(learner.parallelization_after() for learner in self._learners)


def _aggregation_of(learners) -> _Aggregation | None:
    """The :class:`_Aggregation` of a Trainer's ``learners`` when they are distributed
    learners of more than one worker, else None."""
    found = [x for x in learners or () if isinstance(x, DistributedLearner)
             and not isinstance(x, _BlockMomentumLearner)     # (each worker updates alone)
             and _of_several_workers(x)]
    return _Aggregation(found) if found else None


def _of_several_workers(learner: DistributedLearner) -> bool:
    """Whether ``learner`` shares its updates with other workers (distributed over more than
    one)."""
    return learner._parallel is not None and learner._parallel.size > 1


def data_parallel_distributed_learner(learner, distributed_after: int = 0,
                                      num_quantization_bits: int = 32):
    """``learner`` with its updates shared by all workers (gradients summed before each).
    With ``num_quantization_bits`` below 32 (1, 2, 4, 8 or 16) the gradients travel quantized
    to that many bits per value, what the quantization leaves out carried to the next
    minibatch: CNTK 2.7's 1-bit SGD (:class:`stadyn.distributed.QuantizedAllReduce`; on one
    worker nothing is quantized, as in CNTK).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.Dense(2)(C.input_variable(3))
        >>> learner = C.train.distributed.data_parallel_distributed_learner(
        ...     C.sgd(z.parameters, C.learning_parameter_schedule(0.1)), num_quantization_bits=1)
        >>> learner.parallelization_after()
        0
    """
    return DistributedLearner(learner, distributed_after,
                              _quantization_bits(num_quantization_bits))


def _quantization_bits(bits) -> int:
    """``num_quantization_bits`` as CNTK 2.7 takes it: any whole number from 1; 32 and more
    are not quantized (its Python quantizes below 32 only: 33 and 64 train as 32).  A number
    below 32 that does not divide 64 (3, 5, ...) is taken, and alone it never quantizes; with
    two or more workers CNTK fails at the first exchange ("Quantization: 'nbits' must be a
    divisor of 64"), Stadyn's ``QuantizedAllReduce`` refuses it as the learner is made."""
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or int(bits) < 1:
        raise ConfigError(f"data_parallel_distributed_learner: num_quantization_bits={bits!r}; "
                          "a whole number of bits per gradient value: 1, 2, 4, 8 or 16 "
                          "quantize, 32 (or more) does not")
    return min(int(bits), 32)


def block_momentum_distributed_learner(learner, block_size: int,
                                       block_momentum_as_time_constant=None,
                                       use_nestrov_momentum: bool = True,
                                       reset_sgd_momentum_after_aggregation: bool = True,
                                       block_learning_rate: float = 1.0,
                                       distributed_after: int = 0):
    """``learner`` on each worker alone, the workers merging their models every ``block_size``
    samples (all workers' together) with block momentum (CNTK 2.7's BMUF, see
    :class:`stadyn.distributed.BlockMomentum`): ``block_momentum_as_time_constant`` in samples
    (by default that
    of a momentum ``1 - 1/workers`` per block), ``block_learning_rate``, Nesterov's momentum
    (``use_nestrov_momentum``, CNTK's spelling), the learner's momentum reset after each merge.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x, y = C.input_variable(2), C.input_variable(1)
        >>> w = C.parameter((2, 1), init=0.0)
        >>> learner = C.train.distributed.block_momentum_distributed_learner(
        ...     C.sgd([w], C.learning_parameter_schedule(0.5)), block_size=2)
        >>> trainer = C.Trainer(C.times(x, w), C.squared_error(C.times(x, w), y), [learner])
        >>> trainer.train_minibatch({x: np.ones((2, 2), np.float32), y: np.ones((2, 1),
        ...                                                                     np.float32)})
        True
        >>> w.value.ravel().tolist(), trainer.total_number_of_samples_seen
        ([1.0, 1.0], 2)
    """
    workers = Communicator.num_workers()
    block = _dist.BlockMomentum(block_size, workers, block_momentum_as_time_constant,
                                use_nestrov_momentum, block_learning_rate, distributed_after)
    return _BlockMomentumLearner(learner, block, reset_sgd_momentum_after_aggregation)
